package main

import (
	"42sisters.ai/oracle/infra/browsertest"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
)

// hostile is a submission that would run script if any page put it in the
// DOM as markup.
const hostile = `<img src=x onerror=alert(1)><script>alert(2)</script>`

// artifacts is where the screenshots go: test-artifacts/pages at the
// repository root (git-ignored), for a person to look at.
var artifacts = filepath.Join("..", "..", "test-artifacts", "pages")

// TestBrowser drives both pages in headless Chromium against stub checkout
// and verdict APIs, one browser for every subtest, one tab each.
func TestBrowser(t *testing.T) {
	api := newStubAPI()
	// Short polling, so the tests see pending, backoff and giving up in
	// a few seconds; the page reads these from the server as in production.
	h := &Handler{Site: defaultSite, Support: defaultSupport, Log: obs.NewLogger(io.Discard, "ERROR"),
		Polling: Polling{First: 50 * time.Millisecond, Cap: 200 * time.Millisecond, GiveUp: 2 * time.Second}}
	mux := http.NewServeMux()
	mux.Handle("/api/", api)
	mux.HandleFunc("GET /stub-stripe/pay", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `<!DOCTYPE html><html lang="en"><title>Pay</title><h1 id="stub-pay">Stub payment page</h1></html>`)
	})
	mux.Handle("/", lambdaHTTP(h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	api.base = srv.URL

	// The flags keep Chromium off the network it would otherwise try to
	// reach in the background (this and CI machines have none), which can
	// stall it; the profile is fresh each run.
	browser := browsertest.Start(t)
	s := &suite{browser: browser, url: srv.URL, api: api}

	t.Run("order form", s.orderForm)
	t.Run("order form on a phone", s.orderFormPhone)
	t.Run("order form checks before calling the API", s.orderValidation)
	t.Run("order form submits, redirects and keeps the draft on cancel", s.orderSubmit)
	t.Run("order form shows API and network errors", s.orderErrors)
	t.Run("result verdicts", s.verdicts)
	t.Run("result on a phone", s.verdictPhone)
	t.Run("result at its own path", s.atItsPath)
	t.Run("result pending, giving up and checking again", s.pendingTimeout)
	t.Run("result keeps polling through server trouble", s.trouble)
	t.Run("result states", s.states)
	t.Run("result of a regenerated verdict", s.regenerated)
	t.Run("result says when the email was not delivered", s.undelivered)
	t.Run("result shows hostile text as text", s.hostileText)
	t.Run("not found page", s.notFound)
}

type suite struct {
	browser context.Context
	url     string
	api     *stubAPI
}

// tab opens a new tab for one subtest (browsertest.Tab).
func (s *suite) tab(t *testing.T) context.Context {
	t.Helper()
	return browsertest.Tab(t, s.browser, 20*time.Second)
}

// ---------------------------------------------------------------- order form

func (s *suite) orderForm(t *testing.T) {
	ctx := s.tab(t)
	browsertest.Do(t, ctx, "load", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.ID("order")))
	type tier struct {
		Key, Name, Price, Label string
	}
	got := browsertest.Eval[[]tier](t, ctx, `[...document.querySelectorAll('input[name="tier"]')].map(i => ({
		Key: i.value,
		Name: i.closest('label').querySelector('.tier-name').textContent,
		Price: i.closest('label').querySelector('.tier-price').textContent,
		Label: i.labels[0].textContent.replace(/\s+/g, ' ').trim(),
	}))`)
	want := []string{"quick Quick Take C$1.00", "full Full Breakdown C$5.00", "strategy Strategy Session C$25.00"}
	if len(got) != len(want) {
		t.Fatalf("tiers %+v", got)
	}
	for i, g := range got {
		if g.Key+" "+g.Name+" "+g.Price != want[i] || !strings.HasPrefix(g.Label, g.Name+" "+g.Price) {
			t.Errorf("tier %d: %+v, want %s", i, g, want[i])
		}
	}

	// The counter counts UTF-16 units, as the API does: an emoji is two.
	max := oracle.MaxQueryUnits
	left := func(n int) string { return thousands(n) + " characters left" }
	if c := browsertest.Text(t, ctx, "#counter"); c != left(max) {
		t.Errorf("counter starts at %q", c)
	}
	browsertest.Do(t, ctx, "type", chromedp.SendKeys(chromedp.ID("query"), "abc"))
	if c := browsertest.Text(t, ctx, "#counter"); c != left(max-3) {
		t.Errorf("after abc: %q, want %q", c, left(max-3))
	}
	browsertest.Do(t, ctx, "insert an emoji", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, input.InsertText, input.InsertTextParams{Text: "😀"})
		return err
	}))
	if c := browsertest.Text(t, ctx, "#counter"); c != left(max-5) {
		t.Errorf("after an emoji: %q, want %q", c, left(max-5))
	}
	if v := browsertest.Eval[string](t, ctx, `document.getElementById('query').value`); v != "abc😀" {
		t.Errorf("query %q", v)
	}
	// Labels are wired: clicking the words selects the tier.
	browsertest.Do(t, ctx, "choose", chromedp.Click(chromedp.CSS(`label[for="tier-full"] .tier-name`)))
	if !browsertest.Eval[bool](t, ctx, `document.getElementById('tier-full').checked`) {
		t.Error("clicking the label did not choose the tier")
	}
	browsertest.FitsWidth(t, ctx)
	browsertest.Accessible(t, ctx)
	browsertest.Screenshot(t, ctx, artifacts, "order-form")
}

