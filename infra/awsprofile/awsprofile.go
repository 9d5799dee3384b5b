// Package awsprofile loads the AWS configuration of the operator's tools
// (make chat-price, make smoke): the SDK's whole default chain, shared
// profiles and SSO included, which the functions in Lambda never need
// (shared/awsenv.LoadLambda reads their environment alone).
package awsprofile

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"42sisters.ai/oracle/shared/awsenv"
)

// Load reads the standard AWS environment and profile (region,
// credentials, and AWS_ENDPOINT_URL when a local endpoint such as moto is
// set); opts are the SDK's, such as a region samconfig.toml names.
func Load(ctx context.Context, opts ...func(*config.LoadOptions) error) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	// Set after loading, not with config.WithRetryer, which would make the
	// SDK ignore AWS_MAX_ATTEMPTS; each client still caps this retryer's
	// attempts by it.
	cfg.Retryer = awsenv.NewRetryer
	if cfg.Region == "" {
		return aws.Config{}, fmt.Errorf("load AWS configuration: AWS_REGION is not set")
	}
	return cfg, nil
}
