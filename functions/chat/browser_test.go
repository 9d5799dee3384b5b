package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"42sisters.ai/oracle/infra/tools"
	"42sisters.ai/oracle/shared/httpapi"
)

// artifacts is where the screenshots go (git-ignored), for a person to
// look at.
var artifacts = filepath.Join("..", "..", "test-artifacts", "chat")

// TestBrowser drives the chat page in headless Chromium against the
// handler (the chat table on moto, fakes for the model, subscriptions and
// Stripe): sign in from the emailed link, three exchanges, the fourth
// refused with the offer, Subscribe taking the browser to Checkout, on a
// phone's width, with hostile text shown as text and no script error or
// CSP violation.
func TestBrowser(t *testing.T) {
	exe := tools.Find(t, "chromium")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	x := newHarness(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// localhost: a secure context, where Chromium keeps a Secure cookie
	// sent over http.
	base := "http://localhost:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
	x.h.Origin = base
	x.billing.url = base + "/stub-stripe/checkout"
	x.billing.portalURL = base + "/stub-stripe/portal"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stub-stripe/checkout", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `<!DOCTYPE html><html lang="en"><title>Pay</title><h1 id="stub-pay">Stub checkout</h1></html>`)
	})
	mux.HandleFunc("GET /stub-stripe/portal", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `<!DOCTYPE html><html lang="en"><title>Portal</title><h1 id="stub-portal">Stub portal</h1></html>`)
	})
	mux.Handle("/", lambdaHTTP(x.h))
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	srv.Start()
	t.Cleanup(srv.Close)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx := tab(t, browser)
	do(t, ctx, "open the chat on a phone", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile),
		chromedp.Navigate(base+"/chat"), chromedp.WaitVisible(chromedp.ID("signin-form")))
	fitsWidth(t, ctx)
	screenshot(t, ctx, "signin-375")

	do(t, ctx, "ask for a link", chromedp.SendKeys(chromedp.ID("email"), address),
		chromedp.Click(chromedp.ID("signin-submit")), chromedp.WaitVisible(chromedp.ID("sent")))
	jobs := x.mail.sent()
	if len(jobs) != 1 {
		t.Fatalf("%d sign-in emails queued, want 1", len(jobs))
	}
	token, _, err := x.store.IssueSignIn(context.Background(), jobs[0].Account) // as the mailer does
	if err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "open the emailed link", chromedp.Navigate(base+"/chat/signin?token="+token),
		chromedp.WaitVisible(chromedp.ID("message-form")))
	if got := text(t, ctx, "#left"); got != "3 free exchanges left of 3." {
		t.Errorf("before the first message: %q", got)
	}

	hostile := `<img src=x onerror=alert(1)><script>alert(2)</script>`
	for i, m := range []string{"Should I move to Lisbon?", hostile, "And the timing?"} {
		do(t, ctx, "send", chromedp.SendKeys(chromedp.ID("message"), m), chromedp.Click(chromedp.ID("send")))
		do(t, ctx, "wait for the reply", chromedp.Poll[chromedp.Void](
			`document.querySelectorAll('.turn-aether').length === `+itoa(i+1)))
		if i == 1 {
			if got := text(t, ctx, "#left"); got != "1 free exchange left of 3." {
				t.Errorf("after two: %q", got)
			}
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('img').length`); n != 0 {
		t.Errorf("the hostile message became markup: %d images", n)
	}
	if got := eval[string](t, ctx, `document.querySelectorAll('.turn-user')[1].lastChild.textContent`); got != hostile {
		t.Errorf("the hostile message shows as %q", got)
	}
	screenshot(t, ctx, "three-exchanges-375")

	// After the third the page offers the subscription; a fourth message
	// sent anyway (a page that did not know) is refused by the server,
	// and the offer is shown and focused.
	if !eval[bool](t, ctx, `!document.getElementById('offer').hidden`) {
		t.Error("no offer after the third exchange")
	}
	do(t, ctx, "fourth message", chromedp.Evaluate[chromedp.Void](`document.getElementById('message-form').hidden = false`),
		chromedp.SendKeys(chromedp.ID("message"), "One more?"), chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](`document.activeElement.id === 'offer-heading'`))
	if !eval[bool](t, ctx, `!document.getElementById('offer').hidden && document.getElementById('message-form').hidden`) {
		t.Error("after the 402 the offer is not shown in place of the message box")
	}
	if x.replier.count() != 3 {
		t.Errorf("the model was called %d times, want 3", x.replier.count())
	}
	fitsWidth(t, ctx)
	screenshot(t, ctx, "offer-375")

	// A reload shows the conversation and the offer again, from the server.
	do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("offer")))
	if n := eval[int](t, ctx, `document.querySelectorAll('.turn').length`); n != 6 {
		t.Errorf("after a reload: %d turns, want 6", n)
	}
	do(t, ctx, "subscribe", chromedp.Click(chromedp.ID("subscribe")), chromedp.WaitVisible(chromedp.ID("stub-pay")))
	x.billing.mu.Lock()
	if len(x.billing.checkouts) != 1 {
		t.Errorf("checkouts %v", x.billing.checkouts)
	}
	x.billing.mu.Unlock()

	// Subscribed (Stripe's events, not the return, grant it): the message
	// box again, the portal, and near the daily cap what is left today.
	x.h.DailyCap = 11
	x.subs.set(Subscription{Grants: true, Status: "active", Customer: "cus_1", CancelAtPeriodEnd: true,
		PeriodEnd: time.Date(2026, 12, 27, 12, 0, 0, 0, time.UTC)})
	do(t, ctx, "back from Checkout", chromedp.Navigate(base+"/chat?subscribed=1"), chromedp.WaitVisible(chromedp.ID("message-form")))
	if got := text(t, ctx, "#left"); got != "Your subscription is cancelled; you keep access until December 27, 2026." {
		t.Errorf("subscribed, far from the cap: %q", got)
	}
	do(t, ctx, "send as a subscriber", chromedp.SendKeys(chromedp.ID("message"), "Now as a subscriber."), chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('.turn-aether').length === 4`))
	if got := text(t, ctx, "#left"); !strings.HasSuffix(got, " 10 exchanges left today.") {
		t.Errorf("subscribed, near the cap: %q", got)
	}
	if !eval[bool](t, ctx, `!document.getElementById('portal').hidden && document.getElementById('offer').hidden`) {
		t.Error("a subscriber does not see the portal button, or still sees the offer")
	}
	fitsWidth(t, ctx)
	screenshot(t, ctx, "subscriber-375")
	do(t, ctx, "portal", chromedp.Click(chromedp.ID("portal")), chromedp.WaitVisible(chromedp.ID("stub-portal")))
	x.billing.mu.Lock()
	defer x.billing.mu.Unlock()
	if len(x.billing.portals) != 1 || x.billing.portals[0] != "cus_1" {
		t.Errorf("portal sessions %v", x.billing.portals)
	}
}

