package auditseal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/audit"
)

// ErrNoSeal is Verify's error for a day that was never sealed.
var ErrNoSeal = errors.New("has no seal")

// Arrival classifies a record added to a day after its seal, by the
// record's own timestamp.
type Arrival string

// Arrivals.
const (
	// WrittenAfterSeal: a late event of one of the day's sessions (a page
	// load days afterwards), as expected.
	WrittenAfterSeal Arrival = "written_after_seal"
	// DatedBeforeSeal: a record that says it happened before the seal yet
	// was not there when the day was sealed, or that has no readable
	// timestamp: a back-dated insertion, until shown otherwise.
	DatedBeforeSeal Arrival = "dated_before_seal"
)

// Report is a day's verification. Keys name sessions by their name
// (oracle.ShortID), here as in its text.
type Report struct {
	Day       string    `json:"day"`
	SealedAt  time.Time `json:"sealed_at"`
	CheckedAt time.Time `json:"checked_at"`
	Sealed    int       `json:"sealed"`  // records the seal lists
	Present   int       `json:"present"` // records in the partition now
	// OK: every sealed record is there as sealed, and nothing was added but
	// late events.
	OK      bool      `json:"ok"`
	Added   []Added   `json:"added"`
	Changed []Changed `json:"changed"`
	Missing []Missing `json:"missing"`
	// Expired counts the sealed health run records gone once their
	// history ended (HealthHistoryDays): the bucket's lifecycle removed
	// them, as meant. With any expired, the digest cannot be recomputed;
	// each remaining record is still checked against its own hash.
	Expired int `json:"expired"`
	// DigestMismatch: every record matches its manifest hash but the
	// records together do not match the seal's digest, so the seal is not
	// what Seal wrote.
	DigestMismatch bool `json:"digest_mismatch"`
	// SealOverwritten counts the versions and delete markers put over the
	// seal. Seal never writes one, so each is tampering; the report checks
	// the first seal, which Object Lock keeps.
	SealOverwritten int `json:"seal_overwritten"`
}

// Added is a record that is in the partition but not in the seal.
type Added struct {
	Key       string    `json:"key"`
	Timestamp time.Time `json:"timestamp,omitzero"` // the record's own; zero when unreadable
	Arrival   Arrival   `json:"arrival"`
}

// Changed is a sealed record whose content is no longer what was sealed.
type Changed struct {
	Key            string `json:"key"`
	SealedSHA256   string `json:"sealed_sha256"`
	CurrentSHA256  string `json:"current_sha256"`
	SealedVersion  string `json:"sealed_version,omitempty"`
	CurrentVersion string `json:"current_version,omitempty"`
}

// Missing is a sealed record that is no longer in the partition.
type Missing struct {
	Key           string `json:"key"`
	SealedSHA256  string `json:"sealed_sha256"`
	SealedVersion string `json:"sealed_version,omitempty"`
}

// Verify reads the seal of day (its UTC date) and the day's partition as it
// is now, and reports what differs. A day without a seal is ErrNoSeal.
func (s *Sealer) Verify(ctx context.Context, day time.Time) (Report, error) {
	day = dayOf(day)
	name := day.Format(time.DateOnly)
	seal, later, found, err := s.read(ctx, day)
	if err != nil {
		return Report{}, err
	}
	if !found {
		return Report{}, fmt.Errorf("day %s %w", name, ErrNoSeal)
	}
	if err := seal.check(day); err != nil {
		return Report{}, fmt.Errorf("the seal of %s is malformed: %w", name, err)
	}
	objs, err := s.partition(ctx, day)
	if err != nil {
		return Report{}, err
	}
	r := compare(seal, objs, s.now().UTC(), s.lock.HealthHistory)
	r.SealOverwritten = later
	r.OK = r.OK && later == 0
	return r, nil
}

