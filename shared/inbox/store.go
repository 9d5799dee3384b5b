package inbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/putonce"
)

// Prefix is where the inbox bucket keeps received messages: SES's receipt
// rule writes "inbound/<SES message id>", the Graph source and the local
// stack "inbound/<source>-<id>".
const Prefix = "inbound/"

// MaxMessage bounds a stored message read back: SES receives at most
// 40 MB, headers and encoding included.
const MaxMessage = 40 << 20

// ErrGone means the stored message is not there (it expired).
var ErrGone = errors.New("the stored message is gone")

// Client is the S3 calls Messages makes.
type Client interface {
	putonce.Putter
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Messages is the inbox bucket: each message as it was received, private,
// encrypted and expiring. It is the one place a sender's address is kept,
// so that the autoresponse can read it at send time.
type Messages struct {
	s3     Client
	bucket string
}

// NewMessages reads and writes bucket through c.
func NewMessages(c Client, bucket string) *Messages { return &Messages{s3: c, bucket: bucket} }

// Put stores raw under key once; a message already there stands.
func (m *Messages) Put(ctx context.Context, key string, raw []byte) error {
	if _, err := putonce.Put(ctx, m.s3, key, raw, &s3.PutObjectInput{
		Bucket:      aws.String(m.bucket),
		ContentType: aws.String("message/rfc822"),
	}); err != nil {
		return fmt.Errorf("store the received message: %w", err)
	}
	return nil
}

// Get returns the message stored under key and when it was stored, or
// ErrGone.
func (m *Messages) Get(ctx context.Context, key string) ([]byte, time.Time, error) {
	out, err := m.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(m.bucket), Key: aws.String(key)})
	var missing *s3types.NoSuchKey
	if errors.As(err, &missing) {
		return nil, time.Time{}, ErrGone
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read the received message: %w", err)
	}
	defer out.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(out.Body, MaxMessage+1))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read the received message: %w", err)
	}
	if len(raw) > MaxMessage {
		return nil, time.Time{}, fmt.Errorf("read the received message: larger than %d bytes", MaxMessage)
	}
	return raw, aws.ToTime(out.LastModified), nil
}

// Via names the source that stored the message under key: graph for the
// polled Microsoft 365 mailbox, ses for SES receiving (and the local
// stack's route, which stands in for it).
func Via(key string) string {
	if strings.HasPrefix(key, Prefix+"graph-") {
		return "graph"
	}
	return "ses"
}

// Key is the message's key in the Ledger and the audit log: a keyed hash of
// its Message-ID, so that the same message delivered twice, or read by two
// sources, is one; of its bytes when it has no Message-ID.
func Key(h *audit.Hasher, m Message, raw []byte) string {
	var id string
	if m.ID != "" {
		id = h.Hash("message-id:" + m.ID)
	} else {
		id = h.Hash("raw:" + string(raw))
	}
	return strings.TrimPrefix(id, audit.HashPrefix)
}

// ID is the name of the message stored under key: the key without Prefix,
// as alerts name it and `make ops ACTION=inbox SHOW=…` takes it.
func ID(key string) string { return strings.TrimPrefix(key, Prefix) }

// Object is the key of the stored message name names: its ID, or its whole
// key. A name is letters, digits and dashes (SES's ids, "graph-" and
// "local-" ones), never a path.
func Object(name string) (string, bool) {
	id := ID(strings.TrimSpace(name))
	if id == "" || len(id) > 128 {
		return "", false
	}
	if strings.IndexFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
	}) >= 0 {
		return "", false
	}
	return Prefix + id, true
}
