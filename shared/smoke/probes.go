package smoke

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"42sisters.ai/oracle/shared/oracle"
)

// probeSession is a session id no order has: reading it proves the table
// answers without touching an order.
const probeSession = "cs_test_smokeprobe"

// OrderGetter reads an order (store.Orders).
type OrderGetter interface {
	Get(ctx context.Context, sessionID string) (oracle.Order, bool, error)
}

// LedgerReader reads a Ledger mark (store.Ledger).
type LedgerReader interface {
	Seen(ctx context.Context, key string) (bool, error)
}

// BucketLister lists a bucket (s3.Client).
type BucketLister interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// StoresProbe is stage 2: a read of the Orders and Ledger tables and a
// listing of the audit bucket, each answering.
func StoresProbe(orders OrderGetter, ledger LedgerReader, s3c BucketLister, bucket string) Probe {
	return func(ctx context.Context) (string, error) {
		if _, _, err := orders.Get(ctx, probeSession); err != nil {
			return "", fmt.Errorf("the Orders table: %w", err)
		}
		if _, err := ledger.Seen(ctx, "smoke#probe"); err != nil {
			return "", fmt.Errorf("the Ledger table: %w", err)
		}
		if _, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), MaxKeys: aws.Int32(1)}); err != nil {
			return "", fmt.Errorf("the audit bucket: %w", err)
		}
		return "orders ledger audit", nil
	}
}

// SESAccount reads the SES account's state (sesv2.Client).
type SESAccount interface {
	GetAccount(ctx context.Context, in *sesv2.GetAccountInput, optFns ...func(*sesv2.Options)) (*sesv2.GetAccountOutput, error)
}

// SESProbe is stage 3 with SES: sending is enabled for the account.
func SESProbe(ses SESAccount) Probe {
	return func(ctx context.Context) (string, error) {
		out, err := ses.GetAccount(ctx, &sesv2.GetAccountInput{})
		if err != nil {
			return "", fmt.Errorf("read the SES account: %w", err)
		}
		if !out.SendingEnabled {
			return "", errors.New("SES sending is paused for the account")
		}
		return "ses sending=enabled", nil
	}
}

// TokenSource proves the Graph app's credentials (mail.Graph).
type TokenSource interface {
	CheckToken(ctx context.Context) error
}

// GraphProbe is stage 3 with Microsoft Graph: a token is issued.
func GraphProbe(g TokenSource) Probe {
	return func(ctx context.Context) (string, error) {
		if err := g.CheckToken(ctx); err != nil {
			return "", fmt.Errorf("the Graph token: %w", err)
		}
		return "graph token=issued", nil
	}
}
