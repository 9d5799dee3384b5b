package motoserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// A moto server is one Python process: one thread at a time runs, so it
// uses one core however many requests it has. Start runs moto as several
// processes, each answering its own services, behind one endpoint that
// hands every request to its service's process: DynamoDB's requests and S3's
// are then answered beside the rest's, on as many cores as there are, as in
// AWS. A request names its service in its SigV4 credential scope (the
// Authorization header, or a presigned URL's X-Amz-Credential).

// part is one process of the group and the services it answers.
type part struct {
	name     string
	services []string
}

// parts are the group's processes. Services that reach each other inside
// moto stay in one process: SNS delivers to SQS queues (SES's events reach
// the feedback queue that way), so they are in "rest" with SES and every
// other service; a DynamoDB transaction across tables is applied in its
// one process.
var parts = []part{
	{name: "dynamodb", services: []string{"dynamodb"}},
	{name: "s3", services: []string{"s3"}},
	{name: "rest"},
}

// rest is the index of the part that answers every other service.
const rest = 2

// partOf is the index of the part that answers service (a SigV4 service
// name or moto's backend name, which agree for these).
func partOf(service string) int {
	for i, p := range parts {
		for _, s := range p.services {
			if s == service {
				return i
			}
		}
	}
	return rest
}

var credential = regexp.MustCompile(`Credential=[^/,\s]+/[0-9]+/[^/]+/([a-z0-9-]+)/aws4_request`)

// serviceOf is the service a request is signed for, or "".
func serviceOf(r *http.Request) string {
	if m := credential.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		return m[1]
	}
	if c := r.URL.Query().Get("X-Amz-Credential"); c != "" {
		if f := strings.Split(c, "/"); len(f) == 5 {
			return f[3]
		}
	}
	return ""
}

// router is the group's endpoint.
type router struct {
	procs   []*Server // by part
	proxies []*httputil.ReverseProxy
	client  *http.Client
}

func newRouter(procs []*Server) (*router, error) {
	rt := &router{procs: procs, client: &http.Client{Transport: transport()}}
	for _, p := range procs {
		target, err := url.Parse(p.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("moto group: %w", err)
		}
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.Transport = transport()
		// SQS's long polls pass through as they come.
		proxy.FlushInterval = -1
		proxy.ErrorHandler = proxyError
		rt.proxies = append(rt.proxies, proxy)
	}
	return rt, nil
}

// transport keeps as many connections to a process open as the stack's
// functions use at once: Go's default of two idle ones a host would open
// (and moto start a thread for) a new connection for most requests.
func transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = 256
	return t
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == "/moto-api/data.json" && r.Method == http.MethodGet:
		rt.dump(w, r)
	case strings.HasPrefix(path, "/moto-api/") && path != "/moto-api/" && r.Method != http.MethodGet:
		// moto's controls (reset, seeding, configuration) apply to every
		// process.
		rt.everyone(w, r)
	case path == cpuPath:
		rt.cpu(w, r)
	case path == gcPath:
		rt.gc(w, r)
	case path == locksPath && r.Method == http.MethodGet:
		rt.locks(w, r)
	case strings.HasPrefix(path, locksPath+"/"):
		service, _, _ := strings.Cut(r.URL.Query().Get("scope"), "/")
		rt.proxies[partOf(service)].ServeHTTP(w, r)
	default:
		// The dashboard, SES's raw messages (rest) and every AWS request.
		rt.proxies[partOf(serviceOf(r))].ServeHTTP(w, r)
	}
}

// proxyError answers 502 when a process did not answer, as moto's server
// would fail; a request its client gave up on (a long poll cancelled as
// the stack stops) is not worth a line.
func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() == nil {
		log.Printf("moto group: %s %s: %v", r.Method, r.URL.Path, err)
	}
	w.WriteHeader(http.StatusBadGateway)
}

const (
	cpuPath   = "/_oracle/cpu"
	gcPath    = "/_oracle/gc"
	locksPath = "/_oracle/locks"
)