// compare reports objs, the partition now, against seal.
// A sealed health run record absent once the day's records have outlived
// history is Expired, not Missing.
func compare(seal Seal, objs []object, now time.Time, history time.Duration) Report {
	r := Report{Day: seal.Day, SealedAt: seal.SealedAt, CheckedAt: now, Sealed: seal.Count, Present: len(objs),
		Added: []Added{}, Changed: []Changed{}, Missing: []Missing{}}
	sealed := make(map[string]Entry, len(seal.Records))
	for _, e := range seal.Records {
		sealed[e.Key] = e
	}
	present := make(map[string]bool, len(objs))
	var intact []object
	for _, o := range objs {
		present[o.key] = true
		e, ok := sealed[o.key]
		switch {
		case !ok:
			r.Added = append(r.Added, arrival(o, seal.SealedAt))
		case e.SHA256 != o.sum:
			r.Changed = append(r.Changed, Changed{Key: shorten(o.key), SealedSHA256: e.SHA256, CurrentSHA256: o.sum,
				SealedVersion: e.VersionID, CurrentVersion: o.version})
		default:
			intact = append(intact, o)
		}
	}
	day, _ := time.Parse(time.DateOnly, seal.Day)
	historyOver := history > 0 && !now.Before(day.Add(24*time.Hour+history))
	for _, e := range seal.Records {
		switch {
		case present[e.Key]:
		case historyOver && strings.Contains(e.Key, "/source="+string(audit.SourceHealth)+"/"):
			r.Expired++
		default:
			r.Missing = append(r.Missing, Missing{Key: shorten(e.Key), SealedSHA256: e.SHA256, SealedVersion: e.VersionID})
		}
	}
	// Only with every sealed record intact can the digest be recomputed.
	r.DigestMismatch = len(r.Changed) == 0 && len(r.Missing) == 0 && r.Expired == 0 && digest(intact) != seal.Digest
	r.OK = len(r.Changed) == 0 && len(r.Missing) == 0 && !r.DigestMismatch && len(r.added(DatedBeforeSeal)) == 0
	return r
}

// arrival dates an object added after the seal by its latest record: a
// step's object holds several, written together once the last was made.
func arrival(o object, sealedAt time.Time) Added {
	a := Added{Key: shorten(o.key), Arrival: DatedBeforeSeal}
	if recs, err := audit.Decode(o.key, o.body); err == nil {
		for _, r := range recs {
			if r.Timestamp.After(a.Timestamp) {
				a.Timestamp = r.Timestamp.UTC()
			}
		}
	}
	if a.Timestamp.After(sealedAt) {
		a.Arrival = WrittenAfterSeal
	}
	return a
}

func (r Report) added(a Arrival) []Added {
	var out []Added
	for _, x := range r.Added {
		if x.Arrival == a {
			out = append(out, x)
		}
	}
	return out
}

// String is the report as an operator reads it.
func (r Report) String() string {
	var b strings.Builder
	verdict := "OK"
	if !r.OK {
		verdict = "NOT OK"
	}
	fmt.Fprintf(&b, "AUDIT SEAL %s: %s\n", r.Day, verdict)
	fmt.Fprintf(&b, "Sealed %s with %d records; %d now (checked %s).\n", r.SealedAt.UTC().Format(time.RFC3339), r.Sealed, r.Present,
		r.CheckedAt.UTC().Format(time.RFC3339))
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s: %d\n", title, len(lines))
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	added := func(a Arrival) []string {
		var lines []string
		for _, x := range r.added(a) {
			ts := "no readable timestamp"
			if !x.Timestamp.IsZero() {
				ts = "timestamp " + x.Timestamp.Format(time.RFC3339)
			}
			lines = append(lines, x.Key+"  "+ts)
		}
		return lines
	}
	section("Added, dated before the seal (suspicious: a back-dated insertion)", added(DatedBeforeSeal))
	var lines []string
	for _, c := range r.Changed {
		lines = append(lines, c.Key+"  sealed version "+orNone(c.SealedVersion)+", now version "+orNone(c.CurrentVersion))
	}
	section("Changed (content differs from the seal)", lines)
	lines = nil
	for _, m := range r.Missing {
		lines = append(lines, m.Key+"  sealed version "+orNone(m.SealedVersion))
	}
	section("Missing (deleted, or hidden by a delete marker)", lines)
	if r.Expired > 0 {
		fmt.Fprintf(&b, "\n%d health run records expired at the end of their history, as meant; the others are checked one by one.\n", r.Expired)
	}
	if r.SealOverwritten > 0 {
		fmt.Fprintf(&b, "\nThe seal was written over %d times (new versions or delete markers); this report checks the first.\n", r.SealOverwritten)
	}
	if r.DigestMismatch {
		b.WriteString("\nThe records match the seal's manifest but not its digest: the seal is not as written.\n")
	}
	section("Added, written after the seal (expected late events)", added(WrittenAfterSeal))
	return b.String()
}

func orNone(v string) string {
	if v == "" {
		return "unknown"
	}
	return v
}
