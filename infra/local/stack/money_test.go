package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/oracle"
)

// TestAMisPricedSessionIsHeld pays, through the fake Stripe, a C$1 session
// made with tier=strategy, as a mis-set Payment Link or a tampered
// integration would make it: the order is HELD with one CRITICAL
// AMOUNT_MISMATCH alert, no verdict is generated, the page says "under
// review" and the customer gets the review notice, not a verdict.
func TestAMisPricedSessionIsHeld(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.ScheduleOff = true
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	addr := fmt.Sprintf("mispriced-%d@example.com", time.Now().UnixNano())
	session := payRaw(t, s, 100, url.Values{"metadata[tier]": {"strategy"}, "metadata[q0]": {"Should I open a board game cafe?"}, "metadata[qn]": {"1"}}, addr)

	if !testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool { return len(alertsOf(s, alert.AmountMismatch)) > 0 }) {
		t.Fatalf("no AMOUNT_MISMATCH alert; alerts %q", s.Alerts())
	}
	if got := alertsOf(s, alert.AmountMismatch); len(got) != 1 || !strings.HasPrefix(got[0], "[ORACLE-ALERT] CRITICAL ") || !strings.Contains(got[0], "priced at 100_CAD for the strategy tier") {
		t.Errorf("AMOUNT_MISMATCH alerts %q, want one CRITICAL", got)
	}
	// The customer is told it is under review, by email and on the page.
	// (moto's mailbox is shared by every stack of the test run.)
	var subjects []string
	if !testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool {
		subjects = mailboxNow(t, s.APIURL, addr)
		return len(subjects) > 0
	}) {
		t.Fatalf("no notice reached %s", addr)
	}
	if len(subjects) != 1 || !strings.Contains(subjects[0], "order is being checked") {
		t.Errorf("emails to the customer %q, want the payment review notice alone", subjects)
	}
	checker := apiChecker(t, s)
	status, body, _ := send(t, checker.Client(), mustRequest(t, "GET", s.APIURL+"/api/verdict?session_id="+session))
	if status != http.StatusAccepted || !strings.Contains(string(body), `"under_review"`) {
		t.Errorf("verdict API: %d %s, want 202 under_review", status, body)
	}
	checkedAll(t, checker, "GET /api/verdict 202")
	item := orderItem(t, s, session)
	if stringAttr(item, "status") != string(oracle.StatusHeld) || stringAttr(item, "failure") != oracle.HoldAmountMismatch {
		t.Errorf("order %v, want HELD for %s", item, oracle.HoldAmountMismatch)
	}
	if _, ok := item["verdict"]; ok {
		t.Error("a verdict was generated for a mis-priced payment")
	}
}

// payRaw creates a Checkout Session in the fake Stripe as an integration
// other than ours would (a Payment Link, a tampered client): amount cents
// in CAD with the metadata given, then pays it as addr. It returns the
// session id.
func payRaw(t *testing.T, s *stack.Stack, amount int, metadata url.Values, addr string) string {
	t.Helper()
	used.address(addr)
	form := url.Values{
		"mode":                                   {"payment"},
		"success_url":                            {s.APIURL + "/oracle/result?session_id={CHECKOUT_SESSION_ID}"},
		"line_items[0][price_data][currency]":    {"cad"},
		"line_items[0][price_data][unit_amount]": {fmt.Sprint(amount)},
		"line_items[0][price_data][product_data][name]": {"Oracle verdict"},
		"line_items[0][quantity]":                       {"1"},
	}
	for k, v := range metadata {
		form[k] = v
	}
	var created struct{ ID, URL string }
	if err := json.Unmarshal(stripeForm(t, s, "/v1/checkout/sessions", form), &created); err != nil {
		t.Fatalf("create the session: %v", err)
	}
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("POST", created.URL, strings.NewReader(url.Values{"email": {addr}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if status, body, _ := send(t, client, req); status != http.StatusSeeOther {
		t.Fatalf("pay: %d %s", status, body)
	}
	return created.ID
}
