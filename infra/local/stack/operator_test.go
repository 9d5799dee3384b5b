package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/oracle"
)

// opsAnswer is the ops function's answer, as `make ops` reads it.
type opsAnswer struct {
	OK      bool            `json:"ok"`
	Changed bool            `json:"changed"`
	Message string          `json:"message"`
	Text    string          `json:"text"`
	Data    json.RawMessage `json:"data"`
	raw     []byte
}

// ops sends one request to the stack's ops function, as `make ops` does
// (stack.Invoke, beside the running stack: its moto, its fake Stripe).
func ops(ctx context.Context, t *testing.T, o stack.Options, req map[string]any) opsAnswer {
	t.Helper()
	if _, ok := req["authorised_by"]; !ok && req["action"] != "report" && req["action"] != "list" && req["action"] != "show" {
		req["authorised_by"], req["reason"] = "ana", "the end-to-end suite"
	}
	payload, _ := json.Marshal(req)
	out, err := stack.Invoke(ctx, o, "OpsFunction", payload)
	if err != nil {
		t.Fatalf("ops %s: %v", payload, err)
	}
	a := opsAnswer{raw: out}
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("ops %s answered %s: %v", payload, out, err)
	}
	return a
}

// waitStatus waits until the session's order is in state want.
func waitStatus(t *testing.T, s *stack.Stack, session string, want oracle.Status) {
	t.Helper()
	got := ""
	if !testkit.Eventually(60*time.Second, 100*time.Millisecond, func() bool {
		got = stringAttr(orderItem(t, s, session), "status")
		return got == string(want)
	}) {
		t.Fatalf("order %s is %s, want %s", session, got, want)
	}
}

// count counts the subjects that are such.
func count(subjects []string, such func(string) bool) int {
	n := 0
	for _, s := range subjects {
		if such(s) {
			n++
		}
	}
	return n
}

// isVerdict tells a verdict email, "Your Oracle Verdict", from the notices
// about one, whose subjects say more.
func isVerdict(subject string) bool { return strings.HasSuffix(subject, " Verdict") }

// isRefund tells the refund notice.
func isRefund(subject string) bool { return strings.Contains(subject, "has been refunded") }

