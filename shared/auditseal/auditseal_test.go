package auditseal_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/auditseal"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/oracle"
)

// Session ids longer than their names (oracle.ShortID), so a report that
// shows one whole is caught.
const (
	sessionA = "cs_test_a1B2c3D4e5F6g7H8i9J0k1L2"
	sessionB = "cs_live_Z9y8X7w6V5u4T3s2R1q0P9o8"
	sessionC = "cs_test_LateLateLate0001LateLate"
	sessionD = "cs_test_BackBackBack0002BackBack"
)

var sessions = []string{sessionA, sessionB, sessionC, sessionD}

// short is key as a report names it.
func short(key string) string {
	for _, s := range sessions {
		key = strings.ReplaceAll(key, s, oracle.ShortID(s))
	}
	return key
}

// The seals are locked differently from the bucket's default (COMPLIANCE,
// 400 days), so the tests see the seal's own retention.
var lock = auditseal.Lock{Mode: s3types.ObjectLockModeGovernance, Retention: 3650 * 24 * time.Hour}

type bucket struct {
	t    *testing.T
	c    *s3.Client
	name string
	w    *audit.Writer
}

// newBucket is the audit bucket as the template makes it: versioned, with
// Object Lock and a default retention.
func newBucket(t *testing.T) *bucket {
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	return &bucket{t: t, c: c, name: f.Ref("AuditBucket"), w: audit.NewWriter(c, f.Ref("AuditBucket"))}
}

// sealer's clock stands at now; its listings take two keys a page.
func (b *bucket) sealer(now time.Time) *auditseal.Sealer {
	s := auditseal.New(b.c, b.name, lock, func() time.Time { return now })
	auditseal.SetPageSize(s, 2)
	return s
}

// write appends, through the service's writer, the record of an event at
// ts of a session created on day (a health run's when session is empty),
// and returns its key.
func (b *bucket) write(day time.Time, session string, src audit.Source, name audit.RecordName, ts time.Time) string {
	b.t.Helper()
	r := audit.Record{Timestamp: ts, SessionCreated: day.Add(9 * time.Hour), SessionID: session, Source: src,
		Status: audit.StatusOK, Event: audit.EventVerdictServed}
	id := audit.RecordID(session, name, ts.Unix())
	if session == "" {
		r.SessionCreated, r.Event, id = ts, audit.EventHealthRun, "health-run-"+ts.Format("20060102T150405Z")
	}
	written, err := b.w.Write(context.Background(), r, id)
	if err != nil || !written {
		b.t.Fatalf("write %s: written %v, %v", id, written, err)
	}
	return audit.Key(r, id)
}

// seed writes five records of day, of four sources, and returns their keys.
func (b *bucket) seed(day time.Time) []string {
	b.t.Helper()
	return []string{
		b.write(day, sessionA, audit.SourceWebhook, audit.NamePaid, day.Add(9*time.Hour)),
		b.write(day, sessionA, audit.SourceGenerator, audit.NameGenerated, day.Add(9*time.Hour+time.Minute)),
		b.write(day, sessionB, audit.SourceResultPage, audit.NameServed, day.Add(10*time.Hour)),
		b.write(day, sessionB, audit.SourceEmailService, audit.NameMail, day.Add(10*time.Hour+5*time.Minute)),
		b.write(day, "", audit.SourceHealth, "", day.Add(11*time.Hour)),
	}
}

func (b *bucket) put(key, body string) {
	b.t.Helper()
	if _, err := b.c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(b.name), Key: aws.String(key),
		Body: strings.NewReader(body), ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256}); err != nil {
		b.t.Fatalf("put %s: %v", key, err)
	}
}

func (b *bucket) get(key, version string) []byte {
	b.t.Helper()
	in := &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)}
	if version != "" {
		in.VersionId = aws.String(version)
	}
	g, err := b.c.GetObject(context.Background(), in)
	if err != nil {
		b.t.Fatalf("get %s %s: %v", key, version, err)
	}
	defer g.Body.Close()
	body, err := io.ReadAll(g.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return body
}

