package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/geminikey"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/x402"
)

// Thresholds of the figures the checks report as degraded.
const (
	// queueAgeWarn: a job waiting this long is a queue not keeping up.
	queueAgeWarn = 15 * time.Minute
	// quotaWarn: the share of SES's 24-hour quota past which sending may
	// soon be refused.
	quotaWarn = 0.8
	// sampleSize: READY orders whose stored verdict is read each run
	// (SPEC_ORACLE_CACHE_HEALTH's N = min(10, total)).
	sampleSize = 10
)

// OrderReader reads one order (store.Orders).
type OrderReader interface {
	Get(ctx context.Context, sessionID string) (oracle.Order, bool, error)
}

// tableCheck reads the Orders table: its state as DynamoDB describes it,
// and a consistent read.
func tableCheck(index *store.OrderIndex, orders OrderReader) Check {
	return Check{Name: "orders_table", Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		n, err := index.TableSize(ctx)
		if err != nil {
			return "", "", err
		}
		if _, _, err := orders.Get(ctx, "cs_test_healthprobe"); err != nil {
			return "", "", err
		}
		return health.OK, fmt.Sprintf("readable; about %d orders", n), nil
	}}
}

// LedgerProbe reads and writes the Ledger (store.Ledger).
type LedgerProbe interface {
	LatestHealth(ctx context.Context) (health.Record, bool, error)
	Mark(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// ledgerCheck reads the last run's record and writes a probe record.
func ledgerCheck(l LedgerProbe, now func() time.Time) Check {
	return Check{Name: "ledger_table", Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		last, found, err := l.LatestHealth(ctx)
		if err != nil {
			return "", "", err
		}
		if _, err := l.Mark(ctx, "health#probe#"+strconv.FormatInt(now().UnixNano(), 36), time.Hour); err != nil {
			return "", "", err
		}
		if !found {
			return health.OK, "readable and writable; no earlier run", nil
		}
		return health.OK, "readable and writable; last run " + last.At.Format(time.RFC3339) + " " + string(last.Overall), nil
	}}
}

// auditCheck writes the run's own audit record: the log takes a record,
// and every run leaves one (source health).
func auditCheck(w Auditor, now func() time.Time) Check {
	return Check{Name: "audit_bucket", Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		at := now().UTC()
		r := audit.Record{Timestamp: at, SessionCreated: at, Status: audit.StatusOK, Source: audit.SourceHealth, Event: audit.EventHealthRun}
		id := "health-run-" + at.Format("20060102T150405.000000000Z")
		if _, err := w.Write(ctx, r, id); err != nil {
			return "", "", err
		}
		return health.OK, "the run's record is written", nil
	}}
}

// QueueAPI is what the queue checks call (SQS and CloudWatch).
type QueueAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// MetricsAPI reads CloudWatch's figures.
type MetricsAPI interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// DeadLetterCounts says how many dead letters were recorded since the last
// run (store.Ledger).
type DeadLetterCounts interface {
	NewDeadLetters(ctx context.Context, queue string) (int64, error)
}

// queueFigures reads one queue's depth and the age of its oldest message
// (CloudWatch's; -1 when no datapoint is published yet, as on an idle
// queue, or without CloudWatch: cw nil).
func queueFigures(ctx context.Context, q QueueAPI, cw MetricsAPI, ref queueRef, now time.Time) (health.Queue, error) {
	fig := health.Queue{Name: ref.Name, OldestAgeSeconds: -1}
	out, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(ref.URL), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed, sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return fig, fmt.Errorf("read queue %s: %w", ref.Name, err)
	}
	n := func(name sqstypes.QueueAttributeName) int64 {
		v, _ := strconv.ParseInt(out.Attributes[string(name)], 10, 64)
		return v
	}
	fig.Visible = n(sqstypes.QueueAttributeNameApproximateNumberOfMessages)
	fig.InFlight = n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
	fig.Delayed = n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)
	if cw == nil {
		return fig, nil // no CloudWatch here (the local stack): the age is unknown
	}
	arn := out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	name := arn[lastColon(arn)+1:]
	data, err := cw.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(now.Add(-10 * time.Minute)), EndTime: aws.Time(now),
		ScanBy: cwtypes.ScanByTimestampDescending,
		MetricDataQueries: []cwtypes.MetricDataQuery{{Id: aws.String("age"), MetricStat: &cwtypes.MetricStat{
			Metric: &cwtypes.Metric{Namespace: aws.String("AWS/SQS"), MetricName: aws.String("ApproximateAgeOfOldestMessage"),
				Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(name)}}},
			Period: aws.Int32(60), Stat: aws.String("Maximum")}}},
	})
	if err != nil {
		return fig, fmt.Errorf("read the age of queue %s: %w", ref.Name, err)
	}
	for _, r := range data.MetricDataResults {
		if len(r.Values) > 0 {
			fig.OldestAgeSeconds = int64(r.Values[0])
		}
	}
	return fig, nil
}

