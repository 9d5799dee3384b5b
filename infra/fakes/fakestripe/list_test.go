package fakestripe_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/shared/oracle"
)

// listPage is a list response as the fake sends it.
type listPage struct {
	Object  string                       `json:"object"`
	URL     string                       `json:"url"`
	HasMore bool                         `json:"has_more"`
	Data    []map[string]json.RawMessage `json:"data"`
}

// ids are the ids of the page's sessions, in order.
func (p listPage) ids(t *testing.T) []string {
	t.Helper()
	out := make([]string, len(p.Data))
	for i, d := range p.Data {
		if err := json.Unmarshal(d["id"], &out[i]); err != nil {
			t.Fatalf("session %d id: %v", i, err)
		}
	}
	return out
}

// list sends GET /v1/checkout/sessions?query and decodes the answer, which
// must be a 200.
func (f *fixture) list(t *testing.T, query string) listPage {
	t.Helper()
	resp, body := f.do(t, http.MethodGet, "/v1/checkout/sessions?"+query, "", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list %s: status %d: %s", query, resp.StatusCode, body)
	}
	var p listPage
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("list %s: decode: %v: %s", query, err, body)
	}
	if p.Object != "list" || p.URL != "/v1/checkout/sessions" || p.Data == nil {
		t.Fatalf("list %s: object %q url %q data %v", query, p.Object, p.URL, p.Data)
	}
	return p
}

// createAt creates a session of tier as if at time at; the clock then
// returns to what it was.
func (f *fixture) createAt(t *testing.T, tier oracle.Tier, at time.Time) *stripe.CheckoutSession {
	t.Helper()
	f.clock.Lock()
	was := f.now
	f.clock.Unlock()
	f.setNow(at)
	defer f.setNow(was)
	return f.createSession(t, tier)
}

// payAs completes session id with email.
func (f *fixture) payAs(t *testing.T, id, email string) {
	t.Helper()
	if resp, body := f.pay(t, id, url.Values{"email": {email}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pay %s: status %d: %s", id, resp.StatusCode, body)
	}
}

func TestListSessionsFilters(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	base := f.now
	at := func(ago int) time.Time { return base.Add(-time.Duration(ago) * time.Second) }

	open := f.createAt(t, oracle.TierQuick, at(300))
	paid := f.createAt(t, oracle.TierFull, at(200))
	f.payAs(t, paid.ID, "ada@example.com")
	expired := f.createAt(t, oracle.TierFull, at(200)) // the same second as paid
	if _, err := f.sc.CheckoutSessions.Expire(expired.ID, nil); err != nil {
		t.Fatalf("expire: %v", err)
	}
	late := f.createAt(t, oracle.TierStrategy, at(100))
	f.payAs(t, late.ID, "bob@example.com")
	newest := f.createAt(t, oracle.TierQuick, at(0))

	pi := func(id string) string {
		cs, _ := f.fake.Session(id)
		return cs.PaymentIntent.ID
	}
	// Sessions of the same second are listed by id, descending.
	tie := []string{paid.ID, expired.ID}
	slices.Sort(tie)
	slices.Reverse(tie)
	ts := func(ago int) string { return fmt.Sprint(at(ago).Unix()) }

	tests := []struct {
		name  string
		query string
		want  []string
	}{
		{"all, newest first", "", []string{newest.ID, late.ID, tie[0], tie[1], open.ID}},
		{"complete", "status=complete", []string{late.ID, paid.ID}},
		{"open", "status=open", []string{newest.ID, open.ID}},
		{"expired", "status=expired", []string{expired.ID}},
		{"created exactly", "created=" + ts(200), tie},
		{"created gt", "created[gt]=" + ts(200), []string{newest.ID, late.ID}},
		{"created gte", "created[gte]=" + ts(200) + "&created[lt]=" + ts(0), []string{late.ID, tie[0], tie[1]}},
		{"created lt", "created[lt]=" + ts(200), []string{open.ID}},
		{"created lte", "created[lte]=" + ts(200), []string{tie[0], tie[1], open.ID}},
		{"empty window", "created[gt]=" + ts(200) + "&created[lt]=" + ts(100), []string{}},
		{"window and status", "status=complete&created[gte]=" + ts(300) + "&created[lt]=" + ts(100), []string{paid.ID}},
		{"payment intent", "payment_intent=" + pi(late.ID), []string{late.ID}},
		{"unknown payment intent", "payment_intent=pi_none", []string{}},
		{"customer email", "customer_details[email]=" + url.QueryEscape("ada@example.com"), []string{paid.ID}},
		{"customer", "customer=cus_none", []string{}},
		{"subscription", "subscription=sub_none", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := f.list(t, tt.query)
			if got := p.ids(t); !slices.Equal(got, tt.want) || p.HasMore {
				t.Errorf("ids = %v, has_more %v; want %v, false", got, p.HasMore, tt.want)
			}
		})
	}

	// Each session is the object the retrieve endpoint answers.
	p := f.list(t, "status=complete&limit=1")
	_, body := f.do(t, http.MethodGet, "/v1/checkout/sessions/"+late.ID, "", "")
	var one map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &one); err != nil {
		t.Fatal(err)
	}
	if len(p.Data) != 1 || !jsonEqual(p.Data[0], one) || !p.HasMore {
		t.Errorf("listed %v, has_more %v; retrieved %s", p.Data, p.HasMore, body)
	}

	c := f.fake.Calls()
	if last := c[len(c)-1]; last.Method != http.MethodGet || last.Path != "/v1/checkout/sessions/"+late.ID {
		t.Errorf("last call = %+v", last)
	}
	if list := c[len(c)-2]; list.Method != http.MethodGet || list.Path != "/v1/checkout/sessions" || list.Status != http.StatusOK ||
		list.Params.Get("status") != "complete" || list.Params.Get("limit") != "1" {
		t.Errorf("list call = %+v", list)
	}
}

