package putonce_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/putonce"
)

// conflicted answers 409 to its first n writes, as S3 does while another
// write of the same key is in progress, then passes them to S3.
type conflicted struct {
	putonce.Putter
	n int
}

func (c *conflicted) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if c.n > 0 {
		c.n--
		io.Copy(io.Discard, in.Body) // the body is spent, as a real attempt spends it
		return nil, &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusConflict}}, Err: errors.New("conflict")}
	}
	return c.Putter.PutObject(ctx, in, opts...)
}

func TestTheFirstWriteOfAKeyStands(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c, bucket := awsenv.S3(f.AWS), f.Ref("AuditBucket")
	in := func() *s3.PutObjectInput { return &s3.PutObjectInput{Bucket: aws.String(bucket)} }
	cases := []struct {
		name      string
		conflicts int
		body      string
		written   bool
		fails     bool
	}{
		{"the first write", 0, "first", true, false},
		{"a second write", 0, "second", false, false},
		{"a write after a concurrent one", 2, "third", false, false},
		{"too many conflicts", 3, "fourth", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			written, err := putonce.Put(ctx, &conflicted{Putter: c, n: tc.conflicts}, "records/k.json", []byte(tc.body), in())
			if written != tc.written || (err != nil) != tc.fails {
				t.Fatalf("written %v, err %v", written, err)
			}
		})
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("records/k.json")})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(out.Body); string(b) != "first" {
		t.Fatalf("the object holds %q, want the first write", b)
	}
}
