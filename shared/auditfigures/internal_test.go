package auditfigures

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/audit"
)

// memoryBucket is an S3 bucket in memory that lists three keys a page and
// counts the reads in flight.
type memoryBucket struct {
	mu      sync.Mutex
	objects map[string][]byte
	delay   time.Duration

	inFlight, maxInFlight atomic.Int64
	gets                  atomic.Int64
}

func (m *memoryBucket) put(t *testing.T, r audit.Record, id string) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objects == nil {
		m.objects = map[string][]byte{}
	}
	m.objects[audit.Key(r, id)] = b
}

func (m *memoryBucket) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for k := range m.objects {
		if strings.HasPrefix(k, aws.ToString(in.Prefix)) && k > aws.ToString(in.ContinuationToken) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := &s3.ListObjectsV2Output{}
	for i, k := range keys {
		if i == 3 {
			out.IsTruncated, out.NextContinuationToken = aws.Bool(true), aws.String(keys[i-1])
			break
		}
		out.Contents = append(out.Contents, s3types.Object{Key: aws.String(k)})
	}
	return out, nil
}

func (m *memoryBucket) GetObject(ctx context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	m.gets.Add(1)
	n := m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	for {
		top := m.maxInFlight.Load()
		if n <= top || m.maxInFlight.CompareAndSwap(top, n) {
			break
		}
	}
	select {
	case <-time.After(m.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	m.mu.Lock()
	b, ok := m.objects[aws.ToString(in.Key)]
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no such key")
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b))}, nil
}

var at = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func paidRecord(session string, src audit.Source, latency int64) audit.Record {
	ev := audit.EventCheckoutCompleted
	switch src {
	case audit.SourceResultPage:
		ev = audit.EventLanding
	case audit.SourceReconcile:
		ev = audit.EventReconcile
	}
	return audit.Record{Timestamp: at, SessionCreated: at, SessionID: session, Tier: "quick", Status: audit.StatusOK, Source: src,
		Event: ev, OrderStatus: "PAID", Livemode: true, AmountTotal: 100, Currency: "cad", LatencyMS: latency}
}

