package main

import (
	"42sisters.ai/oracle/shared/webpage"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template/parse"
	"time"

	"42sisters.ai/oracle/infra/testkit"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
)

func newHandler() *Handler {
	return &Handler{Site: defaultSite, Support: defaultSupport, Polling: DefaultPolling, Log: obs.NewLogger(&bytes.Buffer{}, "ERROR")}
}

func get(t *testing.T, h *Handler, method, rawPath string, query map[string]string) httpapi.Response {
	t.Helper()
	resp, err := h.Handle(context.Background(), request(method, rawPath, query))
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawPath, err)
	}
	return resp
}

func TestRoutes(t *testing.T) {
	h := newHandler()
	cases := []struct {
		method, path string
		query        map[string]string
		status       int
		want         string // a fragment the body must hold
	}{
		{"GET", "/", nil, 200, `<form id="order"`},
		{"GET", "/", map[string]string{"cancelled": "1"}, 200, "Payment cancelled"},
		{"GET", "/oracle/result", map[string]string{"session_id": "cs_live_a1B2c3"}, 200, `data-state="pending"`},
		{"GET", "/oracle/result", map[string]string{"session_id": "cs_test_a1B2c3"}, 200, `data-state="pending"`},
		{"GET", "/oracle/result", nil, 400, `data-state="unknown"`},
		{"GET", "/oracle/result", map[string]string{"session_id": "cs_test_"}, 400, `data-state="unknown"`},
		{"GET", "/oracle/result", map[string]string{"session_id": "pi_123"}, 400, `data-state="unknown"`},
		{"GET", "/result/cs_live_a1B2c3", nil, 200, `data-state="pending"`},
		{"GET", "/result/cs_test_a1B2c3", map[string]string{"session_id": "cs_nope"}, 200, `data-state="pending"`},
		{"GET", "/result/cs_nope", nil, 400, `data-state="unknown"`},
		{"GET", "/result/", nil, 400, `data-state="unknown"`},
		{"GET", "/result/cs_test_a1B2c3/more", nil, 400, `data-state="unknown"`},
		{"PUT", "/result/cs_test_a1B2c3", nil, 405, "not supported"},
		{"GET", "/result", nil, 404, "Page not found"},
		{"GET", "/nowhere", nil, 404, "Page not found"},
		{"GET", "/oracle/result/", nil, 404, "Page not found"},
		{"GET", "/api/verdict", nil, 404, "Page not found"},
		{"POST", "/nowhere", nil, 404, "Page not found"},
		{"POST", "/", nil, 405, "not supported"},
		{"PUT", "/oracle/result", nil, 405, "not supported"},
		{"HEAD", "/", nil, 405, "not supported"},
	}
	for _, c := range cases {
		resp := get(t, h, c.method, c.path, c.query)
		if resp.StatusCode != c.status || !strings.Contains(resp.Body, c.want) {
			t.Errorf("%s %s %v: got %d, want %d with %q", c.method, c.path, c.query, resp.StatusCode, c.status, c.want)
		}
		if ct := resp.Headers["Content-Type"]; ct != "text/html; charset=utf-8" {
			t.Errorf("%s %s: Content-Type %q", c.method, c.path, ct)
		}
		if allow := resp.Headers["Allow"]; (c.status == 405) != (allow == "GET") {
			t.Errorf("%s %s: Allow %q on a %d", c.method, c.path, allow, c.status)
		}
	}
	if strings.Contains(get(t, h, "GET", "/", nil).Body, "Payment cancelled") {
		t.Error("the cancelled note shows without ?cancelled=1")
	}
}

// A well-formed session shows the pending state; a malformed one shows the
// unknown-link state and no other, without the script's help.
func TestResultPageStartsInTheRightState(t *testing.T) {
	h := newHandler()
	for id, visible := range map[string]string{"cs_test_a1B2c3": "pending", "": "unknown", "<b>": "unknown"} {
		body := get(t, h, "GET", "/oracle/result", map[string]string{"session_id": id}).Body
		for _, m := range regexp.MustCompile(`<section class="state" data-state="(\w+)"( hidden)?`).FindAllStringSubmatch(body, -1) {
			if shown := m[2] == ""; shown != (m[1] == visible) {
				t.Errorf("session %q: state %s shown=%v", id, m[1], shown)
			}
		}
	}
}

