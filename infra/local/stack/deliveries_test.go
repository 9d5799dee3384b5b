package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
)

// TestStripeDeliveryOrders runs the ways Stripe's webhook can meet the
// customer on the local stack: ten concurrent copies of the same event, and
// the customer landing on the result page before any webhook, the webhook
// arriving late. Each ends in one generation, one verdict and one email,
// with one webhook audit record per session.
func TestStripeDeliveryOrders(t *testing.T) {
	t.Parallel()
	o := options(t)
	watch := watchDispatch(&o)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	q := sqs.NewFromConfig(s.AWS)

	tests := []struct {
		name    string
		control string
		// landFirst: the customer's result page asks for the verdict before
		// any webhook; the held events are then delivered.
		landFirst bool
	}{
		{name: "ten concurrent duplicate webhooks", control: `{"duplicate":10,"concurrent":true}`},
		{name: "landing first, late webhook", control: `{"skip_delivery":true}`, landFirst: true},
	}
	var sessions []string
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			drained(ctx, t, q, s)
			callsBefore := len(modelCalls(t, s.GeminiURL))
			post(t, s.StripeURL+"/_control", tc.control)
			addr := fmt.Sprintf("delivery-%d-%d@example.com", i, time.Now().UnixNano())
			session := pay(t, s, "full", "Should I rent a stall at the night market?", addr)
			sessions = append(sessions, session)

			if tc.landFirst {
				// No webhook yet: the verdict API claims the paid session
				// from Stripe and the verdict arrives.
				if n := len(deliveriesFor(t, s.StripeURL, session)); n != 0 {
					t.Fatalf("%d webhook deliveries before landing, want none", n)
				}
				waitReady(t, s.APIURL, session)
				for _, id := range eventsFor(t, s.StripeURL, session) {
					var d struct{ Status int }
					if err := json.Unmarshal(post(t, s.StripeURL+"/_events/"+id+"/deliver", ""), &d); err != nil || d.Status != http.StatusOK {
						t.Errorf("late webhook %s answered %d, want 200 (%v)", id, d.Status, err)
					}
				}
			}
			drained(ctx, t, q, s)
			if !tc.landFirst {
				statuses := deliveriesFor(t, s.StripeURL, session)
				if len(statuses) != 10 || !slices.Contains(statuses, http.StatusOK) {
					t.Errorf("deliveries answered %v, want 10 with at least one 200 (the others 200 or 409)", statuses)
				}
				for _, st := range statuses {
					if st != http.StatusOK && st != http.StatusConflict {
						t.Errorf("a duplicate delivery answered %d", st)
					}
				}
			}

			if got := len(modelCalls(t, s.GeminiURL)) - callsBefore; got != 1 {
				t.Errorf("%d model calls, want 1", got)
			}
			if n := len(mailbox(t, s.APIURL, addr)); n != 1 {
				t.Errorf("%d emails, want 1", n)
			}
			order := orderItem(t, s, session)
			if a, ok := order["attempts"].(*ddbtypes.AttributeValueMemberN); !ok || a.Value != "1" {
				t.Errorf("attempts = %v, want one generation", order["attempts"])
			}
			// AUDIT_TRAIL VC-3: one webhook record per paid session however
			// many copies arrived; the landing claim is a result_page record.
			bySource := map[audit.Source]int{}
			for _, r := range testkit.AuditRecords(t, awsenv.S3(s.AWS), s.Resources.Ref("AuditBucket")) {
				if r.SessionID == session && r.Status == audit.StatusOK {
					bySource[r.Source]++
				}
			}
			wantLanding := 0
			if tc.landFirst {
				wantLanding = 1
			}
			if bySource[audit.SourceWebhook] != 1 || bySource[audit.SourceResultPage] != wantLanding {
				t.Errorf("OK audit records by source %v, want 1 webhook and %d result_page", bySource, wantLanding)
			}
		})
	}
	watch.verify(t, s, sessions)
	if alerts := s.Alerts(); len(alerts) != 0 {
		t.Errorf("alerts raised: %q", alerts)
	}
}

