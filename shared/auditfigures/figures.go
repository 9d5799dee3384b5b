// Package auditfigures computes the figures of the business from the audit
// log (SPEC_ORACLE_AUDIT_TRAIL "Derived analytics", VC-1, VC-2, VC-3 and
// VC-5): paid sessions against their records, the webhook's latency, the
// cache-hit ratio, error-detail coverage and the top error patterns, the
// email failure rate, the crosscheck's rejections, the regenerations'
// divergence, the customer's wait from payment, the agent rail's x402
// outcomes (by status, and by endpoint: its HTTP routes and MCP tools) and
// settlement latency, and the revenue by day, tier and rail
// (card and agent, each in its currency); and the paid sessions against
// Stripe's own list of them.
//
// It reads the audit objects themselves, partition day by partition day,
// so it runs wherever S3 does (the local stack's moto included); the
// template's Athena workgroup answers the same questions over long ranges
// with its named queries. Records are streamed into counters, never kept:
// what it holds grows with the paid sessions of the range (a few fields
// and a latency each), not with its records.
// Smoke records are left out of every figure.
package auditfigures

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
)

// Objects is the S3 calls Compute makes (an *s3.Client).
type Objects interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Concurrency is how many objects Compute reads at once: a GET per object
// is the cost of reading the log directly.
const Concurrency = 16

// MaxDays is the longest range Compute reads, in partition days; longer
// ranges are Athena's (the workgroup's named queries).
const MaxDays = 366

// maxRecordBytes bounds what one object may make Compute hold: a record
// is under a kilobyte and a step's object holds a few, so anything larger
// is no audit object.
const maxRecordBytes = 1 << 20

// DateFormat is how a partition day is written: in the keys, in Figures
// and in the range Compute is given by its callers.
const DateFormat = "2006-01-02"

// Compute reads every audit record of the partition days from..to
// (inclusive, UTC days of the sessions' creation; their times of day are
// ignored) in bucket and returns the figures. An object that cannot be
// listed, read or decoded fails the whole computation with an error naming
// its key (the session cut to its name, oracle.ShortID): a figure over part
// of the log would look whole.
func Compute(ctx context.Context, c Objects, bucket string, from, to time.Time) (Figures, error) {
	return ComputeAgainstStripe(ctx, c, bucket, from, to, nil)
}

// ComputeAgainstStripe is Compute, with the paid sessions compared with
// Stripe's own list of the paid Checkout Sessions created on the same days,
// through stripe's lister of each mode (by livemode; a mode without one is
// not compared).
func ComputeAgainstStripe(ctx context.Context, c Objects, bucket string, from, to time.Time, stripe map[bool]SessionLister) (Figures, error) {
	first, last := day(from), day(to)
	if last.Before(first) {
		return Figures{}, fmt.Errorf("audit figures: the range ends (%s) before it starts (%s)", last.Format(DateFormat), first.Format(DateFormat))
	}
	if n := int(last.Sub(first).Hours()/24) + 1; n > MaxDays {
		return Figures{}, fmt.Errorf("audit figures: %d days is more than the %d read directly; query Athena for longer ranges", n, MaxDays)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	acc := newAccumulator()
	var mu sync.Mutex
	keys := make(chan string, Concurrency)
	var wg sync.WaitGroup
	for range Concurrency {
		wg.Go(func() {
			for key := range keys {
				if ctx.Err() != nil {
					continue // drain: the lister stops at the cancellation
				}
				recs, err := read(ctx, c, bucket, key)
				if err != nil {
					cancel(err)
					continue
				}
				mu.Lock()
				for _, r := range recs {
					acc.add(r)
				}
				mu.Unlock()
			}
		})
	}
	go func() {
		defer close(keys)
		if err := list(ctx, c, bucket, first, last, keys); err != nil {
			cancel(err)
		}
	}()
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return Figures{}, err
	}
	f := acc.figures(first.Format(DateFormat), last.Format(DateFormat))
	if len(stripe) > 0 {
		f.AgainstStripe = acc.againstStripe(ctx, stripe, first, last.AddDate(0, 0, 1))
	}
	return f, nil
}

func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// list sends the key of every record of the partition days first..last,
// all sources, to keys.
func list(ctx context.Context, c Objects, bucket string, first, last time.Time, keys chan<- string) error {
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		prefix := "records/date=" + d.Format(DateFormat) + "/"
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("audit figures: list %s: %w", prefix, err)
			}
			for _, o := range page.Contents {
				key := aws.ToString(o.Key)
				if strings.HasSuffix(key, "/") {
					continue // a folder marker, as the console makes
				}
				select {
				case keys <- key:
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}
		}
	}
	return nil
}

// read reads and decodes the records of the object at key: every line of
// a step's object (audit.Decode).
func read(ctx context.Context, c Objects, bucket, key string) ([]audit.Record, error) {
	g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("audit figures: read %s: %w", keyName(key), err)
	}
	defer g.Body.Close()
	b, err := io.ReadAll(io.LimitReader(g.Body, maxRecordBytes+1))
	if err != nil {
		return nil, fmt.Errorf("audit figures: read %s: %w", keyName(key), err)
	}
	if len(b) > maxRecordBytes {
		return nil, fmt.Errorf("audit figures: %s is larger than %d bytes: no audit record", keyName(key), maxRecordBytes)
	}
	recs, err := audit.Decode(key, b)
	if err != nil {
		return nil, fmt.Errorf("audit figures: %s is no audit record: %w", keyName(key), err)
	}
	return recs, nil
}

// keyName is key as errors and logs may show it: a record's session id,
// which opens its result page, cut to its name (oracle.ShortID) and marked
// "…" (listing the prefix up to the mark finds the object).
func keyName(key string) string {
	dir, base := path.Split(key)
	session, rest, ok := strings.Cut(base, ".")
	if !ok || !oracle.ValidSessionID(session) || oracle.ShortID(session) == session {
		return key
	}
	return dir + oracle.ShortID(session) + "…." + rest
}
