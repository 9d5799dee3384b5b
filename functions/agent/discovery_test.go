package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/x402"
)

const testPayTo = "0x00000000000000000000000000000000000a4402"

// railOn and railOff are the two sites the documents describe.
var (
	railOn  = site{BaseURL: "https://oracle.example", PayTo: testPayTo, Networks: []x402.NetworkInfo{mustNetwork(x402.NetworkBase)}}
	railOff = site{BaseURL: "https://oracle.example"}
)

func mustNetwork(n x402.Network) x402.NetworkInfo {
	info, ok := x402.LookupNetwork(n)
	if !ok {
		panic(fmt.Sprintf("no network %s", n))
	}
	return info
}

func discovery(t testing.TB, s site) *Discovery {
	t.Helper()
	d, err := NewDiscovery(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func docRequest(method, path string, headers map[string]string) httpapi.Request {
	var r httpapi.Request
	r.RawPath = path
	r.RequestContext.HTTP.Method = method
	r.Headers = headers
	return r
}

// served is a document's body as GET answers it through the handler.
func served(t testing.TB, s site, path string) httpapi.Response {
	t.Helper()
	h := &Handler{Log: obs.NewLogger(io.Discard, "ERROR"), Docs: discovery(t, s)}
	if s.rail() {
		h.Networks, h.PayTo = s.Networks, s.PayTo
	}
	resp, err := h.Handle(context.Background(), docRequest(http.MethodGet, path, nil))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// spec is the served OpenAPI document, loaded by kin-openapi.
func spec(t testing.TB, s site) *openapi3.T {
	t.Helper()
	resp := served(t, s, OpenAPIPath)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", OpenAPIPath, resp.StatusCode)
	}
	doc, err := openapi3.NewLoader().LoadFromData([]byte(resp.Body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// The served OpenAPI document is valid OpenAPI 3.1 (kin-openapi's
// Validate, patterns and examples included), with the rail on and off;
// off, it has no x402 part.
func TestTheOpenAPIDocumentIsValid(t *testing.T) {
	for name, s := range map[string]site{"rail on": railOn, "rail off": railOff} {
		t.Run(name, func(t *testing.T) {
			doc := spec(t, s)
			if err := doc.Validate(context.Background(), openapi3.EnableSchemaPatternValidation(), openapi3.EnableExamplesValidation()); err != nil {
				t.Fatal(err)
			}
			if !doc.IsOpenAPI31OrLater() || doc.Servers[0].URL != s.BaseURL {
				t.Fatalf("openapi %s, servers %v", doc.OpenAPI, doc.Servers)
			}
			for _, path := range []string{"/api/checkout", "/api/verdict", "/api/health", "/result/{session_id}", "/oracle/result", "/chat", "/api/chat", OpenAPIPath, LLMsPath} {
				if doc.Paths.Find(path) == nil {
					t.Errorf("%s is not documented", path)
				}
			}
			x402Parts := []string{"/x402/query", "/x402/query/full", "/x402/query/premium", "/x402/result/{id}", WellKnownPath, MCPPath}
			for _, path := range x402Parts {
				if documented := doc.Paths.Find(path) != nil; documented != s.rail() {
					t.Errorf("%s documented: %v, want %v", path, documented, s.rail())
				}
			}
			if x := doc.Extensions["x-discovery"]; fmt.Sprint(x) != fmt.Sprintf("map[llmsTxtUrl:%s/llms.txt]", s.BaseURL) {
				t.Errorf("x-discovery %v", x)
			}
		})
	}
}

// Every paid route carries x-payment-info as x402scan's discovery
// (@agentcash/discovery's PaymentInfoSchema) reads it, its price from
// oracle.Tier, a 402 with the PAYMENT-REQUIRED header, no security, and
// the query's real limits.
func TestEveryPaidRouteIsPriced(t *testing.T) {
	doc := spec(t, railOn)
	for path, tier := range Routes {
		op := doc.Paths.Find(path).Post
		if op == nil {
			t.Fatalf("POST %s is not documented", path)
		}
		info, _ := json.Marshal(op.Extensions["x-payment-info"])
		want := fmt.Sprintf(`{"price":{"amount":"%s","currency":"USD","mode":"fixed"},"protocols":[{"x402":{}}]}`, oracle.FormatUSDC(tier.PriceUSDCAtomic()))
		if string(info) != want {
			t.Errorf("%s: x-payment-info %s, want %s", path, info, want)
		}
		if op.Security == nil || len(*op.Security) != 0 {
			t.Errorf("%s: security %v, want none", path, op.Security)
		}
		r := op.Responses.Status(http.StatusPaymentRequired)
		if r == nil || r.Value.Headers[x402.HeaderPaymentRequired] == nil || !r.Value.Headers[x402.HeaderPaymentRequired].Value.Required {
			t.Errorf("%s: no 402 with the %s header", path, x402.HeaderPaymentRequired)
		}
		query := op.RequestBody.Value.Content.Get("application/json").Schema.Value.Properties["query"].Value
		if query.MaxLength == nil || *query.MaxLength != oracle.MaxQueryUnits || query.MinLength != 1 {
			t.Errorf("%s: query limits %v..%v", path, query.MinLength, query.MaxLength)
		}
	}
	prices := map[string]string{"quick": "0.05", "full": "0.25", "strategy": "1.00"}
	for tier, price := range prices {
		if got := oracle.FormatUSDC(oracle.Tier(tier).PriceUSDCAtomic()); got != price {
			t.Errorf("%s costs %s USDC, the issue sells it for %s", tier, got, price)
		}
	}
}

// schema validates v against a component of the served document, as a
// 3.1 document's schemas are read (JSON Schema 2020-12).
func schema(t testing.TB, doc *openapi3.T, name string, v any) error {
	t.Helper()
	ref := doc.Components.Schemas[name]
	if ref == nil {
		t.Fatalf("no schema %s", name)
	}
	return ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

func decoded(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Every verdict the generator stores (the fake model's, canonical JSON as
// stored) passes its tier's schema and the Verdict schema, and no other
// tier's.
func TestTheVerdictSchemaAcceptsEveryStoredVerdict(t *testing.T) {
	t.Parallel()
	doc := spec(t, railOff)
	// Sixty prompts draw every phrase of the fake's lists several times
	// (124 distinct verdicts); each check is a schema walk with patterns,
	// slow under -race.
	for i := range 60 {
		for _, tier := range oracle.Tiers() {
			a := fakegemini.Verdict(fmt.Sprintf("Should I open bakery number %d?", i), tier)
			stored, err := a.CanonicalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := oracle.ParseAnalysis(tier, stored); err != nil {
				t.Fatalf("the fake's verdict is refused: %v", err)
			}
			v := decoded(t, stored)
			if err := schema(t, doc, "Verdict", v); err != nil {
				t.Fatalf("%s verdict %s: %v", tier, stored, err)
			}
			for _, other := range oracle.Tiers() {
				if err := schema(t, doc, verdictName(other), v); (err == nil) != (other == tier) {
					t.Fatalf("%s verdict against %s's schema: %v", tier, other, err)
				}
			}
		}
	}
}

// The schema refuses what ParseAnalysis refuses, and takes what it takes,
// case by case: every bound, every text rule, every shape (a JSON object
// each; what only a byte reader sees, a fence or a repeated key, is no
// JSON value for a schema).
func TestTheVerdictSchemaRefusesWhatParseAnalysisRefuses(t *testing.T) {
	doc := spec(t, railOff)
	base := func(tier oracle.Tier) map[string]any {
		b, err := fakegemini.Verdict("Should I open a bakery?", tier).CanonicalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return decoded(t, b).(map[string]any)
	}
	long := func(n int, r string) string { return strings.Repeat(r, n) }
	dim := func(m map[string]any, name string) map[string]any {
		return m["breakdown"].(map[string]any)[name].(map[string]any)
	}
	strategy := func(m map[string]any) map[string]any { return m["strategy"].(map[string]any) }
	cases := []struct {
		name   string
		tier   oracle.Tier
		change func(m map[string]any)
	}{
		{"as stored", oracle.TierStrategy, func(map[string]any) {}},
		{"a lower-case verdict", oracle.TierQuick, func(m map[string]any) { m["verdict"] = "green" }},
		{"no verdict", oracle.TierQuick, func(m map[string]any) { delete(m, "verdict") }},
		{"a null summary", oracle.TierQuick, func(m map[string]any) { m["summary"] = nil }},
		{"a number for a summary", oracle.TierQuick, func(m map[string]any) { m["summary"] = 3 }},
		{"an empty summary", oracle.TierQuick, func(m map[string]any) { m["summary"] = "" }},
		{"a blank summary", oracle.TierQuick, func(m map[string]any) { m["summary"] = " \n\t " }},
		{"a summary of wide spaces", oracle.TierQuick, func(m map[string]any) { m["summary"] = "\u3000\u00a0\u2028" }},
		{"a summary with a carriage return", oracle.TierQuick, func(m map[string]any) { m["summary"] = "Go.\rNo." }},
		{"a summary with an escape", oracle.TierQuick, func(m map[string]any) { m["summary"] = "Go \x1b[2J" }},
		{"a summary with a C1 control", oracle.TierQuick, func(m map[string]any) { m["summary"] = "Go\u0085on" }},
		{"a summary with DEL", oracle.TierQuick, func(m map[string]any) { m["summary"] = "Go\x7f" }},
		{"a summary with newline and tab", oracle.TierQuick, func(m map[string]any) { m["summary"] = "\tGo.\nThen go on." }},
		{"a summary of 600 characters", oracle.TierQuick, func(m map[string]any) { m["summary"] = long(oracle.MaxSummaryChars, "é") }},
		{"a summary of 600 characters outside the BMP", oracle.TierQuick, func(m map[string]any) { m["summary"] = long(oracle.MaxSummaryChars, "𝔊") }},
		{"a summary of 601 characters", oracle.TierQuick, func(m map[string]any) { m["summary"] = long(oracle.MaxSummaryChars+1, "a") }},
		{"a key in another case", oracle.TierQuick, func(m map[string]any) { m["Summary"] = m["summary"]; delete(m, "summary") }},
		{"an unknown key", oracle.TierQuick, func(m map[string]any) { m["confidence"] = "high" }},
		{"a quick take with a breakdown", oracle.TierQuick, func(m map[string]any) { m["breakdown"] = base(oracle.TierFull)["breakdown"] }},
		{"a quick take with an empty breakdown", oracle.TierQuick, func(m map[string]any) { m["breakdown"] = map[string]any{} }},
		{"a breakdown without a dimension", oracle.TierFull, func(m map[string]any) { delete(m["breakdown"].(map[string]any), "Curvature") }},
		{"a breakdown with a sixth dimension", oracle.TierFull, func(m map[string]any) {
			m["breakdown"].(map[string]any)["Stamina"] = map[string]any{"verdict": "RED", "analysis": "x"}
		}},
		{"a dimension in another case", oracle.TierFull, func(m map[string]any) {
			b := m["breakdown"].(map[string]any)
			b["stability"] = b["Stability"]
			delete(b, "Stability")
		}},
		{"a NULL dimension", oracle.TierFull, func(m map[string]any) { dim(m, "Stability")["verdict"] = "NULL" }},
		{"a dimension with a third key", oracle.TierFull, func(m map[string]any) { dim(m, "Stability")["score"] = "3" }},
		{"a dimension without analysis", oracle.TierFull, func(m map[string]any) { delete(dim(m, "Turbulence"), "analysis") }},
		{"an analysis of 1000 characters", oracle.TierFull, func(m map[string]any) { dim(m, "Completion")["analysis"] = long(oracle.MaxAnalysisChars, "a") }},
		{"an analysis of 1001 characters", oracle.TierFull, func(m map[string]any) { dim(m, "Completion")["analysis"] = long(oracle.MaxAnalysisChars+1, "a") }},
		{"a full breakdown with a strategy", oracle.TierFull, func(m map[string]any) { m["strategy"] = base(oracle.TierStrategy)["strategy"] }},
		{"a strategy session without a strategy", oracle.TierStrategy, func(m map[string]any) { delete(m, "strategy") }},
		{"a strategy session without a breakdown", oracle.TierStrategy, func(m map[string]any) { delete(m, "breakdown") }},
		{"two tests", oracle.TierStrategy, func(m map[string]any) { strategy(m)["tests"] = []any{"a", "b"} }},
		{"four tests", oracle.TierStrategy, func(m map[string]any) { strategy(m)["tests"] = []any{"a", "b", "c", "d"} }},
		{"a blank test", oracle.TierStrategy, func(m map[string]any) { strategy(m)["tests"] = []any{"a", " ", "c"} }},
		{"a test that is no string", oracle.TierStrategy, func(m map[string]any) { strategy(m)["tests"] = []any{"a", 2, "c"} }},
		{"tests that are no array", oracle.TierStrategy, func(m map[string]any) { strategy(m)["tests"] = "a, b, c" }},
		{"a test of 601 characters", oracle.TierStrategy, func(m map[string]any) { strategy(m)["tests"] = []any{"a", long(oracle.MaxStrategyChars+1, "b"), "c"} }},
		{"no next step", oracle.TierStrategy, func(m map[string]any) { delete(strategy(m), "next_step") }},
		{"an alternative with a NUL", oracle.TierStrategy, func(m map[string]any) { strategy(m)["alternative"] = "a\x00b" }},
		{"a strategy with a fourth key", oracle.TierStrategy, func(m map[string]any) { strategy(m)["budget"] = "low" }},
		{"a strategy that is a string", oracle.TierStrategy, func(m map[string]any) { m["strategy"] = "go" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := base(c.tier)
			c.change(m)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			_, parseErr := oracle.ParseAnalysis(c.tier, b)
			schemaErr := schema(t, doc, verdictName(c.tier), decoded(t, b))
			if (parseErr == nil) != (schemaErr == nil) {
				t.Fatalf("ParseAnalysis: %v; the schema: %v", parseErr, schemaErr)
			}
		})
	}
}

// The x402 discovery document is what x402scan's crawler read (version 1,
// resources as absolute URLs) and lists the MCP tools; with the rail off
// there is nothing to sell over x402, and it answers 404.
func TestTheX402DiscoveryDocument(t *testing.T) {
	resp := served(t, railOn, WellKnownPath)
	var wk struct {
		Version      int      `json:"version"`
		Resources    []string `json:"resources"`
		Instructions string   `json:"instructions"`
		MCP          struct {
			URL       string   `json:"url"`
			Transport string   `json:"transport"`
			Tools     []string `json:"tools"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &wk); err != nil {
		t.Fatal(err)
	}
	want := []string{"https://oracle.example/x402/query", "https://oracle.example/x402/query/full", "https://oracle.example/x402/query/premium"}
	if wk.Version != 1 || strings.Join(wk.Resources, " ") != strings.Join(want, " ") || wk.Instructions == "" {
		t.Fatalf("%s", resp.Body)
	}
	if wk.MCP.URL != "https://oracle.example/mcp" || wk.MCP.Transport != "streamable-http" ||
		strings.Join(wk.MCP.Tools, " ") != "oracle_quick_take oracle_full_breakdown oracle_strategy_session oracle_result" {
		t.Fatalf("mcp %+v", wk.MCP)
	}
	for _, price := range []string{"0.05 USDC", "0.25 USDC", "1.00 USDC"} {
		if !strings.Contains(wk.Instructions, price) {
			t.Errorf("the instructions do not say %s: %s", price, wk.Instructions)
		}
	}
	doc := spec(t, railOn)
	if err := schema(t, doc, "X402Discovery", decoded(t, []byte(resp.Body))); err != nil {
		t.Error(err)
	}
	if off := served(t, railOff, WellKnownPath); off.StatusCode != http.StatusNotFound {
		t.Errorf("rail off: %d %s", off.StatusCode, off.Body)
	}
}

// llms.txt says what is sold, the three prices, how to pay and where the
// other documents are; with the rail off, only the card and the chat.
func TestLLMsTxt(t *testing.T) {
	on := served(t, railOn, LLMsPath)
	if on.Headers["Content-Type"] != "text/plain; charset=utf-8" {
		t.Errorf("Content-Type %q", on.Headers["Content-Type"])
	}
	for _, want := range []string{"0.05 USDC", "0.25 USDC", "1.00 USDC", "C$1.00", "C$5.00", "C$25.00", "PAYMENT-SIGNATURE",
		"https://oracle.example/mcp", "https://oracle.example/openapi.json", "https://oracle.example/.well-known/x402",
		"oracle_quick_take", "oracle_result", "eip155:8453", fmt.Sprint(oracle.MaxQueryUnits)} {
		if !strings.Contains(on.Body, want) {
			t.Errorf("llms.txt does not say %q:\n%s", want, on.Body)
		}
	}
	// The trial's length is written in words: it must be the chat's.
	if chat.TrialExchanges != 3 || !strings.Contains(on.Body, "three exchanges free") {
		t.Errorf("the chat's trial is %d exchanges; llms.txt:\n%s", chat.TrialExchanges, on.Body)
	}
	off := served(t, railOff, LLMsPath)
	for _, gone := range []string{"USDC", "x402", "/mcp", "well-known"} {
		if strings.Contains(off.Body, gone) {
			t.Errorf("rail off, llms.txt says %q:\n%s", gone, off.Body)
		}
	}
	if !strings.Contains(off.Body, "C$25.00") || !strings.Contains(off.Body, "/openapi.json") {
		t.Errorf("rail off:\n%s", off.Body)
	}
}

// Every document is answered to GET and HEAD from any origin, cacheable
// for five minutes, with an ETag a revalidation is answered 304 against;
// another method is 405. The documents change nothing: they are made once.
func TestDocumentsAreServedCached(t *testing.T) {
	d := discovery(t, railOn)
	for _, path := range []string{WellKnownPath, OpenAPIPath, LLMsPath, IconPath} {
		get, _ := d.Serve(docRequest(http.MethodGet, path, nil))
		head, _ := d.Serve(docRequest(http.MethodHead, path, nil))
		if get.StatusCode != http.StatusOK || get.Body == "" || get.Headers["Cache-Control"] != "public, max-age=300" ||
			get.Headers["Access-Control-Allow-Origin"] != "*" || get.Headers["ETag"] == "" {
			t.Errorf("GET %s: %d %v", path, get.StatusCode, get.Headers)
		}
		if head.StatusCode != http.StatusOK || head.Body != "" || head.Headers["ETag"] != get.Headers["ETag"] || head.Headers["Content-Type"] != get.Headers["Content-Type"] {
			t.Errorf("HEAD %s: %d %v %q", path, head.StatusCode, head.Headers, head.Body)
		}
		again, _ := d.Serve(docRequest(http.MethodGet, path, map[string]string{"if-none-match": `"x", W/` + get.Headers["ETag"]}))
		if again.StatusCode != http.StatusNotModified || again.Body != "" {
			t.Errorf("GET %s If-None-Match: %d", path, again.StatusCode)
		}
		post, ok := d.Serve(docRequest(http.MethodPost, path, nil))
		if !ok || post.StatusCode != http.StatusMethodNotAllowed || post.Headers["Allow"] != "GET, HEAD" {
			t.Errorf("POST %s: %d %v", path, post.StatusCode, post.Headers)
		}
	}
	if _, ok := d.Serve(docRequest(http.MethodPost, "/x402/query", nil)); ok {
		t.Error("a paid route was served as a document")
	}
	if icon := served(t, railOff, IconPath); icon.StatusCode != http.StatusOK || icon.Headers["Content-Type"] != "image/svg+xml" ||
		!strings.HasPrefix(icon.Body, "<svg") {
		t.Errorf("icon: %d %v", icon.StatusCode, icon.Headers)
	}
}

// Every text the documents carry passes the content filter: the rendered
// documents, their templates as written and the package's literals.
func TestDocumentsPassTheContentFilter(t *testing.T) {
	f, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []site{railOn, railOff} {
		for path, doc := range discovery(t, s).docs {
			if r := f.Text(doc.body); r.Action != sosfilter.Pass {
				t.Errorf("%s: %s %v", path, r.Action, r.Terms())
			}
		}
	}
	for path, text := range testkit.TemplateTexts(t, files, "templates") {
		if r := f.Text(text); r.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", path, r.Action, r.Terms())
		}
	}
	testkit.LiteralsPassTheFilter(t, ".")
}

// The samples in events/agent/discovery stay valid: each document's GET
// (and a HEAD) is answered 200 by the function's handler.
func TestDiscoverySampleEvents(t *testing.T) {
	files, err := filepath.Glob("../../events/agent/discovery/*.json")
	if err != nil || len(files) != 5 {
		t.Fatalf("samples %v %v", files, err)
	}
	h := &Handler{Log: obs.NewLogger(io.Discard, "ERROR"), Networks: railOn.Networks, PayTo: railOn.PayTo, Docs: discovery(t, railOn)}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var r httpapi.Request
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		resp, err := h.Handle(context.Background(), r)
		if err != nil || resp.StatusCode != http.StatusOK || (r.RequestContext.HTTP.Method == http.MethodGet) != (resp.Body != "") {
			t.Errorf("%s: %d %v", filepath.Base(file), resp.StatusCode, err)
		}
	}
}
