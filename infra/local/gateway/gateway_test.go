package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/infra/local/gateway"
	"42sisters.ai/oracle/infra/local/internal/echotest"
	"42sisters.ai/oracle/infra/local/runtimeapi"
)

var echoBin string

func TestMain(m *testing.M) { os.Exit(echotest.Main(m, &echoBin)) }

// named answers with its name and records the events it was given.
type named struct {
	name   string
	mu     sync.Mutex
	events []events.APIGatewayV2HTTPRequest
}

func (n *named) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.events = append(n.events, ev)
	n.mu.Unlock()
	return json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: n.name})
}

func (n *named) last() events.APIGatewayV2HTTPRequest {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.events[len(n.events)-1]
}

func serve(t *testing.T, o gateway.Options) *httptest.Server {
	t.Helper()
	o.Log = log.New(io.Discard, "", 0)
	g, err := gateway.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func newRequest(t *testing.T, method, url string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRouting(t *testing.T) {
	list, item, special, files, create := &named{name: "list"}, &named{name: "item"}, &named{name: "special"}, &named{name: "files"}, &named{name: "create"}
	srv := serve(t, gateway.Options{Routes: []gateway.Route{
		{Method: "ANY", Path: "/files/{proxy+}", Function: files},
		{Method: "GET", Path: "/items/{id}", Function: item},
		{Method: "GET", Path: "/items", Function: list},
		{Method: "GET", Path: "/items/special", Function: special},
		{Method: "POST", Path: "/items", Function: create},
	}})
	tests := []struct {
		method, path string
		status       int
		body         string
		params       map[string]string
		routeKey     string
	}{
		{"GET", "/items", 200, "list", nil, "GET /items"},
		{"POST", "/items", 200, "create", nil, "POST /items"},
		{"GET", "/items/42", 200, "item", map[string]string{"id": "42"}, "GET /items/{id}"},
		{"GET", "/items/special", 200, "special", nil, "GET /items/special"},
		{"DELETE", "/files/a/b/c.txt", 200, "files", map[string]string{"proxy": "a/b/c.txt"}, "ANY /files/{proxy+}"},
		{"PUT", "/items", 404, `{"message":"Not Found"}`, nil, ""},
		{"GET", "/nope", 404, `{"message":"Not Found"}`, nil, ""},
		{"GET", "/files", 404, `{"message":"Not Found"}`, nil, ""},
		{"GET", "/items/42/more", 404, `{"message":"Not Found"}`, nil, ""},
	}
	fns := map[string]*named{"list": list, "item": item, "special": special, "files": files, "create": create}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body := do(t, newRequest(t, tc.method, srv.URL+tc.path, nil))
			if resp.StatusCode != tc.status || string(body) != tc.body {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, body, tc.status, tc.body)
			}
			if tc.status != 200 {
				return
			}
			ev := fns[tc.body].last()
			if ev.RouteKey != tc.routeKey || ev.RequestContext.RouteKey != tc.routeKey {
				t.Errorf("routeKey = %q, want %q", ev.RouteKey, tc.routeKey)
			}
			if !reflect.DeepEqual(ev.PathParameters, tc.params) {
				t.Errorf("pathParameters = %v, want %v", ev.PathParameters, tc.params)
			}
		})
	}
}

