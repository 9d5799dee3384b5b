package provision_test

import (
	"testing"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
)

func TestProvisionTemplate(t *testing.T) {
	f := provision.ForTest(t, map[string]string{"StripeSecretKeyArn": "sk_test_x", "HashPepperArn": "pepper", "StripeTestWebhookSecretArn": "whsec_x", "StripeWebhookSecretArn": ""})
	tmpl, _ := sam.Load(provision.TemplatePath())
	for _, fn := range tmpl.Functions() {
		env, err := f.Env(fn)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %v routes=%v", fn.LogicalID, env, fn.Routes)
	}
}