func (b *bucket) delete(key string) {
	b.t.Helper()
	if _, err := b.c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)}); err != nil {
		b.t.Fatalf("delete %s: %v", key, err)
	}
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func seal(t *testing.T, s *auditseal.Sealer, day time.Time) auditseal.Seal {
	t.Helper()
	got, written, err := s.Seal(context.Background(), day)
	if err != nil || !written {
		t.Fatalf("seal %s: written %v, %v", day.Format(time.DateOnly), written, err)
	}
	return got
}

// want is what a verification should find.
type want struct {
	ok      bool
	present int
	added   []auditseal.Added
	changed []string // keys, as the report names them
	missing []string
}

// TestVerifyNamesWhatChanged: each way a sealed day can change after its
// seal, on a day of its own, is named by key and classified.
func TestVerifyNamesWhatChanged(t *testing.T) {
	b := newBucket(t)
	cases := []struct {
		name   string
		tamper func(day, sealedAt time.Time, keys []string) want
	}{
		{"untouched", func(time.Time, time.Time, []string) want {
			return want{ok: true, present: 5}
		}},
		{"a late event, written after the seal", func(day, sealedAt time.Time, _ []string) want {
			at := sealedAt.Add(26 * time.Hour)
			key := b.write(day, sessionC, audit.SourceResultPage, audit.NameServed, at)
			return want{ok: true, present: 6, added: []auditseal.Added{{Key: short(key), Timestamp: at, Arrival: auditseal.WrittenAfterSeal}}}
		}},
		{"a back-dated insertion", func(day, _ time.Time, _ []string) want {
			at := day.Add(13 * time.Hour)
			key := b.write(day, sessionD, audit.SourceWebhook, audit.NamePaid, at)
			return want{present: 6, added: []auditseal.Added{{Key: short(key), Timestamp: at, Arrival: auditseal.DatedBeforeSeal}}}
		}},
		{"an insertion without a timestamp", func(day, _ time.Time, _ []string) want {
			key := audit.Partition(day) + "source=webhook/" + sessionD + ".paid.json"
			b.put(key, `{"session_id":"`+sessionD+`"}`)
			return want{present: 6, added: []auditseal.Added{{Key: short(key), Arrival: auditseal.DatedBeforeSeal}}}
		}},
		{"a record overwritten", func(_, _ time.Time, keys []string) want {
			// A plain put, without If-None-Match, makes a new version.
			b.put(keys[0], strings.Replace(string(b.get(keys[0], "")), `"OK"`, `"ERROR"`, 1))
			return want{present: 5, changed: []string{short(keys[0])}}
		}},
		{"a record deleted", func(_, _ time.Time, keys []string) want {
			// A delete marker: Object Lock keeps the version beneath it.
			b.delete(keys[2])
			return want{present: 4, missing: []string{short(keys[2])}}
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b.t = t
			day := time.Date(2026, 10, 1+i, 0, 0, 0, 0, time.UTC)
			keys := b.seed(day)
			sealedAt := day.Add(24*time.Hour + 5*time.Minute)
			sealed := seal(t, b.sealer(sealedAt), day)
			w := c.tamper(day, sealedAt, keys)

			checkedAt := sealedAt.Add(72 * time.Hour)
			r, err := b.sealer(checkedAt).Verify(context.Background(), day)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK != w.ok || r.Day != day.Format(time.DateOnly) || !r.SealedAt.Equal(sealedAt) || !r.CheckedAt.Equal(checkedAt) ||
				r.Sealed != 5 || r.Present != w.present || r.DigestMismatch || r.SealOverwritten != 0 {
				t.Errorf("report %+v, want ok %v with 5 sealed and %d present", r, w.ok, w.present)
			}
			if !reflect.DeepEqual(r.Added, append([]auditseal.Added{}, w.added...)) {
				t.Errorf("added %+v, want %+v", r.Added, w.added)
			}
			var changed, missing []string
			sealedSum := map[string]string{}
			for _, e := range sealed.Records {
				sealedSum[short(e.Key)] = e.SHA256
			}
			for _, x := range r.Changed {
				changed = append(changed, x.Key)
				if x.SealedSHA256 != sealedSum[x.Key] || x.CurrentSHA256 == x.SealedSHA256 || x.CurrentVersion == x.SealedVersion {
					t.Errorf("changed %+v: want the sealed hash %s and another version", x, sealedSum[x.Key])
				}
				checkSealedVersion(t, b, keys, x.Key, x.SealedVersion, x.SealedSHA256)
			}
			for _, x := range r.Missing {
				missing = append(missing, x.Key)
				if x.SealedSHA256 != sealedSum[x.Key] {
					t.Errorf("missing %+v: want the sealed hash %s", x, sealedSum[x.Key])
				}
				checkSealedVersion(t, b, keys, x.Key, x.SealedVersion, x.SealedSHA256)
			}
			if !slices.Equal(changed, w.changed) || !slices.Equal(missing, w.missing) {
				t.Errorf("changed %v, missing %v; want %v, %v", changed, missing, w.changed, w.missing)
			}
			checkRenderings(t, r)
		})
	}
}

