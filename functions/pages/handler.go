package main

import (
	"42sisters.ai/oracle/shared/webpage"
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/oracle"
)

// Handler serves GET / (the order form) and the result page, at
// GET /result/{session_id} (where the product spec puts it) and at
// GET /oracle/result?session_id=… (where Stripe's return and the emails
// link). Any other path is a 404 page and any other method a 405 page;
// every response carries the same security headers.
type Handler struct {
	Site    string // the company name in titles and the header
	Support string // the address customers are told to write to
	Polling Polling
	Log     *slog.Logger
}

// Polling is how the result page asks the verdict API: it waits First, then
// twice as long each time up to Cap, and stops with a message after GiveUp.
type Polling struct {
	First, Cap, GiveUp time.Duration
}

// DefaultPolling asks after 1 s, 2 s, 4 s, 8 s and then every 10 s, for
// about ten minutes: most verdicts are ready within a minute, and beyond ten
// the customer is better served by the email than by a spinning page.
var DefaultPolling = Polling{First: time.Second, Cap: 10 * time.Second, GiveUp: 10 * time.Minute}

// The defaults of the two settings (see loadConfig).
const (
	defaultSite    = "42 Sisters AI"
	defaultSupport = oracle.SupportAddress
)

//go:embed templates
var files embed.FS

// The templates and assets are part of the binary, so one that does not
// parse is a build defect that every test catches, not a run-time condition.
var (
	pages    = webpage.MustTemplates(files, "templates/*.html")
	style    = webpage.MustStyle(files, "templates/style.css")
	orderJS  = webpage.MustAsset(files, "templates/order.js")
	resultJS = webpage.MustAsset(files, "templates/result.js")
)

// page is one rendered page: what Handle answers and renderAll lists.
type page struct {
	Name   string // the template and the case, e.g. "result.html (malformed link)"
	Status int
	CSP    string
	Body   string
}

// frame is what the shared layout needs of every page.
type frame struct {
	Title   string
	Site    string
	Support string
	Style   template.CSS
	Script  template.JS
}

type tierView struct {
	Key   oracle.Tier
	Name  string
	Price string
	About string
}

type orderView struct {
	frame
	Tiers     []tierView
	Meanings  []meaning
	MaxUnits  int
	Left      string // the counter's first text
	Cancelled bool
}

type resultView struct {
	frame
	State      string // "pending" for a well-formed session id, else "unknown"
	Dimensions []string
	Meanings   []meaning
	Poll       struct{ First, Cap, GiveUp int64 } // milliseconds
}

type errorView struct {
	frame
	Heading string
	Message string
}

// meaning is a verdict token and what it tells the customer; the words are
// those the model is given (shared/prompt), so the page and the verdict
// agree.
type meaning struct {
	Verdict oracle.Verdict
	Class   string // its dot's CSS class suffix
	Text    string
}

var meanings = []meaning{
	{oracle.VerdictGreen, "green", "Proceed: the idea is sound as described."},
	{oracle.VerdictAmber, "amber", "Proceed with caution: it can work, but something important must be fixed or checked first."},
	{oracle.VerdictRed, "red", "Do not proceed: as described, it is likely to fail or to cost more than it returns."},
	{oracle.VerdictNull, "null", "Not enough to judge: the submission is too vague, too short or not something that can be judged."},
}

// tierAbout says what each tier adds; the prices and names come from the
// oracle package's table.
var tierAbout = map[oracle.Tier]string{
	oracle.TierQuick:    "A verdict with a one-sentence summary.",
	oracle.TierFull:     "The verdict and summary, plus a breakdown across five dimensions: " + list(oracle.Dimensions) + ".",
	oracle.TierStrategy: "Everything in the Full Breakdown, plus your highest-leverage next step, a different path to consider and three tests to run.",
}

// Handle answers one request; it never fails: a page that cannot be rendered
// is logged and answered with a plain 500 page.
func (h *Handler) Handle(ctx context.Context, req httpapi.Request) (httpapi.Response, error) {
	p, err := h.page(req)
	if err != nil {
		h.Log.ErrorContext(ctx, "page not rendered", "path", oracle.Clip(req.RawPath, 64), "error", err.Error())
		p = page{Status: http.StatusInternalServerError, CSP: webpage.CSP(style, nil), Body: internalError}
	}
	return webpage.Response(p.Status, p.CSP, p.Body), nil
}

