package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	fakegraph "42sisters.ai/oracle/infra/fakes/fakegraph"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
)

// Sisters Chat's emails through the mailer, against moto (the Ledger, the
// chat table, the queues, the audit log, the alerts) and the mail
// transports over HTTP (moto's SES, the fake Microsoft Graph).

// minted keeps every sign-in token the handler mints, sent or not.
type minted struct {
	Accounts
	mu     sync.Mutex
	tokens []string
}

func (m *minted) IssueSignIn(ctx context.Context, account string) (string, time.Time, error) {
	token, expires, err := m.Accounts.IssueSignIn(ctx, account)
	if err == nil {
		m.mu.Lock()
		m.tokens = append(m.tokens, token)
		m.mu.Unlock()
	}
	return token, expires, err
}

func (m *minted) all() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.tokens...)
}

// account signs addr up for the chat and returns its account.
func (e *env) account(addr string) string {
	e.t.Helper()
	account, _, err := e.chat.SignUp(context.Background(), addr)
	if err != nil {
		e.t.Fatal(err)
	}
	return account
}

// chatJob is the first job of the email of kind for account, answering a
// fresh nonce.
func chatJob(kind oracle.MailKind, account string) queue.Job {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return queue.Job{Kind: kind, Account: account, Nonce: "req_" + hex.EncodeToString(b)}
}

var signInLink = regexp.MustCompile(`http://localhost:3000/chat/signin\?token=([A-Za-z0-9_-]{43})\n`)

// tokenIn is the sign-in token the text of an email links to.
func tokenIn(t *testing.T, text string) string {
	t.Helper()
	m := signInLink.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no sign-in link in\n%s", text)
	}
	return m[1]
}

// chatMailOf names the email the job owes.
func chatMailOf(j queue.Job) store.ChatMail {
	return store.ChatMail{Kind: j.Kind, Account: j.Account, Nonce: j.Nonce}
}

// chatRecords are the audit records of the chat's emails.
func (e *env) chatRecords() []audit.Record {
	e.t.Helper()
	var out []audit.Record
	for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
		if r.Source == audit.SourceEmailService && r.SessionID == "" {
			out = append(out, r)
		}
	}
	return out
}

// Each kind is sent once however often its job comes: twice in a batch,
// then ten copies at once; the sign-in link works for its account.
func TestChatEmailsSentOnceHoweverOftenTheJobComes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, kind := range []oracle.MailKind{oracle.MailChatSignIn, oracle.MailChatPaymentFailed} {
		addr := uniqueAddress(t)
		account := e.account(addr)
		j := chatJob(kind, account)
		if n := e.run(job(j), job(j)); n != 0 {
			t.Fatalf("%s: %d records failed", kind, n)
		}
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				if n := e.run(job(j)); n != 0 {
					t.Errorf("%s: a duplicate failed", kind)
				}
			})
		}
		wg.Wait()
		got := e.inbox(addr)
		if len(got) != 1 {
			t.Fatalf("%s: %d emails, want 1", kind, len(got))
		}
		switch kind {
		case oracle.MailChatSignIn:
			if signedIn, err := e.chat.ConsumeSignIn(ctx, tokenIn(t, got[0].Text)); err != nil || signedIn != account {
				t.Fatalf("the emailed link signs in %q, %v; want %q", signedIn, err, account)
			}
		case oracle.MailChatPaymentFailed:
			if !strings.Contains(got[0].Text, "Chat page: http://localhost:3000/chat\n") || strings.Contains(got[0].Text, "token=") {
				t.Fatalf("the notice does not link the chat page:\n%s", got[0].Text)
			}
		}
	}
	sent := map[audit.Event]int{}
	for _, r := range e.chatRecords() {
		if r.Event != audit.EventMailAttempt && r.Event != audit.EventFilter {
			sent[r.Event]++
		}
	}
	if sent[audit.MailEvent(oracle.MailChatSignIn)] != 1 || sent[audit.MailEvent(oracle.MailChatPaymentFailed)] != 1 {
		t.Fatalf("delivery records %v, want one of each kind", sent)
	}
}

