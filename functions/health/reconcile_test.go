package main

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/store"
)

// alerts records what was raised.
type alerts struct {
	mu   sync.Mutex
	list []alert.Alert
}

func (a *alerts) Raise(_ context.Context, x alert.Alert) {
	a.mu.Lock()
	a.list = append(a.list, x)
	a.mu.Unlock()
}

// take returns what was raised since the last take, as "SEVERITY KIND session".
func (a *alerts) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, x := range a.list {
		out = append(out, string(x.Severity)+" "+string(x.Kind)+" "+x.Session)
	}
	a.list = nil
	return out
}

type reconcileEnv struct {
	r        *Reconciler
	orders   *store.Orders
	clock    *testkit.Clock
	alerts   *alerts
	sqs      *sqs.Client
	generate string
}

func newReconcileEnv(t *testing.T) *reconcileEnv {
	t.Helper()
	f := provision.ForTest(t, nil)
	e := &reconcileEnv{clock: testkit.NewClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)), alerts: &alerts{}, sqs: sqs.NewFromConfig(f.AWS), generate: f.Ref("GenerateQueue")}
	db := awsenv.NewTables(f.AWS)
	e.orders = store.NewOrders(db, f.Ref("OrdersTable"), e.clock.Now)
	ledger := store.NewLedger(db, f.Ref("LedgerTable"), e.clock.Now)
	hasher, err := audit.NewHasher("a-pepper-for-the-health-tests")
	if err != nil {
		t.Fatal(err)
	}
	log := obs.NewLogger(&testkit.Buffer{}, "DEBUG")
	queues := queue.NewClient(f.AWS)
	mail := queue.NewSender(queues, f.Ref("MailQueue"), e.clock.Now)
	e.r = &Reconciler{
		Index:  store.NewOrderIndex(awsenv.NewQueries(f.AWS), f.Ref("OrdersTable")),
		Orders: e.orders,
		Fulfil: &fulfil.Service{Orders: e.orders, Generate: queue.NewSender(queues, e.generate, e.clock.Now), Mail: mail,
			Audit:  &audit.Recorder{Writer: audit.NewWriter(awsenv.S3(f.AWS), f.Ref("AuditBucket")), Alerts: e.alerts, Log: log},
			Alerts: e.alerts, Metrics: &testkit.Metrics{}, Hasher: hasher, Log: log, Now: e.clock.Now, Lease: fulfil.DefaultLease, Retention: 90 * 24 * time.Hour},
		Mail: mail, Ledger: ledger, Alerts: e.alerts, Log: log, Now: e.clock.Now, Sessions: map[bool]Sessions{},
		StuckAfter: DefaultStuckAfter, MailStuckAfter: DefaultMailStuckAfter, ReconcileWindow: DefaultReconcileWindow,
		WebhookGrace: DefaultWebhookGrace, RealertEvery: DefaultRealertEvery, Retention: 90 * 24 * time.Hour,
	}
	return e
}

// claim records a paid order as the webhook does, its job enqueued.
func (e *reconcileEnv) claim(t *testing.T, id string) {
	t.Helper()
	o := oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "q", AmountTotal: 100, Currency: "cad",
		Source: oracle.SourceWebhook, Expires: e.clock.Now().Add(90 * 24 * time.Hour)}
	c, err := e.orders.ClaimOrder(context.Background(), o, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.orders.JobEnqueued(context.Background(), id, c.Lease); err != nil {
		t.Fatal(err)
	}
}

func (e *reconcileEnv) run(t *testing.T) health.Record {
	t.Helper()
	var rec health.Record
	for _, c := range e.r.Run(context.Background(), &rec) {
		if c.Status == health.Critical && !strings.Contains(c.Detail, "stuck again") && rec.Reconcile.StillStuck == 0 {
			t.Fatalf("check %+v", c)
		}
	}
	return rec
}

// jobs drains the generate queue and returns the sessions of its jobs.
func (e *reconcileEnv) jobs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, body := range testkit.Drain(t, e.sqs, e.generate) {
		j, err := queue.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j.SessionID)
	}
	return out
}