var (
	scriptTag = regexp.MustCompile(`(?s)<script>(.*?)</script>`)
	styleTag  = regexp.MustCompile(`(?s)<style>(.*?)</style>`)
)

func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// directives splits a CSP into its directives.
func directives(t *testing.T, policy string) map[string]string {
	t.Helper()
	d := map[string]string{}
	for _, part := range strings.Split(policy, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(part), " ")
		if _, dup := d[name]; dup {
			t.Errorf("directive %s twice in %q", name, policy)
		}
		d[name] = value
	}
	return d
}

func TestEveryResponseIsLockedDown(t *testing.T) {
	pages, err := renderAll()
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler()
	for _, c := range []struct{ method, path string }{{"GET", "/"}, {"GET", "/oracle/result"}, {"GET", "/x"}, {"DELETE", "/"}} {
		resp := get(t, h, c.method, c.path, map[string]string{"session_id": "cs_test_abc"})
		pages = append(pages, page{Name: c.method + " " + c.path, Status: resp.StatusCode, CSP: resp.Headers["Content-Security-Policy"], Body: resp.Body})
		for name, want := range map[string]string{
			"X-Content-Type-Options": "nosniff",
			"Referrer-Policy":        "no-referrer",
			"Cache-Control":          "no-store",
		} {
			if got := resp.Headers[name]; got != want {
				t.Errorf("%s %s: %s = %q, want %q", c.method, c.path, name, got, want)
			}
		}
	}
	for _, p := range pages {
		d := directives(t, p.CSP)
		for name, want := range map[string]string{
			"default-src":     "'none'",
			"connect-src":     "'self'",
			"img-src":         "'self' data:",
			"form-action":     "'self'",
			"base-uri":        "'none'",
			"frame-ancestors": "'none'",
		} {
			if d[name] != want {
				t.Errorf("%s: %s is %q, want %q", p.Name, name, d[name], want)
			}
		}
		if strings.Contains(p.CSP, "unsafe") {
			t.Errorf("%s: CSP allows something unsafe: %s", p.Name, p.CSP)
		}
		// Exactly the inline script and style the page has are allowed.
		scripts, styles := scriptTag.FindAllStringSubmatch(p.Body, -1), styleTag.FindAllStringSubmatch(p.Body, -1)
		if len(styles) != 1 || d["style-src"] != hashSource(styles[0][1]) {
			t.Errorf("%s: style-src %q does not match its one stylesheet", p.Name, d["style-src"])
		}
		switch {
		case len(scripts) > 1:
			t.Errorf("%s: %d scripts", p.Name, len(scripts))
		case len(scripts) == 1 && d["script-src"] != hashSource(scripts[0][1]):
			t.Errorf("%s: script-src %q does not match its script", p.Name, d["script-src"])
		case len(scripts) == 0 && d["script-src"] != "":
			t.Errorf("%s: script-src %q on a page without script", p.Name, d["script-src"])
		}
		// Nothing from elsewhere, and nothing inline the policy would block.
		for _, bad := range []string{"http://", "https://", " src=", " style=", "<link rel=\"stylesheet", "innerHTML", "insertAdjacentHTML", "document.write"} {
			if strings.Contains(p.Body, bad) {
				t.Errorf("%s: body contains %q", p.Name, bad)
			}
		}
		if m := regexp.MustCompile(`(?i)<[^>]*\son\w+=`).FindString(p.Body); m != "" {
			t.Errorf("%s: inline event handler %q", p.Name, m)
		}
		if !strings.Contains(p.Body, `<html lang="en">`) || !strings.Contains(p.Body, "<main") {
			t.Errorf("%s: no lang or main landmark", p.Name)
		}
	}
}

func TestAPageThatFailsToRenderIsA500WithTheSameHeaders(t *testing.T) {
	orig := pages
	t.Cleanup(func() { pages = orig })
	pages = template.Must(template.New("").Parse(`{{define "order.html"}}{{.Missing}}{{end}}`))
	var logs bytes.Buffer
	h := newHandler()
	h.Log = obs.NewLogger(&logs, "INFO")
	resp := get(t, h, "GET", "/", nil)
	if resp.StatusCode != http.StatusInternalServerError || resp.Body != internalError {
		t.Fatalf("got %d %q", resp.StatusCode, resp.Body)
	}
	if d := directives(t, resp.Headers["Content-Security-Policy"]); d["default-src"] != "'none'" || d["script-src"] != "" {
		t.Errorf("CSP %q", resp.Headers["Content-Security-Policy"])
	}
	if resp.Headers["X-Content-Type-Options"] != "nosniff" || !strings.Contains(logs.String(), "page not rendered") {
		t.Errorf("headers %v, logs %s", resp.Headers, logs.String())
	}
}

