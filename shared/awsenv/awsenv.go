// Package awsenv builds the AWS SDK configuration every function and tool
// uses: the real AWS in production, moto server locally and in tests, with
// the same code paths (the SDK honours AWS_ENDPOINT_URL).
package awsenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// Load reads the standard AWS environment (region, credentials, and
// AWS_ENDPOINT_URL when a local endpoint such as moto is set).
func Load(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	// Set after loading, not with config.WithRetryer, which would make the
	// SDK ignore AWS_MAX_ATTEMPTS; each client still caps this retryer's
	// attempts by it.
	cfg.Retryer = NewRetryer
	if cfg.Region == "" {
		return aws.Config{}, fmt.Errorf("load AWS configuration: AWS_REGION is not set")
	}
	return cfg, nil
}

// ForEndpoint returns a configuration for a local endpoint (moto server) with
// static test credentials; for tests and the local stack only.
func ForEndpoint(endpoint, region string) aws.Config {
	return aws.Config{
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
		// The same retryer as in AWS, so a throttled or cut-off call is
		// retried the same way everywhere.
		Retryer: NewRetryer,
	}
}

// NewRetryer is the SDK's standard retryer (three attempts, backoff with
// jitter, the retry token bucket) that also retries an answer whose
// connection dropped while its body was being read. The SDK retries a
// connection that breaks before the answer, but not one that breaks inside
// it: the body's unexpected EOF or reset surfaces as a deserialization error,
// which it treats as final (aws-sdk-go-v2 issue 3494; version 1 retried
// them). Every write the service makes is conditional and knows its own
// retried attempt (shared/condwrite), so a retry is as safe here as after a
// reset the SDK already retries. A complete but malformed body stays final.
func NewRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		// First, because RetryableConnectionError answers "no" for an error it
		// does not recognise as a connection's.
		o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(droppedMidAnswer)}, o.Retryables...)
	})
}

func droppedMidAnswer(err error) aws.Ternary {
	var de *smithy.DeserializationError
	if !errors.As(err, &de) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return aws.UnknownTernary
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
}

// S3 returns an S3 client; with a custom endpoint it uses path-style
// addressing, which local S3 emulators need.
func S3(cfg aws.Config) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = cfg.BaseEndpoint != nil
	})
}
