package auditseal_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/auditseal"
)

// TestAStepAddedAfterTheSealIsDatedByItsLastLine: a step's object that
// arrives after its day was sealed (a generation redelivered days later)
// is dated by its latest record, the one written last, so it reads as
// written after the seal; the same object whose records all predate the
// seal is a back-dated insertion. Every line counts, not the first alone.
func TestAStepAddedAfterTheSealIsDatedByItsLastLine(t *testing.T) {
	b := newBucket(t)
	cases := []struct {
		name    string
		last    time.Duration // the outcome's time, after the seal
		arrival auditseal.Arrival
		ok      bool
	}{
		{"its outcome after the seal", 26 * time.Hour, auditseal.WrittenAfterSeal, true},
		{"every line before the seal", -time.Hour, auditseal.DatedBeforeSeal, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b.t = t
			day := time.Date(2026, 9, 1+i, 0, 0, 0, 0, time.UTC)
			b.seed(day)
			sealedAt := day.Add(24*time.Hour + 5*time.Minute)
			seal(t, b.sealer(sealedAt), day)

			rec := func(event audit.Event, at time.Time) audit.Record {
				return audit.Record{Timestamp: at, SessionCreated: day.Add(9 * time.Hour), SessionID: sessionC,
					Source: audit.SourceGenerator, Status: audit.StatusOK, Event: event}
			}
			last := sealedAt.Add(c.last)
			lines := []audit.Line{
				{Record: rec(audit.EventCrosscheck, day.Add(10*time.Hour)), ID: audit.RecordID(sessionC, audit.NameCrosscheck, 1, 1)},
				{Record: rec(audit.EventVerdictGenerated, last), ID: audit.RecordID(sessionC, audit.NameGenerated)},
			}
			if ok, err := b.w.WriteStep(context.Background(), lines); err != nil || !ok {
				t.Fatalf("written %v, %v", ok, err)
			}
			r, err := b.sealer(sealedAt.Add(72*time.Hour)).Verify(context.Background(), day)
			if err != nil {
				t.Fatal(err)
			}
			key := audit.Key(lines[1].Record, lines[1].ID)
			want := []auditseal.Added{{Key: short(key), Timestamp: last, Arrival: c.arrival}}
			if !reflect.DeepEqual(r.Added, want) || r.OK != c.ok {
				t.Errorf("added %+v (ok %v), want %+v (ok %v)", r.Added, r.OK, want, c.ok)
			}
		})
	}
}