// tab opens a tab that fails t, at the end, on any dialog, uncaught
// exception or Content-Security-Policy violation.
func tab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	var (
		mu       sync.Mutex
		problems []string
	)
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *cdppage.EventJavascriptDialogOpening:
			problems = append(problems, "dialog: "+ev.Message)
			go chromedp.Call(ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{})
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Source == cdplog.EntrySourceSecurity || strings.Contains(ev.Entry.Text, "Content Security Policy") {
				problems = append(problems, "security: "+ev.Entry.Text)
			}
		}
	})
	if err != nil {
		t.Fatalf("open tab: %v", err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Error(p)
		}
	})
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancelTimeout)
	return ctx
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(artifacts, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fitsWidth fails when the page scrolls sideways.
func fitsWidth(t *testing.T, ctx context.Context) {
	t.Helper()
	accessible(t, ctx)
	if w := eval[[]int](t, ctx, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
		t.Errorf("the page is %d px wide in a %d px viewport", w[0], w[1])
	}
}

// wcagAudit lists what a page shows that WCAG 2.1 AA would refuse, among
// the checks a script can make: a visible form control without an
// accessible name, a section named by no heading, a document without its
// language, and visible text whose contrast with the background behind it
// is under 4.5:1 (3:1 for large text: 24 px, or 18.66 px bold).
const wcagAudit = `(() => {
  const out = [];
  if (!document.documentElement.lang) out.push('the document has no lang');
  const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  for (const el of document.querySelectorAll('input:not([type=hidden]), textarea, select, button')) {
    if (!visible(el)) continue;
    const named = (el.labels && el.labels.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || el.textContent.trim();
    if (!named) out.push('a ' + el.tagName.toLowerCase() + ' without a name: ' + el.outerHTML.slice(0, 80));
  }
  for (const el of document.querySelectorAll('[aria-labelledby]')) {
    for (const id of el.getAttribute('aria-labelledby').split(/\s+/)) {
      if (!document.getElementById(id)) out.push('aria-labelledby names a missing ' + id);
    }
  }
  const rgb = c => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = el => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  for (const el of document.querySelectorAll('body *')) {
    if (!visible(el) || ![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    const st = getComputedStyle(el);
    const fg = rgb(st.color).slice(0, 3), bg = background(el);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    const size = parseFloat(st.fontSize), bold = Number(st.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) out.push('contrast ' + ratio.toFixed(2) + ' under ' + need + ': ' + el.textContent.trim().slice(0, 40));
  }
  return out;
})()`

// accessible fails t with every finding of wcagAudit on the page.
func accessible(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, f := range eval[[]string](t, ctx, wcagAudit) {
		t.Errorf("accessibility: %s", f)
	}
}

// lambdaHTTP serves h as API Gateway would: payload 2.0 requests, cookies
// out of the headers and back as Set-Cookie.
func lambdaHTTP(h *Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := httpapi.Request{RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery, Headers: map[string]string{}, Body: string(body)}
		req.RequestContext.HTTP.Method = r.Method
		req.RequestContext.HTTP.Path = r.URL.Path
		req.RequestContext.HTTP.SourceIP = "127.0.0.1"
		for k, v := range r.Header {
			if strings.EqualFold(k, "Cookie") {
				for _, c := range v {
					req.Cookies = append(req.Cookies, strings.Split(c, "; ")...)
				}
				continue
			}
			req.Headers[strings.ToLower(k)] = strings.Join(v, ",")
		}
		if q := r.URL.Query(); len(q) > 0 {
			req.QueryStringParameters = map[string]string{}
			for k, v := range q {
				req.QueryStringParameters[k] = strings.Join(v, ",")
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
		for _, c := range resp.Cookies {
			w.Header().Add("Set-Cookie", c)
		}
		w.WriteHeader(resp.StatusCode)
		io.WriteString(w, resp.Body)
	})
}