func lastColon(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			return i
		}
	}
	return -1
}

// queueCheck reports a work queue: degraded when its oldest job has waited
// queueAgeWarn (the queue's alarm fires then too).
func queueCheck(q QueueAPI, cw MetricsAPI, ref queueRef, now func() time.Time) Check {
	return Check{Name: "queue_" + ref.Name, Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		fig, err := queueFigures(ctx, q, cw, ref, now())
		if err != nil {
			return "", "", err
		}
		rec.Queues = replaceQueue(rec.Queues, fig)
		detail := fmt.Sprintf("%d waiting, %d in flight, %d delayed, oldest %s", fig.Visible, fig.InFlight, fig.Delayed, age(fig.OldestAgeSeconds))
		if fig.OldestAgeSeconds >= int64(queueAgeWarn/time.Second) {
			return health.Warn, detail, nil
		}
		return health.OK, detail, nil
	}}
}

// deadLetterCheck reports a dead-letter queue: degraded when dead letters
// were recorded since the last run (each raised its own alert naming its
// session when it was drained) or when messages wait on it (the deadletter
// function is not draining it).
func deadLetterCheck(q QueueAPI, cw MetricsAPI, counts DeadLetterCounts, ref queueRef, now func() time.Time) Check {
	return Check{Name: "queue_" + ref.Name, Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		fig, err := queueFigures(ctx, q, cw, ref, now())
		if err != nil {
			return "", "", err
		}
		fresh, err := counts.NewDeadLetters(ctx, queueName(ref.URL))
		if err != nil {
			return "", "", err
		}
		fig.NewDeadLetters = fresh
		rec.Queues = replaceQueue(rec.Queues, fig)
		detail := fmt.Sprintf("%d new dead letter(s) since the last run, %d waiting, %d in flight", fresh, fig.Visible, fig.InFlight)
		if fresh > 0 || fig.Visible+fig.InFlight > 0 {
			return health.Warn, detail, nil
		}
		return health.OK, detail, nil
	}, Finding: true}
}

// queueName is the last part of a queue's URL, the name the deadletter
// function counts under.
func queueName(url string) string {
	for i := len(url) - 1; i >= 0; i-- {
		if url[i] == '/' {
			return url[i+1:]
		}
	}
	return url
}

// replaceQueue keeps one figure per queue when a check is retried.
func replaceQueue(qs []health.Queue, q health.Queue) []health.Queue {
	for i := range qs {
		if qs[i].Name == q.Name {
			qs[i] = q
			return qs
		}
	}
	return append(qs, q)
}

func age(sec int64) string {
	if sec < 0 {
		return "unknown (no datapoint yet)"
	}
	return (time.Duration(sec) * time.Second).String()
}

// SESAccount reads the SES account's state.
type SESAccount interface {
	GetAccount(ctx context.Context, in *sesv2.GetAccountInput, optFns ...func(*sesv2.Options)) (*sesv2.GetAccountOutput, error)
}

// sesCheck: sending enabled, the account not under enforcement, and the
// share of the 24-hour quota used.
func sesCheck(ses SESAccount) Check {
	return Check{Name: "email", Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		out, err := ses.GetAccount(ctx, &sesv2.GetAccountInput{})
		if err != nil {
			return "", "", fmt.Errorf("read the SES account: %w", err)
		}
		if !out.SendingEnabled {
			return health.Critical, "SES sending is paused for the account", nil
		}
		detail := "SES sending enabled"
		if out.EnforcementStatus != nil && *out.EnforcementStatus != "HEALTHY" {
			return health.Warn, detail + "; the account's enforcement status is " + *out.EnforcementStatus, nil
		}
		if q := out.SendQuota; q != nil && q.Max24HourSend > 0 {
			used := q.SentLast24Hours / q.Max24HourSend
			detail += fmt.Sprintf("; %.0f%% of the 24-hour quota used (%.0f of %.0f)", used*100, q.SentLast24Hours, q.Max24HourSend)
			if used >= quotaWarn {
				return health.Warn, detail, nil
			}
		}
		return health.OK, detail, nil
	}}
}

