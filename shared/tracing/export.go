//go:build !notracing

package tracing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exporter posts spans to an OTLP/HTTP traces endpoint as protobuf,
// signed with SigV4 when it is AWS's (X-Ray's OTLP endpoint).
type exporter struct {
	url     string
	http    *http.Client
	timeout time.Duration
	// sign is set for AWS's endpoint: the SigV4 service name, the region
	// and the function's credentials.
	sign   string
	region string
	creds  aws.CredentialsProvider
	signer *v4.Signer
	now    func() time.Time
}

// export sends spans in one request; an answer other than 2xx is an
// error (OTLP/HTTP's partial success, a 200, is not looked into).
func (x *exporter) export(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	// A fresh buffer each export: the transport may still hold the last
	// one's body after answering. About 200 bytes a span.
	body := encodeRequest(make([]byte, 0, 256*len(spans)), spans)
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("export %d spans: %w", len(spans), err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if x.sign != "" {
		creds, err := x.creds.Retrieve(ctx)
		if err != nil {
			return fmt.Errorf("export %d spans: credentials: %w", len(spans), err)
		}
		sum := sha256.Sum256(body)
		if err := x.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), x.sign, x.region, x.now()); err != nil {
			return fmt.Errorf("export %d spans: sign: %w", len(spans), err)
		}
	}
	resp, err := x.http.Do(req)
	if err != nil {
		return fmt.Errorf("export %d spans: %w", len(spans), err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("export %d spans: %s answered %d: %s", len(spans), x.url, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}
