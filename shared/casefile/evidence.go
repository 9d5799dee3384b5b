package casefile

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

// Dispute is a cardholder's dispute as Stripe reported it.
type Dispute struct {
	ID            string    `json:"id"`
	Reason        string    `json:"reason"`
	Charge        string    `json:"charge"`
	PaymentIntent string    `json:"payment_intent"`
	Amount        int64     `json:"amount"`
	Currency      string    `json:"currency"`
	DueBy         time.Time `json:"evidence_due_by"`
}

// Evidence is what the operator uploads to answer a dispute: the order's
// case, and the verdict exactly as it was served and emailed (the page and
// the email both render the one stored verdict) with the question it
// answered. It holds the customer's query, so it lives in the private
// evidence bucket, never in the audit log.
type Evidence struct {
	Dispute   Dispute         `json:"dispute"`
	Case      File            `json:"case"`
	Query     string          `json:"query,omitempty"`
	Verdict   json.RawMessage `json:"verdict_as_sent,omitempty"`
	ResultURL string          `json:"result_page"`
	WrittenAt time.Time       `json:"written_at"`
}

// NewEvidence is the evidence of dispute d on order o, whose case is f.
func NewEvidence(d Dispute, f File, o oracle.Order, resultURL string, now time.Time) Evidence {
	e := Evidence{Dispute: d, Case: f, Query: o.Query, ResultURL: resultURL, WrittenAt: now.UTC()}
	if json.Valid([]byte(o.Verdict)) {
		e.Verdict = json.RawMessage(o.Verdict)
	}
	return e
}

// Putter is the S3 call the evidence store needs.
type Putter = putonce.Putter

// EvidenceStore writes evidence bundles to their bucket.
type EvidenceStore struct {
	s3     Putter
	bucket string
}

// NewEvidenceStore writes to bucket.
func NewEvidenceStore(c Putter, bucket string) *EvidenceStore {
	return &EvidenceStore{s3: c, bucket: bucket}
}

// Location names an evidence bundle for the operator: s3://bucket/key.
func (s *EvidenceStore) Location(key string) string { return "s3://" + s.bucket + "/" + key }

// Put writes e once per dispute: a redelivered dispute event finds the
// first bundle there and returns its key.
func (s *EvidenceStore) Put(ctx context.Context, e Evidence) (string, error) {
	if !oracle.ValidSessionID(e.Case.SessionID) || e.Dispute.ID == "" {
		return "", errors.New("evidence: the session and the dispute are required")
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode evidence: %w", err)
	}
	key := fmt.Sprintf("disputes/%s/%s.json", e.Case.SessionID, e.Dispute.ID)
	if _, err := putonce.Put(ctx, s.s3, key, b, &s3.PutObjectInput{Bucket: aws.String(s.bucket), ContentType: aws.String("application/json")}); err != nil {
		return "", fmt.Errorf("write the evidence of %s: %w", oracle.ShortID(e.Case.SessionID), err)
	}
	return key, nil
}
