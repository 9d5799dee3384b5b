package main

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
)

// Each generation writes its audit records as one object, a record a
// line, named by its outcome: the verdict stored (or regenerated), the
// order held or quarantined, the attempt failed, or, when its generation
// ended with none (the quarantine's record could not be written), its
// last record. No record is in two objects.
func TestEachGenerationIsOneAuditObject(t *testing.T) {
	type want func(id string, o oracle.Order) map[string][]string
	cases := []struct {
		name   string
		tier   oracle.Tier
		sc     fakegemini.Scenario
		broken bool // the quarantine bucket is missing
		regen  bool // a regeneration follows the first verdict
		want   want
	}{
		{"a first verdict", oracle.TierQuick, fakegemini.Scenario{Verdict: oracle.VerdictGreen}, false, false,
			func(id string, _ oracle.Order) map[string][]string {
				return map[string][]string{audit.RecordID(id, audit.NameGenerated): {
					audit.RecordID(id, audit.NameCrosscheck, 1, 1), audit.RecordID(id, audit.NameFilterGenerator, 1), audit.RecordID(id, audit.NameGenerated)}}
			}},
		{"a reply rejected, the next stored", oracle.TierFull, fakegemini.Scenario{Inconsistent: true, Verdict: oracle.VerdictGreen, Calls: 1}, false, false,
			func(id string, _ oracle.Order) map[string][]string {
				return map[string][]string{audit.RecordID(id, audit.NameGenerated): {
					audit.RecordID(id, audit.NameCrosscheck, 1, 1), audit.RecordID(id, audit.NameCrosscheck, 1, 2),
					audit.RecordID(id, audit.NameFilterGenerator, 1), audit.RecordID(id, audit.NameGenerated)}}
			}},
		{"two replies rejected: held", oracle.TierFull, fakegemini.Scenario{Inconsistent: true, Verdict: oracle.VerdictGreen, Calls: 2}, false, false,
			func(id string, _ oracle.Order) map[string][]string {
				return map[string][]string{audit.RecordID(id, audit.NameHeld): {
					audit.RecordID(id, audit.NameCrosscheck, 1, 1), audit.RecordID(id, audit.NameCrosscheck, 1, 2), audit.RecordID(id, audit.NameHeld)}}
			}},
		{"written again for gate 1", oracle.TierQuick, fakegemini.Scenario{LeakTerms: []string{"CSDM"}}, false, false,
			func(id string, _ oracle.Order) map[string][]string {
				return map[string][]string{audit.RecordID(id, audit.NameGenerated): {
					audit.RecordID(id, audit.NameCrosscheck, 1, 1), audit.RecordID(id, audit.NameFilterRewrite, 1),
					audit.RecordID(id, audit.NameCrosscheck, 1, 2), audit.RecordID(id, audit.NameFilterGenerator, 1), audit.RecordID(id, audit.NameGenerated)}}
			}},
		{"quarantined at gate 1", oracle.TierQuick, fakegemini.Scenario{LeakTerms: []string{"CSDM"}, Calls: 2}, false, false,
			func(id string, _ oracle.Order) map[string][]string {
				return map[string][]string{audit.RecordID(id, audit.NameQuarantinedGenerator): {
					audit.RecordID(id, audit.NameCrosscheck, 1, 1), audit.RecordID(id, audit.NameFilterRewrite, 1),
					audit.RecordID(id, audit.NameCrosscheck, 1, 2), audit.RecordID(id, audit.NameFilterGenerator, 1), audit.RecordID(id, audit.NameQuarantinedGenerator)}}
			}},
		{"the quarantine's record not written: no outcome", oracle.TierQuick, fakegemini.Scenario{LeakTerms: []string{"CSDM"}, Calls: 2}, true, false,
			func(id string, _ oracle.Order) map[string][]string {
				return map[string][]string{audit.RecordID(id, audit.NameFilterGenerator, 1): {
					audit.RecordID(id, audit.NameCrosscheck, 1, 1), audit.RecordID(id, audit.NameFilterRewrite, 1),
					audit.RecordID(id, audit.NameCrosscheck, 1, 2), audit.RecordID(id, audit.NameFilterGenerator, 1)}}
			}},
		{"the model down: the attempt failed", oracle.TierQuick, fakegemini.Scenario{Status: 503, Calls: 3}, false, false,
			func(id string, _ oracle.Order) map[string][]string {
				return map[string][]string{audit.RecordID(id, audit.NameAttempt, 1): {audit.RecordID(id, audit.NameAttempt, 1)}}
			}},
		{"a regeneration", oracle.TierQuick, fakegemini.Scenario{Verdict: oracle.VerdictGreen}, false, true,
			func(id string, o oracle.Order) map[string][]string {
				at := o.GeneratedAt.Unix()
				return map[string][]string{
					audit.RecordID(id, audit.NameGenerated): {
						audit.RecordID(id, audit.NameCrosscheck, 1, 1), audit.RecordID(id, audit.NameFilterGenerator, 1), audit.RecordID(id, audit.NameGenerated)},
					audit.RecordID(id, audit.NameRegenerated, at): {
						audit.RecordID(id, audit.NameCrosscheck, o.Attempts, 1), audit.RecordID(id, audit.NameFilterGenerator, o.Attempts),
						audit.RecordID(id, audit.NameDivergence, at), audit.RecordID(id, audit.NameRegenerated, at)},
				}
			}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.broken {
				e.h.Quarantine = quarantine.NewStore(e.s3, e.f.Ref("QuarantineBucket")+"-missing")
			}
			id := fmt.Sprintf("cs_test_stepobject%d", i)
			e.paid(id, tc.tier, "Should I open a bakery on my street?")
			e.control(tc.sc)
			e.run(record("g", job(id), 1))
			if tc.regen {
				e.clock.Add(e.h.Retention + time.Hour)
				e.control(fakegemini.Scenario{Verdict: oracle.VerdictAmber})
				if failed := e.run(record("r", fmt.Sprintf(`{"session_id":%q,"reason":"regenerate","attempt":0}`, id), 1)); len(failed) != 0 {
					t.Fatal("the regeneration failed")
				}
			}
			got := testkit.AuditObjects(t, e.s3, e.f.Ref("AuditBucket"))
			if want := tc.want(id, e.order(id)); !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("objects %q, want %q", got, want)
			}
		})
	}
}