func jsonEqual(a, b map[string]json.RawMessage) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}

func TestListSessionsPagination(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	// Three sessions a second, so that pages split sessions of one second.
	const n = 25
	for i := range n {
		f.createAt(t, oracle.TierQuick, f.now.Add(-time.Duration(i/3)*time.Second))
	}
	all := f.list(t, "limit=100").ids(t)
	if len(all) != n {
		t.Fatalf("%d sessions listed, want %d", len(all), n)
	}
	for i := 1; i < n; i++ {
		a, _ := f.fake.Session(all[i-1])
		b, _ := f.fake.Session(all[i])
		if a.Created < b.Created || (a.Created == b.Created && a.ID < b.ID) {
			t.Fatalf("sessions %d and %d out of order: %d %s, %d %s", i-1, i, a.Created, a.ID, b.Created, b.ID)
		}
	}

	if p := f.list(t, ""); len(p.Data) != 10 || !p.HasMore {
		t.Errorf("default page: %d sessions, has_more %v; want 10, true", len(p.Data), p.HasMore)
	}
	if p := f.list(t, "limit=25"); len(p.Data) != 25 || p.HasMore {
		t.Errorf("exact page: %d sessions, has_more %v; want 25, false", len(p.Data), p.HasMore)
	}

	// Forwards with starting_after from the start, then back with
	// ending_before from the end: both see every session once, in order.
	var forward []string
	var sizes []int
	for query := "limit=7"; ; {
		p := f.list(t, query)
		ids := p.ids(t)
		forward = append(forward, ids...)
		sizes = append(sizes, len(ids))
		if !p.HasMore {
			break
		}
		query = "limit=7&starting_after=" + ids[len(ids)-1]
	}
	if !slices.Equal(forward, all) || !slices.Equal(sizes, []int{7, 7, 7, 4}) {
		t.Errorf("forwards: pages of %v: %v, want %v", sizes, forward, all)
	}

	var backward []string
	sizes = nil
	for cursor := all[n-1]; ; {
		p := f.list(t, "limit=7&ending_before="+cursor)
		ids := p.ids(t)
		backward = append(ids, backward...)
		sizes = append(sizes, len(ids))
		if !p.HasMore {
			break
		}
		cursor = ids[0]
	}
	if !slices.Equal(backward, all[:n-1]) || !slices.Equal(sizes, []int{7, 7, 7, 3}) {
		t.Errorf("backwards: pages of %v: %v, want %v", sizes, backward, all[:n-1])
	}

	// stripe-go's own auto-pagination, both ways.
	var seen []string
	params := &stripe.CheckoutSessionListParams{}
	params.Limit = stripe.Int64(4)
	it := f.sc.CheckoutSessions.List(params)
	for it.Next() {
		seen = append(seen, it.CheckoutSession().ID)
	}
	if it.Err() != nil || !slices.Equal(seen, all) {
		t.Errorf("stripe-go iterator: %v, err %v", seen, it.Err())
	}
	seen = nil
	params = &stripe.CheckoutSessionListParams{}
	params.Limit = stripe.Int64(4)
	params.EndingBefore = stripe.String(all[n-1])
	it = f.sc.CheckoutSessions.List(params)
	for it.Next() {
		seen = append(seen, it.CheckoutSession().ID)
	}
	want := slices.Clone(all[:n-1])
	slices.Reverse(want)
	if it.Err() != nil || !slices.Equal(seen, want) {
		t.Errorf("stripe-go iterator backwards: %v, err %v", seen, it.Err())
	}

	// A cursor need not match the filters: it is a place in the list.
	f.payAs(t, all[3], "ada@example.com")
	if got := f.list(t, "status=complete&starting_after="+all[0]).ids(t); !slices.Equal(got, []string{all[3]}) {
		t.Errorf("status=complete after an open session: %v, want [%s]", got, all[3])
	}
	if got := f.list(t, "status=complete&starting_after="+all[3]).ids(t); len(got) != 0 {
		t.Errorf("status=complete after the only complete session: %v", got)
	}
}