// checkSealedVersion: the version a report names as sealed is still in the
// bucket, as sealed.
func checkSealedVersion(t *testing.T, b *bucket, keys []string, name, version, want string) {
	t.Helper()
	for _, k := range keys {
		if short(k) == name {
			if got := sum(b.get(k, version)); got != want {
				t.Errorf("%s version %s holds %s, the seal says %s", name, version, got, want)
			}
			return
		}
	}
	t.Errorf("%s is none of the seeded records", name)
}

// checkRenderings: the text names every finding and the JSON round-trips,
// both without a whole session id.
func checkRenderings(t *testing.T, r auditseal.Report) {
	t.Helper()
	text := r.String()
	head := "AUDIT SEAL " + r.Day + ": OK\n"
	if !r.OK {
		head = "AUDIT SEAL " + r.Day + ": NOT OK\n"
	}
	if !strings.HasPrefix(text, head) {
		t.Errorf("text begins %q, want %q", strings.SplitN(text, "\n", 2)[0], head)
	}
	var named []string
	for _, x := range r.Added {
		named = append(named, x.Key)
		if x.Arrival == auditseal.DatedBeforeSeal && !strings.Contains(text, "back-dated") ||
			x.Arrival == auditseal.WrittenAfterSeal && !strings.Contains(text, "expected late events") {
			t.Errorf("text does not classify %s as %s:\n%s", x.Key, x.Arrival, text)
		}
	}
	for _, x := range r.Changed {
		named = append(named, x.Key)
	}
	for _, x := range r.Missing {
		named = append(named, x.Key)
	}
	for _, k := range named {
		if !strings.Contains(text, k) {
			t.Errorf("text does not name %s:\n%s", k, text)
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back auditseal.Report
	if err := json.Unmarshal(js, &back); err != nil || !reflect.DeepEqual(back, r) {
		t.Errorf("JSON %s does not round-trip: %v", js, err)
	}
	for _, s := range sessions {
		if strings.Contains(text, s) || bytes.Contains(js, []byte(s)) {
			t.Errorf("the report shows the whole session id %s", s)
		}
	}
}

// TestSealRefuses: a day not over yet, or a seal without a lock, is not
// sealed; the day's midnight after is.
func TestSealRefuses(t *testing.T) {
	b := newBucket(t)
	day := time.Date(2026, 10, 12, 0, 0, 0, 0, time.UTC)
	b.seed(day)
	// 2026-10-13 00:30 in Tokyo is still the 12th in UTC.
	tokyo := day.Add(15*time.Hour + 30*time.Minute).In(time.FixedZone("JST", 9*3600))
	cases := []struct {
		name    string
		day     time.Time
		now     time.Time
		lock    auditseal.Lock
		problem string
	}{
		{"during the day", day, day.Add(12 * time.Hour), lock, "day 2026-10-12 is not over until 2026-10-13T00:00:00Z"},
		{"at its last instant", day, day.Add(24*time.Hour - time.Nanosecond), lock, "day 2026-10-12 is not over"},
		{"named by a time in another zone", tokyo, tokyo.Add(time.Hour), lock, "day 2026-10-12 is not over"},
		{"without a lock", day, day.Add(48 * time.Hour), auditseal.Lock{}, "seal lock"},
		{"with a lock of no time", day, day.Add(48 * time.Hour), auditseal.Lock{Mode: s3types.ObjectLockModeCompliance}, "seal lock"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := auditseal.New(b.c, b.name, c.lock, func() time.Time { return c.now })
			_, written, err := s.Seal(context.Background(), c.day)
			if err == nil || written || !strings.Contains(err.Error(), c.problem) {
				t.Fatalf("written %v, %v; want refused: %s", written, err, c.problem)
			}
			if _, err := s.Verify(context.Background(), day); !errors.Is(err, auditseal.ErrNoSeal) {
				t.Fatalf("after a refusal, verify says %v; want no seal", err)
			}
		})
	}
	got := seal(t, b.sealer(day.Add(24*time.Hour)), day)
	if got.Count != 5 || got.Day != "2026-10-12" {
		t.Fatalf("sealed %s", got)
	}
}

// TestSealOnce: the seal holds the day's records and their digest, locked
// as configured; a second seal, even after a late record or over a delete
// marker, writes nothing and returns the first; a seal written over is
// reported.
func TestSealOnce(t *testing.T) {
	ctx := context.Background()
	b := newBucket(t)
	day := time.Date(2026, 10, 14, 0, 0, 0, 0, time.UTC)
	keys := b.seed(day)
	b.write(day.AddDate(0, 0, 1), sessionC, audit.SourceWebhook, audit.NamePaid, day.Add(30*time.Hour)) // the next day's
	sealedAt := day.Add(25 * time.Hour)
	first := seal(t, b.sealer(sealedAt), day)

	// The digest, framed as Scheme says, over the records as stored.
	slices.Sort(keys)
	h := sha256.New()
	var entries []auditseal.Entry
	for _, k := range keys {
		body := b.get(k, "")
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(k))))
		h.Write([]byte(k))
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(body))))
		h.Write(body)
		entries = append(entries, auditseal.Entry{Key: k, SHA256: sum(body)})
	}
	for i := range first.Records {
		first.Records[i].VersionID = "" // checked below, by the versions they hold
	}
	want := auditseal.Seal{Scheme: auditseal.Scheme, Day: "2026-10-14", Prefix: "records/date=2026-10-14/", SealedAt: sealedAt,
		Count: 5, Digest: hex.EncodeToString(h.Sum(nil)), Records: entries}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("seal\n%+v\nwant\n%+v", first, want)
	}
	if line := "audit day 2026-10-14 sealed at 2026-10-15T01:00:00Z: 5 records, sha256 " + want.Digest; first.String() != line {
		t.Errorf("String() = %q, want %q", first.String(), line)
	}
	var stored auditseal.Seal
	if err := json.Unmarshal(b.get(auditseal.Key(day), ""), &stored); err != nil {
		t.Fatal(err)
	}
	for i, e := range stored.Records {
		if sum(b.get(e.Key, e.VersionID)) != entries[i].SHA256 {
			t.Errorf("the seal's version %s of %s does not hold what was sealed", e.VersionID, short(e.Key))
		}
	}

	head, err := b.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.name), Key: aws.String(auditseal.Key(day))})
	if err != nil {
		t.Fatal(err)
	}
	if head.ObjectLockMode != lock.Mode || !aws.ToTime(head.ObjectLockRetainUntilDate).Equal(sealedAt.Add(lock.Retention)) {
		t.Errorf("the seal is locked %s until %v, want %s until %v", head.ObjectLockMode, aws.ToTime(head.ObjectLockRetainUntilDate),
			lock.Mode, sealedAt.Add(lock.Retention))
	}
	if _, err := b.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.name), Key: aws.String(auditseal.Key(day)),
		VersionId: head.VersionId}); err == nil {
		t.Error("the seal's version was deleted")
	}

	late := sealedAt
	again := func(when string) {
		t.Helper()
		late = late.Add(time.Hour)
		b.write(day, sessionC, audit.SourceResultPage, audit.NameServed, late)
		got, written, err := b.sealer(sealedAt.Add(24*time.Hour)).Seal(ctx, day)
		if err != nil || written || !got.SealedAt.Equal(sealedAt) || got.Count != 5 || got.Digest != want.Digest {
			t.Fatalf("%s: sealing again wrote %v (%v): %s; want the first seal", when, written, err, got)
		}
	}
	again("sealed")
	versions := func() int {
		l, err := b.c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b.name), Prefix: aws.String("seals/")})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Versions) + len(l.DeleteMarkers)
	}
	if n := versions(); n != 1 {
		t.Fatalf("%d versions of seals, want 1", n)
	}

	// A forged seal put over the first, then a delete marker over both.
	forged := first
	forged.SealedAt, forged.Count, forged.Records = sealedAt.Add(time.Hour), 0, nil
	js, _ := json.Marshal(forged)
	b.put(auditseal.Key(day), string(js))
	b.delete(auditseal.Key(day))
	again("the seal hidden by a delete marker")
	if n := versions(); n != 3 {
		t.Fatalf("%d versions and markers of seals, want 3 (the seal, the forgery, the marker)", n)
	}
	r, err := b.sealer(sealedAt.Add(48*time.Hour)).Verify(ctx, day)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || r.SealOverwritten != 2 || !r.SealedAt.Equal(sealedAt) || r.Sealed != 5 || !strings.Contains(r.String(), "written over 2 times") {
		t.Fatalf("report %+v\n%s\nwant not OK, the first seal checked, written over twice", r, r)
	}
}

