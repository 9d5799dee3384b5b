package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

const (
	stripeKey = "sk_test_chat_erase"
	origin    = "https://chat.example.test"
	cookieKey = "a cookie key of thirty-two bytes or more, for tests"
	address   = "Person.Private@example.com"
)

// fakeReplier answers with a reply naming its call, or what fail says.
type fakeReplier struct {
	mu    sync.Mutex
	calls []ReplyRequest
	fail  func(n int) (ReplyResult, error) // nil: a passing reply
}

func (f *fakeReplier) Reply(_ context.Context, req ReplyRequest) (ReplyResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req)
	n, fail := len(f.calls), f.fail
	f.mu.Unlock()
	if fail != nil {
		return fail(n)
	}
	return ReplyResult{Text: fmt.Sprintf("Reply number %d, with care.", n), Filter: FilterPass}, nil
}

func (f *fakeReplier) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// fakeSubscriptions is one subscription for every account.
type fakeSubscriptions struct {
	mu  sync.Mutex
	sub Subscription
	err error
}

func (f *fakeSubscriptions) Subscription(context.Context, string) (Subscription, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sub, f.err
}

func (f *fakeSubscriptions) set(s Subscription) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sub = s
}

// fakeBilling records what it was asked for.
type fakeBilling struct {
	mu        sync.Mutex
	checkouts []string // account and address
	portals   []string
	portalURL string
	url       string // the Checkout URL answered, when set
}

func (f *fakeBilling) CheckoutURL(_ context.Context, account, email string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkouts = append(f.checkouts, account+" "+email)
	if f.url != "" {
		return f.url, nil
	}
	return "https://checkout.stripe.test/c/pay/cs_test_sub", nil
}

func (f *fakeBilling) PortalURL(_ context.Context, customer string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.portals = append(f.portals, customer)
	if f.portalURL != "" {
		return f.portalURL, nil
	}
	return "https://billing.stripe.test/p/session/" + customer, nil
}

// fakeMail keeps the jobs sent.
type fakeMail struct {
	mu   sync.Mutex
	jobs []queue.Job
}

func (f *fakeMail) Send(_ context.Context, j queue.Job) error {
	if err := j.Validate(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs = append(f.jobs, j)
	return nil
}

func (f *fakeMail) sent() []queue.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]queue.Job(nil), f.jobs...)
}

// auditSpy validates and keeps every record.
type auditSpy struct {
	t       *testing.T
	mu      sync.Mutex
	records []audit.Record
}

func (a *auditSpy) Record(_ context.Context, r audit.Record, id string) {
	if err := r.Validate(); err != nil {
		a.t.Errorf("audit record %s refused by the schema: %v", id, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.records = append(a.records, r)
}

func (a *auditSpy) outcomes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, r := range a.records {
		out = append(out, r.Chat.Plan+"/"+r.Chat.Outcome)
	}
	return out
}

// safeBuffer is a log sink for concurrent requests.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	h       *Handler
	store   *chat.Store
	clock   *testkit.Clock
	replier *fakeReplier
	subs    *fakeSubscriptions
	billing *fakeBilling
	mail    *fakeMail
	audit   *auditSpy
	alerts  *testkit.Alerts
	metrics *testkit.Metrics
	logs    *safeBuffer
	db      *dynamodb.Client
	table   string
	aws     aws.Config
	f       *provision.Fixture
	// The fake Stripe over HTTP, which the handler's Canceller calls.
	stripe    *fakestripe.Server
	stripeURL string
	subStore  *subscription.Store
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	f := provision.ForTest(t, nil)
	hasher, err := audit.NewHasher("a pepper of sixteen bytes or more")
	if err != nil {
		t.Fatal(err)
	}
	x := &harness{
		clock:   testkit.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)),
		replier: &fakeReplier{}, subs: &fakeSubscriptions{}, billing: &fakeBilling{}, mail: &fakeMail{},
		audit: &auditSpy{t: t}, alerts: &testkit.Alerts{}, metrics: &testkit.Metrics{}, logs: &safeBuffer{},
		db: dynamodb.NewFromConfig(f.AWS), table: f.Ref("ChatTable"), aws: f.AWS, f: f,
	}
	x.store = chat.NewStore(awsenv.NewTables(f.AWS), x.table, hasher, x.clock.Now)
	x.stripe = fakestripe.New(fakestripe.Options{Rand: mrand.NewChaCha8([32]byte{38})})
	srv := httptest.NewServer(x.stripe)
	t.Cleanup(srv.Close)
	x.stripeURL = srv.URL
	x.subStore = subscription.NewStore(awsenv.NewTables(f.AWS), chat.NewClient(f.AWS), x.table)
	cancels := canceller{store: x.subStore, stripe: stripex.NewBilling(secret.Static(stripeKey), stripex.Options{BaseURL: srv.URL})}
	x.h = &Handler{
		Site: defaultSite, Support: oracle.SupportAddress, Origin: origin, CookieKey: []byte(cookieKey),
		RetentionDays: 30, DailyCap: 100, HistoryChars: HistoryChars, ShowChars: ShowChars, ReplyTimeout: 5 * time.Second,
		SignInPerAccount: chat.SignInPerAccount, SignInPerClient: chat.SignInPerClient,
		NewTrialsPerDay: 1000, GiveBacksPerDay: chat.GiveBacksPerDay,
		Accounts: x.store, Conversations: x.store.Conversation(x.db, 30*24*time.Hour),
		Mail: x.mail, Replier: x.replier, Subscriptions: x.subs, Billing: x.billing, Canceller: cancels, Audit: x.audit, Alerts: x.alerts, Metrics: x.metrics,
		Hasher: hasher, Log: obs.NewLogger(x.logs, "DEBUG"), Now: x.clock.Now, Random: rand.Reader,
	}
	return x
}

// req is a request as the chat page's script sends it: same origin, JSON.
func req(method, path, body, cookie string) httpapi.Request {
	var r httpapi.Request
	r.RawPath = path
	r.RequestContext.HTTP.Method = method
	r.RequestContext.HTTP.Path = path
	r.RequestContext.HTTP.SourceIP = "203.0.113.7"
	r.Headers = map[string]string{"origin": origin, "content-type": "application/json"}
	if cookie != "" {
		r.Cookies = []string{chatsession.CookieName + "=" + cookie}
	}
	r.Body = body
	return r
}