func TestListSessionsRefusesBadParams(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	tests := []struct {
		query  string
		status int
		code   string
		param  string
	}{
		{"limit=0", http.StatusBadRequest, "parameter_invalid_integer", "limit"},
		{"limit=101", http.StatusBadRequest, "parameter_invalid_integer", "limit"},
		{"limit=ten", http.StatusBadRequest, "parameter_invalid_integer", "limit"},
		{"limit[x]=1", http.StatusBadRequest, "parameter_unknown", "limit[x]"},
		{"status=paid", http.StatusBadRequest, "", "status"},
		{"payment_status=paid", http.StatusBadRequest, "parameter_unknown", "payment_status"},
		{"created[since]=1", http.StatusBadRequest, "parameter_unknown", "created[since]"},
		{"created[gt]=yesterday", http.StatusBadRequest, "parameter_invalid_integer", "created[gt]"},
		{"created=1.5", http.StatusBadRequest, "parameter_invalid_integer", "created"},
		{"customer_details[name]=Ada", http.StatusBadRequest, "parameter_unknown", "customer_details[name]"},
		{"customer_details[email]=", http.StatusBadRequest, "parameter_missing", "customer_details[email]"},
		{"starting_after=cs_test_a&ending_before=cs_test_b", http.StatusBadRequest, "", "ending_before"},
		{"starting_after=cs_test_none", http.StatusBadRequest, "resource_missing", "starting_after"},
		{"ending_before=cs_test_none", http.StatusBadRequest, "resource_missing", "ending_before"},
		{"expand[0]=data.line_items", http.StatusBadRequest, "", "expand"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp, body := f.do(t, http.MethodGet, "/v1/checkout/sessions?"+tt.query, "", "")
			var e struct {
				Error struct{ Type, Code, Param, Message string }
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != tt.status {
				t.Fatalf("status %d, body %s; want %d and a Stripe error", resp.StatusCode, body, tt.status)
			}
			if e.Error.Type != "invalid_request_error" || e.Error.Code != tt.code || e.Error.Param != tt.param || e.Error.Message == "" {
				t.Errorf("error = %+v, want code %q param %q", e.Error, tt.code, tt.param)
			}
		})
	}
	for _, c := range f.fake.Calls() {
		if c.Path != "/v1/checkout/sessions" || c.Status != http.StatusBadRequest {
			t.Errorf("call %s %s recorded with status %d", c.Method, c.Path, c.Status)
		}
	}
	if n := len(f.fake.Calls()); n != len(tests) {
		t.Errorf("%d calls recorded, want %d", n, len(tests))
	}

	// The key is checked as on every other endpoint.
	it := newClient("sk_live_abcdefghijklmnop", f.url).CheckoutSessions.List(&stripe.CheckoutSessionListParams{})
	if it.Next() {
		t.Error("a live key listed sessions")
	}
	stripeError(t, it.Err(), http.StatusUnauthorized, "")
}

func TestExpireSession(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	cs := f.createSession(t, oracle.TierQuick)
	got, err := f.sc.CheckoutSessions.Expire(cs.ID, nil)
	if err != nil {
		t.Fatalf("expire: %v", err)
	}
	if got.Status != stripe.CheckoutSessionStatusExpired || got.URL != "" || got.PaymentStatus != stripe.CheckoutSessionPaymentStatusUnpaid {
		t.Errorf("expired session: status %s url %q payment_status %s", got.Status, got.URL, got.PaymentStatus)
	}
	if types := f.hooks.types(); !slices.Equal(types, []string{"checkout.session.expired"}) {
		t.Errorf("webhooks = %v, want one checkout.session.expired", types)
	} else if h := f.hooks.hooks()[0]; h.Err != nil || h.Session(t).ID != cs.ID || h.Session(t).Status != stripe.CheckoutSessionStatusExpired {
		t.Errorf("expired event: err %v, session %+v", h.Err, h.Session(t))
	}

	_, err = f.sc.CheckoutSessions.Expire(cs.ID, nil)
	if se := stripeError(t, err, http.StatusBadRequest, ""); !strings.Contains(se.Msg, `"expired"`) {
		t.Errorf("expiring twice: %q", se.Msg)
	}
	_, err = f.sc.CheckoutSessions.Expire("cs_test_none", nil)
	stripeError(t, err, http.StatusNotFound, stripe.ErrorCodeResourceMissing)

	// An expired session cannot be paid.
	if resp, body := f.get(t, "/pay/"+cs.ID); resp.StatusCode != http.StatusGone || !strings.Contains(body, "expired") {
		t.Errorf("pay page: status %d: %s", resp.StatusCode, body)
	}
	if resp, body := f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}}); resp.StatusCode != http.StatusGone {
		t.Errorf("paying: status %d: %s", resp.StatusCode, body)
	}

	paid := f.createSession(t, oracle.TierQuick)
	f.payAs(t, paid.ID, "ada@example.com")
	_, err = f.sc.CheckoutSessions.Expire(paid.ID, nil)
	if se := stripeError(t, err, http.StatusBadRequest, ""); !strings.Contains(se.Msg, `"complete"`) {
		t.Errorf("expiring a complete session: %q", se.Msg)
	}
}