// TestVerifyWithoutSeal: a day never sealed is an error that says so.
func TestVerifyWithoutSeal(t *testing.T) {
	b := newBucket(t)
	day := time.Date(2026, 10, 16, 0, 0, 0, 0, time.UTC)
	b.seed(day)
	_, err := b.sealer(day.AddDate(0, 0, 3)).Verify(context.Background(), day)
	if !errors.Is(err, auditseal.ErrNoSeal) || err.Error() != "day 2026-10-16 has no seal" {
		t.Fatalf("verify: %v, want day 2026-10-16 has no seal", err)
	}
}

// TestForgedSeals: a seal whose digest disagrees with the records its
// manifest lists is reported; one that contradicts itself is refused.
func TestForgedSeals(t *testing.T) {
	b := newBucket(t)
	cases := []struct {
		name    string
		forge   func(*auditseal.Seal)
		problem string // empty: a report, with the digest mismatched
	}{
		{"its digest", func(s *auditseal.Seal) { s.Digest = auditseal.Digest(nil) }, ""},
		{"its count", func(s *auditseal.Seal) { s.Count++ }, "count 6 but 5 records listed"},
		{"its scheme", func(s *auditseal.Seal) { s.Scheme = "md5" }, `unknown scheme "md5"`},
		{"its order", func(s *auditseal.Seal) { s.Records[0], s.Records[1] = s.Records[1], s.Records[0] }, "out of order"},
		{"its day", func(s *auditseal.Seal) { s.Day = "2026-10-01" }, "it seals 2026-10-01"},
		{"a record of another day", func(s *auditseal.Seal) { s.Records[4].Key = "records/date=2026-10-01/x.json" },
			"record 4 (records/date=2026-10-01/x.json) is outside the partition"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b.t = t
			day := time.Date(2026, 10, 20+i, 0, 0, 0, 0, time.UTC)
			keys := b.seed(day)
			slices.Sort(keys)
			s := auditseal.Seal{Scheme: auditseal.Scheme, Day: day.Format(time.DateOnly), Prefix: audit.Partition(day),
				SealedAt: day.Add(25 * time.Hour), Count: len(keys)}
			contents := map[string]string{}
			for _, k := range keys {
				body := b.get(k, "")
				contents[k] = string(body)
				s.Records = append(s.Records, auditseal.Entry{Key: k, SHA256: sum(body)})
			}
			s.Digest = auditseal.Digest(contents)
			c.forge(&s)
			js, _ := json.Marshal(s)
			b.put(auditseal.Key(day), string(js))

			r, err := b.sealer(day.AddDate(0, 0, 3)).Verify(context.Background(), day)
			if c.problem != "" {
				if err == nil || !strings.Contains(err.Error(), "is malformed: ") || !strings.Contains(err.Error(), c.problem) {
					t.Fatalf("verify: %v, want malformed: %s", err, c.problem)
				}
				return
			}
			if err != nil || r.OK || !r.DigestMismatch || len(r.Added)+len(r.Changed)+len(r.Missing) != 0 ||
				!strings.Contains(r.String(), "not its digest") {
				t.Fatalf("report %+v (%v), want only the digest mismatched", r, err)
			}
		})
	}
}

