package stripex_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

const testKey = "sk_test_stripex_list"

// fakeStripe is the fake Stripe over real HTTP, with a clock a test sets to
// create sessions at chosen times.
type fakeStripe struct {
	fake   *fakestripe.Server
	url    string
	client *stripex.Client

	mu  sync.Mutex
	now time.Time
}

func newFakeStripe(t *testing.T) *fakeStripe {
	t.Helper()
	f := &fakeStripe{now: time.Date(2025, 11, 21, 12, 0, 0, 0, time.UTC)}
	// No webhook URL: the fake stores the events and sends none.
	f.fake = fakestripe.New(fakestripe.Options{
		Clock: func() time.Time {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.now
		},
		Rand: rand.NewChaCha8([32]byte{7}),
	})
	srv := httptest.NewServer(f.fake)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	f.client = stripex.New(testKey, stripex.Options{BaseURL: srv.URL})
	return f
}

// session states a test can ask for.
const (
	open    = "open"
	paid    = "paid"
	failed  = "failed" // complete, but the delayed payment failed: unpaid
	expired = "expired"
)

// browser does not follow the pay page's redirect to the success URL.
var browser = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

// session creates a session of tier at time at, through the service's own
// create call, and takes it to state. It returns the session id.
func (f *fakeStripe) session(t *testing.T, tier oracle.Tier, at time.Time, state string) string {
	t.Helper()
	return f.sessionOf(t, tier, at, state, "ada@example.com")
}

// sessionOf is session, paid (or failed) by the customer email.
func (f *fakeStripe) sessionOf(t *testing.T, tier oracle.Tier, at time.Time, state, email string) string {
	t.Helper()
	f.mu.Lock()
	f.now = at
	f.mu.Unlock()
	cs, err := f.client.CreateCheckoutSession(context.Background(), stripex.CheckoutRequest{
		Tier: tier, Query: "Should I open a bakery?",
		SuccessURL: "https://42sisters.ai/oracle/result?session_id={CHECKOUT_SESSION_ID}",
		CancelURL:  "https://42sisters.ai/",
	})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	var resp *http.Response
	switch state {
	case open:
		return cs.ID
	case paid, failed:
		if state == failed {
			f.fake.SetControl(fakestripe.Control{FailAsync: true})
		}
		resp, err = browser.PostForm(f.url+"/pay/"+cs.ID, url.Values{"email": {email}})
	case expired:
		req, _ := http.NewRequest(http.MethodPost, f.url+"/v1/checkout/sessions/"+cs.ID+"/expire", nil)
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err = browser.Do(req)
	default:
		t.Fatalf("unknown state %q", state)
	}
	if err != nil {
		t.Fatalf("take %s to %s: %v", cs.ID, state, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusOK {
		t.Fatalf("take %s to %s: status %d", cs.ID, state, resp.StatusCode)
	}
	return cs.ID
}

// completed lists the completed sessions in [from, to).
func (f *fakeStripe) completed(t *testing.T, from, to time.Time) []oracle.Session {
	t.Helper()
	var got []oracle.Session
	err := f.client.CompletedSessions(context.Background(), from, to, func(s oracle.Session) error {
		got = append(got, s)
		return nil
	})
	if err != nil {
		t.Fatalf("CompletedSessions: %v", err)
	}
	return got
}

// listCalls are the list calls the fake received.
func (f *fakeStripe) listCalls() []fakestripe.Call {
	var out []fakestripe.Call
	for _, c := range f.fake.Calls() {
		if c.Method == http.MethodGet && c.Path == "/v1/checkout/sessions" {
			out = append(out, c)
		}
	}
	return out
}

func ids(sessions []oracle.Session) []string {
	out := make([]string, len(sessions))
	for i, s := range sessions {
		out[i] = s.ID
	}
	return out
}

func TestCompletedSessionsWindow(t *testing.T) {
	f := newFakeStripe(t)
	from := f.now.Add(-24 * time.Hour)
	to := f.now
	cases := []struct {
		name  string
		at    time.Time
		state string
		want  bool
	}{
		{"paid at from", from, paid, true},
		{"paid a second before from", from.Add(-time.Second), paid, false},
		{"paid inside", from.Add(time.Hour), paid, true},
		{"paid in the last second", to.Add(-time.Second), paid, true},
		{"paid at to", to, paid, false},
		{"payment failed inside", from.Add(2 * time.Hour), failed, true},
		{"open inside", from.Add(3 * time.Hour), open, false},
		{"expired inside", from.Add(4 * time.Hour), expired, false},
	}
	made := make([]string, len(cases))
	state := make(map[string]string)
	for i, c := range cases {
		made[i] = f.session(t, oracle.TierFull, c.at, c.state)
		state[made[i]] = c.state
	}

	got := f.completed(t, from, to)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if listed := slices.Contains(ids(got), made[i]); listed != c.want {
				t.Errorf("listed = %v, want %v", listed, c.want)
			}
		})
	}
	// Newest first, each converted as a retrieved session is.
	if !slices.IsSortedFunc(got, func(a, b oracle.Session) int { return b.Created.Compare(a.Created) }) {
		t.Errorf("not newest first: %v", got)
	}
	for _, s := range got {
		if s.Tier != oracle.TierFull || s.Query != "Should I open a bakery?" || s.Email != "ada@example.com" || s.Drop != oracle.DropNone {
			t.Errorf("session %s converted as %+v", s.ID, s)
		}
		if want := state[s.ID] == paid; s.Paid() != want {
			t.Errorf("session %s paid = %v, want %v", s.ID, s.Paid(), want)
		}
	}

	// Sub-second bounds are truncated: the same window, the same sessions.
	if again := f.completed(t, from.Add(999*time.Millisecond), to.Add(999*time.Millisecond)); !slices.Equal(ids(again), ids(got)) {
		t.Errorf("with sub-second bounds: %v, want %v", ids(again), ids(got))
	}
}

