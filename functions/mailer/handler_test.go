package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/functions/mailer/letter"
	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
)

type env struct {
	t        *testing.T
	f        *provision.Fixture
	h        *Handler
	orders   *store.Orders
	ledger   *store.Ledger
	stripe   string // the fake Stripe's URL
	s3       *s3.Client
	sqs      *sqs.Client
	queues   *queue.Client
	alerts   func() []string
	logs     *testkit.Buffer
	mailSent *recorder
	metrics  *testkit.Metrics
	// chat is the chat table's store, on the handler's clock; minted
	// keeps the sign-in tokens the handler mints through it.
	chat   *chat.Store
	minted *minted
}

// recorder keeps the jobs it sends.
type recorder struct {
	*queue.Sender
	mu   sync.Mutex
	jobs []queue.Job
}

func (r *recorder) Send(ctx context.Context, j queue.Job) error {
	r.mu.Lock()
	r.jobs = append(r.jobs, j)
	r.mu.Unlock()
	return r.Sender.Send(ctx, j)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with instrument (when not nil) applied to the AWS
// configuration the handler's clients are made from.
func newEnvWith(t *testing.T, instrument func(*aws.Config)) *env {
	t.Helper()
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	cfg := f.AWS
	if instrument != nil {
		cfg = f.AWS.Copy()
		instrument(&cfg)
	}
	e := &env{t: t, f: f, s3: awsenv.S3(cfg), sqs: sqs.NewFromConfig(cfg), queues: queue.NewClient(cfg), logs: &testkit.Buffer{}, metrics: &testkit.Metrics{}}
	srv := httptest.NewServer(fakestripe.New(fakestripe.Options{}))
	t.Cleanup(srv.Close)
	e.stripe = srv.URL
	ses := sesv2.NewFromConfig(f.AWS)
	if err := motoserver.VerifySender(ctx, ses, letter.DefaultBrand().Sender); err != nil {
		t.Fatal(err)
	}
	e.alerts = testkit.AlertTap(t, f.AWS, f.Ref("AlertsTopic"), provision.TestRegion, provision.Account)
	db := awsenv.NewTables(cfg)
	hasher, _ := audit.NewHasher("mailer-test-pepper-0123456789")
	log := obs.NewLogger(e.logs, "DEBUG")
	e.orders = store.NewOrders(db, f.Ref("OrdersTable"), time.Now)
	e.mailSent = &recorder{Sender: queue.NewSender(e.queues, f.Ref("MailQueue"), time.Now)}
	filter, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	schedule, err := parseSchedule(DefaultSchedule)
	if err != nil {
		t.Fatal(err)
	}
	e.ledger = store.NewLedger(db, f.Ref("LedgerTable"), time.Now)
	e.h = &Handler{
		Orders:   e.orders,
		Ledger:   e.ledger,
		Schedule: schedule, BlockedRetry: DefaultBlockedRetry, DeadLetterRetention: 90 * 24 * time.Hour, TransportName: "SES",
		SentRetention: DefaultSentRetention, ReplyRetention: DefaultReplyRetention, Inbox: inbox.NewMessages(e.s3, f.Ref("InboxBucket")),
		Test:      stripex.New("sk_test_mailer", stripex.Options{BaseURL: srv.URL}),
		Transport: &mail.SES{Client: mail.NewClient(cfg), Now: time.Now},

		Alerts: &alert.Alerter{SNS: awsenv.NewTopics(f.AWS), Topic: f.Ref("AlertsTopic"), Timeout: testAlertTimeout,
			Dedupe: store.NewLedger(db, f.Ref("LedgerTable"), time.Now), Log: log},
		Filter: filter, Quarantine: quarantine.NewStore(e.s3, f.Ref("QuarantineBucket")),
		Mail:   e.mailSent,
		Hasher: hasher, Brand: letter.DefaultBrand(), BaseURL: "http://localhost:3000",
		Metrics: e.metrics, Log: log, Now: time.Now, Lease: time.Minute,
	}
	e.h.Audit = &audit.Recorder{Writer: audit.NewWriter(e.s3, f.Ref("AuditBucket")), Alerts: e.h.Alerts, Log: log}
	e.chat = chat.NewStore(db, f.Ref("ChatTable"), hasher, func() time.Time { return e.h.Now() })
	e.minted = &minted{Accounts: e.chat}
	e.h.Chat, e.h.ChatMailRetention = e.minted, DefaultChatMailRetention
	e.h.Verdicts = &repair.Guard{Orders: e.orders, Hash: hasher.Hash, Generate: queue.NewSender(e.queues, f.Ref("GenerateQueue"), time.Now), Alerts: e.h.Alerts, Log: log}
	return e
}

// paidSession creates and pays a Checkout Session at the fake Stripe and
// returns its id; email "" pays without an address.
func (e *env) paidSession(tier oracle.Tier, email string) string {
	e.t.Helper()
	s, err := stripex.New("sk_test_mailer", stripex.Options{BaseURL: e.stripe}).CreateCheckoutSession(context.Background(), stripex.CheckoutRequest{
		Tier: tier, Query: "q", SuccessURL: "http://localhost:3000/oracle/result?session_id={CHECKOUT_SESSION_ID}", CancelURL: "http://localhost:3000/",
	})
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).
		PostForm(e.stripe+"/pay/"+s.ID, url.Values{"email": {email}})
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("pay: %d", resp.StatusCode)
	}
	return s.ID
}

