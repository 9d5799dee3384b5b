package stack_test

import (
	"42sisters.ai/oracle/infra/browsertest"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/chatsession"
)

// signInLink finds the sign-in link in a sign-in email's text.
var signInLink = regexp.MustCompile(`http://localhost:\d+/chat/signin\?token=[0-9A-Za-z]{43}`)

// TestChatEndToEnd is a person's whole life with Sisters Chat on the local
// stack, in headless Chromium on a phone's width: the sign-in link from
// the email in the local mailbox and its page's button, three free
// exchanges, the fourth refused with the offer, the subscription paid on
// the fake Stripe's page (only Stripe's events grant it), the fourth
// answered, the plan cancelled in the fake portal with access kept to the
// period's end, and refused once the fake Stripe's clock has passed it and
// ended the subscription. Then the chat's privacy sweep: the address, the
// messages, the emailed link and the cookie are nowhere but where they
// belong.
func TestChatEndToEnd(t *testing.T) {
	t.Parallel()
	o := options(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	artifacts := filepath.Join(filepath.Dir(provision.TemplatePath()), "test-artifacts", "e2e")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	tab := browsertest.Tab(t, browsertest.Start(t), 5*time.Minute)
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(tab, 60*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			if b, serr := chromedp.Run(tab, chromedp.FullScreenshot(80)); serr == nil {
				_ = os.WriteFile(filepath.Join(artifacts, "chat-failed.png"), b, 0o644)
			}
			t.Fatalf("%s: %v", what, err)
		}
	}
	shot := func(name string) {
		if b, err := chromedp.Run(tab, chromedp.FullScreenshot(80)); err == nil {
			_ = os.WriteFile(filepath.Join(artifacts, "chat-"+name+".png"), b, 0o644)
		}
	}
	// message sends a message from the page, as its script would, and
	// returns the status: the server's word, whatever the page shows. The
	// exchange is checked against the OpenAPI document the stack serves.
	checker := apiChecker(t, s)
	message := func(text string) int {
		t.Helper()
		body, err := json.Marshal(map[string]string{"message": text})
		if err != nil {
			t.Fatal(err)
		}
		js := fmt.Sprintf(`fetch('/api/chat', {method: 'POST', credentials: 'same-origin',
			headers: {'Content-Type': 'application/json'}, body: %q}).then(async r => JSON.stringify({status: r.status, type: r.headers.get('Content-Type'), body: await r.text()}))`, body)
		out, err := chromedp.Run(tab, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		var got struct {
			Status int
			Type   string
			Body   string
		}
		if err == nil {
			err = json.Unmarshal([]byte(out), &got)
		}
		if err != nil {
			t.Fatalf("post %s: %v", text, err)
		}
		// The browser sent its session cookie, which its script cannot read.
		req := mustRequest(t, "POST", s.APIURL+"/api/chat")
		req.Header.Set("Content-Type", "application/json")
		req.AddCookie(&http.Cookie{Name: chatsession.CookieName, Value: "sent-by-the-browser"})
		checker.Exchange(req, body, got.Status, http.Header{"Content-Type": {got.Type}}, []byte(got.Body))
		return got.Status
	}
	replies := func(n int) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelectorAll('.turn-aether').length === %d`, n))
	}
	write := func(text string, replyNo int) {
		t.Helper()
		step("write "+text, chromedp.WaitVisible(chromedp.ID("message-form")), chromedp.SendKeys(chromedp.ID("message"), text),
			chromedp.Click(chromedp.ID("send")), replies(replyNo))
	}

	addr := fmt.Sprintf("chat-%d@example.com", time.Now().UnixNano())
	step("ask for a link on a phone", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile),
		chromedp.Navigate(s.APIURL+"/chat"), chromedp.WaitVisible(chromedp.ID("signin-form")),
		chromedp.SendKeys(chromedp.ID("email"), addr), chromedp.Click(chromedp.ID("signin-submit")),
		chromedp.WaitVisible(chromedp.ID("sent")))
	mails := mailbox(t, s.APIURL, addr)
	if len(mails) != 1 {
		t.Fatalf("%d sign-in emails, want 1", len(mails))
	}
	link := signInLink.FindString(mails[0].Text)
	if link == "" {
		t.Fatalf("the sign-in email has no link:\n%s", mails[0].Text)
	}
	step("open the emailed link and press Sign in", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("signin-confirm")),
		chromedp.Click(chromedp.ID("signin-confirm")), chromedp.WaitVisible(chromedp.ID("message-form")))
	shot("signed-in")

	// The trial: three exchanges, then the offer; a fourth is refused by
	// the server with 402 whatever the page does.
	messages := []string{"Should I open a bakery in Leslieville?", "What would make it fail?", "And if I start with a market stall?",
		"Now as a subscriber: what first?", "Still here until the end of the month?"}
	// The address, the messages, the link and the cookie are only where
	// they belong, whatever happens below.
	defer func() { chatPrivacySweep(t, s, o, []string{addr}, messages) }()
	for i, m := range messages[:3] {
		write(m, i+1)
	}
	step("the offer after the trial", chromedp.WaitVisible(chromedp.ID("offer")))
	if got := message("A fourth, free?"); got != 402 {
		t.Fatalf("a fourth free message: %d, want 402", got)
	}
	shot("offer")

	// Subscribe on the fake Stripe's page; back on /chat?subscribed=1,
	// which grants nothing by itself: the message box returns once the
	// webhook has applied Stripe's events.
	step("subscribe", chromedp.Click(chromedp.ID("subscribe")), chromedp.WaitVisible(chromedp.ID("email")),
		chromedp.Submit(chromedp.ID("email")), chromedp.WaitVisible(chromedp.ID("chat")))
	subscribed := testkit.Eventually(30*time.Second, 250*time.Millisecond, func() bool {
		active, _ := chromedp.Run(tab, chromedp.Evaluate[bool](`fetch('/api/chat', {credentials: 'same-origin'}).then(r => r.json()).then(d => !!(d.subscription && d.subscription.active))`,
			chromedp.EvalAwaitPromise))
		return active
	})
	if !subscribed {
		t.Fatal("the subscription never granted access")
	}
	step("reload as a subscriber", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("message-form")))
	write(messages[3], 4)
	shot("subscriber")

	// Cancel in the fake portal: access is kept to the period's end.
	step("open the portal", chromedp.Click(chromedp.ID("portal")), chromedp.WaitVisible(chromedp.CSS(`input[value="cancel"] + button`)))
	step("cancel the plan", chromedp.Click(chromedp.CSS(`input[value="cancel"] + button`)),
		chromedp.WaitVisible(chromedp.CSS(`input[value="renew"] + button`)))
	shot("portal")
	step("back on the chat", chromedp.Navigate(s.APIURL+"/chat"), chromedp.WaitVisible(chromedp.ID("message-form")))
	cancelled := testkit.Eventually(30*time.Second, 250*time.Millisecond, func() bool {
		ok, _ := chromedp.Run(tab, chromedp.Evaluate[bool](`fetch('/api/chat', {credentials: 'same-origin'}).then(r => r.json()).then(d => !!(d.subscription && d.subscription.active && d.subscription.cancel_at_period_end))`,
			chromedp.EvalAwaitPromise))
		return ok
	})
	if !cancelled {
		t.Fatal("the cancellation never reached the chat")
	}
	step("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("message-form")))
	left, err := chromedp.Run(tab, chromedp.Text(chromedp.ID("left")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(left, "Your subscription is cancelled; you keep access until ") {
		t.Errorf("after cancelling: %q", left)
	}
	write(messages[4], 5)
	shot("cancelled")

	// The fake Stripe's clock passes the period's end: Stripe ends the
	// subscription, and the next message is refused with the offer.
	post(t, s.StripeURL+"/_clock", `{"next_period":true}`)
	refused := testkit.Eventually(30*time.Second, 250*time.Millisecond, func() bool { return message("After the end?") == 402 })
	if !refused {
		t.Fatal("a message after the period's end was still answered")
	}
	step("the offer again", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("offer")))
	shot("ended")
	checkedAll(t, checker, "POST /api/chat 402")
}
