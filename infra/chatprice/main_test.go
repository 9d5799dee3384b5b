package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"

	"42sisters.ai/oracle/infra/deployment"
	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
)

// make chat-price makes the Price once: run again, it finds it; a Price of
// another amount under the key fails the run.
func TestChatPriceVerb(t *testing.T) {
	srv := httptest.NewServer(fakestripe.New(fakestripe.Options{}))
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "stack-local.json")
	d := deployment.Deployment{Name: "local", Region: "us-east-1", AWSEndpoint: "http://127.0.0.1:1",
		Env: map[string]string{"STRIPE_API_BASE": srv.URL}}
	if err := d.Write(file); err != nil {
		t.Fatal(err)
	}
	lookup := func(name string) (string, bool) {
		if name == "STRIPE_SECRET_KEY" {
			return "sk_test_chat_price", true
		}
		return "", false
	}
	verb := func() (int, string) {
		var out, errs bytes.Buffer
		code := run(context.Background(), []string{"-local", file}, lookup, &out, &errs)
		return code, out.String() + errs.String()
	}
	if code, out := verb(); code != 0 || !strings.Contains(out, "test mode: created price_") {
		t.Fatalf("first run: %d %s", code, out)
	}
	if code, out := verb(); code != 0 || !strings.Contains(out, "is already there") {
		t.Fatalf("second run: %d %s", code, out)
	}

	sc := &client.API{}
	sc.Init("sk_test_chat_price", &stripe.Backends{API: stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{URL: stripe.String(srv.URL)})})
	if _, err := sc.Prices.New(&stripe.PriceParams{Currency: stripe.String("cad"), UnitAmount: stripe.Int64(400), LookupKey: stripe.String("sisters_chat_monthly_cad"),
		TransferLookupKey: stripe.Bool(true), ProductData: &stripe.PriceProductDataParams{Name: stripe.String("Sisters Chat")},
		Recurring: &stripe.PriceRecurringParams{Interval: stripe.String("month")}}); err != nil {
		t.Fatal(err)
	}
	if code, out := verb(); code != 1 || !strings.Contains(out, "archive it") {
		t.Fatalf("run over a C$4 price: %d %s", code, out)
	}
}
