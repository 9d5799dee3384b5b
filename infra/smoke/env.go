package main

import (
	"maps"

	"42sisters.ai/oracle/infra/deployment"
)

// fromOutputs and fromParameters give the smoke function's settings (its
// environment in template.yaml) the values the stack describes; a test
// holds them to the template's.
var (
	fromOutputs = map[string]string{
		"API_URL":          "ApiUrl",
		"ORDERS_TABLE":     "OrdersTableName",
		"CHAT_TABLE":       "ChatTableName",
		"LEDGER_TABLE":     "LedgerTableName",
		"AUDIT_BUCKET":     "AuditBucketName",
		"ALERTS_TOPIC_ARN": "AlertsTopicArn",
	}
	fromParameters = map[string]string{
		"BASE_URL":                       "BaseUrl",
		"HASH_PEPPER_ARN":                "HashPepperArn",
		"MAIL_TRANSPORT":                 "MailTransport",
		"GRAPH_CREDENTIALS_ARN":          "GraphCredentialsArn",
		"STRIPE_SECRET_KEY_ARN":          "StripeSecretKeyArn",
		"STRIPE_TEST_SECRET_KEY_ARN":     "StripeTestSecretKeyArn",
		"STRIPE_TEST_WEBHOOK_SECRET_ARN": "StripeTestWebhookSecretArn",
		"X402_PAY_TO":                    "X402PayTo",
		"X402_NETWORKS":                  "X402Networks",
		"X402_SMOKE_KEY_ARN":             "X402SmokeKeyArn",
		"X402_SMOKE_PAYER":               "X402SmokePayer",
	}
	// overridable are the secrets a workstation may give itself instead
	// of reading the stack's (a key not yet stored, a live key to see the
	// environment check refuse it).
	overridable = []string{"STRIPE_SECRET_KEY", "STRIPE_TEST_SECRET_KEY", "STRIPE_TEST_WEBHOOK_SECRET", "X402_SMOKE_KEY"}
)

// settingsEnv is the environment the smoke function would have in the
// deployment d, with the workstation's own secrets (lookup) first.
func settingsEnv(d deployment.Deployment, lookup func(string) (string, bool)) (map[string]string, error) {
	env := map[string]string{}
	for name, output := range fromOutputs {
		v, err := d.Output(output)
		if err != nil {
			return nil, err
		}
		env[name] = v
	}
	for name, param := range fromParameters {
		env[name] = d.Parameters[param]
	}
	env["GRAPH_SENDER"] = d.Parameters["GraphSender"]
	if env["GRAPH_SENDER"] == "" {
		env["GRAPH_SENDER"] = d.Parameters["MailSender"]
	}
	// The local stack's fakes, reached as its functions reach them.
	maps.Copy(env, d.Env)
	for _, name := range overridable {
		if v, ok := lookup(name); ok && v != "" {
			env[name] = v
			delete(env, name+"_ARN")
		}
	}
	return env, nil
}