func analysis(tier oracle.Tier, v oracle.Verdict) oracle.Analysis {
	a := oracle.Analysis{Verdict: v, Summary: "The instinct is sound but the timing is missing."}
	if tier != oracle.TierQuick {
		a.Breakdown = map[string]oracle.DimensionNote{}
		for _, d := range oracle.Dimensions {
			a.Breakdown[d] = oracle.DimensionNote{Verdict: oracle.VerdictAmber, Analysis: d + " needs work."}
		}
	}
	if tier == oracle.TierStrategy {
		a.Strategy = &oracle.Strategy{NextStep: "Model the unit economics.", Alternative: "License the brand.", Tests: []string{"One.", "Two.", "Three."}}
	}
	return a
}

// ready stores a READY order with a verdict for the session.
func (e *env) ready(id string, tier oracle.Tier, v oracle.Verdict) {
	e.t.Helper()
	e.readyPaidAt(id, tier, v, time.Now().UTC())
}

// readyPaidAt is ready for an order paid at paidAt.
func (e *env) readyPaidAt(id string, tier oracle.Tier, v oracle.Verdict, paidAt time.Time) {
	e.t.Helper()
	ctx := context.Background()
	c, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: tier, Query: "Should I open a <b>bakery</b>?",
		AmountTotal: tier.PriceCents(), Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC(), PaidAt: &paidAt}, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	_ = e.orders.JobEnqueued(ctx, id, c.Lease)
	_, tok, err := e.orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	canon, err := analysis(tier, v).CanonicalJSON()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.orders.StoreVerdict(ctx, id, tok, store.StoredVerdict{Canonical: string(canon), Hash: e.h.Hasher.Hash(string(canon)), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		e.t.Fatal(err)
	}
}

func record(session string, kind oracle.MailKind) events.SQSMessage {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return events.SQSMessage{MessageId: hex.EncodeToString(b), Body: fmt.Sprintf(`{"session_id":%q,"kind":%q,"attempt":0}`, session, kind)}
}

func (e *env) run(recs ...events.SQSMessage) int {
	e.t.Helper()
	resp, err := e.h.Handle(context.Background(), events.SQSEvent{Records: recs})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(resp.BatchItemFailures)
}

// inbox returns the messages moto accepted for addr.
func (e *env) inbox(addr string) []motoserver.Sent {
	e.t.Helper()
	all, err := motoserver.Mailbox{}.Sent(context.Background(), motoserver.ForTest(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	var out []motoserver.Sent
	for _, m := range all {
		for _, to := range m.To {
			if to == addr {
				out = append(out, m)
			}
		}
	}
	return out
}

// mailRecords are the audit records of sends; filterRecords the filter's.
func (e *env) mailRecords() []audit.Record {
	e.t.Helper()
	var out []audit.Record
	for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
		if strings.HasPrefix(string(r.Event), "mail_") && r.Event != audit.EventMailAttempt {
			out = append(out, r)
		}
	}
	return out
}

func (e *env) filterRecords() []*audit.Filter {
	e.t.Helper()
	var out []*audit.Filter
	for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
		if r.Event == "sos_filter" {
			out = append(out, r.Filter)
		}
	}
	return out
}

func uniqueAddress(t *testing.T) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "customer-" + hex.EncodeToString(b) + "@example.com"
}

