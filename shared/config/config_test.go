package config_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/config"
)

func lookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestEveryProblemIsReportedAtOnce(t *testing.T) {
	env := config.New(lookup(map[string]string{
		"BASE_URL": "ftp://nope", "N": "x", "D": "-1s", "DAYS": "1",
	}), nil)
	env.String("ORDERS_TABLE")
	env.URL("BASE_URL")
	env.Int("N", 1, 0, 10)
	env.Duration("D", time.Second)
	env.Days("DAYS", 90, 4, 3650)
	env.Secret(context.Background(), "STRIPE_SECRET_KEY", true)
	err := env.Err()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"ORDERS_TABLE is required", "BASE_URL must be", "N must be", "D must be", "DAYS must be", "STRIPE_SECRET_KEY_ARN (or STRIPE_SECRET_KEY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestValuesAndDefaults(t *testing.T) {
	env := config.New(lookup(map[string]string{
		"BASE_URL": "https://42sisters.ai/", "ORIGINS": " https://a.example , ,https://b.example", "N": "7", "D": "45s",
	}), nil)
	if got := env.URL("BASE_URL"); got != "https://42sisters.ai" {
		t.Errorf("URL = %q", got)
	}
	if got := env.List("ORIGINS"); len(got) != 2 || got[1] != "https://b.example" {
		t.Errorf("List = %q", got)
	}
	if env.Int("N", 1, 0, 10) != 7 || env.Int("MISSING", 3, 0, 10) != 3 {
		t.Error("Int")
	}
	if env.Duration("D", time.Second) != 45*time.Second {
		t.Error("Duration")
	}
	if env.Days("N", 90, 4, 3650) != 7*24*time.Hour || env.Days("MISSING", 90, 4, 3650) != 90*24*time.Hour {
		t.Error("Days")
	}
	if env.Optional("MISSING", "def") != "def" {
		t.Error("Optional")
	}
	if err := env.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestSecretsFromSecretsManagerAndSSM(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	name := "/oracle/test/" + f.Ref("OrdersTable")
	_, err := ssm.NewFromConfig(f.AWS).PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(name), Value: aws.String("pepper-from-ssm"), Type: ssmtypes.ParameterTypeSecureString,
	})
	if err != nil {
		t.Fatal(err)
	}
	sm, err := secretsmanager.NewFromConfig(f.AWS).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String("oracle/test/" + f.Ref("OrdersTable")), SecretString: aws.String("sk_test_from_secrets_manager")})
	if err != nil {
		t.Fatal(err)
	}
	src := config.NewAWSSecrets(f.AWS)
	env := config.New(lookup(map[string]string{
		"STRIPE_SECRET_KEY_ARN": aws.ToString(sm.ARN),
		"HASH_PEPPER_ARN":       "arn:aws:ssm:us-east-1:123456789012:parameter" + name,
		"MISSING_ARN":           "arn:aws:secretsmanager:us-east-1:123456789012:secret:nope-AbCdEf",
	}), src)
	if got := env.Secret(ctx, "STRIPE_SECRET_KEY", true); got != "sk_test_from_secrets_manager" {
		t.Errorf("Secrets Manager value = %q", got)
	}
	if got := env.Secret(ctx, "HASH_PEPPER", true); got != "pepper-from-ssm" {
		t.Errorf("SSM value = %q", got)
	}
	if got := env.Secret(ctx, "OPTIONAL", false); got != "" {
		t.Errorf("absent optional secret = %q", got)
	}
	env.Secret(ctx, "MISSING", true)
	if err := env.Err(); err == nil || !strings.Contains(err.Error(), "MISSING") {
		t.Fatalf("a secret that cannot be read was not reported: %v", err)
	}
}

func TestAddress(t *testing.T) {
	cases := []struct {
		value, want string
		ok          bool
	}{
		{"", "oracle@42sisters.ai", true}, // unset: the default
		{"help@example.com", "help@example.com", true},
		{"not an address", "", false},
		{"Help <help@example.com>", "", false}, // a display name is no plain address
		{"help@example.com, x@example.com", "", false},
		{" help@example.com ", "help@example.com", true}, // settings are trimmed
	}
	for _, c := range cases {
		env := config.New(lookup(map[string]string{"SUPPORT_EMAIL": c.value}), nil)
		got := env.Address("SUPPORT_EMAIL", "oracle@42sisters.ai")
		err := env.Err()
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("SUPPORT_EMAIL=%q: got %q, %v", c.value, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "SUPPORT_EMAIL must be a plain address") {
			t.Errorf("SUPPORT_EMAIL=%q: the error does not name the setting: %v", c.value, err)
		}
	}
}

