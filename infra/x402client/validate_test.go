package x402client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/x402client"
)

// bazaar is a quick verdict's discovery extension written out by hand as
// specs/extensions/bazaar.md has it for a POST endpoint: info, and the JSON
// Schema 2020-12 that validates it, the query's limits in it.
const bazaar = `{
  "info": {
    "input": {"type": "http", "method": "POST", "bodyType": "json", "body": {"query": "Should I open a bakery?"}},
    "output": {"type": "json", "example": {"verdict": "GREEN"}}
  },
  "schema": {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
      "input": {
        "type": "object",
        "properties": {
          "type": {"type": "string", "const": "http"},
          "method": {"type": "string", "enum": ["POST"]},
          "bodyType": {"type": "string", "enum": ["json"]},
          "body": {
            "type": "object",
            "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 2000}},
            "required": ["query"],
            "additionalProperties": false
          }
        },
        "required": ["type", "method", "bodyType", "body"],
        "additionalProperties": false
      },
      "output": {
        "type": "object",
        "properties": {"type": {"type": "string"}, "example": {"type": "object"}},
        "required": ["type"]
      }
    },
    "required": ["input"]
  }
}`

// paymentIdentifier is the payment-identifier declaration as
// specs/extensions/payment_identifier.md has it: optional.
const paymentIdentifier = `{
  "info": {"required": false},
  "schema": {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
      "required": {"type": "boolean"},
      "id": {"type": "string", "minLength": 16, "maxLength": 128, "pattern": "^[a-zA-Z0-9_-]+$"}
    },
    "required": ["required"]
  }
}`