func (x *harness) do(t *testing.T, r httpapi.Request) (httpapi.Response, map[string]any) {
	t.Helper()
	resp, err := x.h.Handle(context.Background(), r)
	if err != nil {
		t.Fatalf("%s %s: error crossed the handler: %v", r.RequestContext.HTTP.Method, r.RawPath, err)
	}
	var body map[string]any
	if strings.HasPrefix(resp.Headers["Content-Type"], "application/json") {
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
			t.Fatalf("%s %s: body %q: %v", r.RequestContext.HTTP.Method, r.RawPath, resp.Body, err)
		}
	}
	return resp, body
}

// signIn signs address in as a person does: the emailed link's page,
// then its button; it returns the session cookie's value.
func (x *harness) signIn(t *testing.T, addr string) (account, cookie string) {
	t.Helper()
	account, token := x.mint(t, addr)
	if resp, _ := x.do(t, link(http.MethodGet, token)); resp.StatusCode != http.StatusOK || len(resp.Cookies) != 0 {
		t.Fatalf("sign-in link's page: %d %v", resp.StatusCode, resp.Cookies)
	}
	return account, x.press(t, form(token))
}

// mint makes addr's account and mints a sign-in token as the mailer does.
func (x *harness) mint(t *testing.T, addr string) (account, token string) {
	t.Helper()
	ctx := context.Background()
	account, _, err := x.store.SignUp(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	token, _, err = x.store.IssueSignIn(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	return account, token
}

// press posts the sign-in form r, which must sign in: 303 to /chat with
// the session cookie, whose value it returns.
func (x *harness) press(t *testing.T, r httpapi.Request) string {
	t.Helper()
	resp, _ := x.do(t, r)
	if resp.StatusCode != http.StatusSeeOther || resp.Headers["Location"] != "/chat" || len(resp.Cookies) != 1 {
		t.Fatalf("sign-in button: %d %v %v %s", resp.StatusCode, resp.Headers, resp.Cookies, resp.Body)
	}
	c, err := http.ParseSetCookie(resp.Cookies[0])
	if err != nil {
		t.Fatal(err)
	}
	return c.Value
}

// link is the emailed link opened with method (GET or HEAD).
func link(method, token string) httpapi.Request {
	r := req(method, "/chat/signin", "", "")
	r.Headers = map[string]string{}
	r.QueryStringParameters = map[string]string{"token": token}
	return r
}

// form is the sign-in page's form as a browser posts it: from the site's
// own page, form-encoded.
func form(token string) httpapi.Request {
	r := req(http.MethodPost, "/chat/signin", "token="+url.QueryEscape(token), "")
	r.Headers = map[string]string{"origin": origin, "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin"}
	return r
}

func (x *harness) send(t *testing.T, cookie, message string) (httpapi.Response, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"message": message})
	return x.do(t, req(http.MethodPost, "/api/chat", string(b), cookie))
}

func (x *harness) freeLeft(t *testing.T, account string) int {
	t.Helper()
	u, err := x.store.Usage(context.Background(), account)
	if err != nil {
		t.Fatal(err)
	}
	return u.FreeLeft
}

func TestSignInRequestIsAlways202AndQueuesOneLink(t *testing.T) {
	x := newHarness(t)
	for i, addr := range []string{address, "  " + address + " ", "new.person@example.org"} {
		resp, body := x.do(t, req(http.MethodPost, "/api/chat/signin", fmt.Sprintf(`{"email":%q}`, addr), ""))
		if resp.StatusCode != http.StatusAccepted || body["status"] != "sent" {
			t.Fatalf("request %d: %d %v", i+1, resp.StatusCode, body)
		}
	}
	jobs := x.mail.sent()
	if len(jobs) != 3 {
		t.Fatalf("%d mail jobs, want 3", len(jobs))
	}
	account := x.store.AccountOf(address)
	for i, j := range jobs[:2] {
		if j.Kind != oracle.MailChatSignIn || j.Account != account || j.SessionID != "" {
			t.Fatalf("job %d: %+v", i+1, j)
		}
	}
	if jobs[0].Nonce == jobs[1].Nonce {
		t.Fatal("two requests share a nonce: the second email would be taken for the first")
	}
	if got, err := x.store.Address(context.Background(), account); err != nil || got != "person.private@example.com" {
		t.Fatalf("stored address %q %v, want its canonical form", got, err)
	}

	bad := []struct {
		name, body string
		status     int
	}{
		{"no body", "", 400},
		{"not JSON", "email=a@example.com", 400},
		{"two objects", `{"email":"a@example.com"}{}`, 400},
		{"no email", `{}`, 400},
		{"null email", `{"email":null}`, 400},
		{"empty", `{"email":" "}`, 400},
		{"no at", `{"email":"person.example.com"}`, 400},
		{"display name", `{"email":"Person <p@example.com>"}`, 400},
		{"two addresses", `{"email":"a@example.com, b@example.com"}`, 400},
		{"no dot in the domain", `{"email":"p@localhost"}`, 400},
		{"too long", fmt.Sprintf(`{"email":"%s@example.com"}`, strings.Repeat("a", 250)), 400},
		{"body too large", fmt.Sprintf(`{"email":"%s"}`, strings.Repeat("a", MaxBody)), 413},
	}
	for _, c := range bad {
		if resp, body := x.do(t, req(http.MethodPost, "/api/chat/signin", c.body, "")); resp.StatusCode != c.status || body["error"] == "" {
			t.Errorf("%s: %d %v, want %d with an error", c.name, resp.StatusCode, body, c.status)
		}
	}
	if n := len(x.mail.sent()); n != 3 {
		t.Fatalf("bad requests queued mail: %d jobs", n)
	}
}

