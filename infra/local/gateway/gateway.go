// Package gateway is the local stack's HTTP front door: it routes requests
// the way an API Gateway HTTP API does, hands them to functions as payload
// format 2.0 events and turns their responses back into HTTP.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/infra/local/runtimeapi"
)

// MaxBody is API Gateway's payload limit.
const MaxBody = 10 << 20

// integrationTimeout is API Gateway's limit on waiting for a function.
const integrationTimeout = 30 * time.Second

// accountID is moto's default account, the one the provisioned ARNs use.
const accountID = "123456789012"

// Invoker runs a function synchronously.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// Route sends requests matching Method and Path to Function. Path may hold
// {name} segments and end with a greedy {name+}; Method "ANY" matches all.
type Route struct {
	Method   string
	Path     string
	Function Invoker
}

// Options configure a Gateway.
type Options struct {
	Routes []Route
	// ForceBase64 base64-encodes every request body, as API Gateway does
	// for binary content types, so that path of a function can be run.
	ForceBase64 bool
	// Log receives one line per request; nil means the standard logger.
	Log *log.Logger
}

// Gateway is an http.Handler.
type Gateway struct {
	routes      []route
	forceBase64 bool
	log         *log.Logger
}

type route struct {
	Route
	key      string
	segments []string
}

// New checks the routes and orders them as API Gateway picks among
// several matches: literal segments before parameters before a greedy one.
func New(o Options) (*Gateway, error) {
	g := &Gateway{forceBase64: o.ForceBase64, log: o.Log}
	if g.log == nil {
		g.log = log.Default()
	}
	for _, r := range o.Routes {
		if !strings.HasPrefix(r.Path, "/") || r.Method == "" || r.Function == nil {
			return nil, fmt.Errorf("gateway: invalid route %q %q", r.Method, r.Path)
		}
		segs := strings.Split(strings.Trim(r.Path, "/"), "/")
		for i, s := range segs {
			if strings.HasSuffix(s, "+}") && i != len(segs)-1 {
				return nil, fmt.Errorf("gateway: route %s: a greedy parameter must be the last segment", r.Path)
			}
		}
		r.Method = strings.ToUpper(r.Method)
		g.routes = append(g.routes, route{Route: r, key: r.Method + " " + r.Path, segments: segs})
	}
	sort.SliceStable(g.routes, func(i, j int) bool { return moreSpecific(g.routes[i], g.routes[j]) })
	return g, nil
}

func rank(seg string) int {
	switch {
	case strings.HasSuffix(seg, "+}"):
		return 2
	case strings.HasPrefix(seg, "{"):
		return 1
	}
	return 0
}

func moreSpecific(a, b route) bool {
	for i := 0; i < len(a.segments) && i < len(b.segments); i++ {
		if ra, rb := rank(a.segments[i]), rank(b.segments[i]); ra != rb {
			return ra < rb
		}
	}
	if len(a.segments) != len(b.segments) {
		return len(a.segments) > len(b.segments)
	}
	return a.Method != "ANY" && b.Method == "ANY"
}

// match returns the route for a request and its path parameters.
func (g *Gateway) match(method, path string) (*route, map[string]string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := range g.routes {
		r := &g.routes[i]
		if r.Method != method && r.Method != "ANY" {
			continue
		}
		if params, ok := r.bind(parts); ok {
			return r, params
		}
	}
	return nil, nil
}

func (r *route) bind(parts []string) (map[string]string, bool) {
	var params map[string]string
	set := func(name, v string) {
		if params == nil {
			params = map[string]string{}
		}
		params[name] = v
	}
	for i, seg := range r.segments {
		switch rank(seg) {
		case 2:
			if i >= len(parts) || parts[i] == "" {
				return nil, false
			}
			set(strings.TrimSuffix(seg[1:], "+}"), strings.Join(parts[i:], "/"))
			return params, true
		case 1:
			if i >= len(parts) || parts[i] == "" {
				return nil, false
			}
			set(seg[1:len(seg)-1], parts[i])
		default:
			if i >= len(parts) || parts[i] != seg {
				return nil, false
			}
		}
	}
	return params, len(parts) == len(r.segments)
}

