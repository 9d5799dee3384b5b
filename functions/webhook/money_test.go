package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stripe/stripe-go/v76"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/casefile"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
)

// moneyEvent is a Stripe event whose object is obj (a charge, a dispute,
// an early fraud warning), in test mode.
func (e *env) moneyEvent(id string, typ audit.Event, obj map[string]any) []byte {
	return e.moneyEventOf(id, typ, obj, nil)
}

// moneyEventOf is moneyEvent caused by an API request with idempotency
// key key (nil: the Dashboard's, without one).
func (e *env) moneyEventOf(id string, typ audit.Event, obj map[string]any, key *string) []byte {
	e.t.Helper()
	obj["livemode"] = false
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": stripe.APIVersion, "type": typ,
		"created": e.created, "livemode": false, "pending_webhooks": 1,
		"data":    map[string]any{"object": obj},
		"request": map[string]any{"id": "req_" + id, "idempotency_key": key},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// paidOrder claims a paid session through the webhook and returns its
// payment intent.
func (e *env) paidOrder(id string, tier oracle.Tier) (session, string) {
	e.t.Helper()
	s := paidSession(id, tier, "Open a bakery that only sells bread on Sundays")
	if resp := e.send(e.event("evt_paid_"+id, audit.EventCheckoutCompleted, s)); resp.StatusCode != http.StatusOK {
		e.t.Fatalf("paid event: %s", status(resp))
	}
	e.jobs("GenerateQueue")
	e.alertTexts()
	return s, s.object()["payment_intent"].(string)
}

func charge(pi string, amount, refunded int64) map[string]any {
	return map[string]any{
		"id": "ch_" + strings.TrimPrefix(pi, "pi_"), "object": "charge", "amount": amount, "amount_refunded": refunded,
		"currency": "cad", "payment_intent": pi, "refunded": refunded == amount, "status": "succeeded",
		"created": time.Now().Unix(), "metadata": map[string]any{},
	}
}

func (e *env) alertsOf(kind string) []string {
	var out []string
	for _, a := range e.alertTexts() {
		if strings.Contains(a, "| "+kind+" |") {
			out = append(out, a)
		}
	}
	return out
}

func TestARefundInTheDashboardRefundsTheOrderOnce(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	s, pi := e.paidOrder("cs_test_refundedInDashboard", oracle.TierFull)
	// Stripe sends the event again, and another one for the same refund.
	for i, id := range []string{"evt_refund", "evt_refund", "evt_refund_again"} {
		if resp := e.send(e.moneyEvent(id, audit.EventChargeRefunded, charge(pi, 500, 500))); resp.StatusCode != http.StatusOK {
			t.Fatalf("delivery %d: %s", i, status(resp))
		}
	}
	o, _ := e.order(s.ID)
	if o.Status != oracle.StatusRefunded || o.RefundedBy != "stripe" || o.RefundedAmount != 500 {
		t.Fatalf("order = %s by %q of %d", o.Status, o.RefundedBy, o.RefundedAmount)
	}
	mail := e.jobs("MailQueue")
	if len(mail) == 0 || mail[0].Kind != oracle.MailRefund || mail[0].SessionID != s.ID {
		t.Fatalf("mail jobs = %+v, want the refund notice", mail)
	}
	if got := e.alertsOf("REFUNDED"); len(got) != 1 || !strings.Contains(got[0], "500_CAD was refunded in Stripe's Dashboard") {
		t.Fatalf("REFUNDED alerts = %q", got)
	}
	refunds := 0
	for _, r := range e.auditRecords() {
		if r.Event == audit.EventChargeRefunded {
			refunds++
			if r.Status != audit.StatusOK || r.OrderStatus != string(oracle.StatusRefunded) || r.SessionID != s.ID || r.AmountRefunded != 500 {
				t.Errorf("refund record = %+v", r)
			}
		}
	}
	if refunds != 1 {
		t.Fatalf("%d refund records, want 1", refunds)
	}
}

// TestTheOperatorsOwnRefundIsNotAlerted: the ops function's refund
// reaches the webhook before the action records it; its idempotency key
// tells it from a refund made in the Dashboard.
func TestTheOperatorsOwnRefundIsNotAlerted(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	s, pi := e.paidOrder("cs_test_refundedByOps", oracle.TierQuick)
	key := stripex.RefundKey(s.ID)
	if resp := e.send(e.moneyEventOf("evt_ops_refund", audit.EventChargeRefunded, charge(pi, 100, 100), &key)); resp.StatusCode != http.StatusOK {
		t.Fatal(status(resp))
	}
	if o, _ := e.order(s.ID); o.Status != oracle.StatusRefunded || o.RefundedBy != store.RefundedByOperator {
		t.Fatalf("order = %s by %q", o.Status, o.RefundedBy)
	}
	if got := e.alertsOf("REFUNDED"); len(got) != 0 {
		t.Fatalf("the operator's own refund was alerted: %q", got)
	}
}

func TestAPartialRefundIsAlertedAndLeavesTheOrder(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	s, pi := e.paidOrder("cs_test_partlyRefunded", oracle.TierStrategy)
	if resp := e.send(e.moneyEvent("evt_partial", audit.EventChargeRefunded, charge(pi, 2500, 1000))); resp.StatusCode != http.StatusOK {
		t.Fatal(status(resp))
	}
	if o, _ := e.order(s.ID); o.Status != oracle.StatusPaid || o.RefundID != "" {
		t.Fatalf("a partial refund changed the order: %s %q", o.Status, o.RefundID)
	}
	if got := e.alertsOf("PARTIAL_REFUND"); len(got) != 1 || !strings.Contains(got[0], "1000_CAD of 2500_CAD") {
		t.Fatalf("PARTIAL_REFUND alerts = %q", got)
	}
	if jobs := e.jobs("MailQueue"); len(jobs) != 0 {
		t.Fatalf("a partial refund owed a notice: %+v", jobs)
	}
	// The figures' revenue reads what was refunded from the record.
	var refunded []int64
	for _, r := range e.auditRecords() {
		if r.Event == audit.EventChargeRefunded {
			refunded = append(refunded, r.AmountRefunded)
		}
	}
	if len(refunded) != 1 || refunded[0] != 1000 {
		t.Fatalf("refund records carry %v refunded, want one of 1000", refunded)
	}
}

// TestADisputeWritesItsEvidenceOnce: ten deliveries of one dispute at once
// write one evidence bundle and raise one CRITICAL alert that names it.
func TestADisputeWritesItsEvidenceOnce(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	s, pi := e.paidOrder("cs_test_disputedOrder", oracle.TierQuick)
	due := time.Date(2026, 12, 8, 23, 59, 59, 0, time.UTC)
	body := e.moneyEvent("evt_dispute", audit.EventDisputeCreated, map[string]any{
		"id": "dp_1Test", "object": "dispute", "amount": 100, "currency": "cad", "charge": "ch_x", "payment_intent": pi,
		"reason": "fraudulent", "status": "needs_response", "created": time.Now().Unix(),
		"evidence_details": map[string]any{"due_by": due.Unix(), "has_evidence": false, "past_due": false, "submission_count": 0},
	})
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := e.h.Handle(context.Background(), request(body, sign(body, testSecret, time.Now())))
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("delivery: %v %v", resp.StatusCode, err)
			}
		}()
	}
	wg.Wait()
	if o, _ := e.order(s.ID); o.DisputeID != "dp_1Test" || o.Status != oracle.StatusPaid {
		t.Fatalf("order = %s disputed %q", o.Status, o.DisputeID)
	}
	got := e.alertsOf("DISPUTE_OPENED")
	if len(got) != 1 || !strings.Contains(got[0], "evidence due by 2026-12-08T23:59:59Z") || !strings.Contains(got[0], "s3://"+e.f.Ref("EvidenceBucket")+"/disputes/") {
		t.Fatalf("DISPUTE_OPENED alerts = %q", got)
	}
	list, err := e.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(e.f.Ref("EvidenceBucket"))})
	if err != nil || len(list.Contents) != 1 {
		t.Fatalf("evidence objects: %v %v", list, err)
	}
	obj, err := e.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(e.f.Ref("EvidenceBucket")), Key: list.Contents[0].Key})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(obj.Body)
	var ev casefile.Evidence
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Dispute.ID != "dp_1Test" || !ev.Dispute.DueBy.Equal(due) || ev.Case.SessionID != s.ID || ev.Query == "" ||
		len(ev.Case.Timeline) == 0 || ev.Case.Timeline[0].Event != audit.EventCheckoutCompleted {
		t.Fatalf("evidence = %s", raw)
	}
	if strings.Contains(string(raw), "customer@example.com") {
		t.Fatal("the evidence holds the customer's address")
	}
}