// TestDigestFraming: the digest frames each key and content by its
// length, so no byte moves between them, or between records, unnoticed.
func TestDigestFraming(t *testing.T) {
	frame := func(parts ...string) string {
		var b []byte
		for _, p := range parts {
			b = binary.BigEndian.AppendUint64(b, uint64(len(p)))
			b = append(b, p...)
		}
		return sum(b)
	}
	if got, want := auditseal.Digest(map[string]string{"b": "2", "a": "1"}), frame("a", "1", "b", "2"); got != want {
		t.Fatalf("digest %s, want %s: key, content, in key order, each after its length", got, want)
	}
	pairs := []struct {
		name string
		x, y map[string]string
	}{
		{"a byte from key to content", map[string]string{"ab": "c"}, map[string]string{"a": "bc"}},
		{"a byte between records", map[string]string{"a": "xy", "b": "z"}, map[string]string{"a": "x", "b": "yz"}},
		{"a content emptied", map[string]string{"a": ""}, map[string]string{}},
		{"contents swapped", map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "2", "b": "1"}},
	}
	for _, p := range pairs {
		if auditseal.Digest(p.x) == auditseal.Digest(p.y) {
			t.Errorf("%s: %v and %v have one digest", p.name, p.x, p.y)
		}
	}
}

func TestLockFrom(t *testing.T) {
	cases := []struct {
		mode, days string
		want       auditseal.Lock
		problem    string
	}{
		{"", "", auditseal.Lock{Mode: s3types.ObjectLockModeCompliance, Retention: 400 * 24 * time.Hour, HealthHistory: audit.DefaultHealthHistory}, ""},
		{"GOVERNANCE", "30", auditseal.Lock{Mode: s3types.ObjectLockModeGovernance, Retention: 30 * 24 * time.Hour, HealthHistory: audit.DefaultHealthHistory}, ""},
		{"LOOSE", "30", auditseal.Lock{}, "AUDIT_LOCK_MODE: must be GOVERNANCE or COMPLIANCE"},
		{"COMPLIANCE", "0", auditseal.Lock{}, "AUDIT_RETENTION_DAYS must be an integer between 1 and 36500"},
	}
	for _, c := range cases {
		env := config.New(func(k string) (string, bool) {
			return map[string]string{"AUDIT_LOCK_MODE": c.mode, "AUDIT_RETENTION_DAYS": c.days}[k], true
		}, nil)
		got := auditseal.LockFrom(env)
		err := env.Err()
		if c.problem == "" {
			if err != nil || got != c.want {
				t.Errorf("%q %q: %+v, %v; want %+v", c.mode, c.days, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.problem) {
			t.Errorf("%q %q: %v, want the problem %q", c.mode, c.days, err, c.problem)
		}
	}
}

// meddler is a Sealer's S3 client, moto underneath, that lets a test act
// just before the seal is put, or fails the reads of one key.
type meddler struct {
	*s3.Client
	beforePut func()
	failGet   string
}

func (m *meddler) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if m.beforePut != nil {
		m.beforePut()
	}
	return m.Client.PutObject(ctx, in, opts...)
}

func (m *meddler) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if aws.ToString(in.Key) == m.failGet {
		return nil, errors.New("connection reset")
	}
	return m.Client.GetObject(ctx, in, opts...)
}