// refundEvents counts the fake Stripe's charge.refunded events of a
// payment intent: one per refund it made.
func refundEvents(t *testing.T, stripe, pi string) int {
	t.Helper()
	_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", stripe+"/_events"))
	var evs []struct {
		Type string `json:"type"`
		Data struct {
			Object struct {
				PaymentIntent string `json:"payment_intent"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &evs); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Type == "charge.refunded" && e.Data.Object.PaymentIntent == pi {
			n++
		}
	}
	return n
}

// stripeForm posts a form to the fake Stripe with the stack's key.
func stripeForm(t *testing.T, s *stack.Stack, path string, form url.Values) []byte {
	t.Helper()
	req, _ := http.NewRequest("POST", s.StripeURL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer "+stack.FakeStripeKey)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	status, body, _ := send(t, http.DefaultClient, req)
	if status != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, status, body)
	}
	return body
}

// TestOperatorActionsEndToEnd drives the operator's actions and Stripe's
// money events through the local stack, as `make ops` does on `make run`'s:
// each action once does what it says, one verdict and one email, and the
// same request again changes nothing more. The report that ends it reads
// the records the suite left and prints every figure.
func TestOperatorActionsEndToEnd(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.ScheduleOff = true
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	q := sqs.NewFromConfig(s.AWS)
	addr := func(name string) string { return fmt.Sprintf("ops-%s-%d@example.com", name, time.Now().UnixNano()) }

	t.Run("quarantine, deliver cleaned: one email", func(t *testing.T) {
		// Six leaks in a full verdict: more than the filter replaces alone.
		post(t, s.GeminiURL+"/_control", `{"leak_terms":["TMM"],"calls":2}`) // both writings
		t.Cleanup(func() { post(t, s.GeminiURL+"/_control", `{}`) })         // not into the next subtest
		to := addr("quarantine")
		session := pay(t, s, "full", "Should I open a second bakery across town?", to)
		waitStatus(t, s, session, oracle.StatusQuarantined)
		drained(ctx, t, q, s)
		req := map[string]any{"action": "deliver", "session": oracle.ShortID(session), "mode": "cleaned"}
		if a := ops(ctx, t, o, req); !a.OK || !a.Changed {
			t.Fatalf("deliver cleaned: %s", a.raw)
		}
		waitReady(t, s.APIURL, session)
		drained(ctx, t, q, s)
		if a := ops(ctx, t, o, req); !a.OK || a.Changed {
			t.Fatalf("deliver cleaned again: %s", a.raw)
		}
		drained(ctx, t, q, s)
		mails := mailbox(t, s.APIURL, to)
		verdicts := 0
		for _, m := range mails {
			if isVerdict(m.Subject) {
				verdicts++
				if strings.Contains(m.Text+m.HTML, "TMM") || !strings.Contains(m.Text, "our analysis") {
					t.Errorf("the delivered verdict is not the cleaned one:\n%s", m.Text)
				}
			}
		}
		if verdicts != 1 {
			t.Fatalf("%d verdict emails of %d, want 1", verdicts, len(mails))
		}
	})

	t.Run("drop, rerun: one verdict, one email", func(t *testing.T) {
		// A session paid without a question, as a mis-built Payment Link
		// makes it: the order is DROPPED and the customer asked to reply.
		to := addr("drop")
		session := payRaw(t, s, 500, url.Values{"metadata[tier]": {"full"}}, to)
		waitStatus(t, s, session, oracle.StatusDropped)
		req := map[string]any{"action": "rerun", "session": session, "tier": "full", "query": "Should I sell bread only on Sundays?"}
		if a := ops(ctx, t, o, req); !a.OK || !a.Changed {
			t.Fatalf("rerun: %s", a.raw)
		}
		waitReady(t, s.APIURL, session)
		drained(ctx, t, q, s)
		if a := ops(ctx, t, o, req); !a.OK || a.Changed {
			t.Fatalf("rerun again: %s", a.raw)
		}
		drained(ctx, t, q, s)
		if n := count(mailboxNow(t, s.APIURL, to), isVerdict); n != 1 {
			t.Fatalf("%d verdict emails, want 1: %q", n, mailboxNow(t, s.APIURL, to))
		}
		if item := orderItem(t, s, session); stringAttr(item, "verdict_hash") == "" {
			t.Fatal("no verdict stored")
		}
	})

	t.Run("fail, refund: one refund, one email", func(t *testing.T) {
		// The model refuses the request: the order FAILED at once.
		post(t, s.GeminiURL+"/_control", `{"status":400}`)
		t.Cleanup(func() { post(t, s.GeminiURL+"/_control", `{}`) })
		to := addr("refund")
		session := pay(t, s, "quick", "Should I rent a food truck for the summer?", to)
		waitStatus(t, s, session, oracle.StatusFailed)
		drained(ctx, t, q, s)
		pi := stringAttr(orderItem(t, s, session), "payment_intent")
		req := map[string]any{"action": "refund", "session": session}
		if a := ops(ctx, t, o, req); !a.OK || !a.Changed {
			t.Fatalf("refund: %s", a.raw)
		}
		waitStatus(t, s, session, oracle.StatusRefunded)
		drained(ctx, t, q, s)
		if a := ops(ctx, t, o, req); !a.OK || a.Changed {
			t.Fatalf("refund again: %s", a.raw)
		}
		drained(ctx, t, q, s)
		if n := refundEvents(t, s.StripeURL, pi); n != 1 {
			t.Fatalf("the fake Stripe made %d refunds, want 1", n)
		}
		if item := orderItem(t, s, session); stringAttr(item, "refunded_by") != "operator" {
			t.Errorf("refunded by %q, want operator", stringAttr(item, "refunded_by"))
		}
		if n := count(mailboxNow(t, s.APIURL, to), isRefund); n != 1 {
			t.Fatalf("%d refund emails, want 1: %q", n, mailboxNow(t, s.APIURL, to))
		}
		_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", s.APIURL+"/api/verdict?session_id="+session))
		if !strings.Contains(string(body), `"status":"refunded"`) {
			t.Errorf("the verdict API says %s, want refunded", body)
		}
		if got := alertsOf(s, alert.Refunded); len(got) != 0 {
			t.Errorf("the operator's own refund was alerted: %q", got)
		}
	})

	t.Run("a refund made in the Dashboard", func(t *testing.T) {
		to := addr("dashboard")
		session := pay(t, s, "quick", "Should I teach weekend pottery classes?", to)
		waitReady(t, s.APIURL, session)
		drained(ctx, t, q, s)
		pi := stringAttr(orderItem(t, s, session), "payment_intent")
		stripeForm(t, s, "/v1/refunds", url.Values{"payment_intent": {pi}})
		waitStatus(t, s, session, oracle.StatusRefunded)
		drained(ctx, t, q, s)
		if got := alertsOf(s, alert.Refunded); len(got) != 1 || !strings.Contains(got[0], "Dashboard") {
			t.Fatalf("REFUNDED alerts %q, want one", got)
		}
		if n := count(mailboxNow(t, s.APIURL, to), isRefund); n != 1 {
			t.Fatalf("%d refund emails, want 1", n)
		}
		if item := orderItem(t, s, session); stringAttr(item, "refunded_by") != "stripe" {
			t.Errorf("refunded by %q, want stripe", stringAttr(item, "refunded_by"))
		}
	})

	t.Run("a dispute and an early fraud warning", func(t *testing.T) {
		session := pay(t, s, "quick", "Should I open a repair cafe?", addr("dispute"))
		waitReady(t, s.APIURL, session)
		pi := stringAttr(orderItem(t, s, session), "payment_intent")
		stripeForm(t, s, "/_disputes", url.Values{"payment_intent": {pi}})
		var got []string
		if !testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool {
			got = alertsOf(s, alert.DisputeOpened)
			return len(got) > 0
		}) || len(got) != 1 || !strings.Contains(got[0], "CRITICAL") {
			t.Fatalf("DISPUTE_OPENED alerts %q, want one CRITICAL", got)
		}
		if item := orderItem(t, s, session); stringAttr(item, "dispute_id") == "" {
			t.Error("the order does not name its dispute")
		}
		bundles, err := s3.NewFromConfig(s.AWS, func(o *s3.Options) { o.UsePathStyle = true }).ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket: aws.String(s.Resources.Ref("EvidenceBucket")), Prefix: aws.String("disputes/" + session + "/")})
		if err != nil || len(bundles.Contents) != 1 {
			t.Fatalf("evidence bundles %v (%v), want one", bundles, err)
		}

		warned := pay(t, s, "quick", "Should I sell handmade candles online?", addr("warned"))
		waitReady(t, s.APIURL, warned)
		stripeForm(t, s, "/_early_fraud_warnings", url.Values{"payment_intent": {stringAttr(orderItem(t, s, warned), "payment_intent")}})
		if !testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool {
			got = alertsOf(s, alert.EarlyFraudWarning)
			return len(got) > 0
		}) || len(got) != 1 || !strings.Contains(got[0], "ACTION=refund") {
			t.Fatalf("EARLY_FRAUD_WARNING alerts %q, want one suggesting the refund", got)
		}
		drained(ctx, t, q, s)
	})

	t.Run("report prints every figure", func(t *testing.T) {
		a := ops(ctx, t, o, map[string]any{"action": "report"})
		if !a.OK {
			t.Fatalf("report: %s", a.raw)
		}
		var f struct {
			Paid struct {
				Sessions int64 `json:"sessions"`
			} `json:"paid_sessions"`
			// Against the fake Stripe's own list, over HTTP.
			AgainstStripe *struct {
				StripePaid     int64    `json:"stripe_paid_sessions"`
				MissingFromLog []string `json:"missing_from_log"`
				NotInStripe    []string `json:"not_in_stripe"`
				Error          string   `json:"error"`
			} `json:"against_stripe"`
			CustomerWait struct {
				ToVerdict struct {
					Records int64 `json:"records"`
				} `json:"to_verdict_stored"`
			} `json:"customer_wait"`
			Revenue struct {
				TestMode []struct {
					Sessions         int64 `json:"sessions"`
					RefundedSessions int64 `json:"refunded_sessions"`
				} `json:"test_mode_totals"`
			} `json:"revenue"`
		}
		if err := json.Unmarshal(a.Data, &f); err != nil {
			t.Fatal(err)
		}
		// Six sessions paid above; the dispute's is not refunded.
		if f.Paid.Sessions != 6 || len(f.Revenue.TestMode) != 1 || f.Revenue.TestMode[0].Sessions != 6 || f.Revenue.TestMode[0].RefundedSessions != 2 {
			t.Errorf("figures %s", a.Data)
		}
		if c := f.AgainstStripe; c == nil || c.Error != "" || c.StripePaid != 6 || len(c.MissingFromLog) != 0 || len(c.NotInStripe) != 0 {
			t.Errorf("the paid sessions against Stripe's list: %s", a.Data)
		}
		if f.CustomerWait.ToVerdict.Records == 0 {
			t.Errorf("no customer's wait to the verdict: %s", a.Data)
		}
		// As `make ops ACTION=report` prints it.
		cmd := exec.Command("python3", filepath.Join(filepath.Dir(provision.TemplatePath()), "infra/opsverb/ops.py"), "answer")
		cmd.Stdin = bytes.NewReader(a.raw)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ops.py answer: %v\n%s", err, out)
		}
		for _, figure := range []string{"paid sessions", "double-processed sessions", "paid sessions against Stripe", "customer's wait, payment to verdict stored", "webhook latency", "cache-hit ratio", "error-detail coverage",
			"email failure rate", "crosscheck rejection rate", "significant divergence rate", "top error patterns", "test mode (no money moved)", "revenue (live mode"} {
			if !strings.Contains(string(out), figure) {
				t.Errorf("the report lacks %q:\n%s", figure, out)
			}
		}
		t.Logf("make ops ACTION=report:\n%s", out)
	})
}
