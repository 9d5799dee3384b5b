package testkit

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// NoteCalls is NoteAWSCalls whose notes can also take the calls of
// clients that are no AWS SDK's (HTTPClient): a facilitator's /verify, the
// model's call, each in its place among the AWS requests.
func NoteCalls(cfg *aws.Config) *AWSCalls {
	base := cfg.HTTPClient
	if base == nil {
		base = awshttp.NewBuildableClient()
	}
	cfg.HTTPClient = routing{aws: base}
	return NoteAWSCalls(cfg)
}

// transportKey carries, on a noted request that no AWS client made, the
// transport that makes it.
type transportKey struct{}

// routing sends each request through its own transport: an HTTPClient's
// requests through theirs, the AWS SDK's through its client.
type routing struct{ aws aws.HTTPClient }

func (r routing) Do(req *http.Request) (*http.Response, error) {
	if rt, ok := req.Context().Value(transportKey{}).(http.RoundTripper); ok {
		return rt.RoundTrip(req)
	}
	return r.aws.Do(req)
}

// HTTPClient is an HTTP client whose requests are noted among c's calls
// (c made by NoteCalls), each under the operation name gives it, and made
// through base (http.DefaultTransport when nil). Hold works on them as on
// the AWS SDK's.
func (c *AWSCalls) HTTPClient(name func(*http.Request) string, base http.RoundTripper) *http.Client {
	if base == nil {
		base = http.DefaultTransport
	}
	return &http.Client{Transport: noted{calls: c, name: name, base: base}}
}

// noted is HTTPClient's transport.
type noted struct {
	calls *AWSCalls
	name  func(*http.Request) string
	base  http.RoundTripper
}

func (n noted) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := context.WithValue(req.Context(), transportKey{}, n.base)
	return n.calls.Do(req.WithContext(awsmiddleware.SetOperationName(ctx, n.name(req))))
}
