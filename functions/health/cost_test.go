package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// counting counts DynamoDB operations by name as they go to moto.
type counting struct {
	mu  sync.Mutex
	ops map[string]int
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		c.mu.Lock()
		c.ops[t[strings.LastIndex(t, ".")+1:]]++
		c.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (c *counting) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = map[string]int{}
	return ops
}

// costEnv is a reconciliation over orders orders (half READY, a few stuck),
// its DynamoDB calls counted.
func costEnv(tb testing.TB, orders int) (*Reconciler, *counting, *testkit.Clock) {
	tb.Helper()
	f := provision.ForTest(tb, nil)
	clock := testkit.NewClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	counter := &counting{ops: map[string]int{}}
	cfg := f.AWS.Copy()
	cfg.HTTPClient = &http.Client{Transport: counter}
	db := awsenv.NewTables(cfg)
	o := store.NewOrders(db, f.Ref("OrdersTable"), clock.Now)
	ctx := context.Background()
	raw := dynamodb.NewFromConfig(f.AWS)
	for i := range orders {
		status := "READY"
		if i%10 == 0 {
			status = "PAID"
		}
		item := map[string]any{"session_id": fmt.Sprintf("cs_test_cost%06d", i), "status": status,
			"updated_at": clock.Now().Format(time.RFC3339Nano), "session_created": clock.Now().Format(time.RFC3339Nano),
			"expires_at": clock.Now().Add(90 * 24 * time.Hour).Unix(), "mail_verdict_sent_at": clock.Now().Format(time.RFC3339Nano)}
		av, err := attributevalue.MarshalMap(item)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Ref("OrdersTable")), Item: av}); err != nil {
			tb.Fatal(err)
		}
	}
	clock.Add(time.Hour)
	r := &Reconciler{
		Index: store.NewOrderIndex(awsenv.NewQueries(cfg), f.Ref("OrdersTable")), Orders: o,
		Fulfil: noFulfil{}, Mail: noSend{}, Ledger: store.NewLedger(db, f.Ref("LedgerTable"), clock.Now), Alerts: &alerts{},
		Log: obs.NewLogger(&testkit.Buffer{}, "ERROR"), Now: clock.Now, Sessions: map[bool]Sessions{},
		StuckAfter: DefaultStuckAfter, MailStuckAfter: DefaultMailStuckAfter, ReconcileWindow: DefaultReconcileWindow,
		WebhookGrace: DefaultWebhookGrace, RealertEvery: DefaultRealertEvery, Retention: 90 * 24 * time.Hour,
	}
	counter.take()
	return r, counter, clock
}

// TestTheRunNeverScans: the reconciliation reads orders through the index
// and by key only, and its calls grow with the orders it must act on, not
// with the table.
func TestTheRunNeverScans(t *testing.T) {
	r, counter, _ := costEnv(t, 60)
	var rec health.Record
	r.Run(context.Background(), &rec)
	ops := counter.take()
	if ops["Scan"] != 0 {
		t.Fatalf("the run scanned the table: %v", ops)
	}
	// Six PAID orders stuck: one consistent read each to confirm, one
	// reclaim each (through noFulfil, none); READY orders settled are read
	// from the index only.
	if ops["GetItem"] != 6 || ops["Query"] == 0 {
		t.Fatalf("calls %v, want 6 reads of the stuck orders and queries of the index", ops)
	}
}

// BenchmarkReconciliation measures one run's reconciliation over a table of
// 200 orders: its duration and its DynamoDB calls per run.
func BenchmarkReconciliation(b *testing.B) {
	r, counter, _ := costEnv(b, 200)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		var rec health.Record
		r.Run(ctx, &rec)
	}
	b.StopTimer()
	total := 0
	for op, n := range counter.take() {
		b.ReportMetric(float64(n)/float64(b.N), op+"/run")
		total += n
	}
	b.ReportMetric(float64(total)/float64(b.N), "calls/run")
}

// noFulfil and noSend stand for the claim path and the mail queue, whose
// calls are not the reconciliation's own cost.
type noFulfil struct{}

func (noFulfil) Fulfil(context.Context, oracle.Session, fulfil.Trigger) (fulfil.Result, error) {
	return fulfil.Result{}, nil
}

func (noFulfil) Redeliver(context.Context, fulfil.Reclaimer, oracle.Order) (bool, error) {
	return false, nil
}

type noSend struct{}

func (noSend) Send(context.Context, queue.Job) error { return nil }
