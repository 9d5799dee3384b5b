package traces

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/webpage"
)

//go:embed templates
var files embed.FS

var (
	pages = webpage.MustTemplates(files, "templates/*.html")
	// style is the pages' stylesheet before each page's own bar rules.
	style = webpage.MustStyle(files, "templates/trace.css")
)

// PagePath is where the pages are mounted: PagePath lists the orders with
// spans, PagePath+"{session}" shows one order's.
const PagePath = "/_local/trace/"

// site names the local stack's pages in their frame.
const site = "42 Sisters AI · local stack"

// maxDepth caps the indentation, so a deep chain does not squeeze its
// names out of their column.
const maxDepth = 12

// Page serves the trace pages from Store: the waterfall of one order
// (every trace with a span whose oracle.order is the order's name, found
// by its name or its whole session id),
// ?format=json (or Accept: application/json) for its spans as data, a 404
// page for an order without spans, and the list of orders at PagePath.
type Page struct {
	Store *Store
}

type frame struct {
	Title   string
	Site    string
	Support string
	Style   template.CSS
	Script  template.JS
}

func (p Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the trace pages are read with GET", http.StatusMethodNotAllowed)
		return
	}
	order := strings.TrimPrefix(r.URL.Path, PagePath)
	asJSON := r.URL.Query().Get("format") == "json" || strings.Contains(r.Header.Get("Accept"), "application/json")
	if order == "" {
		p.index(w, asJSON)
		return
	}
	traces := p.Store.Order(order)
	if len(traces) == 0 {
		// The spans name the order by its name: the result page's whole
		// session id finds them through it.
		traces = p.Store.Order(oracle.ShortID(order))
	}
	if asJSON {
		if len(traces) == 0 {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no span has %s %q", OrderAttribute, order)})
			return
		}
		out := orderJSON{Order: order, Spans: []Span{}}
		for _, t := range traces {
			out.Spans = append(out.Spans, t.Spans...)
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	if len(traces) == 0 {
		render(w, http.StatusNotFound, "missing.html", style, missingView{frame: newFrame("No trace of this order"), Order: order, Kept: p.Store.limits.Traces})
		return
	}
	v, rules := waterfall(order, traces)
	s := webpage.NewAsset(style.Text + "\n" + rules)
	v.frame = newFrame("Trace of " + order)
	v.Style = template.CSS(s.Text)
	render(w, http.StatusOK, "trace.html", s, v)
}

// orderJSON is ?format=json: every span of the order's traces, trace by
// trace (oldest first), each by start time.
type orderJSON struct {
	Order string `json:"order"`
	Spans []Span `json:"spans"`
}

func (p Page) index(w http.ResponseWriter, asJSON bool) {
	orders := p.Store.Orders()
	if asJSON {
		type entry struct {
			Order  string `json:"order"`
			Traces int    `json:"traces"`
			Spans  int    `json:"spans"`
		}
		out := []entry{}
		for _, o := range orders {
			out = append(out, entry{o.Order, o.Traces, o.Spans})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	v := indexView{frame: newFrame("Traces"), Kept: p.Store.limits.Traces}
	for _, o := range orders {
		v.Orders = append(v.Orders, indexEntry{OrderSummary: o, Started: clock(o.Start)})
	}
	render(w, http.StatusOK, "index.html", style, v)
}

type missingView struct {
	frame
	Order string
	Kept  int
}

type indexView struct {
	frame
	Orders []indexEntry
	Kept   int
}

type indexEntry struct {
	OrderSummary
	Started string
}

type traceView struct {
	frame
	Order     string
	SpanCount int
	Traces    []traceRows
}

type traceRows struct {
	ID      string
	Started string
	Total   string
	Rows    []row
}

type row struct {
	Span
	RowID      string
	Offset     string
	Duration   string
	Failed     bool
	Orphan     bool
	Attributes []attribute
}

type attribute struct {
	Key   string
	Value string
}

// waterfall lays out each trace: its spans depth first from the roots
// (children by start time), each bar placed and sized on the trace's own
// axis, from its first span's start to its last span's end. It returns
// the view and the stylesheet rules that place the rows' bars and indent
// their names.
func waterfall(order string, traces []Trace) (traceView, string) {
	v := traceView{Order: order}
	var rules strings.Builder
	n := 0
	for _, t := range traces {
		v.SpanCount += len(t.Spans)
		first, last := t.Spans[0].Start, t.Spans[0].Start
		byID := map[string]bool{}
		children := map[string][]Span{}
		for _, s := range t.Spans {
			first, last = min(first, s.Start), max(last, s.Start, s.End)
			byID[s.SpanID] = true
		}
		var roots []Span
		for _, s := range t.Spans { // by start time already
			if s.ParentSpanID != "" && byID[s.ParentSpanID] && s.ParentSpanID != s.SpanID {
				children[s.ParentSpanID] = append(children[s.ParentSpanID], s)
			} else {
				roots = append(roots, s)
			}
		}
		total := max(last-first, 1)
		tr := traceRows{ID: t.ID, Started: clock(first), Total: duration(last - first)}
		seen := map[string]bool{}
		var visit func(s Span, depth int)
		visit = func(s Span, depth int) {
			if seen[s.SpanID] { // a cycle in what was received
				return
			}
			seen[s.SpanID] = true
			end := max(s.End, s.Start)
			left := float64(s.Start-first) / float64(total) * 100
			width := float64(end-s.Start) / float64(total) * 100
			r := row{Span: s, RowID: fmt.Sprintf("r%d", n), Offset: duration(s.Start - first), Duration: duration(end - s.Start),
				Failed: s.Status.Code == "error", Orphan: s.ParentSpanID != "" && !byID[s.ParentSpanID]}
			n++
			for _, k := range slices.Sorted(maps.Keys(s.Attributes)) {
				r.Attributes = append(r.Attributes, attribute{Key: k, Value: fmt.Sprint(s.Attributes[k])})
			}
			fmt.Fprintf(&rules, "#%s .name{padding-left:%.2frem}#%s .bar{left:%.4f%%;width:%.4f%%}\n",
				r.RowID, 0.5+float64(min(depth, maxDepth)), r.RowID, left, width)
			tr.Rows = append(tr.Rows, r)
			for _, c := range children[s.SpanID] {
				visit(c, depth+1)
			}
		}
		for _, s := range roots {
			visit(s, 0)
		}
		v.Traces = append(v.Traces, tr)
	}
	return v, rules.String()
}

// duration writes nanoseconds as the page shows them: ms to a tenth
// under a second, seconds to a hundredth above.
func duration(ns uint64) string {
	d := time.Duration(ns)
	if d < time.Second {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func clock(unixNano uint64) string {
	return time.Unix(0, int64(unixNano)).UTC().Format("2006-01-02 15:04:05.000 MST")
}

func newFrame(title string) frame {
	return frame{Title: title, Site: site, Support: oracle.SupportAddress, Style: template.CSS(style.Text)}
}

// render answers the page with the headers every page of the service
// carries, its CSP allowing exactly the stylesheet s and no script.
func render(w http.ResponseWriter, status int, name string, s webpage.Asset, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	resp := webpage.Response(status, webpage.CSP(s, nil), b.String())
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write([]byte(resp.Body))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