func (s *suite) orderFormPhone(t *testing.T) {
	ctx := s.tab(t)
	browsertest.Do(t, ctx, "load", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile),
		chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.ID("order")))
	browsertest.FitsWidth(t, ctx)
	browsertest.Accessible(t, ctx)
	browsertest.Screenshot(t, ctx, artifacts, "order-form-375")
}

func (s *suite) orderValidation(t *testing.T) {
	ctx := s.tab(t)
	before := s.api.checkouts()
	browsertest.Do(t, ctx, "load", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.ID("order")))
	submit := func(want string) {
		t.Helper()
		browsertest.Do(t, ctx, "submit", chromedp.Click(chromedp.ID("submit")))
		if got := browsertest.Text(t, ctx, "#form-message"); got != want {
			t.Errorf("message %q, want %q", got, want)
		}
	}
	submit("Choose a tier.")
	browsertest.Do(t, ctx, "choose", chromedp.Click(chromedp.ID("tier-quick")))
	submit("Describe your idea or question.")
	if f := browsertest.Eval[string](t, ctx, `document.activeElement.id`); f != "query" {
		t.Errorf("focus on %q, want the query", f)
	}
	// Only invisible characters: empty to the form as to the server
	// (oracle.Blank), which would answer 400.
	browsertest.Do(t, ctx, "invisible", chromedp.Evaluate[chromedp.Void](
		`(q => { q.value = '\u200b\u200d\ufeff \u2060\u3164\u0301'; q.dispatchEvent(new Event('input')); })(document.getElementById('query'))`))
	submit("Describe your idea or question.")
	// One unit over: a paste the counter and the check both see.
	browsertest.Do(t, ctx, "overfill", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`(q => { q.value = 'x'.repeat(%d); q.dispatchEvent(new Event('input')); })(document.getElementById('query'))`, oracle.MaxQueryUnits+1)))
	if c := browsertest.Text(t, ctx, "#counter"); c != "1 character over the limit" {
		t.Errorf("counter %q", c)
	}
	submit("Your question is too long: shorten it by 1 character.")
	if inv := browsertest.Eval[string](t, ctx, `document.getElementById('query').getAttribute('aria-invalid')`); inv != "true" {
		t.Errorf("aria-invalid %q", inv)
	}
	browsertest.Do(t, ctx, "shorten", chromedp.Evaluate[chromedp.Void](
		`(q => { q.value = 'Open a bakery'; q.dispatchEvent(new Event('input')); })(document.getElementById('query'))`),
		chromedp.SendKeys(chromedp.ID("referral"), "not valid!"))
	submit("A referral code has at most 64 letters, digits, dashes and underscores.")
	browsertest.Screenshot(t, ctx, artifacts, "order-invalid")
	if s.api.checkouts() != before {
		t.Error("the API was called for a form the page should have refused")
	}
}

func (s *suite) orderSubmit(t *testing.T) {
	ctx := s.tab(t)
	browsertest.Do(t, ctx, "fill", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.ID("order")),
		chromedp.Click(chromedp.ID("tier-strategy")),
		chromedp.SendKeys(chromedp.ID("query"), "Turn the garage into a pottery studio"),
		chromedp.SendKeys(chromedp.ID("referral"), "HOLD"),
		chromedp.Click(chromedp.ID("submit")))
	// The stub holds the answer, so the page is seen mid-flight.
	browsertest.Do(t, ctx, "busy", chromedp.WaitReady(chromedp.CSS(`#submit:disabled`)))
	if got := browsertest.Text(t, ctx, "#form-message"); got != "Taking you to secure payment…" {
		t.Errorf("message while submitting %q", got)
	}
	browsertest.Screenshot(t, ctx, artifacts, "order-submitting")
	s.api.releaseCheckout()
	browsertest.Do(t, ctx, "redirect", chromedp.WaitVisible(chromedp.ID("stub-pay")))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != s.url+"/stub-stripe/pay" {
		t.Errorf("redirected to %q", loc)
	}
	req := s.api.lastCheckout()
	if req.ContentType != "application/json" || req.Body["tier"] != "strategy" || req.Body["query"] != "Turn the garage into a pottery studio" || req.Body["referral_code"] != "HOLD" {
		t.Errorf("checkout request %+v", req)
	}

	// Stripe's cancel link brings the customer back: a gentle note, and
	// the form as they left it.
	browsertest.Do(t, ctx, "cancel", chromedp.Navigate(s.url+"/?cancelled=1"), chromedp.WaitVisible(chromedp.ID("order")))
	if note := browsertest.Text(t, ctx, ".note"); !strings.HasPrefix(note, "Payment cancelled") {
		t.Errorf("note %q", note)
	}
	type form struct {
		Tier, Query, Referral string
	}
	f := browsertest.Eval[form](t, ctx, `({Tier: document.getElementById('order').elements.tier.value,
		Query: document.getElementById('query').value, Referral: document.getElementById('referral').value})`)
	if f != (form{"strategy", "Turn the garage into a pottery studio", "HOLD"}) {
		t.Errorf("draft not restored: %+v", f)
	}
	browsertest.Screenshot(t, ctx, artifacts, "order-cancelled")
}

