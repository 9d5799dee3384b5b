// Package auditseal seals each day of the audit log once the day is over,
// and verifies a day against its seal. A seal is one object, locked like the
// records, that holds the day's record count, a digest of every record's key
// and content, and each record's content hash: a record changed, deleted or
// slipped in afterwards is then named, not merely detected. A record here
// is an object of the log, which holds one step's records, a line each
// (audit.Writer.WriteStep): the seal covers every line of it.
package auditseal

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/putonce"
)

// Scheme names how a seal's digest is computed: SHA-256 over every record
// of the day in ascending byte order of its key, each framed as the key's
// length (a big-endian uint64), the key, the content's length (likewise)
// and the content. The lengths fix where a key ends and its content begins,
// so no byte can move from one to the other unnoticed.
const Scheme = "sha256-u64be-length-prefixed-key-content-v1"

// Objects is the S3 calls a Sealer needs.
type Objects interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, opts ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
}

// Lock is the Object Lock each seal is written with.
type Lock struct {
	Mode      s3types.ObjectLockMode // GOVERNANCE or COMPLIANCE
	Retention time.Duration          // whole days, at least one
	// HealthHistory is how long a health run's record is kept
	// (HealthHistoryDays); a sealed one gone after it expired as meant.
	HealthHistory time.Duration
}

// LockFrom reads AUDIT_LOCK_MODE and AUDIT_RETENTION_DAYS, the audit
// bucket's own AuditLockMode and AuditRetentionDays (their defaults are the
// template's), recording a bad value as env's problem.
func LockFrom(env *config.Env) Lock {
	l := Lock{
		Mode:          s3types.ObjectLockMode(env.Optional("AUDIT_LOCK_MODE", string(s3types.ObjectLockModeCompliance))),
		Retention:     env.Days("AUDIT_RETENTION_DAYS", 400, 1, 36500),
		HealthHistory: env.Days("HEALTH_HISTORY_DAYS", int(audit.DefaultHealthHistory/(24*time.Hour)), 1, 36500),
	}
	if !slices.Contains(l.Mode.Values(), l.Mode) {
		env.Invalid("AUDIT_LOCK_MODE", fmt.Errorf("must be GOVERNANCE or COMPLIANCE, got %q", l.Mode))
	}
	return l
}

func (l Lock) check() error {
	if !slices.Contains(l.Mode.Values(), l.Mode) || l.Retention < 24*time.Hour {
		return fmt.Errorf("seal lock %s for %s: want GOVERNANCE or COMPLIANCE for at least a day", l.Mode, l.Retention)
	}
	return nil
}

// Seal is what the sealed object holds. Its manifest names sessions in
// full: show an operator its String, not the manifest.
type Seal struct {
	Scheme   string    `json:"scheme"`
	Day      string    `json:"day"`    // 2006-01-02, UTC
	Prefix   string    `json:"prefix"` // the partition sealed, every source
	SealedAt time.Time `json:"sealed_at"`
	Count    int       `json:"count"`
	Digest   string    `json:"digest"` // hex, as Scheme says
	// Records is the manifest, in the digest's order.
	Records []Entry `json:"records"`
}

// Entry is one record as it was sealed.
type Entry struct {
	Key    string `json:"key"`
	SHA256 string `json:"sha256"` // hex, of the content
	// VersionID is the version sealed: should the record be overwritten or
	// hidden by a delete marker, this version is still in the bucket.
	VersionID string `json:"version_id,omitempty"`
}

// String is the seal in one line, without the manifest.
func (s Seal) String() string {
	return fmt.Sprintf("audit day %s sealed at %s: %d records, sha256 %s", s.Day, s.SealedAt.UTC().Format(time.RFC3339), s.Count, s.Digest)
}

// check is what Verify requires of a seal before trusting its manifest.
func (s Seal) check(day time.Time) error {
	switch {
	case s.Scheme != Scheme:
		return fmt.Errorf("unknown scheme %q", s.Scheme)
	case s.Day != day.Format(time.DateOnly) || s.Prefix != audit.Partition(day):
		return fmt.Errorf("it seals %s (%s)", s.Day, s.Prefix)
	case s.SealedAt.IsZero():
		return errors.New("no time of sealing")
	case s.Count != len(s.Records):
		return fmt.Errorf("count %d but %d records listed", s.Count, len(s.Records))
	}
	for i, e := range s.Records {
		switch {
		case !strings.HasPrefix(e.Key, s.Prefix):
			return fmt.Errorf("record %d (%s) is outside the partition", i, shorten(e.Key))
		case i > 0 && e.Key <= s.Records[i-1].Key:
			return fmt.Errorf("record %d (%s) is out of order", i, shorten(e.Key))
		}
	}
	return nil
}

// Key is where the seal of day lives: outside records/, so that queries
// over the records never read it.
func Key(day time.Time) string {
	return "seals/date=" + dayOf(day).Format(time.DateOnly) + ".json"
}