func TestSignInRequestsAreRateLimited(t *testing.T) {
	x := newHarness(t)
	x.h.SignInPerAccount = chat.Window{Limit: 2, Per: time.Hour}
	x.h.SignInPerClient = chat.Window{Limit: 4, Per: time.Hour}
	body := fmt.Sprintf(`{"email":%q}`, address)
	for i := range 3 {
		if resp, _ := x.do(t, req(http.MethodPost, "/api/chat/signin", body, "")); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("request %d: %d", i+1, resp.StatusCode)
		}
	}
	// The account's limit: still 202 (the answer says nothing of the
	// address), but no third email.
	if n := len(x.mail.sent()); n != 2 {
		t.Fatalf("%d emails for one address, want its limit of 2", n)
	}
	if resp, _ := x.do(t, req(http.MethodPost, "/api/chat/signin", `{"email":"other@example.com"}`, "")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("fourth request from the client: %d", resp.StatusCode)
	}
	resp, out := x.do(t, req(http.MethodPost, "/api/chat/signin", `{"email":"third@example.com"}`, ""))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Headers["Retry-After"] == "" || out["error"] == "" {
		t.Fatalf("over the client's limit: %d %v %v", resp.StatusCode, resp.Headers, out)
	}
	other := req(http.MethodPost, "/api/chat/signin", `{"email":"third@example.com"}`, "")
	other.RequestContext.HTTP.SourceIP = "198.51.100.9"
	if resp, _ := x.do(t, other); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("another client: %d", resp.StatusCode)
	}
	x.clock.Add(time.Hour)
	if resp, _ := x.do(t, req(http.MethodPost, "/api/chat/signin", body, "")); resp.StatusCode != http.StatusAccepted || len(x.mail.sent()) != 5 {
		t.Fatalf("next window: %d, %d emails", resp.StatusCode, len(x.mail.sent()))
	}
}

// Finding 2 of issue 38: opening the emailed link (GET, or a scanner's
// HEAD) shows a page whose one button posts the token; it spends nothing,
// sets no cookie and reads nothing, so that a used, expired or unknown
// token of the right form shows the same page, and the link still works
// afterwards. A token that could not have been minted is "not valid" at
// once.
func TestSignInLinkShowsAButtonAndSpendsNothing(t *testing.T) {
	x := newHarness(t)
	account, token := x.mint(t, address)
	_, used := x.mint(t, address)
	x.press(t, form(used))
	page := func(method, tok string) string {
		return strings.ReplaceAll(x.mustPage(t, link(method, tok)), tok, "TOKEN")
	}
	want := page(http.MethodGet, token)
	for _, part := range []string{`<form method="post" action="/chat/signin">`, `<input type="hidden" name="token" value="TOKEN">`,
		`<button type="submit" id="signin-confirm">Sign in</button>`} {
		if !strings.Contains(want, part) {
			t.Errorf("the link's page lacks %s:\n%s", part, want)
		}
	}
	for i := range 3 {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			if got := page(method, token); got != want {
				t.Fatalf("%s %d of the link: the page changed:\n%s", method, i+1, got)
			}
		}
	}
	// A scanner learns nothing: a used token's page and an unknown one's
	// are the page of a working link.
	for name, tok := range map[string]string{"used": used, "unknown": strings.Repeat("Z", 43)} {
		if got := page(http.MethodGet, tok); got != want {
			t.Errorf("the page of a %s token differs from a working one's:\n%s", name, got)
		}
	}
	for _, tok := range []string{"", "short", strings.Repeat("A", 44), strings.Repeat("A", 42) + "-", strings.Repeat("A", 43) + "," + strings.Repeat("B", 43)} {
		resp, _ := x.do(t, link(http.MethodGet, tok))
		if resp.StatusCode != http.StatusBadRequest || len(resp.Cookies) != 0 || !strings.Contains(resp.Body, "not valid") || strings.Contains(resp.Body, "<form") {
			t.Errorf("link with token %q: %d %v, want 400 not valid, no button", tok, resp.StatusCode, resp.Cookies)
		}
	}
	if x.freeLeft(t, account) != chat.TrialExchanges {
		t.Fatal("opening the link changed the account")
	}
	x.press(t, form(token))
}

// mustPage answers r, which must be the sign-in link's page: 200, HTML
// that is never cached and sends no referrer (the token is in its address)
// and may post its form only to this site, and no cookie.
func (x *harness) mustPage(t *testing.T, r httpapi.Request) string {
	t.Helper()
	resp, _ := x.do(t, r)
	h := resp.Headers
	if resp.StatusCode != http.StatusOK || len(resp.Cookies) != 0 || !strings.HasPrefix(h["Content-Type"], "text/html") ||
		h["Cache-Control"] != "no-store" || h["Referrer-Policy"] != "no-referrer" || !strings.Contains(h["Content-Security-Policy"], "form-action 'self'") {
		t.Fatalf("%s %s: %d %v %v", r.RequestContext.HTTP.Method, r.RawPath, resp.StatusCode, h, resp.Cookies)
	}
	return resp.Body
}

// Finding 2 of issue 38: the button's POST is a form, which any site can
// make a browser send, so it signs in only from this site's own page: the
// browser's Origin is the site's, or (none, or "null" from a page that
// sends no referrer) its Sec-Fetch-Site is same-origin. Anything else is
// a 403 page, and the token stays unspent.
func TestSignInButtonRefusesOtherSites(t *testing.T) {
	x := newHarness(t)
	const ct = "application/x-www-form-urlencoded"
	refused := []struct {
		name    string
		headers map[string]string
	}{
		{"another origin", map[string]string{"origin": "https://evil.example", "content-type": ct}},
		{"another origin, said same-origin", map[string]string{"origin": "https://evil.example", "content-type": ct, "sec-fetch-site": "same-origin"}},
		{"the site's origin over http", map[string]string{"origin": "http://chat.example.test", "content-type": ct}},
		{"a subdomain", map[string]string{"origin": "https://x.chat.example.test", "content-type": ct}},
		{"no origin and no Sec-Fetch-Site", map[string]string{"content-type": ct}},
		{"no origin, cross-site", map[string]string{"content-type": ct, "sec-fetch-site": "cross-site"}},
		{"no origin, same-site", map[string]string{"content-type": ct, "sec-fetch-site": "same-site"}},
		{"no origin, typed in", map[string]string{"content-type": ct, "sec-fetch-site": "none"}},
		{"a null origin, cross-site", map[string]string{"origin": "null", "content-type": ct, "sec-fetch-site": "cross-site"}},
		{"a null origin alone", map[string]string{"origin": "null", "content-type": ct}},
	}
	account, token := x.mint(t, address)
	for _, c := range refused {
		r := form(token)
		r.Headers = c.headers
		resp, _ := x.do(t, r)
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies) != 0 || !strings.HasPrefix(resp.Headers["Content-Type"], "text/html") ||
			!strings.Contains(resp.Body, "This sign-in was refused") || !strings.Contains(resp.Body, `href="/chat"`) {
			t.Errorf("%s: %d %v %v, want the 403 page", c.name, resp.StatusCode, resp.Headers, resp.Cookies)
		}
	}
	cookie := x.press(t, form(token))
	if s, err := chatsession.Verify([]byte(cookieKey), cookie, x.clock.Now()); err != nil || s.Account != account {
		t.Fatalf("the token after the refusals: %v %v", s, err)
	}
	if strings.Contains(x.logs.String(), token) {
		t.Fatal("the logs hold the token")
	}
	accepted := []struct {
		name    string
		headers map[string]string
	}{
		{"the site's origin", map[string]string{"origin": origin, "content-type": ct}},
		{"no origin, same-origin", map[string]string{"content-type": ct + "; charset=UTF-8", "sec-fetch-site": "same-origin"}},
		{"a null origin, same-origin", map[string]string{"origin": "null", "content-type": ct, "sec-fetch-site": "same-origin"}},
	}
	for _, c := range accepted {
		_, tok := x.mint(t, address)
		r := form(tok)
		r.Headers = c.headers
		x.press(t, r)
	}
}