func (s *suite) orderErrors(t *testing.T) {
	ctx := s.tab(t)
	browsertest.Do(t, ctx, "fill", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.ID("order")),
		chromedp.Click(chromedp.ID("tier-quick")),
		chromedp.SendKeys(chromedp.ID("query"), "Sell umbrellas in the desert"),
		chromedp.SendKeys(chromedp.ID("referral"), "ERROR"),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitEnabled(chromedp.ID("submit")))
	if got := browsertest.Text(t, ctx, "#form-message"); got != "Query is too long: at most 22540 characters." {
		t.Errorf("API error shown as %q", got)
	}
	browsertest.Screenshot(t, ctx, artifacts, "order-api-error")

	browsertest.Do(t, ctx, "network failure", chromedp.SetValue(chromedp.ID("referral"), "DROP"),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitEnabled(chromedp.ID("submit")))
	if got := browsertest.Text(t, ctx, "#form-message"); got != "We could not reach the payment service. Check your connection and try again." {
		t.Errorf("network failure shown as %q", got)
	}
	if live := browsertest.Eval[string](t, ctx, `document.getElementById('form-message').getAttribute('aria-live')`); live == "" {
		t.Error("the message region is not aria-live")
	}
}

// ---------------------------------------------------------------- result page

// shown is what the result page shows once ready.
type shown struct {
	State, Announce, Tier, Word, Colour, Summary, Query, Retention string
	Disclaimer, Original, OriginalColour                           string
	Regenerated, Before, BeforeColour                              string
	Adjacent                                                       bool // the word sits right of its dot
	Meanings                                                       []string
	Breakdown                                                      bool
	Dimensions                                                     []dimensionShown
	Strategy                                                       bool
	Next, Alternative                                              string
	Tests                                                          []string

	Undelivered      string // the notice that the email did not arrive, when it is rendered
	UndeliveredAbove bool   // it sits above the verdict
}

type dimensionShown struct {
	Name, Word, Colour, Analysis string
	Adjacent                     bool
}

const readShown = `(() => {
	const $ = (s, r = document) => r.querySelector(s);
	const adjacent = v => {
		const a = $('.dot', v).getBoundingClientRect(), b = $('.word', v).getBoundingClientRect();
		return a.width > 0 && b.width > 0 && b.left >= a.right && b.left - a.right < 24 && a.top < b.bottom && b.top < a.bottom;
	};
	const colour = v => getComputedStyle($('.dot', v)).backgroundColor;
	return {
		State: $('#main').dataset.state,
		Announce: $('#announce').textContent,
		Tier: $('#tier-name').textContent,
		Word: $('#verdict .word').textContent,
		Colour: colour($('#verdict')),
		Adjacent: adjacent($('#verdict')),
		Meanings: [...document.querySelectorAll('[data-meaning]')].filter(p => !p.hidden).map(p => p.dataset.meaning),
		Summary: $('#summary').textContent,
		Query: $('#query').textContent,
		Retention: $('#retention').hidden ? '' : $('#retention').textContent,
		Disclaimer: $('#divergence').hidden ? '' : $('#divergence').innerText.replace(/\s+/g, ' ').replace(/ ,/g, ',').trim(),
		Undelivered: $('#email-undelivered').getClientRects().length ? $('#email-undelivered').textContent : '',
		UndeliveredAbove: $('#email-undelivered').getBoundingClientRect().bottom <= $('#verdict').getBoundingClientRect().top,
		Regenerated: $('#regenerated').hidden ? '' : $('#regenerated').innerText.replace(/\s+/g, ' ').replace(/ ([,.])/g, '$1').trim(),
		Before: $('#before').hidden ? '' : $('#before-verdict .word').textContent,
		BeforeColour: $('#before').hidden ? '' : colour($('#before-verdict')),
		Original: $('#original').hidden ? '' : $('#original-verdict .word').textContent,
		OriginalColour: $('#original').hidden ? '' : colour($('#original-verdict')),
		Breakdown: !$('#breakdown').hidden,
		Dimensions: [...document.querySelectorAll('[data-dimension]')].filter(li => !li.hidden).map(li => ({
			Name: $('h3', li).textContent, Word: $('.word', li).textContent, Colour: colour(li),
			Analysis: $('.analysis', li).textContent, Adjacent: adjacent(li),
		})),
		Strategy: !$('#strategy').hidden,
		Next: $('#next-step').textContent,
		Alternative: $('#alternative').textContent,
		Tests: [...document.querySelectorAll('#tests li')].map(li => li.textContent),
	};
})()`

// colours are the dots' computed colours (SPEC_ORACLE_VERDICT_PIPELINE
// "Outputs 2": GREEN #34d399, AMBER #f5c842, RED #ff4444, NULL #555).
var colours = map[oracle.Verdict]string{
	oracle.VerdictGreen: "rgb(52, 211, 153)",
	oracle.VerdictAmber: "rgb(245, 200, 66)",
	oracle.VerdictRed:   "rgb(255, 68, 68)",
	oracle.VerdictNull:  "rgb(85, 85, 85)",
}

