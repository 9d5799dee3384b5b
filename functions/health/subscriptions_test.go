package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

// subsEnv is the subscription reconciliation against moto and the fake
// Stripe over HTTP, which delivers no events: each one is lost.
type subsEnv struct {
	r        *SubscriptionReconciler
	subs     *subscription.Store
	billing  *stripex.Billing
	stripe   string
	accounts *chat.Store
	clock    *testkit.Clock
	alerts   *alerts
}

func newSubsEnv(t *testing.T) *subsEnv {
	t.Helper()
	f := provision.ForTest(t, nil)
	db := awsenv.NewTables(f.AWS)
	e := &subsEnv{clock: testkit.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)), alerts: &alerts{}}
	fake := fakestripe.New(fakestripe.Options{Clock: e.clock.Now})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	e.stripe = srv.URL
	e.billing = stripex.NewBilling(secret.Static("sk_test_health_subs"), stripex.Options{BaseURL: srv.URL})
	e.subs = subscription.NewStore(db, awsenv.NewQueries(f.AWS), f.Ref("ChatTable"))
	hasher, err := audit.NewHasher("a-pepper-for-the-health-tests")
	if err != nil {
		t.Fatal(err)
	}
	e.accounts = chat.NewStore(db, f.Ref("ChatTable"), hasher, e.clock.Now)
	e.r = &SubscriptionReconciler{Billing: map[bool]ChatBilling{false: e.billing}, Store: e.subs,
		Ledger: store.NewLedger(db, f.Ref("LedgerTable"), e.clock.Now), Alerts: e.alerts,
		Log: obs.NewLogger(&testkit.Buffer{}, "DEBUG"), Now: e.clock.Now}
	return e
}

var stayOnThePage = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}

