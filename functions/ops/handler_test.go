package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/auditfigures"
	"42sisters.ai/oracle/shared/auditseal"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
)

// stripeRefunds records the refunds asked of Stripe, by idempotency key,
// as Stripe makes them: one refund per key.
type stripeRefunds struct{ made map[string]int }

func (s *stripeRefunds) RefundSession(_ context.Context, sessionID, pi string) (stripex.Refund, error) {
	s.made[stripex.RefundKey(sessionID)]++
	return stripex.Refund{ID: "re_" + pi, Status: "succeeded"}, nil
}

type env struct {
	t       *testing.T
	f       *provision.Fixture
	h       *Handler
	orders  *store.Orders
	refunds *stripeRefunds
	sqs     *sqs.Client
	clock   *testkit.Clock
	alerts  *testkit.Alerts
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := provision.ForTest(t, nil)
	db, s3 := awsenv.NewTables(f.AWS), awsenv.S3(f.AWS)
	clock := testkit.NewClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	hasher, err := audit.NewHasher("ops-test-pepper-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	filter, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	log := obs.NewLogger(io.Discard, "DEBUG")
	q := queue.NewClient(f.AWS)
	ledger := store.NewLedger(db, f.Ref("LedgerTable"), clock.Now)
	e := &env{t: t, f: f, orders: store.NewOrders(db, f.Ref("OrdersTable"), clock.Now), refunds: &stripeRefunds{made: map[string]int{}},
		sqs: sqs.NewFromConfig(f.AWS), clock: clock, alerts: &testkit.Alerts{}}
	e.h = &Handler{
		Orders: e.orders, Index: store.NewOrderIndex(awsenv.NewQueries(f.AWS), f.Ref("OrdersTable")),
		Records:  audit.NewReader(s3, f.Ref("AuditBucket")),
		Test:     e.refunds,
		Generate: queue.NewSender(q, f.Ref("GenerateQueue"), clock.Now),
		Mail:     queue.NewSender(q, f.Ref("MailQueue"), clock.Now),
		Audit:    &audit.Recorder{Writer: audit.NewWriter(s3, f.Ref("AuditBucket")), Alerts: &testkit.Alerts{}, Log: log},
		Hasher:   hasher, Cleaner: filter,
		Verdicts: &repair.Guard{Orders: e.orders, Hash: hasher.Hash, Generate: queue.NewSender(q, f.Ref("GenerateQueue"), clock.Now), Alerts: e.alerts, Log: log},
		Dead:     store.NewDeadLetters(awsenv.NewQueries(f.AWS), f.Ref("LedgerTable")), Ledger: ledger,
		Seals: auditseal.New(s3, f.Ref("AuditBucket"), auditseal.Lock{Mode: "GOVERNANCE", Retention: 24 * time.Hour}, clock.Now),
		Inbox: inbox.NewMessages(s3, f.Ref("InboxBucket")),
		Log:   log, Now: clock.Now, StuckAfter: 15 * time.Minute, Retention: 90 * 24 * time.Hour,
		Claims: e.orders,
	}
	e.h.Payer = &fulfil.Service{Orders: e.orders, Generate: e.h.Generate, Audit: e.h.Audit, Alerts: e.alerts, Metrics: &testkit.Metrics{},
		Hasher: hasher, Log: log, Now: clock.Now, Lease: time.Minute, Retention: 90 * 24 * time.Hour}
	return e
}

// claim records an order in state s, its session created an hour ago.
func (e *env) claim(id string, s oracle.Status) {
	e.t.Helper()
	o := oracle.Order{SessionID: id, Status: s, Tier: oracle.TierFull, Query: "Sell bread on Sundays", AmountTotal: 500, Currency: "cad",
		PaymentIntent: "pi_" + strings.TrimPrefix(id, "cs_test_"), Source: oracle.SourceWebhook, SessionCreated: e.clock.Now().Add(-time.Hour),
		Expires: e.clock.Now().Add(90 * 24 * time.Hour)}
	if s == oracle.StatusDropped {
		o.Tier, o.Query, o.DropReason = "", "", oracle.DropTierMissing
	}
	c, err := e.orders.ClaimOrder(context.Background(), o, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	if c.Lease != "" {
		if err := e.orders.JobEnqueued(context.Background(), id, c.Lease); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) do(r Request) Answer {
	e.t.Helper()
	a, err := e.h.Handle(context.Background(), r)
	if err != nil {
		e.t.Fatalf("%s: %v", r.Action, err)
	}
	return a
}

func (e *env) jobs(logicalID string) []queue.Job {
	e.t.Helper()
	var out []queue.Job
	for _, b := range testkit.Drain(e.t, e.sqs, e.f.Ref(logicalID)) {
		j, err := queue.Parse(b)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

func (e *env) operatorRecords() []audit.Record {
	var out []audit.Record
	for _, r := range testkit.AuditRecords(e.t, awsenv.S3(e.f.AWS), e.f.Ref("AuditBucket")) {
		if r.Event == audit.EventOperator {
			out = append(out, r)
		}
	}
	return out
}

const by, why = "ana", "asked by email"

func TestAnActionThatChangesSomethingNeedsWhoAndWhy(t *testing.T) {
	e := newEnv(t)
	e.claim("cs_test_needsWho", oracle.StatusReady)
	for _, r := range []Request{
		{Action: "refund", Session: "cs_test_needsWho"},
		{Action: "refund", Session: "cs_test_needsWho", AuthorisedBy: by},
		{Action: "show", Session: "cs_test_needsWho", Reveal: true, Reason: why},
		{Action: "redrive", Queue: "mail"},
	} {
		if a := e.do(r); a.OK || !strings.Contains(a.Message, "authorised_by") {
			t.Errorf("%+v: %+v", r, a)
		}
	}
	if a := e.do(Request{Action: "launch"}); a.OK || !strings.Contains(a.Message, "the actions are") {
		t.Errorf("unknown action: %+v", a)
	}
	if len(e.refunds.made) != 0 || len(e.operatorRecords()) != 0 {
		t.Fatal("a refused request did something")
	}
}

func TestRefundIsMadeOnceAndRecorded(t *testing.T) {
	e := newEnv(t)
	id := "cs_test_refundMe12345"
	e.claim(id, oracle.StatusFailed)
	r := Request{Action: "refund", Session: id[:12], AuthorisedBy: by, Reason: why}
	first := e.do(r)
	if !first.OK || !first.Changed {
		t.Fatalf("first refund: %+v", first)
	}
	if again := e.do(r); !again.OK || again.Changed {
		t.Fatalf("the same refund again: %+v", again)
	}
	if e.refunds.made[stripex.RefundKey(id)] != 1 || len(e.refunds.made) != 1 {
		t.Fatalf("Stripe was asked %v", e.refunds.made)
	}
	o, _, _ := e.orders.Get(context.Background(), id)
	if o.Status != oracle.StatusRefunded || o.RefundedBy != "operator" || o.RefundID != "re_pi_refundMe12345" {
		t.Fatalf("order = %s by %q, %q", o.Status, o.RefundedBy, o.RefundID)
	}
	mail := e.jobs("MailQueue")
	if len(mail) == 0 || mail[0].Kind != oracle.MailRefund {
		t.Fatalf("mail jobs %+v", mail)
	}
	recs := e.operatorRecords()
	if len(recs) != 1 || recs[0].Operator.AuthorisedBy != by || recs[0].Operator.Reason != why || recs[0].Operator.Outcome != "refunded re_pi_refundMe12345" {
		t.Fatalf("operator records %+v", recs)
	}
}

func TestARefundIsRefusedWhereItDoesNotApply(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		status oracle.Status
		says   string
	}{
		{oracle.StatusGenerating, "being generated"},
		{oracle.StatusAwaitingPayment, "never paid"},
	} {
		id := "cs_test_noRefund" + string(c.status[:3])
		e.claim(id, c.status)
		if a := e.do(Request{Action: "refund", Session: id, AuthorisedBy: by, Reason: why}); a.OK || !strings.Contains(a.Message, c.says) {
			t.Errorf("%s: %+v", c.status, a)
		}
	}
	if a := e.do(Request{Action: "refund", Session: "cs_test_nobodyAtAll", AuthorisedBy: by, Reason: why}); a.OK || !strings.Contains(a.Message, "no order") {
		t.Errorf("unknown session: %+v", a)
	}
	if len(e.refunds.made) != 0 {
		t.Fatalf("Stripe was asked %v", e.refunds.made)
	}
}

func TestRerunGeneratesADroppedOrderOnce(t *testing.T) {
	e := newEnv(t)
	id := "cs_test_droppedOne"
	e.claim(id, oracle.StatusDropped)
	r := Request{Action: "rerun", Session: id, Tier: "full", Query: "Should I sell bread only on Sundays?", AuthorisedBy: by, Reason: why}
	if a := e.do(Request{Action: "rerun", Session: id, Tier: "strategy", Query: r.Query, AuthorisedBy: by, Reason: why}); a.OK || !strings.Contains(a.Message, "not the strategy tier's price") {
		t.Fatalf("rerun as a tier not paid for: %+v", a)
	}
	if a := e.do(r); !a.OK || !a.Changed {
		t.Fatalf("rerun: %+v", a)
	}
	if a := e.do(r); !a.OK || a.Changed {
		t.Fatalf("rerun again: %+v", a)
	}
	o, _, _ := e.orders.Get(context.Background(), id)
	if o.Status != oracle.StatusPaid || o.Tier != oracle.TierFull || o.Query != r.Query {
		t.Fatalf("order = %s %s %q", o.Status, o.Tier, o.Query)
	}
	jobs := e.jobs("GenerateQueue")
	if len(jobs) == 0 || jobs[0].Reason != queue.ReasonOperator || jobs[0].SessionID != id {
		t.Fatalf("generate jobs %+v", jobs)
	}
	if recs := e.operatorRecords(); len(recs) != 1 {
		t.Fatalf("%d operator records", len(recs))
	}
}

func TestDeliverRegeneratesAHeldOrder(t *testing.T) {
	e := newEnv(t)
	id := "cs_test_heldOrder"
	e.claim(id, oracle.StatusHeld)
	if a := e.do(Request{Action: "deliver", Session: id, Mode: "cleaned", AuthorisedBy: by, Reason: why}); a.OK || !strings.Contains(a.Message, "no verdict to clean") {
		t.Fatalf("cleaned delivery of a held order: %+v", a)
	}
	if a := e.do(Request{Action: "deliver", Session: id, AuthorisedBy: by, Reason: why}); !a.OK || !a.Changed {
		t.Fatalf("deliver: %+v", a)
	}
	if o, _, _ := e.orders.Get(context.Background(), id); o.Status != oracle.StatusPaid {
		t.Fatalf("order = %s", o.Status)
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 {
		t.Fatalf("generate jobs %+v", jobs)
	}
}

func TestListShowsWhatWaitsWithoutTheQuery(t *testing.T) {
	e := newEnv(t)
	if a := e.do(Request{Action: "list"}); !a.OK || a.Message != "nothing needs attention" || a.Text != "" {
		t.Fatalf("list of a quiet stack: %+v", a)
	}
	const dropped, failed = "cs_test_waitingDropped00000000000000", "cs_test_waitingFailed000000000000000"
	e.claim(dropped, oracle.StatusDropped)
	e.claim(failed, oracle.StatusFailed)
	e.claim("cs_test_allIsWell", oracle.StatusReady)
	a := e.do(Request{Action: "list"})
	if !a.OK || !strings.Contains(a.Text, oracle.ShortID(dropped)) || !strings.Contains(a.Text, oracle.ShortID(failed)) ||
		strings.Contains(a.Text, "cs_test_allI") || strings.Contains(a.Text, dropped) {
		t.Fatalf("list:\n%s", a.Text)
	}
	rows := a.Data.([]Attention)
	if len(rows) != 2 || strings.Contains(a.Text, "Sundays") {
		t.Fatalf("rows %+v", rows)
	}
}

// TestASessionIsNamedByAnyStartOnlyOneOrderHas: show finds an order by
// its whole id, by its name in alerts (oracle.ShortID) and by any shorter
// start no other order shares; a start two orders share is refused with
// both listed whole, and one no order has is refused plainly.
func TestASessionIsNamedByAnyStartOnlyOneOrderHas(t *testing.T) {
	e := newEnv(t)
	// The two share their first 12 characters, as alerts once cut them.
	const a, b = "cs_test_twIn" + "Aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "cs_test_twIn" + "Bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	e.claim(a, oracle.StatusFailed)
	e.claim(b, oracle.StatusHeld)
	e.claim("cs_test_other"+strings.Repeat("c", 45), oracle.StatusReady)
	for _, c := range []struct {
		name, session string
		want          oracle.Status // "" = refused
		says          []string
	}{
		{"the whole id", b, oracle.StatusHeld, nil},
		{"its name in alerts", oracle.ShortID(a), oracle.StatusFailed, nil},
		{"a start only it has", "cs_test_twInB", oracle.StatusHeld, nil},
		{"a start two orders share", "cs_test_twIn", "", []string{"more than one order", a, b}},
		{"a start no order has", "cs_test_nobody", "", []string{"no order's session starts with cs_test_nobody"}},
		{"no session id", "twInA", "", []string{"name the order"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ans := e.do(Request{Action: "show", Session: c.session})
			if c.want == "" {
				if ans.OK {
					t.Fatalf("%s resolved: %s", c.session, ans.Message)
				}
				for _, w := range c.says {
					if !strings.Contains(ans.Message, w) {
						t.Errorf("refusal %q does not say %q", ans.Message, w)
					}
				}
				return
			}
			if !ans.OK || ans.Message != fmt.Sprintf("%s is %s; 0 audit records", oracle.ShortID(map[bool]string{true: a, false: b}[c.want == oracle.StatusFailed]), c.want) {
				t.Fatalf("show %s: %+v", c.session, ans)
			}
		})
	}
}

// TestListFindsACustomersOrdersThroughStripe: the orders of one address
// are the sessions Stripe lists for it (the fake Stripe, over HTTP) that
// have an order; another customer's are not shown, nor is the address
// or the query, and sessions without an order are counted.
func TestListFindsACustomersOrdersThroughStripe(t *testing.T) {
	e := newEnv(t)
	fake := fakestripe.New(fakestripe.Options{Rand: rand.NewChaCha8([32]byte{27})})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c := stripex.New("sk_test_ops_list", stripex.Options{BaseURL: srv.URL})
	e.h.TestCustomers = c
	pay := func(email string, claim bool) string {
		t.Helper()
		cs, err := c.CreateCheckoutSession(context.Background(), stripex.CheckoutRequest{Tier: oracle.TierFull, Query: "Sell bread on Sundays",
			SuccessURL: "https://42sisters.ai/oracle/result?session_id={CHECKOUT_SESSION_ID}", CancelURL: "https://42sisters.ai/"})
		if err != nil {
			t.Fatal(err)
		}
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noRedirect.PostForm(srv.URL+"/pay/"+cs.ID, url.Values{"email": {email}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if claim {
			e.claim(cs.ID, oracle.StatusReady)
		}
		return cs.ID
	}
	mine := []string{pay("bea@example.com", true), pay("bea@example.com", true)}
	pay("bea@example.com", false) // paid, its order past retention
	theirs := pay("cy@example.com", true)

	a := e.do(Request{Action: "list", Email: "bea@example.com"})
	rows, _ := a.Data.([]CustomerOrder)
	if !a.OK || len(rows) != 2 || !strings.Contains(a.Message, "2 orders") || !strings.Contains(a.Message, "1 more of their sessions") {
		t.Fatalf("list of bea's orders: %+v", a)
	}
	for _, id := range mine {
		if !strings.Contains(a.Text, oracle.ShortID(id)) || strings.Contains(a.Text, id) {
			t.Errorf("the list does not name %s by its name alone:\n%s", oracle.ShortID(id), a.Text)
		}
	}
	if strings.Contains(a.Text, oracle.ShortID(theirs)) || strings.Contains(a.Text+a.Message, "bea@") || strings.Contains(a.Text, "Sundays") {
		t.Errorf("the list shows another customer's order, the address or the query:\n%s", a.Text)
	}
	if a := e.do(Request{Action: "list", Email: "nobody"}); a.OK || strings.Contains(a.Message, "nobody") {
		t.Errorf("list of a non-address: %+v", a)
	}
	e.h.TestCustomers = nil
	if a := e.do(Request{Action: "list", Email: "bea@example.com"}); a.OK || !strings.Contains(a.Message, "no Stripe key") {
		t.Errorf("list without a Stripe key: %+v", a)
	}
}

func TestShowRevealsTheQueryOnlyWhenAskedAndRecordsIt(t *testing.T) {
	e := newEnv(t)
	id := "cs_test_showMe"
	e.claim(id, oracle.StatusReady)
	a := e.do(Request{Action: "show", Session: id})
	if !a.OK || strings.Contains(a.Text, "Sundays") || len(e.operatorRecords()) != 0 {
		t.Fatalf("show without reveal:\n%s", a.Text)
	}
	a = e.do(Request{Action: "show", Session: id, Reveal: true, AuthorisedBy: by, Reason: why})
	if !a.OK || !strings.Contains(a.Text, "Sell bread on Sundays") {
		t.Fatalf("show with reveal:\n%s", a.Text)
	}
	if recs := e.operatorRecords(); len(recs) != 1 || recs[0].Operator.Outcome != "query revealed" {
		t.Fatalf("records %+v", recs)
	}
}

// The timeline says when gate 1 had the model write a verdict again, and
// what it would have done (issue 41), with the entries, never the text.
func TestShowSaysAVerdictWasWrittenAgain(t *testing.T) {
	e := newEnv(t)
	id := "cs_test_showRewrite"
	e.claim(id, oracle.StatusReady)
	w := audit.NewWriter(awsenv.S3(e.f.AWS), e.f.Ref("AuditBucket"))
	now := e.clock.Now()
	rec := audit.Record{Timestamp: now, SessionCreated: now, SessionID: id, Status: audit.StatusOK, Source: audit.SourceGenerator, Event: audit.EventFilter,
		Filter: &audit.Filter{Gate: "generator", Action: audit.FilterRewrite, Reason: "it would have quarantined it", TermIDs: []string{"cat3.csdm"}, Version: "1.1.0+0123456789ab"}}
	if _, err := w.Write(context.Background(), rec, audit.RecordID(id, audit.NameFilterRewrite, 1)); err != nil {
		t.Fatal(err)
	}
	a := e.do(Request{Action: "show", Session: id})
	if want := "gate generator: written again (it would have quarantined it) cat3.csdm"; !a.OK || !strings.Contains(a.Text, want) {
		t.Fatalf("show, want %q in:\n%s", want, a.Text)
	}
}

func TestResendPassesTheGuardOnlyWithForce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := "cs_test_resendMe"
	e.claim(id, oracle.StatusReady)
	tok, err := e.orders.ClaimMail(ctx, id, oracle.MailVerdict, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.orders.MailSent(ctx, id, oracle.MailVerdict, tok, "m-1", oracle.MailDelivered); err != nil {
		t.Fatal(err)
	}
	r := Request{Action: "resend", Session: id, Kind: "verdict", AuthorisedBy: by, Reason: why}
	if a := e.do(r); a.OK || !strings.Contains(a.Message, "with force") {
		t.Fatalf("resend without force: %+v", a)
	}
	r.Force = true
	if a := e.do(r); !a.OK || !a.Changed {
		t.Fatalf("resend with force: %+v", a)
	}
	if jobs := e.jobs("MailQueue"); len(jobs) != 1 || jobs[0].Kind != oracle.MailVerdict {
		t.Fatalf("mail jobs %+v", jobs)
	}
	if _, err := e.orders.ClaimMail(ctx, id, oracle.MailVerdict, 0, time.Minute); err != nil {
		t.Fatalf("the resent mail cannot be claimed: %v", err)
	}
}

// TestVerifySealFindsARecordAddedAfterTheSeal: the day is sealed, then a
// record dated before the seal appears in it.
func TestVerifySealFindsARecordAddedAfterTheSeal(t *testing.T) {
	e := newEnv(t)
	// A record of yesterday's session, then the seal of yesterday.
	w := audit.NewWriter(awsenv.S3(e.f.AWS), e.f.Ref("AuditBucket"))
	yesterday := e.clock.Now().Add(-24 * time.Hour)
	rec := audit.Record{Timestamp: yesterday, SessionCreated: yesterday, SessionID: "cs_test_sealedDay", Status: audit.StatusOK, Source: audit.SourceWebhook, Event: audit.EventCheckoutCompleted}
	if _, err := w.Write(context.Background(), rec, "cs_test_sealedDay.paid"); err != nil {
		t.Fatal(err)
	}
	if a := e.do(Request{Action: "seal", AuthorisedBy: "schedule", Reason: "daily"}); !a.OK || !a.Changed {
		t.Fatalf("seal: %+v", a)
	}
	if a := e.do(Request{Action: "verify-seal"}); !a.OK || !strings.Contains(a.Message, "the seal holds") {
		t.Fatalf("verify an untouched day: %+v", a)
	}
	rec.Timestamp = yesterday.Add(time.Hour) // dated before the seal
	if _, err := w.Write(context.Background(), rec, "cs_test_sealedDay.dropped"); err != nil {
		t.Fatal(err)
	}
	a := e.do(Request{Action: "verify-seal"})
	rep, _ := a.Data.(auditseal.Report)
	if a.OK || !strings.Contains(a.Message, "THE SEAL IS BROKEN: 1 added") || len(rep.Added) != 1 ||
		!strings.HasSuffix(rep.Added[0].Key, ".dropped.json") || rep.Added[0].Arrival != auditseal.DatedBeforeSeal {
		t.Fatalf("verify after a record was added: %+v", a)
	}
}

// quarantinedAtGate2 is an order whose verdict gate 2 stopped: it names
// the TMM three times, more than the density the filter replaces alone.
func (e *env) quarantinedAtGate2(id string) {
	e.t.Helper()
	ctx := context.Background()
	e.claim(id, oracle.StatusPaid)
	a := oracle.Analysis{Verdict: oracle.VerdictAmber, Summary: "The TMM reads a steady weekend trade. The TMM sees room to grow.", Breakdown: map[string]oracle.DimensionNote{}}
	for _, d := range oracle.Dimensions {
		a.Breakdown[d] = oracle.DimensionNote{Verdict: oracle.VerdictGreen, Analysis: "According to the TMM, " + d + " holds for a bakery open on Sundays."}
	}
	canonical, err := a.CanonicalJSON()
	if err != nil {
		e.t.Fatal(err)
	}
	_, lease, err := e.orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.orders.StoreVerdict(ctx, id, lease, store.StoredVerdict{Canonical: string(canonical), Hash: e.h.Hasher.Hash(string(canonical)), Label: a.Verdict,
		Model: "m", PromptVersion: "v1", ExpiresAt: e.clock.Now().Add(time.Hour)}); err != nil {
		e.t.Fatal(err)
	}
	if ok, err := e.orders.QuarantineReady(ctx, id, store.Quarantine{Gate: "mailer", Terms: []string{"cat1.tmm"}, Record: "quarantine/" + id + "/mailer-1.json"}); err != nil || !ok {
		e.t.Fatalf("quarantine: %v %v", ok, err)
	}
}

// TestDeliverCleanedServesTheQuarantinedVerdictOnce: the verdict stopped
// at gate 2 is stored with its terms replaced and emailed once; the same
// request again changes nothing.
func TestDeliverCleanedServesTheQuarantinedVerdictOnce(t *testing.T) {
	e := newEnv(t)
	id := "cs_test_quarantinedOne"
	e.quarantinedAtGate2(id)
	r := Request{Action: "deliver", Session: id, AuthorisedBy: by, Reason: why}
	if a := e.do(r); a.OK || !strings.Contains(a.Message, "mode cleaned") {
		t.Fatalf("deliver without a mode: %+v", a)
	}
	r.Mode = "cleaned"
	if a := e.do(r); !a.OK || !a.Changed {
		t.Fatalf("deliver cleaned: %+v", a)
	}
	if a := e.do(r); !a.OK || a.Changed || !strings.Contains(a.Message, "already READY") {
		t.Fatalf("deliver cleaned again: %+v", a)
	}
	o, _, _ := e.orders.Get(context.Background(), id)
	if o.Status != oracle.StatusReady || strings.Contains(o.Verdict, "TMM") || !strings.Contains(o.Verdict, "our analysis") || o.FilterVersion == "" {
		t.Fatalf("order = %s, verdict %s", o.Status, o.Verdict)
	}
	if jobs := e.jobs("MailQueue"); len(jobs) != 1 || jobs[0].Kind != oracle.MailVerdict {
		t.Fatalf("mail jobs %+v", jobs)
	}
	if recs := e.operatorRecords(); len(recs) != 1 || recs[0].Operator.Outcome != "cleaned verdict delivered" {
		t.Fatalf("operator records %+v", recs)
	}
}

// TestRedriveSendsWhatWasGivenUpOnOnce: the mail dead letters and the
// recorded jobs of the dead-letter queue go back to their queues, once,
// each redrive taking its own kind from the one queue every source shares.
func TestRedriveSendsWhatWasGivenUpOnOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ledger := store.NewLedger(awsenv.NewTables(e.f.AWS), e.f.Ref("LedgerTable"), e.clock.Now)
	e.h.DeadQueues = map[string]DeadQueue{
		"generate":  {Name: "oracle-dlq", Source: e.h.Generate, Takes: generateJob},
		"mail-jobs": {Name: "oracle-dlq", Source: e.h.Mail, Takes: mailJob},
	}

	id := "cs_test_mailGivenUp"
	e.claim(id, oracle.StatusFailed)
	if _, err := ledger.RecordMailDeadLetter(ctx, store.MailDeadLetter{SessionID: id, Kind: oracle.MailFailed, Transport: "ses", Class: "transient", DeadAt: e.clock.Now()}, time.Hour); err != nil {
		t.Fatal(err)
	}
	job := `{"session_id":"cs_test_jobGivenUp","reason":"paid"}`
	mailJob := `{"session_id":"cs_test_mailJobGivenUp","kind":"verdict","attempt":4}`
	for i, body := range []string{job, "not a job", mailJob} {
		d := store.DeadLetter{Queue: "oracle-dlq", MessageID: fmt.Sprintf("m-%d", i)}
		switch i {
		case 0:
			d.SessionID, d.Reason, d.Job = "cs_test_jobGivenUp", "paid", body
		case 1:
			d.BodySHA256, d.BodyBytes = "00ff", len(body)
		case 2:
			d.SessionID, d.Kind, d.Attempt, d.Job = "cs_test_mailJobGivenUp", "verdict", 4, body
		}
		if _, err := ledger.RecordDeadLetter(ctx, d, time.Hour); err != nil {
			t.Fatal(err)
		}
	}

	if a := e.do(Request{Action: "redrive", Queue: "billing", AuthorisedBy: by, Reason: why}); a.OK || !strings.Contains(a.Message, "redrive needs a queue") {
		t.Fatalf("an unknown queue: %+v", a)
	}
	mail := Request{Action: "redrive", Queue: "mail", AuthorisedBy: by, Reason: why}
	if a := e.do(mail); !a.OK || !a.Changed || !strings.HasPrefix(a.Message, "1 emails") {
		t.Fatalf("redrive mail: %+v", a)
	}
	if a := e.do(mail); !a.OK || a.Changed {
		t.Fatalf("redrive mail again: %+v", a)
	}
	if jobs := e.jobs("MailQueue"); len(jobs) != 1 || jobs[0].SessionID != id || jobs[0].Kind != oracle.MailFailed {
		t.Fatalf("mail jobs %+v", jobs)
	}

	gen := Request{Action: "redrive", Queue: "generate", AuthorisedBy: by, Reason: why}
	if a := e.do(gen); !a.OK || !a.Changed || !strings.Contains(a.Message, "1 jobs of oracle-dlq sent again; 1 messages were no job") {
		t.Fatalf("redrive generate: %+v", a)
	}
	if a := e.do(gen); !a.OK || a.Changed {
		t.Fatalf("redrive generate again: %+v", a)
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 || jobs[0].SessionID != "cs_test_jobGivenUp" {
		t.Fatalf("generate jobs %+v, want the generate job only", jobs)
	}
	jobs := Request{Action: "redrive", Queue: "mail-jobs", AuthorisedBy: by, Reason: why}
	if a := e.do(jobs); !a.OK || !a.Changed || !strings.Contains(a.Message, "1 jobs of oracle-dlq sent again") {
		t.Fatalf("redrive mail-jobs: %+v", a)
	}
	if jobs := e.jobs("MailQueue"); len(jobs) != 1 || jobs[0].SessionID != "cs_test_mailJobGivenUp" || jobs[0].Kind != oracle.MailVerdict {
		t.Fatalf("mail jobs %+v, want the dead mail job only", jobs)
	}
	if recs := e.operatorRecords(); len(recs) != 3 {
		t.Fatalf("%d operator records, want one per redrive that sent something", len(recs))
	}
}

// TestRedriveSendsDeadChatMailJobsBack: a chat account's mail job names
// no session; one the dead-letter queue kept goes back to the mail queue
// whole (its account and nonce), so the mailer's record of it still sends
// it at most once.
func TestRedriveSendsDeadChatMailJobsBack(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ledger := store.NewLedger(awsenv.NewTables(e.f.AWS), e.f.Ref("LedgerTable"), e.clock.Now)
	e.h.DeadQueues = map[string]DeadQueue{"mail-jobs": {Name: "oracle-mail-dlq", Source: e.h.Mail}}
	dead := queue.Job{Kind: oracle.MailChatPaymentFailed, Account: "hmac-sha256:0123456789abcdef0123456789abcdef", Nonce: "in_1MtHbELkdIwHu7ix", Attempt: 1}
	body, _ := json.Marshal(dead)
	if _, err := ledger.RecordDeadLetter(ctx, store.DeadLetter{Queue: "oracle-mail-dlq", MessageID: "m-chat", Kind: string(dead.Kind), Attempt: 1, Job: string(body)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	r := Request{Action: "redrive", Queue: "mail-jobs", AuthorisedBy: by, Reason: why}
	if a := e.do(r); !a.OK || !a.Changed || !strings.HasPrefix(a.Message, "1 jobs of oracle-mail-dlq sent again") {
		t.Fatalf("redrive: %+v", a)
	}
	if a := e.do(r); !a.OK || a.Changed {
		t.Fatalf("redrive again: %+v", a)
	}
	if jobs := e.jobs("MailQueue"); len(jobs) != 1 || jobs[0] != dead {
		t.Fatalf("mail jobs %+v, want %+v", jobs, dead)
	}
}

// TestReportGivesTheFiguresOfItsRange: report reads the audit records of
// the range it is given (the last 30 days by default), refuses a range it
// cannot read, and shows no session id.
func TestReportGivesTheFiguresOfItsRange(t *testing.T) {
	e := newEnv(t)
	s3 := awsenv.S3(e.f.AWS)
	e.h.Figures = func(ctx context.Context, from, to time.Time) (auditfigures.Figures, error) {
		return auditfigures.Compute(ctx, s3, e.f.Ref("AuditBucket"), from, to)
	}
	w := audit.NewWriter(s3, e.f.Ref("AuditBucket"))
	paid := func(id string, created time.Time) {
		r := audit.Record{Timestamp: created, SessionCreated: created, SessionID: id, Tier: "full", Status: audit.StatusOK, Source: audit.SourceWebhook,
			Event: audit.EventCheckoutCompleted, Livemode: true, AmountTotal: 500, Currency: "cad", OrderStatus: "PAID", LatencyMS: 120}
		if _, err := w.Write(context.Background(), r, audit.RecordID(id, audit.NamePaid)); err != nil {
			t.Fatal(err)
		}
	}
	now := e.clock.Now()
	paid("cs_live_paidToday0000000000", now)
	paid("cs_live_paidLongAgo00000000", now.AddDate(0, 0, -40))

	a := e.do(Request{Action: "report"})
	f, _ := a.Data.(auditfigures.Figures)
	if !a.OK || f.From != "2026-10-26" || f.To != "2026-11-24" || f.Paid.Sessions != 1 || len(f.Revenue.Totals) != 1 || f.Revenue.Totals[0].AmountNet != 500 {
		t.Fatalf("report of the last 30 days: %+v\n%s", a, a.Text)
	}
	if strings.Contains(a.Text, "cs_live_paid") || !strings.Contains(a.Text, "5.00 CAD") {
		t.Fatalf("the report's text:\n%s", a.Text)
	}
	if a := e.do(Request{Action: "report", From: "2026-10-01"}); !a.OK || a.Data.(auditfigures.Figures).Paid.Sessions != 2 {
		t.Fatalf("report from October: %+v", a)
	}
	if recs := e.operatorRecords(); len(recs) != 0 {
		t.Fatalf("a report was recorded as a change: %+v", recs)
	}
	for _, c := range []struct {
		r    Request
		says string
	}{
		{Request{Action: "report", From: "yesterday"}, "from is a date"},
		{Request{Action: "report", From: "2026-11-24", To: "2026-11-01"}, "ends (2026-11-01) before it starts"},
		{Request{Action: "report", From: "2025-01-01", To: "2026-11-24"}, "query Athena"},
	} {
		if a := e.do(c.r); a.OK || !strings.Contains(a.Message, c.says) {
			t.Errorf("%+v: %+v", c.r, a)
		}
	}
}

// A redrive's error names the job it could not send: by its session's
// name, or by what a mail job of no session answers.
func TestJobName(t *testing.T) {
	for _, tc := range []struct {
		job  queue.Job
		want string
	}{
		{queue.Job{SessionID: "cs_test_a1b2c3d4e5f6g7h8i9j0", Reason: queue.ReasonPaid}, oracle.ShortID("cs_test_a1b2c3d4e5f6g7h8i9j0") + "'s job"},
		{queue.Job{Kind: oracle.MailChatSignIn, Account: "hmac-sha256:0123456789abcdef0123456789abcdef", Nonce: "req_0123456789"}, "the chat_signin job req_0123456789"},
		{queue.Job{Kind: oracle.MailAutoresponse, Inbox: "inbound/m1"}, "the autoresponse job of inbound/m1"},
	} {
		if got := jobName(tc.job); got != tc.want {
			t.Errorf("jobName(%+v) = %q, want %q", tc.job, got, tc.want)
		}
	}
}
