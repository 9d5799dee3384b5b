package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/local/runtimeapi"
	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/crashpoint"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
)

// CrashOrdersEnv sets how many orders are killed at each crash point:
// `make test` kills one per point, `make crash` more.
const CrashOrdersEnv = "ORACLE_CRASH_ORDERS"

// crashCase is one crash point and what an order killed there ends with.
type crashCase struct {
	point    crashpoint.Point
	function string // the logical id of the function killed
	// generations is how many generation leases the order took: a kill
	// before the verdict is stored costs the attempt in flight.
	generations int
	// emails is how many emails the customer gets: a kill after the send
	// and before its record sends the email again (the duplicate window).
	emails int
}

var crashCases = []crashCase{
	{crashpoint.GeneratorLeased, "GeneratorFunction", 2, 1},
	{crashpoint.GeneratorReplied, "GeneratorFunction", 2, 1},
	{crashpoint.GeneratorFiltered, "GeneratorFunction", 2, 1},
	{crashpoint.GeneratorStored, "GeneratorFunction", 1, 1},
	{crashpoint.MailerClaimed, "MailerFunction", 1, 1},
	{crashpoint.MailerSent, "MailerFunction", 1, 2},
	{crashpoint.MailerRecorded, "MailerFunction", 1, 1},
	{crashpoint.GeneratorHandedOver, "GeneratorFunction", 1, 1},
}

// TestCrashAtEveryStep kills the generator and the mailer with SIGKILL at
// each step boundary (shared/crashpoint), one paid order after another,
// and shows each order ending with exactly one verdict stored and exactly
// one email, through SQS's redelivery of the crashed job alone, but after
// the send and before its record: there the customer gets the email twice,
// one extra email per crash, never more. Each order also ends with its
// email's audit records, however late the kill. For every email sent it measures
// that window, from SES receiving the send to the delivery's record.
func TestCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	perPoint := 1
	if v := os.Getenv(CrashOrdersEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of orders per crash point", CrashOrdersEnv, v)
		}
		perPoint = n
	}
	o := options(t)
	o.ScheduleOff = true // nothing but the redelivery recovers an order
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// Every point is covered, and only once.
	var covered []crashpoint.Point
	for _, c := range crashCases {
		covered = append(covered, c.point)
	}
	if !slices.Equal(covered, crashpoint.Points()) {
		t.Fatalf("the cases cover %q, want every crash point %q", covered, crashpoint.Points())
	}

	var sessions []string
	for _, c := range crashCases {
		t.Run(strings.ReplaceAll(string(c.point), "/", "_"), func(t *testing.T) {
			started := time.Now()
			for i := range perPoint {
				sessions = append(sessions, crashOne(ctx, t, s, c, i))
			}
			t.Logf("%s: %d order(s) killed and recovered in %v", c.point, perPoint, time.Since(started).Round(time.Millisecond))
		})
	}

	q := sqs.NewFromConfig(s.AWS)
	drained(ctx, t, q, s)
	windows := sendWindows(t, s, sessions)
	slices.Sort(windows)
	t.Logf("send to record, over %d emails: min %v, median %v, max %v", len(windows),
		windows[0], windows[len(windows)/2], windows[len(windows)-1])
	if alerts := s.Alerts(); len(alerts) != 0 {
		t.Errorf("alerts raised: %q", alerts)
	}
}