func (s *suite) openResult(t *testing.T, ctx context.Context, id string) shown {
	t.Helper()
	browsertest.Do(t, ctx, "load", chromedp.Navigate(s.url+"/oracle/result?session_id="+id),
		chromedp.WaitVisible(chromedp.CSS(`section[data-state="ready"]`)))
	return browsertest.Eval[shown](t, ctx, readShown)
}

func (s *suite) verdicts(t *testing.T) {
	for _, tier := range oracle.Tiers() {
		for _, v := range []oracle.Verdict{oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed, oracle.VerdictNull} {
			name := string(tier) + "-" + strings.ToLower(string(v))
			t.Run(name, func(t *testing.T) {
				id := s.api.addReady(tier, v, "Should I open a second bakery across town?")
				ctx := s.tab(t)
				got := s.openResult(t, ctx, id)
				checkVerdict(t, got, tier, v)
				if n := s.api.polls(id); n < 2 {
					t.Errorf("the page asked %d times; the first answer was pending", n)
				}
				browsertest.Screenshot(t, ctx, artifacts, "result-"+name)
			})
		}
	}
}

// atItsPath: the page at /result/{session_id} reads the session from its
// path and shows that session's verdict, as at /oracle/result?session_id=….
func (s *suite) atItsPath(t *testing.T) {
	id := s.api.addReady(oracle.TierFull, oracle.VerdictAmber, "Should I open a second bakery across town?")
	ctx := s.tab(t)
	browsertest.Do(t, ctx, "load", chromedp.Navigate(s.url+"/result/"+id),
		chromedp.WaitVisible(chromedp.CSS(`section[data-state="ready"]`)))
	checkVerdict(t, browsertest.Eval[shown](t, ctx, readShown), oracle.TierFull, oracle.VerdictAmber)
	if n := s.api.polls(id); n < 1 {
		t.Errorf("the page never asked the verdict API for %s", id)
	}
}

func checkVerdict(t *testing.T, got shown, tier oracle.Tier, v oracle.Verdict) {
	t.Helper()
	a := analysis(tier, v)
	if got.State != "ready" || got.Announce != "Your verdict is ready" {
		t.Errorf("state %q, announced %q", got.State, got.Announce)
	}
	if got.Word != string(v) || got.Colour != colours[v] || !got.Adjacent {
		t.Errorf("verdict %q in %s, beside its dot: %v; want %s in %s", got.Word, got.Colour, got.Adjacent, v, colours[v])
	}
	if got.Tier != tier.Name() || got.Summary != a.Summary || got.Query != "Should I open a second bakery across town?" {
		t.Errorf("tier %q, summary %q, query %q", got.Tier, got.Summary, got.Query)
	}
	if !slices.Equal(got.Meanings, []string{string(v)}) {
		t.Errorf("meanings shown %v", got.Meanings)
	}
	if got.Retention != "We keep your verdict for 90 days. Bookmark this page to come back to it." {
		t.Errorf("retention %q", got.Retention)
	}
	if got.Disclaimer != "" || got.Original != "" || got.Regenerated != "" {
		t.Errorf("a first verdict shows the divergence disclaimer %q (original %q) or the regeneration note %q", got.Disclaimer, got.Original, got.Regenerated)
	}
	if got.Undelivered != "" {
		t.Errorf("a verdict whose email is not known undelivered shows %q", got.Undelivered)
	}
	if deep := tier != oracle.TierQuick; got.Breakdown != deep || (deep && len(got.Dimensions) != len(oracle.Dimensions)) {
		t.Fatalf("breakdown shown %v with %d dimensions for %s", got.Breakdown, len(got.Dimensions), tier)
	}
	for i, d := range got.Dimensions {
		want := a.Breakdown[oracle.Dimensions[i]]
		if d.Name != oracle.Dimensions[i] || d.Word != string(want.Verdict) || d.Colour != colours[want.Verdict] || !d.Adjacent || d.Analysis != want.Analysis {
			t.Errorf("dimension %d: %+v, want %s %s %q", i, d, oracle.Dimensions[i], want.Verdict, want.Analysis)
		}
	}
	if got.Strategy != (tier == oracle.TierStrategy) {
		t.Fatalf("strategy shown %v for %s", got.Strategy, tier)
	}
	if got.Strategy && (got.Next != a.Strategy.NextStep || got.Alternative != a.Strategy.Alternative || !slices.Equal(got.Tests, a.Strategy.Tests)) {
		t.Errorf("strategy %q %q %q", got.Next, got.Alternative, got.Tests)
	}
}

func (s *suite) verdictPhone(t *testing.T) {
	id := s.api.addReady(oracle.TierStrategy, oracle.VerdictAmber, "Should I open a second bakery across town?")
	ctx := s.tab(t)
	browsertest.Do(t, ctx, "phone", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile))
	checkVerdict(t, s.openResult(t, ctx, id), oracle.TierStrategy, oracle.VerdictAmber)
	browsertest.FitsWidth(t, ctx)
	browsertest.Accessible(t, ctx)
	browsertest.Screenshot(t, ctx, artifacts, "result-strategy-amber-375")
}

