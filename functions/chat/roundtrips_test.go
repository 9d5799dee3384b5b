package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/chatreply"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/subscription"
)

// The calls of a chat request, as the testkit's AWSCalls names them.
const (
	getItem    = "GetItem"
	query      = "Query"
	updateItem = "UpdateItem"
	putItem    = "PutItem"
	putObject  = "PutObject"
	model      = "model"
)

// countedChat is a handler on the real stores whose AWS calls, and the
// model's (a server that answers at once), are noted in order by calls;
// its account's subscription is active when subscribed.
type countedChat struct {
	h       *Handler
	calls   *testkit.AWSCalls
	cookie  string
	account string
	// afterSession and afterModel arm holds once the session's account is
	// read and once the model has answered.
	afterSession, afterModel func()
}

func newCountedChat(t *testing.T, subscribed, realModel bool) *countedChat {
	t.Helper()
	f := provision.ForTest(t, nil)
	cfg := f.AWS.Copy()
	x := &countedChat{calls: testkit.NoteCalls(&cfg), afterSession: func() {}, afterModel: func() {}}
	x.calls.HoldLimit = 5 * time.Second
	hasher, err := audit.NewHasher("a pepper of sixteen bytes or more")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	table := f.Ref("ChatTable")
	store := chat.NewStore(awsenv.NewTables(cfg), table, hasher, time.Now)
	if x.account, _, err = store.SignUp(ctx, address); err != nil {
		t.Fatal(err)
	}
	subs := subscription.NewStore(awsenv.NewTables(cfg), chat.NewClient(cfg), table)
	if subscribed {
		now := time.Now()
		if _, _, err := subs.Apply(ctx, subscription.State{Account: x.account, ID: "sub_roundtrips", Customer: "cus_roundtrips",
			Status: subscription.Active, PeriodEnd: now.Add(30 * 24 * time.Hour), EventCreated: now, EventID: "evt_roundtrips"}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	t.Cleanup(srv.Close)
	log := obs.NewLogger(io.Discard, "INFO")
	x.h = &Handler{
		Site: defaultSite, Support: oracle.SupportAddress, Origin: origin, CookieKey: []byte(cookieKey),
		RetentionDays: 30, DailyCap: 100, HistoryChars: HistoryChars, ShowChars: ShowChars, ReplyTimeout: 5 * time.Second,
		SignInPerAccount: chat.SignInPerAccount, SignInPerClient: chat.SignInPerClient,
		NewTrialsPerDay: 1000, GiveBacksPerDay: chat.GiveBacksPerDay,
		Accounts:      sessionHook{store, func() { x.afterSession() }},
		Conversations: store.Conversation(chat.NewClient(cfg), 30*24*time.Hour),
		Replier: modelCall{client: x.calls.HTTPClient(func(*http.Request) string { return model }, nil), url: srv.URL,
			after: func() { x.afterModel() }},
		Subscriptions: subscriptions{store: subs, now: time.Now},
		Audit:         &audit.Recorder{Writer: audit.NewWriter(awsenv.S3(cfg), f.Ref("AuditBucket")), Alerts: &testkit.Alerts{}, Log: log},
		Metrics:       &testkit.Metrics{}, Hasher: hasher, Log: log, Now: time.Now, Random: rand.Reader,
	}
	if realModel {
		// The function's own Replier: chatreply on the Gemini client (its
		// calls noted) against the fake Gemini, the circuit on the Ledger.
		fake := httptest.NewServer(fakegemini.New(fakegemini.Options{}))
		t.Cleanup(fake.Close)
		client, err := gemini.New(ctx, gemini.Options{APIKey: "test-key", BaseURL: fake.URL, Timeout: 5 * time.Second,
			HTTPClient: x.calls.HTTPClient(func(*http.Request) string { return model }, nil)})
		if err != nil {
			t.Fatal(err)
		}
		filter, err := sosfilter.New()
		if err != nil {
			t.Fatal(err)
		}
		breaker := circuit.New(awsenv.NewTables(cfg), f.Ref("LedgerTable"), "gemini", circuit.Options{}, time.Now)
		x.h.Replier = hookedReplier{modelReplier{r: &chatreply.Replier{
			Model:   &gemini.Caller{Primary: client, Policy: chatreply.CallerPolicy(5 * time.Second), Rand: func() float64 { return 0 }, Log: log},
			Circuit: readCircuit{breaker}, Filter: filter, Log: log, Now: time.Now,
		}, circuit: breaker}, func() { x.afterModel() }}
	}
	x.cookie = chatsession.Sign([]byte(cookieKey), chatsession.Session{Account: x.account, Issued: time.Now()})
	return x
}

// message sends one message and returns the answer's status.
func (x *countedChat) message(t *testing.T) int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": "Is this plan sound?"})
	resp, err := x.h.Handle(context.Background(), req(http.MethodPost, "/api/chat", string(body), x.cookie))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}

// sessionHook calls after once the session's account is read.
type sessionHook struct {
	Accounts
	after func()
}

func (s sessionHook) Usage(ctx context.Context, account string) (chat.Usage, error) {
	u, err := s.Accounts.Usage(ctx, account)
	s.after()
	return u, err
}

// modelCall is the model: one HTTP call to a server that answers at once,
// noted among the AWS calls, and a passing reply; after runs once it has
// answered.
type modelCall struct {
	client *http.Client
	url    string
	after  func()
}

func (m modelCall) Reply(ctx context.Context, _ ReplyRequest) (ReplyResult, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, strings.NewReader("{}"))
	if err != nil {
		return ReplyResult{}, err
	}
	resp, err := m.client.Do(r)
	if err != nil {
		return ReplyResult{}, err
	}
	_ = resp.Body.Close()
	m.after()
	return ReplyResult{Text: "Your plan holds if the lease does.", Filter: FilterPass}, nil
}