// The button spends the link once: 303 to /chat with the session cookie;
// a second press, an expired link, or a form that is not the page's get a
// page saying why, with the way to ask again, and no cookie.
func TestSignInButtonSetsTheSessionCookieOnce(t *testing.T) {
	x := newHarness(t)
	account, token := x.mint(t, address)
	resp, _ := x.do(t, form(token))
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies) != 1 || resp.Headers["Location"] != "/chat" || resp.Headers["Cache-Control"] != "no-store" {
		t.Fatalf("first use: %d %v %v", resp.StatusCode, resp.Headers, resp.Cookies)
	}
	c, err := http.ParseSetCookie(resp.Cookies[0])
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != chatsession.CookieName || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge != 2592000 {
		t.Fatalf("cookie %q", resp.Cookies[0])
	}
	if strings.Contains(c.Value, token) || !strings.HasPrefix(c.Value, account+".") {
		t.Fatalf("cookie value %q", c.Value)
	}

	_, late := x.mint(t, address)
	_, spare := x.mint(t, address)
	x.clock.Add(chat.SignInTTL)
	_, fresh := x.mint(t, address)
	body := func(b string) func(httpapi.Request) httpapi.Request {
		return func(r httpapi.Request) httpapi.Request { r.Body = b; return r }
	}
	cases := []struct {
		name   string
		r      httpapi.Request
		status int
		says   string
	}{
		{"replayed", form(token), http.StatusGone, "already used"},
		{"expired", form(late), http.StatusGone, "expired"},
		{"forged", form(strings.Repeat("A", 43)), http.StatusBadRequest, "not valid"},
		{"missing", form(""), http.StatusBadRequest, "not valid"},
		{"no token field", body("tok=" + fresh)(form(fresh)), http.StatusBadRequest, "not valid"},
		{"two tokens", body("token=" + fresh + "&token=" + spare)(form(fresh)), http.StatusBadRequest, "not valid"},
		{"a token with more", body("token=" + fresh + "x")(form(fresh)), http.StatusBadRequest, "not valid"},
		{"not a form", body("token=%zz")(form(fresh)), http.StatusBadRequest, "not valid"},
		{"bad base64", func() httpapi.Request { r := form(fresh); r.IsBase64Encoded = true; r.Body = "!!"; return r }(), http.StatusBadRequest, "not valid"},
		{"too large", body("token=" + fresh + "&pad=" + strings.Repeat("a", chatsession.MaxForm))(form(fresh)), http.StatusRequestEntityTooLarge, "takes the sign-in page&#39;s button only"},
		{"JSON", func() httpapi.Request {
			r := form(fresh)
			r.Headers["content-type"] = "application/json"
			r.Body = `{"token":"` + fresh + `"}`
			return r
		}(), http.StatusUnsupportedMediaType, "takes the sign-in page&#39;s button only"},
		{"no content type", func() httpapi.Request { r := form(fresh); delete(r.Headers, "content-type"); return r }(), http.StatusUnsupportedMediaType, "takes the sign-in page&#39;s button only"},
	}
	for _, c := range cases {
		resp, _ := x.do(t, c.r)
		if resp.StatusCode != c.status || len(resp.Cookies) != 0 || !strings.Contains(resp.Body, c.says) ||
			!strings.Contains(resp.Body, `href="/chat"`) || resp.Headers["Content-Security-Policy"] == "" {
			t.Errorf("%s: %d cookies %v, want %d saying %q with a link to ask again", c.name, resp.StatusCode, resp.Cookies, c.status, c.says)
		}
	}
	// None of the refused forms spent the fresh link; API Gateway's base64
	// form of the body is read as the body.
	r := form(fresh)
	r.IsBase64Encoded = true
	r.Body = base64.StdEncoding.EncodeToString([]byte("token=" + fresh))
	x.press(t, r)
}

func TestSessionCookieIsCheckedOnEveryAPIRoute(t *testing.T) {
	x := newHarness(t)
	_, cookie := x.signIn(t, address)
	if resp, _ := x.do(t, req(http.MethodGet, "/api/chat", "", cookie)); resp.StatusCode != http.StatusOK {
		t.Fatalf("valid cookie: %d", resp.StatusCode)
	}
	account, ms, _ := strings.Cut(cookie, ".")
	otherAccount := x.store.AccountOf("someone.else@example.com")
	if _, _, err := x.store.SignUp(context.Background(), "someone.else@example.com"); err != nil {
		t.Fatal(err)
	}
	flip := []byte(cookie)
	flip[len(flip)-2] ^= 1
	forged := []struct{ name, cookie string }{
		{"none", ""},
		{"garbage", "not-a-session"},
		{"another account's name with this signature", strings.Replace(cookie, account, otherAccount, 1)},
		{"a changed issue time", strings.Replace(cookie, "."+strings.Split(ms, ".")[0]+".", ".9"+strings.Split(ms, ".")[0]+".", 1)},
		{"a tampered signature", string(flip)},
		{"no signature", account + "." + strings.Split(ms, ".")[0]},
		{"signed with another key", chatsession.Sign([]byte("another key of thirty-two bytes or more"), chatsession.Session{Account: account, Issued: x.clock.Now()})},
	}
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/api/chat", ""},
		{http.MethodPost, "/api/chat", `{"message":"hello"}`},
		{http.MethodDelete, "/api/chat", `{}`},
		{http.MethodPost, "/api/chat/subscribe", `{}`},
		{http.MethodPost, "/api/chat/portal", `{}`},
		{http.MethodPost, "/api/chat/signout", `{}`},
		{http.MethodDelete, "/api/chat/account", `{}`},
	}
	for _, f := range forged {
		for _, r := range routes {
			resp, body := x.do(t, req(r.method, r.path, r.body, f.cookie))
			if resp.StatusCode != http.StatusUnauthorized || body["signin"] != true {
				t.Errorf("%s cookie, %s %s: %d %v, want 401", f.name, r.method, r.path, resp.StatusCode, body)
			}
			if f.cookie != "" && (len(resp.Cookies) != 1 || !strings.Contains(resp.Cookies[0], "Max-Age=0")) {
				t.Errorf("%s cookie, %s %s: not cleared: %v", f.name, r.method, r.path, resp.Cookies)
			}
		}
	}
	if x.replier.count() != 0 || x.freeLeft(t, account) != chat.TrialExchanges {
		t.Fatal("a refused session reached the model or spent an exchange")
	}
	// Expired: 30 days after its sign-in.
	x.clock.Add(chatsession.TTL - time.Second)
	if resp, _ := x.do(t, req(http.MethodGet, "/api/chat", "", cookie)); resp.StatusCode != http.StatusOK {
		t.Fatalf("a second before expiry: %d", resp.StatusCode)
	}
	x.clock.Add(time.Second)
	if resp, _ := x.do(t, req(http.MethodGet, "/api/chat", "", cookie)); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("expired cookie: %d, want 401", resp.StatusCode)
	}
}