// subscribe pays a subscription for account and returns its id and customer.
func (e *subsEnv) subscribe(t *testing.T, account string) (string, string) {
	t.Helper()
	ctx := context.Background()
	cs, err := e.billing.CreateChatCheckout(ctx, stripex.ChatCheckout{Account: account, Email: "ana@example.com", SiteURL: "https://oracle.example"}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stayOnThePage.PostForm(e.stripe+"/pay/"+cs.ID, url.Values{"email": {"ana@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var id, customer string
	err = e.billing.ChatSubscriptions(ctx, time.Time{}, func(s stripex.Subscription) error {
		if s.Account == account {
			id, customer = s.ID, s.Customer
		}
		return nil
	})
	if err != nil || id == "" {
		t.Fatalf("no subscription for %s: %v", account, err)
	}
	return id, customer
}

// run reconciles once, a minute after the last run.
func (e *subsEnv) run(t *testing.T) health.Check {
	t.Helper()
	e.clock.Add(time.Minute)
	return e.r.Run(context.Background())
}

// The subscriptions whose events were lost are stored as Stripe has them,
// each alerted once: a subscription the table lacks, a cancellation made
// in the portal; what agrees is left alone, and so is a state an event
// stored after the listing began.
func TestReconcileRepairsLostSubscriptionEvents(t *testing.T) {
	ctx := context.Background()
	e := newSubsEnv(t)
	if c := e.run(t); c.Status != health.OK || !strings.Contains(c.Detail, "make chat-price") {
		t.Fatalf("without the chat's price: %+v", c)
	}
	if _, err := e.billing.CreateChatPrice(ctx); err != nil {
		t.Fatal(err)
	}
	account, _, err := e.accounts.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	id, customer := e.subscribe(t, account)

	c := e.run(t)
	st, found, err := e.subs.Get(ctx, account, id)
	if err != nil || !found || st.ID != id || st.Status != subscription.Active || st.Customer != customer || !st.PeriodEnd.Equal(e.clock.Now().Add(-time.Minute).AddDate(0, 1, 0)) {
		t.Fatalf("after the run (%+v): stored %+v found=%v %v", c, st, found, err)
	}
	if c.Status != health.Warn || !strings.Contains(c.Detail, "1 repaired") {
		t.Fatalf("check %+v", c)
	}
	if got := e.alerts.take(); !slices.Equal(got, []string{"WARN " + string(alert.ChatSubscriptionRepaired) + " "}) {
		t.Fatalf("alerts %v", got)
	}
	if c := e.run(t); c.Status != health.OK || !strings.Contains(c.Detail, "0 repaired") {
		t.Fatalf("second run: %+v", c)
	}
	if got := e.alerts.take(); len(got) != 0 {
		t.Fatalf("alerted again: %v", got)
	}

	// Cancelled in the portal; the event is lost.
	portal, err := e.billing.CreatePortal(ctx, customer, "https://oracle.example")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stayOnThePage.PostForm(portal, url.Values{"subscription": {id}, "action": {"cancel"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := e.run(t); c.Status != health.Warn {
		t.Fatalf("after the cancellation: %+v", c)
	}
	if st, _, _ := e.subs.Get(ctx, account, id); !st.CancelAtPeriodEnd || st.Status != subscription.Active {
		t.Fatalf("the cancellation was not repaired: %+v", st)
	}
	if got := e.alerts.take(); len(got) != 1 {
		t.Fatalf("alerts %v, want one", got)
	}

	// An event newer than the listing is kept, even when it disagrees.
	newer := subscription.State{Account: account, ID: id, Customer: customer, Status: subscription.Canceled, PeriodEnd: st.PeriodEnd,
		EventCreated: e.clock.Now().Add(time.Hour), EventID: "evt_newer"}
	if _, _, err := e.subs.Apply(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if c := e.run(t); c.Status != health.OK {
		t.Fatalf("with a newer event stored: %+v", c)
	}
	if st, _, _ := e.subs.Get(ctx, account, id); st.EventID != "evt_newer" {
		t.Fatalf("the newer event's state was overwritten: %+v", st)
	}
}

// A subscription to the chat's price naming no account that exists is
// alerted once, nothing stored.
func TestReconcileAlertsASubscriptionOfNoAccount(t *testing.T) {
	ctx := context.Background()
	e := newSubsEnv(t)
	if _, err := e.billing.CreateChatPrice(ctx); err != nil {
		t.Fatal(err)
	}
	stranger := "hmac-sha256:00000000000000000000000000000000"
	id, _ := e.subscribe(t, stranger)
	for range 2 {
		if c := e.run(t); c.Status != health.Warn || !strings.Contains(c.Detail, "1 naming no account") {
			t.Fatalf("check %+v", c)
		}
	}
	if got := e.alerts.take(); !slices.Equal(got, []string{"ERROR " + string(alert.ChatSubscriptionUnknown) + " "}) {
		t.Fatalf("alerts %v", got)
	}
	if _, found, _ := e.subs.AccountOf(ctx, id); found {
		t.Fatal("linked to no account")
	}
}

// A subscription Stripe cancelled whose customer.subscription.deleted was
// lost is stored canceled on the next run: an active state left in the
// table would grant the chat for ever.
func TestReconcileRepairsALostCancellation(t *testing.T) {
	ctx := context.Background()
	e := newSubsEnv(t)
	if _, err := e.billing.CreateChatPrice(ctx); err != nil {
		t.Fatal(err)
	}
	account, _, err := e.accounts.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := e.subscribe(t, account)
	e.run(t)
	e.alerts.take()

	req, _ := http.NewRequest(http.MethodDelete, e.stripe+"/v1/subscriptions/"+id, nil)
	req.Header.Set("Authorization", "Bearer sk_test_health_subs")
	resp, err := stayOnThePage.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %v %v", resp, err)
	}
	resp.Body.Close()
	if c := e.run(t); c.Status != health.Warn || !strings.Contains(c.Detail, "1 repaired") {
		t.Fatalf("check %+v", c)
	}
	st, _, err := e.subs.Get(ctx, account, id)
	if err != nil || st.Status != subscription.Canceled || st.Grants(st.PeriodEnd) {
		t.Fatalf("stored %+v %v, want canceled", st, err)
	}
	if got := e.alerts.take(); !slices.Equal(got, []string{"WARN " + string(alert.ChatSubscriptionRepaired) + " "}) {
		t.Fatalf("alerts %v", got)
	}
	// Past the window, a cancelled subscription is no longer listed.
	e.clock.Add(EndedWindow + 32*24*time.Hour)
	if c := e.run(t); c.Status != health.OK || !strings.HasPrefix(c.Detail, "0 chat subscription(s)") {
		t.Fatalf("long after: %+v", c)
	}
}

// An account's second subscription whose events were lost (a second
// Checkout paid before the first's events came) is stored beside the
// first, which keeps its own state: each subscription is reconciled on
// its own item.
func TestReconcileStoresASecondSubscriptionBesideTheFirst(t *testing.T) {
	ctx := context.Background()
	e := newSubsEnv(t)
	if _, err := e.billing.CreateChatPrice(ctx); err != nil {
		t.Fatal(err)
	}
	account, _, err := e.accounts.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	first, _ := e.subscribe(t, account)
	e.run(t)
	e.alerts.take()
	e.clock.Add(stripex.ChatCheckoutWindow)
	e.subscribe(t, account)
	var second string
	err = e.billing.ChatSubscriptions(ctx, time.Time{}, func(s stripex.Subscription) error {
		if s.Account == account && s.ID != first {
			second = s.ID
		}
		return nil
	})
	if err != nil || second == "" {
		t.Fatalf("no second subscription: %v", err)
	}
	if c := e.run(t); c.Status != health.Warn || !strings.Contains(c.Detail, "1 repaired") {
		t.Fatalf("check %+v", c)
	}
	for _, id := range []string{first, second} {
		if st, found, err := e.subs.Get(ctx, account, id); err != nil || !found || st.Status != subscription.Active {
			t.Fatalf("%s stored %+v found=%t %v", id, st, found, err)
		}
	}
}

// An account erased at its owner's request has its subscription cancelled
// first: the ended subscription of an account that is gone needs nothing
// (TestReconcileAlertsASubscriptionOfNoAccount is the live one's alert).
func TestReconcileLeavesAnErasedAccountsEndedSubscription(t *testing.T) {
	ctx := context.Background()
	e := newSubsEnv(t)
	if _, err := e.billing.CreateChatPrice(ctx); err != nil {
		t.Fatal(err)
	}
	erased := "hmac-sha256:0123456789abcdef0123456789abcdef"
	id, _ := e.subscribe(t, erased)
	if _, canceled, err := e.billing.CancelNow(ctx, id); err != nil || !canceled {
		t.Fatalf("cancel: %v %v", canceled, err)
	}
	if c := e.run(t); c.Status != health.OK || !strings.Contains(c.Detail, "0 naming no account") {
		t.Fatalf("check %+v", c)
	}
	if got := e.alerts.take(); len(got) != 0 {
		t.Fatalf("alerts %v", got)
	}
}