// regenerated: every regenerated verdict says that it was prepared again,
// when and why, and a change of colour what was delivered before; the
// disclaimer shows only when the divergence owes the customer the notice,
// with the emailed verdict named as the one that stands when it is known
// (REGEN_CONSISTENCY invariant 4).
func (s *suite) regenerated(t *testing.T) {
	const note = "NOTE: Due to a technical condition, the verdict on this page may differ from the one you received by email. " +
		"Both are valid readings of your submission. If you have questions, write to " + defaultSupport + " and we will provide clarification."
	const again, at = "This verdict was prepared again on November 20, 2026.", "2026-11-20T12:00:00Z"
	const expired, corrupt = " The first one had passed the time we keep verdicts.", " The first one could not be read back from our records."
	tests := []struct {
		name        string
		extra       map[string]any
		regenerated string         // the note every regenerated verdict shows
		before      oracle.Verdict // the verdict delivered before, when the note names it
		original    oracle.Verdict // "" when the disclaimer's line naming it is hidden
		notice      bool
	}{
		{name: "unchanged", extra: map[string]any{"regen": true, "regen_reason": "expired", "regenerated_at": at, "divergence": "none"},
			regenerated: again + expired},
		{name: "minor", extra: map[string]any{"regen": true, "regen_reason": "expired", "regenerated_at": at, "divergence": "minor", "original_verdict": "AMBER"},
			regenerated: again + expired + " The verdict we delivered before was AMBER.", before: oracle.VerdictAmber},
		{name: "minor after corruption", extra: map[string]any{"regen": true, "regen_reason": "corrupt", "regenerated_at": at, "divergence": "minor", "original_verdict": "AMBER"},
			regenerated: again + corrupt + " The verdict we delivered before was AMBER.", before: oracle.VerdictAmber},
		{name: "significant", extra: map[string]any{"regen": true, "regen_reason": "expired", "regenerated_at": at, "divergence": "significant", "divergence_notice": true, "original_verdict": "GREEN"},
			regenerated: again + expired, original: oracle.VerdictGreen, notice: true},
		{name: "unknown original", extra: map[string]any{"regen": true, "regen_reason": "expired", "regenerated_at": at, "divergence": "unknown", "divergence_notice": true},
			regenerated: again + expired, notice: true},
		{name: "garbled original", extra: map[string]any{"regen": true, "divergence": "significant", "divergence_notice": true, "original_verdict": "<b>GREEN</b>"},
			regenerated: "This verdict was prepared again.", notice: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := readyAnswer(oracle.TierQuick, "Should I open a second bakery across town?", analysis(oracle.TierQuick, oracle.VerdictRed))
			maps.Copy(body, tc.extra)
			id := s.api.add(&script{first: answer{http.StatusOK, body}})
			ctx := s.tab(t)
			got := s.openResult(t, ctx, id)
			if got.Word != string(oracle.VerdictRed) {
				t.Errorf("the page shows %q, want the regenerated RED", got.Word)
			}
			if got.Regenerated != tc.regenerated {
				t.Errorf("regeneration note\n%q\nwant\n%q", got.Regenerated, tc.regenerated)
			}
			if got.Before != string(tc.before) || (tc.before != "" && got.BeforeColour != colours[tc.before]) {
				t.Errorf("delivered before %q in %q, want %q in %q", got.Before, got.BeforeColour, tc.before, colours[tc.before])
			}
			want := ""
			if tc.notice {
				want = note
				if tc.original != "" {
					want += " The verdict we emailed you, " + string(tc.original) + ", is the one that stands."
				}
			}
			if got.Disclaimer != want {
				t.Errorf("disclaimer\n%q\nwant\n%q", got.Disclaimer, want)
			}
			if got.Original != string(tc.original) || (tc.original != "" && got.OriginalColour != colours[tc.original]) {
				t.Errorf("original %q in %q, want %q in %q", got.Original, got.OriginalColour, tc.original, colours[tc.original])
			}
			browsertest.Screenshot(t, ctx, artifacts, "result-regenerated-"+strings.ReplaceAll(tc.name, " ", "-"))
		})
	}
}

// undelivered: when the verdict API says the email with the verdict did not
// reach the customer, the page says so above the verdict, which it shows
// all the same; any other answer shows no notice.
func (s *suite) undelivered(t *testing.T) {
	const notice = "We could not deliver the email with your verdict. It is kept here: bookmark this page."
	tests := []struct {
		name  string
		tier  oracle.Tier
		email any // the answer's email field; nil leaves it out
		phone bool
		want  bool
	}{
		{name: "undelivered", tier: oracle.TierStrategy, email: "undelivered", want: true},
		{name: "undelivered on a phone", tier: oracle.TierQuick, email: "undelivered", phone: true, want: true},
		{name: "not said", tier: oracle.TierQuick},
		{name: "another value", tier: oracle.TierFull, email: "delivered"},
		{name: "not a string", tier: oracle.TierQuick, email: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			query := "Should I open a second bakery across town?"
			body := readyAnswer(tc.tier, query, analysis(tc.tier, oracle.VerdictAmber))
			if tc.email != nil {
				body["email"] = tc.email
			}
			// Pending first, as a verdict arrives: the notice comes with it.
			id := s.api.add(&script{
				first:      answer{http.StatusAccepted, map[string]string{"status": "pending", "message": "Your verdict is being prepared."}},
				firstCount: 1,
				then:       answer{http.StatusOK, body},
			})
			ctx := s.tab(t)
			if tc.phone {
				browsertest.Do(t, ctx, "phone", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile))
			}
			got := s.openResult(t, ctx, id)
			want := ""
			if tc.want {
				want = notice
			}
			if got.Undelivered != want {
				t.Errorf("notice %q, want %q", got.Undelivered, want)
			}
			if tc.want && !got.UndeliveredAbove {
				t.Error("the notice is not above the verdict")
			}
			// The verdict is shown as ever.
			got.Undelivered = ""
			checkVerdict(t, got, tc.tier, oracle.VerdictAmber)
			browsertest.FitsWidth(t, ctx)
			browsertest.Accessible(t, ctx)
			browsertest.Screenshot(t, ctx, artifacts, "result-email-"+strings.ReplaceAll(tc.name, " ", "-"))
		})
	}
}