// hookedReplier is the function's Replier, after called once it has
// answered.
type hookedReplier struct {
	modelReplier
	after func()
}

func (r hookedReplier) Reply(ctx context.Context, req ReplyRequest) (ReplyResult, error) {
	res, err := r.modelReplier.Reply(ctx, req)
	r.after()
	return res, err
}

// A signed-in request's calls, counted, each with the round trips it
// waits for at most (before issue 40 in brackets). An exchange: a trial's
// first 7 (12), a trial's next 6 (11), a subscriber's 7 (11), the model's
// answer among them, 8 (13) with the function's Replier, whose circuit is
// read and whose model answers in two rounds; the page's conversation 2
// (4):
//
//	message: GetItem (the account) beside Query (the subscription) →
//	GetItem (the trial) → UpdateItem (the exchange taken; a trial's first
//	counts today's new trials first) beside Query (the conversation for
//	the model, a second page for a long one) and, with the function's
//	Replier, GetItem (the model's circuit) → the model (its two stances
//	together, then the merge: one more round trip in production, not
//	counted with the instant model) → PutItem,
//	PutItem (the message, then the reply) beside UpdateItem (the
//	settlement; a trial's then asks GetItem whether the account still
//	is) and PutObject (the audit record);
//	GET /api/chat: GetItem (the account) beside Query (the subscription)
//	and Query (the conversation) → GetItem (the trial).
//
// A message its counts refuse reads no conversation. Nothing is written
// after the answer. Concurrency is shown, not timed: each call of a group
// is held until another of its group is on its way, so a handler that
// made them one after the other would be held in vain.
func TestASignedInRequestsRoundTrips(t *testing.T) {
	cases := []struct {
		name       string
		subscribed bool
		realModel  bool // the function's Replier, and its circuit
		before     int  // messages sent before the one counted
		get        bool
		status     int
		rounds     int
		calls      map[string]int
	}{
		{"a trial's first exchange", false, false, 0, false, http.StatusOK, 7,
			map[string]int{getItem: 3, query: 2, updateItem: 3, model: 1, putItem: 2, putObject: 1}},
		{"a trial's second exchange", false, false, 1, false, http.StatusOK, 6,
			map[string]int{getItem: 3, query: 2, updateItem: 2, model: 1, putItem: 2, putObject: 1}},
		{"a subscriber's exchange", true, false, chat.TrialExchanges + 1, false, http.StatusOK, 7,
			map[string]int{getItem: 2, query: 3, updateItem: 2, model: 1, putItem: 2, putObject: 1}},
		{"a message past the trial", false, false, chat.TrialExchanges, false, http.StatusPaymentRequired, 3,
			map[string]int{getItem: 2, query: 1, putObject: 1}},
		{"a subscriber's exchange with the model's circuit", true, true, chat.TrialExchanges + 1, false, http.StatusOK, 8,
			map[string]int{getItem: 3, query: 3, updateItem: 2, model: 3, putItem: 2, putObject: 1}},
		{"the page's conversation", true, false, 1, true, http.StatusOK, 2,
			map[string]int{getItem: 2, query: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := newCountedChat(t, c.subscribed, c.realModel)
			for range c.before {
				if status := x.message(t); status != http.StatusOK {
					t.Fatalf("an earlier message answered %d", status)
				}
			}
			x.calls.Reset()
			x.calls.Hold(getItem, query)
			x.afterSession = func() {
				// The exchange's claim, until the model's circuit is read
				// (with the function's Replier), else until the
				// conversation is.
				if c.realModel {
					x.calls.Hold(updateItem, getItem)
				} else {
					x.calls.Hold(updateItem, query)
				}
				x.afterSession = func() {}
			}
			x.afterModel = func() {
				x.calls.Hold(putItem, updateItem)
				x.calls.Hold(updateItem, putObject)
				x.calls.Hold(putObject, putItem)
			}
			status := 0
			if c.get {
				resp, err := x.h.Handle(context.Background(), req(http.MethodGet, "/api/chat", "", x.cookie))
				if err != nil {
					t.Fatal(err)
				}
				status = resp.StatusCode
			} else {
				status = x.message(t)
			}
			if status != c.status {
				t.Fatalf("answered %d, want %d", status, c.status)
			}
			if held := x.calls.Held(); len(held) != 0 {
				t.Errorf("held in vain: %q: a call waited for one the handler makes beside it", held)
			}
			n := map[string]int{}
			for _, op := range x.calls.Ops() {
				n[op]++
			}
			if !maps.Equal(n, c.calls) {
				t.Errorf("calls %v, want %v", n, c.calls)
			}
			steps := x.calls.Steps()
			if len(steps) > c.rounds {
				t.Errorf("%d round trips (%s), want %d", len(steps), testkit.FormatSteps(steps), c.rounds)
			}
			t.Logf("%d round trips: %s", len(steps), testkit.FormatSteps(steps))
		})
	}
}
