package alert_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

type fixture struct {
	al   *alert.Alerter
	clk  *testkit.Clock
	logs *bytes.Buffer
	tap  string
	sqs  *sqs.Client
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	fx := &fixture{clk: testkit.NewClock(time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)), logs: &bytes.Buffer{}, sqs: sqs.NewFromConfig(f.AWS)}
	name := f.Attr("AlertsTopic.TopicName") + "-tap"
	q, err := fx.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	fx.tap = aws.ToString(q.QueueUrl)
	if _, err := sns.NewFromConfig(f.AWS).Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: aws.String(f.Ref("AlertsTopic")), Protocol: aws.String("sqs"),
		Endpoint:   aws.String("arn:aws:sqs:" + provision.TestRegion + ":" + provision.Account + ":" + name),
		Attributes: map[string]string{"RawMessageDelivery": "true"},
	}); err != nil {
		t.Fatal(err)
	}
	log := obs.NewLogger(fx.logs, "DEBUG")
	fx.al = &alert.Alerter{
		SNS: awsenv.NewTopics(f.AWS), Topic: f.Ref("AlertsTopic"),
		Dedupe:  store.NewLedger(awsenv.NewTables(f.AWS), f.Ref("LedgerTable"), fx.clk.Now),
		Metrics: obs.NewMetrics(fx.logs, "Oracle", fx.clk.Now), Log: log, Now: fx.clk.Now,
	}
	return fx
}

func (fx *fixture) published(t *testing.T) []string {
	t.Helper()
	var out []string
	for {
		r, err := fx.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(fx.tap), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			out = append(out, aws.ToString(m.Body))
		}
	}
}

const session = "cs_live_a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8s9t0u1v2w3x4y5z6A7B8C9D0"

func TestFormatShowsOnlyTheSessionPrefix(t *testing.T) {
	fx := newFixture(t)
	fx.al.Raise(context.Background(), alert.Alert{Severity: alert.Error, Kind: "CACHE_WRITE", Session: session, Detail: "write failed after 3 retries"})
	got := fx.published(t)
	want := "[ORACLE-ALERT] ERROR | 2026-11-21T14:00:00Z | CACHE_WRITE | cs_live_a1b2c3d4e5f6g7h8 | write failed after 3 retries"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("published %q, want %q", got, want)
	}
	if strings.Contains(fx.logs.String(), session) {
		t.Fatal("the full session id reached the logs")
	}
}

func TestDedupeWindow(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t)
	a := alert.Alert{Severity: alert.Warn, Kind: "X", Session: session, Detail: "d"}
	fx.al.Raise(ctx, a)
	fx.clk.Add(59 * time.Second)
	fx.al.Raise(ctx, a) // suppressed: same kind and prefix inside 60 s
	other := a
	other.Kind = "Y"
	fx.al.Raise(ctx, other) // a different kind is not a duplicate
	fx.clk.Add(2 * time.Second)
	fx.al.Raise(ctx, a) // the window has passed
	if got := fx.published(t); len(got) != 3 {
		t.Fatalf("published %d alerts, want 3: %q", len(got), got)
	}
	if !strings.Contains(fx.logs.String(), "suppressed within dedupe window") {
		t.Fatal("the suppressed alert left no log line")
	}
}

func TestFallbackLogLineWhenSNSFails(t *testing.T) {
	fx := newFixture(t)
	fx.al.Topic = "arn:aws:sns:us-east-1:123456789012:no-such-topic"
	fx.al.Raise(context.Background(), alert.Alert{Severity: alert.Critical, Kind: "Z", Session: session, Detail: "d"})
	logs := fx.logs.String()
	if !strings.Contains(logs, `"alert_fallback":true`) || !strings.Contains(logs, "[ORACLE-ALERT] CRITICAL") {
		t.Fatalf("no fallback line: %s", logs)
	}
	if !strings.Contains(logs, `"CriticalAlerts":1`) {
		t.Fatal("CRITICAL alert did not count its metric")
	}
	// The fallback's own metric, which AlertFallbackAlarm watches: no
	// metric filter reads the line.
	if !strings.Contains(logs, `"AlertFallback":1`) {
		t.Fatalf("the fallback did not count AlertFallback: %s", logs)
	}
}

func TestPresetLineIsPublishedAsIs(t *testing.T) {
	fx := newFixture(t)
	line := "[SILENT-DROP] session=cs_live_abc1 tier=\"\" query_len=0 email=NULL amount=100_CAD 2026-04-16T14:22:01Z"
	fx.al.Raise(context.Background(), alert.Alert{Severity: alert.Critical, Kind: "SILENT-DROP", Session: session, Line: line})
	if got := fx.published(t); len(got) != 1 || got[0] != line {
		t.Fatalf("published %q", got)
	}
}

func TestSessionsSharingAPrefixAreNotDuplicates(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t)
	a := alert.Alert{Severity: alert.Critical, Kind: "SILENT-DROP", Session: "cs_live_a1B2AAAAAAAAAAAAAAAA", Detail: "d"}
	b := a
	b.Session = "cs_live_a1B2BBBBBBBBBBBBBBBB"
	fx.al.Raise(ctx, a)
	fx.al.Raise(ctx, b)
	if got := fx.published(t); len(got) != 2 {
		t.Fatalf("published %d alerts for two sessions with one prefix, want 2", len(got))
	}
}

