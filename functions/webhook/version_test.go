package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// inVersion is the event body with its api_version set to v, or removed
// when v is nil.
func inVersion(t testing.TB, body []byte, v *string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if v == nil {
		delete(m, "api_version")
	} else {
		m["api_version"] = *v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEventsOfAnotherAPIVersionAreRefused: every event type the webhook
// takes is read only in the API version stripe-go v76 pins. In an older
// one, a newer one or none it is answered 409, and nothing is read or
// recorded: no order, no event id, no audit record, no job, no change to
// the paid order the money events are about. Each wrong version is one
// alert, however many of its events came. In the pinned version the same
// events are read.
func TestEventsOfAnotherAPIVersionAreRefused(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	paid, pi := e.paidOrder("cs_test_versionPaidOrder", oracle.TierQuick)
	records := len(e.auditRecords())
	e.jobs("MailQueue")

	unpaid := func(id string) session {
		s := paidSession(id, oracle.TierQuick, "Should I open a bakery?")
		s.Paid = false
		return s
	}
	// The event types taken, each with an object that, read, changes
	// something: a new order, or the paid order's refund or dispute.
	kinds := []struct {
		typ  audit.Event
		body func(id string) []byte
	}{
		{audit.EventCheckoutCompleted, func(id string) []byte {
			return e.event(id, audit.EventCheckoutCompleted, paidSession("cs_test_"+id, oracle.TierQuick, "Should I open a bakery?"))
		}},
		{audit.EventAsyncSucceeded, func(id string) []byte {
			return e.event(id, audit.EventAsyncSucceeded, paidSession("cs_test_"+id, oracle.TierFull, "Should I open a bakery?"))
		}},
		{audit.EventAsyncFailed, func(id string) []byte { return e.event(id, audit.EventAsyncFailed, unpaid("cs_test_"+id)) }},
		{audit.EventChargeRefunded, func(id string) []byte {
			return e.moneyEvent(id, audit.EventChargeRefunded, charge(pi, 100, 100))
		}},
		{audit.EventDisputeCreated, func(id string) []byte {
			return e.moneyEvent(id, audit.EventDisputeCreated, map[string]any{
				"id": "dp_" + id, "object": "dispute", "amount": 100, "currency": "cad", "charge": "ch_x", "payment_intent": pi,
				"reason": "fraudulent", "status": "needs_response", "created": time.Now().Unix(),
				"evidence_details": map[string]any{"due_by": time.Now().Add(10 * 24 * time.Hour).Unix(), "has_evidence": false, "past_due": false, "submission_count": 0},
			})
		}},
		{audit.EventEarlyFraudWarned, func(id string) []byte {
			return e.moneyEvent(id, audit.EventEarlyFraudWarned, map[string]any{
				"id": "issfr_" + id, "object": "radar.early_fraud_warning", "actionable": true, "charge": "ch_x",
				"payment_intent": pi, "fraud_type": "made_with_stolen_card", "created": time.Now().Unix(),
			})
		}},
	}
	older, newer := "2022-11-15", "2024-09-30.acacia"
	versions := []struct {
		name  string
		v     *string
		alert string // the version as the alert names it
	}{
		{"older", &older, older},
		{"newer", &newer, newer},
		// Stripe always sends one; an event without it has no known shape.
		{"missing", nil, "none"},
	}
	for _, v := range versions {
		for i, k := range kinds {
			t.Run(v.name+"/"+string(k.typ), func(t *testing.T) {
				id := "evt" + v.name + strings.Repeat("x", i)
				resp := e.send(inVersion(t, k.body(id), v.v))
				if resp.StatusCode != http.StatusConflict || !strings.Contains(resp.Body, stripex.APIVersion) {
					t.Fatalf("got %s, want 409 naming %s", status(resp), stripex.APIVersion)
				}
				if e.eventRecorded(id) {
					t.Fatal("the refused event's id was recorded")
				}
				if _, ok := e.order("cs_test_" + id); ok {
					t.Fatal("a refused event made an order")
				}
			})
		}
	}
	if o, _ := e.order(paid.ID); o.Status != oracle.StatusPaid || o.DisputeID != "" {
		t.Fatalf("refused money events changed the order: %s, dispute %q", o.Status, o.DisputeID)
	}
	if n := len(e.auditRecords()); n != records {
		t.Fatalf("%d audit records written for refused events", n-records)
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 0 {
		t.Fatalf("refused events enqueued %d generate jobs", len(jobs))
	}
	if jobs := e.jobs("MailQueue"); len(jobs) != 0 {
		t.Fatalf("refused events enqueued %d mail jobs", len(jobs))
	}
	alerts := e.alertTexts()
	if len(alerts) != len(versions) {
		t.Fatalf("%d events in %d wrong versions raised %d alerts, want one each: %q", len(versions)*len(kinds), len(versions), len(alerts), alerts)
	}
	for _, v := range versions {
		n := 0
		for _, a := range alerts {
			if strings.Contains(a, "] ERROR |") && strings.Contains(a, "| WEBHOOK_API_VERSION |") &&
				strings.Contains(a, "API version "+v.alert+";") && strings.Contains(a, "api_version "+stripex.APIVersion) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d alerts for the %s version, want 1: %q", n, v.name, alerts)
		}
	}

	// The same events in the pinned version are read.
	for i, k := range kinds {
		id := "evtpinned" + strings.Repeat("x", i)
		if resp := e.send(k.body(id)); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s in %s: %s", k.typ, stripex.APIVersion, status(resp))
		}
		// A verdict's session event is recorded by its order (markUnread);
		// the others in the Ledger.
		if _, ok := e.order("cs_test_" + id); !ok && !e.eventRecorded(id) {
			t.Fatalf("%s in %s was not recorded", k.typ, stripex.APIVersion)
		}
	}
	if _, ok := e.order("cs_test_evtpinned"); !ok {
		t.Fatal("a paid session in the pinned version made no order")
	}
	if o, _ := e.order(paid.ID); o.Status != oracle.StatusRefunded {
		t.Fatalf("a refund in the pinned version was not read: %s", o.Status)
	}
	if got := e.alertsOf("WEBHOOK_API_VERSION"); len(got) != 0 {
		t.Fatalf("events in the pinned version alerted: %q", got)
	}
}

// TestAFloodOfOneVersionIsOneAlert: a burst of events in a wrong version,
// concurrent as Stripe's retries are, raises one alert, kept by the Ledger
// across containers for a day; the live endpoint's is its own (CRITICAL),
// and a day later the same version is alerted again.
func TestAFloodOfOneVersionIsOneAlert(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret, Live: liveSecret})
	newer := "2024-09-30.acacia"
	flood := func(prefix string, live bool) {
		t.Helper()
		s, secret := paidSession("cs_test_flood", oracle.TierQuick, "q"), testSecret
		if live {
			s.ID, s.Livemode, secret = "cs_live_flood", true, liveSecret
		}
		var reqs []httpapi.Request
		for i := range 20 {
			body := inVersion(t, e.event(prefix+strings.Repeat("x", i), audit.EventCheckoutCompleted, s), &newer)
			reqs = append(reqs, request(body, sign(body, secret, time.Now())))
		}
		var wg sync.WaitGroup
		for _, r := range reqs {
			wg.Go(func() {
				if resp, err := e.h.Handle(context.Background(), r); err != nil || resp.StatusCode != http.StatusConflict {
					t.Errorf("got %d %v, want 409", resp.StatusCode, err)
				}
			})
		}
		wg.Wait()
	}
	alerted := func(when, severity string, want int) {
		t.Helper()
		got := e.alertsOf("WEBHOOK_API_VERSION")
		if len(got) != want {
			t.Fatalf("%s: alerts = %q, want %d", when, got, want)
		}
		for _, a := range got {
			if !strings.Contains(a, "] "+severity+" |") || !strings.Contains(a, "API version "+newer+";") {
				t.Fatalf("%s: alert = %q, want %s naming %s", when, a, severity, newer)
			}
		}
	}
	flood("evt_test_a", false)
	alerted("twenty test-mode events", "ERROR", 1)
	// Past the alerter's own 60 s window, the version is still known.
	e.clock.Add(2 * time.Minute)
	flood("evt_test_b", false)
	alerted("twenty more, minutes later", "ERROR", 0)
	flood("evt_live_a", true)
	alerted("the live endpoint's", "CRITICAL", 1)
	e.clock.Add(versionAlertEvery)
	flood("evt_test_c", false)
	alerted("a day later", "ERROR", 1)
}