func TestVerdictMailIsSentOnceWithTheStoredVerdict(t *testing.T) {
	for _, tier := range oracle.Tiers() {
		t.Run(string(tier), func(t *testing.T) {
			e := newEnv(t)
			addr := uniqueAddress(t)
			id := e.paidSession(tier, addr)
			e.ready(id, tier, oracle.VerdictNull)
			// Ten at once, then a late redelivery: one email.
			var wg sync.WaitGroup
			for i := 0; i < 10; i++ {
				wg.Add(1)
				go func() { defer wg.Done(); e.run(record(id, "verdict")) }()
			}
			wg.Wait()
			if n := e.run(record(id, "verdict")); n != 0 {
				t.Fatal("the late redelivery failed")
			}
			got := e.inbox(addr)
			if len(got) != 1 {
				t.Fatalf("%d emails, want 1", len(got))
			}
			m := got[0]
			want, _ := letter.Verdict(letter.DefaultBrand(), tier, "Should I open a <b>bakery</b>?", analysis(tier, oracle.VerdictNull),
				"http://localhost:3000/oracle/result?session_id="+id)
			if m.Subject != "Your 42 Sisters AI Verdict" || m.Text != want.Text {
				t.Fatalf("the email is not the stored verdict's letter:\n%s", m.Text)
			}
			if strings.Contains(m.HTML, "<b>bakery</b>") {
				t.Fatal("the query's HTML was not escaped")
			}
			recs := e.mailRecords()
			if len(recs) != 1 || recs[0].Status != audit.StatusEmailSent || recs[0].Source != audit.SourceEmailService {
				t.Fatalf("audit %+v", recs)
			}
			// Gate 2 read the email and recorded it (SOS_FILTER failure mode 1).
			if f := e.filterRecords(); len(f) != 1 || f[0].Gate != "mailer" || f[0].Action != "PASS" || f[0].MailKind != "verdict" || f[0].Version == "" {
				t.Fatalf("filter records %+v, want one PASS at the mailer", f)
			}
		})
	}
}

// noEmail is a session source whose sessions carry no address.
type noEmail struct{}

func (noEmail) RetrieveSession(_ context.Context, id string) (oracle.Session, error) {
	return oracle.Session{ID: id, PaymentStatus: "paid"}, nil
}

func TestNoAddressMeansNoSendAndAnAuditRecord(t *testing.T) {
	// Both kinds: a verdict (the page still serves it) and the silent-drop
	// notice (the operator's [SILENT-DROP] alert is then all there is).
	for _, kind := range []oracle.MailKind{oracle.MailVerdict, oracle.MailSilentDrop} {
		t.Run(string(kind), func(t *testing.T) {
			e := newEnv(t)
			e.h.Test = noEmail{}
			id := "cs_test_noaddress" + strings.ReplaceAll(string(kind), "_", "") + "xxxxxxxx"
			if kind == "verdict" {
				e.ready(id, oracle.TierQuick, oracle.VerdictGreen)
			} else if _, err := e.orders.ClaimOrder(context.Background(), oracle.Order{SessionID: id, Status: oracle.StatusDropped, DropReason: oracle.DropTierMissing,
				Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC()}, time.Minute); err != nil {
				t.Fatal(err)
			}
			if n := e.run(record(id, kind)); n != 0 {
				t.Fatal("the job failed")
			}
			recs := e.mailRecords()
			if len(recs) != 1 || recs[0].Status != audit.StatusEmailFailed || recs[0].ErrorDetail == nil {
				t.Fatalf("audit %+v", recs)
			}
			if !strings.Contains(e.logs.String(), "no email address on the session") {
				t.Fatal("no warning logged")
			}
			// A duplicate job does not try again.
			e.run(record(id, kind))
			if recs := e.mailRecords(); len(recs) != 1 {
				t.Fatalf("%d audit records after a duplicate", len(recs))
			}
		})
	}
}

func TestSilentDropNoticeIsSentOnce(t *testing.T) {
	e := newEnv(t)
	addr := uniqueAddress(t)
	id := e.paidSession(oracle.TierQuick, addr)
	if _, err := e.orders.ClaimOrder(context.Background(), oracle.Order{SessionID: id, Status: oracle.StatusDropped, DropReason: oracle.DropTierMissing,
		Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC()}, time.Minute); err != nil {
		t.Fatal(err)
	}
	e.run(record(id, "silent_drop"))
	e.run(record(id, "silent_drop"))
	got := e.inbox(addr)
	want, _ := letter.SilentDropNotice(letter.DefaultBrand())
	if len(got) != 1 || got[0].Subject != want.Subject || got[0].Text != want.Text {
		t.Fatalf("notices %+v", got)
	}
}