func TestStateChangingRoutesRefuseOtherOrigins(t *testing.T) {
	x := newHarness(t)
	account, cookie := x.signIn(t, address)
	x.subs.set(Subscription{Customer: "cus_1", Status: "active", Grants: true})
	routes := []struct{ method, path, body string }{
		{http.MethodPost, "/api/chat/signin", `{"email":"victim@example.com"}`},
		{http.MethodPost, "/api/chat", `{"message":"hello"}`},
		{http.MethodDelete, "/api/chat", `{}`},
		{http.MethodPost, "/api/chat/subscribe", `{}`},
		{http.MethodPost, "/api/chat/portal", `{}`},
		{http.MethodPost, "/api/chat/signout", `{}`},
		{http.MethodDelete, "/api/chat/account", `{}`},
	}
	attacks := []struct {
		name    string
		headers map[string]string
	}{
		{"another origin", map[string]string{"origin": "https://evil.example", "content-type": "application/json"}},
		{"the site's origin over http", map[string]string{"origin": "http://chat.example.test", "content-type": "application/json"}},
		{"a form post", map[string]string{"origin": origin, "content-type": "application/x-www-form-urlencoded"}},
		{"a text/plain post", map[string]string{"origin": origin, "content-type": "text/plain"}},
		{"no content type", map[string]string{"origin": origin}},
		{"no origin, cross-site", map[string]string{"content-type": "application/json", "sec-fetch-site": "cross-site"}},
		{"no origin at all", map[string]string{"content-type": "application/json"}},
	}
	for _, a := range attacks {
		for _, r := range routes {
			rq := req(r.method, r.path, r.body, cookie)
			rq.Headers = a.headers
			if resp, body := x.do(t, rq); resp.StatusCode != http.StatusForbidden || body["error"] == "" {
				t.Errorf("%s, %s %s: %d %v, want 403", a.name, r.method, r.path, resp.StatusCode, body)
			}
		}
	}
	if x.replier.count() != 0 || len(x.mail.sent()) != 0 || len(x.billing.checkouts)+len(x.billing.portals) != 0 || x.freeLeft(t, account) != chat.TrialExchanges {
		t.Fatal("a refused request did something")
	}
	if _, err := x.store.Address(context.Background(), account); err != nil {
		t.Fatalf("a refused erasure erased the account: %v", err)
	}
	// The browser's own same-origin request without an Origin header.
	rq := req(http.MethodPost, "/api/chat", `{"message":"hello"}`, cookie)
	rq.Headers = map[string]string{"content-type": "application/json; charset=utf-8", "sec-fetch-site": "same-origin"}
	if resp, _ := x.do(t, rq); resp.StatusCode != http.StatusOK {
		t.Fatalf("same-origin without Origin: %d", resp.StatusCode)
	}
}

// INV-9, VC-9: three exchanges free, then 402 with the offer; the count is
// the server's, so a new sign-in does not reset it.
func TestThreeFreeExchangesThenPaymentRequired(t *testing.T) {
	x := newHarness(t)
	account, cookie := x.signIn(t, address)
	for i := range chat.TrialExchanges {
		resp, body := x.send(t, cookie, fmt.Sprintf("Question %d?", i+1))
		if resp.StatusCode != http.StatusOK || body["reply"] != fmt.Sprintf("Reply number %d, with care.", i+1) ||
			body["exchanges_left"] != float64(chat.TrialExchanges-1-i) || body["plan"] != "trial" {
			t.Fatalf("exchange %d: %d %v", i+1, resp.StatusCode, body)
		}
	}
	_, cookie = x.signIn(t, address)
	resp, _ := x.send(t, cookie, "One more?")
	if resp.StatusCode != http.StatusPaymentRequired || resp.Body != `{"error":"trial_used","subscribe":true}` {
		t.Fatalf("fourth exchange: %d %s", resp.StatusCode, resp.Body)
	}
	if x.replier.count() != chat.TrialExchanges || x.freeLeft(t, account) != 0 {
		t.Fatalf("model called %d times", x.replier.count())
	}
	// The model was given the conversation so far with the third message.
	if h := x.replier.calls[2].History; len(h) != 4 || h[0].Text != "Question 1?" || h[1].Role != chat.RoleAether {
		t.Fatalf("history of the third message: %+v", h)
	}
	if got := strings.Join(x.audit.outcomes(), " "); got != "trial/answered trial/answered trial/answered /trial_used" {
		t.Fatalf("audit outcomes %q", got)
	}
	// Subscribed: the fourth is answered at once.
	x.subs.set(Subscription{Grants: true, Status: "active", Customer: "cus_1", PeriodEnd: x.clock.Now().Add(30 * 24 * time.Hour)})
	resp, body := x.send(t, cookie, "And now?")
	sub, _ := body["subscription"].(map[string]any)
	if resp.StatusCode != http.StatusOK || body["plan"] != "subscriber" || sub["left_today"] != float64(99) || sub["active"] != true {
		t.Fatalf("subscriber's exchange: %d %v", resp.StatusCode, body)
	}
	// Cancelled and past its period: refused again.
	x.subs.set(Subscription{Grants: false, Status: "canceled", Customer: "cus_1"})
	if resp, _ := x.send(t, cookie, "Still there?"); resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("after the subscription ended: %d", resp.StatusCode)
	}
}

