package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/x402"
)

// compileSchema compiles a JSON Schema given as Go values (as a 402 holds
// it), checking it against its draft's metaschema: a schema that is no
// Draft 2020-12 schema fails here.
func compileSchema(t *testing.T, schema any) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(mustJSON(t, schema)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// asJSONValue is v as JSON decodes it: what a client validating the wire
// form sees (numbers as json.Number, maps of any).
func asJSONValue(t *testing.T, v any) any {
	t.Helper()
	out, err := jsonschema.UnmarshalJSON(strings.NewReader(mustJSON(t, v)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// every402 is every kind of 402 a paid route answers: a probe with neither
// body nor payment, a request without payment, and a payment refused.
func (e *env) every402(path string) map[string]x402.PaymentRequired {
	e.t.Helper()
	out := map[string]x402.PaymentRequired{}
	for name, r := range map[string]struct{ body, payment string }{
		"probe":   {"", ""},
		"unpaid":  {body, ""},
		"refused": {body, e.sign(wallet(e.t), e.offer(path).Accepts[0], func(p *x402.PaymentPayload) { p.Payload.Authorization.Value = "1" })},
	} {
		resp := e.do(request(path, r.body, r.payment))
		if resp.StatusCode != http.StatusPaymentRequired {
			e.t.Fatalf("%s %s answered %d %s", path, name, resp.StatusCode, resp.Body)
		}
		pr, err := x402.DecodePaymentRequired(resp.Headers[x402.HeaderPaymentRequired])
		if err != nil {
			e.t.Fatal(err)
		}
		out[name] = pr
	}
	return out
}

// TestEvery402DescribesItsOffer: every 402 of every paid route (a probe, an
// unpaid request, a refused payment) carries the bazaar extension, whose
// info validates against its own schema, a Draft 2020-12 schema with the
// query's real limits (a query the rail refuses for its length or
// emptiness fails it); its example body is a query the rail takes and its
// example verdict one the generator stores; the resource names the service
// for catalogues within the official bounds; and payment-identifier is
// advertised, optional, with the official schema.
func TestEvery402DescribesItsOffer(t *testing.T) {
	e := newEnv(t)
	for path, tier := range Routes {
		for name, pr := range e.every402(path) {
			t.Run(path+"/"+name, func(t *testing.T) {
				raw, ok := pr.Extensions[x402.ExtensionBazaar].(map[string]any)
				if !ok {
					t.Fatalf("no bazaar extension: %v", pr.Extensions)
				}
				if raw["schema"].(map[string]any)["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
					t.Fatalf("schema %v", raw["schema"])
				}
				schema := compileSchema(t, raw["schema"])
				if err := schema.Validate(asJSONValue(t, raw["info"])); err != nil {
					t.Fatalf("info does not validate against its schema: %v", err)
				}
				var info struct {
					Input struct {
						Type, Method, BodyType string
						Body                   map[string]any
					}
					Output struct {
						Type    string
						Example verdictAnswer
					}
				}
				if err := json.Unmarshal([]byte(mustJSON(t, raw["info"])), &info); err != nil {
					t.Fatal(err)
				}
				if info.Input.Type != "http" || info.Input.Method != "POST" || info.Input.BodyType != "json" || info.Output.Type != "json" {
					t.Fatalf("info %+v", info)
				}
				example, _ := info.Input.Body["query"].(string)
				if err := oracle.ValidateQuery(example); err != nil {
					t.Fatalf("the example query is refused: %v", err)
				}
				if _, err := oracle.ParseAnalysis(tier, info.Output.Example.Verdict); err != nil || info.Output.Example.Tier != tier {
					t.Fatalf("the example verdict %s of %s: %v", info.Output.Example.Verdict, info.Output.Example.Tier, err)
				}
				for query, ok := range map[string]bool{
					example: true, "": false, strings.Repeat("x", oracle.MaxQueryUnits+1): false,
				} {
					changed := asJSONValue(t, raw["info"]).(map[string]any)
					changed["input"].(map[string]any)["body"] = map[string]any{"query": query}
					if err := schema.Validate(changed); (err == nil) != ok {
						t.Errorf("a query of %d characters: valid %v, want %v (%v)", len(query), err == nil, ok, err)
					}
				}

				r := pr.Resource
				if r == nil || r.ServiceName == "" || len(r.ServiceName) > 32 || len(r.Tags) == 0 || len(r.Tags) > 5 ||
					r.IconURL != "https://oracle.example/icon.svg" || r.URL != "https://oracle.example"+path {
					t.Fatalf("resource %+v", r)
				}
				for _, s := range append([]string{r.ServiceName}, r.Tags...) {
					for _, c := range []byte(s) {
						if c < 0x20 || c > 0x7e || len(s) > 32 {
							t.Fatalf("%q is not 1 to 32 printable ASCII characters", s)
						}
					}
				}

				pid, ok := pr.Extensions[x402.ExtensionPaymentIdentifier].(map[string]any)
				if !ok || mustJSON(t, pid["info"]) != `{"required":false}` {
					t.Fatalf("payment-identifier %v", pr.Extensions[x402.ExtensionPaymentIdentifier])
				}
				ids := compileSchema(t, pid["schema"])
				for id, ok := range map[string]bool{"pay_7d5d747be160e280504c099d984bcfe0": true, "short": false,
					strings.Repeat("a", 129): false, "pay 7d5d747be160e2805": false} {
					if err := ids.Validate(asJSONValue(t, map[string]any{"required": false, "id": id})); (err == nil) != ok {
						t.Errorf("id %q: valid %v, want %v", id, err == nil, ok)
					}
				}
			})
		}
	}
}

// TestAnExampleVerdictOfEachTier: the offers' example verdicts are ones
// the generator would store, tier by tier.
func TestAnExampleVerdictOfEachTier(t *testing.T) {
	for _, tier := range []oracle.Tier{oracle.TierQuick, oracle.TierFull, oracle.TierStrategy} {
		raw, err := exampleVerdicts[tier].CanonicalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := oracle.ParseAnalysis(tier, raw); err != nil {
			t.Errorf("%s: %v", tier, err)
		}
	}
	if len(exampleVerdicts) != 3 {
		t.Fatalf("%d example verdicts", len(exampleVerdicts))
	}
}

// TestAnIconOnlyWhereACatalogueCanFetchIt: the 402's iconUrl names the
// site's icon on a public host, and is left out on a loopback name or an
// IP literal, which the official package refuses.
func TestAnIconOnlyWhereACatalogueCanFetchIt(t *testing.T) {
	for base, public := range map[string]bool{
		"https://oracle.example": true, "https://api.42sisters.ai": true, "http://localhost:3000": false,
		"http://127.0.0.1:3000": false, "http://[::1]:3000": false, "http://ip6-localhost": false, "http://1234": false,
		"http://0x7f000001": false, "https://user@oracle.example": false,
	} {
		h := &Handler{BaseURL: base}
		if got := h.resourceOf(base+"/x402/query", oracle.TierQuick).IconURL; (got == base+IconPath) != public || (!public && got != "") {
			t.Errorf("%s: iconUrl %q", base, got)
		}
	}
}
