package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/stripex"
)

func TestPaidSessionBecomesOneOrderAndOneJob(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	s := paidSession("cs_test_paid1", oracle.TierFull, "Launch a subscription newsletter about AI for executives")
	resp := e.send(e.event("evt_paid1", audit.EventCheckoutCompleted, s))
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"received":true`) {
		t.Fatalf("got %s", status(resp))
	}
	o, ok := e.order(s.ID)
	if !ok || o.Status != oracle.StatusPaid || o.Tier != oracle.TierFull || o.AmountTotal != 500 || o.Currency != "cad" {
		t.Fatalf("order %+v", o)
	}
	// The job's arrival on its queue is the generator's to record (its
	// claim), not the webhook's.
	if o.Livemode || o.JobEnqueuedAt != nil || o.PaymentIntent != "pi_paid1" {
		t.Fatalf("order flags: livemode=%v enqueued=%v payment_intent=%q", o.Livemode, o.JobEnqueuedAt, o.PaymentIntent)
	}
	jobs := e.jobs("GenerateQueue")
	if len(jobs) != 1 || jobs[0].SessionID != s.ID || jobs[0].Reason != queue.ReasonPaid {
		t.Fatalf("generate jobs %+v", jobs)
	}
	recs := e.auditRecords()
	if len(recs) != 1 || recs[0].Status != audit.StatusOK || recs[0].Source != audit.SourceWebhook || recs[0].Tier != "full" || recs[0].EventID != "evt_paid1" {
		t.Fatalf("audit %+v", recs)
	}
	if !strings.HasPrefix(recs[0].QueryHash, audit.HashPrefix) || !strings.HasPrefix(recs[0].Email, audit.HashPrefix) {
		t.Fatalf("audit hashes %q %q", recs[0].QueryHash, recs[0].Email)
	}
	// The order holds the query, so nothing of the address: not even the
	// keyed hash the claim's audit record keeps (PRODUCT_TIERS INV-5).
	for name, v := range e.orderItem(s.ID) {
		if str, ok := v.(*types.AttributeValueMemberS); name == "email_hash" || ok && (strings.Contains(str.Value, "@") || str.Value == recs[0].Email) {
			t.Errorf("the order holds %s = %v beside the query", name, str)
		}
	}
	// The order is the event's record: the Ledger's mark, which no later
	// delivery could read, is not written (markUnread).
	if e.eventRecorded("evt_paid1") {
		t.Fatal("the event was marked in the Ledger, where nothing reads it")
	}
	raw, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.f.Ref("OrdersTable")),
		Key:       map[string]types.AttributeValue{"session_id": &types.AttributeValueMemberS{Value: s.ID}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if dump := fmt.Sprintf("%#v", raw.Item); strings.Contains(dump, "@") || strings.Contains(dump, "customer@") {
		t.Fatalf("the order item holds an email address: %s", dump)
	}
	for _, secret := range []string{"customer@example.com", "newsletter"} {
		if strings.Contains(e.logs.String(), secret) {
			t.Fatalf("logs contain %q", secret)
		}
	}
}

func TestSignatureGate(t *testing.T) {
	// VC-2 / FM-2: every bad signature is refused with 400 and nothing is
	// written: no order, no event record, no job, no audit record.
	e := newEnv(t, Secrets{Test: testSecret})
	s := paidSession("cs_test_sig", oracle.TierQuick, "Should I quit my job to start this business?")
	body := e.event("evt_sig", audit.EventCheckoutCompleted, s)
	tampered := []byte(strings.Replace(string(body), `"tier":"quick"`, `"tier":"strategy"`, 1))
	if string(tampered) == string(body) {
		t.Fatal("tampering did not change the body")
	}
	cases := []struct {
		name string
		req  func() httpapi.Request
	}{
		{"missing", func() httpapi.Request { return request(body, "") }},
		{"wrong secret", func() httpapi.Request { return request(body, sign(body, "whsec_wrong", time.Now())) }},
		{"tampered body", func() httpapi.Request { return request(tampered, sign(body, testSecret, time.Now())) }},
		{"301 seconds old", func() httpapi.Request { return request(body, sign(body, testSecret, time.Now().Add(-301*time.Second))) }},
		{"garbage header", func() httpapi.Request { return request(body, "not a signature") }},
		{"no v1 scheme", func() httpapi.Request { return request(body, "t=123") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := e.deliver(c.req())
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("got %s, want 400", status(resp))
			}
		})
	}
	if _, ok := e.order(s.ID); ok {
		t.Fatal("an order was written")
	}
	if e.eventRecorded("evt_sig") {
		t.Fatal("an event record was written")
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 0 {
		t.Fatalf("jobs were enqueued: %+v", jobs)
	}
	if recs := e.auditRecords(); len(recs) != 0 {
		t.Fatalf("audit records were written: %+v", recs)
	}
	if n := strings.Count(e.logs.String(), `"WebhookRejected":1`); n != len(cases) {
		t.Fatalf("%d rejections counted, want %d", n, len(cases))
	}
	// And a valid signature is processed.
	if resp := e.send(body); resp.StatusCode != http.StatusOK {
		t.Fatalf("valid signature: %s", status(resp))
	}
	if o, ok := e.order(s.ID); !ok || o.Status != oracle.StatusPaid {
		t.Fatalf("valid signature did not claim: %+v", o)
	}
}

// TestSmokeFlagHoldsOnlyInTestMode: the smoke flag in a session's metadata
// makes a smoke order only in test mode, and a smoke order expires within
// a day whatever its cleanup does; in live mode the flag is ignored, so no
// live payment can be taken for a smoke run and deleted.
func TestSmokeFlagHoldsOnlyInTestMode(t *testing.T) {
	e := newEnv(t, Secrets{Live: liveSecret, Test: testSecret})
	test := paidSession("cs_test_smokeflag", oracle.TierQuick, "q")
	test.Meta[stripex.MetaSmoke] = "1"
	live := paidSession("cs_live_smokeflag", oracle.TierQuick, "q")
	live.Meta[stripex.MetaSmoke], live.Livemode = "1", true
	for _, c := range []struct {
		s      session
		secret string
		smoke  bool
		expiry time.Duration
	}{
		{test, testSecret, true, oracle.SmokeRetention},
		{live, liveSecret, false, 90 * 24 * time.Hour},
	} {
		body := e.event("evt_"+c.s.ID, audit.EventCheckoutCompleted, c.s)
		if resp := e.deliver(request(body, sign(body, c.secret, time.Now()))); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", c.s.ID, status(resp))
		}
		o, ok := e.order(c.s.ID)
		// The expiry is stored in whole seconds.
		if off := o.Expires.Sub(e.clock.Now().Add(c.expiry)); !ok || o.Smoke != c.smoke || off < -time.Second || off > time.Second {
			t.Errorf("%s: order smoke=%v expires %v, want smoke=%v expiring %v from now", c.s.ID, o.Smoke, o.Expires.Sub(e.clock.Now()), c.smoke, c.expiry)
		}
	}
	recs := e.auditRecords()
	if len(recs) != 2 {
		t.Fatalf("%d audit records, want one per session", len(recs))
	}
	for _, r := range recs {
		if r.Smoke != (r.SessionID == test.ID) {
			t.Errorf("audit record of %s smoke=%v", r.SessionID, r.Smoke)
		}
	}
}

func TestBase64BodyFromAPIGateway(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	s := paidSession("cs_test_b64", oracle.TierQuick, "Crème brûlée truck? 🍮")
	body := e.event("evt_b64", audit.EventCheckoutCompleted, s)
	resp := e.deliver(base64Request(body, sign(body, testSecret, time.Now())))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("got %s", status(resp))
	}
	if o, _ := e.order(s.ID); o.Query != "Crème brûlée truck? 🍮" {
		t.Fatalf("query %q", o.Query)
	}
}

func TestModeMustMatchSecret(t *testing.T) {
	e := newEnv(t, Secrets{Live: liveSecret, Test: testSecret})
	test := paidSession("cs_test_mode", oracle.TierQuick, "q")
	live := paidSession("cs_live_mode", oracle.TierQuick, "q")
	live.Livemode = true
	cases := []struct {
		name   string
		body   []byte
		secret string
		want   int
	}{
		{"test event under the live secret", e.event("evt_m1", audit.EventCheckoutCompleted, test), liveSecret, http.StatusBadRequest},
		{"live event under the test secret", e.event("evt_m2", audit.EventCheckoutCompleted, live), testSecret, http.StatusBadRequest},
		{"test event under the test secret", e.event("evt_m3", audit.EventCheckoutCompleted, test), testSecret, http.StatusOK},
		{"live event under the live secret", e.event("evt_m4", audit.EventCheckoutCompleted, live), liveSecret, http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if resp := e.deliver(request(c.body, sign(c.body, c.secret, time.Now()))); resp.StatusCode != c.want {
				t.Fatalf("got %s, want %d", status(resp), c.want)
			}
		})
	}
	if o, _ := e.order(test.ID); o.Livemode {
		t.Fatal("test-mode order not flagged")
	}
	if o, _ := e.order(live.ID); !o.Livemode {
		t.Fatal("live order flagged as test")
	}
}

func TestMissingSecretAnswers503AndAlerts(t *testing.T) {
	e := newEnv(t, Secrets{})
	body := e.event("evt_nosecret", audit.EventCheckoutCompleted, paidSession("cs_test_nosecret", oracle.TierQuick, "q"))
	for i := 0; i < 3; i++ {
		if resp := e.deliver(request(body, sign(body, testSecret, time.Now()))); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("got %s, want 503", status(resp))
		}
	}
	alerts := e.alertTexts()
	if len(alerts) != 1 || !strings.Contains(alerts[0], "CRITICAL") || !strings.Contains(alerts[0], "WEBHOOK_SECRET_MISSING") {
		t.Fatalf("alerts %q: want one CRITICAL (deduplicated)", alerts)
	}
	if !strings.Contains(e.logs.String(), `"CriticalAlerts":1`) {
		t.Fatal("no CriticalAlerts metric")
	}
	if _, ok := e.order("cs_test_nosecret"); ok {
		t.Fatal("order written without a secret")
	}
}

func TestBodyLimitAndMalformedEvents(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	huge := []byte(`{"id":"evt_huge","padding":"` + strings.Repeat("x", MaxBody) + `"}`)
	if resp := e.deliver(request(huge, sign(huge, testSecret, time.Now()))); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("over the size limit: %s", status(resp))
	}
	// A correctly signed body came from Stripe and may be a paid order: it is
	// never refused with a 400 (which Stripe would not retry) but answered
	// 500 and alerted.
	cases := []struct {
		name string
		body []byte
	}{
		{"signed but not JSON", []byte("this is not json")},
		{"signed but no data", []byte(`{"id":"evt_nodata","object":"event","type":"checkout.session.completed","livemode":false}`)},
		// In the version read, so that it is its object that cannot be.
		{"signed but not a session", []byte(`{"id":"evt_ns","object":"event","api_version":"` + stripex.APIVersion + `","type":"checkout.session.completed","livemode":false,"created":1,"data":{"object":{"id":"pi_123"}}}`)},
		{"event and session disagree on mode", []byte(`{"id":"evt_mix","object":"event","api_version":"` + stripex.APIVersion + `","type":"checkout.session.completed","livemode":false,"created":1,"data":{"object":{"id":"cs_test_mix","livemode":true}}}`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if resp := e.deliver(request(c.body, sign(c.body, testSecret, time.Now()))); resp.StatusCode != http.StatusInternalServerError {
				t.Fatalf("got %s, want 500", status(resp))
			}
		})
	}
	alerts := e.alertTexts()
	if len(alerts) != len(cases) {
		// the body without an id is the only one that cannot be named
		t.Fatalf("%d alerts, want one per unreadable event: %q", len(alerts), alerts)
	}
	for _, a := range alerts {
		if !strings.Contains(a, "WEBHOOK_UNREADABLE") {
			t.Fatalf("alert %q", a)
		}
	}
	if recs := e.auditRecords(); len(recs) != 0 {
		t.Fatalf("audit records for bad input: %+v", recs)
	}
}

func TestOtherEventTypesAreAcknowledged(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	s := paidSession("cs_test_other", oracle.TierQuick, "q")
	for _, typ := range []audit.Event{"checkout.session.expired", "payment_intent.succeeded", "charge.succeeded"} {
		if resp := e.send(e.event("evt_"+strings.ReplaceAll(string(typ), ".", "_"), typ, s)); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", typ, status(resp))
		}
	}
	if _, ok := e.order(s.ID); ok {
		t.Fatal("an ignored event created an order")
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 0 {
		t.Fatal("an ignored event enqueued a job")
	}
}

func TestDuplicateDeliveries(t *testing.T) {
	// FM-11 / GAP-6: the same event ten times at once, then ten times in
	// sequence: one order, one generate job, one audit webhook record.
	e := newEnv(t, Secrets{Test: testSecret})
	s := paidSession("cs_test_dup", oracle.TierStrategy, "Acquire a failing restaurant and convert to ghost kitchen")
	body := e.event("evt_dup", audit.EventCheckoutCompleted, s)
	var wg sync.WaitGroup
	codes := make(chan int, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := e.h.Handle(context.Background(), request(body, sign(body, testSecret, time.Now())))
			if err != nil {
				t.Error(err)
				return
			}
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	ok := 0
	for c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusConflict: // in flight elsewhere: Stripe retries later
		default:
			t.Fatalf("concurrent delivery answered %d", c)
		}
	}
	if ok == 0 {
		t.Fatal("no concurrent delivery succeeded")
	}
	// Until the generator takes the job, the claim's lease keeps a
	// delivery in flight (Stripe retries it): the job may not have been
	// sent by a claimer that died.
	if resp := e.send(body); resp.StatusCode != http.StatusConflict {
		t.Fatalf("a delivery before the generator's claim: %s, want 409", status(resp))
	}
	e.generating(s.ID)
	for i := 0; i < 10; i++ {
		if resp := e.send(body); resp.StatusCode != http.StatusOK {
			t.Fatalf("sequential delivery %d: %s", i, status(resp))
		}
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 {
		t.Fatalf("%d generate jobs, want 1", len(jobs))
	}
	if !strings.Contains(e.logs.String(), `"WebhookDuplicates":1`) {
		t.Fatal("duplicates were not counted")
	}
	recs := e.auditRecords()
	if len(recs) != 1 || recs[0].Source != audit.SourceWebhook {
		t.Fatalf("%d audit records, want 1: %+v", len(recs), recs)
	}
	if o, ok := e.order(s.ID); !ok || o.Status != oracle.StatusGenerating {
		t.Fatalf("order %+v", o)
	}
}

// TestAmountMustMatchTheTier: a paid session whose subtotal or currency is
// not its tier's price is not delivered as that tier nor as another: the
// order is HELD with one CRITICAL AMOUNT_MISMATCH alert, the customer's
// review notice and one audit record saying why, no generation, however
// often the event comes.
func TestAmountMustMatchTheTier(t *testing.T) {
	for _, c := range []struct {
		name     string
		tier     oracle.Tier
		amount   int64
		currency string
		paid     string
	}{
		{"C$1 for the strategy tier", oracle.TierStrategy, 100, "", "priced at 100_CAD for the strategy tier, whose price is 2500_CAD"},
		{"C$25 for the quick tier", oracle.TierQuick, 2500, "", "priced at 2500_CAD for the quick tier, whose price is 100_CAD"},
		{"the right amount in another currency", oracle.TierFull, 500, "usd", "priced at 500_USD for the full tier, whose price is 500_CAD"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Secrets{Test: testSecret})
			s := paidSession("cs_test_mismatch01MismatchMismatch01", c.tier, "Should I sell sourdough starters online?")
			s.Amount, s.Currency = c.amount, c.currency
			for n := 0; n < 3; n++ {
				if resp := e.send(e.event(fmt.Sprintf("evt_mismatch%d", n%2), audit.EventCheckoutCompleted, s)); resp.StatusCode != http.StatusOK {
					t.Fatalf("delivery %d: %s", n, status(resp))
				}
			}
			o, ok := e.order(s.ID)
			if !ok || o.Status != oracle.StatusHeld || o.Failure != oracle.HoldAmountMismatch || o.Tier != c.tier || o.Verdict != "" {
				t.Fatalf("order %+v, want HELD for %s", o, oracle.HoldAmountMismatch)
			}
			if jobs := e.jobs("GenerateQueue"); len(jobs) != 0 {
				t.Fatalf("generation enqueued for a mismatched payment: %+v", jobs)
			}
			if mails := e.jobs("MailQueue"); len(mails) != 1 || mails[0].Kind != oracle.MailReview {
				t.Fatalf("notice jobs %+v, want one review notice", mails)
			}
			alerts := e.alertTexts()
			if len(alerts) != 1 || !strings.Contains(alerts[0], "CRITICAL") || !strings.Contains(alerts[0], " | AMOUNT_MISMATCH | cs_test_mismatch01Mismat | ") ||
				!strings.Contains(alerts[0], c.paid) || !strings.Contains(alerts[0], string(c.tier)) {
				t.Fatalf("alerts %q, want one CRITICAL AMOUNT_MISMATCH saying %s was paid", alerts, c.paid)
			}
			recs := e.auditRecords()
			if len(recs) != 1 || recs[0].Status != audit.StatusError || recs[0].ErrorDetail == nil || !strings.Contains(*recs[0].ErrorDetail, "amount mismatch") || recs[0].OrderStatus != string(oracle.StatusHeld) {
				t.Fatalf("audit records %+v, want one ERROR saying amount mismatch", recs)
			}
		})
	}
}

func TestSilentDrop(t *testing.T) {
	// A paid session with no tier, an invalid tier, an empty query or a
	// missing chunk: DROPPED with amount and currency, one [SILENT-DROP]
	// alert, one audit record, no generate job, however often delivered.
	idea := ""
	cases := []struct {
		name   string
		meta   map[string]string
		idea   *string
		reason oracle.DropReason
	}{
		{"no tier", map[string]string{"q0": "Should I?", "qn": "1"}, nil, oracle.DropTierMissing},
		{"invalid tier", map[string]string{"tier": "premium", "q0": "Should I?", "qn": "1"}, nil, oracle.DropTierInvalid},
		{"empty query", map[string]string{"tier": "quick"}, &idea, oracle.DropQueryEmpty},
		{"missing chunk", map[string]string{"tier": "full", "q0": "first half", "qn": "2"}, nil, oracle.DropChunkMissing},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Secrets{Test: testSecret})
			s := session{ID: "cs_test_drop" + string(rune('a'+i)) + strings.Repeat("x", 40), Paid: true, Meta: c.meta, Idea: c.idea, Email: "drop@example.com", Amount: 500}
			body := e.event("evt_drop", audit.EventCheckoutCompleted, s)
			for n := 0; n < 3; n++ {
				if resp := e.send(body); resp.StatusCode != http.StatusOK {
					t.Fatalf("delivery %d: %s", n, status(resp))
				}
			}
			// A second event for the same session (Stripe can emit several).
			if resp := e.send(e.event("evt_drop_again", audit.EventCheckoutCompleted, s)); resp.StatusCode != http.StatusOK {
				t.Fatalf("second event: %s", status(resp))
			}
			o, ok := e.order(s.ID)
			if !ok || o.Status != oracle.StatusDropped || o.DropReason != c.reason || o.AmountTotal != 500 || o.Currency != "cad" {
				t.Fatalf("order %+v", o)
			}
			if jobs := e.jobs("GenerateQueue"); len(jobs) != 0 {
				t.Fatalf("generation enqueued for a dropped order: %+v", jobs)
			}
			if mails := e.jobs("MailQueue"); len(mails) != 1 || mails[0].Kind != oracle.MailSilentDrop {
				t.Fatalf("notice jobs %+v, want one silent_drop", mails)
			}
			if n := strings.Count(e.logs.String(), `"SilentDrops":1`); n != 1 {
				t.Fatalf("%d silent drops counted, want 1", n)
			}
			alerts := e.alertTexts()
			if len(alerts) != 1 {
				t.Fatalf("%d alerts, want 1: %q", len(alerts), alerts)
			}
			a := alerts[0]
			if !strings.HasPrefix(a, "[SILENT-DROP] session="+oracle.ShortID(s.ID)+" ") || strings.Contains(a, s.ID) {
				t.Fatalf("alert does not name the session by oracle.ShortID: %q", a)
			}
			for _, want := range []string{"tier=", "query_len=", "email=hmac-sha256:", "amount=500_CAD"} {
				if !strings.Contains(a, want) {
					t.Fatalf("alert %q lacks %q", a, want)
				}
			}
			if strings.Contains(a, "@") {
				t.Fatalf("alert holds an email address: %q", a)
			}
			if !strings.Contains(e.logs.String(), "[SILENT-DROP] session="+oracle.ShortID(s.ID)+" ") {
				t.Fatal("the [SILENT-DROP] line is not in the logs")
			}
			recs := e.auditRecords()
			if len(recs) != 1 || recs[0].Status != audit.StatusError || recs[0].ErrorDetail == nil ||
				!strings.Contains(*recs[0].ErrorDetail, string(c.reason)) || recs[0].AmountTotal != 500 || recs[0].Currency != "cad" {
				// one for the session, however many events reported it
				t.Fatalf("audit records %+v", recs)
			}
		})
	}
}

func TestAsyncPayment(t *testing.T) {
	cases := []struct {
		name   string
		events []string // in delivery order
		jobs   int
		status oracle.Status
		audit  audit.Status // the session's one audit record; "" for none
	}{
		{"completed unpaid then succeeded", []string{"completed", "succeeded"}, 1, oracle.StatusPaid, audit.StatusOK},
		{"succeeded before completed (reordered)", []string{"succeeded", "completed"}, 1, oracle.StatusPaid, audit.StatusOK},
		{"completed unpaid then failed", []string{"completed", "failed"}, 0, oracle.StatusPaymentFailed, audit.StatusError},
		{"completed unpaid only", []string{"completed"}, 0, oracle.StatusAwaitingPayment, ""},
		{"succeeded twice", []string{"completed", "succeeded", "succeeded"}, 1, oracle.StatusGenerating, audit.StatusOK},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Secrets{Test: testSecret})
			s := paidSession("cs_test_async"+string(rune('a'+i)), oracle.TierQuick, "Should I open a bakery?")
			for n, ev := range c.events {
				s.Paid = ev == "succeeded"
				typ := map[string]audit.Event{"completed": audit.EventCheckoutCompleted, "succeeded": audit.EventAsyncSucceeded, "failed": audit.EventAsyncFailed}[ev]
				id := "evt_" + ev
				if n == 2 {
					id += "_redelivered_as_new_event"
					// The generator has taken the first's job (a delivery
					// before it is in flight: TestDuplicateDeliveries).
					e.generating(s.ID)
				}
				if resp := e.send(e.event(id, typ, s)); resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: %s", ev, status(resp))
				}
			}
			if jobs := e.jobs("GenerateQueue"); len(jobs) != c.jobs {
				t.Fatalf("%d jobs, want %d", len(jobs), c.jobs)
			}
			if o, _ := e.order(s.ID); o.Status != c.status {
				t.Fatalf("status %s, want %s", o.Status, c.status)
			}
			recs := e.auditRecords()
			if c.audit == "" && len(recs) != 0 || c.audit != "" && (len(recs) != 1 || recs[0].Status != c.audit) {
				t.Fatalf("audit records %+v, want one %q", recs, c.audit)
			}
		})
	}
}

// SILENT_DROP INV-1: a session that is not paid is never a silent drop,
// however broken its tier or query: no DROPPED order, no alert, no notice,
// whether it stays unpaid or its payment fails.
func TestAnUnpaidSessionIsNeverASilentDrop(t *testing.T) {
	for i, then := range []string{"", "failed"} {
		t.Run("then "+cmp.Or(then, "nothing"), func(t *testing.T) {
			e := newEnv(t, Secrets{Test: testSecret})
			s := session{ID: "cs_test_unpaid" + string(rune('a'+i)) + "xxxxxxxxxx", Paid: false, Meta: map[string]string{"tier": "premium"}, Email: "u@example.com", Amount: 500}
			if resp := e.send(e.event("evt_unpaid", audit.EventCheckoutCompleted, s)); resp.StatusCode != http.StatusOK {
				t.Fatalf("completed: %s", status(resp))
			}
			if then == "failed" {
				if resp := e.send(e.event("evt_unpaid_failed", audit.EventAsyncFailed, s)); resp.StatusCode != http.StatusOK {
					t.Fatalf("failed: %s", status(resp))
				}
			}
			if o, ok := e.order(s.ID); ok && o.Status == oracle.StatusDropped {
				t.Fatalf("an unpaid session was dropped: %+v", o)
			}
			if alerts := e.alertTexts(); len(alerts) != 0 {
				t.Fatalf("alerts for an unpaid session: %q", alerts)
			}
			if mails := e.jobs("MailQueue"); len(mails) != 0 {
				t.Fatalf("a notice for an unpaid session: %+v", mails)
			}
			if jobs := e.jobs("GenerateQueue"); len(jobs) != 0 {
				t.Fatalf("generation for an unpaid session: %+v", jobs)
			}
			if strings.Contains(e.logs.String(), "SILENT-DROP") {
				t.Fatal("a [SILENT-DROP] line for an unpaid session")
			}
		})
	}
}

func TestDropAlertSurvivesAClaimerThatDied(t *testing.T) {
	// A claimer recorded DROPPED and died before alerting: the retry, once
	// its lease has passed, raises the alert and enqueues the notice.
	e := newEnv(t, Secrets{Test: testSecret})
	s := session{ID: "cs_test_diedxxxxxxxxxxxxxxxx", Paid: true, Meta: map[string]string{"q0": "Should I?", "qn": "1"}, Email: "d@example.com", Amount: 100}
	dead := oracle.Order{SessionID: s.ID, Status: oracle.StatusDropped, DropReason: oracle.DropTierMissing, AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook}
	if c, err := e.svc.Orders.ClaimOrder(context.Background(), dead, e.svc.Lease); err != nil || c.Outcome != oracle.Claimed {
		t.Fatalf("dead claimer: %v %v", c.Outcome, err)
	}
	body := e.event("evt_died", audit.EventCheckoutCompleted, s)
	if resp := e.send(body); resp.StatusCode != http.StatusConflict {
		t.Fatalf("within the dead claimer's lease: %s, want 409", status(resp))
	}
	e.clock.Add(time.Hour)
	if resp := e.send(body); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the lease: %s", status(resp))
	}
	if alerts := e.alertTexts(); len(alerts) != 1 || !strings.HasPrefix(alerts[0], "[SILENT-DROP]") {
		t.Fatalf("alerts %q", alerts)
	}
	if mails := e.jobs("MailQueue"); len(mails) != 1 {
		t.Fatalf("%d notice jobs", len(mails))
	}
}

func TestDropsOfSessionsSharingAPrefixAreAlertedApart(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	for i, id := range []string{"cs_live_a1B2AAAAAAAAAAAAAAAAAAAA", "cs_live_a1B2BBBBBBBBBBBBBBBBBBBB"} {
		s := session{ID: id, Paid: true, Livemode: true, Meta: map[string]string{"tier": "gold", "q0": "x", "qn": "1"}, Amount: 100}
		body := e.event(fmt.Sprintf("evt_prefix%d", i), audit.EventCheckoutCompleted, s)
		e.h.Secrets.Live = liveSecret
		if resp := e.deliver(request(body, sign(body, liveSecret, time.Now()))); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", id, status(resp))
		}
	}
	if alerts := e.alertTexts(); len(alerts) != 2 {
		t.Fatalf("%d alerts for two dropped sessions, want 2", len(alerts))
	}
}

func TestEnqueueFailureIsRetriedByStripe(t *testing.T) {
	// If the enqueue fails the webhook answers 500, records nothing that
	// would stop the retry, and the retry finishes the work.
	e := newEnv(t, Secrets{Test: testSecret})
	good := e.svc.Generate
	e.svc.Generate = queue.NewSender(e.queues, e.f.Ref("GenerateQueue")+"-missing", time.Now)
	s := paidSession("cs_test_enqfail", oracle.TierQuick, "q")
	body := e.event("evt_enqfail", audit.EventCheckoutCompleted, s)
	if resp := e.send(body); resp.StatusCode != http.StatusInternalServerError || strings.Contains(resp.Body, "missing") {
		t.Fatalf("got %s, want a bare 500", status(resp))
	}
	if e.eventRecorded("evt_enqfail") {
		t.Fatal("a failed event was recorded as processed")
	}
	if recs := e.auditRecords(); len(recs) != 0 {
		t.Fatalf("audit OK record before the job was enqueued: %+v", recs)
	}
	e.svc.Generate = good
	if resp := e.send(body); resp.StatusCode != http.StatusOK {
		t.Fatalf("retry: %s", status(resp))
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 {
		t.Fatalf("%d jobs after the retry, want 1", len(jobs))
	}
	e.generating(s.ID)
	if o, _ := e.order(s.ID); o.JobEnqueuedAt == nil {
		t.Fatal("the job's arrival not recorded by the generator's claim")
	}
}

// AUDIT_TRAIL INV-2: a paid session's claim record is required. When it
// cannot be written the webhook answers 500, so that Stripe retries, the
// operator is alerted, and the retry writes the one record without a
// second job (issue 41, item 4). A retry within the claim's lease is
// told to come back (409), as for any claim in flight.
func TestARequiredClaimRecordNotWrittenIsRetriedByStripe(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	good := e.svc.Audit
	rec := good.(*audit.Recorder)
	e.svc.Audit = &audit.Recorder{Writer: audit.NewWriter(e.s3, e.f.Ref("AuditBucket")+"-missing"), Alerts: rec.Alerts, Log: rec.Log}
	s := paidSession("cs_test_auditfail", oracle.TierQuick, "q")
	body := e.event("evt_auditfail", audit.EventCheckoutCompleted, s)
	if resp := e.send(body); resp.StatusCode != http.StatusInternalServerError || strings.Contains(resp.Body, "missing") {
		t.Fatalf("got %s, want a bare 500", status(resp))
	}
	if recs := e.auditRecords(); len(recs) != 0 {
		t.Fatalf("records %+v", recs)
	}
	if alerts := e.alertTexts(); len(alerts) != 1 || !strings.Contains(alerts[0], "AUDIT") {
		t.Fatalf("alerts %q, want one for the record not written", alerts)
	}
	if resp := e.send(body); resp.StatusCode != http.StatusConflict {
		t.Fatalf("a retry within the claim's lease: %s, want 409", status(resp))
	}
	// Stripe retries minutes later: the job was on its queue, and the
	// generator has taken it since; the claim's lease has lapsed.
	e.generating(s.ID)
	e.clock.Add(e.svc.Lease + time.Second)
	e.svc.Audit = good
	if resp := e.send(body); resp.StatusCode != http.StatusOK {
		t.Fatalf("retry: %s", status(resp))
	}
	recs := e.auditRecords()
	if len(recs) != 1 || recs[0].SessionID != s.ID || recs[0].Event != audit.EventCheckoutCompleted || recs[0].Status != audit.StatusOK {
		t.Fatalf("records after the retry %+v, want the one paid record", recs)
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 {
		t.Fatalf("%d jobs, want one however many deliveries", len(jobs))
	}
}

// unrecorded fails to record the enqueued job, as a store outage between
// the send and the record would.
type unrecorded struct{ fulfil.Orders }

func (unrecorded) JobEnqueued(context.Context, string, string) error {
	return errors.New("injected: the store is unavailable")
}

func TestJobSentButNotRecordedStillAnswers200(t *testing.T) {
	// The job is on its queue: the event is done, and the failure to record
	// it is logged (a later claim may send it again; consumers are idempotent).
	// A dropped order's notice is the job the claim records (a paid
	// order's is recorded by the generator's claim).
	e := newEnv(t, Secrets{Test: testSecret})
	e.svc.Orders = unrecorded{e.svc.Orders}
	s := session{ID: "cs_test_unrecorded", Paid: true, Meta: map[string]string{"q0": "Should I?", "qn": "1"}, Email: "drop@example.com", Amount: 500}
	if resp := e.send(e.event("evt_unrecorded", audit.EventCheckoutCompleted, s)); resp.StatusCode != http.StatusOK {
		t.Fatalf("got %s", status(resp))
	}
	if jobs := e.jobs("MailQueue"); len(jobs) != 1 {
		t.Fatalf("%d jobs", len(jobs))
	}
	if !strings.Contains(e.logs.String(), "recording the enqueued job failed") {
		t.Fatal("the failure was not logged")
	}
}

func TestPaymentLinkPathMatchesMetadataPath(t *testing.T) {
	// VC-8 / FM-9: a Payment Link session (query in the idea custom field)
	// yields the same order as the metadata path.
	e := newEnv(t, Secrets{Test: testSecret})
	query := "Launch a subscription newsletter about AI for executives"
	viaMeta := paidSession("cs_test_viameta", oracle.TierFull, query)
	viaLink := session{ID: "cs_test_vialink", Paid: true, Meta: map[string]string{"tier": "full"}, Idea: &query, Email: "customer@example.com", Amount: 500}
	for _, s := range []session{viaMeta, viaLink} {
		if resp := e.send(e.event("evt_"+s.ID, audit.EventCheckoutCompleted, s)); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", s.ID, status(resp))
		}
	}
	a, _ := e.order(viaMeta.ID)
	b, _ := e.order(viaLink.ID)
	if a.Status != b.Status || a.Tier != b.Tier || a.Query != b.Query || a.AmountTotal != b.AmountTotal || b.Query != query {
		t.Fatalf("orders differ:\n%+v\n%+v", a, b)
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2", len(jobs))
	}
}
