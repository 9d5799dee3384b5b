package main

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// storedGreen is a sound GREEN verdict as the generator stores it.
func storedGreen(e *env) store.StoredVerdict {
	return store.StoredVerdict{Canonical: canonicalGreen, Hash: e.h.Hasher.Hash(canonicalGreen), Label: oracle.VerdictGreen, ExpiresAt: e.clock.Now().Add(time.Hour)}
}

// corrupt overwrites the order's stored verdict as a faulty write would.
func (e *env) corrupt(id, verdict string) {
	e.t.Helper()
	testkit.CorruptVerdict(e.t, e.f.AWS, e.f.Ref("OrdersTable"), id, verdict)
}

// TestCorruptStoredVerdictIsSetAsideOnce is CACHE_ALERT FM-4 and INV-7 at
// the verdict API: a READY order whose stored verdict no longer parses, or
// no longer matches its keyed hash, is never served (no served record, no
// cache hit, no bare 500). Of eight concurrent loads exactly one sets it
// aside, raises CRITICAL VERDICT_CORRUPT and queues its repair; every load
// is told the verdict is being prepared again. The order is repaired as
// REGEN_CONSISTENCY has it: an emailed verdict is regenerated and compared
// with the emailed label, one never emailed is generated as a first
// verdict, and an order found corrupt a second time is held for the
// operator (under review).
func TestCorruptStoredVerdictIsSetAsideOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	alerts := testkit.AlertTap(t, e.f.AWS, e.f.Ref("AlertsTopic"), provision.TestRegion, provision.Account)
	states := mailStates{Orders: e.orders, mail: map[string]map[oracle.MailKind]oracle.MailState{}}
	e.h.Orders = states
	tests := []struct {
		name    string
		verdict string // what the store holds instead of the verdict
		emailed bool
		again   bool // the order was found corrupt once before
		// what the order becomes and what every load answers
		status     oracle.Status
		regen      bool
		answer     string
		alertWords string
	}{
		{name: "not JSON, emailed", verdict: `{"summary":"Go.","verd`, emailed: true,
			status: oracle.StatusPaid, regen: true, answer: "preparing_again", alertWords: "no longer parses; set aside, and generated again, compared with the emailed GREEN verdict"},
		{name: "tampered, emailed", verdict: `{"summary":"Stop.","verdict":"RED"}`, emailed: true,
			status: oracle.StatusPaid, regen: true, answer: "preparing_again", alertWords: "no longer matches its hash"},
		{name: "not JSON, never emailed", verdict: "\x00\x01garbage",
			status: oracle.StatusPaid, answer: "preparing_again", alertWords: "its email had not gone out, so the new one is emailed"},
		{name: "corrupt a second time", verdict: "{not json", emailed: true, again: true,
			status: oracle.StatusHeld, regen: true, answer: "under_review", alertWords: "held for the operator (its verdict was found corrupt before)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := e.session(oracle.TierQuick, "Should I open a bakery?", true)
			e.ready(id, e.clock.Now().Add(time.Hour))
			if tc.emailed {
				states.mail[id] = map[oracle.MailKind]oracle.MailState{oracle.MailVerdict: oracle.MailDelivered}
			}
			if tc.again {
				// Set aside once already, then generated again.
				e.corrupt(id, "first corruption")
				if code, body := e.get(id); code != http.StatusAccepted || body["status"] != "preparing_again" {
					t.Fatalf("first corruption: %d %v", code, body)
				}
				_, lease, err := e.orders.StartGeneration(ctx, id, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.orders.StoreVerdict(ctx, id, lease, storedGreen(e)); err != nil {
					t.Fatal(err)
				}
				e.jobs("GenerateQueue")
				alerts()
				e.clock.Add(2 * time.Minute) // past the alert's dedupe window
			}
			e.corrupt(id, tc.verdict)
			hits, logged := e.counts["CacheHits"], strings.Count(e.logs.String(), "corrupt stored verdict set aside")
			var wg sync.WaitGroup
			codes, answers := make([]int, 8), make([]map[string]any, 8)
			for i := range codes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					codes[i], answers[i] = e.get(id)
				}()
			}
			wg.Wait()
			for i := range codes {
				if codes[i] != http.StatusAccepted || answers[i]["status"] != tc.answer || answers[i]["verdict"] != nil {
					t.Fatalf("load %d: %d %v, want 202 %s and no verdict", i, codes[i], answers[i], tc.answer)
				}
			}
			if tc.answer == "preparing_again" && !strings.Contains(answers[0]["message"].(string), "being prepared again") {
				t.Fatalf("message %q", answers[0]["message"])
			}
			// Nothing was served: no cache hit, no served record.
			if e.counts["CacheHits"] != hits {
				t.Fatalf("%v cache hits counted for a corrupt verdict", e.counts["CacheHits"]-hits)
			}
			for _, r := range testkit.AuditRecords(t, e.s3, e.f.Ref("AuditBucket")) {
				if r.SessionID == id && r.Event == "verdict_served" {
					t.Fatal("a corrupt verdict was audited as served")
				}
			}
			// Exactly one load set it aside: one log line, one job, one alert.
			if n := strings.Count(e.logs.String(), "corrupt stored verdict set aside") - logged; n != 1 {
				t.Fatalf("set aside %d times, want once", n)
			}
			jobs := e.jobs("GenerateQueue")
			if len(jobs) != 1 || jobs[0].SessionID != id || jobs[0].Reason != queue.ReasonRegenerate {
				t.Fatalf("jobs %+v, want one repair job", jobs)
			}
			got := alerts()
			if len(got) != 1 || !strings.HasPrefix(got[0], "[ORACLE-ALERT] CRITICAL |") || !strings.Contains(got[0], "| VERDICT_CORRUPT |") || !strings.Contains(got[0], tc.alertWords) {
				t.Fatalf("alerts %q, want one CRITICAL VERDICT_CORRUPT saying %q", got, tc.alertWords)
			}
			o, _, err := e.orders.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != tc.status || o.Verdict != "" || o.SetAsideVerdict != tc.verdict || o.SetAsideAt == nil || o.Regen != tc.regen {
				t.Fatalf("order %s verdict %q set aside %q regen %v, want %s with the verdict set aside, regen %v", o.Status, o.Verdict, o.SetAsideVerdict, o.Regen, tc.status, tc.regen)
			}
			if tc.regen && (o.RegenReason != oracle.RegenCorrupt || o.OriginalVerdict != oracle.VerdictGreen || o.OriginalVerdictHash == "") {
				t.Fatalf("regen reason %q original %q %q, want corrupt with the emailed GREEN kept", o.RegenReason, o.OriginalVerdict, o.OriginalVerdictHash)
			}
			if tc.status == oracle.StatusHeld && o.Failure != oracle.HoldVerdictCorrupt {
				t.Fatalf("held for %q", o.Failure)
			}
			// A later load meets no corrupt verdict and raises nothing more.
			if code, body := e.get(id); code != http.StatusAccepted || body["status"] != tc.answer {
				t.Fatalf("later load: %d %v", code, body)
			}
			if got := alerts(); len(got) != 0 {
				t.Fatalf("a later load alerted again: %q", got)
			}
		})
	}
}
