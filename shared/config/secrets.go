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
	SecretsManager *secretsmanager.Client
	SSM            *ssm.Client
}

// NewAWSSecrets builds both clients from one configuration.
func NewAWSSecrets(cfg aws.Config) *AWSSecrets {
	return &AWSSecrets{SecretsManager: secretsmanager.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg)}
}

// Secret fetches the value behind arn.
func (s *AWSSecrets) Secret(ctx context.Context, arn string) (string, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 || parts[0] != "arn" {
		return "", fmt.Errorf("%q is not an ARN", arn)
	}
	switch parts[2] {
	case "secretsmanager":
		out, err := s.SecretsManager.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
		if err != nil {
			return "", fmt.Errorf("read secret %s: %w", arn, err)
		}
		return aws.ToString(out.SecretString), nil
	case "ssm":
		// GetParameter takes the ARN itself as the name.
		out, err := s.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(arn), WithDecryption: aws.Bool(true)})
		if err != nil {
			return "", fmt.Errorf("read parameter %s: %w", arn, err)
		}
		return aws.ToString(out.Parameter.Value), nil
	}
	return "", fmt.Errorf("%q is neither a Secrets Manager nor an SSM ARN", arn)
}
