package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/crosscheck"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
)

// crosscheckObjects returns the tmm_crosscheck records of the audit bucket
// as written, as JSON objects (every line of each object), keyed by their
// ids (_key).
func (e *env) crosscheckObjects() []map[string]any {
	e.t.Helper()
	ctx := context.Background()
	bucket := e.f.Ref("AuditBucket")
	l, err := e.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []map[string]any
	for _, o := range l.Contents {
		g, err := e.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
		if err != nil {
			e.t.Fatal(err)
		}
		b, err := io.ReadAll(g.Body)
		g.Body.Close()
		if err != nil {
			e.t.Fatal(err)
		}
		// Every line of the object is a record, named by its id.
		for d := json.NewDecoder(bytes.NewReader(b)); d.More(); {
			var r map[string]any
			if err := d.Decode(&r); err != nil {
				e.t.Fatalf("audit record %s: %v", aws.ToString(o.Key), err)
			}
			if r["event"] == "tmm_crosscheck" {
				r["_key"] = r["record_id"]
				out = append(out, r)
			}
		}
	}
	return out
}

// wantCrosscheckFields checks one tmm_crosscheck record against the spec's
// log entry: every field present with its type and the constants' values.
// query_preview is the one field replaced: the query is only ever a keyed
// hash in the audit log (PRODUCT_TIERS INV-5), so query_hash stands in.
func wantCrosscheckFields(t *testing.T, r map[string]any, session string, tier oracle.Tier) {
	t.Helper()
	if r["session_id"] != session || r["tier"] != string(tier) {
		t.Errorf("%s: session_id %v, tier %v; want %s, %s", r["_key"], r["session_id"], r["tier"], session, tier)
	}
	if h, _ := r["query_hash"].(string); !strings.HasPrefix(h, "hmac-sha256:") {
		t.Errorf("%s: query_hash %v, want a keyed hash", r["_key"], r["query_hash"])
	}
	if _, ok := r["query_preview"]; ok {
		t.Errorf("%s holds a query preview", r["_key"])
	}
	if ts, _ := r["timestamp"].(string); ts == "" {
		t.Errorf("%s: timestamp %v", r["_key"], r["timestamp"])
	} else if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		t.Errorf("%s: timestamp %q is not ISO 8601: %v", r["_key"], ts, err)
	}
	c, ok := r["crosscheck"].(map[string]any)
	if !ok {
		t.Fatalf("%s has no crosscheck object: %v", r["_key"], r)
	}
	for _, k := range []string{"verdict_label", "coherence_score", "threshold", "phi", "approved", "flags", "crosscheck_reason", "rule"} {
		if _, ok := c[k]; !ok {
			t.Errorf("%s: crosscheck.%s is missing", r["_key"], k)
		}
	}
	if _, ok := c["coherence_score"].(float64); !ok {
		t.Errorf("%s: coherence_score %v", r["_key"], c["coherence_score"])
	}
	if c["threshold"] != crosscheck.OMEGA || c["phi"] != crosscheck.PHI {
		t.Errorf("%s: threshold %v, phi %v", r["_key"], c["threshold"], c["phi"])
	}
	if _, ok := c["flags"].([]any); !ok {
		t.Errorf("%s: flags %v, want an array", r["_key"], c["flags"])
	}
	if _, ok := c["approved"].(bool); !ok {
		t.Errorf("%s: approved %v", r["_key"], c["approved"])
	}
}