// A failed sign-in email is retried on the schedule with a new link, and
// the link of the failed attempt (which may have arrived all the same)
// still works until it expires.
func TestSignInRetryCarriesANewWorkingLink(t *testing.T) {
	e := newGraphEnv(t)
	ctx := context.Background()
	addr := uniqueAddress(t)
	account := e.account(addr)
	e.control(fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 503}}})
	t0 := e.clock.Now()
	at := e.followJob(chatJob(oracle.MailChatSignIn, account))
	if len(at) != 2 || at[1].Sub(t0) != e.h.Schedule[1] {
		t.Fatalf("attempts at %v, want at T and T+%s", at, e.h.Schedule[1])
	}
	got := e.graph.Received()
	if len(got) != 1 || e.inGraph(addr) != 1 {
		t.Fatalf("%d emails, want the retry's", len(got))
	}
	tokens := e.minted.all()
	if len(tokens) != 2 || tokens[0] == tokens[1] || tokenIn(t, got[0].Text) != tokens[1] {
		t.Fatalf("minted %d tokens; the email links %q: want a new one for the retry", len(tokens), tokenIn(t, got[0].Text))
	}
	if signedIn, err := e.chat.ConsumeSignIn(ctx, tokens[0]); err != nil || signedIn != account {
		t.Fatalf("the failed attempt's link, before it expires: %q %v", signedIn, err)
	}
	e.clock.Add(chat.SignInTTL)
	if _, err := e.chat.ConsumeSignIn(ctx, tokens[1]); !errors.Is(err, chat.ErrSignInExpired) {
		t.Fatalf("the retry's link after %s: %v, want ErrSignInExpired", chat.SignInTTL, err)
	}
}

// A chat email that fails every attempt is tried on the schedule, never a
// fifth time, then given up with one alert naming its kind and nonce.
func TestChatEmailRetriedOnTheScheduleThenGivenUp(t *testing.T) {
	e := newGraphEnv(t)
	addr := uniqueAddress(t)
	j := chatJob(oracle.MailChatPaymentFailed, e.account(addr))
	e.control(fakegraph.Control{SendAlways: &fakegraph.SendAnswer{Status: 503}})
	t0 := e.clock.Now()
	at := e.followJob(j)
	want := []time.Duration{0, 5 * time.Minute, 35 * time.Minute, 155 * time.Minute}
	if len(at) != len(want) || e.graph.CountCalls(fakegraph.KindSend) != len(want) {
		t.Fatalf("%d attempts (%d sendMail calls), want %d and never a fifth", len(at), e.graph.CountCalls(fakegraph.KindSend), len(want))
	}
	for i, d := range want {
		if got := at[i].Sub(t0); got != d {
			t.Errorf("attempt %d at T+%s, want T+%s", i+1, got, d)
		}
	}
	a := e.alerts()
	if len(a) != 1 || !strings.Contains(a[0], "| EMAIL_DEAD_LETTER |") || !strings.Contains(a[0], "chat_payment_failed email "+j.Nonce) {
		t.Fatalf("alerts %q, want one EMAIL_DEAD_LETTER naming the kind and the nonce", a)
	}
	// A late duplicate of any attempt sends nothing.
	late := j
	late.Attempt = 2
	if n := e.run(job(late)); n != 0 || e.graph.CountCalls(fakegraph.KindSend) != len(want) {
		t.Fatalf("the late duplicate: %d failed, %d sends", n, e.graph.CountCalls(fakegraph.KindSend))
	}
	var failed int
	for _, r := range e.chatRecords() {
		if r.Event == audit.MailEvent(oracle.MailChatPaymentFailed) && r.Status == audit.StatusEmailFailed {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("%d records of the email given up, want 1", failed)
	}
}

// An account that does not exist, or whose address complained, gets no
// email: the delivery is closed, once, as an order's is.
func TestChatEmailToNoOneIsClosedWithoutAnEmail(t *testing.T) {
	e := newGraphEnv(t)
	ctx := context.Background()
	suppressed := uniqueAddress(t)
	if _, err := e.ledger.Suppress(ctx, e.h.Hasher.Email(suppressed), "complaint"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, account, detail string
	}{
		{"unknown", e.h.Hasher.Email(uniqueAddress(t)), "no such chat account"},
		{"suppressed", e.account(suppressed), "the address is on the suppression list (a complaint)"},
	} {
		for _, kind := range []oracle.MailKind{oracle.MailChatSignIn, oracle.MailChatPaymentFailed} {
			j := chatJob(kind, tc.account)
			if n := e.run(job(j)); n != 0 {
				t.Fatalf("%s %s: the job failed", tc.name, kind)
			}
			if _, _, err := e.ledger.ClaimChatMail(ctx, chatMailOf(j), 0, time.Minute, time.Hour); err == nil {
				t.Fatalf("%s %s: the delivery is still open", tc.name, kind)
			}
			if n := e.run(job(j)); n != 0 {
				t.Fatalf("%s %s: the duplicate failed", tc.name, kind)
			}
			var closed int
			for _, r := range e.chatRecords() {
				if r.Event == audit.MailEvent(kind) && r.Email == tc.account && r.ErrorDetail != nil && *r.ErrorDetail == tc.detail {
					closed++
				}
			}
			if closed != 1 {
				t.Fatalf("%s %s: %d records closing it, want 1", tc.name, kind, closed)
			}
		}
	}
	if n := e.graph.CountCalls(fakegraph.KindSend); n != 0 {
		t.Fatalf("%d emails sent", n)
	}
	if tokens := e.minted.all(); len(tokens) != 0 {
		t.Fatalf("%d sign-in links minted for no one", len(tokens))
	}
}

// rawAudit is every audit record's JSON as stored.
func (e *env) rawAudit() []string {
	e.t.Helper()
	ctx := context.Background()
	l, err := e.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(e.f.Ref("AuditBucket"))})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, o := range l.Contents {
		r, err := e.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(e.f.Ref("AuditBucket")), Key: o.Key})
		if err != nil {
			e.t.Fatal(err)
		}
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, *o.Key+" "+string(b))
	}
	return out
}