func TestNothingIsSentBeforeTheVerdictIsStored(t *testing.T) {
	e := newEnv(t)
	addr := uniqueAddress(t)
	id := e.paidSession(oracle.TierQuick, addr)
	if _, err := e.orders.ClaimOrder(context.Background(), oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "q",
		Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC()}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := e.run(record(id, "verdict")); n != 0 {
		t.Fatal("the job failed")
	}
	if got := e.inbox(addr); len(got) != 0 {
		t.Fatal("an email was sent without a stored verdict")
	}
}

func TestRefusedSendAlertsOnceAndIsNotRetried(t *testing.T) {
	e := newEnv(t)
	e.h.Brand.Sender = "unverified@example.org"
	addr := uniqueAddress(t)
	id := e.paidSession(oracle.TierFull, addr)
	e.ready(id, oracle.TierFull, oracle.VerdictRed)
	if n := e.run(record(id, "verdict")); n != 0 {
		t.Fatal("a permanent refusal was retried")
	}
	e.run(record(id, "verdict"))
	if a := e.alerts(); len(a) != 1 || !strings.Contains(a[0], "EMAIL_FAILED") || strings.Contains(a[0], addr) {
		t.Fatalf("alerts %q", a)
	}
	recs := e.mailRecords()
	if len(recs) != 1 || recs[0].Status != audit.StatusEmailFailed {
		t.Fatalf("audit %+v", recs)
	}
}

// An account SES will not send from (sending paused, suspended) holds every
// email, not just this one: the delivery is not closed as refused and no
// attempt is spent; the job is parked on the mail queue, and a CRITICAL
// alert says so. Once the account sends, the parked job sends the email once.
func TestBlockedAccountKeepsTheEmailForARetry(t *testing.T) {
	e := newEnv(t)
	paused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", "SendingPausedException")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"message":"Sending is paused for this account."}`))
	}))
	t.Cleanup(paused.Close)
	working := e.h.Transport
	e.h.Transport = &mail.SES{Client: mail.NewClient(awsenv.ForEndpoint(paused.URL, provision.TestRegion),
		func(o *sesv2.Options) { o.Retryer = aws.NopRetryer{} }), Now: time.Now}
	addr := uniqueAddress(t)
	id := e.paidSession(oracle.TierQuick, addr)
	e.ready(id, oracle.TierQuick, oracle.VerdictGreen)
	if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
		t.Fatal("the job failed: SQS would spend its receives instead of parking it")
	}
	a := e.alerts()
	if len(a) != 1 || !strings.Contains(a[0], "CRITICAL") || !strings.Contains(a[0], "| EMAIL_BLOCKED |") || strings.Contains(a[0], addr) {
		t.Fatalf("alerts %q", a)
	}
	if recs := e.mailRecords(); len(recs) != 0 {
		t.Fatalf("the delivery was recorded as finished: %+v", recs)
	}
	parked := e.mailJobs()
	if len(parked) != 1 || parked[0].Attempt != 0 || parked[0].NotBefore == nil || time.Until(*parked[0].NotBefore) < DefaultBlockedRetry-time.Minute {
		t.Fatalf("parked jobs %+v, want the first attempt again in %s", parked, DefaultBlockedRetry)
	}
	// The account sends again; the parked job comes back (with a duplicate).
	e.h.Transport = working
	due := parked[0]
	due.NotBefore = nil
	body, _ := json.Marshal(due)
	msg := events.SQSMessage{MessageId: "parked", Body: string(body)}
	if n := e.run(msg, msg); n != 0 {
		t.Fatal("the parked job failed")
	}
	if got := e.inbox(addr); len(got) != 1 {
		t.Fatalf("%d emails after the fix, want 1", len(got))
	}
}

// mailJobs are the jobs the handler sent to the mail queue: SQS hides
// delayed ones from a receive, so the test reads them as they are sent.
func (e *env) mailJobs() []queue.Job {
	e.t.Helper()
	e.mailSent.mu.Lock()
	defer e.mailSent.mu.Unlock()
	return append([]queue.Job(nil), e.mailSent.jobs...)
}