// extensions is what the test payee declares when told to.
func extensions(t *testing.T) map[string]any {
	t.Helper()
	return map[string]any{"bazaar": decode(t, bazaar), "payment-identifier": decode(t, paymentIdentifier)}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// handWritten is a valid 402 for the quick tier, with the service metadata
// bazaar's spec allows on resource.
func handWritten(t *testing.T) map[string]any {
	return map[string]any{
		"x402Version": 2,
		"error":       "PAYMENT-SIGNATURE header is required",
		"resource": map[string]any{
			"url": "https://oracle.example.com/x402/query", "description": "a quick verdict", "mimeType": "application/json",
			"serviceName": "Oracle", "tags": []any{"verdict", "advice"}, "iconUrl": "https://oracle.example.com/icon.png",
		},
		"accepts":    []any{requirement},
		"extensions": extensions(t),
	}
}

// at returns the object at a dotted path of m.
func at(m map[string]any, path string) map[string]any {
	for _, k := range strings.Split(path, ".") {
		m = m[k].(map[string]any)
	}
	return m
}

func TestValidateJSON(t *testing.T) {
	c := x402client.New(t)
	cases := []struct {
		name   string
		change func(m map[string]any)
		failed string // the check that fails, "": none
		error  string // a part of its error
	}{
		{name: "valid"},
		{name: "info breaks the schema: an empty query", failed: "bazaar", error: "/input/body/query: must NOT have fewer than 1 characters",
			change: func(m map[string]any) { at(m, "extensions.bazaar.info.input.body")["query"] = "" }},
		{name: "info breaks the schema: a field it forbids", failed: "bazaar", error: "must NOT have additional properties",
			change: func(m map[string]any) { at(m, "extensions.bazaar.info.input.body")["tier"] = "quick" }},
		{name: "a method the protocol does not know", failed: "bazaar", error: "spec: info.input.method",
			change: func(m map[string]any) {
				at(m, "extensions.bazaar.info.input")["method"] = "FETCH"
				at(m, "extensions.bazaar.schema.properties.input.properties.method")["enum"] = []any{"FETCH"}
			}},
		{name: "a schema of another dialect", failed: "bazaar", error: "schema.$schema",
			change: func(m map[string]any) {
				at(m, "extensions.bazaar.schema")["$schema"] = "http://json-schema.org/draft-07/schema#"
			}},
		{name: "no bazaar", failed: "bazaar", error: "extensions.bazaar is missing",
			change: func(m map[string]any) { delete(at(m, "extensions"), "bazaar") }},
		{name: "no payment-identifier", failed: "payment-identifier", error: "is missing",
			change: func(m map[string]any) { delete(at(m, "extensions"), "payment-identifier") }},
		{name: "a declaration with an id", failed: "payment-identifier", error: "a declaration carries no id",
			change: func(m map[string]any) { at(m, "extensions.payment-identifier.info")["id"] = "pay_0123456789abcdef" }},
		{name: "a declaration of its own schema", failed: "payment-identifier", error: "differs from declarePaymentIdentifierExtension(false)",
			change: func(m map[string]any) {
				at(m, "extensions.payment-identifier.schema.properties.id")["maxLength"] = 64
			}},
		{name: "an icon on localhost", failed: "resource", error: "iconUrl",
			change: func(m map[string]any) { at(m, "resource")["iconUrl"] = "http://localhost:3000/icon.png" }},
		{name: "a service name too long", failed: "paymentRequired", error: "resource.serviceName",
			change: func(m map[string]any) { at(m, "resource")["serviceName"] = strings.Repeat("O", 33) }},
		{name: "no accepts", failed: "paymentRequired", error: "accepts",
			change: func(m map[string]any) { m["accepts"] = []any{} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := handWritten(t)
			if tc.change != nil {
				tc.change(m)
			}
			doc, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			v, err := c.ValidateJSON(ctx, doc)
			if err != nil {
				t.Fatal(err)
			}
			verr := v.Err()
			if tc.failed == "" {
				if verr != nil {
					t.Fatal(verr)
				}
				var found struct {
					ResourceURL   string `json:"resourceUrl"`
					Method        string `json:"method"`
					ServiceName   string `json:"serviceName"`
					DiscoveryInfo struct {
						Input struct{ Body struct{ Query string } }
					} `json:"discoveryInfo"`
				}
				if err := json.Unmarshal(v.Bazaar.Discovered, &found); err != nil || found.ResourceURL != "https://oracle.example.com/x402/query" ||
					found.Method != "POST" || found.ServiceName != "Oracle" || found.DiscoveryInfo.Input.Body.Query == "" {
					t.Errorf("a facilitator would catalogue %s (%v), want the POST endpoint with its example", v.Bazaar.Discovered, err)
				}
				return
			}
			if verr == nil || !strings.Contains(verr.Error(), tc.failed+": ") || !strings.Contains(verr.Error(), tc.error) {
				t.Errorf("got %v, want %s failing with %q", verr, tc.failed, tc.error)
			}
		})
	}
}

func TestValidateURL(t *testing.T) {
	c := x402client.New(t)
	cases := []struct {
		name    string
		handler http.Handler
		valid   bool
		error   string
	}{
		{name: "a 402 declaring both extensions", handler: &payee{extensions: extensions(t)}, valid: true},
		{name: "a 402 declaring none", handler: &payee{}, error: "extensions.bazaar is missing"},
		{name: "a 200 with a PaymentRequired", handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := &payee{extensions: extensions(t)}
			rec := httptest.NewRecorder()
			p.ServeHTTP(rec, r)
			w.Header().Set("PAYMENT-REQUIRED", rec.Header().Get("PAYMENT-REQUIRED"))
			w.Write(rec.Body.Bytes())
		}), error: "answered 200, not 402"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			v, err := c.ValidateURL(ctx, srv.URL+"/x402/query")
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Err(); tc.valid != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.error)) {
				t.Errorf("got %v, want valid %v (%q)", err, tc.valid, tc.error)
			}
			if v.Status != http.StatusPaymentRequired && tc.valid {
				t.Errorf("status %d", v.Status)
			}
		})
	}
	t.Run("no PaymentRequired", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", http.StatusNotFound)
		}))
		defer srv.Close()
		if _, err := c.ValidateURL(context.Background(), srv.URL); err == nil || !strings.Contains(err.Error(), "answered 404 without a PaymentRequired") {
			t.Errorf("got %v, want the answer named", err)
		}
	})
}