// No address and no sign-in link reaches a log line, an audit record or an
// alert, whatever becomes of the email: sent, retried, given up, owed to no
// one, or a garbage job naming an address; the records name the account.
func TestChatEmailsKeepTheAddressAndTheLinkOutOfLogsAuditAndAlerts(t *testing.T) {
	e := newGraphEnv(t)
	addrs := []string{uniqueAddress(t), uniqueAddress(t), uniqueAddress(t)}
	signIn := chatJob(oracle.MailChatSignIn, e.account(addrs[0]))
	paymentFailed := chatJob(oracle.MailChatPaymentFailed, e.account(addrs[1]))
	givenUp := chatJob(oracle.MailChatSignIn, e.account(addrs[2]))

	e.control(fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 503}}})
	e.followJob(signIn)
	e.followJob(paymentFailed)
	e.control(fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 400, Code: "ErrorInvalidRecipients"}}})
	e.followJob(givenUp)
	e.followJob(chatJob(oracle.MailChatSignIn, e.h.Hasher.Email("nobody@example.com")))
	garbage := `{"kind":"chat_signin","account":"` + addrs[0] + `","nonce":"req_0123456789","attempt":0}`
	if n := e.run(events.SQSMessage{MessageId: "garbage", Body: garbage}); n != 1 {
		t.Fatal("a chat job naming an address was not refused")
	}
	if e.inGraph(addrs[0]) != 1 || e.inGraph(addrs[1]) != 1 || e.inGraph(addrs[2]) != 0 {
		t.Fatalf("emails %d %d %d, want 1 1 0", e.inGraph(addrs[0]), e.inGraph(addrs[1]), e.inGraph(addrs[2]))
	}
	tokens := e.minted.all()
	if len(tokens) != 3 {
		t.Fatalf("%d tokens minted, want 3 (a retry and a refused send)", len(tokens))
	}

	secrets := append(append([]string{"nobody@example.com"}, addrs...), tokens...)
	records := e.rawAudit()
	places := map[string][]string{"log": strings.Split(e.logs.String(), "\n"), "audit record": records, "alert": e.alerts()}
	for where, lines := range places {
		for _, line := range lines {
			for _, s := range secrets {
				if strings.Contains(strings.ToLower(line), strings.ToLower(s)) {
					t.Errorf("a%s %s holds %q: %s", map[bool]string{true: "n", false: ""}[where == "audit record" || where == "alert"], where, s, line)
				}
			}
		}
	}
	var named int
	for _, r := range e.chatRecords() {
		if r.Email == signIn.Account {
			named++
		}
	}
	if named < 3 { // the filter's decision, two attempts, the delivery
		t.Fatalf("%d records name the sign-in's account, want its filter decision, attempts and delivery", named)
	}
}

