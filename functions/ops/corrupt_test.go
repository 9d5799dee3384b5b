package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// TestShowSetsACorruptVerdictAsideAndSaysSo is CACHE_ALERT FM-4 at `make
// ops ACTION=show`: the operator's read checks the verdict as every reader
// does. A corrupt one is set aside, alerted once and its repair queued;
// show, then and later, says it was set aside and where its repair is,
// and never prints it as the order's verdict.
func TestShowSetsACorruptVerdictAsideAndSaysSo(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := "cs_test_showCorrupt"
	e.claim(id, oracle.StatusPaid)
	_, lease, err := e.orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a := oracle.Analysis{Verdict: oracle.VerdictGreen, Summary: "Bake on Sundays.", Breakdown: map[string]oracle.DimensionNote{}}
	for _, d := range oracle.Dimensions {
		a.Breakdown[d] = oracle.DimensionNote{Verdict: oracle.VerdictGreen, Analysis: d + " holds."}
	}
	canonical, err := a.CanonicalJSON()
	if err != nil {
		t.Fatal(err)
	}
	good := string(canonical)
	if _, err := e.orders.StoreVerdict(ctx, id, lease, store.StoredVerdict{Canonical: good, Hash: e.h.Hasher.Hash(good), Label: oracle.VerdictGreen,
		ExpiresAt: e.clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if a := e.do(Request{Action: "show", Session: id}); !strings.Contains(a.Text, "verdict   GREEN") || strings.Contains(a.Text, "set aside") {
		t.Fatalf("an intact verdict:\n%s", a.Text)
	}
	testkit.CorruptVerdict(t, e.f.AWS, e.f.Ref("OrdersTable"), id, "{\"summary\":\"Bake")
	for i := 0; i < 2; i++ {
		a := e.do(Request{Action: "show", Session: id})
		if !a.OK || !strings.Contains(a.Text, "state     PAID") || !strings.Contains(a.Text, "a corrupt stored verdict (16 bytes) was taken off the order; it is being generated again") ||
			strings.Contains(a.Text, "verdict   GREEN") {
			t.Fatalf("show %d of a corrupt verdict:\n%s", i, a.Text)
		}
	}
	raised := e.alerts.Raised()
	if len(raised) != 1 || raised[0].Severity != alert.Critical || raised[0].Kind != alert.VerdictCorrupt || raised[0].Session != id {
		t.Fatalf("alerts %+v, want one CRITICAL VERDICT_CORRUPT", raised)
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 || jobs[0].SessionID != id {
		t.Fatalf("generate jobs %+v, want the one repair", jobs)
	}
}