func TestAnEarlyFraudWarningSuggestsTheRefund(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	s, pi := e.paidOrder("cs_test_fraudWarned", oracle.TierQuick)
	body := e.moneyEvent("evt_efw", audit.EventEarlyFraudWarned, map[string]any{
		"id": "issfr_1Test", "object": "radar.early_fraud_warning", "actionable": true, "charge": "ch_x",
		"payment_intent": pi, "fraud_type": "made_with_stolen_card", "created": time.Now().Unix(),
	})
	if resp := e.send(body); resp.StatusCode != http.StatusOK {
		t.Fatal(status(resp))
	}
	got := e.alertsOf("EARLY_FRAUD_WARNING")
	if len(got) != 1 || !strings.Contains(got[0], "made_with_stolen_card") || !strings.Contains(got[0], "make ops ACTION=refund SESSION="+oracle.ShortID(s.ID)) {
		t.Fatalf("EARLY_FRAUD_WARNING alerts = %q", got)
	}
	if o, _ := e.order(s.ID); o.Status != oracle.StatusPaid {
		t.Fatalf("a warning changed the order: %s", o.Status)
	}
}

func TestAMoneyEventForAPaymentWithoutAnOrderIsAlerted(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	if resp := e.send(e.moneyEvent("evt_foreign", audit.EventChargeRefunded, charge("pi_not_ours", 900, 900))); resp.StatusCode != http.StatusOK {
		t.Fatal(status(resp))
	}
	if got := e.alertsOf("CHARGE_UNKNOWN"); len(got) != 1 || !strings.Contains(got[0], `"pi_not_ours"`) {
		t.Fatalf("CHARGE_UNKNOWN alerts = %q", got)
	}
	if recs := e.auditRecords(); len(recs) != 0 {
		t.Fatalf("records for a payment without an order: %+v", recs)
	}
}

// A refund of an order the store never saw paid is not recorded as one.
func TestARefundNeedsAPaidOrder(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	s := paidSession("cs_test_refundUnpaid", oracle.TierQuick, "q")
	s.Paid = false
	if resp := e.send(e.event("evt_unpaid", audit.EventCheckoutCompleted, s)); resp.StatusCode != http.StatusOK {
		t.Fatal(status(resp))
	}
	pi := s.object()["payment_intent"].(string)
	if resp := e.send(e.moneyEvent("evt_refund_unpaid", audit.EventChargeRefunded, charge(pi, 100, 100))); resp.StatusCode != http.StatusOK {
		t.Fatal(status(resp))
	}
	if o, _ := e.order(s.ID); o.Status != oracle.StatusAwaitingPayment {
		t.Fatalf("order = %s", o.Status)
	}
	if got := e.alertsOf("CHARGE_UNKNOWN"); len(got) != 1 {
		t.Fatalf("CHARGE_UNKNOWN alerts = %q", got)
	}
}
