package audit

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/putonce"
)

// Putter is the S3 call the writer needs.
type Putter = putonce.Putter

// Writer appends records to the audit bucket.
type Writer struct {
	s3     Putter
	bucket string
	// history, mode and now: KeepHealthHistory.
	history time.Duration
	mode    s3types.ObjectLockMode
	now     func() time.Time
}

// NewWriter writes to bucket.
func NewWriter(c Putter, bucket string) *Writer { return &Writer{s3: c, bucket: bucket} }

// HistoryTag is the tag of the records kept only for the health history:
// the audit bucket's ExpireHealthHistory lifecycle rule filters on it.
const HistoryTag = "history=health"

// DefaultHealthHistory is the template's HealthHistoryDays default.
const DefaultHealthHistory = 90 * 24 * time.Hour

// HealthHistoryFrom reads HEALTH_HISTORY_DAYS and AUDIT_LOCK_MODE (the
// template's HealthHistoryDays and AuditLockMode), recording a bad value as
// env's problem.
func HealthHistoryFrom(env *config.Env) (time.Duration, s3types.ObjectLockMode) {
	days := env.Days("HEALTH_HISTORY_DAYS", int(DefaultHealthHistory/(24*time.Hour)), 1, 36500)
	mode := s3types.ObjectLockMode(env.Optional("AUDIT_LOCK_MODE", string(s3types.ObjectLockModeCompliance)))
	if !slices.Contains(mode.Values(), mode) {
		env.Invalid("AUDIT_LOCK_MODE", fmt.Errorf("must be GOVERNANCE or COMPLIANCE, got %q", mode))
	}
	return days, mode
}

// KeepHealthHistory makes w write each health run's record (source health)
// locked in mode until history after its write, not the bucket's default
// retention, and tagged HistoryTag, so that the bucket's lifecycle rule
// expires it then: the health job writes one a period, which would
// otherwise be kept as long as a payment's records. now is the clock.
func (w *Writer) KeepHealthHistory(history time.Duration, mode s3types.ObjectLockMode, now func() time.Time) *Writer {
	w.history, w.mode, w.now = history, mode, now
	return w
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,200}$`)

// Key is where a record lives: partitioned by the session's date and the
// source for Athena, named by an id that is unique for what it records, so
// that a repeated write finds its record already there.
func Key(r Record, id string) string {
	return fmt.Sprintf("%ssource=%s/%s.json", Partition(r.SessionCreated), r.Source, id)
}

// Partition is the prefix of every record, of every source, whose session
// was created on day (its UTC date).
func Partition(day time.Time) string {
	return "records/date=" + day.UTC().Format("2006-01-02") + "/"
}

// Write validates r and stores it under Key(r, id) only if nothing is there
// (If-None-Match: *). A record already present is not an error: the log is
// append-only and the first write of an event stands. written reports
// whether this call added the record.
func (w *Writer) Write(ctx context.Context, r Record, id string) (written bool, err error) {
	if !idPattern.MatchString(id) {
		return false, fmt.Errorf("audit record: invalid id %q", id)
	}
	b, err := r.encode()
	if err != nil {
		return false, err
	}
	in := &s3.PutObjectInput{
		Bucket:      aws.String(w.bucket),
		ContentType: aws.String("application/json"),
	}
	if r.Source == SourceHealth && w.history > 0 {
		in.Tagging = aws.String(HistoryTag)
		in.ObjectLockMode = w.mode
		in.ObjectLockRetainUntilDate = aws.Time(w.now().Add(w.history).UTC())
	}
	written, err = putonce.Put(ctx, w.s3, Key(r, id), b, in)
	if err != nil {
		return false, fmt.Errorf("write audit record: %w", err)
	}
	return written, nil
}