func (s *suite) pendingTimeout(t *testing.T) {
	id := s.api.addHeld(answer{http.StatusAccepted, map[string]string{"status": "pending", "message": "Your verdict is being prepared."}})
	ctx := s.tab(t)
	browsertest.Do(t, ctx, "load", chromedp.Navigate(s.url+"/oracle/result?session_id="+id),
		chromedp.WaitVisible(chromedp.CSS(`section[data-state="pending"] progress`)))
	if h := browsertest.Text(t, ctx, "#pending-title"); h != "Your verdict is being prepared…" {
		t.Errorf("pending heading %q", h)
	}
	if l := browsertest.Eval[string](t, ctx, `document.querySelector('progress').getAttribute('aria-label')`); l == "" {
		t.Error("the progress bar has no accessible name")
	}
	browsertest.Screenshot(t, ctx, artifacts, "result-pending")
	browsertest.Do(t, ctx, "give up", chromedp.WaitVisible(chromedp.CSS(`section[data-state="timeout"]`)))
	// Backoff: 50, 100, 200, 200 … ms within 2 s is about a dozen asks, not
	// the forty a fixed 50 ms would make.
	if n := s.api.polls(id); n < 4 || n > 16 {
		t.Errorf("%d polls in the give-up window", n)
	}
	browsertest.Screenshot(t, ctx, artifacts, "result-timeout")
	s.api.release(id)
	browsertest.Do(t, ctx, "check again", chromedp.Click(chromedp.ID("retry")),
		chromedp.WaitVisible(chromedp.CSS(`section[data-state="ready"]`)))
	checkVerdict(t, browsertest.Eval[shown](t, ctx, readShown), oracle.TierQuick, oracle.VerdictGreen)
}

func (s *suite) trouble(t *testing.T) {
	id := s.api.addHeld(answer{status: http.StatusBadGateway}) // not JSON, as a gateway answers
	ctx := s.tab(t)
	browsertest.Do(t, ctx, "load", chromedp.Navigate(s.url+"/oracle/result?session_id="+id),
		chromedp.WaitVisible(chromedp.ID("trouble")))
	browsertest.Screenshot(t, ctx, artifacts, "result-trouble")
	s.api.release(id)
	browsertest.Do(t, ctx, "recover", chromedp.WaitVisible(chromedp.CSS(`section[data-state="ready"]`)))
}

func (s *suite) states(t *testing.T) {
	refund := "Analysis failed. Please contact oracle@42sisters.ai for a refund."
	cases := []struct {
		name    string
		answer  answer
		path    string // instead of a stub session
		state   string
		heading string
		message string // the text the page shows, when it comes from the API
	}{
		{name: "failed", answer: answer{500, map[string]string{"status": "failed", "error": refund}}, state: "failed", heading: "We could not prepare your verdict", message: refund},
		{name: "dropped", answer: answer{200, map[string]string{"status": "dropped", "message": "We received your payment but could not process your submission."}}, state: "dropped", heading: "We could not process your submission", message: "We received your payment but could not process your submission."},
		{name: "under-review", answer: answer{202, map[string]string{"status": "under_review", "message": "Your verdict is under review. We will email you when it is ready."}}, state: "under_review", heading: "Your verdict is under review", message: "Your verdict is under review. We will email you when it is ready."},
		{name: "preparing-again", answer: answer{202, map[string]string{"status": "preparing_again", "message": "Your verdict is being prepared again. This page updates by itself when it is ready."}},
			state: "preparing_again", heading: "Your verdict is being prepared again…", message: "Your verdict is being prepared again. This page updates by itself when it is ready."},
		{name: "refunded", answer: answer{200, map[string]string{"status": "refunded", "message": "This order was refunded."}}, state: "refunded", heading: "This order was refunded", message: "This order was refunded."},
		{name: "expired", answer: answer{410, map[string]string{"status": "expired", "message": "This order is more than 90 days old and we no longer keep it. Write to oracle@42sisters.ai and we will help."}},
			state: "expired", heading: "This order is no longer kept", message: "This order is more than 90 days old and we no longer keep it. Write to oracle@42sisters.ai and we will help."},
		{name: "payment-required", answer: answer{402, map[string]string{"error": "the payment for this session is not complete"}}, state: "unpaid", heading: "Payment not complete"},
		{name: "not-found", answer: answer{404, map[string]string{"error": "unknown checkout session"}}, state: "unknown", heading: "We could not find this verdict"},
		{name: "bad-request", answer: answer{400, map[string]string{"error": "session_id is missing or malformed"}}, state: "unknown", heading: "We could not find this verdict"},
		{name: "malformed-link", path: "/oracle/result?session_id=cs_nope", state: "unknown", heading: "We could not find this verdict"},
		{name: "missing-session", path: "/oracle/result", state: "unknown", heading: "We could not find this verdict"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.path
			if path == "" {
				path = "/oracle/result?session_id=" + s.api.addHeld(c.answer)
			}
			before := s.api.totalPolls()
			ctx := s.tab(t)
			sel := `section[data-state="` + c.state + `"]`
			browsertest.Do(t, ctx, "load", chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS(sel)))
			if h := browsertest.Text(t, ctx, sel+" h2"); h != c.heading {
				t.Errorf("heading %q, want %q", h, c.heading)
			}
			if c.message != "" {
				if m := browsertest.Text(t, ctx, sel+" .message"); m != c.message {
					t.Errorf("message %q, want %q", m, c.message)
				}
			}
			if n := browsertest.Eval[int](t, ctx, `[...document.querySelectorAll('section.state')].filter(s => !s.hidden).length`); n != 1 {
				t.Errorf("%d states shown at once", n)
			}
			if c.path != "" && s.api.totalPolls() != before {
				t.Error("the page asked the API about a malformed link")
			}
			browsertest.Screenshot(t, ctx, artifacts, "result-"+c.name)
		})
	}
}

