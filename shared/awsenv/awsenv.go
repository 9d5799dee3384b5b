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
	"strconv"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
)

// LoadLambda reads the AWS configuration as Lambda gives it to a function,
// from the environment alone: the region, the execution role's keys and
// session token, any endpoint (AWS_ENDPOINT_URL, and a service's own
// AWS_ENDPOINT_URL_<SERVICE>, unless AWS_IGNORE_CONFIGURED_ENDPOINT_URLS),
// AWS_MAX_ATTEMPTS and AWS_RETRY_MODE. It is what the SDK's default chain
// finds inside Lambda, where the environment's credentials come first; it
// does not import the SDK's config package, whose providers (shared
// profiles, SSO, web identity, the metadata endpoints) no function uses and
// whose packages' initialisation alone linked the STS, SSO, SSO OIDC and
// sign-in clients' schemas into every bootstrap (docs/performance.md). The
// operator's tools, run with a profile, use infra/awsprofile.
func LoadLambda(ctx context.Context) (aws.Config, error) {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if region == "" {
		return aws.Config{}, fmt.Errorf("load AWS configuration: AWS_REGION is not set")
	}
	keys := aws.Credentials{
		AccessKeyID:     os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken:    os.Getenv("AWS_SESSION_TOKEN"),
		Source:          "Lambda's environment",
	}
	if !keys.HasKeys() {
		return aws.Config{}, fmt.Errorf("load AWS configuration: no credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
	}
	cfg := aws.Config{
		Region:      region,
		Credentials: aws.NewCredentialsCache(credentials.StaticCredentialsProvider{Value: keys}),
		HTTPClient:  awshttp.NewBuildableClient(),
		Logger:      logging.NewStandardLogger(os.Stderr),
		Retryer:     NewRetryer,
		// The clients ask their configuration's sources for a service's own
		// endpoint.
		ConfigSources: []any{environment{}},
	}
	if v := os.Getenv("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return aws.Config{}, fmt.Errorf("load AWS configuration: AWS_MAX_ATTEMPTS must be a positive number, got %q", v)
		}
		cfg.RetryMaxAttempts = n
	}
	if v := os.Getenv("AWS_RETRY_MODE"); v != "" {
		mode, err := aws.ParseRetryMode(v)
		if err != nil {
			return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
		}
		cfg.RetryMode = mode
	}
	ignore, _, err := environment{}.GetIgnoreConfiguredEndpoints(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if !ignore {
		if base := os.Getenv("AWS_ENDPOINT_URL"); base != "" {
			cfg.BaseEndpoint = aws.String(base)
		}
	}
	return cfg, nil
}

// environment is the configuration source of a service's own endpoint, as
// the SDK's config package reads it: AWS_ENDPOINT_URL_<SERVICE ID>, the
// id upper-cased with its spaces as underscores (AWS_ENDPOINT_URL_SESV2).
type environment struct{}

func (environment) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v := os.Getenv("AWS_ENDPOINT_URL_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_"))
	return v, v != "", nil
}

func (environment) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	v := os.Getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
	if v == "" {
		return false, false, nil
	}
	ignore, err := strconv.ParseBool(v)
	if err != nil {
		return false, false, fmt.Errorf("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS must be true or false, got %q", v)
	}
	return ignore, true, nil
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