// TMM_CROSSCHECK VC-4: every crosscheck, passed or failed by either rule,
// writes its record with every field of the spec's log entry.
func TestEveryCrosscheckIsRecordedWithEveryField(t *testing.T) {
	e := newEnv(t)
	type outcome struct {
		approved bool
		reason   string
		rule     string
		label    string
	}
	pass := func(label string) outcome { return outcome{true, "pass", "formula", label} }
	cases := []struct {
		id   string
		tier oracle.Tier
		sc   fakegemini.Scenario
		want []outcome // one per reply, in order
	}{
		{"cs_test_vc4pass", oracle.TierQuick, fakegemini.Scenario{Verdict: oracle.VerdictAmber},
			[]outcome{pass("AMBER")}},
		{"cs_test_vc4formula", oracle.TierQuick, fakegemini.Scenario{Incomplete: true, Verdict: oracle.VerdictRed},
			[]outcome{{false, "field_missing", "formula", "RED"}, pass("")}},
		{"cs_test_vc4majority", oracle.TierFull, fakegemini.Scenario{Inconsistent: true, Verdict: oracle.VerdictGreen},
			[]outcome{{false, "dimension_conflict", "majority", "GREEN"}, pass("")}},
	}
	for _, tc := range cases {
		e.paid(tc.id, tc.tier, "Should I open a bakery on my street?")
		e.control(tc.sc)
		if failed := e.run(record("m"+tc.id, job(tc.id), 1)); len(failed) != 0 {
			t.Fatalf("%s failed", tc.id)
		}
		if o := e.order(tc.id); o.Status != oracle.StatusReady {
			t.Fatalf("%s: %s, want READY", tc.id, o.Status)
		}
	}
	recs := e.crosscheckObjects()
	for _, tc := range cases {
		var mine []map[string]any
		for _, r := range recs {
			if r["session_id"] == tc.id {
				mine = append(mine, r)
			}
		}
		if len(mine) != len(tc.want) {
			t.Fatalf("%s: %d crosscheck records, want %d", tc.id, len(mine), len(tc.want))
		}
		slices.SortFunc(mine, func(a, b map[string]any) int { return strings.Compare(a["_key"].(string), b["_key"].(string)) })
		for i, r := range mine {
			wantCrosscheckFields(t, r, tc.id, tc.tier)
			c, w := r["crosscheck"].(map[string]any), tc.want[i]
			if c["approved"] != w.approved || c["crosscheck_reason"] != w.reason || c["rule"] != w.rule || (w.label != "" && c["verdict_label"] != w.label) {
				t.Errorf("%s reply %d: %v, want %+v", tc.id, i+1, c, w)
			}
			if wantStatus := map[bool]string{true: "OK", false: "ERROR"}[w.approved]; r["status"] != wantStatus {
				t.Errorf("%s reply %d: status %v, want %s", tc.id, i+1, r["status"], wantStatus)
			}
		}
	}
}

// CROSSCHECK VC-3 and the dimension_conflict gate, on the generator: a
// verdict that contradicts the majority of its dimensions (GREEN over five
// RED, RED over five GREEN) is never stored; it is generated once more with
// the contradiction named to the model, and a second contradiction holds
// the order for review, as two rejections by the formula do.
func TestAContradictingVerdictIsRegeneratedOnceThenHeld(t *testing.T) {
	for _, tc := range []struct {
		top, majority oracle.Verdict
		tier          oracle.Tier
		calls         int
		want          oracle.Status
	}{
		{oracle.VerdictGreen, oracle.VerdictRed, oracle.TierFull, 1, oracle.StatusReady},
		{oracle.VerdictRed, oracle.VerdictGreen, oracle.TierStrategy, 1, oracle.StatusReady},
		{oracle.VerdictGreen, oracle.VerdictRed, oracle.TierStrategy, 2, oracle.StatusHeld},
		{oracle.VerdictRed, oracle.VerdictGreen, oracle.TierFull, 2, oracle.StatusHeld},
	} {
		t.Run(fmt.Sprintf("%s %s over %s, %d contradictions", tc.tier, tc.top, tc.majority, tc.calls), func(t *testing.T) {
			e := newEnv(t)
			id := fmt.Sprintf("cs_test_contradict%s%s%d", tc.tier, tc.top, tc.calls)
			e.paid(id, tc.tier, "Open a second bakery across town")
			e.control(fakegemini.Scenario{Inconsistent: true, Verdict: tc.top, Calls: tc.calls})
			if failed := e.run(record("x", job(id), 1)); len(failed) != 0 {
				t.Fatal("the item failed: SQS would deliver it again")
			}

			// One fresh generation, with the contradiction named after the
			// strict instruction.
			calls := e.model.Calls()
			if len(calls) != 2 {
				t.Fatalf("%d model calls, want 2", len(calls))
			}
			p, err := prompt.Build(tc.tier, "Open a second bakery across town")
			if err != nil {
				t.Fatal(err)
			}
			named := prompt.Contradiction(tc.top, tc.majority, oracle.Dimensions, len(oracle.Dimensions))
			if calls[0].SystemInstruction != p.System {
				t.Error("the first call's system instruction is not the tier's prompt")
			}
			if want := p.System + "\n\n" + gemini.StrictInstruction + "\n\n" + named; calls[1].SystemInstruction != want {
				t.Errorf("the retry's system instruction ends %q, want the contradiction named:\n%s",
					calls[1].SystemInstruction[max(0, len(calls[1].SystemInstruction)-400):], named)
			}
			if calls[1].UserText != calls[0].UserText {
				t.Error("the retry changed the user text")
			}

			// Each reply's crosscheck record says which rule decided.
			recs := e.crosscheckObjects()
			if len(recs) != 2 {
				t.Fatalf("%d crosscheck records, want 2", len(recs))
			}
			slices.SortFunc(recs, func(a, b map[string]any) int { return strings.Compare(a["_key"].(string), b["_key"].(string)) })
			for i, r := range recs {
				c := r["crosscheck"].(map[string]any)
				rejected := i < tc.calls
				if rejected {
					score, _ := c["coherence_score"].(float64)
					if c["approved"] != false || c["rule"] != "majority" || c["crosscheck_reason"] != "dimension_conflict" ||
						c["verdict_label"] != string(tc.top) || score < crosscheck.OMEGA {
						t.Errorf("reply %d's record %v, want rejected by the majority rule over a passing score", i+1, c)
					}
				} else if c["approved"] != true || c["rule"] != "formula" {
					t.Errorf("reply %d's record %v, want approved", i+1, c)
				}
			}

			o := e.order(id)
			jobs := e.mailJobs()
			if tc.want == oracle.StatusReady {
				a, err := oracle.ParseAnalysis(tc.tier, []byte(o.Verdict))
				if o.Status != oracle.StatusReady || err != nil || crosscheck.Check(tc.tier, []byte(o.Verdict)).Contradiction != nil {
					t.Fatalf("order %s, stored verdict %+v (%v), want READY with a verdict that agrees with its dimensions", o.Status, a, err)
				}
				if len(jobs) != 1 || jobs[0].Kind != oracle.MailVerdict {
					t.Fatalf("mail jobs %+v, want the verdict", jobs)
				}
				if a := e.alerts(); len(a) != 0 {
					t.Fatalf("alerts %q", a)
				}
				return
			}
			if o.Status != oracle.StatusHeld || o.Verdict != "" || o.Failure != "crosscheck_dimension_conflict" {
				t.Fatalf("order %s (verdict %q, failure %q), want HELD without a verdict, for crosscheck_dimension_conflict", o.Status, o.Verdict, o.Failure)
			}
			if len(jobs) != 1 || jobs[0].Kind != oracle.MailReview {
				t.Fatalf("mail jobs %+v, want the review notice", jobs)
			}
			if jobs := e.generateJobs(); len(jobs) != 0 {
				t.Fatalf("the job was parked: %+v", jobs)
			}
			wantDetail := fmt.Sprintf("the last because its verdict contradicted its dimensions (%s over 5 of 5 dimensions %s; dimension_conflict by the majority rule)", tc.top, tc.majority)
			if a := e.alerts(); len(a) != 1 || !strings.Contains(a[0], "VERDICT_HELD") || !strings.Contains(a[0], wantDetail) {
				t.Fatalf("alerts %q, want one VERDICT_HELD naming the contradiction", a)
			}
			if n := e.byEvent(); n["generation_failed/ERROR"] != 1 {
				t.Fatalf("audit %v, want the held record", n)
			}
		})
	}
}

