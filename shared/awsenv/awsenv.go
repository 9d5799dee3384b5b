// Package awsenv builds the AWS SDK configuration every function and tool
// uses: the real AWS in production, moto server locally and in tests, with
// the same code paths (the SDK honours AWS_ENDPOINT_URL).
package awsenv

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Load reads the standard AWS environment (region, credentials, and
// AWS_ENDPOINT_URL when a local endpoint such as moto is set).
func Load(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
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
		// moto answers instantly; the SDK's default retryer is kept so a
		// throttled real AWS call is retried the same way everywhere.
	}
}

// S3 returns an S3 client; with a custom endpoint it uses path-style
// addressing, which local S3 emulators need.
func S3(cfg aws.Config) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = cfg.BaseEndpoint != nil
	})
}