// stopping is gate 2 stopping its first stops emails, then passing them.
type stopping struct {
	ContentFilter
	mu    sync.Mutex
	stops int
}

func (f *stopping) Mail(subject, text, html string, own sosfilter.Own) sosfilter.Report {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stops > 0 {
		f.stops--
		return sosfilter.Report{Action: sosfilter.Quarantine, Reason: "term", Version: "test"}
	}
	return f.ContentFilter.Mail(subject, text, html, own)
}

// One random link in some thousands spells something gate 2 stops: the
// sign-in email is drawn again with a new link. A stop that outlasts the
// draws is the template's: nothing is sent, nothing with a working link is
// kept for review, and the operator hears of it by kind and nonce.
func TestSignInEmailStoppedByTheFilterIsDrawnAgain(t *testing.T) {
	e := newGraphEnv(t)
	filter := &stopping{ContentFilter: e.h.Filter, stops: signInDraws - 1}
	e.h.Filter = filter
	addr := uniqueAddress(t)
	e.followJob(chatJob(oracle.MailChatSignIn, e.account(addr)))
	got := e.graph.Received()
	tokens := e.minted.all()
	if len(got) != 1 || len(tokens) != signInDraws || tokenIn(t, got[0].Text) != tokens[signInDraws-1] {
		t.Fatalf("%d emails, %d links drawn: want one email with the last of %d", len(got), len(tokens), signInDraws)
	}

	filter.stops = signInDraws
	stopped := chatJob(oracle.MailChatSignIn, e.account(uniqueAddress(t)))
	e.followJob(stopped)
	if n := e.graph.CountCalls(fakegraph.KindSend); n != 1 {
		t.Fatalf("%d sends, want none for the stopped email", n)
	}
	if _, _, err := e.ledger.ClaimChatMail(context.Background(), chatMailOf(stopped), 0, time.Minute, time.Hour); !errors.Is(err, store.ErrAlreadySent) {
		t.Fatalf("the stopped email's delivery: %v, want it closed", err)
	}
	a := e.alerts()
	if len(a) != 1 || !strings.Contains(a[0], "| EMAIL_QUARANTINED |") || !strings.Contains(a[0], "chat_signin email "+stopped.Nonce) {
		t.Fatalf("alerts %q, want one EMAIL_QUARANTINED naming the kind and the nonce", a)
	}
	l, err := e.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(e.f.Ref("QuarantineBucket"))})
	if err != nil || len(l.Contents) != 0 {
		t.Fatalf("%d review records (%v): a stopped sign-in email keeps a working link there", len(l.Contents), err)
	}
}

// The account keeps the address as the person wrote it, spaces and all;
// the email goes to the address itself, and a complaint about it (kept by
// the hash of the trimmed form) holds for it.
func TestChatEmailGoesToTheTrimmedAddress(t *testing.T) {
	e := newGraphEnv(t)
	addr := uniqueAddress(t)
	e.followJob(chatJob(oracle.MailChatPaymentFailed, e.account("  "+addr+" ")))
	if n := e.inGraph(addr); n != 1 {
		t.Fatalf("%d emails to %s, want 1", n, addr)
	}
	if _, err := e.ledger.Suppress(context.Background(), e.h.Hasher.Email(addr), "complaint"); err != nil {
		t.Fatal(err)
	}
	e.followJob(chatJob(oracle.MailChatPaymentFailed, e.account(" "+addr)))
	if n := e.graph.CountCalls(fakegraph.KindSend); n != 1 {
		t.Fatalf("%d sends, want none to the suppressed address", n)
	}
}