// echo starts the echo Lambda behind the Runtime API.
func echo(t *testing.T) *runtimeapi.Function {
	t.Helper()
	f, err := runtimeapi.Start(runtimeapi.Config{Name: "Echo", Binary: echoBin, Timeout: 2 * time.Second, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func TestEventAndResponse(t *testing.T) {
	srv := serve(t, gateway.Options{Routes: []gateway.Route{{Method: "POST", Path: "/echo/{name}", Function: echo(t)}}})
	req := newRequest(t, "POST", srv.URL+"/echo/bob?a=1&a=2&b=x%20y", []byte(`{"hi":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("X-Custom", "v1")
	req.Header.Add("X-Custom", "v2")
	req.Header.Set("User-Agent", "gateway-test")
	req.Header.Set("Cookie", "c1=a; c2=b")
	resp, body := do(t, req)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("X-Echo"); got != "1" {
		t.Errorf("x-echo = %q", got)
	}
	if got := resp.Header.Values("X-Multi"); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("x-multi = %v", got)
	}
	if got := resp.Header.Values("Set-Cookie"); !reflect.DeepEqual(got, []string{"c1=v1; Path=/", "c2=v2"}) {
		t.Errorf("set-cookie = %v", got)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatalf("event %s: %v", body, err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"version", ev.Version, "2.0"},
		{"routeKey", ev.RouteKey, "POST /echo/{name}"},
		{"rawPath", ev.RawPath, "/echo/bob"},
		{"rawQueryString", ev.RawQueryString, "a=1&a=2&b=x%20y"},
		{"cookies", ev.Cookies, []string{"c1=a", "c2=b"}},
		{"x-custom", ev.Headers["x-custom"], "v1,v2"},
		{"content-type", ev.Headers["content-type"], "application/json"},
		{"host", ev.Headers["host"], strings.TrimPrefix(srv.URL, "http://")},
		{"cookie header removed", ev.Headers["cookie"], ""},
		{"query", ev.QueryStringParameters, map[string]string{"a": "1,2", "b": "x y"}},
		{"pathParameters", ev.PathParameters, map[string]string{"name": "bob"}},
		{"body", ev.Body, `{"hi":1}`},
		{"isBase64Encoded", ev.IsBase64Encoded, false},
		{"method", ev.RequestContext.HTTP.Method, "POST"},
		{"path", ev.RequestContext.HTTP.Path, "/echo/bob"},
		{"protocol", ev.RequestContext.HTTP.Protocol, "HTTP/1.1"},
		{"sourceIp", ev.RequestContext.HTTP.SourceIP, "127.0.0.1"},
		{"userAgent", ev.RequestContext.HTTP.UserAgent, "gateway-test"},
		{"stage", ev.RequestContext.Stage, "$default"},
		{"apiId", ev.RequestContext.APIID, "local"},
		{"accountId", ev.RequestContext.AccountID, "123456789012"},
		{"domainName", ev.RequestContext.DomainName, "127.0.0.1"},
		{"requestId", ev.RequestContext.RequestID, resp.Header.Get("Apigw-Requestid")},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if d := time.Since(time.UnixMilli(ev.RequestContext.TimeEpoch)); d < 0 || d > time.Minute {
		t.Errorf("timeEpoch %d is not now", ev.RequestContext.TimeEpoch)
	}
	if _, err := time.Parse("02/Jan/2006:15:04:05 -0700", ev.RequestContext.Time); err != nil {
		t.Errorf("time %q: %v", ev.RequestContext.Time, err)
	}
}

func TestBodyEncoding(t *testing.T) {
	binary := []byte{0, 1, 2, 255, 'x'}
	tests := []struct {
		name        string
		force       bool
		contentType string
		body        []byte
		wantBase64  bool
	}{
		{"json is text", false, "application/json; charset=utf-8", []byte(`{"a":1}`), false},
		{"form is text", false, "application/x-www-form-urlencoded", []byte("a=1&b=2"), false},
		{"text/plain is text", false, "text/plain", []byte("hello"), false},
		{"octet-stream is binary", false, "application/octet-stream", binary, true},
		{"no content type is binary", false, "", binary, true},
		{"forced base64", true, "application/json", []byte(`{"a":1}`), true},
	}
	fn := echo(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, gateway.Options{ForceBase64: tc.force, Routes: []gateway.Route{{Method: "POST", Path: "/echo", Function: fn}}})
			req := newRequest(t, "POST", srv.URL+"/echo", tc.body)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, body := do(t, req)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			var ev events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(body, &ev); err != nil {
				t.Fatal(err)
			}
			got := []byte(ev.Body)
			if ev.IsBase64Encoded {
				var err error
				if got, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
					t.Fatal(err)
				}
			}
			if ev.IsBase64Encoded != tc.wantBase64 || !bytes.Equal(got, tc.body) {
				t.Errorf("isBase64Encoded=%v body=%q, want %v %q", ev.IsBase64Encoded, got, tc.wantBase64, tc.body)
			}
		})
	}
}

func TestResponsesAndErrors(t *testing.T) {
	srv := serve(t, gateway.Options{Routes: []gateway.Route{{Method: "ANY", Path: "/echo", Function: echo(t)}}})
	tests := []struct {
		name        string
		method, url string
		body        []byte
		status      int
		contentType string
		want        []byte
	}{
		{"binary response", "GET", "/echo?do=binary", nil, 201, "application/octet-stream", []byte{0, 1, 2, 255}},
		{"not a response object", "GET", "/echo?do=raw", nil, 200, "application/json", []byte(`{"hello":"world"}`)},
		{"function error", "GET", "/echo?do=error", nil, 500, "application/json", []byte(`{"message":"Internal Server Error"}`)},
		{"function crash", "GET", "/echo?do=exit", nil, 500, "application/json", []byte(`{"message":"Internal Server Error"}`)},
		{"function timeout", "GET", "/echo?do=sleep", nil, 503, "application/json", []byte(`{"message":"Service Unavailable"}`)},
		{"unknown route", "GET", "/other", nil, 404, "application/json", []byte(`{"message":"Not Found"}`)},
		{"body over 10 MB", "POST", "/echo", bytes.Repeat([]byte("x"), gateway.MaxBody+1), 413, "application/json", []byte(`{"message":"Request Entity Too Large"}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := newRequest(t, tc.method, srv.URL+tc.url, tc.body)
			req.Header.Set("Content-Type", "text/plain")
			resp, body := do(t, req)
			if resp.StatusCode != tc.status || !bytes.Equal(body, tc.want) {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tc.status, tc.want)
			}
			if got := resp.Header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("content-type = %q, want %q", got, tc.contentType)
			}
		})
	}
}

func TestInvalidRoutes(t *testing.T) {
	for _, r := range []gateway.Route{
		{Method: "GET", Path: "no-slash", Function: &named{}},
		{Method: "GET", Path: "/a/{p+}/b", Function: &named{}},
		{Method: "", Path: "/a", Function: &named{}},
		{Method: "GET", Path: "/a"},
	} {
		if _, err := gateway.New(gateway.Options{Routes: []gateway.Route{r}}); err == nil {
			t.Errorf("route %+v accepted", r)
		}
	}
}