// FM-10 and the issue's acceptance: ten concurrent messages on a fresh
// account get exactly three answers; with one exchange left, exactly one.
func TestConcurrentMessagesGetOnlyTheFreeExchanges(t *testing.T) {
	x := newHarness(t)
	for _, c := range []struct {
		addr           string
		before, answer int
	}{{address, 0, 3}, {"second@example.com", 2, 1}} {
		_, cookie := x.signIn(t, c.addr)
		for range c.before {
			if resp, _ := x.send(t, cookie, "warming up"); resp.StatusCode != http.StatusOK {
				t.Fatal(resp.StatusCode)
			}
		}
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			statuses = map[int]int{}
		)
		for i := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := x.h.Handle(context.Background(), req(http.MethodPost, "/api/chat", fmt.Sprintf(`{"message":"at once %d"}`, i), cookie))
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if statuses[200] != c.answer || statuses[402] != 10-c.answer {
			t.Fatalf("%d before, ten at once: %v, want %d answered and the rest 402", c.before, statuses, c.answer)
		}
	}
}

// A model failure and an apology spend nothing; the apology is not stored.
func TestModelFailureAndApologyGiveTheExchangeBack(t *testing.T) {
	x := newHarness(t)
	account, cookie := x.signIn(t, address)
	for _, failure := range []error{ErrModelUnavailable, context.DeadlineExceeded, errors.New("anything else")} {
		x.replier.fail = func(int) (ReplyResult, error) { return ReplyResult{}, failure }
		resp, body := x.send(t, cookie, "Will you answer?")
		if resp.StatusCode != http.StatusServiceUnavailable || body["retry"] != true || !strings.Contains(fmt.Sprint(body["error"]), "try again") {
			t.Fatalf("%v: %d %v", failure, resp.StatusCode, body)
		}
		if n := x.freeLeft(t, account); n != chat.TrialExchanges {
			t.Fatalf("%v spent an exchange: %d left", failure, n)
		}
	}
	x.replier.fail = func(int) (ReplyResult, error) {
		return ReplyResult{Text: "I am sorry: I cannot answer that well just now. Please ask again in other words.", Filter: FilterApology}, nil
	}
	resp, body := x.send(t, cookie, "Something the filter dislikes")
	if resp.StatusCode != http.StatusOK || body["counted"] != false || body["exchanges_left"] != float64(chat.TrialExchanges) {
		t.Fatalf("apology: %d %v", resp.StatusCode, body)
	}
	x.replier.fail = func(int) (ReplyResult, error) {
		return ReplyResult{Text: "A second try, clean.", Filter: FilterRegenerated}, nil
	}
	if resp, body := x.send(t, cookie, "Again"); resp.StatusCode != http.StatusOK || body["exchanges_left"] != float64(chat.TrialExchanges-1) {
		t.Fatalf("regenerated reply: %d %v", resp.StatusCode, body)
	}
	_, conv := x.do(t, req(http.MethodGet, "/api/chat", "", cookie))
	if msgs, _ := conv["messages"].([]any); len(msgs) != 2 {
		t.Fatalf("stored %d messages, want only the answered exchange's 2: %v", len(msgs), conv["messages"])
	}
	want := "trial/model_failed trial/model_failed trial/model_failed trial/answered trial/answered"
	if got := strings.Join(x.audit.outcomes(), " "); got != want {
		t.Fatalf("audit outcomes %q, want %q", got, want)
	}
	for _, r := range x.audit.records[:3] {
		if r.Status != audit.StatusError || r.ErrorDetail == nil {
			t.Fatalf("model failure record %+v", r)
		}
	}
	if x.audit.records[3].Chat.Filter != audit.ChatFilterApology || x.audit.records[4].Chat.Filter != audit.ChatFilterRegenerated {
		t.Fatalf("filter outcomes %+v %+v", x.audit.records[3].Chat, x.audit.records[4].Chat)
	}
	// The dashboard's Sisters Chat chart counts both kinds of failure, and
	// the one exchange answered and spent.
	if got := x.metrics.Counts(); got["ChatModelFailures"] != 3 || got["ChatApologies"] != 1 || got["ChatExchanges"] != 1 || len(got) != 3 {
		t.Fatalf("metrics %v, want 3 ChatModelFailures, 1 ChatApologies and 1 ChatExchanges", got)
	}
}

func TestSubscribersDailyCap(t *testing.T) {
	x := newHarness(t)
	x.h.DailyCap = 12
	_, cookie := x.signIn(t, address)
	x.subs.set(Subscription{Grants: true, Status: "active", Customer: "cus_1"})
	for i := range chat.TrialExchanges + 12 {
		resp, body := x.send(t, cookie, "again")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("exchange %d: %d %v", i+1, resp.StatusCode, body)
		}
		if i == chat.TrialExchanges+1 {
			if sub, _ := body["subscription"].(map[string]any); sub["left_today"] != float64(10) {
				t.Fatalf("left today %v, want 10", body)
			}
		}
	}
	resp, body := x.send(t, cookie, "over the cap")
	if resp.StatusCode != http.StatusTooManyRequests || body["daily_cap"] != float64(12) || resp.Headers["Retry-After"] != "43200" {
		t.Fatalf("over the cap: %d %v %v", resp.StatusCode, body, resp.Headers)
	}
	_, state := x.do(t, req(http.MethodGet, "/api/chat", "", cookie))
	if sub, _ := state["subscription"].(map[string]any); sub["left_today"] != float64(0) {
		t.Fatalf("GET after the cap: %v", state)
	}
	if got := x.audit.outcomes(); got[len(got)-1] != "subscriber/capped" {
		t.Fatalf("last audit outcome %v", got[len(got)-1])
	}
	x.clock.Add(12 * time.Hour)
	if resp, _ := x.send(t, cookie, "a new day"); resp.StatusCode != http.StatusOK {
		t.Fatalf("next day: %d", resp.StatusCode)
	}
}