func TestOrderFormPricesComeFromTheTierTable(t *testing.T) {
	body := get(t, newHandler(), "GET", "/", nil).Body
	for _, tier := range oracle.Tiers() {
		label := regexp.MustCompile(`(?s)<label class="tier" for="tier-` + string(tier) + `">(.*?)</label>`).FindStringSubmatch(body)
		if label == nil {
			t.Fatalf("no label for %s", tier)
		}
		for _, want := range []string{
			`value="` + string(tier) + `"`,
			`<span class="tier-name">` + template.HTMLEscapeString(tier.Name()) + `</span>`,
			`<span class="tier-price">` + price(tier.PriceCents()) + `</span>`,
			tierAbout[tier],
		} {
			if !strings.Contains(label[1], want) {
				t.Errorf("%s label lacks %q:\n%s", tier, want, label[1])
			}
		}
	}
	if got := strings.Count(body, `type="radio" name="tier"`); got != len(oracle.Tiers()) {
		t.Errorf("%d radio buttons", got)
	}
	for cents, want := range map[int64]string{100: "C$1.00", 500: "C$5.00", 2500: "C$25.00", 1999: "C$19.99", 5: "C$0.05"} {
		if got := price(cents); got != want {
			t.Errorf("price(%d) = %q, want %q", cents, got, want)
		}
	}
}