// TestReadsAreBoundedAndPagesFollowed: every record of the range is read,
// through every page of every day's listing, never more than Concurrency
// at once.
func TestReadsAreBoundedAndPagesFollowed(t *testing.T) {
	m := &memoryBucket{delay: 5 * time.Millisecond}
	const n = 120
	for i := range n {
		r := paidRecord(fmt.Sprintf("cs_live_s%04d", i), audit.SourceWebhook, int64(i+1))
		r.SessionCreated = at.AddDate(0, 0, i%3)
		m.put(t, r, audit.RecordID(r.SessionID, audit.NamePaid))
	}
	f, err := Compute(context.Background(), m, "bucket", at, at.AddDate(0, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	if f.Paid.Sessions != n || m.gets.Load() != n {
		t.Fatalf("%d sessions from %d reads, want %d", f.Paid.Sessions, m.gets.Load(), n)
	}
	if top := m.maxInFlight.Load(); top > Concurrency || top < 2 {
		t.Fatalf("%d reads at once, want between 2 and %d", top, Concurrency)
	}
	// 1..120 ms: the ranks 60 and 114.
	if *f.WebhookLatency.P50MS != 60 || *f.WebhookLatency.P95MS != 114 || *f.WebhookLatency.MaxMS != 120 {
		t.Fatalf("latency %s", f.WebhookLatency)
	}
}

// TestDoubleProcessingAndMissingDetailShow: the figures that must stay at
// zero and at 100 % move when the log shows what they watch for.
func TestDoubleProcessingAndMissingDetailShow(t *testing.T) {
	m := &memoryBucket{}
	// Two webhook paid records of one session, as a claim without its
	// idempotent record id would leave.
	m.put(t, paidRecord("cs_live_twice", audit.SourceWebhook, 10), "cs_live_twice.paid")
	m.put(t, paidRecord("cs_live_twice", audit.SourceWebhook, 20), "cs_live_twice.paid-again")
	m.put(t, paidRecord("cs_live_twice", audit.SourceResultPage, 5), "cs_live_twice.paid")
	m.put(t, paidRecord("cs_live_once", audit.SourceWebhook, 30), "cs_live_once.paid")
	// A failure the schema check would have refused: no detail.
	bare := paidRecord("cs_live_once", audit.SourceGenerator, 0)
	bare.Event, bare.Status = audit.EventGenerationFailed, audit.StatusError
	m.put(t, bare, "cs_live_once.attempt-1")
	withDetail := bare
	withDetail.ErrorDetail = audit.Detail("generation failed: cs_live_once answered 500 for hmac-sha256:00ff")
	m.put(t, withDetail, "cs_live_once.attempt-2")

	f, err := Compute(context.Background(), m, "bucket", at, at)
	if err != nil {
		t.Fatal(err)
	}
	if f.Paid.DoubleProcessed != 1 || f.Paid.Sessions != 2 || f.Paid.Records != 4 {
		t.Errorf("paid %+v, want 2 sessions, 4 records, 1 processed twice", f.Paid)
	}
	// Revenue counts each session once, whatever its records.
	if want := []RevenueTotal{{Rail: RailCard, Currency: "cad", Amounts: Amounts{Sessions: 2, AmountTotal: 200, AmountNet: 200}}}; !slices.Equal(f.Revenue.Totals, want) {
		t.Errorf("revenue %+v, want %+v", f.Revenue.Totals, want)
	}
	if f.Errors.Coverage.String() != "50.0 % (1 of 2)" {
		t.Errorf("coverage %s, want 1 of 2", f.Errors.Coverage)
	}
	if want := []Pattern{{Pattern: "generation failed: <id> answered # for <hash>", Records: 1}}; !slices.Equal(f.Errors.TopPatterns, want) {
		t.Errorf("patterns %+v, want %+v", f.Errors.TopPatterns, want)
	}
}

func TestRangeIsChecked(t *testing.T) {
	m := &memoryBucket{}
	if _, err := Compute(context.Background(), m, "b", at, at.AddDate(0, 0, -1)); err == nil || !strings.Contains(err.Error(), "ends (2026-11-19) before it starts (2026-11-20)") {
		t.Errorf("a reversed range: %v", err)
	}
	if _, err := Compute(context.Background(), m, "b", at, at.AddDate(0, 0, MaxDays)); err == nil || !strings.Contains(err.Error(), "Athena") {
		t.Errorf("a range over MaxDays: %v", err)
	}
	if _, err := Compute(context.Background(), m, "b", at, at.AddDate(0, 0, MaxDays-1)); err != nil {
		t.Errorf("a range of MaxDays: %v", err)
	}
}

func TestNormalise(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"generation failed: timeout", "generation failed: timeout"},
		{"silent drop: missing_query", "silent drop: missing_query"},
		{"amount mismatch: priced at 500_CAD for quick", "amount mismatch: priced at #_CAD for quick"},
		{"Graph API returned 503", "Graph API returned #"},
		{"order cs_test_a1B2c3 of event evt_1NxYz2 for pi_3AbC", "order <id> of event <id> for <id>"},
		{"RequestID: 5b0fa4c2-3d1e-4f5a-9b8c-7d6e5f4a3b2c, status 429", "RequestID: <id>, status #"},
		{"message 0100018c9f2b7a61deadbeefcafe-000000 refused", "message <id>-# refused"},
		{"key hmac-sha256:0123456789abcdef0123456789abcdef", "key <hash>"},
		{"focus_group words_with_underscores stay", "focus_group words_with_underscores stay"},
	} {
		if got := normalise(c.in); got != c.want {
			t.Errorf("normalise(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestKeyNameCutsTheSession(t *testing.T) {
	for key, want := range map[string]string{
		"records/date=2026-11-20/source=webhook/cs_live_a1b2c3d4e5f6g7h8i9j0k1.paid.json": "records/date=2026-11-20/source=webhook/cs_live_a1b2c3d4e5f6g7h8….paid.json",
		"records/date=2026-11-20/source=webhook/cs_live_a1b2c3d4e5f6g7h8.paid.json":       "records/date=2026-11-20/source=webhook/cs_live_a1b2c3d4e5f6g7h8.paid.json",
		"records/date=2026-11-20/source=health/health-run-20261120T1.json":                "records/date=2026-11-20/source=health/health-run-20261120T1.json",
		"records/date=2026-11-20/source=webhook/cs_live_a1b2.paid.json":                   "records/date=2026-11-20/source=webhook/cs_live_a1b2.paid.json",
	} {
		if got := keyName(key); got != want {
			t.Errorf("keyName(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestTemplatePatternsAreGos: the template's top-error-patterns query
// normalises error_detail with the expression normalise is.
func TestTemplatePatternsAreGos(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	q, ok := tmpl.Resources["TopErrorPatternsQuery"]
	if !ok {
		t.Fatal("the template has no TopErrorPatternsQuery")
	}
	text, _ := q.Properties["QueryString"].(string)
	if want := sqlNormalise("error_detail"); !strings.Contains(text, want) {
		t.Fatalf("the query does not normalise with\n  %s\nit reads\n%s", want, text)
	}
}

// TestTemplateQueriesAreGos: the named queries select what the figures
// count, from the lists and bounds the figures use: the failure statuses
// (the error-detail coverage and the top patterns), the operator's
// actions that settle and refund an agent order (the revenue), VC-2's
// bound on the settled x402 payments' p95, and how an x402 record's
// endpoint names its transport and which statuses the endpoints' figure
// counts.
func TestTemplateQueriesAreGos(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	query := func(id string) string {
		t.Helper()
		q, ok := tmpl.Resources[id]
		if !ok {
			t.Fatalf("the template has no %s", id)
		}
		text, _ := q.Properties["QueryString"].(string)
		return text
	}
	var quoted []string
	for _, s := range audit.FailureStatuses() {
		quoted = append(quoted, "'"+string(s)+"'")
	}
	failures := "status IN (" + strings.Join(quoted, ", ") + ")"
	for id, wants := range map[string][]string{
		"ErrorDetailCoverageQuery": {failures},
		"TopErrorPatternsQuery":    {failures},
		"RevenueQuery": {
			"operator.action = '" + actionX402Confirm + "'", "substr(operator.outcome, 1, 10) = 'confirmed '",
			"operator.action = '" + actionRefund + "'", "substr(operator.outcome, 1, 9) = 'refunded '",
			"source = 'x402' AND event = '" + string(audit.EventX402Payment) + "' AND status = 'OK'",
		},
		"X402OutcomesQuery": {"source = 'x402'", "event = '" + string(audit.EventX402Payment) + "'", "GROUP BY status"},
		"X402ByEndpointQuery": {
			"coalesce(smoke, false) = false", "source_partition = 'x402'", "source = 'x402'", "event = '" + string(audit.EventX402Payment) + "'",
			fmt.Sprintf("CASE WHEN substr(endpoint, 1, %d) = '%s' THEN '%s' ELSE '%s' END AS transport", len(MCPEndpointPrefix), MCPEndpointPrefix, TransportMCP, TransportHTTP),
			"count(*) AS records", "count_if(status = '" + string(audit.StatusOK) + "') AS ok", "count_if(status = '" + string(audit.StatusRetry) + "') AS retry",
			"count_if(status = '" + string(audit.StatusIdentifierConflict) + "') AS identifier_conflict",
			"GROUP BY GROUPING SETS ((transport, endpoint), (transport))",
		},
		"ChatExchangesQuery":        {"event = '" + string(audit.EventChatExchange) + "'", "chat.filter = '" + audit.ChatFilterApology + "'"},
		"ChatSubscriptionsQuery":    {"plan = '" + audit.ChatPlanTrial + "' AND outcome = '" + audit.ChatAnswered + "'", chatStatuses(grantingStatuses), chatStatuses(endedStatuses)},
		"ChatRecurringRevenueQuery": {"event = '" + string(audit.EventChatSubscription) + "'", chatStatuses(grantingStatuses), "CASE WHEN amount_total > 0 THEN at END"},
		"X402LatencyQuery":          {"status = 'OK'", fmt.Sprintf("< %d AS p95_within_bound", X402LatencyBound.Milliseconds())},
	} {
		text := query(id)
		for _, want := range wants {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not select with %q:\n%s", id, want, text)
			}
		}
	}
}

// chatStatuses is statuses as the queries list them.
func chatStatuses(statuses []string) string {
	return "status IN ('" + strings.Join(statuses, "', '") + "')"
}

// TestX402LatencyAgainstItsBound: the settled x402 payments' p95 is judged
// against VC-2's 5,000 ms, strictly; only OK records count, whatever their
// network (not a refusal, nor a retry answered from its order); with none
// the bound is not judged.
func TestX402LatencyAgainstItsBound(t *testing.T) {
	ms := func(n int, v int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	for _, c := range []struct {
		name    string
		ok      []int64 // the OK records' latencies
		refused []int64 // the others' (SETTLE_FAILED unless status says)
		status  audit.Status
		p95     int64
		within  *bool
	}{
		{"none settled", nil, []int64{90000}, "", 0, nil},
		{"one under", []int64{4999}, nil, "", 4999, ptr(true)},
		{"one at the bound", []int64{5000}, nil, "", 5000, ptr(false)},
		{"one slow in twenty", append(ms(19, 1000), 9000), nil, "", 1000, ptr(true)},
		{"two slow in twenty", append(ms(18, 1000), 9000, 9000), nil, "", 9000, ptr(false)},
		{"slow refusals do not count", ms(3, 1200), ms(5, 30000), "", 1200, ptr(true)},
		{"fast retries do not count", ms(2, 6000), ms(40, 30), audit.StatusRetry, 6000, ptr(false)},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAccumulator()
			for i, v := range append(append([]int64{}, c.ok...), c.refused...) {
				r := audit.Record{Source: audit.SourceX402, Event: audit.EventX402Payment, Status: audit.StatusOK, LatencyMS: v, Network: "eip155:8453", Livemode: true}
				if i >= len(c.ok) {
					r.Status = cmp.Or(c.status, audit.StatusSettleFailed)
				}
				if i%2 == 1 {
					r.Network, r.Livemode = "eip155:84532", false
				}
				a.add(r)
			}
			x := a.figures("2026-11-20", "2026-11-20").X402
			switch {
			case c.within == nil && (x.P95WithinBound != nil || x.Latency.P95MS != nil):
				t.Errorf("no settled payment, but %+v", x)
			case c.within != nil && (x.Latency.P95MS == nil || *x.Latency.P95MS != c.p95 || x.P95WithinBound == nil || *x.P95WithinBound != *c.within):
				t.Errorf("latency %s within %v, want p95 %d within %v", x.Latency, x.P95WithinBound, c.p95, *c.within)
			}
			if x.Outcomes[0].Records != int64(len(c.ok)) {
				t.Errorf("outcomes %+v, want %d OK", x.Outcomes, len(c.ok))
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