// VC-5: a failed audit write alerts and the customer still gets the
// verdict. The audit bucket does not exist, so moto refuses the write as S3
// would; the email goes out once and its delivery is recorded all the same.
func TestFailedAuditWriteAlertsAndTheVerdictIsStillSentOnce(t *testing.T) {
	e := newEnv(t)
	// A bucket name no test creates: the fixture's own, suffixed.
	e.h.Audit.Writer = audit.NewWriter(e.s3, e.f.Ref("AuditBucket")+"-missing")
	addr := uniqueAddress(t)
	id := e.paidSession(oracle.TierQuick, addr)
	e.ready(id, oracle.TierQuick, oracle.VerdictGreen)

	if n := e.run(record(id, "verdict")); n != 0 {
		t.Fatal("the job failed: an audit failure must not hold back the email")
	}
	// A redelivery finds the delivery record and sends nothing more.
	if n := e.run(record(id, "verdict")); n != 0 {
		t.Fatal("the redelivery failed")
	}
	got := e.inbox(addr)
	if len(got) != 1 {
		t.Fatalf("%d emails, want the verdict once", len(got))
	}
	if got[0].Subject != "Your 42 Sisters AI Verdict" {
		t.Fatalf("subject %q, want the verdict's", got[0].Subject)
	}
	if _, err := e.orders.ClaimMail(context.Background(), id, "verdict", 0, time.Minute); !errors.Is(err, store.ErrAlreadySent) {
		t.Fatalf("ClaimMail after the send: %v, want ErrAlreadySent (the delivery was not recorded)", err)
	}
	alerts := e.alerts()
	if len(alerts) != 1 || !strings.HasPrefix(alerts[0], "[ORACLE-ALERT] ERROR |") || !strings.Contains(alerts[0], "| AUDIT_WRITE_FAILED |") {
		t.Fatalf("alerts %q, want one ERROR AUDIT_WRITE_FAILED", alerts)
	}
	// Neither the alert nor the log may quote the customer's address or query.
	logs := e.logs.String()
	if !strings.Contains(logs, "audit write failed") {
		t.Fatal("the failed audit write was not logged")
	}
	for _, secret := range []string{addr, "bakery"} {
		if strings.Contains(alerts[0], secret) || strings.Contains(logs, secret) {
			t.Fatalf("%q leaked into the alert or the log", secret)
		}
	}
	// The failure seen is the one injected: nothing reached the real bucket.
	if recs := testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")); len(recs) != 0 {
		t.Fatalf("%d audit records in the real bucket, want 0", len(recs))
	}
}

func TestGarbageFailsAndAlerts(t *testing.T) {
	e := newEnv(t)
	for i, body := range []string{"{", `{"session_id":"cs_test_x","reason":"paid","attempt":0}`} {
		if n := e.run(events.SQSMessage{MessageId: fmt.Sprint("garbage-", i), Body: body}); n != 1 {
			t.Fatalf("%q did not fail", body)
		}
	}
	if a := e.alerts(); len(a) != 2 {
		t.Fatalf("%d alerts", len(a))
	}
	if c := e.metrics.Counts(); !maps.Equal(c, map[string]float64{"MailerRecordFailures": 2}) {
		t.Fatalf("counted %v, want one MailerRecordFailures per failed delivery", c)
	}
}

// The samples in events/mailer stay valid: jobs for sessions this stack
// has no order for are acknowledged, not failed.
func TestSampleEvents(t *testing.T) {
	e := newEnv(t)
	for file, ev := range testkit.SQSSamples(t, "mailer") {
		if n := e.run(ev.Records...); n != 0 {
			t.Fatalf("%s failed", file)
		}
	}
}