// ServeHTTP routes one request to its function.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusWriter{ResponseWriter: w}
	problem := g.serve(rec, r, start)
	line := fmt.Sprintf("%s %s %d %dms", r.Method, r.URL.Path, rec.status, time.Since(start).Milliseconds())
	if problem != nil {
		line += " (" + problem.Error() + ")"
	}
	g.log.Print(line)
}

// serve answers the request and returns what went wrong, for the log line.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, start time.Time) error {
	requestID := newRequestID()
	w.Header().Set("Apigw-Requestid", requestID)
	rt, params := g.match(r.Method, r.URL.Path)
	if rt == nil {
		writeMessage(w, http.StatusNotFound, "Not Found")
		return nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeMessage(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return nil
	}
	if err != nil {
		writeMessage(w, http.StatusBadRequest, "Bad Request")
		return fmt.Errorf("read body: %w", err)
	}
	event, err := json.Marshal(g.event(r, rt, params, body, requestID, start))
	if err != nil {
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return fmt.Errorf("encode event: %w", err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), integrationTimeout)
	defer cancel()
	out, err := rt.Function.Invoke(ctx, event)
	var fe *runtimeapi.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &fe) && fe.Type == runtimeapi.ErrorTypeTimeout:
		writeMessage(w, http.StatusServiceUnavailable, "Service Unavailable")
		return err
	case err != nil:
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return err
	}
	if err := writeResponse(w, out); err != nil {
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return err
	}
	return nil
}

// event builds the payload format 2.0 event.
func (g *Gateway) event(r *http.Request, rt *route, params map[string]string, body []byte, requestID string, start time.Time) events.APIGatewayV2HTTPRequest {
	sourceIP, port, _ := net.SplitHostPort(r.RemoteAddr)
	headers := map[string]string{}
	var cookies []string
	for name, values := range r.Header {
		name = strings.ToLower(name)
		if name == "cookie" {
			// Payload 2.0 moves cookies out of the headers.
			for _, v := range values {
				for _, c := range strings.Split(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[name] = strings.Join(values, ",")
	}
	headers["host"] = r.Host
	headers["x-forwarded-for"] = sourceIP
	headers["x-forwarded-port"] = port
	headers["x-forwarded-proto"] = "http"
	var query map[string]string
	for k, vs := range r.URL.Query() {
		if query == nil {
			query = map[string]string{}
		}
		query[k] = strings.Join(vs, ",")
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              rt.key,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     rt.key,
			AccountID:    accountID,
			Stage:        "$default",
			RequestID:    requestID,
			APIID:        "local",
			DomainName:   host,
			DomainPrefix: strings.SplitN(host, ".", 2)[0],
			Time:         start.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    start.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.EscapedPath(),
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if g.forceBase64 || !isText(r.Header.Get("Content-Type")) {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		} else {
			ev.Body = string(body)
		}
	}
	return ev
}

// isText reports whether API Gateway passes a body of this type as text.
func isText(contentType string) bool {
	ct := strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	switch {
	case ct == "":
		return false
	case strings.HasPrefix(ct, "text/"),
		ct == "application/json", strings.HasSuffix(ct, "+json"),
		ct == "application/xml", strings.HasSuffix(ct, "+xml"),
		ct == "application/x-www-form-urlencoded",
		strings.Contains(ct, "javascript"):
		return true
	}
	return false
}

// writeResponse turns the function's response into HTTP. A response that
// is not a JSON object with a statusCode is, as API Gateway infers for
// payload 2.0, a 200 application/json with the response as the body.
func writeResponse(w http.ResponseWriter, out []byte) error {
	var probe map[string]json.RawMessage
	if json.Unmarshal(out, &probe) != nil || probe["statusCode"] == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
		return nil
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return fmt.Errorf("malformed function response: %w", err)
	}
	if resp.StatusCode < 100 || resp.StatusCode > 599 {
		return fmt.Errorf("malformed function response: statusCode %d", resp.StatusCode)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			return fmt.Errorf("malformed function response: body is not base64: %w", err)
		}
		body = b
	}
	h := w.Header()
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	if h.Get("Content-Type") == "" {
		// API Gateway sends no type the function did not set; stop
		// net/http from sniffing one.
		h["Content-Type"] = nil
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return nil
}

func writeMessage(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, `{"message":%q}`, msg)
}

// statusWriter remembers the status for the log line.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// newRequestID returns an id in the form of API Gateway's.
func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
