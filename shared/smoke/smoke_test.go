package smoke_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"42sisters.ai/oracle/shared/smoke"
	"42sisters.ai/oracle/shared/x402"
)

// TestEnvironmentCheckStopsTheRun: a live key, no test key or no signing
// secret, or an agent rail on Base Sepolia without the smoke wallet known
// to the agent function by its address, fail stage 1, exit 2, and nothing
// else runs (no probe, no call).
func TestEnvironmentCheckStopsTheRun(t *testing.T) {
	wallet := testWallet(t)
	address := x402.AddressOf(wallet.PubKey())
	rail := func(key *secp256k1.PrivateKey, payer string) smoke.Agent {
		return smoke.Agent{PayTo: payTo, Testnet: true, Key: key, Payer: payer}
	}
	cases := []struct {
		name, key, secret string
		agent             smoke.Agent
		want              string
	}{
		{"a live key", "sk_live_x", "whsec_x", smoke.Agent{}, "FATAL: production Stripe key"},
		{"a live restricted key", "rk_live_x", "whsec_x", smoke.Agent{}, "FATAL: production Stripe key"},
		{"no key", "", "whsec_x", smoke.Agent{}, "no test-mode Stripe key"},
		{"no signing secret", "sk_test_x", "", smoke.Agent{}, "no test-mode webhook signing secret"},
		{"the agent rail without the smoke wallet", "sk_test_x", "whsec_x", rail(nil, address), "no x402 smoke wallet key (X402_SMOKE_KEY"},
		{"the smoke wallet unknown to the agent function", "sk_test_x", "whsec_x", rail(wallet, ""), "set it to the smoke wallet's address " + address},
		{"the smoke wallet known by another address", "sk_test_x", "whsec_x", rail(wallet, payTo), "but X402_SMOKE_PAYER (X402SmokePayer) is " + payTo},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			touched := false
			probe := func(context.Context) (string, error) { touched = true; return "", nil }
			r := &smoke.Runner{StripeKey: c.key, SigningSecret: c.secret, APIURL: "http://127.0.0.1:1", HTTP: http.DefaultClient,
				Stores: probe, Email: probe, Agent: c.agent}
			rep := r.Run(context.Background())
			if rep.ExitCode() != 2 || len(rep.Results) != 1 || !strings.Contains(rep.Results[0].Err, c.want) || touched {
				t.Errorf("exit %d, results %+v, probes touched %v; want exit 2 and stage 1 alone failing with %q", rep.ExitCode(), rep.Results, touched, c.want)
			}
		})
	}
}

// TestStagesThatNeedAFailedOneAreSkipped: with the checkout down, the
// stages that follow the session are skipped, the stores and email still
// report, and the run exits 1 naming stage 4.
func TestStagesThatNeedAFailedOneAreSkipped(t *testing.T) {
	ok := func(context.Context) (string, error) { return "ok", nil }
	r := &smoke.Runner{StripeKey: "sk_test_x", SigningSecret: "whsec_x", APIURL: "http://127.0.0.1:1", HTTP: http.DefaultClient,
		Stores: ok, Email: func(context.Context) (string, error) { return "", errors.New("sending paused") }}
	rep := r.Run(context.Background())
	got := ""
	for _, s := range rep.Results {
		got += string(s.Outcome)[:1]
	}
	// The agent stages do not apply (the rail is off); the chat stage has
	// no chat table; nothing was made, so there is nothing to clean up.
	if got != "PPFFSSSSSPPFS" || rep.ExitCode() != 1 || rep.Passed() != 4 {
		t.Fatalf("outcomes %s exit %d, want PPFFSSSSSPPFS and 1", got, rep.ExitCode())
	}
	if f, _ := rep.FirstFailure(); f.Stage != 3 || !strings.Contains(rep.Headline(), "4/13 FAIL — Stage 3 (Email transport): sending paused") {
		t.Errorf("first failure %+v, headline %q", f, rep.Headline())
	}
}