// dayOf is the UTC day that t falls on, at its midnight.
func dayOf(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Sealer seals and verifies the days of one audit bucket.
type Sealer struct {
	s3     Objects
	bucket string
	lock   Lock
	now    func() time.Time
	// pageSize caps each listing's page (S3's own cap when nil).
	pageSize *int32
}

// New seals days of bucket through c with lock; now is the clock (time.Now
// when nil).
func New(c Objects, bucket string, lock Lock, now func() time.Time) *Sealer {
	if now == nil {
		now = time.Now
	}
	return &Sealer{s3: c, bucket: bucket, lock: lock, now: now}
}

// Seal writes the seal of day (its UTC date) once the day is over: every
// record of the day's partition, of every source, as read at the time of
// sealing. The seal is written only if the day has none (If-None-Match: *,
// and no earlier version under a delete marker), with its own Object Lock,
// so it can be neither changed nor deleted; a version put over it later is
// Verify's to report. written reports whether this call wrote it; a day
// already sealed is not an error, and its seal, the one that stands, is
// returned.
func (s *Sealer) Seal(ctx context.Context, day time.Time) (seal Seal, written bool, err error) {
	day = dayOf(day)
	name := day.Format(time.DateOnly)
	if err := s.lock.check(); err != nil {
		return Seal{}, false, err
	}
	// The time of sealing is taken before the listing, so that every
	// record written after it can tell by its timestamp that it came late.
	now := s.now().UTC()
	if end := day.AddDate(0, 0, 1); now.Before(end) {
		return Seal{}, false, fmt.Errorf("day %s is not over until %s", name, end.Format(time.RFC3339))
	}
	if existing, _, found, err := s.read(ctx, day); err != nil || found {
		return existing, false, err
	}
	objs, err := s.partition(ctx, day)
	if err != nil {
		return Seal{}, false, err
	}
	seal = Seal{Scheme: Scheme, Day: name, Prefix: audit.Partition(day), SealedAt: now, Count: len(objs), Digest: digest(objs),
		Records: make([]Entry, len(objs))}
	for i, o := range objs {
		seal.Records[i] = Entry{Key: o.key, SHA256: o.sum, VersionID: o.version}
	}
	b, err := json.Marshal(seal)
	if err != nil {
		return Seal{}, false, fmt.Errorf("encode the seal of %s: %w", name, err)
	}
	written, err = putonce.Put(ctx, s.s3, Key(day), b, &s3.PutObjectInput{
		Bucket:                    aws.String(s.bucket),
		ContentType:               aws.String("application/json"),
		ObjectLockMode:            s.lock.Mode,
		ObjectLockRetainUntilDate: aws.Time(now.Add(s.lock.Retention)),
	})
	switch {
	case err != nil:
		return Seal{}, false, fmt.Errorf("write the seal of %s: %w", name, err)
	case written:
		return seal, true, nil
	}
	// Another run sealed the day while this one read it.
	existing, _, found, err := s.read(ctx, day)
	if err == nil && !found {
		err = fmt.Errorf("the seal of %s was refused as present but is not there", name)
	}
	return existing, false, err
}

// read returns the first seal written for day, and how many versions and
// delete markers were put over it since; found is false when none was ever
// written. Object Lock keeps the first version whatever came after it, and
// Seal never writes over a seal, so the first is the one that stands.
func (s *Sealer) read(ctx context.Context, day time.Time) (seal Seal, later int, found bool, err error) {
	name, key := day.Format(time.DateOnly), Key(day)
	var first *s3types.ObjectVersion
	p := s3.NewListObjectVersionsPaginator(s.s3, &s3.ListObjectVersionsInput{Bucket: aws.String(s.bucket), Prefix: aws.String(key)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return Seal{}, 0, false, fmt.Errorf("list the seal of %s: %w", name, err)
		}
		for _, m := range page.DeleteMarkers {
			if aws.ToString(m.Key) == key {
				later++
			}
		}
		for _, v := range page.Versions {
			if aws.ToString(v.Key) != key {
				continue
			}
			// S3 lists a key's versions newest first: on a tie the later
			// listed is the older.
			if first != nil {
				later++
			}
			if first == nil || !aws.ToTime(v.LastModified).After(aws.ToTime(first.LastModified)) {
				first = &v
			}
		}
	}
	if first == nil {
		return Seal{}, 0, false, nil
	}
	g, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), VersionId: first.VersionId})
	if err != nil {
		return Seal{}, 0, false, fmt.Errorf("read the seal of %s: %w", name, err)
	}
	defer g.Body.Close()
	b, err := io.ReadAll(g.Body)
	if err != nil {
		return Seal{}, 0, false, fmt.Errorf("read the seal of %s: %w", name, err)
	}
	if err := json.Unmarshal(b, &seal); err != nil {
		return Seal{}, 0, false, fmt.Errorf("the seal of %s: %w", name, err)
	}
	return seal, later, true, nil
}

// digest is the seal's digest of objs, which are in ascending key order
// (Scheme).
func digest(objs []object) string {
	h := sha256.New()
	var n [8]byte
	for _, o := range objs {
		binary.BigEndian.PutUint64(n[:], uint64(len(o.key)))
		h.Write(n[:])
		h.Write([]byte(o.key))
		binary.BigEndian.PutUint64(n[:], uint64(len(o.body)))
		h.Write(n[:])
		h.Write(o.body)
	}
	return hex.EncodeToString(h.Sum(nil))
}
