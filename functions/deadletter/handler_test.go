package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// env is the handler on a freshly provisioned copy of the template, wired
// as main wires it, with a tap on the alerts topic and its logs kept.
type env struct {
	t       *testing.T
	f       *provision.Fixture
	h       *Handler
	alerts  func() []string
	logs    *testkit.Buffer
	metrics *testkit.Metrics
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := provision.ForTest(t, nil)
	e := &env{t: t, f: f, logs: &testkit.Buffer{}, metrics: &testkit.Metrics{}}
	e.alerts = testkit.AlertTap(t, f.AWS, f.Ref("AlertsTopic"), provision.TestRegion, provision.Account)
	log := obs.NewLogger(e.logs, "DEBUG")
	e.h = &Handler{
		Records: store.NewLedger(awsenv.NewTables(f.AWS), f.Ref("LedgerTable"), time.Now),
		// As main: no dedupe window, one alert per message.
		Alerts:    &alert.Alerter{SNS: awsenv.NewTopics(f.AWS), Topic: f.Ref("AlertsTopic"), Log: log},
		Retention: DefaultRetentionDays * 24 * time.Hour,
		Metrics:   e.metrics,
		Log:       log,
	}
	return e
}

// message is a record of the dead-letter queue queueID (a logical id of
// the template) as Lambda delivers it.
func (e *env) message(queueID, id, body string) events.SQSMessage {
	return events.SQSMessage{
		MessageId: id, Body: body, EventSource: "aws:sqs", EventSourceARN: e.f.Attr(queueID + ".Arn"),
		Attributes: map[string]string{"SentTimestamp": "1795262060000", "ApproximateReceiveCount": "1"},
	}
}

// run hands the records to the handler as one batch and returns the ids it
// reported failed.
func (e *env) run(recs ...events.SQSMessage) []string {
	e.t.Helper()
	resp, err := e.h.Handle(context.Background(), events.SQSEvent{Records: recs})
	if err != nil {
		e.t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

// record reads the Ledger record of a message of the queue queueID.
func (e *env) record(queueID, id string) map[string]ddbtypes.AttributeValue {
	e.t.Helper()
	key := store.DeadLetterKey(queueName(e.f.Attr(queueID+".Arn")), id)
	out, err := dynamodb.NewFromConfig(e.f.AWS).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(e.f.Ref("LedgerTable")),
		Key:            map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Item
}

// records counts the dead-letter records in the Ledger.
func (e *env) records() int {
	e.t.Helper()
	out, err := dynamodb.NewFromConfig(e.f.AWS).Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.f.Ref("LedgerTable"))})
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, item := range out.Items {
		if pk, ok := item["pk"].(*ddbtypes.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, "deadletter#") {
			n++
		}
	}
	return n
}

func str(item map[string]ddbtypes.AttributeValue, name string) string {
	switch v := item[name].(type) {
	case *ddbtypes.AttributeValueMemberS:
		return v.Value
	case *ddbtypes.AttributeValueMemberN:
		return v.Value
	}
	return ""
}

// deadAlerts keeps the JOB_DEAD_LETTERED alerts of alerts.
func deadAlerts(alerts []string) []string {
	var out []string
	for _, a := range alerts {
		if strings.Contains(a, "] CRITICAL |") && (strings.Contains(a, "| "+string(alert.JobDeadLettered)+" |") || strings.Contains(a, "| "+string(alert.InboxFailed)+" |")) {
			out = append(out, a)
		}
	}
	return out
}

// garbage is a body that is no job and holds what no record, log line or
// alert may show.
const garbage = `{"session_id":"cs_test_garbage","query":"Should I open a bakery?","email":"someone@example.com"}`

