package stack_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/config"
)

// checkSAMEnv checks the file `make run` writes for sam local invoke
// (--env-vars): every function of the template, every variable the template
// declares for it and no other (SAM CLI sets only declared ones), the
// stack's endpoints in place of AWS's, Stripe's and Gemini's, and every
// secret ARN readable in the stack's moto. SAM CLI and Docker cannot run
// here, so this is what stands between the file and the operator.
func checkSAMEnv(t *testing.T, s *stack.Stack, o stack.Options) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sam-env.json")
	if err := s.WriteSAMEnv(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]map[string]string
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatalf("sam-env.json is not {function: {variable: string}}: %v", err)
	}
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	fns := tmpl.Functions()
	if len(file) != len(fns) {
		t.Errorf("sam-env.json has %d functions, the template %d", len(file), len(fns))
	}
	secrets := config.NewAWSSecrets(s.AWS)
	read := map[string]bool{}
	for _, fn := range fns {
		vars, ok := file[fn.LogicalID]
		if !ok {
			t.Errorf("sam-env.json has no %s", fn.LogicalID)
			continue
		}
		for k := range fn.Env {
			if _, ok := vars[k]; !ok {
				t.Errorf("%s: %s is declared but not in sam-env.json", fn.LogicalID, k)
			}
		}
		for k := range vars {
			if _, ok := fn.Env[k]; !ok {
				t.Errorf("%s: %s is in sam-env.json but not declared: sam local invoke would drop it", fn.LogicalID, k)
			}
		}
		for k, want := range map[string]string{
			"AWS_ENDPOINT_URL":   o.MotoEndpoint,
			"STRIPE_API_BASE":    "http://127.0.0.1:",
			"GEMINI_API_BASE":    "http://127.0.0.1:",
			"STORE_CALL_TIMEOUT": "9s",
		} {
			if _, declared := fn.Env[k]; declared && !strings.HasPrefix(vars[k], want) {
				t.Errorf("%s: %s = %q, want the local stack's (%s...)", fn.LogicalID, k, vars[k], want)
			}
		}
		for k, arn := range vars {
			// The local stack's secrets are SSM SecureStrings (a Secrets
			// Manager ARN would read too), read as the functions read them.
			if !strings.HasSuffix(k, "_ARN") || !(strings.Contains(arn, ":ssm:") || strings.Contains(arn, ":secretsmanager:")) || read[arn] {
				continue
			}
			read[arn] = true
			if _, err := secrets.Secret(context.Background(), arn); err != nil {
				t.Errorf("%s: %s = %s does not read in the stack's moto: %v", fn.LogicalID, k, arn, err)
			}
		}
	}
	if len(read) == 0 {
		t.Error("sam-env.json names no secret in moto")
	}
}