// TestTheSignatureIsCheckedBeforeTheVersion: an event that is not
// correctly signed is refused with 400 as any other, whatever its version:
// no alert about the version (anyone could send one), nothing recorded.
func TestTheSignatureIsCheckedBeforeTheVersion(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	newer := "2024-09-30.acacia"
	s := paidSession("cs_test_unsignedVersion", oracle.TierQuick, "q")
	for _, v := range []*string{&newer, nil} {
		body := inVersion(t, e.event("evt_unsigned_version", audit.EventCheckoutCompleted, s), v)
		for name, sig := range map[string]string{
			"missing":      "",
			"wrong secret": sign(body, "whsec_wrong", time.Now()),
			"stale":        sign(body, testSecret, time.Now().Add(-301*time.Second)),
		} {
			if resp := e.deliver(request(body, sig)); resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("%s signature: got %s, want 400", name, status(resp))
			}
		}
	}
	if n := strings.Count(e.logs.String(), `"WebhookRejected":1`); n != 6 {
		t.Fatalf("%d rejections counted, want 6", n)
	}
	if got := e.alertsOf("WEBHOOK_API_VERSION"); len(got) != 0 {
		t.Fatalf("unsigned events alerted their version: %q", got)
	}
	if e.eventRecorded("evt_unsigned_version") {
		t.Fatal("an unsigned event was recorded")
	}
	// Signed, the same event is refused for its version, and alerted.
	body := inVersion(t, e.event("evt_unsigned_version", audit.EventCheckoutCompleted, s), &newer)
	if resp := e.send(body); resp.StatusCode != http.StatusConflict {
		t.Fatalf("signed: got %s, want 409", status(resp))
	}
	if got := e.alertsOf("WEBHOOK_API_VERSION"); len(got) != 1 {
		t.Fatalf("signed: alerts = %q, want one", got)
	}
}