// Every dead message, a garbage body or a job, raises its own alert and
// leaves its own record, two jobs of one session included; the garbage is
// kept only as its hash and size.
func TestEveryDeadMessageAlertsOnceAndIsRecorded(t *testing.T) {
	e := newEnv(t)
	const session = "cs_test_deadletterBoth00001DeadletterBoth"
	gen, _ := json.Marshal(queue.Job{SessionID: session, Reason: queue.ReasonPaid, Attempt: 4})
	mail, _ := json.Marshal(queue.Job{SessionID: session, Kind: "verdict", Attempt: 1})
	recs := []events.SQSMessage{
		e.message("DeadLetterQueue", "msg-garbage", garbage),
		e.message("DeadLetterQueue", "msg-generate", string(gen)),
		e.message("DeadLetterQueue", "msg-mail", string(mail)),
	}
	// SQS names the queue a message left for the dead-letter queue, which
	// every source shares: the garbage's alert says where it came from.
	recs[0].Attributes["DeadLetterQueueSourceArn"] = e.f.Attr("MailQueue.Arn")
	recs[1].Attributes["DeadLetterQueueSourceArn"] = e.f.Attr("GenerateQueue.Arn")
	if failed := e.run(recs...); len(failed) != 0 {
		t.Fatalf("failed %v, want every message recorded", failed)
	}

	alerts := e.alerts()
	dead := deadAlerts(alerts)
	if len(dead) != 3 || len(alerts) != 3 {
		t.Fatalf("alerts %q, want three CRITICAL JOB_DEAD_LETTERED", alerts)
	}
	if e.records() != 3 {
		t.Fatalf("%d records, want 3", e.records())
	}
	if c := e.metrics.Counts(); !maps.Equal(c, map[string]float64{"DeadLetters": 3}) {
		t.Fatalf("counted %v, want DeadLetters 3", c)
	}
	sum := sha256.Sum256([]byte(garbage))
	tests := []struct {
		queueID, id string
		want        map[string]string // record attributes ("" = absent)
		alert       []string          // what its alert says
	}{
		{"DeadLetterQueue", "msg-garbage",
			map[string]string{"body_sha256": hex.EncodeToString(sum[:]), "body_bytes": "96", "job": "", "session_id": "", "attempt": "",
				"sent_at": "2026-11-21T11:54:20Z", "message_id": "msg-garbage"},
			[]string{"| msg-garbage |", "unreadable message (96 bytes) from " + queueName(e.f.Attr("MailQueue.Arn")) + " reached", "as message msg-garbage"}},
		{"DeadLetterQueue", "msg-generate",
			map[string]string{"job": string(gen), "session_id": session, "reason": "paid", "kind": "", "attempt": "4", "body_sha256": "", "body_bytes": ""},
			[]string{"| cs_test_deadletterBoth00 |", "generate job (reason paid, attempt 4)", "as message msg-generate"}},
		{"DeadLetterQueue", "msg-mail",
			map[string]string{"job": string(mail), "session_id": session, "kind": "verdict", "reason": "", "attempt": "1"},
			[]string{"| cs_test_deadletterBoth00 |", "mail job (kind verdict, attempt 1)", "as message msg-mail"}},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			q := queueName(e.f.Attr(tc.queueID + ".Arn"))
			item := e.record(tc.queueID, tc.id)
			if item == nil {
				t.Fatal("no record")
			}
			want := map[string]string{"queue": q, "message_id": tc.id}
			for k, v := range tc.want {
				want[k] = v
			}
			for name, v := range want {
				if got := str(item, name); got != v {
					t.Errorf("record %s = %q, want %q", name, got, v)
				}
			}
			if dead, err := time.Parse(time.RFC3339Nano, str(item, "dead_at")); err != nil || time.Since(dead) > time.Minute {
				t.Errorf("dead_at %q", str(item, "dead_at"))
			}
			if exp, err := strconv.ParseInt(str(item, "expires_at"), 10, 64); err != nil || exp < time.Now().Add(89*24*time.Hour).Unix() {
				t.Errorf("expires_at %s, want 90 days from now", str(item, "expires_at"))
			}
			i := slices.IndexFunc(dead, func(a string) bool { return strings.Contains(a, "as message "+tc.id+";") })
			if i < 0 {
				t.Fatalf("no alert for %s in %q", tc.id, dead)
			}
			for _, s := range append(tc.alert, " reached "+q+" ", "the record "+store.DeadLetterKey(q, tc.id)+" keeps it") {
				if !strings.Contains(dead[i], s) {
					t.Errorf("alert %q does not say %q", dead[i], s)
				}
			}
		})
	}

	// Nothing of the garbage body anywhere but its hash; no whole session id.
	for _, secret := range []string{"bakery", "someone@example.com", "cs_test_garbage"} {
		for where, text := range map[string]string{"alerts": strings.Join(alerts, "\n"), "logs": e.logs.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s show %q", where, secret)
			}
		}
		for name, v := range e.record("DeadLetterQueue", "msg-garbage") {
			if strings.Contains(str(map[string]ddbtypes.AttributeValue{name: v}, name), secret) {
				t.Errorf("the garbage record's %s holds %q", name, secret)
			}
		}
	}
	if strings.Contains(strings.Join(alerts, "\n"), session) {
		t.Errorf("an alert shows the whole session id: %q", alerts)
	}
	// One line per message, naming it and its queue.
	for _, id := range []string{"msg-garbage", "msg-generate", "msg-mail"} {
		if n := strings.Count(e.logs.String(), `"message_id":"`+id+`"`); n != 1 {
			t.Errorf("%d log lines name %s, want one", n, id)
		}
	}
	if !strings.Contains(e.logs.String(), `"order":"`+oracle.ShortID(session)+`"`) || strings.Contains(e.logs.String(), session) {
		t.Error("no log line names the jobs' order by its name, or one holds its whole id")
	}
}