func TestCompletedSessionsPaginates(t *testing.T) {
	f := newFakeStripe(t)
	from := f.now
	// Three sessions a second, so that a page can end inside a second.
	const n = 205
	for i := range n {
		f.session(t, oracle.TierQuick, from.Add(time.Duration(i/3)*time.Second), paid)
	}
	to := from.Add(time.Hour)

	got := f.completed(t, from, to)
	seen := make(map[string]int)
	for _, id := range ids(got) {
		seen[id]++
	}
	if len(got) != n || len(seen) != n {
		t.Errorf("%d sessions listed, %d distinct; want %d once each", len(got), len(seen), n)
	}
	calls := f.listCalls()
	if len(calls) != 3 {
		t.Fatalf("%d list calls, want 3 pages", len(calls))
	}
	for i, c := range calls {
		p := c.Params
		if p.Get("status") != "complete" || p.Get("limit") != "100" || p.Get("created[gte]") != fmt.Sprint(from.Unix()) || p.Get("created[lt]") != fmt.Sprint(to.Unix()) {
			t.Errorf("call %d params = %v", i, p)
		}
		if (i == 0) != (p.Get("starting_after") == "") {
			t.Errorf("call %d starting_after = %q", i, p.Get("starting_after"))
		}
	}
}

func TestCompletedSessionsStopsAtTheFirstError(t *testing.T) {
	f := newFakeStripe(t)
	from := f.now
	var made []string
	for i := range 3 {
		made = append(made, f.session(t, oracle.TierQuick, from.Add(time.Duration(i)*time.Second), paid))
	}
	errStop := errors.New("claim failed")
	var calls []string
	err := f.client.CompletedSessions(context.Background(), from, from.Add(time.Minute), func(s oracle.Session) error {
		calls = append(calls, s.ID)
		if len(calls) == 2 {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("err = %v, want it to wrap the callback's error", err)
	}
	if want := []string{made[2], made[1]}; !slices.Equal(calls, want) {
		t.Errorf("callback saw %v, want %v and then nothing", calls, want)
	}
	// The error names the session only by the name logs may show.
	if strings.Contains(err.Error(), made[1]) || !strings.Contains(err.Error(), oracle.ShortID(made[1])) {
		t.Errorf("err = %v", err)
	}
}

// TestSessionsByEmail: the sessions of one customer's address, newest
// first, asked of Stripe by customer_details[email]; another customer's
// and a session never paid are not listed.
func TestSessionsByEmail(t *testing.T) {
	f := newFakeStripe(t)
	at := f.now
	first := f.sessionOf(t, oracle.TierQuick, at, paid, "bea@example.com")
	f.sessionOf(t, oracle.TierFull, at.Add(time.Second), paid, "cy@example.com")
	f.session(t, oracle.TierQuick, at.Add(2*time.Second), open)
	second := f.sessionOf(t, oracle.TierStrategy, at.Add(3*time.Second), failed, "bea@example.com")
	var got []string
	err := f.client.SessionsByEmail(context.Background(), "bea@example.com", func(s oracle.Session) error {
		got = append(got, s.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{second, first}; !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	calls := f.listCalls()
	if len(calls) != 1 || calls[0].Params.Get("customer_details[email]") != "bea@example.com" {
		t.Errorf("list calls %+v, want one by customer_details[email]", calls)
	}
}

func TestPing(t *testing.T) {
	f := newFakeStripe(t)
	if err := f.client.Ping(context.Background()); err != nil {
		t.Fatalf("Ping with no sessions: %v", err)
	}
	for i := range 3 {
		f.session(t, oracle.TierQuick, f.now.Add(time.Duration(i)*time.Second), paid)
	}
	if err := f.client.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	// One page of one session, even with more to list.
	for _, c := range f.listCalls() {
		if len(c.Params) != 1 || c.Params.Get("limit") != "1" {
			t.Errorf("Ping sent %v, want limit=1 alone", c.Params)
		}
	}
	if n := len(f.listCalls()); n != 2 {
		t.Errorf("%d list calls for two pings", n)
	}
}

func TestRefusedKey(t *testing.T) {
	f := newFakeStripe(t)
	f.session(t, oracle.TierQuick, f.now, paid)
	// The fake takes only test-mode keys, as a test-mode server would.
	c := stripex.New("sk_live_refused_by_the_fake", stripex.Options{BaseURL: f.url})
	tests := []struct {
		name string
		call func() error
	}{
		{"Ping", func() error { return c.Ping(context.Background()) }},
		{"CompletedSessions", func() error {
			return c.CompletedSessions(context.Background(), f.now.Add(-time.Hour), f.now.Add(time.Hour), func(s oracle.Session) error {
				t.Errorf("callback called with %s", s.ID)
				return nil
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, stripex.ErrAuth) || oracle.ErrorCode(err) != oracle.CodeUnavailable {
				t.Errorf("err = %v (code %s), want ErrAuth, unavailable", err, oracle.ErrorCode(err))
			}
		})
	}
}
