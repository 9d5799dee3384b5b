package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
)

// The failure handling of the Handler over memory: the order store, the
// queues, the audit log and the alerts are in memory, the model answers
// from a script and the clock moves only when a test moves it, so each
// test runs in milliseconds. The component tests in handler_test.go run
// the same Handler against the real services.

// mem is a generator whose every dependency is in memory.
type mem struct {
	t       *testing.T
	h       *Handler
	clock   *testkit.Clock
	orders  *memOrders
	model   *scriptedModel
	mail    *jobs
	parked  *jobs // sent back to the generate queue
	alerts  *testkit.Alerts
	audit   *testkit.AuditLog
	metrics *testkit.Metrics
}

func newMem(t *testing.T) *mem {
	t.Helper()
	filter, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	hasher, err := audit.NewHasher("generator-test-pepper-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	m := &mem{t: t, clock: clock, orders: newMemOrders(clock.Now), model: &scriptedModel{},
		mail: &jobs{}, parked: &jobs{}, alerts: &testkit.Alerts{}, audit: &testkit.AuditLog{}, metrics: &testkit.Metrics{}}
	log := obs.NewLogger(&testkit.Buffer{}, "DEBUG")
	m.h = &Handler{
		Orders: m.orders, Model: m.model, Circuit: closedCircuit{}, Mail: m.mail, Requeue: m.parked,
		Audit:  &audit.Recorder{Writer: m.audit, Alerts: m.alerts, Log: log},
		Alerts: m.alerts, Filter: filter, Quarantine: memQuarantine{}, Originals: memOriginals{},
		Hasher: hasher, Metrics: m.metrics, Log: log, Now: clock.Now, Rand: func() float64 { return 0.5 },
		Retention: 90 * 24 * time.Hour, CallTimeout: 5 * time.Second, MaxReceives: 3,
		ParkingBudget: DefaultParkingBudget, RetryBase: DefaultRetryBase,
	}
	return m
}

// paid records a paid quick-tier order and returns its job.
func (m *mem) paid(id string) queue.Job {
	m.orders.add(oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "Should I open a bakery?",
		AmountTotal: oracle.TierQuick.PriceCents(), Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: m.clock.Now()})
	return queue.Job{SessionID: id, Reason: queue.ReasonPaid}
}

// deliver hands j to the Handler as the receives-th delivery of its
// message and reports whether the item failed (SQS delivers it again).
func (m *mem) deliver(j queue.Job, receives int) bool {
	m.t.Helper()
	body, err := json.Marshal(j)
	if err != nil {
		m.t.Fatal(err)
	}
	resp, err := m.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m",
		Body: string(body), Attributes: map[string]string{"ApproximateReceiveCount": fmt.Sprint(receives)}}}})
	if err != nil {
		m.t.Fatal(err)
	}
	return len(resp.BatchItemFailures) != 0
}

func (m *mem) order(id string) oracle.Order {
	m.t.Helper()
	o, ok, _ := m.orders.Get(context.Background(), id)
	if !ok {
		m.t.Fatalf("no order %s", id)
	}
	return o
}

