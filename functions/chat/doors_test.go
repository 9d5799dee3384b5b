package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/chat"
)

// Issue 38, finding 1: an address that reads as another's is refused with
// the way to type it; it neither mails a link nor touches the account it
// imitates.
func TestALookalikeAddressIsRefusedAndChangesNothing(t *testing.T) {
	x := newHarness(t)
	victim := "kate@gmail.com"
	if resp, _ := x.do(t, req(http.MethodPost, "/api/chat/signin", fmt.Sprintf(`{"email":%q}`, victim), "")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the victim's request: %d", resp.StatusCode)
	}
	for _, lookalike := range []string{"kate@gmaİl.com", "KATE@GMAİL.COM", "\u212Aate@gmail.com", "kåte@gmail.com"} {
		resp, body := x.do(t, req(http.MethodPost, "/api/chat/signin", fmt.Sprintf(`{"email":%q}`, lookalike), ""))
		msg, _ := body["error"].(string)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(msg, "as your mail provider writes it") {
			t.Errorf("%q: %d %q, want 400 asking to type it as the provider writes it", lookalike, resp.StatusCode, msg)
		}
	}
	// Case and an internationalised domain's two spellings are one address.
	for _, same := range []string{"Kate@Gmail.COM", " kate@gmail.com "} {
		if resp, _ := x.do(t, req(http.MethodPost, "/api/chat/signin", fmt.Sprintf(`{"email":%q}`, same), "")); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%q: %d", same, resp.StatusCode)
		}
	}
	account := x.store.AccountOf(victim)
	for i, j := range x.mail.sent() {
		if j.Account != account {
			t.Fatalf("link %d queued for account %s, want only the victim's %s", i+1, j.Account, account)
		}
	}
	if n := len(x.mail.sent()); n != 3 {
		t.Fatalf("%d links queued, want 3 (the victim's, in three spellings)", n)
	}
	if got, err := x.store.Address(context.Background(), account); err != nil || got != victim {
		t.Fatalf("the victim's account holds %q %v", got, err)
	}
}

// Issue 38, finding 5: the per-client limit keys an IPv6 client on its
// /64, which one subscriber holds whole.
func TestClientOf(t *testing.T) {
	cases := []struct{ ip, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"not an address", "not an address"},
	}
	for _, c := range cases {
		if got := clientOf(c.ip); got != c.want {
			t.Errorf("clientOf(%q) = %q, want %q", c.ip, got, c.want)
		}
	}
}

func TestSignInLimitPerClientHoldsAcrossAnIPv6Slash64(t *testing.T) {
	x := newHarness(t)
	x.h.SignInPerClient = chat.Window{Limit: 3, Per: time.Hour}
	from := func(ip, addr string) int {
		r := req(http.MethodPost, "/api/chat/signin", fmt.Sprintf(`{"email":%q}`, addr), "")
		r.RequestContext.HTTP.SourceIP = ip
		resp, _ := x.do(t, r)
		return resp.StatusCode
	}
	for i := range 3 {
		if code := from(fmt.Sprintf("2001:db8:1:2::%x", i+1), fmt.Sprintf("p%d@example.com", i)); code != http.StatusAccepted {
			t.Fatalf("request %d: %d", i+1, code)
		}
	}
	if code := from("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "p9@example.com"); code != http.StatusTooManyRequests {
		t.Fatalf("a fourth address of the same /64: %d, want 429", code)
	}
	if code := from("2001:db8:1:3::1", "p9@example.com"); code != http.StatusAccepted {
		t.Fatalf("the next /64: %d, want 202", code)
	}
}

// Issue 38, finding 5: one person's addresses share one trial through the
// chat, and the service-wide cap on new trials refuses the next one with
// the offer and tells the operator once.
func TestTrialIsThePersonsAndNewTrialsAreCapped(t *testing.T) {
	x := newHarness(t)
	x.h.NewTrialsPerDay = 2
	_, first := x.signIn(t, "ana@gmail.com")
	for i := range chat.TrialExchanges {
		if resp, _ := x.send(t, first, "Hello"); resp.StatusCode != http.StatusOK {
			t.Fatalf("exchange %d: %d", i+1, resp.StatusCode)
		}
	}
	_, tagged := x.signIn(t, "a.n.a+again@googlemail.com")
	if resp, body := x.send(t, tagged, "Hello"); resp.StatusCode != http.StatusPaymentRequired || body["error"] != "trial_used" {
		t.Fatalf("the same person's other address: %d %v, want 402 trial_used", resp.StatusCode, body)
	}
	_, second := x.signIn(t, "bo@example.com")
	if resp, _ := x.send(t, second, "Hello"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the day's second trial: %d", resp.StatusCode)
	}
	for _, addr := range []string{"cy@example.com", "di@example.com"} {
		_, cookie := x.signIn(t, addr)
		resp, body := x.send(t, cookie, "Hello")
		if resp.StatusCode != http.StatusPaymentRequired || body["error"] != "trials_paused" || body["subscribe"] != true || resp.Headers["Retry-After"] == "" {
			t.Fatalf("%s, past the cap: %d %v %v", addr, resp.StatusCode, body, resp.Headers)
		}
	}
	if kinds := x.alerts.Kinds(); len(kinds) != 1 || kinds[0] != string(alert.ChatTrialsPaused) {
		t.Fatalf("alerts %v, want one CHAT_TRIALS_PAUSED", kinds)
	}
	if resp, _ := x.send(t, second, "Hello"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a trial already started, past the cap: %d", resp.StatusCode)
	}
}

// Issue 38, finding 6: an apology gives its exchange back three times an
// account a UTC day; past that the exchange counts and the person still
// gets the apology.
func TestApologiesAreGivenBackThreeTimesADay(t *testing.T) {
	x := newHarness(t)
	x.replier.fail = func(int) (ReplyResult, error) {
		return ReplyResult{Text: "The Oracle cannot answer that one.", Filter: FilterApology}, nil
	}
	account, cookie := x.signIn(t, "ana@example.com")
	wantCounted := []bool{false, false, false, true}
	for i, want := range wantCounted {
		resp, body := x.send(t, cookie, "Hello")
		if resp.StatusCode != http.StatusOK || body["counted"] != want {
			t.Fatalf("apology %d: %d %v, want counted=%v", i+1, resp.StatusCode, body, want)
		}
	}
	if left := x.freeLeft(t, account); left != chat.TrialExchanges-1 {
		t.Fatalf("%d free exchanges left, want %d: only the fourth apology counts", left, chat.TrialExchanges-1)
	}
	x.clock.Add(24 * time.Hour)
	if _, body := x.send(t, cookie, "Hello"); body["counted"] != false {
		t.Fatalf("the next day's first apology: %v, want it given back", body)
	}
}
