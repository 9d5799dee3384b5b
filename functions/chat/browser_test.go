package main

import (
	"42sisters.ai/oracle/infra/browsertest"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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
	browser := browsertest.Start(t)
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

	ctx := browsertest.Tab(t, browser, 60*time.Second)
	browsertest.Do(t, ctx, "open the chat on a phone", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile),
		chromedp.Navigate(base+"/chat"), chromedp.WaitVisible(chromedp.ID("signin-form")))
	browsertest.FitsWidth(t, ctx)
	browsertest.Accessible(t, ctx)
	browsertest.Screenshot(t, ctx, artifacts, "signin-375")

	browsertest.Do(t, ctx, "ask for a link", chromedp.SendKeys(chromedp.ID("email"), address),
		chromedp.Click(chromedp.ID("signin-submit")), chromedp.WaitVisible(chromedp.ID("sent")))
	jobs := x.mail.sent()
	if len(jobs) != 1 {
		t.Fatalf("%d sign-in emails queued, want 1", len(jobs))
	}
	token, _, err := x.store.IssueSignIn(context.Background(), jobs[0].Account) // as the mailer does
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "open the emailed link", chromedp.Navigate(base+"/chat/signin?token="+token),
		chromedp.WaitVisible(chromedp.ID("message-form")))
	if got := browsertest.Text(t, ctx, "#left"); got != "3 free exchanges left of 3." {
		t.Errorf("before the first message: %q", got)
	}

	hostile := `<img src=x onerror=alert(1)><script>alert(2)</script>`
	for i, m := range []string{"Should I move to Lisbon?", hostile, "And the timing?"} {
		browsertest.Do(t, ctx, "send", chromedp.SendKeys(chromedp.ID("message"), m), chromedp.Click(chromedp.ID("send")))
		browsertest.Do(t, ctx, "wait for the reply", chromedp.Poll[chromedp.Void](
			`document.querySelectorAll('.turn-aether').length === `+itoa(i+1)))
		if i == 1 {
			if got := browsertest.Text(t, ctx, "#left"); got != "1 free exchange left of 3." {
				t.Errorf("after two: %q", got)
			}
		}
	}
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll('img').length`); n != 0 {
		t.Errorf("the hostile message became markup: %d images", n)
	}
	if got := browsertest.Eval[string](t, ctx, `document.querySelectorAll('.turn-user')[1].lastChild.textContent`); got != hostile {
		t.Errorf("the hostile message shows as %q", got)
	}
	browsertest.Screenshot(t, ctx, artifacts, "three-exchanges-375")

	// After the third the page offers the subscription; a fourth message
	// sent anyway (a page that did not know) is refused by the server,
	// and the offer is shown and focused.
	if !browsertest.Eval[bool](t, ctx, `!document.getElementById('offer').hidden`) {
		t.Error("no offer after the third exchange")
	}
	browsertest.Do(t, ctx, "fourth message", chromedp.Evaluate[chromedp.Void](`document.getElementById('message-form').hidden = false`),
		chromedp.SendKeys(chromedp.ID("message"), "One more?"), chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](`document.activeElement.id === 'offer-heading'`))
	if !browsertest.Eval[bool](t, ctx, `!document.getElementById('offer').hidden && document.getElementById('message-form').hidden`) {
		t.Error("after the 402 the offer is not shown in place of the message box")
	}
	if x.replier.count() != 3 {
		t.Errorf("the model was called %d times, want 3", x.replier.count())
	}
	browsertest.FitsWidth(t, ctx)
	browsertest.Accessible(t, ctx)
	browsertest.Screenshot(t, ctx, artifacts, "offer-375")

	// A reload shows the conversation and the offer again, from the server.
	browsertest.Do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("offer")))
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll('.turn').length`); n != 6 {
		t.Errorf("after a reload: %d turns, want 6", n)
	}
	browsertest.Do(t, ctx, "subscribe", chromedp.Click(chromedp.ID("subscribe")), chromedp.WaitVisible(chromedp.ID("stub-pay")))
	x.billing.mu.Lock()
	if len(x.billing.checkouts) != 1 {
		t.Errorf("checkouts %v", x.billing.checkouts)
	}
	x.billing.mu.Unlock()

	// A page still offering the subscription (another tab, or one loaded
	// before Stripe's events came) asks again once one grants: the server
	// refuses a second Checkout, and the browser goes to the portal.
	browsertest.Do(t, ctx, "the offer again", chromedp.Navigate(base+"/chat"), chromedp.WaitVisible(chromedp.ID("subscribe")))
	x.subs.set(Subscription{Grants: true, Status: "active", Customer: "cus_1", PeriodEnd: time.Date(2026, 12, 27, 12, 0, 0, 0, time.UTC)})
	browsertest.Do(t, ctx, "subscribe while subscribed", chromedp.Click(chromedp.ID("subscribe")), chromedp.WaitVisible(chromedp.ID("stub-portal")))

	// Subscribed (Stripe's events, not the return, grant it): the message
	// box again, the portal, and near the daily cap what is left today.
	x.h.DailyCap = 11
	x.subs.set(Subscription{Grants: true, Status: "active", Customer: "cus_1", CancelAtPeriodEnd: true,
		PeriodEnd: time.Date(2026, 12, 27, 12, 0, 0, 0, time.UTC)})
	browsertest.Do(t, ctx, "back from Checkout", chromedp.Navigate(base+"/chat?subscribed=1"), chromedp.WaitVisible(chromedp.ID("message-form")))
	if got := browsertest.Text(t, ctx, "#left"); got != "Your subscription is cancelled; you keep access until December 27, 2026." {
		t.Errorf("subscribed, far from the cap: %q", got)
	}
	browsertest.Do(t, ctx, "send as a subscriber", chromedp.SendKeys(chromedp.ID("message"), "Now as a subscriber."), chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('.turn-aether').length === 4`))
	if got := browsertest.Text(t, ctx, "#left"); !strings.HasSuffix(got, " 10 exchanges left today.") {
		t.Errorf("subscribed, near the cap: %q", got)
	}
	if !browsertest.Eval[bool](t, ctx, `!document.getElementById('portal').hidden && document.getElementById('offer').hidden`) {
		t.Error("a subscriber does not see the portal button, or still sees the offer")
	}
	browsertest.FitsWidth(t, ctx)
	browsertest.Accessible(t, ctx)
	browsertest.Screenshot(t, ctx, artifacts, "subscriber-375")
	browsertest.Do(t, ctx, "portal", chromedp.Click(chromedp.ID("portal")), chromedp.WaitVisible(chromedp.ID("stub-portal")))
	x.billing.mu.Lock()
	defer x.billing.mu.Unlock()
	if len(x.billing.portals) != 2 || x.billing.portals[0] != "cus_1" || x.billing.portals[1] != "cus_1" || len(x.billing.checkouts) != 1 {
		t.Errorf("portal sessions %v, checkouts %v: want the portal twice (the refused Subscribe, the button) and one Checkout", x.billing.portals, x.billing.checkouts)
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