func TestBadMessagesAreRefusedAndSpendNothing(t *testing.T) {
	x := newHarness(t)
	account, cookie := x.signIn(t, address)
	cases := []struct {
		name, body string
		status     int
	}{
		{"no body", "", 400},
		{"not JSON", "message=hi", 400},
		{"no message", `{}`, 400},
		{"a number", `{"message":42}`, 400},
		{"empty", `{"message":""}`, 400},
		{"spaces and newlines", `{"message":"  \n\t "}`, 400},
		{"invisible characters only", `{"message":"\u200b\u200d\ufeff\u2800"}`, 400},
		{"a NUL", `{"message":"a\u0000b"}`, 400},
		{"over the limit", fmt.Sprintf(`{"message":%q}`, strings.Repeat("é", MaxMessageChars+1)), 413},
	}
	for _, c := range cases {
		if resp, body := x.do(t, req(http.MethodPost, "/api/chat", c.body, cookie)); resp.StatusCode != c.status || body["error"] == "" {
			t.Errorf("%s: %d %v, want %d", c.name, resp.StatusCode, body, c.status)
		}
	}
	if resp, _ := x.send(t, cookie, strings.Repeat("é", MaxMessageChars)); resp.StatusCode != http.StatusOK {
		t.Fatalf("a message at the limit: %d", resp.StatusCode)
	}
	if x.replier.count() != 1 || x.freeLeft(t, account) != chat.TrialExchanges-1 {
		t.Fatalf("bad messages reached the model (%d calls) or spent exchanges", x.replier.count())
	}
}

func TestConversationIsShownAndForgotten(t *testing.T) {
	x := newHarness(t)
	account, cookie := x.signIn(t, address)
	_, other := x.signIn(t, "other@example.com")
	x.send(t, other, "Someone else's question")
	for _, m := range []string{"First question?", "Second question?"} {
		x.clock.Add(time.Minute)
		if resp, _ := x.send(t, cookie, m); resp.StatusCode != http.StatusOK {
			t.Fatal(resp.StatusCode)
		}
	}
	resp, body := x.do(t, req(http.MethodGet, "/api/chat", "", cookie))
	msgs, _ := body["messages"].([]any)
	if resp.StatusCode != http.StatusOK || len(msgs) != 4 || body["exchanges_left"] != float64(1) || body["trial_exchanges"] != float64(3) || body["subscription"] != nil {
		t.Fatalf("GET /api/chat: %d %v", resp.StatusCode, body)
	}
	var got []string
	for _, m := range msgs {
		m := m.(map[string]any)
		got = append(got, fmt.Sprint(m["role"], ": ", m["text"]))
	}
	if want := "user: First question? | aether: Reply number 2, with care. | user: Second question? | aether: Reply number 3, with care."; strings.Join(got, " | ") != want {
		t.Fatalf("conversation %q", strings.Join(got, " | "))
	}
	resp, body = x.do(t, req(http.MethodDelete, "/api/chat", `{}`, cookie))
	if resp.StatusCode != http.StatusOK || body["forgotten"] != float64(4) {
		t.Fatalf("DELETE: %d %v", resp.StatusCode, body)
	}
	if _, body := x.do(t, req(http.MethodGet, "/api/chat", "", cookie)); len(body["messages"].([]any)) != 0 || body["exchanges_left"] != float64(1) {
		t.Fatalf("after DELETE: %v", body)
	}
	// No message of the account is left in the table; the other's is.
	for _, item := range testkit.TableItems(t, x.aws, x.table) {
		if strings.Contains(item, "First question") || strings.Contains(item, "Reply number 2") {
			t.Fatalf("a forgotten message is still stored: %s", item)
		}
	}
	if _, body := x.do(t, req(http.MethodGet, "/api/chat", "", other)); len(body["messages"].([]any)) != 2 {
		t.Fatalf("the other account's conversation: %v", body)
	}
	if x.freeLeft(t, account) != 1 {
		t.Fatal("forgetting changed the count")
	}
}

// Finding 2 of issue 38: GET /api/chat names the signed-in address (as
// the account holds it), so that the page says whose account it is.
func TestConversationNamesTheSignedInAddress(t *testing.T) {
	x := newHarness(t)
	for _, addr := range []string{address, "someone.else@example.org"} {
		account, cookie := x.signIn(t, addr)
		stored, err := x.store.Address(context.Background(), account)
		if err != nil || !strings.EqualFold(stored, addr) {
			t.Fatalf("stored address %q %v", stored, err)
		}
		resp, body := x.do(t, req(http.MethodGet, "/api/chat", "", cookie))
		if resp.StatusCode != http.StatusOK || body["address"] != stored {
			t.Errorf("GET /api/chat signed in as %s: %d address %v", addr, resp.StatusCode, body["address"])
		}
	}
}

func TestSubscribeAndPortal(t *testing.T) {
	x := newHarness(t)
	account, cookie := x.signIn(t, address)
	resp, body := x.do(t, req(http.MethodPost, "/api/chat/subscribe", `{}`, cookie))
	if resp.StatusCode != http.StatusOK || body["url"] != "https://checkout.stripe.test/c/pay/cs_test_sub" {
		t.Fatalf("subscribe: %d %v", resp.StatusCode, body)
	}
	if len(x.billing.checkouts) != 1 || x.billing.checkouts[0] != account+" "+strings.ToLower(address) {
		t.Fatalf("checkout asked for %v", x.billing.checkouts)
	}
	if resp, body := x.do(t, req(http.MethodPost, "/api/chat/portal", `{}`, cookie)); resp.StatusCode != http.StatusNotFound || body["error"] == "" {
		t.Fatalf("portal without a customer: %d %v", resp.StatusCode, body)
	}
	x.subs.set(Subscription{Grants: true, Status: "active", Customer: "cus_42", CancelAtPeriodEnd: true, PeriodEnd: x.clock.Now().Add(time.Hour)})
	resp, body = x.do(t, req(http.MethodPost, "/api/chat/subscribe", `{}`, cookie))
	if resp.StatusCode != http.StatusConflict || body["portal"] != "https://billing.stripe.test/p/session/cus_42" || body["error"] == "" || len(x.billing.checkouts) != 1 {
		t.Fatalf("subscribe while subscribed: %d %v, checkouts %v; want 409 with the portal's link and no Checkout", resp.StatusCode, body, x.billing.checkouts)
	}
	resp, body = x.do(t, req(http.MethodPost, "/api/chat/portal", `{}`, cookie))
	if resp.StatusCode != http.StatusOK || body["url"] != "https://billing.stripe.test/p/session/cus_42" {
		t.Fatalf("portal: %d %v", resp.StatusCode, body)
	}
	_, state := x.do(t, req(http.MethodGet, "/api/chat", "", cookie))
	sub, _ := state["subscription"].(map[string]any)
	if sub["cancel_at_period_end"] != true || sub["manage"] != true || sub["current_period_end"] == nil {
		t.Fatalf("subscription shown %v", state)
	}
	x.subs.err = errors.New("table down")
	if resp, _ := x.do(t, req(http.MethodPost, "/api/chat/portal", `{}`, cookie)); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("subscriptions down: %d", resp.StatusCode)
	}
}

