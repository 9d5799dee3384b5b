package fakestripe

import (
	"cmp"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/stripe/stripe-go/v76"
)

// List limits, as Stripe applies them to every list endpoint.
const (
	defaultListLimit = 10
	maxListLimit     = 100
)

// sessionListParamNames are the top-level parameters of the list call. The
// nested ones (created[...], customer_details[...]) are checked by
// parseSessionList, since checkParams looks at top-level names only.
var sessionListParamNames = formNames(reflect.TypeFor[stripe.CheckoutSessionListParams]())

// createdOps are the range operators Stripe accepts in created[op].
var createdOps = []string{"gt", "gte", "lt", "lte"}

// maxTimestamp bounds the created filters, far beyond any real timestamp,
// so that the bounds' arithmetic cannot overflow.
const maxTimestamp = 1 << 62

// sessionStatuses are the statuses a session can have, for the status filter.
var sessionStatuses = setOf([]string{sessionStatusOpen, sessionStatusDone, sessionStatusExpired})

// sessionList is a list object exactly as the API renders it.
type sessionList struct {
	Object  string    `json:"object"`
	URL     string    `json:"url"`
	HasMore bool      `json:"has_more"`
	Data    []session `json:"data"`
}

// sessionQuery is a validated list call.
type sessionQuery struct {
	limit         int
	startingAfter string
	endingBefore  string
	createdMin    int64 // inclusive
	createdMax    int64 // inclusive
	status        string
	paymentIntent string
	paymentLink   string
	email         string
	customer      string
	subscription  string
}

// listSessions serves GET /v1/checkout/sessions: the sessions matching the
// filters, newest first, one page of them at a cursor.
func (s *Server) listSessions(_ *http.Request, form url.Values) (any, error) {
	q, err := parseSessionList(form)
	if err != nil {
		return nil, err
	}
	// Stripe lists newest first. Sessions made in the same second are
	// ordered by id, descending, so that the order, and with it every
	// cursor, is total and repeatable.
	all := slices.SortedFunc(maps.Values(s.sessions), func(a, b *sessionRecord) int {
		return cmp.Or(cmp.Compare(b.s.Created, a.s.Created), strings.Compare(b.s.ID, a.s.ID))
	})

	// A cursor is a position in the whole list: like Stripe, the fake
	// accepts the id of any session, whether or not it matches the filters.
	lo, hi := 0, len(all) // the window of all the cursor leaves
	cursor, param := q.startingAfter, "starting_after"
	if q.endingBefore != "" {
		cursor, param = q.endingBefore, "ending_before"
	}
	if cursor != "" {
		i := slices.IndexFunc(all, func(rec *sessionRecord) bool { return rec.s.ID == cursor })
		if i < 0 {
			return nil, noSuch(http.StatusBadRequest, "checkout.session", clip(cursor), param)
		}
		if q.startingAfter != "" {
			lo = i + 1
		} else {
			hi = i
		}
	}
	var matched []*sessionRecord
	for _, rec := range all[lo:hi] {
		if q.matches(&rec.s) {
			matched = append(matched, rec)
		}
	}

	// ending_before pages towards newer sessions: the page is the limit
	// sessions nearest the cursor, still newest first.
	page := matched
	if len(page) > q.limit {
		if q.endingBefore != "" {
			page = page[len(page)-q.limit:]
		} else {
			page = page[:q.limit]
		}
	}
	out := sessionList{Object: "list", URL: "/v1/checkout/sessions", HasMore: len(page) < len(matched), Data: make([]session, len(page))}
	for i, rec := range page {
		out.Data[i] = rec.s
	}
	return out, nil
}

func (q *sessionQuery) matches(cs *session) bool {
	switch {
	case q.customer != "" && (cs.Customer == nil || *cs.Customer != q.customer):
		return false
	case q.subscription != "" && (cs.Subscription == nil || *cs.Subscription != q.subscription):
		return false
	case cs.Created < q.createdMin || cs.Created > q.createdMax:
		return false
	case q.status != "" && cs.Status != q.status:
		return false
	case q.paymentIntent != "" && (cs.PaymentIntent == nil || *cs.PaymentIntent != q.paymentIntent):
		return false
	case q.paymentLink != "" && (cs.PaymentLink == nil || *cs.PaymentLink != q.paymentLink):
		return false
	case q.email != "" && (cs.CustomerDetails == nil || cs.CustomerDetails.Email != q.email):
		return false
	}
	return true
}

// parseSessionList validates a list call's parameters.
func parseSessionList(form url.Values) (sessionQuery, error) {
	q := sessionQuery{limit: defaultListLimit, createdMin: -maxTimestamp, createdMax: maxTimestamp}
	for key := range form {
		name, sub, nested := strings.Cut(key, "[")
		if !nested || name == "expand" {
			continue
		}
		known := (name == "created" && slices.Contains(createdOps, strings.TrimSuffix(sub, "]"))) ||
			(name == "customer_details" && sub == "email]")
		if !known {
			return q, invalidParam(codeParameterUnknown, key, "Received unknown parameter: %s", key)
		}
	}

	limit, ok, err := parseInt(form, "limit", 1, maxListLimit)
	if err != nil {
		return q, err
	}
	if ok {
		q.limit = int(limit)
	}
	q.startingAfter, q.endingBefore = form.Get("starting_after"), form.Get("ending_before")
	if q.startingAfter != "" && q.endingBefore != "" {
		return q, invalidParam("", "ending_before", "Received both starting_after and ending_before parameters. Please pass in only one.")
	}

	if err := q.parseCreated(form); err != nil {
		return q, err
	}

	q.status = form.Get("status")
	if q.status != "" && !sessionStatuses[q.status] {
		return q, invalidParam("", "status", "Invalid status: must be one of open, complete, or expired")
	}
	q.paymentIntent = form.Get("payment_intent")
	q.paymentLink = form.Get("payment_link")
	q.customer, q.subscription = form.Get("customer"), form.Get("subscription")
	if form.Has("customer_details") {
		return q, missingParam("customer_details[email]")
	}
	if form.Has("customer_details[email]") {
		if q.email = form.Get("customer_details[email]"); q.email == "" {
			return q, missingParam("customer_details[email]")
		}
	}
	return q, nil
}

// parseCreated reads created=<ts> and created[op]=<ts> into the inclusive
// bounds createdMin and createdMax; all of them apply together.
func (q *sessionQuery) parseCreated(form url.Values) error {
	ts, ok, err := parseInt(form, "created", -maxTimestamp, maxTimestamp)
	if err != nil {
		return err
	}
	if ok {
		q.createdMin, q.createdMax = ts, ts
	}
	for _, op := range createdOps {
		ts, ok, err := parseInt(form, "created["+op+"]", -maxTimestamp, maxTimestamp)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		switch op {
		case "gt":
			q.createdMin = max(q.createdMin, ts+1)
		case "gte":
			q.createdMin = max(q.createdMin, ts)
		case "lt":
			q.createdMax = min(q.createdMax, ts-1)
		case "lte":
			q.createdMax = min(q.createdMax, ts)
		}
	}
	return nil
}
