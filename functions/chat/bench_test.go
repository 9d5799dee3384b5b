package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/subscription"
)

// BenchmarkChatExchange is one subscriber's message per iteration through
// the real handler (POST /api/chat), at the bounds (a message of
// MaxMessageChars, a conversation longer than HistoryChars), against moto:
// own-% is the time of Handle less the time in its calls (the account's
// counts, the subscription, the exchange taken, the conversation read,
// the model, the exchange stored and settled, the audit record; calls in
// flight together counted once), as a percentage of those calls. The model is a Replier that answers at once
// with a reply of 1,000 characters: its own work is BenchmarkChatReply's
// (shared/chatreply), and Gemini's seconds would make this share far
// smaller still.
func BenchmarkChatExchange(b *testing.B) {
	f := provision.ForTest(b, nil)
	hasher, err := audit.NewHasher("a pepper of sixteen bytes or more")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	db := awsenv.NewTables(f.AWS)
	table := f.Ref("ChatTable")
	store := chat.NewStore(db, table, hasher, time.Now)
	account, _, err := store.SignUp(ctx, address)
	if err != nil {
		b.Fatal(err)
	}
	subs := subscription.NewStore(db, chat.NewClient(f.AWS), table)
	now := time.Now()
	if _, _, err := subs.Apply(ctx, subscription.State{Account: account, ID: "sub_bench", Customer: "cus_bench",
		Status: subscription.Active, PeriodEnd: now.Add(30 * 24 * time.Hour), EventCreated: now, EventID: "evt_bench"}); err != nil {
		b.Fatal(err)
	}
	conv := store.Conversation(chat.NewClient(f.AWS), 30*24*time.Hour)
	earlier := strings.Repeat("We talked about the bakery. ", 40)[:1000]
	for i := 0; i*2000 <= HistoryChars; i++ {
		if err := conv.Append(ctx, account, earlier, earlier, now.Add(time.Duration(i-100)*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	t := &callTimer{}
	h := &Handler{
		Site: defaultSite, Support: oracle.SupportAddress, Origin: origin, CookieKey: []byte(cookieKey),
		RetentionDays: 30, DailyCap: 1 << 30, HistoryChars: HistoryChars, ShowChars: ShowChars, ReplyTimeout: 5 * time.Second,
		SignInPerAccount: chat.SignInPerAccount, SignInPerClient: chat.SignInPerClient,
		NewTrialsPerDay: 1 << 30, GiveBacksPerDay: chat.GiveBacksPerDay,
		Accounts:      timedAccounts{store, t},
		Conversations: timedConversations{conv, t},
		Replier:       timedReplier{instantReplier{strings.Repeat("Your plan holds if the lease does. ", 30)[:1000]}, t},
		Subscriptions: timedSubscriptions{subscriptions{store: subs, now: time.Now}, t},
		Audit: timedAuditor{&audit.Recorder{Writer: audit.NewWriter(awsenv.S3(f.AWS), f.Ref("AuditBucket")),
			Alerts: &testkit.Alerts{}, Log: obs.NewLogger(io.Discard, "INFO")}, t},
		Metrics: &testkit.Metrics{}, Hasher: hasher, Log: obs.NewLogger(io.Discard, "INFO"), Now: time.Now, Random: rand.Reader,
	}
	cookie := chatsession.Sign([]byte(cookieKey), chatsession.Session{Account: account, Issued: now})
	message, _ := json.Marshal(map[string]string{"message": strings.Repeat("Is this plan sound? ", 100)[:MaxMessageChars]})
	r := req(http.MethodPost, "/api/chat", string(message), cookie)
	var handled time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		resp, err := h.Handle(ctx, r)
		handled += time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
		}
	}
	b.StopTimer()
	t.log(b, b.N)
	calls, n := t.total(), float64(b.N)
	own := handled - calls
	b.ReportMetric(float64(own.Microseconds())/n, "own-µs/op")
	b.ReportMetric(float64(calls.Microseconds())/n, "calls-µs/op")
	b.ReportMetric(100*float64(own)/float64(calls), "own-%")
}

// instantReplier answers every message with one passing reply, at once.
type instantReplier struct{ text string }

func (r instantReplier) Reply(context.Context, ReplyRequest) (ReplyResult, error) {
	return ReplyResult{Text: r.text, Filter: FilterPass}, nil
}

// callTimer sums the time the handler spends in its calls (the time while
// one or more is in flight, so that calls made together count once), and
// each kind's.
type callTimer struct {
	mu       sync.Mutex
	d        time.Duration
	inFlight int
	from     time.Time
	byName   map[string]time.Duration
}

// begin notes the start of a call of name; the function it returns, its
// end.
func (t *callTimer) begin(name string) func() {
	start := time.Now()
	t.mu.Lock()
	if t.inFlight == 0 {
		t.from = start
	}
	t.inFlight++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.inFlight--; t.inFlight == 0 {
			t.d += time.Since(t.from)
		}
		if t.byName == nil {
			t.byName = map[string]time.Duration{}
		}
		t.byName[name] += time.Since(start)
	}
}

// log reports each kind of call's mean time over n exchanges.
func (t *callTimer) log(b *testing.B, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := slices.Sorted(maps.Keys(t.byName))
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f ms", name, float64(t.byName[name].Microseconds())/1000/float64(n)))
	}
	b.Logf("calls per exchange: %s", strings.Join(parts, ", "))
}

func (t *callTimer) total() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.d
}

type timedAccounts struct {
	Accounts
	t *callTimer
}

func (a timedAccounts) Usage(ctx context.Context, account string) (chat.Usage, error) {
	defer a.t.begin("Usage")()
	return a.Accounts.Usage(ctx, account)
}

func (a timedAccounts) TakeExchange(ctx context.Context, u chat.Usage, p chat.Policy) (chat.Spent, error) {
	defer a.t.begin("TakeExchange")()
	return a.Accounts.TakeExchange(ctx, u, p)
}

func (a timedAccounts) Settle(ctx context.Context, sp chat.Spent) error {
	defer a.t.begin("Settle")()
	return a.Accounts.Settle(ctx, sp)
}

func (a timedAccounts) GiveBack(ctx context.Context, sp chat.Spent) (bool, error) {
	defer a.t.begin("GiveBack")()
	return a.Accounts.GiveBack(ctx, sp)
}

type timedConversations struct {
	Conversations
	t *callTimer
}

func (c timedConversations) Append(ctx context.Context, account, message, reply string, at time.Time) error {
	defer c.t.begin("Append")()
	return c.Conversations.Append(ctx, account, message, reply, at)
}

func (c timedConversations) Recent(ctx context.Context, account string, maxChars int) ([]chat.Turn, error) {
	defer c.t.begin("Recent")()
	return c.Conversations.Recent(ctx, account, maxChars)
}

type timedReplier struct {
	Replier
	t *callTimer
}

func (r timedReplier) Reply(ctx context.Context, req ReplyRequest) (ReplyResult, error) {
	defer r.t.begin("Reply")()
	return r.Replier.Reply(ctx, req)
}

type timedSubscriptions struct {
	Subscriptions
	t *callTimer
}

func (s timedSubscriptions) Subscription(ctx context.Context, account string) (Subscription, error) {
	defer s.t.begin("Subscription")()
	return s.Subscriptions.Subscription(ctx, account)
}

type timedAuditor struct {
	Auditor
	t *callTimer
}

func (a timedAuditor) Record(ctx context.Context, r audit.Record, id string) {
	defer a.t.begin("Record")()
	a.Auditor.Record(ctx, r, id)
}