// TokenSource proves the Graph app's credentials (mail.Graph).
type TokenSource interface {
	CheckToken(ctx context.Context) error
}

// graphCheck fetches a Graph token with the app's credentials.
func graphCheck(g TokenSource) Check {
	return Check{Name: "email", Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		if err := g.CheckToken(ctx); err != nil {
			return "", "", fmt.Errorf("the Graph token: %w", err)
		}
		return health.OK, "a Graph token was issued for the app", nil
	}}
}

// KeyChecker validates the model key (geminikey.Checker).
type KeyChecker interface {
	CheckKey(ctx context.Context) error
}

// modelKeyCheck: the Gemini key is accepted. Only a refusal is critical;
// an outage is the circuit's to judge.
func modelKeyCheck(k KeyChecker) Check {
	return Check{Name: "model_key", Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		err := k.CheckKey(ctx)
		switch {
		case err == nil:
			return health.OK, "the Gemini key is accepted", nil
		case geminikey.Refused(err):
			return health.Critical, "the Gemini key is refused: " + err.Error(), nil
		}
		return health.Warn, "the model did not answer the key check: " + err.Error(), nil
	}}
}

// CircuitState reads the shared model circuit (circuit.Breaker).
type CircuitState interface {
	State(ctx context.Context) (circuit.Snapshot, error)
}

// circuitCheck: the circuit's state and how long it has been open;
// degraded while open, critical once open longer than stuckAfter (paid
// orders wait that long).
func circuitCheck(c CircuitState, stuckAfter time.Duration, now func() time.Time) Check {
	return Check{Name: "model_circuit", Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		s, err := c.State(ctx)
		if err != nil {
			return "", "", err
		}
		if s.State == circuit.Closed {
			return health.OK, fmt.Sprintf("closed (%d consecutive failures)", s.Failures), nil
		}
		open := now().Sub(s.OpenedAt).Round(time.Second)
		detail := fmt.Sprintf("%s for %s (%s), half-opens at %s", s.State, open, s.Reason, s.Until.UTC().Format(time.RFC3339))
		if open >= stuckAfter {
			return health.Critical, detail, nil
		}
		return health.Warn, detail, nil
	}}
}

// StripePinger proves a Stripe key (stripex.Client).
type StripePinger interface {
	Ping(ctx context.Context) error
}

// stripeCheck: each configured key answers one cheap read.
func stripeCheck(keys map[string]StripePinger) Check {
	return Check{Name: "stripe", Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		for mode, c := range keys {
			if err := c.Ping(ctx); err != nil {
				if errors.Is(err, stripex.ErrAuth) {
					return health.Critical, "Stripe refused the " + mode + " key", nil
				}
				return "", "", fmt.Errorf("the %s key: %w", mode, err)
			}
		}
		return health.OK, fmt.Sprintf("%d key(s) answer", len(keys)), nil
	}}
}

// SampleSource picks READY orders (store.OrderIndex).
type SampleSource interface {
	Sample(ctx context.Context, status oracle.Status, from int64, n int) ([]string, error)
}

// VerdictGuard is what every reader of a stored verdict asks before it
// serves one (repair.Guard): a corrupt verdict is set aside by one
// conditional write, alerted once, and its order repaired.
type VerdictGuard interface {
	Check(ctx context.Context, o oracle.Order) (repair.Outcome, error)
}