// TestSubjectsAndEscalationsAreNotDuplicates: two checks failing in the
// same run are both heard, and an escalation to CRITICAL within the window
// (of a check's alert or a session's) is not suppressed; the same alert
// about the same thing is.
func TestSubjectsAndEscalationsAreNotDuplicates(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t)
	a := alert.Alert{Severity: alert.Error, Kind: alert.HealthCheckFailed, Subject: "audit_bucket", Detail: "d"}
	fx.al.Raise(ctx, a)
	other := a
	other.Subject = "stripe"
	fx.al.Raise(ctx, other)
	fx.al.Raise(ctx, a) // suppressed
	critical := a
	critical.Severity = alert.Critical
	fx.al.Raise(ctx, critical)
	fx.al.Raise(ctx, critical) // suppressed
	// A session's escalation is heard too, subject or not.
	stuck := alert.Alert{Severity: alert.Warn, Kind: alert.OrderStuck, Session: "cs_test_escalated", Detail: "d"}
	fx.al.Raise(ctx, stuck)
	stuck.Severity = alert.Critical
	fx.al.Raise(ctx, stuck)
	if got := fx.published(t); len(got) != 5 {
		t.Fatalf("published %d alerts, want 5: %q", len(got), got)
	}
}

// hangingDedupe is a Ledger that does not answer: it holds every call
// until its deadline.
type hangingDedupe struct{}

func (hangingDedupe) Mark(ctx context.Context, _ string, _ time.Duration) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

// TestAHangingLedgerStillLetsTheAlertOut: the dedupe lives in the Ledger,
// which may be the very store that is failing; waiting on it must leave the
// alert time to be published.
func TestAHangingLedgerStillLetsTheAlertOut(t *testing.T) {
	fx := newFixture(t)
	fx.al.Dedupe = hangingDedupe{}
	fx.al.Timeout = 600 * time.Millisecond
	fx.al.Raise(context.Background(), alert.Alert{Severity: alert.Error, Kind: alert.StoreFailed, Subject: "PutItem orders", Detail: "d"})
	if got := fx.published(t); len(got) != 1 {
		t.Fatalf("published %q, want the alert (logs: %s)", got, fx.logs.String())
	}
	if !strings.Contains(fx.logs.String(), "alert dedupe unavailable; sending anyway") {
		t.Fatal("the unavailable dedupe left no log line")
	}
}

// wholeIDAlerts are alerts of kind for a card order and an agent order
// whose whole id is also in the detail (as an ops command or a page
// address) or in the preset line.
func wholeIDAlerts(kind alert.Kind) []alert.Alert {
	var out []alert.Alert
	for _, id := range []string{session, agentOrder} {
		out = append(out,
			alert.Alert{Severity: alert.Critical, Kind: kind, Session: id, Subject: "detail",
				Detail: "the stored verdict no longer parses (make ops ACTION=show SESSION=" + id + "; https://example.com/result/" + id + ")"},
			alert.Alert{Severity: alert.Critical, Kind: kind, Session: id, Subject: "line", Line: "[" + string(kind) + "] session=" + id + " tier=quick"})
	}
	return out
}

const agentOrder = "x402_live_a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6"

// namesOnly checks that text names the alert's order by its name alone.
func namesOnly(t *testing.T, a alert.Alert, text string) {
	t.Helper()
	if strings.Contains(text, a.Session) || !strings.Contains(text, oracle.ShortID(a.Session)) {
		t.Errorf("%s: %q does not name the order by %s alone", a.Kind, text, oracle.ShortID(a.Session))
	}
}

// TestNoAlertKindCarriesAWholeOrderID: an alert goes out by email, and a
// whole order id opens the customer's result page (their query and
// verdict). Every kind's text, built with a whole id in its session, its
// detail or its preset line, names the order by its name (oracle.ShortID)
// only; and so do what the alerter publishes and logs.
func TestNoAlertKindCarriesAWholeOrderID(t *testing.T) {
	at := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	for _, kind := range alert.Kinds() {
		for _, a := range wholeIDAlerts(kind) {
			namesOnly(t, a, a.Text(at))
		}
	}
	fx := newFixture(t)
	sent := wholeIDAlerts(alert.VerdictCorrupt)
	for _, a := range sent {
		fx.al.Raise(context.Background(), a)
	}
	published := fx.published(t)
	if len(published) != len(sent) {
		t.Fatalf("published %d alerts, want %d", len(published), len(sent))
	}
	// The topic's order is not the raises' order: each text must name one
	// of the orders, and hold neither whole id.
	for _, text := range published {
		names := 0
		for _, id := range []string{session, agentOrder} {
			if strings.Contains(text, id) {
				t.Errorf("published with a whole order id: %s", text)
			}
			if strings.Contains(text, oracle.ShortID(id)) {
				names++
			}
		}
		if names != 1 {
			t.Errorf("published without the order's name: %s", text)
		}
	}
	for _, id := range []string{session, agentOrder} {
		if strings.Contains(fx.logs.String(), id) {
			t.Errorf("the alerter's log lines hold the whole id %s", id)
		}
	}
}