// Autoresponse jobs name no session: each still gets its record and its
// own alert.
func TestDeadAutoresponsesAlertEachOnce(t *testing.T) {
	e := newEnv(t)
	var recs []events.SQSMessage
	for i := range 2 {
		job, _ := json.Marshal(queue.Job{Kind: oracle.MailAutoresponse, Inbox: fmt.Sprintf("inbound/dead-%d", i), Attempt: 3})
		recs = append(recs, e.message("DeadLetterQueue", fmt.Sprintf("msg-auto-%d", i), string(job)))
	}
	if failed := e.run(recs...); len(failed) != 0 {
		t.Fatalf("failed %v", failed)
	}
	dead := deadAlerts(e.alerts())
	if len(dead) != 2 || e.records() != 2 {
		t.Fatalf("alerts %q and %d records, want 2 and 2", dead, e.records())
	}
	for _, a := range dead {
		if !strings.Contains(a, "an autoresponse job (attempt 3)") {
			t.Errorf("alert %q", a)
		}
	}
}

// A chat account's email names no session: a dead chat mail job, valid or
// garbage (an address where the account's keyed hash belongs), gets its
// record and an alert naming its kind and nonce, never the address.
func TestDeadChatMailJobsNameTheirKindAndNonce(t *testing.T) {
	e := newEnv(t)
	const account, addr = "hmac-sha256:0123456789abcdef0123456789abcdef", "person@example.com"
	valid, _ := json.Marshal(queue.Job{Kind: oracle.MailChatSignIn, Account: account, Nonce: "req_0123456789", Attempt: 2})
	cases := []struct{ id, body, says string }{
		{"msg-chat", string(valid), "a chat_signin mail job for req_0123456789 (attempt 2)"},
		{"msg-chat-garbage", `{"kind":"chat_payment_failed","account":"` + addr + `","nonce":"in_1MtHbELkdIwHu7ix","attempt":0}`,
			"an unreadable chat_payment_failed mail job for in_1MtHbELkdIwHu7ix"},
		{"msg-chat-no-nonce", `{"kind":"chat_signin","account":"` + addr + `","nonce":"` + addr + `","attempt":0}`,
			"an unreadable chat_signin mail job for no readable nonce"},
	}
	var recs []events.SQSMessage
	for _, c := range cases {
		recs = append(recs, e.message("DeadLetterQueue", c.id, c.body))
	}
	if failed := e.run(recs...); len(failed) != 0 {
		t.Fatalf("failed %v", failed)
	}
	alerts := e.alerts()
	dead := deadAlerts(alerts)
	if len(dead) != len(cases) || e.records() != len(cases) {
		t.Fatalf("alerts %q and %d records, want %d and %d", dead, e.records(), len(cases), len(cases))
	}
	for _, c := range cases {
		i := slices.IndexFunc(dead, func(a string) bool { return strings.Contains(a, "as message "+c.id+";") })
		if i < 0 || !strings.Contains(dead[i], c.says) {
			t.Errorf("%s: alerts %q, want one saying %q", c.id, dead, c.says)
		}
	}
	if str(e.record("DeadLetterQueue", "msg-chat"), "job") != string(valid) {
		t.Error("the valid job is not kept whole for a redrive")
	}
	for where, text := range map[string]string{"alerts": strings.Join(alerts, "\n"), "logs": e.logs.String()} {
		if strings.Contains(text, addr) {
			t.Errorf("the %s show the address", where)
		}
	}
	if !strings.Contains(e.logs.String(), `"nonce":"req_0123456789"`) {
		t.Error("no log line names the chat job's nonce")
	}
}