func TestCounterStartsAtTheLongestQuery(t *testing.T) {
	body := get(t, newHandler(), "GET", "/", nil).Body
	if !strings.Contains(body, `data-max="`+strconv.Itoa(oracle.MaxQueryUnits)+`"`) {
		t.Error("the form does not carry oracle.MaxQueryUnits")
	}
	if !strings.Contains(body, `<p class="counter" id="counter">`+thousands(oracle.MaxQueryUnits)+` characters left</p>`) {
		t.Error("the counter does not start at the limit")
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 22540: "22,540", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestResultPageHasTheDimensionsInOrder(t *testing.T) {
	body := get(t, newHandler(), "GET", "/oracle/result", map[string]string{"session_id": "cs_test_abc"}).Body
	last := -1
	for _, d := range oracle.Dimensions {
		i := strings.Index(body, `data-dimension="`+d+`"`)
		if i <= last {
			t.Fatalf("%s is missing or out of order", d)
		}
		last = i
	}
}

// Every state the script can show has its section, and its words.
func TestResultPageHasEveryState(t *testing.T) {
	body := get(t, newHandler(), "GET", "/oracle/result", map[string]string{"session_id": "cs_test_abc"}).Body
	for _, state := range []string{"pending", "ready", "under_review", "dropped", "refunded", "expired", "failed", "unpaid", "unknown", "timeout"} {
		if n := strings.Count(body, `<section class="state" data-state="`+state+`"`); n != 1 {
			t.Errorf("state %s has %d sections", state, n)
		}
	}
	if !strings.Contains(body, "Analysis failed. Please contact "+defaultSupport+" for a refund.") {
		t.Error("the failed state lacks the refund text")
	}
}

func TestHostileInputIsNeverReflected(t *testing.T) {
	h := newHandler()
	hostile := []string{
		`<img src=x onerror=alert(1)><script>alert(2)</script>`,
		`"><svg onload=alert(1)>`,
		`javascript:alert(1)`,
		`cs_test_abc"><script>alert(1)</script>`,
	}
	for _, s := range hostile {
		for _, r := range []struct {
			path  string
			query map[string]string
		}{
			{"/", map[string]string{"cancelled": s, "tier": s}},
			{"/oracle/result", map[string]string{"session_id": s}},
			{"/" + s, nil},
			{"/oracle/result", map[string]string{"session_id": "cs_test_abc", "x": s}},
		} {
			body := get(t, h, "GET", r.path, r.query).Body
			if strings.Contains(body, s) || strings.Contains(body, "alert(") {
				t.Errorf("GET %q %v reflects the input", r.path, r.query)
			}
		}
	}
	// Settings are escaped too.
	h.Site = `<script>alert(1)</script>`
	body := get(t, h, "GET", "/", nil).Body
	if strings.Contains(body, h.Site) || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the site name is not escaped")
	}
}

func TestRenderAllCoversEveryPage(t *testing.T) {
	pages, err := renderAll()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	statuses := map[int]bool{}
	for _, p := range pages {
		if p.Body == "" || p.CSP == "" {
			t.Errorf("%s: empty", p.Name)
		}
		if seen[p.Name] {
			t.Errorf("%s twice", p.Name)
		}
		seen[p.Name] = true
		statuses[p.Status] = true
		if !strings.Contains(p.Body, defaultSite) || !strings.Contains(p.Body, `href="mailto:`+defaultSupport+`"`) {
			t.Errorf("%s: no site name or support address", p.Name)
		}
	}
	for _, name := range roots {
		found := false
		for _, p := range pages {
			found = found || strings.HasPrefix(p.Name, name+" ")
		}
		if !found {
			t.Errorf("renderAll renders no %s", name)
		}
	}
	for _, s := range []int{200, 400, 404, 405} {
		if !statuses[s] {
			t.Errorf("renderAll has no %d page", s)
		}
	}
}

// roots are the templates the handler executes.
var roots = []string{"order.html", "result.html", "error.html"}

func TestEveryTemplateIsUsed(t *testing.T) {
	// Every file under templates/ is a template reached from a page the
	// handler renders, or an asset a page inlines: no text no customer can
	// receive, none that an editor would change in vain.
	trees := map[string]*parse.Tree{}
	for _, tm := range pages.Templates() {
		if tm.Name() != "" && !strings.Contains(tm.Name(), "$htmltemplate") { // copies the escaper makes
			trees[tm.Name()] = tm.Tree
		}
	}
	unused, undefined := testkit.UnusedTemplates(trees, roots)
	for _, name := range unused {
		t.Errorf("template %s is never used", name)
	}
	for _, name := range undefined {
		t.Errorf("template %s is not defined", name)
	}
	inlined := func(text string) bool {
		return slices.ContainsFunc([]webpage.Asset{style, orderJS, resultJS}, func(a webpage.Asset) bool { return strings.Contains(a.Text, text) })
	}
	err := fs.WalkDir(files, "templates", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if path.Ext(p) == ".html" {
			if _, ok := trees[path.Base(p)]; !ok {
				t.Errorf("%s is in no template set", p)
			}
			return nil
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		if !inlined(string(b)) {
			t.Errorf("%s is inlined by no page", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEveryTierIsDescribed(t *testing.T) {
	for _, tier := range oracle.Tiers() {
		if tierAbout[tier] == "" {
			t.Errorf("%s has no description", tier)
		}
	}
	if got := tierAbout[oracle.TierFull]; !strings.Contains(got, "Stability, Turbulence, Change Rate, Completion and Curvature") {
		t.Errorf("the full tier's description does not list the dimensions: %q", got)
	}
	if len(meanings) != 4 {
		t.Errorf("%d verdict meanings", len(meanings))
	}
	for _, m := range meanings {
		if _, err := oracle.ParseVerdict(string(m.Verdict)); err != nil || m.Class != strings.ToLower(string(m.Verdict)) || m.Text == "" {
			t.Errorf("meaning %+v", m)
		}
	}
}

func TestResultPageCarriesThePolling(t *testing.T) {
	h := newHandler()
	h.Polling = Polling{First: 250 * time.Millisecond, Cap: 4 * time.Second, GiveUp: time.Minute}
	body := get(t, h, "GET", "/oracle/result", map[string]string{"session_id": "cs_test_abc"}).Body
	if !strings.Contains(body, `data-poll-first="250" data-poll-cap="4000" data-poll-limit="60000"`) {
		t.Error("the page does not carry the handler's polling")
	}
	// A handler built without polling still waits between asks.
	h.Polling = Polling{}
	body = get(t, h, "GET", "/oracle/result", map[string]string{"session_id": "cs_test_abc"}).Body
	if !strings.Contains(body, `data-poll-first="1000" data-poll-cap="10000" data-poll-limit="600000"`) {
		t.Error("a zero Polling does not fall back to DefaultPolling")
	}
}
