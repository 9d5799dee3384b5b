package main

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"text/template"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/tmplrun"
	"42sisters.ai/oracle/shared/x402"
)

// The discovery documents' paths: what an agent that knows only the
// domain reads to find the offers, their prices and how to call them.
const (
	WellKnownPath = "/.well-known/x402"
	OpenAPIPath   = "/openapi.json"
	LLMsPath      = "/llms.txt"
	IconPath      = "/icon.svg"
	// MCPPath is the MCP server's endpoint (Streamable HTTP, POST).
	MCPPath = "/mcp"
	// resultPath is where an agent polls for a verdict (the verdict
	// function serves it).
	resultPath = "/x402/result/"
)

// tool is one of the MCP server's tools, as the documents name it: a paid
// tier's, or the free read of a verdict by its id (tier empty).
type tool struct {
	Name string
	Tier oracle.Tier
}

// tools are the MCP server's tools (MCPTools and ResultTool) in the order
// the documents list them: by tier, then the free one.
var tools = func() []tool {
	var out []tool
	for _, tier := range oracle.Tiers() {
		for name, t := range MCPTools {
			if t == tier {
				out = append(out, tool{name, tier})
			}
		}
	}
	return append(out, tool{ResultTool, ""})
}()

// discoveryCache is how long a client or a CDN may keep a document: a
// price or a route changes with a deployment, and five minutes after it
// every reader has the new one.
const discoveryCache = "public, max-age=300"

//go:embed templates
var files embed.FS

// site is what the documents describe: the site's address and, with the
// rail on, the networks and wallet agents pay (payTo is public: every 402
// carries it).
type site struct {
	BaseURL  string
	PayTo    string // empty: the rail is off, and no x402 part is served
	Networks []x402.NetworkInfo
}

func (s site) rail() bool { return s.PayTo != "" && len(s.Networks) > 0 }

// document is one document as served: its bytes are made once.
type document struct {
	contentType string
	body        string
	etag        string
}

// Discovery serves the discovery documents, made once at cold start from
// the configuration: GET (and HEAD) /.well-known/x402 (with the rail on),
// /openapi.json, /llms.txt and /icon.svg. They hold no secret.
type Discovery struct {
	docs map[string]document
}

// NewDiscovery makes every document for s. An error is a defect of a
// template or of the code building a document: cold start fails on it.
func NewDiscovery(s site) (*Discovery, error) {
	d := &Discovery{docs: map[string]document{}}
	guide, err := newGuide(s)
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(openAPI(s, guide.instructions))
	if err != nil {
		return nil, fmt.Errorf("the OpenAPI document: %w", err)
	}
	d.add(OpenAPIPath, "application/json; charset=utf-8", string(spec))
	d.add(LLMsPath, "text/plain; charset=utf-8", guide.llms)
	icon, err := files.ReadFile("templates/icon.svg")
	if err != nil {
		return nil, fmt.Errorf("the icon: %w", err)
	}
	d.add(IconPath, "image/svg+xml", string(icon))
	if s.rail() {
		wk, err := json.Marshal(wellKnown(s, guide.instructions))
		if err != nil {
			return nil, fmt.Errorf("the x402 discovery document: %w", err)
		}
		d.add(WellKnownPath, "application/json; charset=utf-8", string(wk))
	}
	return d, nil
}

