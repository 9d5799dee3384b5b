package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/oracle"
)

// mcpPath is the MCP server's one address (Streamable HTTP, POST only).
const mcpPath = "/mcp"

// mcpVersion is the server's version in its implementation info.
const mcpVersion = "1.0.0"

// mcpState is the MCP server, made once per Handler on its first call:
// the SDK's handler, and the direct path to its tools (mcp_direct.go).
type mcpState struct {
	once    sync.Once
	handler http.Handler
	direct  directTools
}

// mcpRequest is what a tool's handler needs of the API Gateway request
// beneath it: the SDK hands the handler a context of its own, which keeps
// the request's values but neither its deadline nor its cancellation.
type mcpRequest struct {
	id       string // API Gateway's, for the audit record's name
	deadline time.Time
}

type mcpRequestKey struct{}

// serveMCP answers POST /mcp through the go-sdk's Streamable HTTP handler,
// stateless and with JSON answers (no SSE): the Lambda answers one request
// with one body. A browser's request from another site is refused before
// anything is read (DNS rebinding, cross-site calls); a request without an
// Origin is a program's, which has no ambient credentials to abuse.
func (h *Handler) serveMCP(ctx context.Context, req httpapi.Request) httpapi.Response {
	if origin := httpapi.Header(req, "Origin"); origin != "" && !h.ownOrigin(origin) {
		h.Log.InfoContext(ctx, "MCP request from a foreign origin refused")
		return mcpPlain(http.StatusForbidden, "Forbidden: this origin may not call the MCP server")
	}
	if req.RequestContext.HTTP.Method != http.MethodPost {
		resp := mcpPlain(http.StatusMethodNotAllowed, "Method Not Allowed: the MCP server is stateless and takes POST only")
		resp.Headers["Allow"] = http.MethodPost
		return resp
	}
	body, err := httpapi.Body(req, MaxBody)
	if err != nil {
		return httpapi.Error(ctx, h.Log, err)
	}
	info := mcpRequest{id: requestID(req)}
	if d, ok := ctx.Deadline(); ok {
		info.deadline = d
	}
	host := httpapi.Header(req, "Host")
	r, err := http.NewRequestWithContext(context.WithValue(ctx, mcpRequestKey{}, info), http.MethodPost, "https://"+host+mcpPath, bytes.NewReader(body))
	if err != nil {
		return httpapi.Error(ctx, h.Log, oracle.Wrap(oracle.CodeInvalid, err, "the request's Host is not a host name"))
	}
	r.Header = make(http.Header, len(req.Headers))
	for name, value := range req.Headers {
		r.Header.Set(name, value)
	}
	r.Host = host
	w := &recorder{header: http.Header{}}
	if !h.mcpServer().direct.serve(w, r, body) {
		h.mcpServer().handler.ServeHTTP(w, r)
	}
	return w.response()
}

// ownOrigin reports whether origin is the site's own (BASE_URL's). On a
// site served from this machine (the local stack) every loopback name of
// the same port is the site: a client on 127.0.0.1 reaches localhost.
func (h *Handler) ownOrigin(origin string) bool {
	site, err := url.Parse(h.BaseURL)
	if err != nil {
		return false
	}
	o, err := url.Parse(origin)
	if err != nil || o.Host == "" {
		return false
	}
	if strings.EqualFold(o.Scheme, site.Scheme) && strings.EqualFold(o.Host, site.Host) {
		return true
	}
	return loopback(site.Hostname()) && loopback(o.Hostname()) && o.Port() == site.Port() && strings.EqualFold(o.Scheme, site.Scheme)
}

func loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// mcpPlain is a refusal of the transport's, before any JSON-RPC is read.
func mcpPlain(status int, text string) httpapi.Response {
	return httpapi.Response{StatusCode: status, Body: text + "\n", Headers: map[string]string{
		"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
	}}
}

// mcpServer is the Streamable HTTP handler around the MCP server and the
// direct path to the same tools.
func (h *Handler) mcpServer() *mcpState {
	h.mcp.once.Do(func() {
		// The SDK's own lines are its warnings and errors: at INFO it says
		// every stateless request's session came and went.
		log := slog.New(atLeast{h.Log.Handler(), slog.LevelWarn})
		server := mcp.NewServer(&mcp.Implementation{Name: "oracle", Title: serviceName, Version: mcpVersion, WebsiteURL: h.BaseURL},
			&mcp.ServerOptions{Logger: log, Instructions: mcpInstructions})
		h.mcp.direct = directTools{}
		h.addTools(func(t *mcp.Tool, handler mcp.ToolHandler) {
			server.AddTool(t, onGrownStack(handler))
			h.mcp.direct[t.Name] = handler
		})
		h.mcp.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
			&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: log, MaxRequestBodyBytes: MaxBody})
	})
	return &h.mcp
}

// mcpInstructions tell a model how the tools fit together.
const mcpInstructions = "The Oracle gives a verdict (GREEN, AMBER, RED or NULL) on an idea or question. " +
	"oracle_quick_take, oracle_full_breakdown and oracle_strategy_session are paid in USDC over x402: " +
	"called without a payment, each answers what to pay; pay it in _meta[\"x402/payment\"] of the same call. " +
	"A verdict not ready in time comes back with an order_id: call oracle_result with it, at no cost."

// recorder is the SDK's answer, kept to become the Lambda's response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// Flush is a no-op: the answer leaves whole, with the Lambda's response.
func (r *recorder) Flush() {}

func (r *recorder) response() httpapi.Response {
	resp := httpapi.Response{StatusCode: r.status, Body: r.body.String(), Headers: map[string]string{}}
	if resp.StatusCode == 0 {
		resp.StatusCode = http.StatusOK
	}
	for name, values := range r.header {
		resp.Headers[name] = strings.Join(values, ", ")
	}
	resp.Headers["Cache-Control"] = "no-store"
	resp.Headers["X-Content-Type-Options"] = "nosniff"
	return resp
}

// atLeast passes on the records of level min and above.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (a atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= a.min && a.Handler.Enabled(ctx, l)
}

func (a atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{a.Handler.WithAttrs(attrs), a.min}
}

func (a atLeast) WithGroup(name string) slog.Handler {
	return atLeast{a.Handler.WithGroup(name), a.min}
}
