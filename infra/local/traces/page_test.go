package traces_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/local/traces"
	"42sisters.ai/oracle/shared/oracle"
)

// t0 is when the sample order's first span starts.
var t0 = uint64(time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC).UnixNano())

const sampleOrder = "cs_test_a1B2c3D4e5F6g7H8i9J0waterfall"

// sample is one paid order's trace as the functions would send it (times
// in ms from t0): the checkout, the webhook, the generate queue, the
// generator (a model call that failed, then its retry), the mail queue,
// the mailer; a span whose parent never arrived; a span that took no
// time; and another order's trace.
func sample() []traces.Span {
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	at := func(id, parent, service, name, kind string, from, to float64) traces.Span {
		return traces.Span{TraceID: trace, SpanID: id, ParentSpanID: parent, Service: service, Name: name, Kind: kind,
			Start: t0 + uint64(from*1e6), End: t0 + uint64(to*1e6), Status: traces.Status{Code: "unset"},
			Attributes: map[string]any{traces.OrderAttribute: sampleOrder}}
	}
	spans := []traces.Span{
		at("00000000000000a1", "", "checkout", "POST /api/checkout", "server", 0, 120),
		at("00000000000000a2", "00000000000000a1", "checkout", "Stripe POST /v1/checkout/sessions", "client", 10, 90),
		at("00000000000000b1", "00000000000000a1", "webhook", "POST /api/webhook", "server", 500, 620),
		at("00000000000000b2", "00000000000000b1", "webhook", "DynamoDB.PutItem", "client", 510, 530),
		at("00000000000000b3", "00000000000000b1", "webhook", "generate send", "producer", 540, 560),
		at("00000000000000c1", "00000000000000b3", "generator", "generate process", "consumer", 700, 2700),
		at("00000000000000c2", "00000000000000c1", "generator", "Gemini generateContent", "client", 720, 1000),
		at("00000000000000c3", "00000000000000c1", "generator", "Gemini generateContent (retry)", "client", 1100, 2500),
		at("00000000000000c4", "00000000000000c1", "generator", "mail send", "producer", 2600, 2650),
		at("00000000000000d1", "00000000000000c4", "mailer", "mail process", "consumer", 2800, 3100),
		at("00000000000000d2", "00000000000000d1", "mailer", "SES SendEmail", "client", 2820, 3000),
		at("00000000000000e1", "00000000000000ff", "verdict", "GET /api/verdict", "server", 3150, 3190),
		at("00000000000000e2", "00000000000000e1", "verdict", "DynamoDB.GetItem", "client", 3200, 3200),
	}
	spans[6].Status = traces.Status{Code: "error", Message: "503 Service Unavailable"}
	other := at("00000000000000f1", "", "checkout", "POST /api/checkout", "server", 0, 50)
	other.TraceID, other.Attributes = "11111111111111111111111111111111", map[string]any{traces.OrderAttribute: sampleOrder + "x"}
	return append(spans, other)
}

// TestOrderJSON: ?format=json gives every span of the order's trace with
// the fields the contract names, and nothing of another order's, even one
// whose id starts with this one's.
func TestOrderJSON(t *testing.T) {
	srv, store := server(t, traces.Limits{})
	store.Add(sample())
	for _, c := range []struct{ name, url, accept string }{
		{"format", srv.URL + traces.PagePath + sampleOrder + "?format=json", ""},
		{"accept", srv.URL + traces.PagePath + sampleOrder, "application/json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, c.url, nil)
			if c.accept != "" {
				req.Header.Set("Accept", c.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got struct {
				Order string
				Spans []map[string]any
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, %v", resp.StatusCode, err)
			}
			if got.Order != sampleOrder || len(got.Spans) != 13 {
				t.Fatalf("order %q with %d spans, want %s with 13", got.Order, len(got.Spans), sampleOrder)
			}
			for _, s := range got.Spans {
				for _, k := range []string{"trace_id", "span_id", "name", "service", "kind", "start_unix_nano", "end_unix_nano", "attributes", "status"} {
					if _, ok := s[k]; !ok {
						t.Errorf("span %v has no %s", s["name"], k)
					}
				}
				if s["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" {
					t.Errorf("a span of trace %v", s["trace_id"])
				}
			}
			if got.Spans[1]["parent_span_id"] != "00000000000000a1" {
				t.Errorf("second span's parent = %v, want the checkout's", got.Spans[1]["parent_span_id"])
			}
		})
	}
}

// TestUnknownOrder: an order without spans, or a prefix of one that has
// some, is a 404: a page saying so, or a JSON error.
func TestUnknownOrder(t *testing.T) {
	srv, store := server(t, traces.Limits{})
	store.Add(sample())
	for _, order := range []string{"cs_test_unknown", sampleOrder[:12]} {
		resp := get(t, srv.URL+traces.PagePath+order)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "No trace of this order") || !strings.Contains(string(body), order) {
			t.Errorf("%s: %d %.300s, want the 404 page naming it", order, resp.StatusCode, body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'sha256-") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q, want the pages' own", order, csp)
		}
		resp = get(t, srv.URL+traces.PagePath+order+"?format=json")
		body, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"error"`) {
			t.Errorf("%s as JSON: %d %s, want a 404 error", order, resp.StatusCode, body)
		}
	}
}

// TestOrderIndex lists the orders with spans, each linked to its page.
func TestOrderIndex(t *testing.T) {
	srv, store := server(t, traces.Limits{})
	store.Add(sample())
	body, _ := io.ReadAll(get(t, srv.URL+traces.PagePath).Body)
	for _, want := range []string{`href="/_local/trace/` + sampleOrder + `"`, `href="/_local/trace/` + sampleOrder + `x"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the index has no %s:\n%s", want, body)
		}
	}
}

// TestConcurrentExportsAndReads: the functions export while people and
// tests read (run with -race): every span arrives, none twice.
func TestConcurrentExportsAndReads(t *testing.T) {
	srv, store := server(t, traces.Limits{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				sp := sample()[0]
				sp.SpanID = fmt.Sprintf("%08x%08x", w+1, i+1)
				store.Add([]traces.Span{sp})
				get(t, srv.URL+traces.PagePath+sampleOrder+"?format=json")
				get(t, srv.URL+traces.PagePath)
			}
		})
	}
	wg.Wait()
	if got := store.Order(sampleOrder); len(got) != 1 || len(got[0].Spans) != 8*20 {
		t.Errorf("%d traces, want one of %d spans", len(got), 8*20)
	}
}

// The functions name an order in their spans by its name (oracle.ShortID);
// the result page's address gives the whole session id, which finds them.
func TestWholeSessionIDFindsTheNamedSpans(t *testing.T) {
	const whole = "cs_test_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6"
	srv, store := server(t, traces.Limits{})
	spans := sample()
	for i := range spans {
		spans[i].Attributes = map[string]any{traces.OrderAttribute: oracle.ShortID(whole)}
	}
	store.Add(spans[:3])
	for _, order := range []string{whole, oracle.ShortID(whole)} {
		resp := get(t, srv.URL+traces.PagePath+order+"?format=json")
		var got struct{ Spans []map[string]any }
		err := json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(got.Spans) != 3 {
			t.Errorf("%s: %d with %d spans (%v), want its 3", order, resp.StatusCode, len(got.Spans), err)
		}
	}
}