// TestSealLosesARace: a run that finds the day sealed while it read the
// records (its put refused by If-None-Match) writes nothing and returns the
// seal that won.
func TestSealLosesARace(t *testing.T) {
	ctx := context.Background()
	b := newBucket(t)
	day := time.Date(2026, 10, 17, 0, 0, 0, 0, time.UTC)
	b.seed(day)
	winnerAt := day.Add(25 * time.Hour)
	m := &meddler{Client: b.c, beforePut: func() { seal(t, b.sealer(winnerAt), day) }}
	got, written, err := auditseal.New(m, b.name, lock, func() time.Time { return winnerAt.Add(time.Minute) }).Seal(ctx, day)
	if err != nil || written || !got.SealedAt.Equal(winnerAt) || got.Count != 5 {
		t.Fatalf("the loser wrote %v (%v): %s; want the winner's seal", written, err, got)
	}
	l, err := b.c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b.name), Prefix: aws.String("seals/")})
	if err != nil || len(l.Versions) != 1 {
		t.Fatalf("%d versions of seals (%v), want 1", len(l.Versions), err)
	}
}

// TestSealStopsOnAnUnreadableRecord: a record that cannot be read fails
// the seal, naming it by its session's name (oracle.ShortID), and nothing
// is sealed.
func TestSealStopsOnAnUnreadableRecord(t *testing.T) {
	ctx := context.Background()
	b := newBucket(t)
	day := time.Date(2026, 10, 18, 0, 0, 0, 0, time.UTC)
	keys := b.seed(day)
	m := &meddler{Client: b.c, failGet: keys[3]}
	_, written, err := auditseal.New(m, b.name, lock, func() time.Time { return day.AddDate(0, 0, 2) }).Seal(ctx, day)
	if err == nil || written || !strings.Contains(err.Error(), short(keys[3])) || strings.Contains(err.Error(), sessionB) {
		t.Fatalf("written %v, %v; want an error naming %s", written, err, short(keys[3]))
	}
	if _, err := b.sealer(day.AddDate(0, 0, 2)).Verify(ctx, day); !errors.Is(err, auditseal.ErrNoSeal) {
		t.Fatalf("verify: %v, want no seal", err)
	}
}

