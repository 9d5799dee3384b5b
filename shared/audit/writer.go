package audit

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"42sisters.ai/oracle/shared/ascii"
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

// idChars are what a record's id is made of, 1 to 200 of them.
var idChars = ascii.NewSet("A-Za-z0-9_.:-")

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
	return w.WriteStep(ctx, []Line{{Record: r, ID: id}})
}

// Line is one record of a step's object, with its id (RecordID).
type Line struct {
	Record Record
	ID     string
}

// WriteStep writes the records of one step of one order as one object of
// newline-delimited JSON, a record a line, each with its id (record_id),
// under the last line's key (the step's outcome), only if nothing is
// there: one PutObject for the step instead of one a record. A line's id
// belongs to one step's object only, so a record is never in two objects;
// a repeated write of the step (a redelivered job) finds its object there
// and adds nothing, not one line (written is false). The object is whole
// or absent: S3 stores a PutObject entirely or not at all, and refuses a
// body whose SHA-256 is not the one sent, so no reader sees some lines of
// a step without the others.
func (w *Writer) WriteStep(ctx context.Context, lines []Line) (written bool, err error) {
	body, err := encodeStep(lines)
	if err != nil {
		return false, err
	}
	head := lines[len(lines)-1]
	in := &s3.PutObjectInput{
		Bucket:      aws.String(w.bucket),
		ContentType: aws.String(ContentType),
	}
	if head.Record.Source == SourceHealth && w.history > 0 {
		in.Tagging = aws.String(HistoryTag)
		in.ObjectLockMode = w.mode
		in.ObjectLockRetainUntilDate = aws.Time(w.now().Add(w.history).UTC())
	}
	written, err = putonce.Put(ctx, w.s3, Key(head.Record, head.ID), body, in)
	if err != nil {
		return false, fmt.Errorf("write audit record: %w", err)
	}
	return written, nil
}

// ContentType is the audit objects': JSON Lines, one record a line.
const ContentType = "application/x-ndjson"

// encodeStep validates every line and returns the object's body. The lines
// share one partition (session day and source) and one session, as the
// object's key names them, and no two share an id.
func encodeStep(lines []Line) ([]byte, error) {
	if len(lines) == 0 {
		return nil, fmt.Errorf("audit record: a step with no record")
	}
	head := lines[len(lines)-1].Record
	seen := map[string]bool{}
	var body []byte
	for _, l := range lines {
		if !idChars.Run(l.ID, 1, 200) {
			return nil, fmt.Errorf("audit record: invalid id %q", l.ID)
		}
		if seen[l.ID] {
			return nil, fmt.Errorf("audit record: id %q twice in one step", l.ID)
		}
		seen[l.ID] = true
		r := l.Record
		if r.Source != head.Source || r.SessionID != head.SessionID || !r.SessionCreated.Equal(head.SessionCreated) {
			return nil, fmt.Errorf("audit record: a step's records share one session and source (%s is %s's)", l.ID, r.Source)
		}
		r.RecordID = l.ID
		b, err := r.encode()
		if err != nil {
			return nil, err
		}
		body = append(append(body, b...), '\n')
	}
	return body, nil
}