func TestSignOutEndsEverySession(t *testing.T) {
	x := newHarness(t)
	_, cookie := x.signIn(t, address)
	_, second := x.signIn(t, address) // another device
	x.clock.Add(time.Second)
	resp, body := x.do(t, req(http.MethodPost, "/api/chat/signout", `{}`, cookie))
	if resp.StatusCode != http.StatusOK || body["signed_out"] != true || len(resp.Cookies) != 1 || !strings.Contains(resp.Cookies[0], "Max-Age=0") {
		t.Fatalf("sign-out: %d %v %v", resp.StatusCode, body, resp.Cookies)
	}
	for _, c := range []string{cookie, second} {
		if resp, _ := x.do(t, req(http.MethodGet, "/api/chat", "", c)); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a cookie from before the sign-out: %d", resp.StatusCode)
		}
	}
	x.clock.Add(time.Second)
	_, fresh := x.signIn(t, address)
	if resp, _ := x.do(t, req(http.MethodGet, "/api/chat", "", fresh)); resp.StatusCode != http.StatusOK {
		t.Fatalf("signed in again: %d", resp.StatusCode)
	}
}

func TestRoutesMethodsAndPages(t *testing.T) {
	x := newHarness(t)
	cases := []struct {
		method, path string
		status       int
		html         bool
	}{
		{http.MethodGet, "/chat", 200, true},
		{http.MethodGet, "/chat/", 200, true},
		{http.MethodPost, "/chat", 405, true},
		{http.MethodPut, "/chat/signin", 405, true},
		{http.MethodDelete, "/chat/signin", 405, true},
		{http.MethodHead, "/chat/signin", 400, true},
		{http.MethodHead, "/chat", 200, true},
		{http.MethodPut, "/api/chat", 405, false},
		{http.MethodGet, "/api/chat/signin", 405, false},
		{http.MethodGet, "/api/chat/nowhere", 404, false},
	}
	for _, c := range cases {
		resp, _ := x.do(t, req(c.method, c.path, "", ""))
		isHTML := strings.HasPrefix(resp.Headers["Content-Type"], "text/html")
		if resp.StatusCode != c.status || isHTML != c.html {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, resp.StatusCode, resp.Headers["Content-Type"], c.status)
		}
		if isHTML && !strings.Contains(resp.Headers["Content-Security-Policy"], "default-src 'none'") {
			t.Errorf("%s %s: no CSP", c.method, c.path)
		}
	}
	if resp, _ := x.do(t, req(http.MethodPut, "/chat/signin", "", "")); resp.Headers["Allow"] != "GET, HEAD, POST" {
		t.Errorf("PUT /chat/signin: Allow %q", resp.Headers["Allow"])
	}
	r := req(http.MethodGet, "/chat", "", "")
	r.QueryStringParameters = map[string]string{"subscribed": "1"}
	if resp, _ := x.do(t, r); !strings.Contains(resp.Body, "as soon as Stripe confirms") {
		t.Fatal("the return from Checkout is not acknowledged")
	}
}

// Privacy: no log line and no audit record holds the address or a
// message's or reply's text; the table holds the address once.
func TestNoAddressOrTextInLogsOrAudit(t *testing.T) {
	x := newHarness(t)
	secretMessage := "My secret plan about Zanzibar"
	x.replier.fail = func(n int) (ReplyResult, error) {
		if n == 2 {
			return ReplyResult{}, ErrModelUnavailable
		}
		return ReplyResult{Text: "A reply about Quetzalcoatl", Filter: FilterPass}, nil
	}
	x.do(t, req(http.MethodPost, "/api/chat/signin", fmt.Sprintf(`{"email":%q}`, address), ""))
	_, cookie := x.signIn(t, address)
	for range 5 {
		x.send(t, cookie, secretMessage)
	}
	x.do(t, req(http.MethodGet, "/api/chat", "", cookie))
	x.do(t, req(http.MethodPost, "/api/chat/subscribe", `{}`, cookie))
	x.do(t, req(http.MethodDelete, "/api/chat", `{}`, cookie))
	x.do(t, req(http.MethodPost, "/api/chat/signout", `{}`, cookie))
	logs := x.logs.String()
	if logs == "" {
		t.Fatal("no logs to check")
	}
	records, _ := json.Marshal(x.audit.records)
	if len(x.audit.records) < 5 {
		t.Fatalf("%d audit records, want one per message", len(x.audit.records))
	}
	for _, secret := range []string{address, strings.ToLower(address), "Person.Private", "Zanzibar", "Quetzalcoatl"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs hold %q", secret)
		}
		if strings.Contains(string(records), secret) {
			t.Errorf("the audit records hold %q", secret)
		}
	}
	n := 0
	for _, item := range testkit.TableItems(t, x.aws, x.table) {
		n += strings.Count(item, strings.ToLower(address))
	}
	if n != 1 {
		t.Fatalf("the table holds the address %d times, want once (the account item, in its canonical form)", n)
	}
}

// TestSmokeAccountsExchangesAreFlaggedSmoke: the smoke test's account
// (stripex.SmokeEmail) has its exchanges' records flagged smoke, so that
// no figure counts them; a person's are not.
func TestSmokeAccountsExchangesAreFlaggedSmoke(t *testing.T) {
	x := newHarness(t)
	for _, c := range []struct {
		addr  string
		smoke bool
	}{{address, false}, {strings.ToUpper(stripex.SmokeEmail), true}} {
		_, cookie := x.signIn(t, c.addr)
		if resp, _ := x.send(t, cookie, "Is it working?"); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", c.addr, resp.StatusCode)
		}
		x.audit.mu.Lock()
		r := x.audit.records[len(x.audit.records)-1]
		x.audit.mu.Unlock()
		if r.Smoke != c.smoke || r.Chat.Outcome != audit.ChatAnswered {
			t.Errorf("the exchange of %s: smoke=%v outcome %q, want smoke=%v", c.addr, r.Smoke, r.Chat.Outcome, c.smoke)
		}
	}
}
