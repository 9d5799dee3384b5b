package audit

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/shared/putonce"
)

// Putter is the S3 call the writer needs.
type Putter = putonce.Putter

// Writer appends records to the audit bucket.
type Writer struct {
	s3     Putter
	bucket string
}

// NewWriter writes to bucket.
func NewWriter(c Putter, bucket string) *Writer { return &Writer{s3: c, bucket: bucket} }

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
	written, err = putonce.Put(ctx, w.s3, Key(r, id), b, &s3.PutObjectInput{
		Bucket:      aws.String(w.bucket),
		ContentType: aws.String("application/json"),
	})
	if err != nil {
		return false, fmt.Errorf("write audit record: %w", err)
	}
	return written, nil
}