// TestStuckOrdersAreFoundThroughTheIndexAndSentAgain: a PAID order whose
// job was lost is sent again once, WARN; found stuck again, CRITICAL. A
// parked order is not stuck before its job comes back, nor one that moved
// recently.
func TestStuckOrdersAreFoundThroughTheIndexAndSentAgain(t *testing.T) {
	ctx := context.Background()
	e := newReconcileEnv(t)
	lost, parked, fresh := "cs_test_healthlost", "cs_test_healthparked", "cs_test_healthfresh"
	e.claim(t, lost)
	e.claim(t, parked)
	if _, err := e.orders.Park(ctx, parked, e.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(20 * time.Minute)
	e.claim(t, fresh)
	e.jobs(t) // nothing is on the queue: the claims above sent no job

	rec := e.run(t)
	if rec.Reconcile.Stuck != 1 || rec.Reconcile.Redelivered != 1 || rec.Orders["PAID"] != 3 {
		t.Fatalf("reconciliation %+v orders %v, want the lost order alone sent again", rec.Reconcile, rec.Orders)
	}
	if got := e.jobs(t); len(got) != 1 || got[0] != lost {
		t.Fatalf("jobs sent %v, want one for %s", got, lost)
	}
	if got := e.alerts.take(); len(got) != 1 || got[0] != "WARN ORDER_STUCK "+lost {
		t.Fatalf("alerts %q, want one WARN ORDER_STUCK", got)
	}
	// At once again: the resend is progress.
	if rec := e.run(t); rec.Reconcile.Stuck != 0 || len(e.jobs(t)) != 0 || len(e.alerts.take()) != 0 {
		t.Fatalf("a second run at once did something: %+v", rec.Reconcile)
	}
	// Still no progress after STUCK_AFTER (and the parked job overdue too).
	e.clock.Add(time.Hour)
	rec = e.run(t)
	if rec.Reconcile.Redelivered != 3 || rec.Reconcile.StillStuck != 1 {
		t.Fatalf("reconciliation %+v, want all three sent again and one stuck again", rec.Reconcile)
	}
	got := strings.Join(e.alerts.take(), ",")
	if !strings.Contains(got, "CRITICAL ORDER_STUCK "+lost) || strings.Count(got, "CRITICAL") != 1 {
		t.Fatalf("alerts %q, want the lost order CRITICAL, the others WARN", got)
	}
}

// startsAtOnce is a generator quick enough to start on a redelivered job
// while the run is still walking the orders.
type startsAtOnce struct {
	Fulfiller
	orders *store.Orders
}

func (f startsAtOnce) Redeliver(ctx context.Context, r fulfil.Reclaimer, seen oracle.Order) (bool, error) {
	sent, err := f.Fulfiller.Redeliver(ctx, r, seen)
	if err != nil || !sent {
		return sent, err
	}
	_, _, err = f.orders.StartGeneration(ctx, seen.SessionID, time.Minute)
	return sent, err
}

// TestAnOrderIsHandledOncePerRun: a stuck PAID order sent again and made
// GENERATING before the run reads the GENERATING orders is not found
// stuck a second time in the same run (nor escalated to CRITICAL).
func TestAnOrderIsHandledOncePerRun(t *testing.T) {
	e := newReconcileEnv(t)
	e.r.Fulfil = startsAtOnce{Fulfiller: e.r.Fulfil, orders: e.orders}
	e.r.StuckAfter = 0 // a moved order would be stuck at once
	id := "cs_test_healthmoving"
	e.claim(t, id)
	e.clock.Add(time.Minute)

	rec := e.run(t)
	if r := rec.Reconcile; r.Stuck != 1 || r.Redelivered != 1 || r.StillStuck != 0 {
		t.Errorf("reconciliation %+v, want one order sent again once", r)
	}
	if got := e.jobs(t); len(got) != 1 {
		t.Errorf("jobs sent %v, want one", got)
	}
	if got := e.alerts.take(); len(got) != 1 || got[0] != "WARN ORDER_STUCK "+id {
		t.Errorf("alerts %q, want one WARN ORDER_STUCK", got)
	}
}

// TestOrdersWaitingForTheOperatorAreRemindedDaily: an order waiting for
// the operator (DROPPED, HELD, QUARANTINED, FAILED) is alerted again every
// 24 h, counted from when it began waiting, until it is resolved
// (CACHE_ALERT's repeat, SILENT_DROP's escalation, SOS_FILTER's daily
// re-alert), each state with its own kind and severity: never before 24 h,
// once when they have passed, not again within the next 24 h, again after.
func TestOrdersWaitingForTheOperatorAreRemindedDaily(t *testing.T) {
	ctx := context.Background()
	// generation takes a claimed order's generation lease, as the generator does.
	generation := func(t *testing.T, e *reconcileEnv, id string) string {
		t.Helper()
		e.claim(t, id)
		_, lease, err := e.orders.StartGeneration(ctx, id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return lease
	}
	for _, tc := range []struct {
		status oracle.Status
		want   string // the reminder, "SEVERITY KIND"
		wait   func(t *testing.T, e *reconcileEnv, id string)
	}{
		{oracle.StatusDropped, "CRITICAL ORDER_UNRESOLVED", func(t *testing.T, e *reconcileEnv, id string) {
			// As the webhook claims a paid session without a usable tier
			// or query: its job is the customer's notice.
			o := oracle.Order{SessionID: id, Status: oracle.StatusDropped, Failure: "missing_query", AmountTotal: 100, Currency: "cad",
				Source: oracle.SourceWebhook, Expires: e.clock.Now().Add(90 * 24 * time.Hour)}
			c, err := e.orders.ClaimOrder(ctx, o, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.orders.JobEnqueued(ctx, id, c.Lease); err != nil {
				t.Fatal(err)
			}
		}},
		{oracle.StatusHeld, "ERROR ORDER_UNRESOLVED", func(t *testing.T, e *reconcileEnv, id string) {
			if ok, err := e.orders.Hold(ctx, id, generation(t, e, id), "crosscheck"); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}},
		{oracle.StatusQuarantined, "CRITICAL QUARANTINE_UNRESOLVED", func(t *testing.T, e *reconcileEnv, id string) {
			q := store.Quarantine{Gate: "gate1", Terms: []string{"t1"}, Record: "quarantine/" + id, FilterVersion: "v1"}
			if ok, err := e.orders.QuarantineGeneration(ctx, id, generation(t, e, id), q); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}},
		{oracle.StatusFailed, "ERROR ORDER_UNRESOLVED", func(t *testing.T, e *reconcileEnv, id string) {
			e.claim(t, id)
			if ok, err := e.orders.MarkFailed(ctx, id, "model_unavailable"); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			t.Parallel()
			e := newReconcileEnv(t)
			id := "cs_test_remind" + strings.ToLower(string(tc.status))
			tc.wait(t, e, id)
			if o, _, err := e.orders.Get(ctx, id); err != nil || o.Status != tc.status {
				t.Fatalf("the order is %s (%v), want %s", o.Status, err, tc.status)
			}
			// reminders runs the job after the clock moved by d and
			// returns the reminders it raised for the order.
			reminders := func(d time.Duration) []string {
				e.clock.Add(d)
				e.run(t)
				var out []string
				for _, a := range e.alerts.take() {
					if a == tc.want+" "+id || strings.Contains(a, "_UNRESOLVED") {
						out = append(out, a)
					}
				}
				return out
			}
			for _, step := range []struct {
				after time.Duration // since the last step
				want  int
				when  string
			}{
				{time.Hour, 0, "an hour after it began waiting"},
				{23*time.Hour - time.Minute, 0, "a minute before 24 h"},
				{time.Minute, 1, "24 h after it began waiting"},
				{time.Hour, 0, "an hour after the reminder"},
				{23*time.Hour - time.Minute, 0, "a minute before the next 24 h"},
				{time.Minute, 1, "24 h after the reminder"},
				{25 * time.Hour, 1, "the day after"},
			} {
				got := reminders(step.after)
				if len(got) != step.want || (step.want == 1 && got[0] != tc.want+" "+id) {
					t.Fatalf("%s: reminders %q, want %d %s", step.when, got, step.want, tc.want)
				}
			}
		})
	}
}

// TestAHeldOrderIsRemindedOfWhyItIsHeld: an order held at its claim because
// its amount is not its tier's price is reminded as such, not as one the
// crosscheck held.
func TestAHeldOrderIsRemindedOfWhyItIsHeld(t *testing.T) {
	ctx := context.Background()
	e := newReconcileEnv(t)
	held := "cs_test_healthamount"
	o := oracle.Order{SessionID: held, Status: oracle.StatusHeld, Failure: oracle.HoldAmountMismatch, Tier: oracle.TierStrategy, Query: "q",
		AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook, Expires: e.clock.Now().Add(90 * 24 * time.Hour)}
	c, err := e.orders.ClaimOrder(ctx, o, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.orders.JobEnqueued(ctx, held, c.Lease); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(25 * time.Hour)
	e.run(t)
	e.alerts.mu.Lock()
	list := e.alerts.list
	e.alerts.mu.Unlock()
	var details []string
	for _, a := range list {
		if a.Kind == alert.OrderUnresolved && a.Session == held {
			details = append(details, a.Detail)
		}
	}
	if len(details) != 1 || !strings.Contains(details[0], "its amount is not its tier's price") || strings.Contains(details[0], "crosscheck") {
		t.Errorf("reminders %q, want one saying the amount did not match", details)
	}
}

// TestTheIndexProjectsWhatTheJobReads: the template's by_status index
// projects exactly store.IndexedAttributes, which the job decides from
// before it reads an order whole.
func TestTheIndexProjectsWhatTheJobReads(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range tmpl.Resources["OrdersTable"].Properties["GlobalSecondaryIndexes"].([]any) {
		g := g.(map[string]any)
		if g["IndexName"] != store.StatusIndex {
			continue
		}
		for _, a := range g["Projection"].(map[string]any)["NonKeyAttributes"].([]any) {
			got = append(got, a.(string))
		}
	}
	want := store.IndexedAttributes()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the template projects %v, the store reads %v", got, want)
	}
}

// TestCorruptStoredVerdictIsCritical is CACHE_HEALTH VC-4 and
// CACHE_ALERT VC-4 and failure mode 4: a READY order whose stored verdict
// no longer parses, or no longer matches its hash, is found by the
// integrity sample, CRITICAL, and treated as every reader treats it: set
// aside (its text kept), one VERDICT_CORRUPT naming the order by its name
// only, its generation queued again. The next run raises nothing and
// queues nothing. An intact verdict is left as it was.
func TestCorruptStoredVerdictIsCritical(t *testing.T) {
	ctx := context.Background()
	e := newReconcileEnv(t)
	e.jobs(t) // the claims' own
	hasher := e.r.Fulfil.(*fulfil.Service).Hasher
	const (
		intact   = "cs_test_healthintactA1B2C3D4E5F6G7H8I9J0K1L2M3N4O5P6"
		unparsed = "cs_test_healthunparsedA1B2C3D4E5F6G7H8I9J0K1L2M3N4O5P6"
		tampered = "cs_test_healthtamperedA1B2C3D4E5F6G7H8I9J0K1L2M3N4O5P6"
	)
	good := `{"summary":"A clear plan.","verdict":"GREEN"}`
	stored := map[string]string{
		intact:   hasher.Hash(good),
		unparsed: hasher.Hash("{not json"),
		tampered: hasher.Hash(`{"summary":"Something else.","verdict":"RED"}`),
	}
	canonical := map[string]string{intact: good, unparsed: "{not json", tampered: good}
	for id, hash := range stored {
		e.claim(t, id)
		_, lease, err := e.orders.StartGeneration(ctx, id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.orders.StoreVerdict(ctx, id, lease, store.StoredVerdict{Canonical: canonical[id], Hash: hash, Label: oracle.VerdictGreen,
			PromptVersion: "v", Model: "m", FilterVersion: "f", ExpiresAt: e.clock.Now().Add(90 * 24 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	e.jobs(t)
	guard := &repair.Guard{Orders: e.orders, Hash: hasher.Hash, Generate: e.r.Fulfil.(*fulfil.Service).Generate,
		Alerts: e.alerts, Log: obs.NewLogger(&testkit.Buffer{}, "DEBUG")}
	check := integrityCheck(e.r.Index.(*store.OrderIndex), e.orders, guard, 90*24*time.Hour, e.clock.Now, func() float64 { return 0 })
	status, detail, err := check.Run(ctx, &health.Record{})
	if err != nil || status != health.Critical || !strings.Contains(detail, "3 stored verdict(s) sampled, 2 corrupt") {
		t.Fatalf("integrity %s %q %v, want critical with two corrupt of three", status, detail, err)
	}
	raised := e.alerts.list
	got := strings.Join(e.alerts.take(), ",")
	for _, id := range []string{unparsed, tampered} {
		if strings.Count(got, "CRITICAL VERDICT_CORRUPT "+id) != 1 {
			t.Errorf("alerts %q, want one VERDICT_CORRUPT for %s", got, oracle.ShortID(id))
		}
		o, _, err := e.orders.Get(ctx, id)
		if err != nil || o.Status != oracle.StatusPaid || o.Verdict != "" || o.SetAsideVerdict != canonical[id] || o.SetAsideAt == nil {
			t.Errorf("%s after the sample: %s, verdict %q, set aside %q at %v (%v); want PAID with its verdict set aside",
				oracle.ShortID(id), o.Status, o.Verdict, o.SetAsideVerdict, o.SetAsideAt, err)
		}
	}
	for _, a := range raised {
		if text := a.Text(e.clock.Now()); strings.Contains(text, a.Session) {
			t.Errorf("the alert holds the whole order id: %s", text)
		}
	}
	if strings.Contains(got, intact) {
		t.Errorf("the intact verdict was alerted: %q", got)
	}
	if o, _, _ := e.orders.Get(ctx, intact); o.Status != oracle.StatusReady || o.Verdict != good || o.SetAsideAt != nil {
		t.Fatalf("the sample changed the intact order: %+v", o)
	}
	jobs := e.jobs(t)
	slices.Sort(jobs)
	if want := []string{tampered, unparsed}; !slices.Equal(jobs, want) {
		t.Fatalf("generate jobs %v, want the two corrupt orders' repairs", jobs)
	}

	// The next run: nothing corrupt is READY any more.
	status, detail, err = check.Run(ctx, &health.Record{})
	if err != nil || status != health.OK || !strings.Contains(detail, "1 stored verdict(s) sampled, all intact") {
		t.Fatalf("the next run: %s %q %v, want the intact one alone", status, detail, err)
	}
	if again := e.alerts.take(); len(again) != 0 {
		t.Fatalf("the next run raised %q", again)
	}
	if again := e.jobs(t); len(again) != 0 {
		t.Fatalf("the next run queued %v", again)
	}
}

// askedSessions is Stripe as far as the health job asks it about one
// session: it records whom it was asked about and answers unpaid.
type askedSessions struct {
	mu    sync.Mutex
	asked []string
}

func (s *askedSessions) CompletedSessions(context.Context, time.Time, time.Time, func(oracle.Session) error) error {
	return nil
}

func (s *askedSessions) RetrieveSession(_ context.Context, id string) (oracle.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, id)
	return oracle.Session{ID: id, PaymentStatus: "unpaid"}, nil
}

func (s *askedSessions) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.asked
	s.asked = nil
	return out
}

// TestUnconfirmedAgentOrdersAreRemindedUntilResolved: an agent order left
// AWAITING_PAYMENT (its settlement unconfirmed) is X402_SETTLE_UNCONFIRMED
// again once it has waited STUCK_AFTER (its request may still be settling
// it before), then every 24 h until the operator confirms or voids it.
// Found through the status index like every watched order; never looked
// up in Stripe, whose own AWAITING_PAYMENT sessions keep their path (asked
// about once a day old, never reminded).
func TestUnconfirmedAgentOrdersAreRemindedUntilResolved(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		resolve func(t *testing.T, e *reconcileEnv, o oracle.Order)
	}{
		{"voided", func(t *testing.T, e *reconcileEnv, o oracle.Order) {
			// As make ops ACTION=x402-void records it.
			o.Status, o.Failure = oracle.StatusPaymentFailed, "voided_by_operator"
			if _, err := e.orders.ClaimOrder(ctx, o, time.Minute); err != nil {
				t.Fatal(err)
			}
		}},
		{"confirmed", func(t *testing.T, e *reconcileEnv, o oracle.Order) {
			// As make ops ACTION=x402-confirm records it.
			o.Agent.Transaction = "0x" + strings.Repeat("ab", 32)
			if _, err := e.r.Fulfil.(*fulfil.Service).ClaimPaid(ctx, o); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newReconcileEnv(t)
			stripe := &askedSessions{}
			e.r.Sessions = map[bool]Sessions{true: stripe, false: stripe}
			agent := oracle.Order{SessionID: "x402_test_" + strings.Repeat("R", 32), Status: oracle.StatusAwaitingPayment, Tier: oracle.TierQuick, Query: "q",
				AmountTotal: oracle.TierQuick.PriceUSDCAtomic(), Currency: oracle.CurrencyUSDC, Source: oracle.SourceX402,
				SessionCreated: e.clock.Now(), Expires: e.clock.Now().Add(90 * 24 * time.Hour),
				Agent: &oracle.AgentPayment{Network: "eip155:84532", Payer: "0x857b06519E91e3A54538791bDbb0E22373e36b66", Endpoint: "/x402/query"}}
			card := oracle.Order{SessionID: "cs_test_remindawaiting", Status: oracle.StatusAwaitingPayment, Tier: oracle.TierQuick, Query: "q",
				AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: e.clock.Now(), Expires: e.clock.Now().Add(90 * 24 * time.Hour)}
			for _, o := range []oracle.Order{agent, card} {
				if _, err := e.orders.ClaimOrder(ctx, o, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			want := "ERROR X402_SETTLE_UNCONFIRMED " + agent.SessionID
			for _, step := range []struct {
				after    time.Duration // since the last step
				resolve  bool          // the operator resolves it first
				reminded int
				asked    []string // the sessions Stripe is asked about
				when     string
			}{
				{10 * time.Minute, false, 0, nil, "ten minutes after its claim: still settling"},
				{5 * time.Minute, false, 1, nil, "STUCK_AFTER after its claim"},
				{time.Hour, false, 0, nil, "an hour after the reminder"},
				{22*time.Hour + 59*time.Minute, false, 0, []string{card.SessionID}, "a minute before the next 24 h (the card's session a day old)"},
				{time.Minute, false, 1, []string{card.SessionID}, "24 h after the reminder"},
				{24 * time.Hour, true, 0, []string{card.SessionID}, "the day after, confirmed or voided"},
				{72 * time.Hour, false, 0, []string{card.SessionID}, "days after"},
			} {
				e.clock.Add(step.after)
				if step.resolve {
					tc.resolve(t, e, agent)
				}
				rec := e.run(t)
				var got []string
				for _, a := range e.alerts.take() {
					if strings.Contains(a, "X402_SETTLE_UNCONFIRMED") || strings.Contains(a, card.SessionID) {
						got = append(got, a)
					}
				}
				if len(got) != step.reminded || (step.reminded == 1 && got[0] != want) || rec.Reconcile.Reminded != step.reminded {
					t.Fatalf("%s: reminders %q (%d counted), want %d %s", step.when, got, rec.Reconcile.Reminded, step.reminded, want)
				}
				if asked := stripe.take(); !slices.Equal(asked, step.asked) {
					t.Fatalf("%s: Stripe was asked about %q, want %q", step.when, asked, step.asked)
				}
			}
		})
	}
}
