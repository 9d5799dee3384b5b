package audit

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/shared/oracle"
)

// Getter is the S3 calls the reader needs.
type Getter interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Reader reads the records of one session back.
type Reader struct {
	s3     Getter
	bucket string
}

// NewReader reads bucket.
func NewReader(c Getter, bucket string) *Reader { return &Reader{s3: c, bucket: bucket} }

// Session returns every record of sessionID, whose Checkout Session was
// created at created: one listing per source of the session's partition,
// by the id's prefix (each record's id is its session's, a dot and a
// name), so no other session's record is read.
func (r *Reader) Session(ctx context.Context, sessionID string, created time.Time) ([]Record, error) {
	var out []Record
	for src := range sources {
		if src == SourceHealth {
			continue
		}
		prefix := strings.TrimSuffix(Key(Record{SessionCreated: created, Source: src}, sessionID+"."), ".json")
		p := s3.NewListObjectsV2Paginator(r.s3, &s3.ListObjectsV2Input{Bucket: aws.String(r.bucket), Prefix: aws.String(prefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("list the audit records of %s: %w", oracle.ShortID(sessionID), err)
			}
			for _, o := range page.Contents {
				key := aws.ToString(o.Key)
				// Errors name the record by the session's name (oracle.ShortID).
				recs, err := r.get(ctx, key, strings.Replace(key, sessionID, oracle.ShortID(sessionID), 1))
				if err != nil {
					return nil, err
				}
				for _, rec := range recs {
					if rec.SessionID == sessionID {
						out = append(out, rec)
					}
				}
			}
		}
	}
	return out, nil
}

// get reads every record of the object at key (Decode).
func (r *Reader) get(ctx context.Context, key, name string) ([]Record, error) {
	g, err := r.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(r.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("read audit record %s: %w", name, err)
	}
	defer g.Body.Close()
	b, err := io.ReadAll(g.Body)
	if err != nil {
		return nil, fmt.Errorf("read audit record %s: %w", name, err)
	}
	recs, err := Decode(key, b)
	if err != nil {
		return nil, fmt.Errorf("audit record %s: %w", name, err)
	}
	return recs, nil
}

// ChatMail returns the delivery records (NameMail: the mailer's last word
// on each, sent or failed) of the emails of kind owed to account whose
// delivery began on day, by the nonce of the request each answers: one
// listing of that day's email records by the ids' prefix.
func (r *Reader) ChatMail(ctx context.Context, kind oracle.MailKind, account string, day time.Time) (map[string]Record, error) {
	prefix := strings.TrimSuffix(Key(Record{SessionCreated: day, Source: SourceEmailService}, chatMailPrefix(kind, account)), ".json")
	suffix := "." + string(NameMail) + ".json"
	out := map[string]Record{}
	p := s3.NewListObjectsV2Paginator(r.s3, &s3.ListObjectsV2Input{Bucket: aws.String(r.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the %s emails' records: %w", kind, err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			nonce, ok := strings.CutSuffix(strings.TrimPrefix(key, prefix), suffix)
			if !ok || strings.Contains(nonce, ".") {
				continue // an attempt's or gate 2's record
			}
			recs, err := r.get(ctx, key, string(kind)+" email "+nonce)
			if err != nil {
				return nil, err
			}
			// The delivery's record is the object's outcome, its last line.
			out[nonce] = recs[len(recs)-1]
		}
	}
	return out, nil
}
