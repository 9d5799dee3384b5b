package main

import (
	"bytes"
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/deployment"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/smoke"
	"42sisters.ai/oracle/shared/x402"
)

// described is a deployed stack as Describe reads it.
func described() deployment.Deployment {
	return deployment.Deployment{
		Name: "oracle", Region: "ca-central-1",
		Outputs: map[string]string{
			"ApiUrl": "https://abc.execute-api.ca-central-1.amazonaws.com", "OrdersTableName": "oracle-Orders",
			"LedgerTableName": "oracle-Ledger", "ChatTableName": "oracle-Chat", "AuditBucketName": "oracle-audit", "AlertsTopicArn": "arn:aws:sns:ca-central-1:1:alerts",
		},
		Parameters: map[string]string{
			"BaseUrl": "https://oracle.42sisters.ai", "HashPepperArn": "arn:pepper",
			"MailTransport": "ses", "MailSender": "oracle@42sisters.ai", "GraphSender": "", "GraphCredentialsArn": "",
			"StripeSecretKeyArn": "arn:key", "StripeTestSecretKeyArn": "arn:test-key", "StripeTestWebhookSecretArn": "arn:test-whsec",
			"X402PayTo": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", "X402Networks": "testnet",
			"X402SmokeKeyArn": "arn:smoke-wallet", "X402SmokePayer": "0x0000000000000000000000000000000000005307",
		},
	}
}

func noEnv(string) (string, bool) { return "", false }

// TestSettingsAreTheSmokeFunctions: the command gives the shared settings
// loader exactly the variables the template gives the smoke function, so
// the two cannot drift apart.
func TestSettingsAreTheSmokeFunctions(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, fn := range tmpl.Functions() {
		if fn.LogicalID == "SmokeFunction" {
			want = slices.Sorted(maps.Keys(fn.Env))
		}
	}
	// Not the settings loader's: the command logs to the terminal; the
	// endpoint variables and the store's timeouts are empty in AWS (declared
	// for sam local invoke) and the command takes them from the operator's
	// environment; the metrics namespace and the traces' settings are read
	// by the function's cold start (shared/coldstart), which the command
	// does not run, and the collector's by the Go runtime.
	notLoaders := []string{"LOG_LEVEL", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SESV2", "STRIPE_API_BASE", "GRAPH_LOGIN_BASE", "GRAPH_API_BASE",
		"STORE_ATTEMPT_TIMEOUT", "STORE_CALL_TIMEOUT", "METRICS_NAMESPACE", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "TRACES_SIGV4", "GOGC", "GOMEMLIMIT"}
	want = slices.DeleteFunc(want, func(k string) bool { return slices.Contains(notLoaders, k) })
	env, err := settingsEnv(described(), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(env)); !slices.Equal(got, want) {
		t.Errorf("the command sets %v, the smoke function has %v", got, want)
	}
	for output := range maps.Values(fromOutputs) {
		if _, ok := tmpl.Outputs[output]; !ok {
			t.Errorf("the command reads the output %s, which the template does not have", output)
		}
	}
	for param := range maps.Values(fromParameters) {
		if _, ok := tmpl.Parameters[param]; !ok {
			t.Errorf("the command reads the parameter %s, which the template does not have", param)
		}
	}
	if env["GRAPH_SENDER"] != "oracle@42sisters.ai" || env["API_URL"] != described().Outputs["ApiUrl"] || env["STRIPE_TEST_WEBHOOK_SECRET_ARN"] != "arn:test-whsec" ||
		env["X402_SMOKE_KEY_ARN"] != "arn:smoke-wallet" || env["X402_PAY_TO"] != described().Parameters["X402PayTo"] {
		t.Errorf("settings %v", env)
	}
}

// TestWorkstationSecretsComeFirst: a secret in the workstation's
// environment replaces the stack's (by dropping its _ARN), the local
// stack's endpoints are added, and a stack without an output the command
// needs is named.
func TestWorkstationSecretsComeFirst(t *testing.T) {
	d := described()
	d.Env = map[string]string{"STRIPE_API_BASE": "http://127.0.0.1:3001"}
	lookup := func(name string) (string, bool) {
		switch name {
		case "STRIPE_SECRET_KEY":
			return "sk_live_abc", true
		case "X402_SMOKE_KEY":
			return "0x" + strings.Repeat("ab", 32), true
		}
		return "", false
	}
	env, err := settingsEnv(d, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := env["STRIPE_SECRET_KEY_ARN"]; ok || env["STRIPE_SECRET_KEY"] != "sk_live_abc" || env["X402_SMOKE_KEY"] == "" || env["X402_SMOKE_KEY_ARN"] != "" {
		t.Errorf("the workstation's key did not replace the stack's: %v", env)
	}
	if env["STRIPE_TEST_WEBHOOK_SECRET_ARN"] != "arn:test-whsec" || env["STRIPE_API_BASE"] != "http://127.0.0.1:3001" {
		t.Errorf("settings %v", env)
	}
	delete(d.Outputs, "LedgerTableName")
	if _, err := settingsEnv(d, noEnv); err == nil || !strings.Contains(err.Error(), "LedgerTableName") {
		t.Errorf("a stack without LedgerTableName: %v", err)
	}
}

// TestWhatCannotRunExitsTwo: bad arguments and a local stack that is not
// running exit 2 with a reason and print no report.
func TestWhatCannotRunExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an argument too many", []string{"now"}, "unexpected arguments"},
		{"an unknown flag", []string{"-fast"}, "flag provided but not defined"},
		{"no local stack", []string{"-local", filepath.Join(t.TempDir(), "stack-local.json")}, "is `make run` running?"},
		{"a stage timeout of zero", []string{"-stage-timeout", "0s"}, "must be a positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tc.args, noEnv, &stdout, &stderr); code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout.String(), stderr.String(), tc.want)
			}
		})
	}
}

// TestNewWalletPrintsAKeyAndItsAddress: -new-wallet prints a fresh key the
// smoke test reads and the address it belongs to, and touches no stack.
func TestNewWalletPrintsAKeyAndItsAddress(t *testing.T) {
	var keys []string
	for range 2 {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"-new-wallet"}, noEnv, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		var key, address string
		for line := range strings.SplitSeq(strings.TrimSpace(stdout.String()), "\n") {
			name, value, _ := strings.Cut(line, "=")
			switch name {
			case "X402_SMOKE_KEY":
				key = value
			case "X402SmokePayer":
				address = value
			}
		}
		k, err := smoke.ParseWalletKey(key)
		if err != nil || x402.AddressOf(k.PubKey()) != address {
			t.Fatalf("printed %q: key %v, want a key and its address", stdout.String(), err)
		}
		keys = append(keys, key)
	}
	if keys[0] == keys[1] {
		t.Error("two wallets share a key")
	}
}