func TestOutageParksTheOrderUntilItsBudgetEndsThenFailsIt(t *testing.T) {
	m := newMem(t)
	m.h.ParkingBudget = 2 * time.Hour
	m.model.script = []answer{{err: &gemini.Error{Kind: gemini.ServerError, HTTPStatus: 503}}}
	j := m.paid("cs_test_outage")
	deadline := m.clock.Now().Add(m.h.ParkingBudget)
	for delivery := 1; ; delivery++ {
		if delivery > 50 {
			t.Fatal("the order was parked past its budget")
		}
		before := m.clock.Now()
		if m.deliver(j, 1) {
			t.Fatalf("delivery %d failed the item; a transient failure parks it", delivery)
		}
		if m.order(j.SessionID).Status == oracle.StatusFailed {
			if m.clock.Now().Before(deadline) {
				t.Fatalf("failed at %s, before the budget's end %s", m.clock.Now(), deadline)
			}
			break
		}
		parked := m.parked.take()
		if len(parked) != 1 {
			t.Fatalf("delivery %d parked %+v, want one job", delivery, parked)
		}
		next := parked[0]
		want := before.Add(backoff(m.h.RetryBase, delivery, 0.5))
		if want.After(deadline) {
			want = deadline
		}
		if next.Attempt != delivery || !next.NotBefore.Equal(want) {
			t.Fatalf("delivery %d parked attempt %d until %s, want attempt %d until %s", delivery, next.Attempt, next.NotBefore, delivery, want)
		}
		j = next
		m.clock.Add(next.NotBefore.Sub(m.clock.Now()))
	}
	if o := m.order(j.SessionID); o.Failure != "model_unavailable" {
		t.Errorf("failure %q, want model_unavailable", o.Failure)
	}
	if mail := m.mail.take(); len(mail) != 1 || mail[0].Kind != oracle.MailFailed {
		t.Errorf("mail jobs %+v, want the failure notice", mail)
	}
	if kinds := m.alerts.Kinds(); !slices.Equal(kinds, []string{string(alert.GenerationFailed)}) {
		t.Errorf("alerts %q, want one GENERATION_FAILED", kinds)
	}
	// A parked job is a success to SQS: the record-failure alarm must not
	// count an outage the circuit and the parking already handle.
	if c := m.metrics.Counts(); len(c) != 0 {
		t.Errorf("counted %v while parking, want nothing", c)
	}
}

func TestRejectedRepliesHoldTheOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replies []string
		want    oracle.Status
		mail    oracle.MailKind
		alerts  []string
	}{
		{"the fresh generation passes", []string{rejectedReply, goodReply}, oracle.StatusReady, oracle.MailVerdict, nil},
		{"both rejected", []string{rejectedReply, rejectedReply}, oracle.StatusHeld, oracle.MailReview, []string{string(alert.VerdictHeld)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMem(t)
			m.model.script = []answer{{replies: tc.replies}}
			j := m.paid("cs_test_held")
			if m.deliver(j, 1) {
				t.Fatal("the item failed")
			}
			o := m.order(j.SessionID)
			if o.Status != tc.want || (o.Status == oracle.StatusHeld) != (o.Verdict == "") {
				t.Fatalf("order %s with verdict %q, want %s", o.Status, o.Verdict, tc.want)
			}
			if mail := m.mail.take(); len(mail) != 1 || mail[0].Kind != tc.mail {
				t.Errorf("mail jobs %+v, want %s", mail, tc.mail)
			}
			if kinds := m.alerts.Kinds(); !slices.Equal(kinds, tc.alerts) {
				t.Errorf("alerts %q, want %q", kinds, tc.alerts)
			}
			if n := m.audit.Events()["tmm_crosscheck/ERROR"]; n != strings.Count(strings.Join(tc.replies, "\n"), rejectedReply) {
				t.Errorf("%d rejected crosschecks audited", n)
			}
		})
	}
}

func TestInternalFailuresAreRedeliveredAndTheLastGivesUp(t *testing.T) {
	for _, tc := range []struct {
		receives int
		want     oracle.Status
		mail     int
	}{
		{1, oracle.StatusGenerating, 0},
		{2, oracle.StatusGenerating, 0},
		{3, oracle.StatusFailed, 1},
	} {
		t.Run(fmt.Sprint("delivery ", tc.receives), func(t *testing.T) {
			m := newMem(t)
			m.model.script = []answer{{err: errors.New("a bug")}}
			j := m.paid("cs_test_internal")
			if !m.deliver(j, tc.receives) {
				t.Fatal("the item passed; SQS must deliver it again or dead-letter it")
			}
			if c := m.metrics.Counts(); !maps.Equal(c, map[string]float64{"GeneratorRecordFailures": 1}) {
				t.Errorf("counted %v, want one GeneratorRecordFailures", c)
			}
			o := m.order(j.SessionID)
			if o.Status != tc.want {
				t.Fatalf("order %s, want %s", o.Status, tc.want)
			}
			if mail := m.mail.take(); len(mail) != tc.mail {
				t.Errorf("mail jobs %+v, want %d", mail, tc.mail)
			}
			// The lease is given up, so the redelivery starts at once.
			if _, _, err := m.orders.StartGeneration(context.Background(), j.SessionID, time.Minute); tc.want == oracle.StatusGenerating && err != nil {
				t.Errorf("the lease was kept: %v", err)
			}
		})
	}
}
