package fakestripe_test

import (
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"
	"github.com/stripe/stripe-go/v76/webhook"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

const (
	testKey    = "sk_test_fakestripe_unit_tests"
	testSecret = "whsec_fakestripe_unit_tests"
)

// fixture is a fake Stripe behind httptest, a stripe-go client pointed at
// it and a webhook receiver that verifies what it gets.
type fixture struct {
	fake  *fakestripe.Server
	url   string
	sc    *client.API
	hooks *receiver

	clock sync.Mutex // guards now against the fake's goroutines
	now   time.Time  // the fake's clock: fixed unless a test sets it
}

// setNow sets the fake's clock.
func (f *fixture) setNow(t time.Time) {
	f.clock.Lock()
	defer f.clock.Unlock()
	f.now = t
}

// newFixture starts a fake with a seeded id source and a clock fixed at the
// real current time, so that signatures are within stripe-go's tolerance.
func newFixture(t *testing.T, opts fakestripe.Options) *fixture {
	t.Helper()
	f := &fixture{hooks: newReceiver(t), now: time.Now().Truncate(time.Second)}
	opts.Rand = seeded(1)
	opts.Clock = func() time.Time {
		f.clock.Lock()
		defer f.clock.Unlock()
		return f.now
	}
	if opts.WebhookURL == "" {
		opts.WebhookURL = f.hooks.url
	}
	opts.WebhookSecret = testSecret
	f.fake = fakestripe.New(opts)
	srv := httptest.NewServer(f.fake)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	f.sc = newClient(testKey, srv.URL)
	return f
}

func seeded(n byte) io.Reader {
	return rand.NewChaCha8([32]byte{n})
}

func newClient(key, baseURL string) *client.API {
	sc := &client.API{}
	sc.Init(key, &stripe.Backends{API: stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               stripe.String(baseURL),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		MaxNetworkRetries: stripe.Int64(0),
	})})
	return sc
}

// sessionParams is a valid create call for tier, the way the service makes it.
func sessionParams(tier oracle.Tier) *stripe.CheckoutSessionParams {
	p := &stripe.CheckoutSessionParams{
		Mode:       stripe.String(string(stripe.CheckoutSessionModePayment)),
		SuccessURL: stripe.String("http://localhost:3000/result?session_id={CHECKOUT_SESSION_ID}"),
		CancelURL:  stripe.String("http://localhost:3000/"),
		LineItems: []*stripe.CheckoutSessionLineItemParams{{
			PriceData: &stripe.CheckoutSessionLineItemPriceDataParams{
				Currency:    stripe.String(oracle.Currency),
				UnitAmount:  stripe.Int64(tier.PriceCents()),
				ProductData: &stripe.CheckoutSessionLineItemPriceDataProductDataParams{Name: stripe.String(tier.Name())},
			},
			Quantity: stripe.Int64(1),
		}},
	}
	p.AddMetadata(stripex.MetaTier, string(tier))
	meta, err := stripex.QueryMetadata("Should I open a bakery?")
	if err != nil {
		panic(err)
	}
	for k, v := range meta {
		p.AddMetadata(k, v)
	}
	return p
}

// createSession creates a valid session for tier or fails the test.
func (f *fixture) createSession(t *testing.T, tier oracle.Tier) *stripe.CheckoutSession {
	t.Helper()
	cs, err := f.sc.CheckoutSessions.New(sessionParams(tier))
	if err != nil {
		t.Fatalf("create %s session: %v", tier, err)
	}
	return cs
}

// browser does not follow redirects, so tests see the fake's 303s.
var browser = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

// pay submits the pay form of session id and returns the response, body read.
func (f *fixture) pay(t *testing.T, id string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := browser.PostForm(f.url+"/pay/"+id, form)
	if err != nil {
		t.Fatalf("POST /pay/%s: %v", id, err)
	}
	return resp, readBody(t, resp)
}

func (f *fixture) get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	resp, err := browser.Get(f.url + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp, readBody(t, resp)
}

// do sends a raw request to the fake with the test key.
func (f *fixture) do(t *testing.T, method, path, contentType, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatalf("build %s %s: %v", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp, readBody(t, resp)
}

func (f *fixture) setControl(t *testing.T, c fakestripe.Control) {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("marshal control: %v", err)
	}
	resp, body := f.do(t, http.MethodPost, "/_control", "application/json", string(b))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /_control %s: status %d: %s", b, resp.StatusCode, body)
	}
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response body: %v", err)
	}
	return string(b)
}

// stripeError asserts that err is a Stripe error with status, type and code.
func stripeError(t *testing.T, err error, status int, code stripe.ErrorCode) *stripe.Error {
	t.Helper()
	var se *stripe.Error
	if !errors.As(err, &se) {
		t.Fatalf("error = %v (%T), want *stripe.Error", err, err)
	}
	if se.HTTPStatusCode != status || se.Type != stripe.ErrorTypeInvalidRequest || se.Code != code {
		t.Fatalf("error = status %d type %q code %q (%s), want status %d type %q code %q",
			se.HTTPStatusCode, se.Type, se.Code, se.Msg, status, stripe.ErrorTypeInvalidRequest, code)
	}
	return se
}

// hook is one webhook request the receiver got.
type hook struct {
	Event  stripe.Event
	Err    error // from webhook.ConstructEvent
	Header http.Header
}

// Session decodes the event's checkout session.
func (h hook) Session(t *testing.T) stripe.CheckoutSession {
	t.Helper()
	var cs stripe.CheckoutSession
	if err := json.Unmarshal(h.Event.Data.Raw, &cs); err != nil {
		t.Fatalf("decode %s data.object: %v", h.Event.Type, err)
	}
	return cs
}

// receiver is a webhook endpoint that verifies signatures the way the
// service does and answers 400 to events it cannot verify.
type receiver struct {
	url string

	mu          sync.Mutex
	got         []hook
	inFlight    int
	maxInFlight int
	barrier     int           // when > 0, requests wait until this many are in flight at once
	release     chan struct{} // closed when the barrier is reached
}

// holdUntil makes requests wait until n are in flight together, proving
// that they were sent concurrently. A request gives up after 2 s.
func (rc *receiver) holdUntil(n int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.barrier, rc.release = n, make(chan struct{})
}

// wait blocks at the barrier, if one is set.
func (rc *receiver) wait() {
	rc.mu.Lock()
	rc.inFlight++
	rc.maxInFlight = max(rc.maxInFlight, rc.inFlight)
	barrier, release := rc.barrier, rc.release
	if barrier > 0 && rc.inFlight == barrier {
		close(release)
		rc.barrier = 0
	}
	rc.mu.Unlock()
	if barrier > 0 {
		select {
		case <-release:
		case <-time.After(2 * time.Second):
		}
	}
}

// peakConcurrency is the most requests that were in flight at once.
func (rc *receiver) peakConcurrency() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.maxInFlight
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.wait()
		defer func() {
			rc.mu.Lock()
			rc.inFlight--
			rc.mu.Unlock()
		}()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ev, err := webhook.ConstructEvent(body, r.Header.Get("Stripe-Signature"), testSecret)
		rc.mu.Lock()
		rc.got = append(rc.got, hook{Event: ev, Err: err, Header: r.Header.Clone()})
		rc.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL
	return rc
}

func (rc *receiver) hooks() []hook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hook(nil), rc.got...)
}

// types lists the event types received, in order.
func (rc *receiver) types() []string {
	var out []string
	for _, h := range rc.hooks() {
		out = append(out, string(h.Event.Type))
	}
	return out
}
