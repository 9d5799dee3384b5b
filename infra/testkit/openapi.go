package testkit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// OpenAPIChecker is an http.RoundTripper that checks every exchange it
// carries with the API an OpenAPI document describes (its first server's
// origin) against that document, so that the document cannot drift from
// the code: the route must be documented; the answer's status, headers and
// body must be documented for the operation; and a request the document
// says is invalid must be refused with a documented 4xx. A mismatch fails
// the test (t.Errorf: RoundTrip may run on another goroutine). Requests to
// other origins, and to the paths under Unchecked, are carried unchecked.
type OpenAPIChecker struct {
	// Next carries the requests (nil: http.DefaultTransport).
	Next http.RoundTripper
	// Unchecked are path prefixes on the API's origin that are no part of
	// the API (the local stack's own /_local/ pages).
	Unchecked []string

	t      testing.TB
	doc    *openapi3.T
	router routers.Router
	origin string

	mu      sync.Mutex
	checked map[string]int
}

// NewOpenAPIChecker loads spec (the JSON the API serves) with kin-openapi,
// validates it, and returns the checker of the API its first server names.
func NewOpenAPIChecker(t testing.TB, spec []byte) *OpenAPIChecker {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(spec)
	if err != nil {
		t.Fatalf("the OpenAPI document does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document is not valid: %v", err)
	}
	if len(doc.Servers) == 0 {
		t.Fatal("the OpenAPI document names no server")
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("the OpenAPI document's routes: %v", err)
	}
	return &OpenAPIChecker{t: t, doc: doc, router: router, origin: strings.TrimSuffix(doc.Servers[0].URL, "/"), checked: map[string]int{}}
}

// Client is an http.Client through the checker that follows no redirect
// (each answer, a 303 too, is checked as it is).
func (c *OpenAPIChecker) Client() *http.Client {
	return &http.Client{Transport: c, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Checked is how many exchanges were checked, by "METHOD path status" (the
// document's path template).
func (c *OpenAPIChecker) Checked() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.checked))
	for k, v := range c.checked {
		out[k] = v
	}
	return out
}

// RoundTrip carries req and checks the exchange.
func (c *OpenAPIChecker) RoundTrip(req *http.Request) (*http.Response, error) {
	next := c.Next
	if next == nil {
		next = http.DefaultTransport
	}
	if !c.ours(req) {
		return next.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
	}
	sent := req.Clone(req.Context())
	sent.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := next.RoundTrip(sent)
	if err != nil {
		return nil, err
	}
	answer, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	c.Exchange(req, body, resp.StatusCode, resp.Header, answer)
	return resp, nil
}

// Exchange checks one exchange made elsewhere (a browser's fetch): req
// with its body as sent, and the answer as received.
func (c *OpenAPIChecker) Exchange(req *http.Request, body []byte, status int, header http.Header, answer []byte) {
	if !c.ours(req) {
		c.t.Errorf("OpenAPI: %s %s is not for %s", req.Method, req.URL, c.origin)
		return
	}
	if problem := c.check(req, body, status, header, answer); problem != "" {
		c.t.Errorf("OpenAPI: %s %s answered %d: %s", req.Method, req.URL.RequestURI(), status, problem)
	}
}

// ours reports whether req is for the API the document describes.
func (c *OpenAPIChecker) ours(req *http.Request) bool {
	if !strings.HasPrefix(req.URL.String(), c.origin+"/") {
		return false
	}
	return !slices.ContainsFunc(c.Unchecked, func(p string) bool { return strings.HasPrefix(req.URL.Path, p) })
}

// check is what does not match the document in one exchange, or "".
func (c *OpenAPIChecker) check(req *http.Request, body []byte, status int, header http.Header, answer []byte) string {
	probe := req.Clone(context.Background())
	probe.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := c.router.FindRoute(probe)
	if err != nil {
		return fmt.Sprintf("the route is not documented (%v)", err)
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, AuthenticationFunc: cookieAuth}
	in := &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route, Options: opts}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
		Body: io.NopCloser(bytes.NewReader(answer)), Options: opts}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Sprintf("the answer does not match the document: %v\n%.600s", err, answer)
	}
	if reqErr != nil && (status < 400 || status > 499) {
		return fmt.Sprintf("the request does not match the document, yet it was served: %v", reqErr)
	}
	c.mu.Lock()
	c.checked[fmt.Sprintf("%s %s %d", req.Method, route.Path, status)]++
	c.mu.Unlock()
	return ""
}

// cookieAuth checks an apiKey scheme in a cookie by the cookie's presence:
// whether it is valid is the API's to say (a 401, documented).
func cookieAuth(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s := in.SecurityScheme
	if s.Type != "apiKey" || s.In != "cookie" {
		return fmt.Errorf("the checker does not know the %s scheme %s", s.Type, in.SecuritySchemeName)
	}
	if _, err := in.RequestValidationInput.Request.Cookie(s.Name); err != nil {
		return fmt.Errorf("no %s cookie", s.Name)
	}
	return nil
}
