package store_test

import (
	"context"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// The claim that sends a generation job does not record it (fulfil): the
// generator's claim does, in the write that takes the order, and frees the
// claim's job lease. Until then a claim of the same order finds it in
// flight while the lease lives, and resumes it (sends the job again) once
// the lease has lapsed; the generator's claim lets one generation start
// however many jobs came, and keeps the first time the job was known on
// its queue.
func TestTheGeneratorsClaimRecordsTheGenerationJob(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		lapsed     bool
		wantReplay oracle.ClaimOutcome
	}{
		{"a replay while the claim's lease lives", false, oracle.InFlight},
		{"a replay once the lease has lapsed", true, oracle.Resumed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orders, _, clk := newOrders(t)
			id := "cs_test_reached"
			first, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease)
			if err != nil || first.Outcome != oracle.Claimed || first.Lease == "" {
				t.Fatalf("claim: %+v %v", first, err)
			}
			if tc.lapsed {
				clk.Add(lease + time.Millisecond)
			}
			replay, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease)
			if err != nil || replay.Outcome != tc.wantReplay {
				t.Fatalf("replay before the generator's claim: %v %v, want %v", replay.Outcome, err, tc.wantReplay)
			}
			reached := clk.Now()
			o, _, err := orders.StartGeneration(ctx, id, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if o.JobEnqueuedAt == nil || !o.JobEnqueuedAt.Equal(reached) {
				t.Fatalf("the job known on its queue at %v, want %v", o.JobEnqueuedAt, reached)
			}
			if l := store.JobLease(t, orders, id); l != "" {
				t.Fatalf("the claim's job lease %q is still held", l)
			}
			// The second job (resumed) finds the generation under way.
			if _, _, err := orders.StartGeneration(ctx, id, time.Minute); err == nil {
				t.Fatal("a second generation started")
			}
			// The lease given up, the next attempt keeps the first time.
			clk.Add(2 * time.Minute)
			if o, _, err = orders.StartGeneration(ctx, id, time.Minute); err != nil || !o.JobEnqueuedAt.Equal(reached) {
				t.Fatalf("the next attempt: %v %v, want the job known at %v", o.JobEnqueuedAt, err, reached)
			}
			after, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease)
			if err != nil || after.Outcome != oracle.Done {
				t.Fatalf("replay after the generator's claim: %v %v, want done", after.Outcome, err)
			}
		})
	}
}