// internalError is the answer when a template fails, which only a defect
// can cause: it needs no template itself.
const internalError = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Error</title></head>` +
	`<body><h1>Something went wrong</h1><p>Please try again in a moment.</p></body></html>`

// page routes a request to the page that answers it.
func (h *Handler) page(req httpapi.Request) (page, error) {
	var serve func(httpapi.Request) (page, error)
	switch {
	case req.RawPath == "/":
		serve = h.order
	case req.RawPath == "/oracle/result":
		serve = func(req httpapi.Request) (page, error) { return h.result(req.QueryStringParameters["session_id"]) }
	case strings.HasPrefix(req.RawPath, resultPath):
		serve = func(req httpapi.Request) (page, error) { return h.result(strings.TrimPrefix(req.RawPath, resultPath)) }
	default:
		return h.problem(http.StatusNotFound, "Page not found", "There is no page at this address.")
	}
	if req.RequestContext.HTTP.Method != http.MethodGet {
		return h.problem(http.StatusMethodNotAllowed, "This request is not supported", "This address shows a page; it does not accept anything sent to it.")
	}
	return serve(req)
}

// newFrame is the layout's data for a page titled title running script.
func (h *Handler) newFrame(title string, script *webpage.Asset) frame {
	f := frame{Title: title, Site: h.Site, Support: h.Support, Style: template.CSS(style.Text)}
	if script != nil {
		f.Script = template.JS(script.Text)
	}
	return f
}

func (h *Handler) order(req httpapi.Request) (page, error) {
	v := orderView{
		frame:     h.newFrame("Ask the Oracle", &orderJS),
		Meanings:  meanings,
		MaxUnits:  oracle.MaxQueryUnits,
		Left:      thousands(oracle.MaxQueryUnits) + " characters left",
		Cancelled: req.QueryStringParameters["cancelled"] == "1",
	}
	for _, t := range oracle.Tiers() {
		v.Tiers = append(v.Tiers, tierView{Key: t, Name: t.Name(), Price: price(t.PriceCents()), About: tierAbout[t]})
	}
	return render("order.html", http.StatusOK, &orderJS, v)
}

// resultPath is the result page's own path, before the session id.
const resultPath = "/result/"

// result renders the result page of session. A missing or malformed
// session id still gets the page, in its "unknown link" state and with
// status 400, so the customer reads an explanation rather than an error.
func (h *Handler) result(session string) (page, error) {
	v := resultView{
		frame:      h.newFrame("Your verdict", &resultJS),
		State:      "pending",
		Dimensions: oracle.Dimensions,
		Meanings:   meanings,
	}
	p := h.Polling
	if p.First <= 0 || p.Cap < p.First || p.GiveUp <= 0 {
		p = DefaultPolling // a page that polled without waiting would flood the verdict API
	}
	v.Poll.First, v.Poll.Cap, v.Poll.GiveUp = p.First.Milliseconds(), p.Cap.Milliseconds(), p.GiveUp.Milliseconds()
	status := http.StatusOK
	if !oracle.ValidSessionID(session) {
		v.State, status = "unknown", http.StatusBadRequest
	}
	return render("result.html", status, &resultJS, v)
}

func (h *Handler) problem(status int, heading, message string) (page, error) {
	return render("error.html", status, nil, errorView{frame: h.newFrame(heading, nil), Heading: heading, Message: message})
}

func render(name string, status int, script *webpage.Asset, data any) (page, error) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		return page{}, fmt.Errorf("render %s: %w", name, err)
	}
	return page{Name: name, Status: status, CSP: webpage.CSP(style, script), Body: b.String()}, nil
}

// price writes cents as the form shows prices, e.g. "C$1.00".
func price(cents int64) string { return fmt.Sprintf("C$%d.%02d", cents/100, cents%100) }

// thousands writes n with thousands separators, as the page's script does
// (Intl.NumberFormat("en-CA")), so the counter does not change on load.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// list joins names as a sentence does: "a, b and c".
func list(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
