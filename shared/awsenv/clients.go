package awsenv

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
)

// The functions do not keep SDK clients: they keep the types below and
// their like in other packages (queue.Client, mail.Client, the clients
// inside config.AWSSecrets and gemini.Client). A client stored in an
// interface, or in a struct that is, keeps every one of its exported
// methods in the binary as soon as anything in it can call methods by
// reflection (text/template in the mailer, go-cmp under genai in the
// generator): the linker can no longer tell which ones are called. For an
// SDK client that is every operation of its service, up to megabytes of
// code. Each type here is its SDK client under another name (nothing is
// copied or wrapped) whose only methods are the operations the functions
// call, so only those are linked; a new call is a new forwarding method. A
// struct holding the SDK client would not do: the linker keeps the methods
// of a stored value's field types too.
//
// Every function that uses AWS calls DynamoDB and SNS, so their types are
// here; a service that only some functions use has its type with its one
// user, because importing an SDK service package costs a function hundreds
// of KB of generated code even when it calls nothing in it.
//
// S3 has no such type: the SDK itself stores its S3 client in an interface
// (the S3 Express credentials provider), so all of S3 is linked anyway.

// Tables is a DynamoDB client with the item operations of the store and the
// circuit breaker.
type Tables dynamodb.Client

// NewTables returns a DynamoDB client for cfg, its attempts StoreRetryDelay
// apart.
func NewTables(cfg aws.Config, optFns ...func(*dynamodb.Options)) *Tables {
	return (*Tables)(dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){StoreRetries}, optFns...)...))
}

// StoreRetryDelay is the wait between two attempts of a store call (the
// Orders table, the Ledger, the chat's table): the store spec's
// CACHE_RETRY_DELAY_MS. The SDK's own backoff waits up to 2 s and then 4 s
// with jitter, which made a call to a store that refuses take up to 6 s
// before its alert (5 s once the store guard cuts it), past the bound the
// spec sets for an answer with the store down: 2 s an attempt × 3 + this
// delay × 2 + 0.5 s.
const StoreRetryDelay = 500 * time.Millisecond

// StoreRetries makes a DynamoDB client's retryer wait StoreRetryDelay
// between attempts; its attempts and what it retries stay the
// configuration's (NewRetryer: three attempts, the retry token bucket).
// Every DynamoDB client the service makes starts with it; an option after
// it can still replace the retryer (tests that refuse every call and need
// no wait).
func StoreRetries(o *dynamodb.Options) {
	inner := o.Retryer
	if inner == nil {
		inner = NewRetryer()
	}
	v2, ok := inner.(aws.RetryerV2)
	if !ok {
		v2 = retry.AddWithMaxBackoffDelay(inner, StoreRetryDelay).(aws.RetryerV2)
	}
	o.Retryer = fixedDelay{RetryerV2: v2, delay: StoreRetryDelay}
}

// fixedDelay is a retryer that waits delay between attempts.
type fixedDelay struct {
	aws.RetryerV2
	delay time.Duration
}

func (r fixedDelay) RetryDelay(int, error) (time.Duration, error) { return r.delay, nil }

// GetItem is dynamodb.Client.GetItem.
func (c *Tables) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return (*dynamodb.Client)(c).GetItem(ctx, in, optFns...)
}

// PutItem is dynamodb.Client.PutItem.
func (c *Tables) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return (*dynamodb.Client)(c).PutItem(ctx, in, optFns...)
}

// UpdateItem is dynamodb.Client.UpdateItem.
func (c *Tables) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return (*dynamodb.Client)(c).UpdateItem(ctx, in, optFns...)
}

// DeleteItem is dynamodb.Client.DeleteItem.
func (c *Tables) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return (*dynamodb.Client)(c).DeleteItem(ctx, in, optFns...)
}

// Topics is an SNS client that publishes.
type Topics sns.Client

// NewTopics returns an SNS client for cfg.
func NewTopics(cfg aws.Config, optFns ...func(*sns.Options)) *Topics {
	return (*Topics)(sns.NewFromConfig(cfg, optFns...))
}

// Publish is sns.Client.Publish.
func (c *Topics) Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error) {
	return (*sns.Client)(c).Publish(ctx, in, optFns...)
}

// Queries is a DynamoDB client with the reads that span items: the health
// job's, which no other function links.
type Queries dynamodb.Client

// NewQueries returns a DynamoDB client for cfg, its attempts
// StoreRetryDelay apart.
func NewQueries(cfg aws.Config, optFns ...func(*dynamodb.Options)) *Queries {
	return (*Queries)(dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){StoreRetries}, optFns...)...))
}

// Query is dynamodb.Client.Query.
func (c *Queries) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return (*dynamodb.Client)(c).Query(ctx, in, optFns...)
}

// BatchGetItem is dynamodb.Client.BatchGetItem.
func (c *Queries) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return (*dynamodb.Client)(c).BatchGetItem(ctx, in, optFns...)
}

// DescribeTable is dynamodb.Client.DescribeTable.
func (c *Queries) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return (*dynamodb.Client)(c).DescribeTable(ctx, in, optFns...)
}

// Scan is dynamodb.Client.Scan: only the operator's listing of the
// Ledger's dead letters reads a table whole (a small table of expiring
// items, on demand).
func (c *Queries) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return (*dynamodb.Client)(c).Scan(ctx, in, optFns...)
}