// SQS delivers at least once: the same dead message again, in turn or ten
// times at once, keeps its one record and raises no second alert.
func TestRedeliveredDeadMessageAlertsOnce(t *testing.T) {
	e := newEnv(t)
	job, _ := json.Marshal(queue.Job{SessionID: "cs_test_deadletterAgain0001", Kind: "verdict", Attempt: 3})
	again := e.message("DeadLetterQueue", "msg-again", string(job))
	for range 2 {
		if failed := e.run(again); len(failed) != 0 {
			t.Fatalf("failed %v", failed)
		}
	}
	if a := deadAlerts(e.alerts()); len(a) != 1 {
		t.Fatalf("alerts %q after two deliveries, want one", a)
	}

	concurrent := e.message("DeadLetterQueue", "msg-concurrent", garbage)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if failed := e.run(concurrent); len(failed) != 0 {
				t.Errorf("failed %v", failed)
			}
		})
	}
	wg.Wait()
	if a := deadAlerts(e.alerts()); len(a) != 1 || !strings.Contains(a[0], "msg-concurrent") {
		t.Fatalf("alerts %q after ten deliveries at once, want one", a)
	}
	if n := e.records(); n != 2 {
		t.Fatalf("%d records, want one per message", n)
	}
	if c := e.metrics.Counts(); !maps.Equal(c, map[string]float64{"DeadLetters": 2}) {
		t.Fatalf("counted %v after twelve deliveries of two messages, want DeadLetters 2", c)
	}
}

// When the record cannot be written the message is reported failed, so
// SQS keeps it and delivers it again; no alert claims a record exists.
func TestLedgerFailureKeepsTheMessage(t *testing.T) {
	e := newEnv(t)
	e.h.Records = store.NewLedger(awsenv.NewTables(e.f.AWS), e.f.Ref("LedgerTable")+"-missing", time.Now)
	job, _ := json.Marshal(queue.Job{SessionID: "cs_test_deadletterLost00001DeadletterLost", Reason: queue.ReasonRegenerate, Attempt: 5})
	recs := []events.SQSMessage{
		e.message("DeadLetterQueue", "msg-job", string(job)),
		e.message("DeadLetterQueue", "msg-garbage", garbage),
	}
	failed := e.run(recs...)
	slices.Sort(failed)
	if !slices.Equal(failed, []string{"msg-garbage", "msg-job"}) {
		t.Fatalf("failed %v, want both messages kept", failed)
	}
	if a := e.alerts(); len(a) != 0 {
		t.Fatalf("alerts %q, want none: nothing was recorded", a)
	}
	if c := e.metrics.Counts(); !maps.Equal(c, map[string]float64{"DeadLetterRecordFailures": 2}) {
		t.Fatalf("counted %v, want two record failures and no dead letter", c)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "not recorded") || !strings.Contains(logs, "(session cs_test_deadletterLost00)") {
		t.Errorf("the failure is not logged with its session cut short:\n%s", logs)
	}
	if strings.Contains(logs, "bakery") {
		t.Errorf("the logs show a body:\n%s", logs)
	}

	// Once the Ledger answers, the message SQS delivers again is recorded
	// and alerted.
	e.h.Records = store.NewLedger(awsenv.NewTables(e.f.AWS), e.f.Ref("LedgerTable"), time.Now)
	if failed := e.run(recs...); len(failed) != 0 {
		t.Fatalf("failed %v once the Ledger answers", failed)
	}
	if a := deadAlerts(e.alerts()); len(a) != 2 {
		t.Fatalf("alerts %q, want one per message", a)
	}
	if c := e.metrics.Counts(); c["DeadLetters"] != 2 {
		t.Fatalf("counted %v, want DeadLetters 2 once recorded", c)
	}
}

// The samples in events/deadletter stay valid: each is recorded and
// alerted, and none is reported failed.
func TestSampleEvents(t *testing.T) {
	e := newEnv(t)
	samples := testkit.SQSSamples(t, "deadletter")
	if len(samples) < 2 {
		t.Fatalf("%d samples, want a job and a garbage message", len(samples))
	}
	for file, ev := range samples {
		if failed := e.run(ev.Records...); len(failed) != 0 {
			t.Fatalf("%s failed", file)
		}
		if a := deadAlerts(e.alerts()); len(a) != 1 {
			t.Fatalf("%s: alerts %q, want one", file, a)
		}
	}
}

// A record that did not come from a queue cannot be filed: it is failed,
// never acknowledged unrecorded.
func TestRecordWithoutItsQueueIsFailed(t *testing.T) {
	h := &Handler{Records: recordsFunc(func(store.DeadLetter) (bool, error) {
		t.Fatal("recorded")
		return false, nil
	}), Alerts: &testkit.Alerts{}, Log: obs.NewLogger(&testkit.Buffer{}, "INFO")}
	for name, rec := range map[string]events.SQSMessage{
		"no ARN":        {MessageId: "m", Body: garbage},
		"not an ARN":    {MessageId: "m", Body: garbage, EventSourceARN: "DeadLetterQueue"},
		"no message id": {Body: garbage, EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:q"},
	} {
		resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec}})
		if len(resp.BatchItemFailures) != 1 {
			t.Errorf("%s: acknowledged", name)
		}
	}
}