// setState puts an order into a state the generator would have left it in.
func (e *env) setState(id string, status oracle.Status, divergence string) {
	e.t.Helper()
	values := map[string]ddbtypes.AttributeValue{":s": &ddbtypes.AttributeValueMemberS{Value: string(status)}}
	update := "SET #s = :s"
	if divergence != "" {
		update += ", divergence = :d"
		values[":d"] = &ddbtypes.AttributeValueMemberS{Value: divergence}
	}
	_, err := dynamodb.NewFromConfig(e.f.AWS).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.f.Ref("OrdersTable")),
		Key:                       map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String(update),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: values,
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// setFailure records why the order failed or is held.
func (e *env) setFailure(id, failure string) {
	e.t.Helper()
	_, err := dynamodb.NewFromConfig(e.f.AWS).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.f.Ref("OrdersTable")),
		Key:                       map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("SET failure = :f"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":f": &ddbtypes.AttributeValueMemberS{Value: failure}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func TestOrderNoticesAreSentOnceAndOnlyInTheirState(t *testing.T) {
	tests := []struct {
		kind       oracle.MailKind
		notice     string
		status     oracle.Status
		divergence string
		failure    string
	}{
		{oracle.MailFailed, letter.Failed, oracle.StatusFailed, "", ""},
		{oracle.MailReview, letter.Review, oracle.StatusHeld, "", ""},
		{oracle.MailReview, letter.PaymentReview, oracle.StatusHeld, "", oracle.HoldAmountMismatch},
		{oracle.MailDivergence, letter.Divergence, oracle.StatusReady, oracle.DivergenceSignificant, ""},
		{oracle.MailRefund, letter.Refund, oracle.StatusRefunded, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.notice, func(t *testing.T) {
			e := newEnv(t)
			addr := uniqueAddress(t)
			id := e.paidSession(oracle.TierFull, addr)
			e.ready(id, oracle.TierFull, oracle.VerdictGreen)
			// Not in its state yet (a READY order without divergence, or
			// READY with a minor one): nothing is sent, the job is done.
			e.setState(id, oracle.StatusReady, oracle.DivergenceMinor)
			if n := e.run(record(id, tc.kind)); n != 0 {
				t.Fatal("the job failed")
			}
			if got := e.inbox(addr); len(got) != 0 {
				t.Fatalf("a %s notice was sent to an order not owed it", tc.kind)
			}
			e.setState(id, tc.status, tc.divergence)
			if tc.failure != "" {
				e.setFailure(id, tc.failure)
			}
			e.run(record(id, tc.kind), record(id, tc.kind))
			e.run(record(id, tc.kind))
			want, err := letter.Notice(letter.DefaultBrand(), tc.notice, "http://localhost:3000/oracle/result?session_id="+id)
			if err != nil {
				t.Fatal(err)
			}
			got := e.inbox(addr)
			if len(got) != 1 || got[0].Subject != want.Subject || got[0].Text != want.Text {
				t.Fatalf("%d notices, want exactly one %q: %+v", len(got), want.Subject, got)
			}
			recs := testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket"))
			sent := 0
			for _, r := range recs {
				if r.Status == audit.StatusEmailSent && r.Event != audit.EventMailAttempt {
					sent++
				}
			}
			if sent != 1 {
				t.Errorf("%d EMAIL_SENT records, want 1", sent)
			}
		})
	}
}

// readyWith stores a READY quick verdict whose summary is given, as a
// generator with gate 1 disabled would have stored it.
func (e *env) readyWith(id, summary string) {
	e.t.Helper()
	e.readyWithQuery(id, "Should I open a bakery?", summary)
}

// readyWithQuery is readyWith for an order of the query given.
func (e *env) readyWithQuery(id, query, summary string) {
	e.t.Helper()
	ctx := context.Background()
	c, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: query,
		AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC()}, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	_ = e.orders.JobEnqueued(ctx, id, c.Lease)
	_, tok, err := e.orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	canon, err := oracle.Analysis{Verdict: oracle.VerdictAmber, Summary: summary}.CanonicalJSON()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.orders.StoreVerdict(ctx, id, tok, store.StoredVerdict{Canonical: string(canon), Hash: e.h.Hasher.Hash(string(canon)), Model: "gemini-2.5-flash", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		e.t.Fatal(err)
	}
}

// VC-5 (GAP-G): with gate 1 out of the way, a contaminated verdict is
// stopped by gate 2 alone: nothing is sent, the email is kept whole for
// review, the order is no longer served, the operator is alerted, and the
// customer gets the review notice instead.
func TestGateTwoStopsWhatGateOneMissed(t *testing.T) {
	e := newEnv(t)
	addr := uniqueAddress(t)
	id := e.paidSession(oracle.TierQuick, addr)
	e.readyWith(id, "The CSDM reading says the timing is wrong.")
	if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
		t.Fatal("the job failed")
	}
	if got := e.inbox(addr); len(got) != 0 {
		t.Fatalf("%d emails sent, want none", len(got))
	}
	o, _, _ := e.orders.Get(context.Background(), id)
	if o.Status != oracle.StatusQuarantined || o.QuarantineGate != "mailer" || !slices.Equal(o.QuarantineTerms, []string{"cat3.csdm"}) || o.QuarantineRecord == "" {
		t.Fatalf("order %+v, want QUARANTINED at the mailer", o)
	}
	if f := e.filterRecords(); len(f) != 1 || f[0].Action != "QUARANTINE" || !slices.Equal(f[0].TermIDs, []string{"cat3.csdm"}) {
		t.Fatalf("filter records %+v", f)
	}
	out, err := e.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(e.f.Ref("QuarantineBucket")), Key: aws.String(o.QuarantineRecord)})
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		quarantine.Record
		Raw quarantine.Mail `json:"raw_payload"`
	}
	if err := json.NewDecoder(out.Body).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	if rec.Gate != "mailer" || rec.MailKind != "verdict" || rec.Model != "gemini-2.5-flash" || !strings.Contains(rec.Raw.Text, "CSDM") || !strings.Contains(rec.Raw.HTML, "CSDM") || rec.Raw.Subject == "" {
		t.Fatalf("quarantine record %+v", rec)
	}
	alerts := e.alerts()
	if len(alerts) != 1 || !strings.HasPrefix(alerts[0], "[ORACLE-ALERT] CRITICAL |") || !strings.Contains(alerts[0], "| EMAIL_QUARANTINED |") || strings.Contains(alerts[0], id) {
		t.Fatalf("alerts %q", alerts)
	}
	var mails []queue.Job
	for _, b := range testkit.Drain(t, e.sqs, e.f.Ref("MailQueue")) {
		j, _ := queue.Parse(b)
		mails = append(mails, j)
	}
	if len(mails) != 1 || mails[0].Kind != oracle.MailReview {
		t.Fatalf("mail jobs %+v: want the review notice", mails)
	}
	// The review notice itself passes the gate and is sent; the verdict
	// job again sends nothing.
	e.run(record(id, oracle.MailReview), record(id, oracle.MailVerdict))
	if got := e.inbox(addr); len(got) != 1 || !strings.Contains(got[0].Subject, "review") {
		t.Fatalf("emails %+v, want only the review notice", got)
	}
	// That verdict job found the order quarantined and queued the review
	// notice again, in case the attempt that quarantined it died first.
	if n := reviewNotices(e.mailSent.jobs); n != 2 {
		t.Fatalf("%d review notices queued, want the first and the repeat", n)
	}
}

