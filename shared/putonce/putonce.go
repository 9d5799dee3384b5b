// Package putonce writes an S3 object only if its key is free: the
// append-only audit log, its seals, the quarantine and evidence records.
// The first write of a key stands; a repeated write (a retried request, a
// redelivered event) finds it there and changes nothing.
package putonce

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Putter is the S3 call a write needs.
type Putter interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// attempts bounds the retries of a write that met a concurrent write of
// the same key.
const attempts = 3

// Put writes body under key, with the rest of in, with If-None-Match: * and a SHA-256 checksum (Object Lock
// buckets refuse uploads without one). written is false when an object
// was already there. A concurrent write of the same key makes S3 answer
// 409; the write is tried again, and its answer says whether that other
// write landed. Errors do not name the key, which may hold a session id.
func Put(ctx context.Context, c Putter, key string, body []byte, in *s3.PutObjectInput) (written bool, err error) {
	in.Key = aws.String(key)
	in.IfNoneMatch = aws.String("*")
	in.ChecksumAlgorithm = s3types.ChecksumAlgorithmSha256
	for attempt := 1; ; attempt++ {
		in.Body = bytes.NewReader(body)
		_, err = c.PutObject(ctx, in)
		switch {
		case err == nil:
			return true, nil
		case status(err) == http.StatusPreconditionFailed:
			return false, nil
		case status(err) == http.StatusConflict && attempt < attempts:
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
			continue
		}
		return false, err
	}
}

func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}
