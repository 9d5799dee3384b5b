package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/secret"
)

// Secret is a secret in moto's Secrets Manager, read by a Value that reads
// it again on refusal, on the clock the test moves.
type Secret struct {
	// Value is what a client is given, as a function's cold start gives it.
	Value *secret.Value
	Clock *Clock
	tb    testing.TB
	sm    *secretsmanager.Client
	arn   string
}

// RotatingSecret creates a secret holding initial in moto and returns it
// read as at a cold start, at clock's time.
func RotatingSecret(tb testing.TB, name, initial string, clock *Clock) *Secret {
	tb.Helper()
	cfg := awsenv.ForEndpoint(motoserver.ForTest(tb), "us-east-1")
	sm := secretsmanager.NewFromConfig(cfg)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	out, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String("test/" + name + "-" + hex.EncodeToString(b)), SecretString: aws.String(initial)})
	if err != nil {
		tb.Fatalf("create secret %s: %v", name, err)
	}
	s := &Secret{Clock: clock, tb: tb, sm: sm, arn: aws.ToString(out.ARN)}
	s.Value = secret.New(secret.Options{Name: name, ARN: s.arn, Source: config.NewAWSSecrets(cfg), Initial: initial, Now: clock.Now})
	return s
}

// Rotate puts value in the secret, as the operator does.
func (s *Secret) Rotate(value string) {
	s.tb.Helper()
	if _, err := s.sm.PutSecretValue(context.Background(), &secretsmanager.PutSecretValueInput{
		SecretId: aws.String(s.arn), SecretString: aws.String(value)}); err != nil {
		s.tb.Fatalf("rotate the secret: %v", err)
	}
}