// SOS invariant 1 has no exceptions: the verdict letter may show the
// customer their own submission, whatever it holds, but a listed term the
// submission holds is stopped anywhere else in the email.
func TestGateTwoLeavesOnlyTheSubmissionToTheCustomer(t *testing.T) {
	for _, tc := range []struct {
		name, summary string
		sent          bool
	}{
		{"the submission shown back", "The name is taken by a larger firm.", true},
		{"the verdict repeats it", "CSDM is taken by a larger firm.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			addr := uniqueAddress(t)
			id := e.paidSession(oracle.TierQuick, addr)
			e.readyWithQuery(id, "Is CSDM a good name for my firm?", tc.summary)
			if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
				t.Fatal("the job failed")
			}
			got := e.inbox(addr)
			o, _, _ := e.orders.Get(context.Background(), id)
			if !tc.sent {
				if len(got) != 0 || o.Status != oracle.StatusQuarantined || !slices.Equal(o.QuarantineTerms, []string{"cat3.csdm"}) {
					t.Fatalf("%d emails, order %s %v: want none sent and QUARANTINED", len(got), o.Status, o.QuarantineTerms)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Text, "YOUR SUBMISSION:\nIs CSDM a good name for my firm?") || o.Status == oracle.StatusQuarantined {
				t.Fatalf("emails %+v, order %s: want the verdict sent with the submission", got, o.Status)
			}
		})
	}
}

// If the review record cannot be written, nothing is sent and the job is
// retried (fail closed, GAP-L).
func TestGateTwoFailsClosedWhenItsRecordCannotBeWritten(t *testing.T) {
	e := newEnv(t)
	e.h.Quarantine = quarantine.NewStore(e.s3, e.f.Ref("QuarantineBucket")+"-missing")
	addr := uniqueAddress(t)
	id := e.paidSession(oracle.TierQuick, addr)
	e.readyWith(id, "Our LATTICE model is unsure.")
	if n := e.run(record(id, oracle.MailVerdict)); n != 1 {
		t.Fatal("the job did not fail for a retry")
	}
	if got := e.inbox(addr); len(got) != 0 {
		t.Fatalf("%d emails sent", len(got))
	}
	if o, _, _ := e.orders.Get(context.Background(), id); o.Status != oracle.StatusReady {
		t.Fatalf("order %s", o.Status)
	}
	if alerts := e.alerts(); len(alerts) != 1 || !strings.Contains(alerts[0], "| QUARANTINE_RECORD_FAILED |") {
		t.Fatalf("alerts %q", alerts)
	}
	// The claim was released: the retry is not refused as "in flight".
	e.h.Quarantine = quarantine.NewStore(e.s3, e.f.Ref("QuarantineBucket"))
	if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
		t.Fatal("the retry failed")
	}
	if o, _, _ := e.orders.Get(context.Background(), id); o.Status != oracle.StatusQuarantined {
		t.Fatalf("after the retry: %s", o.Status)
	}
}

