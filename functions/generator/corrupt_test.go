package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// TestCorruptVerdictIsRepaired is REGEN_CONSISTENCY as CACHE_ALERT FM-4
// has it: the repair job a reader queues after setting a corrupt verdict
// aside is done by the generator. An emailed verdict is regenerated with
// the same prompt and checks, compared with the emailed label (the
// divergence rules: the notice only for a significant move) and never
// emailed again; one whose email never left is generated and emailed as a
// first verdict; a held order gets the review notice.
func TestCorruptVerdictIsRepaired(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   store.SetAsideMode
		regen  oracle.Verdict
		status oracle.Status
		level  string
		mail   []oracle.MailKind
	}{
		{name: "emailed, moved far", mode: store.SetAsideRegenerate, regen: oracle.VerdictRed, status: oracle.StatusReady,
			level: oracle.DivergenceSignificant, mail: []oracle.MailKind{oracle.MailDivergence}},
		{name: "emailed, moved one step", mode: store.SetAsideRegenerate, regen: oracle.VerdictAmber, status: oracle.StatusReady,
			level: oracle.DivergenceMinor},
		{name: "never emailed", mode: store.SetAsideGenerate, regen: oracle.VerdictAmber, status: oracle.StatusReady,
			mail: []oracle.MailKind{oracle.MailVerdict}},
		{name: "held", mode: store.SetAsideHold, status: oracle.StatusHeld, mail: []oracle.MailKind{oracle.MailReview}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			id := "cs_test_corrupt" + strings.NewReplacer(" ", "", ",", "").Replace(tc.name)
			e.paid(id, oracle.TierFull, "Open a second bakery")
			e.control(fakegemini.Scenario{Verdict: oracle.VerdictGreen})
			e.run(record("g", job(id), 1))
			e.mailJobs()
			first := e.order(id)
			if ok, err := e.orders.SetAside(context.Background(), first, tc.mode); err != nil || !ok {
				t.Fatalf("set aside: %v %v", ok, err)
			}
			e.control(fakegemini.Scenario{Verdict: tc.regen})
			if failed := e.run(record("r", fmt.Sprintf(`{"session_id":%q,"reason":"regenerate","attempt":0}`, id), 1)); len(failed) != 0 {
				t.Fatal("the repair failed")
			}
			o := e.order(id)
			if o.Status != tc.status || o.SetAsideVerdict != first.Verdict {
				t.Fatalf("order %s, set aside %q; want %s with the first verdict set aside", o.Status, o.SetAsideVerdict, tc.status)
			}
			if tc.status == oracle.StatusReady {
				if o.VerdictLabel != tc.regen || o.Regen != (tc.mode == store.SetAsideRegenerate) {
					t.Fatalf("repaired verdict %s regen %v", o.VerdictLabel, o.Regen)
				}
				if o.Regen && (o.RegenReason != oracle.RegenCorrupt || o.OriginalVerdict != oracle.VerdictGreen || o.OriginalVerdictHash != first.VerdictHash || o.Divergence != tc.level) {
					t.Fatalf("regeneration %s from %s (%s), divergence %s; want corrupt from the emailed GREEN, %s", o.RegenReason, o.OriginalVerdict, o.OriginalVerdictHash, o.Divergence, tc.level)
				}
				if calls := e.model.Calls(); len(calls) != 2 || calls[0].UserText != calls[1].UserText || calls[0].SystemInstruction != calls[1].SystemInstruction {
					t.Fatal("the repair's prompt differs from the first")
				}
			}
			if kinds := mailKinds(e.mailJobs()); !slices.Equal(kinds, tc.mail) {
				t.Fatalf("mail jobs %v, want %v", kinds, tc.mail)
			}
		})
	}
}
