// Package awsenv builds the AWS SDK configuration every function and tool
// uses: the real AWS in production, moto server locally and in tests, with
// the same code paths (the SDK honours AWS_ENDPOINT_URL).
package awsenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
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

// LoadLambda reads the AWS configuration as Lambda gives it to a function:
// the region, the execution role's credentials and any endpoint
// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>), AWS_MAX_ATTEMPTS and the
// other AWS_* settings, all from the environment. It is what Load finds
// inside Lambda, where the environment's credentials come first in the
// SDK's chain; but it leaves out the rest of that chain (shared profiles,
// SSO, web identity, the container and instance metadata endpoints), which
// no function uses and which linked the STS, SSO, SSO OIDC and sign-in
// clients into every bootstrap: 1.0 to 1.5 MB each (docs/performance.md).
// The operator's tools, run with a profile, use Load.
func LoadLambda(ctx context.Context) (aws.Config, error) {
	env, err := config.NewEnvConfig()
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if env.Region == "" {
		return aws.Config{}, fmt.Errorf("load AWS configuration: AWS_REGION is not set")
	}
	if !env.Credentials.HasKeys() {
		return aws.Config{}, fmt.Errorf("load AWS configuration: no credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
	}
	cfg := aws.Config{
		Region:                     env.Region,
		Credentials:                aws.NewCredentialsCache(credentials.StaticCredentialsProvider{Value: env.Credentials}),
		HTTPClient:                 awshttp.NewBuildableClient(),
		Logger:                     logging.NewStandardLogger(os.Stderr),
		Retryer:                    NewRetryer,
		RetryMaxAttempts:           env.RetryMaxAttempts,
		RetryMode:                  env.RetryMode,
		AppID:                      env.AppID,
		AccountIDEndpointMode:      env.AccountIDEndpointMode,
		RequestChecksumCalculation: env.RequestChecksumCalculation,
		ResponseChecksumValidation: env.ResponseChecksumValidation,
		// The clients read a service's own endpoint variable and the other
		// settings they know from the environment's configuration here.
		ConfigSources: []any{env},
	}
	if env.BaseEndpoint != "" && (env.IgnoreConfiguredEndpoints == nil || !*env.IgnoreConfiguredEndpoints) {
		cfg.BaseEndpoint = aws.String(env.BaseEndpoint)
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