// failingQuarantine is the order store with QuarantineReady failing once.
type failingQuarantine struct {
	*store.Orders
	failed bool
}

func (f *failingQuarantine) QuarantineReady(ctx context.Context, id string, q store.Quarantine) (bool, error) {
	if !f.failed {
		f.failed = true
		return false, errors.New("injected: the order write failed")
	}
	return f.Orders.QuarantineReady(ctx, id, q)
}

// If the order cannot be marked QUARANTINED, the delivery stays open: the
// retry stops the verdict again and the order is no longer served, instead
// of the retry finding the mail done and the page still serving the verdict.
func TestGateTwoRetriesWhenTheOrderCannotBeQuarantined(t *testing.T) {
	e := newEnv(t)
	e.h.Orders = &failingQuarantine{Orders: e.orders}
	addr := uniqueAddress(t)
	id := e.paidSession(oracle.TierQuick, addr)
	e.readyWith(id, "The CSDM reading says the timing is wrong.")
	if n := e.run(record(id, oracle.MailVerdict)); n != 1 {
		t.Fatal("the job did not fail for a retry")
	}
	if o, _, _ := e.orders.Get(context.Background(), id); o.Status != oracle.StatusReady {
		t.Fatalf("order %s after the failed write", o.Status)
	}
	if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
		t.Fatal("the retry failed")
	}
	if o, _, _ := e.orders.Get(context.Background(), id); o.Status != oracle.StatusQuarantined || o.QuarantineGate != "mailer" {
		t.Fatalf("after the retry: %s at %q, want QUARANTINED at the mailer", o.Status, o.QuarantineGate)
	}
	if got := e.inbox(addr); len(got) != 0 {
		t.Fatalf("%d emails sent", len(got))
	}
	if n := reviewNotices(e.mailSent.jobs); n != 1 {
		t.Fatalf("%d review notices queued, want one", n)
	}
}

// reviewNotices counts the review notices among jobs.
func reviewNotices(jobs []queue.Job) int {
	n := 0
	for _, j := range jobs {
		if j.Kind == oracle.MailReview {
			n++
		}
	}
	return n
}

// TestTheCustomersWaitForTheEmailIsRecorded (AUDIT INV-6, VC-2): the
// verdict email's record carries the customer's wait from the payment to
// the email sent; over 60 s, it counts CustomerWaitsOverAMinute.
func TestTheCustomersWaitForTheEmailIsRecorded(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		ago   time.Duration
		slows float64
	}{{5 * time.Second, 0}, {75 * time.Second, 1}} {
		id := e.paidSession(oracle.TierQuick, uniqueAddress(t))
		e.readyPaidAt(id, oracle.TierQuick, oracle.VerdictGreen, time.Now().UTC().Add(-c.ago))
		if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
			t.Fatal("the verdict mail failed")
		}
		var wait int64 = -1
		for _, r := range e.mailRecords() {
			if r.SessionID == id && r.Status == audit.StatusEmailSent {
				wait = r.WaitMS
			}
		}
		// At least the time since the payment, not the mailer's own time.
		if wait < c.ago.Milliseconds() || wait > (c.ago+time.Minute).Milliseconds() {
			t.Errorf("paid %s ago: wait_ms %d", c.ago, wait)
		}
		if n := e.metrics.Counts()["CustomerWaitsOverAMinute"]; n != c.slows {
			t.Errorf("paid %s ago: CustomerWaitsOverAMinute %v, want %v", c.ago, n, c.slows)
		}
		// The wait itself is the dashboard's EmailWait, on the line that
		// counts the email sent.
		if w := e.metrics.Values(obs.EmailWait); len(w) == 0 || w[len(w)-1] != float64(wait) {
			t.Errorf("paid %s ago: EmailWait %v, want %d last", c.ago, w, wait)
		}
	}
	if w, n := e.metrics.Values(obs.EmailWait), e.metrics.Counts()[obs.EmailsSent]; len(w) != 2 || n != 2 {
		t.Errorf("EmailWait %v, EmailsSent %v: want one of each a verdict email", w, n)
	}
}

// testAlertTimeout is a test's budget for an alert, not Lambda's: the
// alert's Ledger dedupe gets a third of it, and make test's shared moto
// can take over a second to answer under load.
const testAlertTimeout = 30 * time.Second