type recordsFunc func(store.DeadLetter) (bool, error)

func (f recordsFunc) RecordDeadLetter(_ context.Context, d store.DeadLetter, _ time.Duration) (bool, error) {
	return f(d)
}

func TestSentAt(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{"1795262060000", time.Date(2026, 11, 21, 11, 54, 20, 0, time.UTC)},
		{"1795262060123", time.Date(2026, 11, 21, 11, 54, 20, 123e6, time.UTC)},
		{"", time.Time{}},
		{"soon", time.Time{}},
		{"-5", time.Time{}},
	}
	for _, tc := range tests {
		if got := sentAt(tc.in); !got.Equal(tc.want) {
			t.Errorf("sentAt(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSettings(t *testing.T) {
	base := map[string]string{"LEDGER_TABLE": "ledger", "ALERTS_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:alerts"}
	tests := []struct {
		name    string
		set     map[string]string
		want    time.Duration
		problem string
	}{
		{"default retention", nil, 90 * 24 * time.Hour, ""},
		{"the shortest retention", map[string]string{"DEAD_LETTER_RETENTION_DAYS": "14"}, 14 * 24 * time.Hour, ""},
		{"shorter than the queues keep a message", map[string]string{"DEAD_LETTER_RETENTION_DAYS": "13"}, 0, "DEAD_LETTER_RETENTION_DAYS"},
		{"not a number", map[string]string{"DEAD_LETTER_RETENTION_DAYS": "ninety"}, 0, "DEAD_LETTER_RETENTION_DAYS"},
		{"no ledger", map[string]string{"LEDGER_TABLE": ""}, 0, "LEDGER_TABLE"},
		{"no topic", map[string]string{"ALERTS_TOPIC_ARN": ""}, 0, "ALERTS_TOPIC_ARN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{}
			for k, v := range base {
				vars[k] = v
			}
			for k, v := range tc.set {
				vars[k] = v
			}
			s, err := readSettings(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("err = %v, want one naming %s", err, tc.problem)
				}
				return
			}
			if err != nil || s.Retention != tc.want || s.LedgerTable != "ledger" || s.AlertsTopic == "" {
				t.Fatalf("settings %+v, %v", s, err)
			}
		})
	}
}

// A failed invocation of the inbox function (its record on the on-failure
// destination, after Lambda's two retries) is recorded once with the
// stored message it named, for `make inbox-replay`, and alerted CRITICAL
// INBOX_FAILED naming that message and how to read and replay it; the
// record's request (SES's event, with addresses) is kept only as its hash.
func TestAFailedInboxInvocationIsRecordedAndAlerted(t *testing.T) {
	e := newEnv(t)
	samples := testkit.SQSSamples(t, "deadletter")
	ev, ok := samples["../../events/deadletter/inbox-failure.json"]
	if !ok {
		t.Fatalf("no events/deadletter/inbox-failure.json among %v", slices.Collect(maps.Keys(samples)))
	}
	rec := ev.Records[0]
	rec.EventSourceARN = e.f.Attr("DeadLetterQueue.Arn")
	for range 2 { // SQS delivers it again: one record, one alert
		if failed := e.run(rec); len(failed) != 0 {
			t.Fatalf("failed %v", failed)
		}
	}
	const object = "inbound/o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1"
	var got []string
	for _, a := range e.alerts() {
		if strings.Contains(a, "| "+string(alert.InboxFailed)+" |") {
			got = append(got, a)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "] CRITICAL |") || !strings.Contains(got[0], "stored as "+object+" (RetriesExhausted after 3 attempts") ||
		!strings.Contains(got[0], "make ops ACTION=inbox SHOW=o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1") || !strings.Contains(got[0], "make inbox-replay") {
		t.Fatalf("alerts %q, want one INBOX_FAILED naming %s", got, object)
	}
	dead, err := store.NewDeadLetters(awsenv.NewQueries(e.f.AWS), e.f.Ref("LedgerTable")).DeadJobs(context.Background(), queueName(rec.EventSourceARN))
	if err != nil || len(dead) != 1 || dead[0].Inbox != object || dead[0].BodySHA256 == "" {
		t.Fatalf("records %+v %v, want one naming %s", dead, err, object)
	}
	for _, item := range testkit.TableItems(t, e.f.AWS, e.f.Ref("LedgerTable")) {
		if strings.Contains(item, "@") {
			t.Errorf("a Ledger item holds an address: %s", item)
		}
	}
	if strings.Contains(e.logs.String(), "customer@example.com") || strings.Contains(strings.Join(got, ""), "customer@example.com") {
		t.Errorf("a log line or the alert holds the sender's address")
	}
}