// The smoke test's chat account (stripex.SmokeEmail) has every record of
// its sign-in email flagged smoke (the delivery, the attempt, gate 2's
// decision), so no figure counts it; a person's are not.
func TestSmokeAccountsChatEmailsAreFlaggedSmoke(t *testing.T) {
	e := newEnv(t)
	smoke := e.account(stripex.SmokeEmail)
	person := e.account(uniqueAddress(t))
	for _, account := range []string{smoke, person} {
		if n := e.run(job(chatJob(oracle.MailChatSignIn, account))); n != 0 {
			t.Fatalf("%d records failed", n)
		}
	}
	events := map[string]map[audit.Event]bool{smoke: {}, person: {}}
	for _, r := range e.chatRecords() {
		if r.Smoke != (r.Email == smoke) {
			t.Errorf("the %s record %s of %s: smoke=%v", r.Event, r.Status, r.Email, r.Smoke)
		}
		events[r.Email][r.Event] = true
	}
	for account, seen := range events {
		if !seen[audit.MailEvent(oracle.MailChatSignIn)] || !seen[audit.EventMailAttempt] || !seen[audit.EventFilter] {
			t.Errorf("the records of %s: %v, want the delivery, the attempt and the filter's", account, seen)
		}
	}
}

// Issue 38, finding 1: a chat email goes only to the canonical form of
// the address its account holds, and only when that form names the
// account: an account a look-alike overwrote before addresses were
// canonical gets nothing sent, its delivery closed, and one alert.
func TestChatEmailGoesOnlyToTheAccountsOwnCanonicalAddress(t *testing.T) {
	e := newGraphEnv(t)
	ctx := context.Background()
	local := strings.TrimSuffix(uniqueAddress(t), "@example.com")
	mixed := strings.ToUpper(local[:1]) + local[1:] + "@EXAMPLE.com"
	account := e.account(mixed)
	e.followJob(chatJob(oracle.MailChatPaymentFailed, account))
	if n := e.inGraph(local + "@example.com"); n != 1 {
		t.Fatalf("%d emails to the canonical address, want 1", n)
	}

	// The victim's account, its address overwritten by a look-alike's
	// sign-in request under the old lower-casing.
	victim := e.account(local + "@gmail.com")
	lookalike := local + "@gmaİl.com"
	if _, err := dynamodb.NewFromConfig(e.f.AWS).UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.f.Ref("ChatTable")), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "acct#" + victim}, "sk": &types.AttributeValueMemberS{Value: "account"}},
		UpdateExpression:          aws.String("SET email = :e"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": &types.AttributeValueMemberS{Value: lookalike}},
	}); err != nil {
		t.Fatal(err)
	}
	sends := e.graph.CountCalls(fakegraph.KindSend)
	j := chatJob(oracle.MailChatSignIn, victim)
	for range 2 {
		if n := e.run(job(j)); n != 0 {
			t.Fatal("the job failed")
		}
	}
	if n := e.graph.CountCalls(fakegraph.KindSend); n != sends {
		t.Fatalf("%d emails sent for the overwritten account, want none", n-sends)
	}
	var closed int
	for _, r := range e.chatRecords() {
		if r.Email == victim && r.ErrorDetail != nil && *r.ErrorDetail == "the account's address is not its own canonical address" {
			closed++
		}
	}
	if closed != 1 {
		t.Fatalf("%d records closing it, want 1", closed)
	}
	var raised int
	for _, a := range e.alerts() {
		if strings.Contains(a, "| EMAIL_FAILED |") && strings.Contains(a, victim) {
			raised++
			if strings.Contains(a, local) {
				t.Fatalf("the alert names the address: %s", a)
			}
		}
	}
	if raised != 1 {
		t.Fatalf("%d alerts, want 1: %q", raised, e.alerts())
	}
}