func (d *Discovery) add(path, contentType, body string) {
	sum := sha256.Sum256([]byte(body))
	d.docs[path] = document{contentType: contentType, body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

// Serve answers req when it is for a document, and reports whether it was:
// GET or HEAD answer it (304 when If-None-Match names it), any other
// method 405. A nil Discovery serves nothing.
func (d *Discovery) Serve(req httpapi.Request) (httpapi.Response, bool) {
	if d == nil {
		return httpapi.Response{}, false
	}
	doc, ok := d.docs[req.RawPath]
	if !ok {
		return httpapi.Response{}, false
	}
	headers := map[string]string{
		"Access-Control-Allow-Origin": "*",
		"Cache-Control":               discoveryCache,
		"ETag":                        doc.etag,
	}
	switch req.RequestContext.HTTP.Method {
	case http.MethodGet, http.MethodHead:
	default:
		return httpapi.Response{StatusCode: http.StatusMethodNotAllowed, Headers: map[string]string{
			"Allow": "GET, HEAD", "Access-Control-Allow-Origin": "*", "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store",
		}, Body: `{"error":"method not allowed"}`}, true
	}
	if matches(httpapi.Header(req, "If-None-Match"), doc.etag) {
		return httpapi.Response{StatusCode: http.StatusNotModified, Headers: headers}, true
	}
	headers["Content-Type"] = doc.contentType
	headers["X-Content-Type-Options"] = "nosniff"
	resp := httpapi.Response{StatusCode: http.StatusOK, Headers: headers}
	if req.RequestContext.HTTP.Method == http.MethodGet {
		resp.Body = doc.body
	}
	return resp, true
}

// matches reports whether an If-None-Match header names etag (RFC 9110's
// weak comparison: a W/ prefix is ignored).
func matches(header, etag string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == etag || tag == "*" {
			return true
		}
	}
	return false
}

// listing is one tier as the documents sell it.
type listing struct {
	Tier     oracle.Tier
	Name     string
	USDC     string // the x402 price, in USDC (USD)
	CAD      string // the card price
	Endpoint string // the x402 route's absolute URL
	Tool     string // the MCP tool that sells it
}

// listings are the three tiers, their prices read from oracle.Tier.
func listings(s site) []listing {
	var out []listing
	for _, t := range oracle.Tiers() {
		o := listing{Tier: t, Name: t.Name(), USDC: oracle.FormatUSDC(t.PriceUSDCAtomic()), CAD: cad(t.PriceCents()), Endpoint: s.BaseURL + routeOf(t)}
		for _, tl := range tools {
			if tl.Tier == t {
				o.Tool = tl.Name
			}
		}
		out = append(out, o)
	}
	return out
}

// routeOf is the x402 route that sells tier (Routes, read the other way).
func routeOf(tier oracle.Tier) string {
	for path, t := range Routes {
		if t == tier {
			return path
		}
	}
	panic(fmt.Sprintf("no x402 route sells %s", tier))
}

func cad(cents int64) string { return fmt.Sprintf("C$%d.%02d", cents/100, cents%100) }

// guideView is what the texts for people and agents are rendered from.
type guideView struct {
	Site       string
	Rail       bool
	Offers     []listing
	ChatPrice  string
	MaxQuery   int
	Networks   string
	MCP        string
	OpenAPI    string
	WellKnown  string
	ResultPoll string
	FreeTool   string
}

// guide is the rendered texts: llms.txt, and the short instructions the
// x402 document and the OpenAPI document carry.
type guide struct {
	llms         string
	instructions string
}

func newGuide(s site) (guide, error) {
	t, err := template.ParseFS(files, "templates/*.txt")
	if err != nil {
		return guide{}, fmt.Errorf("the discovery templates: %w", err)
	}
	set, err := tmplrun.New(t, nil, false)
	if err != nil {
		return guide{}, err
	}
	var names []string
	for _, n := range s.Networks {
		names = append(names, string(n.Network))
	}
	v := guideView{
		Site: s.BaseURL, Rail: s.rail(), Offers: listings(s), ChatPrice: cad(oracle.ChatPriceCents), MaxQuery: oracle.MaxQueryUnits,
		Networks: strings.Join(names, ", "), MCP: s.BaseURL + MCPPath, OpenAPI: s.BaseURL + OpenAPIPath,
		WellKnown: s.BaseURL + WellKnownPath, ResultPoll: s.BaseURL + resultPath + "{order_id}", FreeTool: tools[len(tools)-1].Name,
	}
	var g guide
	if g.llms, err = set.Execute("llms.txt", v); err != nil {
		return guide{}, fmt.Errorf("llms.txt: %w", err)
	}
	if g.instructions, err = set.Execute("instructions.txt", v); err != nil {
		return guide{}, fmt.Errorf("the instructions: %w", err)
	}
	g.instructions = strings.TrimSpace(g.instructions)
	return g, nil
}

// wellKnown is GET /.well-known/x402 in the format x402scan's crawler read
// (version 1, resources as absolute URLs, instructions for people), with
// the MCP server's tools in a field of our own: no crawler reads MCP tools
// from it yet.
func wellKnown(s site, instructions string) obj {
	var resources []string
	for _, o := range listings(s) {
		resources = append(resources, o.Endpoint)
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return obj{
		"version":      1,
		"resources":    resources,
		"instructions": instructions,
		"mcp":          obj{"url": s.BaseURL + MCPPath, "transport": "streamable-http", "tools": names},
		"openapi":      s.BaseURL + OpenAPIPath,
		"llmsTxt":      s.BaseURL + LLMsPath,
	}
}
