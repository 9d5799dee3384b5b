package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"42sisters.ai/oracle/infra/browsertest"
	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
)

// orderSpan is a span as /_local/trace/{session}?format=json gives it.
type orderSpan struct {
	TraceID      string         `json:"trace_id"`
	SpanID       string         `json:"span_id"`
	ParentSpanID string         `json:"parent_span_id"`
	Name         string         `json:"name"`
	Service      string         `json:"service"`
	Kind         string         `json:"kind"`
	Start        uint64         `json:"start_unix_nano"`
	End          uint64         `json:"end_unix_nano"`
	Attributes   map[string]any `json:"attributes"`
	Links        []struct {
		TraceID string `json:"trace_id"`
	} `json:"links"`
}

// hops are the services one paid order passes through, in order.
var hops = []string{"checkout", "webhook", "generator", "mailer"}

// TestAPaidOrdersTrace pays one order through the local stack and reads
// its spans from /_local/trace/<session>?format=json: one trace from the
// checkout's invocation, its only root, with every hop in it (checkout,
// webhook, generator, mailer), every span's parent received, and each
// queue's consumer the child of the producer's send span (the generate
// queue: webhook → generator; the mail queue: generator → mailer); the
// webhook's own trace (Stripe's request) linked from it. Then the waterfall of that order in
// headless Chromium: a bar per span inside the shared axis, no child
// before its parent; its screenshot is test-artifacts/e2e/trace.png.
func TestAPaidOrdersTrace(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.ScheduleOff = true // no health run touching the order
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ord := burstOrder{tier: "quick", query: "Should I open a bakery? (traced)", addr: fmt.Sprintf("traced-%d@example.com", time.Now().UnixNano())}
	used.address(ord.addr)
	used.query(ord.query)
	client := &http.Client{Timeout: 60 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if err := payOne(client, s.APIURL, &ord); err != nil {
		t.Fatal(err)
	}
	if mails := mailbox(t, s.APIURL, ord.addr); len(mails) != 1 {
		t.Fatalf("%d emails, want 1", len(mails))
	}

	// The mailer flushes its spans before it answers, which may be just
	// after the email shows.
	var spans []orderSpan
	testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool {
		spans = orderSpans(t, s.APIURL, ord.session)
		return !slices.ContainsFunc(hops, func(h string) bool {
			return !slices.ContainsFunc(spans, func(sp orderSpan) bool { return sp.Service == h })
		})
	})
	byID := map[string]orderSpan{}
	for _, sp := range spans {
		byID[sp.SpanID] = sp
	}
	// The order's trace starts at the checkout's invocation.
	var root orderSpan
	for _, sp := range spans {
		if sp.Service == "checkout" && sp.ParentSpanID == "" {
			root = sp
		}
	}
	if root.SpanID == "" {
		t.Fatalf("no root span of the checkout among %d spans", len(spans))
	}
	var order []orderSpan
	links := map[string]bool{}
	for _, sp := range spans {
		if sp.TraceID != root.TraceID {
			continue
		}
		order = append(order, sp)
		for _, l := range sp.Links {
			links[l.TraceID] = true
		}
		if _, ok := byID[sp.ParentSpanID]; sp.ParentSpanID != "" && !ok {
			t.Errorf("%s %q: its parent %s was not received", sp.Service, sp.Name, sp.ParentSpanID)
		}
		if sp.ParentSpanID == "" && sp.SpanID != root.SpanID {
			t.Errorf("%s %q is a second root of the order's trace", sp.Service, sp.Name)
		}
	}
	for _, h := range hops {
		if !slices.ContainsFunc(order, func(sp orderSpan) bool { return sp.Service == h }) {
			t.Errorf("the order's trace %s has no span of %s", root.TraceID, h)
		}
	}
	// Another trace naming the order is a request from outside (Stripe's
	// to the webhook, SES's events to the feedback function): its own
	// trace, and the webhook's linked from the order's.
	for _, sp := range spans {
		if sp.TraceID != root.TraceID && sp.Service == "webhook" && sp.ParentSpanID == "" && !links[sp.TraceID] {
			t.Errorf("the webhook's own trace %s is not linked from the order's", sp.TraceID)
		}
	}
	// Each hop continues the one before it: across the two queues, the
	// consumer's invocation is the child of the producer's send span.
	for i, h := range hops[1:] {
		prev := hops[i]
		var entries []string
		for _, sp := range order {
			p, ok := byID[sp.ParentSpanID]
			if !ok || sp.Service != h || p.Service == h {
				continue
			}
			entries = append(entries, fmt.Sprintf("%s %q (%s) under %s %q (%s)", sp.Service, sp.Name, sp.Kind, p.Service, p.Name, p.Kind))
			if p.Service != prev {
				t.Errorf("%s %q continues %s %q, want a span of %s", h, sp.Name, p.Service, p.Name, prev)
			}
			if h != "webhook" && (p.Kind != "producer" || sp.Kind != "consumer") {
				t.Errorf("%s %q (%s) under %s %q (%s): want the queue's consumer under its send (producer)", h, sp.Name, sp.Kind, p.Service, p.Name, p.Kind)
			}
		}
		if len(entries) == 0 {
			t.Errorf("no span of %s is the child of a span of %s", h, prev)
		}
		t.Logf("%s: %v", h, entries)
	}

	// The waterfall of this order, in Chromium.
	browser := browsertest.Start(t)
	tab := browsertest.Tab(t, browser, 60*time.Second)
	browsertest.Do(t, tab, "open the order's trace", chromedp.Navigate(s.APIURL+"/_local/trace/"+ord.session), chromedp.WaitVisible(chromedp.CSS("table.waterfall")))
	browsertest.Screenshot(t, tab, filepath.Join(filepath.Dir(provision.TemplatePath()), "test-artifacts", "e2e"), "trace")
	browsertest.Accessible(t, tab)
	type bar struct {
		ID, Parent, Name      string
		Left, Right, Width    float64
		TrackLeft, TrackRight float64
	}
	rows := browsertest.Eval[[]bar](t, tab, `[...document.querySelectorAll('table.waterfall tr[data-span-id]')].map(tr => {
  const b = tr.querySelector('.bar').getBoundingClientRect(), k = tr.querySelector('.track').getBoundingClientRect();
  return {ID: tr.dataset.spanId, Parent: tr.dataset.parentId, Name: tr.querySelector('summary').textContent,
    Left: b.left, Right: b.right, Width: b.width, TrackLeft: k.left, TrackRight: k.right};
})`)
	// Spans still arrive after the email (SES's events to the feedback
	// function, each trace's last export): the page shows those received
	// when it was read, at least the ones read above, at most those
	// received since.
	if later := orderSpans(t, s.APIURL, ord.session); len(rows) < len(spans) || len(rows) > len(later) {
		t.Errorf("%d rows in the waterfall, want one per span: %d to %d", len(rows), len(spans), len(later))
	}
	shown := map[string]bar{}
	for _, r := range rows {
		shown[r.ID] = r
	}
	for _, sp := range spans {
		r, ok := shown[sp.SpanID]
		switch {
		case !ok:
			t.Errorf("%s %q has no row", sp.Service, sp.Name)
		case r.Name != sp.Name:
			t.Errorf("row %s shows %q, want %q", sp.SpanID, r.Name, sp.Name)
		case r.Width < 2 || r.Left < r.TrackLeft-0.5 || r.Right > r.TrackRight+0.5:
			t.Errorf("%s: the bar [%.1f, %.1f] is not visible inside the axis [%.1f, %.1f]", sp.Name, r.Left, r.Right, r.TrackLeft, r.TrackRight)
		}
		if p, ok := shown[sp.ParentSpanID]; ok && r.Left < p.Left-0.5 {
			t.Errorf("%s starts at %.1f px, before its parent %s at %.1f", sp.Name, r.Left, p.Name, p.Left)
		}
	}
}

// orderSpans reads the order's spans from the local stack's trace page.
func orderSpans(t *testing.T, api, session string) []orderSpan {
	t.Helper()
	resp, body := getBody(t, api+"/_local/trace/"+session+"?format=json")
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var out struct{ Spans []orderSpan }
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the order's spans: %d %.300s (%v)", resp.StatusCode, body, err)
	}
	return out.Spans
}
