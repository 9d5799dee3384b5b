package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
)

// TestCorruptVerdictIsRepairedEndToEnd is CACHE_ALERT FM-4 through the
// real functions: an emailed verdict that no longer parses is never served
// as a bare 500. The first load is told it is being prepared again and
// sets it aside (one CRITICAL VERDICT_CORRUPT); the generator regenerates
// it, and the page then serves the new verdict, marked as generated again
// because the first could not be read back, with no second verdict email.
func TestCorruptVerdictIsRepairedEndToEnd(t *testing.T) {
	t.Parallel()
	o := options(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	addr := fmt.Sprintf("corrupt-%d@example.com", time.Now().UnixNano())
	id := pay(t, s, "quick", "Should I open a bakery by the station?", addr)
	waitReady(t, s.APIURL, id)
	if !testkit.Eventually(60*time.Second, 100*time.Millisecond, func() bool { return len(mailbox(t, s.APIURL, addr)) == 1 }) {
		t.Fatal("the verdict email did not arrive")
	}

	testkit.CorruptVerdict(t, s.AWS, s.Resources.Ref("OrdersTable"), id, `{"summary":"The bak`)
	status, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", s.APIURL+"/api/verdict?session_id="+id))
	if status != http.StatusAccepted || !strings.Contains(string(body), `"status":"preparing_again"`) {
		t.Fatalf("the load that met the corrupt verdict: %d %s, want 202 preparing_again", status, body)
	}
	waitReady(t, s.APIURL, id)
	_, body, _ = send(t, http.DefaultClient, mustRequest(t, "GET", s.APIURL+"/api/verdict?session_id="+id))
	var served struct {
		Regen         bool       `json:"regen"`
		RegenReason   string     `json:"regen_reason"`
		RegeneratedAt *time.Time `json:"regenerated_at"`
		Verdict       struct{ Verdict string }
	}
	if err := json.Unmarshal(body, &served); err != nil || !served.Regen || served.RegenReason != "corrupt" || served.RegeneratedAt == nil || served.Verdict.Verdict == "" {
		t.Fatalf("repaired verdict %s (%v), want a regeneration for corrupt with its time", body, err)
	}
	corrupt := 0
	for _, a := range s.Alerts() {
		if strings.Contains(a, "VERDICT_CORRUPT") {
			corrupt++
		}
	}
	if corrupt != 1 {
		t.Fatalf("%d VERDICT_CORRUPT alerts, want 1: %q", corrupt, s.Alerts())
	}
	mailIdle(t, s)
	mine, verdicts := mailbox(t, s.APIURL, addr), 0
	for _, m := range mine {
		if m.Subject == "Your 42 Sisters AI Verdict" {
			verdicts++
		}
	}
	if verdicts != 1 || len(mine) > 2 {
		t.Fatalf("%d emails, %d of them verdicts; want the first verdict only, and at most the divergence notice", len(mine), verdicts)
	}
}
