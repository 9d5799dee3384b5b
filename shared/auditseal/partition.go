package auditseal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
)

// readers bounds the records read at once: enough to read a day in seconds,
// few enough for one function's connections.
const readers = 16

// object is one record as read now.
type object struct {
	key     string
	body    []byte
	sum     string // hex SHA-256 of body
	version string
}

// partition reads every record of day's partition, in ascending key order.
func (s *Sealer) partition(ctx context.Context, day time.Time) ([]object, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.s3, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket), Prefix: aws.String(audit.Partition(day)), MaxKeys: s.pageSize,
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the audit records of %s: %w", day.Format(time.DateOnly), err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	slices.Sort(keys)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	objs := make([]object, len(keys))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(readers, len(keys)) {
		wg.Go(func() {
			for i := range next {
				o, err := s.get(ctx, keys[i])
				if err != nil {
					cancel(err)
					continue
				}
				objs[i] = o
			}
		})
	}
feed:
	for i := range keys {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return objs, nil
}

func (s *Sealer) get(ctx context.Context, key string) (object, error) {
	g, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return object{}, fmt.Errorf("read audit record %s: %w", shorten(key), err)
	}
	defer g.Body.Close()
	b, err := io.ReadAll(g.Body)
	if err != nil {
		return object{}, fmt.Errorf("read audit record %s: %w", shorten(key), err)
	}
	sum := sha256.Sum256(b)
	return object{key: key, body: b, sum: hex.EncodeToString(sum[:]), version: aws.ToString(g.VersionId)}, nil
}

var sessionPattern = regexp.MustCompile(`cs_(test|live)_[A-Za-z0-9]+`)

// shorten names every session in key by its name (oracle.ShortID), as
// anything an operator reads must: a session id opens its verdict.
func shorten(key string) string {
	return sessionPattern.ReplaceAllStringFunc(key, oracle.ShortID)
}