func (s *suite) hostileText(t *testing.T) {
	a := analysis(oracle.TierStrategy, oracle.VerdictRed)
	a.Summary = hostile
	a.Strategy.Tests[1] = hostile
	for name, n := range a.Breakdown {
		n.Analysis = hostile
		a.Breakdown[name] = n
	}
	id := s.api.add(&script{first: answer{200, readyAnswer(oracle.TierStrategy, hostile, a)}})
	ctx := s.tab(t)
	got := s.openResult(t, ctx, id)
	if got.Query != hostile || got.Summary != hostile || got.Tests[1] != hostile || got.Dimensions[0].Analysis != hostile {
		t.Errorf("hostile text not shown as text: %+v", got)
	}
	if n := browsertest.Eval[[]int](t, ctx, `[document.images.length, document.scripts.length]`); n[0] != 0 || n[1] != 1 {
		t.Errorf("%d images and %d scripts: markup was injected", n[0], n[1])
	}
	browsertest.Screenshot(t, ctx, artifacts, "result-hostile")

	// A hostile link shows the unknown-link state and runs nothing.
	browsertest.Do(t, ctx, "hostile link", chromedp.Navigate(s.url+"/oracle/result?session_id=cs_test_1%22%3E%3Cscript%3Ealert(3)%3C/script%3E"),
		chromedp.WaitVisible(chromedp.CSS(`section[data-state="unknown"]`)))
	if n := browsertest.Eval[int](t, ctx, `document.scripts.length`); n != 1 {
		t.Errorf("%d scripts after a hostile link", n)
	}
}

func (s *suite) notFound(t *testing.T) {
	ctx := s.tab(t)
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(s.url+"/no/such/page"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusNotFound || browsertest.Text(t, ctx, "h1") != "Page not found" {
		t.Errorf("status %d, heading %q", resp.Status, browsertest.Text(t, ctx, "h1"))
	}
	browsertest.Screenshot(t, ctx, artifacts, "not-found")
}

// ---------------------------------------------------------------- the stubs

// lambdaHTTP serves a Lambda handler over net/http, translating requests as
// API Gateway's HTTP API (payload 2.0) does.
func lambdaHTTP(h *Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := httpapi.Request{RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery, Headers: map[string]string{}}
		req.RequestContext.HTTP.Method = r.Method
		req.RequestContext.HTTP.Path = r.URL.Path
		for k, v := range r.Header {
			req.Headers[strings.ToLower(k)] = strings.Join(v, ",")
		}
		if q := r.URL.Query(); len(q) > 0 {
			req.QueryStringParameters = map[string]string{}
			for k, v := range q {
				req.QueryStringParameters[k] = strings.Join(v, ",") // as API Gateway joins repeated keys
			}
		}
		resp, err := h.Handle(r.Context(), req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.StatusCode)
		io.WriteString(w, resp.Body)
	})
}

// answer is one reply of the stub verdict API; a nil body is a non-JSON
// error page, as a gateway sends.
type answer struct {
	status int
	body   any
}

// script is what the stub verdict API answers for one session: first,
// until released (automatically after firstCount asks when it is set), and
// then `then`.
type script struct {
	first, then answer
	firstCount  int
	released    bool
	polls       int
}

// stubAPI stands in for the checkout and verdict functions. Its checkout
// answer depends on the referral code: ERROR is refused, DROP drops the
// connection, HOLD waits for releaseCheckout, and anything else succeeds.
type stubAPI struct {
	base string

	mu        sync.Mutex
	sessions  map[string]*script
	next      int
	checkout  []checkoutRequest
	hold      chan struct{}
	allPolled int
}