// integrityCheck reads a random sample of READY orders and checks that
// each stored verdict still parses and still matches its hash
// (SPEC_ORACLE_CACHE_ALERT's corrupt entry). The sample reads; a corrupt
// verdict it meets is handed to the readers' guard (shared/repair), which
// quarantines it as CACHE_ALERT failure mode 4 asks (set aside, its text
// kept, one CRITICAL VERDICT_CORRUPT naming the order by its name, its
// generation queued again), so the next run does not raise it again: a
// set-aside order is no longer READY, and its repair is. An intact verdict
// is never touched (CACHE_HEALTH invariant 3).
func integrityCheck(idx SampleSource, orders OrderReader, verdicts VerdictGuard, retention time.Duration, now func() time.Time, rnd func() float64) Check {
	return Check{Name: "verdict_integrity", Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		t := now()
		from := t.Unix() + int64(rnd()*retention.Seconds())
		ids, err := idx.Sample(ctx, oracle.StatusReady, from, sampleSize)
		if err != nil {
			return "", "", err
		}
		if len(ids) < sampleSize {
			// Near the end of the range: take the rest from the start.
			more, err := idx.Sample(ctx, oracle.StatusReady, t.Unix(), sampleSize-len(ids))
			if err != nil {
				return "", "", err
			}
			ids = appendNew(ids, more)
		}
		corrupt := 0
		for _, id := range ids {
			o, found, err := orders.Get(ctx, id)
			if err != nil {
				return "", "", err
			}
			if !found || o.Status != oracle.StatusReady {
				continue // deleted or moved on since the index saw it
			}
			// An error is a set-aside not written: the guard alerted it,
			// and the next reader or run tries again.
			if outcome, _ := verdicts.Check(ctx, o); outcome != repair.Intact {
				corrupt++
			}
		}
		detail := fmt.Sprintf("%d stored verdict(s) sampled", len(ids))
		if corrupt > 0 {
			// Which ones, the VERDICT_CORRUPT alerts say; the record names no order.
			return health.Critical, fmt.Sprintf("%s, %d corrupt: set aside and being repaired", detail, corrupt), nil
		}
		return health.OK, detail + ", all intact", nil
	}, Finding: true}
}

func appendNew(ids, more []string) []string {
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for _, id := range more {
		if !seen[id] {
			ids, seen[id] = append(ids, id), true
		}
	}
	return ids
}

// randFloat is the sample's random source in production.
func randFloat() float64 { return rand.Float64() }

// SupportedKinds lists what a facilitator settles (x402rail.Facilitator).
type SupportedKinds interface {
	Supported(ctx context.Context) (x402.SupportedResponse, error)
}

// facilitatorCheck asks the facilitator what it settles: it must list x402
// version 2 and the exact scheme on every network agents are offered, or
// agents cannot pay. Its failures are X402_FACILITATOR_DOWN.
func facilitatorCheck(f SupportedKinds, networks []x402.NetworkInfo) Check {
	return Check{Name: "x402_facilitator", Kind: alert.X402FacilitatorDown, Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		s, err := f.Supported(ctx)
		if err != nil {
			return "", "", fmt.Errorf("the facilitator's /supported: %w", err)
		}
		var missing, listed []string
		for _, n := range networks {
			found := false
			for _, k := range s.Kinds {
				if k.X402Version == x402.Version && k.Scheme == x402.SchemeExact && k.Network == n.Network {
					found = true
				}
			}
			if !found {
				missing = append(missing, string(n.Network))
			} else {
				listed = append(listed, string(n.Network))
			}
		}
		if len(missing) > 0 {
			return health.Critical, fmt.Sprintf("the facilitator's /supported does not list x402 v%d %s on %s: agents cannot pay there",
				x402.Version, x402.SchemeExact, strings.Join(missing, ", ")), nil
		}
		return health.OK, fmt.Sprintf("x402 v%d %s supported on %s", x402.Version, x402.SchemeExact, strings.Join(listed, ", ")), nil
	}}
}

// JunkCounts reads one day's counts of the payment headers the agent rail
// refused without an audit record (store.Ledger).
type JunkCounts interface {
	PaymentJunk(ctx context.Context, day time.Time) (map[store.PaymentJunk]int64, error)
}

// paymentJunkCheck puts yesterday's and today's (UTC) counts of the agent
// rail's undecodable and malformed payment headers in the run's figures:
// they are counted there, not audited one by one. A count is no failure
// (the X402Undecodable and X402Malformed metrics show a burst as it
// happens); a Ledger that cannot be read is.
func paymentJunkCheck(l JunkCounts, now func() time.Time) Check {
	return Check{Name: "x402_junk", Run: func(ctx context.Context, rec *health.Record) (health.Status, string, error) {
		today := now().UTC()
		figures := map[string]health.PaymentJunk{}
		for _, day := range []time.Time{today.AddDate(0, 0, -1), today} {
			n, err := l.PaymentJunk(ctx, day)
			if err != nil {
				return "", "", err
			}
			figures[day.Format(time.DateOnly)] = health.PaymentJunk{Undecodable: n[store.JunkUndecodable], Malformed: n[store.JunkMalformed]}
		}
		rec.X402Junk = figures
		f := figures[today.Format(time.DateOnly)]
		return health.OK, fmt.Sprintf("payment headers refused unrecorded today (UTC): %d undecodable, %d malformed", f.Undecodable, f.Malformed), nil
	}}
}