// fanOut sends a request to every process and returns their answers'
// bodies, by part.
func (rt *router) fanOut(r *http.Request, body []byte) ([][]byte, error) {
	out := make([][]byte, len(rt.procs))
	errs := make([]error, len(rt.procs))
	var wg sync.WaitGroup
	for i, p := range rt.procs {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(r.Context(), r.Method, p.Endpoint+r.URL.RequestURI(), bytes.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header = r.Header.Clone()
			resp, err := rt.client.Do(req)
			if err != nil {
				errs[i] = fmt.Errorf("moto's %s process: %w", parts[i].name, err)
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("moto's %s process: %w", parts[i].name, err)
			case resp.StatusCode >= 300:
				errs[i] = fmt.Errorf("moto's %s process: %s %s: %d %s", parts[i].name, r.Method, r.URL.Path, resp.StatusCode, b)
			default:
				out[i] = b
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func (rt *router) everyone(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := rt.fanOut(r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out[rest])
}

// dump is moto's state dump, {service: {model: [instances]}}, each
// service's from the process that answers it.
func (rt *router) dump(w http.ResponseWriter, r *http.Request) {
	out, err := rt.fanOut(r, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	merged := map[string]json.RawMessage{}
	for i, b := range out {
		var services map[string]json.RawMessage
		if err := json.Unmarshal(b, &services); err != nil {
			http.Error(w, fmt.Sprintf("moto's %s process's state: %v", parts[i].name, err), http.StatusBadGateway)
			return
		}
		for service, state := range services {
			if partOf(service) == i {
				merged[service] = state
			}
		}
	}
	writeJSON(w, merged)
}

// cpu is serve.py's CPU report summed over the processes, with each
// process's own under "processes".
func (rt *router) cpu(w http.ResponseWriter, r *http.Request) {
	out, err := rt.fanOut(r, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	type kind struct {
		Count int     `json:"count"`
		CPU   float64 `json:"cpu_s"`
	}
	type report struct {
		ProcessCPU float64            `json:"process_cpu_s"`
		Requests   map[string]kind    `json:"requests"`
		Processes  map[string]float64 `json:"processes,omitempty"`
	}
	sum := report{Requests: map[string]kind{}, Processes: map[string]float64{}}
	for i, b := range out {
		var one report
		if err := json.Unmarshal(b, &one); err != nil {
			http.Error(w, fmt.Sprintf("moto's %s process's CPU: %v", parts[i].name, err), http.StatusBadGateway)
			return
		}
		sum.ProcessCPU += one.ProcessCPU
		sum.Processes[parts[i].name] = one.ProcessCPU
		for k, v := range one.Requests {
			s := sum.Requests[k]
			s.Count += v.Count
			s.CPU += v.CPU
			sum.Requests[k] = s
		}
	}
	writeJSON(w, sum)
}

// gc is each process's collector report (serve.py's GET /_oracle/gc),
// by part: {"processes": {"dynamodb": {...}, ...}}.
func (rt *router) gc(w http.ResponseWriter, r *http.Request) {
	out, err := rt.fanOut(r, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	procs := map[string]json.RawMessage{}
	for i, b := range out {
		procs[parts[i].name] = b
	}
	writeJSON(w, map[string]any{"processes": procs})
}

// locks is serve.py's lock gauges of every process (their scopes are
// apart: dynamodb/..., s3/..., "*").
func (rt *router) locks(w http.ResponseWriter, r *http.Request) {
	out, err := rt.fanOut(r, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	merged := map[string]map[string]int{"held": {}, "waiting": {}}
	for i, b := range out {
		var one map[string]map[string]int
		if err := json.Unmarshal(b, &one); err != nil {
			http.Error(w, fmt.Sprintf("moto's %s process's locks: %v", parts[i].name, err), http.StatusBadGateway)
			return
		}
		for gauge, scopes := range one {
			for scope, n := range scopes {
				if merged[gauge] == nil {
					merged[gauge] = map[string]int{}
				}
				merged[gauge][scope] += n
			}
		}
	}
	writeJSON(w, merged)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// startGroup starts a process for each part on ports of its own, and the
// router on 127.0.0.1:port.
func startGroup(ctx context.Context, port int) (*Server, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("start moto: listen: %w", err)
	}
	procs := make([]*Server, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i := range parts {
		wg.Go(func() {
			p, err := FreePort()
			if err == nil {
				procs[i], err = startProcess(ctx, p)
			}
			if err != nil {
				errs[i] = fmt.Errorf("moto's %s process: %w", parts[i].name, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		ln.Close()
		for _, p := range procs {
			if p != nil {
				p.Stop()
			}
		}
		return nil, err
	}
	rt, err := newRouter(procs)
	if err != nil {
		ln.Close()
		for _, p := range procs {
			p.Stop()
		}
		return nil, err
	}
	srv := &http.Server{Handler: rt, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), procs: procs, router: srv}, nil
}