// A credential given by ARN is a secret read again when refused, on the
// interval SECRET_REREAD_INTERVAL sets; one given in the environment (a
// local run) is never read again.
func TestCredentialIsReadAgainWhenRefused(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, map[string]string{"GeminiApiKeyArn": "old-key"})
	arn := f.Values.Params["GeminiApiKeyArn"]
	env := config.New(lookup(map[string]string{
		"GEMINI_API_KEY_ARN":     arn,
		"SECRET_REREAD_INTERVAL": "1ns", // every refusal reads it again
		"STRIPE_SECRET_KEY":      "sk_test_local",
	}), config.NewAWSSecrets(f.AWS))
	key := env.Credential(ctx, "GEMINI_API_KEY", true)
	local := env.Credential(ctx, "STRIPE_SECRET_KEY", true)
	if err := env.Err(); err != nil || key.Get() != "old-key" || local.Get() != "sk_test_local" {
		t.Fatalf("read %q and %q: %v", key.Get(), local.Get(), err)
	}
	// The local stack's credentials are SSM SecureStrings, as deployed ones are.
	if _, err := ssm.NewFromConfig(f.AWS).PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(arn[strings.Index(arn, ":parameter")+len(":parameter"):]), Value: aws.String("new-key"),
		Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	if got, ok := key.Renew(ctx, "old-key"); got != "new-key" || !ok {
		t.Fatalf("Renew = %q, %v; want the rotated key", got, ok)
	}
	if got, ok := local.Renew(ctx, "sk_test_local"); got != "sk_test_local" || ok {
		t.Fatalf("a local secret was read again: %q, %v", got, ok)
	}
	bad := config.New(lookup(map[string]string{"SECRET_REREAD_INTERVAL": "soon", "GEMINI_API_KEY_ARN": arn}), config.NewAWSSecrets(f.AWS))
	bad.Credential(ctx, "GEMINI_API_KEY", true)
	if err := bad.Err(); err == nil || !strings.Contains(err.Error(), "SECRET_REREAD_INTERVAL") {
		t.Fatalf("a malformed interval was not reported: %v", err)
	}
}

// together is a secret source whose reads answer only once want of them
// are in flight at once: read one after the other, they never answer.
type together struct {
	want    int
	mu      sync.Mutex
	waiting int
	all     chan struct{}
	reads   map[string]int
}

func (s *together) Secret(ctx context.Context, arn string) (string, error) {
	s.mu.Lock()
	s.reads[arn]++
	if s.waiting++; s.waiting == s.want {
		close(s.all)
	}
	s.mu.Unlock()
	select {
	case <-s.all:
		return "value of " + arn[strings.LastIndex(arn, "/")+1:], nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(10 * time.Second):
		return "", errors.New("read alone: the others were never asked for")
	}
}

// TestSecretsAreReadTogether: the secrets a cold start reads are asked for
// at once, not one after the other; each is read once at cold start (a
// topic's ARN is no secret and is not read), and a credential's later
// read, when a provider refuses it, is a read of its own.
func TestSecretsAreReadTogether(t *testing.T) {
	arn := func(name string) string { return "arn:aws:ssm:ca-central-1:123456789012:parameter/oracle/" + name }
	for _, name := range []string{"HASH_PEPPER", "CHAT_COOKIE_KEY", "STRIPE_SECRET_KEY", "GEMINI_API_KEY"} {
		t.Setenv(name+"_ARN", arn(name))
	}
	t.Setenv("ALERTS_TOPIC_ARN", "arn:aws:sns:ca-central-1:123456789012:alerts")
	t.Setenv("SECRET_REREAD_INTERVAL", "1ns")
	src := &together{want: 4, all: make(chan struct{}), reads: map[string]int{}}
	env := config.FromEnviron(src)
	ctx := context.Background()
	var got []string
	for _, name := range []string{"HASH_PEPPER", "CHAT_COOKIE_KEY", "STRIPE_SECRET_KEY"} {
		got = append(got, env.Secret(ctx, name, true))
	}
	key := env.Credential(ctx, "GEMINI_API_KEY", true)
	if err := env.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"value of HASH_PEPPER", "value of CHAT_COOKIE_KEY", "value of STRIPE_SECRET_KEY"}
	if strings.Join(got, ",") != strings.Join(want, ",") || key.Get() != "value of GEMINI_API_KEY" {
		t.Fatalf("read %q and %q", got, key.Get())
	}
	src.mu.Lock()
	for a, n := range src.reads {
		if n != 1 || !strings.Contains(a, ":ssm:") {
			t.Errorf("%s read %d times at cold start", a, n)
		}
	}
	src.mu.Unlock()
	key.Renew(ctx, key.Get()) // refused: read again
	src.mu.Lock()
	defer src.mu.Unlock()
	if n := src.reads[arn("GEMINI_API_KEY")]; n != 2 {
		t.Fatalf("the refused credential was read %d times in all, want 2 (the cold start's, then its own)", n)
	}
}