// CROSSCHECK FM-4 and GAP-04: a regeneration's reply passes the same
// crosscheck, both rules, before it is stored: a rejected one is generated
// once more and never replaces anything.
func TestARegeneratedVerdictPassesTheCrosscheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sc     fakegemini.Scenario
		reason string
	}{
		{"formula", fakegemini.Scenario{Incomplete: true}, "field_missing"},
		{"majority", fakegemini.Scenario{Inconsistent: true, Verdict: oracle.VerdictGreen}, "dimension_conflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			id := "cs_test_regencheck" + tc.name
			e.paid(id, oracle.TierFull, "Open a second bakery")
			e.control(fakegemini.Scenario{Verdict: oracle.VerdictAmber})
			e.run(record("g", job(id), 1))
			first := e.order(id)
			e.mailJobs()
			before := len(e.crosscheckObjects())

			e.clock.Add(e.h.Retention + time.Hour)
			e.control(tc.sc)
			if failed := e.run(record("r", fmt.Sprintf(`{"session_id":%q,"reason":"regenerate","attempt":0}`, id), 1)); len(failed) != 0 {
				t.Fatal("the regeneration failed")
			}
			o := e.order(id)
			if o.Status != oracle.StatusReady || !o.Regen || o.GeneratedAt == nil || !o.GeneratedAt.After(*first.GeneratedAt) {
				t.Fatalf("order %+v, want a stored regeneration", o)
			}
			if crosscheck.Check(oracle.TierFull, []byte(o.Verdict)).Approved != true {
				t.Fatalf("the stored regeneration does not pass the crosscheck: %s", o.Verdict)
			}
			recs := e.crosscheckObjects()
			slices.SortFunc(recs, func(a, b map[string]any) int { return strings.Compare(a["_key"].(string), b["_key"].(string)) })
			regen := recs[before:]
			if len(regen) != 2 {
				t.Fatalf("%d crosscheck records for the regeneration, want 2", len(regen))
			}
			c0, c1 := regen[0]["crosscheck"].(map[string]any), regen[1]["crosscheck"].(map[string]any)
			if c0["approved"] != false || c0["crosscheck_reason"] != tc.reason || c0["rule"] != tc.name || c1["approved"] != true {
				t.Fatalf("the regeneration's records %v, %v; want %s by the %s rule, then a pass", c0, c1, tc.reason, tc.name)
			}
			if calls := e.model.Calls(); len(calls) != 3 {
				t.Fatalf("%d model calls, want 3 (one first generation, two in the regeneration)", len(calls))
			}
		})
	}
}
