package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// TestCorruptVerdictIsNeverMailed is CACHE_ALERT FM-4 at the mailer: a
// verdict job whose stored verdict no longer parses sends nothing and does
// not fail (no retries into the dead-letter queue): the verdict is set
// aside, CRITICAL VERDICT_CORRUPT raised once and its repair queued. Its
// email never went out, so the order is generated as a first verdict,
// which is then mailed as any first verdict is.
func TestCorruptVerdictIsNeverMailed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	addr := uniqueAddress(t)
	id := e.paidSession(oracle.TierFull, addr)
	e.ready(id, oracle.TierFull, oracle.VerdictAmber)
	testkit.CorruptVerdict(t, e.f.AWS, e.f.Ref("OrdersTable"), id, `{"summary":"The inst`)
	for i := 0; i < 2; i++ { // the job, then a redelivery of it
		if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
			t.Fatalf("run %d: the job failed; a corrupt verdict is acknowledged, not retried", i)
		}
	}
	if got := e.inbox(addr); len(got) != 0 {
		t.Fatalf("%d emails sent from a corrupt verdict", len(got))
	}
	alerts := e.alerts()
	if len(alerts) != 1 || !strings.HasPrefix(alerts[0], "[ORACLE-ALERT] CRITICAL |") || !strings.Contains(alerts[0], "| VERDICT_CORRUPT |") ||
		!strings.Contains(alerts[0], "no longer parses") {
		t.Fatalf("alerts %q, want one CRITICAL VERDICT_CORRUPT", alerts)
	}
	var repairs []queue.Job
	for _, b := range testkit.Drain(t, e.sqs, e.f.Ref("GenerateQueue")) {
		j, err := queue.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		repairs = append(repairs, j)
	}
	if len(repairs) != 1 || repairs[0].SessionID != id {
		t.Fatalf("generate jobs %+v, want the one repair", repairs)
	}
	o, _, err := e.orders.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != oracle.StatusPaid || o.Verdict != "" || o.SetAsideVerdict == "" || o.Regen {
		t.Fatalf("order %s regen %v verdict %q, want PAID for a first generation with the corrupt verdict set aside", o.Status, o.Regen, o.Verdict)
	}
	// The generator stores the new verdict; its email goes out.
	_, lease, err := e.orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	canon, _ := analysis(oracle.TierFull, oracle.VerdictGreen).CanonicalJSON()
	if _, err := e.orders.StoreVerdict(ctx, id, lease, store.StoredVerdict{Canonical: string(canon), Hash: e.h.Hasher.Hash(string(canon)),
		Label: oracle.VerdictGreen, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
		t.Fatal("the repaired verdict's job failed")
	}
	if got := e.inbox(addr); len(got) != 1 || !strings.Contains(got[0].Text, "GREEN") {
		t.Fatalf("%d emails, want the repaired GREEN verdict once", len(got))
	}
}
