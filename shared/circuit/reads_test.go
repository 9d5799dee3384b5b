package circuit_test

import (
	"slices"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/circuit"
)

// The circuit is read once per call let through and written only when a
// count or the state changes: the requests each call and report makes,
// counted against moto.
func TestOneReadPerCallAndWritesOnlyOnChange(t *testing.T) {
	f := provision.ForTest(t, nil)
	cfg := f.AWS
	calls := testkit.NoteAWSCalls(&cfg)
	db := awsenv.NewTables(cfg)
	clk := testkit.NewClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	const (
		get    = "GetItem"
		update = "UpdateItem"
	)
	cases := []struct {
		name    string
		before  string // outcomes reported first (see report), not counted
		outcome rune
		want    []string // the requests of Allow and the outcome's report
		fails   int      // the counts afterwards
		slow    int
	}{
		{"a fast success on a quiet circuit reads once and writes nothing", "", 'f', []string{get}, 0, 0},
		{"a fast success ends a failure streak with one write", "FF", 'f', []string{get, update}, 0, 0},
		{"a fast success ends a slow streak with one write", "ss", 'f', []string{get, update}, 0, 0},
		{"a slow success counts itself", "", 's', []string{get, update}, 0, 1},
		{"a failure counts itself", "F", 'F', []string{get, update}, 2, 0},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := circuit.New(db, f.Ref("LedgerTable"), "reads"+string(rune('a'+i)), circuit.Options{}, clk.Now)
			for _, o := range c.before {
				if _, err := report(b, allow(t, b), o); err != nil {
					t.Fatal(err)
				}
			}
			calls.Reset()
			if _, err := report(b, allow(t, b), c.outcome); err != nil {
				t.Fatal(err)
			}
			if got := calls.Ops(); !slices.Equal(got, c.want) {
				t.Errorf("requests %q, want %q", got, c.want)
			}
			if s := state(t, b); s.Failures != c.fails || s.Slow != c.slow {
				t.Errorf("state %+v, want %d failures and %d slow", s, c.fails, c.slow)
			}
		})
	}
}

// Read and Admit decide as Allow does, from one read: a closed circuit's
// permit and an open one's rejection cost no request past the read; a
// half-open circuit's probe is taken once across callers.
func TestReadThenAdmit(t *testing.T) {
	bs, clk := containers(t, 2, circuit.Options{})
	r, err := bs[0].Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := bs[0].Admit(ctx, r); err != nil || p.Probe() {
		t.Fatalf("a closed circuit's admission: %+v %v", p, err)
	}
	trip(t, bs[1], 5)
	if _, err := bs[0].Admit(ctx, r); err != nil {
		t.Fatalf("a reading from before the trip still admits (its permit counts for nothing): %v", err)
	}
	if r, err = bs[0].Read(ctx); err != nil {
		t.Fatal(err)
	}
	openError(t, func() error { _, err := bs[0].Admit(ctx, r); return err }())
	clk.Add(time.Minute)
	r0, err := bs[0].Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := bs[1].Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := bs[0].Admit(ctx, r0)
	if err != nil || !probe.Probe() {
		t.Fatalf("the half-open circuit's first admission: %+v %v", probe, err)
	}
	openError(t, func() error { _, err := bs[1].Admit(ctx, r1); return err }())
	if tr, err := bs[0].Succeeded(ctx, probe, fast); err != nil || tr.To != circuit.Closed {
		t.Fatalf("the probe's success: %v %v", tr, err)
	}
}

// A success ends the streak counted before its call was let through;
// failures recorded while it ran stand.
func TestSuccessEndsTheStreakItWasLetThrough(t *testing.T) {
	bs, _ := containers(t, 2, circuit.Options{})
	quiet := allow(t, bs[0])
	if _, err := bs[1].Failed(ctx, allow(t, bs[1])); err != nil {
		t.Fatal(err)
	}
	if _, err := bs[0].Succeeded(ctx, quiet, fast); err != nil {
		t.Fatal(err)
	}
	if s := state(t, bs[0]); s.Failures != 1 {
		t.Fatalf("state %+v: the failure recorded during the call was ended by it", s)
	}
	if _, err := bs[0].Succeeded(ctx, allow(t, bs[0]), fast); err != nil {
		t.Fatal(err)
	}
	if s := state(t, bs[0]); s.Failures != 0 {
		t.Fatalf("state %+v: the next call's success did not end the streak", s)
	}
}