// pay buys a verdict as a customer does, without a browser: checkout, then
// the fake Stripe's pay page. It returns the session id.
func pay(t testing.TB, s *stack.Stack, tier, query, addr string) string {
	t.Helper()
	return payAt(t, checkout(t, s, tier, query), addr)
}

// checkout opens a checkout session as the order form does and returns
// its pay page: nothing is paid yet.
func checkout(t testing.TB, s *stack.Stack, tier, query string) string {
	t.Helper()
	used.query(query)
	body, _ := json.Marshal(map[string]string{"tier": tier, "query": query})
	req, _ := http.NewRequest("POST", s.APIURL+"/api/checkout", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", s.APIURL)
	status, out, _ := send(t, payClient, req)
	var opened struct{ URL string }
	if err := json.Unmarshal(out, &opened); status != 200 || err != nil {
		t.Fatalf("checkout: %d %s", status, out)
	}
	return opened.URL
}

// payAt pays on the fake Stripe's pay page payURL as addr, as the
// customer's form does: Stripe sends the webhook before it answers. It
// returns the session id.
func payAt(t testing.TB, payURL, addr string) string {
	t.Helper()
	used.address(addr)
	req, _ := http.NewRequest("POST", payURL, strings.NewReader(url.Values{"email": {addr}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	status, out, hdr := send(t, payClient, req)
	loc, err := url.Parse(hdr.Get("Location"))
	if status != http.StatusSeeOther || err != nil || loc.Query().Get("session_id") == "" {
		t.Fatalf("pay: %d %q %s", status, hdr.Get("Location"), out)
	}
	return loc.Query().Get("session_id")
}

// payClient follows no redirect: the pay page's answer names the session.
var payClient = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// waitReady polls the verdict API, as the result page does, until it
// serves the verdict.
func waitReady(t *testing.T, api, session string) {
	t.Helper()
	var status int
	var body []byte
	if !testkit.Eventually(60*time.Second, 100*time.Millisecond, func() bool {
		status, body, _ = send(t, http.DefaultClient, mustRequest(t, "GET", api+"/api/verdict?session_id="+session))
		if status == http.StatusOK && strings.Contains(string(body), `"status":"ready"`) {
			return true
		}
		if status != http.StatusAccepted {
			t.Fatalf("verdict API: %d %s, want 202 until 200 ready", status, body)
		}
		return false
	}) {
		t.Fatalf("verdict API: %d %s, want 202 until 200 ready", status, body)
	}
}

// eventsFor lists the ids of the fake Stripe's events about a session.
func eventsFor(t *testing.T, stripe, session string) []string {
	t.Helper()
	_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", stripe+"/_events"))
	var evs []struct {
		ID   string `json:"id"`
		Data struct {
			Object struct {
				ID string `json:"id"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &evs); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range evs {
		if ev.Data.Object.ID == session {
			ids = append(ids, ev.ID)
		}
	}
	if len(ids) == 0 {
		t.Fatalf("no events for %s", session)
	}
	return ids
}

// deliveriesFor lists the fake Stripe's webhook deliveries about a session.
func deliveriesFor(t *testing.T, stripe, session string) []int {
	t.Helper()
	_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", stripe+"/_deliveries"))
	var all []struct {
		SessionID string `json:"session_id"`
		Status    int    `json:"status"`
	}
	if err := json.Unmarshal(body, &all); err != nil {
		t.Fatal(err)
	}
	var statuses []int
	for _, d := range all {
		if d.SessionID == session {
			statuses = append(statuses, d.Status)
		}
	}
	return statuses
}

func post(t *testing.T, u, body string) []byte {
	t.Helper()
	req, err := http.NewRequest("POST", u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	status, out, _ := send(t, http.DefaultClient, req)
	if status/100 != 2 {
		t.Fatalf("POST %s: %d %s", u, status, out)
	}
	return out
}

func mustRequest(t testing.TB, method, u string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