// TestTheAgentStagesNeedATestNetwork: with the agent rail off, or on Base
// alone (where paying costs real money), the environment check needs no
// smoke wallet and the agent stages pass as not applicable, saying why,
// without a request to the rail.
func TestTheAgentStagesNeedATestNetwork(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer api.Close()
	ok := func(context.Context) (string, error) { return "ok", nil }
	for _, c := range []struct {
		name  string
		agent smoke.Agent
		want  string
	}{
		{"the rail off", smoke.Agent{Testnet: true, Key: testWallet(t)}, "n/a: the agent rail is off (X402PayTo empty)"},
		{"the rail on Base alone", smoke.Agent{PayTo: payTo}, "n/a: the agent rail offers no test network (X402Networks mainnet)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			paths = nil
			r := &smoke.Runner{StripeKey: "sk_test_x", SigningSecret: "whsec_x", APIURL: api.URL, HTTP: api.Client(),
				Stores: ok, Email: ok, Agent: c.agent}
			rep := r.Run(context.Background())
			if len(rep.Results) != len(smoke.Stages) || rep.Results[0].Outcome != smoke.Pass || rep.Results[0].Figure != "stripe=test x402=n/a" {
				t.Fatalf("results %+v", rep.Results)
			}
			for _, res := range rep.Results[9:11] {
				if res.Outcome != smoke.Pass || res.Figure != c.want {
					t.Errorf("stage %d: %s %q, want PASS %q", res.Stage, res.Outcome, res.Figure, c.want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range paths {
				if strings.HasPrefix(p, "/x402/") {
					t.Errorf("the run called %s", p)
				}
			}
		})
	}
}

// TestParseWalletKey: a key as wallets export it, with or without 0x;
// anything else is refused without repeating it.
func TestParseWalletKey(t *testing.T) {
	const key = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	const address = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23" // this key's, as viem derives it
	for _, s := range []string{key, "0x" + key, "0X" + strings.ToUpper(key), " 0x" + key + "\n"} {
		k, err := smoke.ParseWalletKey(s)
		if err != nil || x402.AddressOf(k.PubKey()) != address {
			t.Errorf("%q: %v", s, err)
		}
	}
	for name, s := range map[string]string{
		"empty":             "",
		"short":             key[:62],
		"long":              key + "00",
		"not hex":           "zz" + key[2:],
		"zero":              strings.Repeat("0", 64),
		"the curve's order": "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141",
	} {
		if _, err := smoke.ParseWalletKey(s); err == nil || (len(s) > 8 && strings.Contains(err.Error(), s[2:10])) {
			t.Errorf("%s: err %v, want a refusal that does not repeat the key", name, err)
		}
	}
}

// payTo is the deployment's wallet in these tests.
const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

func testWallet(t *testing.T) *secp256k1.PrivateKey {
	t.Helper()
	k, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestReportFormat(t *testing.T) {
	rep := smoke.Report{Started: time.Date(2026, 4, 16, 7, 0, 0, 0, time.UTC), Duration: 18300 * time.Millisecond}
	for i := range smoke.Stages {
		rep.Results = append(rep.Results, smoke.Result{Stage: i + 1, Outcome: smoke.Pass})
	}
	rep.Results[3].Figure = "session_id=cs_test_abc1"
	want := "ORACLE SMOKE TEST — 2026-04-16T07:00:00Z\n" + strings.Repeat("=", 42) + "\n\n" +
		"[STAGE 1] Environment check ....................... PASS\n"
	s := rep.String()
	if !strings.HasPrefix(s, want) {
		t.Errorf("report begins\n%s\nwant\n%s", s[:min(len(s), len(want)+40)], want)
	}
	for _, line := range []string{"[STAGE 4] Test checkout session ", "PASS  session_id=cs_test_abc1\n", "[STAGE 10] Agent payment (x402) ",
		"[STAGE 11] Agent verdict (x402) ", "[STAGE 12] Sisters Chat ", "[STAGE 13] Cleanup ", "\nRESULT: 13/13 PASS — Pipeline operational.\nDuration: 18.3s\n"} {
		if !strings.Contains(s, line) {
			t.Errorf("report lacks %q:\n%s", line, s)
		}
	}
	if rep.ExitCode() != 0 || rep.Headline() != "[SMOKE] Oracle pipeline: 13/13 PASS (18.3s)" {
		t.Errorf("exit %d headline %q", rep.ExitCode(), rep.Headline())
	}
}