// crashOne pays one order with its kill armed, waits for the kill and the
// recovery, and checks the order's one verdict and its emails. The next
// order is paid only once this one is settled, so each order is killed
// once, at its point.
func crashOne(ctx context.Context, t *testing.T, s *stack.Stack, c crashCase, i int) string {
	t.Helper()
	stamp := time.Now().UnixNano()
	addr := fmt.Sprintf("crash-%d-%d@example.com", i, stamp)
	query := fmt.Sprintf("Should my bakery survive a power cut at %s (%d)?", c.point, stamp)
	before := s.Killed(c.function, c.point)
	var hurried atomic.Int32
	if err := s.KillAt(c.function, c.point, 1, func(k runtimeapi.Kill) {
		hurry(ctx, t, s, k)
		hurried.Add(1)
	}); err != nil {
		t.Fatal(err)
	}
	session := pay(t, s, "quick", query, addr)
	if !testkit.Eventually(60*time.Second, 20*time.Millisecond, func() bool { return hurried.Load() == 1 }) {
		t.Fatalf("order %d: no process was killed at %s", i, c.point)
	}
	if n := s.Killed(c.function, c.point); n != before+1 {
		t.Fatalf("order %d: %d kills at %s, want 1", i, n-before, c.point)
	}

	// Recovered: the verdict stored once, the email recorded sent, and
	// the mailbox holding what the customer got.
	var item map[string]ddbtypes.AttributeValue
	if !testkit.Eventually(60*time.Second, 50*time.Millisecond, func() bool {
		item = orderItem(t, s, session)
		return stringAttr(item, "status") == string(oracle.StatusReady) && stringAttr(item, "mail_verdict_sent_at") != ""
	}) {
		t.Fatalf("order %d killed at %s: not READY with its email recorded: status %q, email sent at %q",
			i, c.point, stringAttr(item, "status"), stringAttr(item, "mail_verdict_sent_at"))
	}
	// The generator's claim recorded its job's arrival and freed the
	// webhook's lease; the send's record names the email a reply finds
	// the order by.
	if stringAttr(item, "job_enqueued_at") == "" || stringAttr(item, "job_lease") != "" {
		t.Errorf("order %d killed at %s: job known on its queue at %q, job lease %q: want the generator's claim to record it",
			i, c.point, stringAttr(item, "job_enqueued_at"), stringAttr(item, "job_lease"))
	}
	if m := stringAttr(item, "verdict_message_id"); m == "" || m != stringAttr(item, "mail_verdict_message_id") {
		t.Errorf("order %d killed at %s: verdict_message_id %q, want the recorded send's %q",
			i, c.point, m, stringAttr(item, "mail_verdict_message_id"))
	}
	if v := stringAttr(item, "verdict"); v == "" {
		t.Errorf("order %d: no verdict stored", i)
	} else if _, err := oracle.ParseAnalysis(oracle.TierQuick, []byte(v)); err != nil {
		t.Errorf("order %d: the stored verdict is not a quick take: %v", i, err)
	}
	if a, ok := item["attempts"].(*ddbtypes.AttributeValueMemberN); !ok || a.Value != strconv.Itoa(c.generations) {
		t.Errorf("order %d: %v generations, want %d", i, item["attempts"], c.generations)
	}
	var mails []string
	if !testkit.Eventually(30*time.Second, 50*time.Millisecond, func() bool {
		mails = mailboxNow(t, s.APIURL, addr)
		return len(mails) >= c.emails
	}) || len(mails) != c.emails {
		t.Fatalf("order %d killed at %s: %d emails, want %d", i, c.point, len(mails), c.emails)
	}
	// Each email is the one stored verdict, with the customer's question.
	for _, m := range mailbox(t, s.APIURL, addr) {
		if !strings.Contains(m.Text, "VERDICT: ") || !strings.Contains(m.Text, query) {
			t.Errorf("order %d: an email is not its verdict:\n%s", i, m.Text)
		}
	}
	// The generator's records of the stored verdict, which follow its
	// email's hand-off, are written whatever the crash kept from them, each
	// once, in the generation's one object.
	want := []string{
		audit.RecordID(session, audit.NameCrosscheck, c.generations, 1),
		audit.RecordID(session, audit.NameFilterGenerator, c.generations),
		audit.RecordID(session, audit.NameGenerated),
	}
	var objects map[string][]string
	if !testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool {
		objects = stepObjects(ctx, t, s, session, audit.SourceGenerator)
		return len(objects[want[2]]) > 0
	}) {
		t.Errorf("order %d killed at %s: no object of its verdict's records", i, c.point)
	}
	// An attempt killed before it had an outcome wrote nothing: its
	// records are written with the outcome.
	if got := objects[want[2]]; !slices.Equal(got, want) {
		t.Errorf("order %d killed at %s: the generation's object holds %q, want %q", i, c.point, got, want)
	}
	if dup := repeated(objects); len(dup) != 0 {
		t.Errorf("order %d killed at %s: generator records in more than one line: %q", i, c.point, dup)
	}
	mailRecordsKept(ctx, t, s, session)
	return session
}

