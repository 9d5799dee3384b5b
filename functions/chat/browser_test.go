package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"42sisters.ai/oracle/infra/browsertest"
	"42sisters.ai/oracle/infra/local/gateway"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/oracle"
)

// artifacts is where the screenshots go (git-ignored), for a person to
// look at.
var artifacts = filepath.Join("..", "..", "test-artifacts", "chat")

// TestBrowser drives the chat page in headless Chromium against the
// handler behind the routes template.yaml gives it (the chat table on
// moto, fakes for the model, subscriptions and Stripe): the emailed link's
// page and its button signing in ("Signed in as …" shown), three
// exchanges (Enter sends, Shift and Enter a new line), the fourth refused
// with the offer, Subscribe taking the browser to Checkout, and deleting
// the account behind the page's own confirmation, on a phone's width, with
// hostile text shown as text and no script error or CSP violation.
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
	var (
		mu            sync.Mutex // the server's goroutines write what the test reads
		buttonHeaders http.Header
	)
	routes := templateRoutes(t, x.h)
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/chat/signin" {
			mu.Lock()
			buttonHeaders = r.Header.Clone()
			mu.Unlock()
		}
		routes.ServeHTTP(w, r)
	}))
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
	// The link's page: one button, nothing spent by opening it.
	browsertest.Do(t, ctx, "open the emailed link", chromedp.Navigate(base+"/chat/signin?token="+token),
		chromedp.WaitVisible(chromedp.ID("signin-confirm")))
	browsertest.FitsWidth(t, ctx)
	browsertest.Accessible(t, ctx)
	browsertest.Screenshot(t, ctx, artifacts, "signin-link-375")
	if n := browsertest.Eval[int](t, ctx, `document.cookie.length + document.querySelectorAll('form').length * 100`); n != 100 {
		t.Errorf("the link's page: one form and no cookie, got %d", n)
	}
	browsertest.Do(t, ctx, "press Sign in", chromedp.Click(chromedp.ID("signin-confirm")),
		chromedp.WaitVisible(chromedp.ID("message-form")))
	mu.Lock()
	t.Logf("the button's form came with Origin %q, Sec-Fetch-Site %q", buttonHeaders.Get("Origin"), buttonHeaders.Get("Sec-Fetch-Site"))
	mu.Unlock()
	if got := browsertest.Eval[string](t, ctx, `location.pathname`); got != "/chat" {
		t.Errorf("signed in at %s, want /chat", got)
	}
	stored, err := x.store.Address(context.Background(), jobs[0].Account)
	if err != nil {
		t.Fatal(err)
	}
	if got := browsertest.Text(t, ctx, ".account p"); got != "Signed in as "+stored {
		t.Errorf("the page says %q, want it signed in as %s", got, stored)
	}
	if got := browsertest.Text(t, ctx, "#left"); got != "3 free exchanges left of 3." {
		t.Errorf("before the first message: %q", got)
	}

	// Enter sends; Shift and Enter start a new line first.
	browsertest.Do(t, ctx, "type a line and a new one", chromedp.SendKeys(chromedp.ID("message"), "Should I move"),
		pressEnter(chromedp.ModifierShift), chromedp.SendKeys(chromedp.ID("message"), "to Lisbon?"))
	if got := browsertest.Eval[string](t, ctx, `document.getElementById('message').value`); got != "Should I move\nto Lisbon?" {
		t.Errorf("Shift and Enter: the box holds %q", got)
	}
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll('.turn').length`); n != 0 {
		t.Errorf("Shift and Enter sent the message: %d turns", n)
	}
	hostile := `<img src=x onerror=alert(1)><script>alert(2)</script>`
	for i, m := range []string{"", hostile, "And the timing?"} {
		if i == 1 {
			browsertest.Do(t, ctx, "send with the button", chromedp.SendKeys(chromedp.ID("message"), m), chromedp.Click(chromedp.ID("send")))
		} else {
			browsertest.Do(t, ctx, "send with Enter", chromedp.SendKeys(chromedp.ID("message"), m), pressEnter(chromedp.ModifierNone))
		}
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
	if got := x.replier.calls[0].Message; got != "Should I move\nto Lisbon?" {
		t.Errorf("the first message sent with Enter was %q", got)
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
	if len(x.billing.portals) != 2 || x.billing.portals[0] != "cus_1" || x.billing.portals[1] != "cus_1" || len(x.billing.checkouts) != 1 {
		t.Errorf("portal sessions %v, checkouts %v: want the portal twice (the refused Subscribe, the button) and one Checkout", x.billing.portals, x.billing.checkouts)
	}
	x.billing.mu.Unlock()

	// Deleting the account: the page asks first, on the page, saying what
	// goes and what happens to the subscription; keeping it sends nothing.
	browsertest.Do(t, ctx, "back to the chat", chromedp.Navigate(base+"/chat"), chromedp.WaitVisible(chromedp.ID("erase")))
	browsertest.Do(t, ctx, "delete my account", chromedp.Click(chromedp.ID("erase")),
		chromedp.Poll[chromedp.Void](`document.activeElement.id === 'erase-heading'`))
	said := browsertest.Text(t, ctx, "#erase-confirm")
	for _, want := range []string{"email address", "conversation", "sign-in links", "cancelled at once through Stripe", "no further charge",
		"not refunded automatically", oracle.SupportAddress} {
		if !strings.Contains(said, want) {
			t.Errorf("the confirmation does not say %q: %s", want, said)
		}
	}
	browsertest.FitsWidth(t, ctx)
	browsertest.Accessible(t, ctx)
	browsertest.Screenshot(t, ctx, artifacts, "erase-confirm-375")
	browsertest.Do(t, ctx, "keep it", chromedp.Click(chromedp.ID("erase-no")),
		chromedp.Poll[chromedp.Void](`document.getElementById('erase-confirm').hidden && document.activeElement.id === 'erase'`))
	// The erasure is the real route's: the account is gone from the
	// table once the page says so, and not before.
	if _, err := x.store.Address(context.Background(), jobs[0].Account); err != nil {
		t.Fatalf("keeping the account: %v", err)
	}
	browsertest.Do(t, ctx, "delete it", chromedp.Click(chromedp.ID("erase")), chromedp.WaitVisible(chromedp.ID("erase-yes")),
		chromedp.Click(chromedp.ID("erase-yes")), chromedp.WaitVisible(chromedp.ID("erased")), chromedp.WaitVisible(chromedp.ID("signin-form")))
	if _, err := x.store.Address(context.Background(), jobs[0].Account); !errors.Is(err, chat.ErrNoAccount) {
		t.Fatalf("after the page's erasure the account reads %v, want ErrNoAccount", err)
	}
	if !browsertest.Eval[bool](t, ctx, `document.getElementById('chat').hidden && document.activeElement.id === 'erased' && document.getElementById('address').textContent === ''`) {
		t.Error("after the erasure the conversation or the address is still shown, or the note is not focused")
	}
	browsertest.FitsWidth(t, ctx)
	browsertest.Accessible(t, ctx)
	browsertest.Screenshot(t, ctx, artifacts, "erased-375")
}

// pressEnter presses Enter in the focused element as a keyboard does: one
// keyDown that carries the key's text, from which the browser makes the
// character, so that a page that handles the keydown stops it as it would
// for a person (chromedp's own key events send the character apart, which
// no page can stop).
func pressEnter(modifiers chromedp.Modifier) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Modifiers: int64(modifiers),
			Key: "Enter", Code: "Enter", Text: "\r", UnmodifiedText: "\r", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := down
		up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
		return err
	})
}

// templateRoutes serves h behind the routes template.yaml gives the chat
// function, through the local stack's gateway: payload 2.0 events, cookies
// out of the headers and back as Set-Cookie, and a 404 for a route the
// template does not have.
func templateRoutes(t *testing.T, h *Handler) http.Handler {
	t.Helper()
	tpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	var routes []gateway.Route
	for _, fn := range tpl.Functions() {
		if fn.LogicalID == "ChatFunction" {
			for _, r := range fn.Routes {
				routes = append(routes, gateway.Route{Method: r.Method, Path: r.Path, Function: invoker{h}})
			}
		}
	}
	g, err := gateway.New(gateway.Options{Routes: routes, Log: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// invoker runs the handler as the Lambda runtime runs its bootstrap.
type invoker struct{ h *Handler }

func (i invoker) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var req httpapi.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, err
	}
	resp, err := i.h.Handle(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}
