package config

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// AWSSecrets reads secrets from Secrets Manager or SSM Parameter Store,
// chosen by the ARN's service.
type AWSSecrets struct {
	secretsManager *secretsManagerClient
	ssm            *ssmClient
}

// NewAWSSecrets builds both clients from one configuration.
func NewAWSSecrets(cfg aws.Config) *AWSSecrets {
	return &AWSSecrets{
		secretsManager: (*secretsManagerClient)(secretsmanager.NewFromConfig(cfg)),
		ssm:            (*ssmClient)(ssm.NewFromConfig(cfg)),
	}
}

// secretsManagerClient and ssmClient are the SDK clients with only the call
// AWSSecrets makes, so that a function links that call and not the whole
// service (see package awsenv; they are here because config, unlike awsenv,
// is also imported by the pages function, which uses no other AWS service).
type (
	secretsManagerClient secretsmanager.Client
	ssmClient            ssm.Client
)

func (c *secretsManagerClient) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput) (*secretsmanager.GetSecretValueOutput, error) {
	return (*secretsmanager.Client)(c).GetSecretValue(ctx, in)
}

func (c *ssmClient) GetParameter(ctx context.Context, in *ssm.GetParameterInput) (*ssm.GetParameterOutput, error) {
	return (*ssm.Client)(c).GetParameter(ctx, in)
}

// Secret fetches the value behind arn.
func (s *AWSSecrets) Secret(ctx context.Context, arn string) (string, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 || parts[0] != "arn" {
		return "", fmt.Errorf("%q is not an ARN", arn)
	}
	switch parts[2] {
	case "secretsmanager":
		out, err := s.secretsManager.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
		if err != nil {
			return "", fmt.Errorf("read secret %s: %w", arn, err)
		}
		return aws.ToString(out.SecretString), nil
	case "ssm":
		// GetParameter takes the ARN itself as the name.
		out, err := s.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(arn), WithDecryption: aws.Bool(true)})
		if err != nil {
			return "", fmt.Errorf("read parameter %s: %w", arn, err)
		}
		return aws.ToString(out.Parameter.Value), nil
	}
	return "", fmt.Errorf("%q is neither a Secrets Manager nor an SSM ARN", arn)
}