// hurry does for a killed invocation what time would. In AWS, SQS delivers
// the crashed job again after the queue's visibility timeout (generate
// 900 s, mail 180 s), which outlasts the lease the dead process held (the
// generator's: its 150 s timeout and 30 s; the mailer's claim: 60 s). Here
// both end now: the leases the killed batch's jobs held lapse, then their
// messages become visible. A job that held nothing is left as it is.
func hurry(ctx context.Context, t *testing.T, s *stack.Stack, k runtimeapi.Kill) {
	var batch events.SQSEvent
	if err := json.Unmarshal(k.Payload, &batch); err != nil || len(batch.Records) == 0 {
		t.Errorf("killed %s at %s: the invocation is not an SQS batch: %v", k.Environment, k.Point, err)
		return
	}
	queueID, lease, held := "GenerateQueue", "gen_lease_until", "#s = :generating"
	db, q := dynamodb.NewFromConfig(s.AWS), sqs.NewFromConfig(s.AWS)
	for _, rec := range batch.Records {
		job, err := queue.Parse(rec.Body)
		if err != nil {
			t.Errorf("killed %s: job %s: %v", k.Environment, rec.MessageId, err)
			continue
		}
		values := map[string]ddbtypes.AttributeValue{":lapsed": &ddbtypes.AttributeValueMemberN{Value: "0"}}
		names := map[string]string{}
		if k.Function == "MailerFunction" {
			queueID = "MailQueue"
			prefix := "mail_" + string(job.Kind) + "_"
			lease, held = prefix+"lease_until", "attribute_not_exists("+prefix+"sent_at)"
		} else {
			names["#s"] = "status"
			values[":generating"] = &ddbtypes.AttributeValueMemberS{Value: string(oracle.StatusGenerating)}
		}
		in := &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.Resources.Ref("OrdersTable")),
			Key:                       map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: job.SessionID}},
			UpdateExpression:          aws.String("SET " + lease + " = :lapsed"),
			ConditionExpression:       aws.String("attribute_exists(" + lease + ") AND " + held),
			ExpressionAttributeValues: values,
		}
		if len(names) > 0 {
			in.ExpressionAttributeNames = names
		}
		if _, err := db.UpdateItem(ctx, in); err != nil && !strings.Contains(err.Error(), "ConditionalCheckFailed") {
			t.Errorf("killed %s: lapse the lease of %s: %v", k.Environment, oracle.ShortID(job.SessionID), err)
		}
		if _, err := q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(s.Resources.Ref(queueID)), ReceiptHandle: aws.String(rec.ReceiptHandle), VisibilityTimeout: 0,
		}); err != nil {
			t.Errorf("killed %s: make job %s visible: %v", k.Environment, rec.MessageId, err)
		}
	}
}

// sesSend is one SendEmail request the SES front received.
type sesSend struct {
	Time      time.Time         `json:"time"`
	Status    int               `json:"status"`
	MessageID string            `json:"message_id"`
	Tags      map[string]string `json:"tags"`
}

// sendWindows measures, for the email each session's delivery recorded,
// how long it was sent and not yet recorded: from the SES front receiving
// the send to the time the mailer stamped on the record. A crash in that
// window sends the email again. Each session's SES requests are checked
// too: each was accepted, and each is an email in the mailbox.
func sendWindows(t *testing.T, s *stack.Stack, sessions []string) []time.Duration {
	t.Helper()
	_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", s.SESURL+"/_calls"))
	var calls []sesSend
	if err := json.Unmarshal(body, &calls); err != nil {
		t.Fatalf("SES front calls: %v", err)
	}
	var windows []time.Duration
	for _, session := range sessions {
		item := orderItem(t, s, session)
		id := stringAttr(item, "mail_verdict_message_id")
		recorded, err := time.Parse(time.RFC3339Nano, stringAttr(item, "mail_verdict_sent_at"))
		if err != nil {
			t.Errorf("%s: the delivery's record time: %v", oracle.ShortID(session), err)
			continue
		}
		found := false
		for _, c := range calls {
			if c.Tags["session_id"] != session {
				continue
			}
			if c.Status != http.StatusOK {
				t.Errorf("%s: SES answered %d", oracle.ShortID(session), c.Status)
			}
			if c.MessageID == id {
				found = true
				if w := recorded.Sub(c.Time); w > 0 {
					windows = append(windows, w)
				} else {
					t.Errorf("%s: recorded at %v, before SES received the send at %v", oracle.ShortID(session), recorded, c.Time)
				}
			}
		}
		if !found {
			t.Errorf("%s: no SES request answered the recorded message id %q", oracle.ShortID(session), id)
		}
	}
	if len(windows) == 0 {
		t.Fatal("no send window measured")
	}
	return windows
}