// TestExpiredHealthHistoryIsNotMissing: a health run's record is kept for
// HealthHistoryDays, then the bucket's lifecycle rule removes it; a day
// verified after that is still OK, each other record checked against its
// own hash, while the same record gone before its history ended, or any
// other record gone, is missing.
func TestExpiredHealthHistoryIsNotMissing(t *testing.T) {
	b := newBucket(t)
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	keys := b.seed(day)
	l := lock
	l.HealthHistory = 90 * 24 * time.Hour
	at := func(now time.Time) *auditseal.Sealer {
		return auditseal.New(b.c, b.name, l, func() time.Time { return now })
	}
	seal(t, at(day.Add(25*time.Hour)), day)
	b.delete(keys[4]) // the lifecycle rule's delete marker over the health run's record
	ended := day.Add(24*time.Hour + l.HealthHistory)
	for _, c := range []struct {
		name             string
		now              time.Time
		ok               bool
		expired, missing int
	}{
		{"gone before its history ended", ended.Add(-time.Second), false, 0, 1},
		{"gone once its history ended", ended, true, 1, 0},
	} {
		r, err := at(c.now).Verify(context.Background(), day)
		if err != nil || r.OK != c.ok || r.Expired != c.expired || len(r.Missing) != c.missing || r.DigestMismatch {
			t.Errorf("%s: %+v, %v; want ok %v, %d expired, %d missing", c.name, r, err, c.ok, c.expired, c.missing)
		}
	}
	b.delete(keys[0])
	r, err := at(ended).Verify(context.Background(), day)
	if err != nil || r.OK || r.Expired != 1 || len(r.Missing) != 1 || r.Missing[0].Key != short(keys[0]) {
		t.Errorf("a payment's record gone: %+v, %v; want it missing", r, err)
	}
	if !strings.Contains(r.String(), "1 health run records expired") {
		t.Errorf("the report does not say what expired:\n%s", r)
	}
}
