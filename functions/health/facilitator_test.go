package main

import (
	"context"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakefacilitator"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/x402"
	"42sisters.ai/oracle/shared/x402rail"
)

// TestTheFacilitatorIsChecked: with the agent rail on, the health job asks
// the facilitator (the fake, over HTTP) what it settles. Up and listing
// x402 v2 exact on every network agents are offered, it passes; down
// (503), or not listing one of them, it fails through the checks'
// lifecycle, as X402_FACILITATOR_DOWN: ERROR on the first run, CRITICAL on
// the second, nothing on the third, one RECOVERED when it answers again.
func TestTheFacilitatorIsChecked(t *testing.T) {
	fake := fakefacilitator.New(fakefacilitator.Options{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	down := func(d bool) {
		if _, err := fake.Apply(fakefacilitator.Control{Down: &d}); err != nil {
			t.Fatal(err)
		}
	}
	both := x402rail.NewFacilitator(srv.URL, srv.Client(), nil)
	var networks []x402.NetworkInfo
	for _, n := range []x402.Network{x402.NetworkBase, x402.NetworkBaseSepolia} {
		info, _ := x402.LookupNetwork(n)
		networks = append(networks, info)
	}
	// A network the fake never lists (Ethereum's mainnet), as a
	// facilitator that dropped one of ours would leave it out.
	unlisted := append(networks[:1:1], x402.NetworkInfo{Network: "eip155:1", ChainID: 1})

	for _, tc := range []struct {
		name     string
		networks []x402.NetworkInfo
		down     bool
	}{
		{"down", networks, true},
		{"not listing a network", unlisted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLifecycleEnv(t)
			e.h.RetryDelay = 0
			failing := facilitatorCheck(both, tc.networks)
			healthy := facilitatorCheck(both, networks)
			for i, run := range []struct {
				failing bool
				status  health.Status
				alert   string // "" for none
			}{
				{false, health.OK, ""},
				{true, health.Critical, "ERROR | "},
				{true, health.Critical, "CRITICAL | "},
				{true, health.Critical, ""},
				{false, health.OK, "INFO | "},
				{false, health.OK, ""},
			} {
				e.h.Checks = []Check{healthy}
				if run.failing {
					e.h.Checks = []Check{failing}
					down(tc.down)
				}
				rec, alerts := e.run(t)
				down(false)
				c := rec.Checks[0]
				if c.Name != "x402_facilitator" || c.Status != run.status {
					t.Fatalf("run %d: check %+v, want x402_facilitator %s", i+1, c, run.status)
				}
				if run.failing && !strings.Contains(c.Detail, map[bool]string{true: "answer was lost", false: "does not list x402 v2 exact on eip155:1"}[tc.down]) {
					t.Errorf("run %d: detail %q does not say why", i+1, c.Detail)
				}
				switch {
				case run.alert == "" && len(alerts) != 0:
					t.Errorf("run %d: raised %q, want nothing", i+1, alerts)
				case run.alert != "":
					kind := "X402_FACILITATOR_DOWN"
					if run.status == health.OK {
						kind = "RECOVERED"
					}
					if len(alerts) != 1 || !strings.Contains(alerts[0], run.alert) || !strings.Contains(alerts[0], "| "+kind+" |") || !strings.Contains(alerts[0], "x402_facilitator") {
						t.Errorf("run %d: raised %q, want one %s%s about x402_facilitator", i+1, alerts, run.alert, kind)
					}
				}
			}
		})
	}
}

// TestTheRefusedPaymentHeadersAreFigures: the payment headers the agent
// rail counted instead of auditing (the Ledger's count per kind and UTC
// day, written as the agent function writes it) are the run's figures,
// yesterday's and today's, and the check's detail names today's.
func TestTheRefusedPaymentHeadersAreFigures(t *testing.T) {
	e := newLifecycleEnv(t)
	ctx := context.Background()
	count := func(kind store.PaymentJunk, n int) {
		for range n {
			if err := e.ledger.CountPaymentJunk(ctx, kind); err != nil {
				t.Fatal(err)
			}
		}
	}
	count(store.JunkMalformed, 4) // yesterday
	e.clock.Add(24 * time.Hour)
	count(store.JunkUndecodable, 3)
	count(store.JunkMalformed, 2)
	e.h.Checks = []Check{paymentJunkCheck(e.ledger, e.clock.Now)}
	rec, alerts := e.run(t)
	today, yesterday := e.clock.Now().UTC().Format(time.DateOnly), e.clock.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	want := map[string]health.PaymentJunk{today: {Undecodable: 3, Malformed: 2}, yesterday: {Malformed: 4}}
	if !reflect.DeepEqual(rec.X402Junk, want) {
		t.Fatalf("figures %+v, want %+v", rec.X402Junk, want)
	}
	if c := rec.Checks[0]; c.Name != "x402_junk" || c.Status != health.OK || !strings.Contains(c.Detail, "3 undecodable, 2 malformed") || len(alerts) != 0 {
		t.Fatalf("check %+v, alerts %q", c, alerts)
	}
	kept, found, err := e.ledger.LatestHealth(ctx)
	if err != nil || !found || !reflect.DeepEqual(kept.X402Junk, want) {
		t.Fatalf("the kept record's figures %+v (%v %v), want %+v", kept.X402Junk, found, err, want)
	}
}