type checkoutRequest struct {
	ContentType string
	Body        map[string]string
}

func newStubAPI() *stubAPI {
	return &stubAPI{sessions: map[string]*script{}, hold: make(chan struct{})}
}

func (a *stubAPI) add(s *script) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next++
	id := fmt.Sprintf("cs_test_stub%04d", a.next)
	a.sessions[id] = s
	return id
}

// addReady adds a session that is pending at first ask and ready after.
func (a *stubAPI) addReady(tier oracle.Tier, v oracle.Verdict, query string) string {
	return a.add(&script{
		first:      answer{http.StatusAccepted, map[string]string{"status": "pending", "message": "Your verdict is being prepared."}},
		firstCount: 1,
		then:       answer{http.StatusOK, readyAnswer(tier, query, analysis(tier, v))},
	})
}

// addHeld adds a session answering first until released, then a quick
// GREEN verdict.
func (a *stubAPI) addHeld(first answer) string {
	q := "Should I open a second bakery across town?"
	return a.add(&script{first: first, then: answer{http.StatusOK, readyAnswer(oracle.TierQuick, q, analysis(oracle.TierQuick, oracle.VerdictGreen))}})
}

func (a *stubAPI) release(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessions[id].released = true
}

func (a *stubAPI) polls(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id].polls
}

func (a *stubAPI) totalPolls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.allPolled
}

func (a *stubAPI) checkouts() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.checkout)
}

func (a *stubAPI) lastCheckout() checkoutRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.checkout) == 0 {
		return checkoutRequest{}
	}
	return a.checkout[len(a.checkout)-1]
}

func (a *stubAPI) releaseCheckout() { close(a.hold) }

func (a *stubAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/verdict":
		a.verdict(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/api/checkout":
		a.startCheckout(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (a *stubAPI) verdict(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.allPolled++
	s, ok := a.sessions[r.URL.Query().Get("session_id")]
	var ans answer
	switch {
	case !ok:
		ans = answer{http.StatusNotFound, map[string]string{"error": "unknown checkout session"}}
	case s.released || (s.firstCount > 0 && s.polls >= s.firstCount):
		ans = s.then
	default:
		ans = s.first
	}
	if ok {
		s.polls++
	}
	a.mu.Unlock()
	writeAnswer(w, ans)
}

func (a *stubAPI) startCheckout(w http.ResponseWriter, r *http.Request) {
	var body map[string]string
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeAnswer(w, answer{http.StatusBadRequest, map[string]string{"error": "request body must be a JSON object with tier and query"}})
		return
	}
	a.mu.Lock()
	a.checkout = append(a.checkout, checkoutRequest{ContentType: r.Header.Get("Content-Type"), Body: body})
	a.mu.Unlock()
	switch body["referral_code"] {
	case "ERROR":
		writeAnswer(w, answer{http.StatusRequestEntityTooLarge, map[string]string{"error": "query is too long: at most 22540 characters"}})
		return
	case "DROP":
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case "HOLD":
		select {
		case <-a.hold:
		case <-r.Context().Done():
			return
		}
	}
	writeAnswer(w, answer{http.StatusOK, map[string]string{"url": a.base + "/stub-stripe/pay"}})
}

func writeAnswer(w http.ResponseWriter, a answer) {
	if a.body == nil {
		http.Error(w, "Bad Gateway", a.status)
		return
	}
	resp := httpapi.JSON(a.status, a.body)
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(resp.StatusCode)
	io.WriteString(w, resp.Body)
}

// readyAnswer is the verdict API's 200 for a stored verdict.
func readyAnswer(tier oracle.Tier, query string, a oracle.Analysis) map[string]any {
	return map[string]any{
		"status": "ready", "tier": tier, "tier_name": tier.Name(), "query": query, "verdict": a,
		"cached_at": "2026-04-17T14:03:00Z", "retention_days": 90,
	}
}

// analysis is a verdict of the tier's shape, its dimensions cycling through
// GREEN, AMBER and RED so every dot colour shows.
func analysis(tier oracle.Tier, v oracle.Verdict) oracle.Analysis {
	a := oracle.Analysis{Verdict: v, Summary: fmt.Sprintf("The %s verdict is %s: the demand is real, but the second site doubles the rent before it doubles the sales.", tier.Name(), v)}
	if tier == oracle.TierQuick {
		return a
	}
	a.Breakdown = map[string]oracle.DimensionNote{}
	cycle := []oracle.Verdict{oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed}
	for i, d := range oracle.Dimensions {
		a.Breakdown[d] = oracle.DimensionNote{Verdict: cycle[i%3], Analysis: d + ": the first shop's regulars show the product works; the question is whether the new street has the same mornings."}
	}
	if tier == oracle.TierStrategy {
		a.Strategy = &oracle.Strategy{
			NextStep:    "Run a weekend pop-up on the new street for a month before signing a lease.",
			Alternative: "Add wholesale to cafés from the existing kitchen instead of opening a second shop.",
			Tests: []string{
				"Count morning foot traffic on three weekdays.",
				"Pre-sell fifty loaves a week by subscription.",
				"Ask two cafés for a trial order.",
			},
		}
	}
	return a
}
