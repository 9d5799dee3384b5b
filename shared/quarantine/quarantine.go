// Package quarantine keeps what the content filter stopped, for a person to
// review: the full raw payload with what the decision to deliver a cleaned
// verdict or refund will need. The records live in their own bucket, which
// only the two gates may write and only the operator's ops function reads,
// never in the audit log (SPEC_ORACLE_SOS_FILTER invariant 4, GAP-B).
package quarantine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/putonce"
)

// Gates, as recorded.
const (
	GateGenerator = "generator" // gate 1: before the verdict is stored
	GateMailer    = "mailer"    // gate 2: before an email is sent
)

// Record is one quarantined payload.
type Record struct {
	SessionID     string    `json:"session_id"`
	Tier          string    `json:"tier"`
	Gate          string    `json:"gate"`
	QuarantinedAt time.Time `json:"quarantined_at"`
	// Terms are the block list entries' ids that decided it; Reason says
	// why (a quarantine-class entry, or the contamination density).
	Terms         []string `json:"term_ids"`
	Reason        string   `json:"reason"`
	FilterVersion string   `json:"filter_version"`
	PromptVersion string   `json:"prompt_version,omitempty"`
	Model         string   `json:"model,omitempty"`
	// What a refund or a cleaned delivery needs.
	Livemode    bool            `json:"livemode"`
	AmountTotal int64           `json:"amount_total"`
	Currency    string          `json:"currency"`
	MailKind    oracle.MailKind `json:"mail_kind,omitempty"` // gate 2: the email stopped
	// Raw is the payload as it reached the gate: the model's reply at gate
	// 1, the final email's parts at gate 2.
	Raw json.RawMessage `json:"raw_payload"`
}

// Mail is the raw payload of gate 2.
type Mail struct {
	Subject string `json:"subject"`
	Text    string `json:"text"`
	HTML    string `json:"html"`
}

// Putter is the S3 call the store needs.
type Putter = putonce.Putter

// Store writes records to the quarantine bucket.
type Store struct {
	s3     Putter
	bucket string
}

// NewStore writes to bucket.
func NewStore(c Putter, bucket string) *Store { return &Store{s3: c, bucket: bucket} }

// Key is where r lives: one object per session, gate and moment, so a
// second quarantine of the same session adds a record instead of replacing
// the first.
func Key(r Record) string {
	return fmt.Sprintf("quarantine/%s/%s-%d.json", r.SessionID, r.Gate, r.QuarantinedAt.UnixNano())
}

// Put stores r under Key(r), only if nothing is there, and returns the key.
// An error means the record is not known to be kept: the caller must not
// deliver (fail closed, GAP-L).
func (s *Store) Put(ctx context.Context, r Record) (string, error) {
	if !oracle.ValidSessionID(r.SessionID) || (r.Gate != GateGenerator && r.Gate != GateMailer) || r.QuarantinedAt.IsZero() || len(r.Raw) == 0 {
		return "", errors.New("quarantine record: session, gate, time and raw payload are required")
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode quarantine record: %w", err)
	}
	key := Key(r)
	// A record already there is the same one, written by an earlier attempt.
	if _, err := putonce.Put(ctx, s.s3, key, b, &s3.PutObjectInput{Bucket: aws.String(s.bucket), ContentType: aws.String("application/json")}); err != nil {
		return "", fmt.Errorf("write quarantine record %s: %w", oracle.ShortID(r.SessionID), err)
	}
	return key, nil
}

// Getter is the S3 call the reader needs.
type Getter interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Reader reads quarantine records back: the operator's review, which
// may deliver a cleaned verdict from one.
type Reader struct {
	s3     Getter
	bucket string
}

// NewReader reads bucket.
func NewReader(c Getter, bucket string) *Reader { return &Reader{s3: c, bucket: bucket} }

// Get reads the record under key (an order's quarantine_record).
func (r *Reader) Get(ctx context.Context, key string) (Record, error) {
	out, err := r.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(r.bucket), Key: aws.String(key)})
	if err != nil {
		return Record{}, fmt.Errorf("read quarantine record: %w", err)
	}
	defer out.Body.Close()
	var rec Record
	if err := json.NewDecoder(out.Body).Decode(&rec); err != nil {
		return Record{}, fmt.Errorf("decode quarantine record: %w", err)
	}
	return rec, nil
}
