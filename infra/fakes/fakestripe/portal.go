package fakestripe

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
)

// The customer portal, as Stripe's default configuration has it for the
// fake's purposes: the customer sees their subscriptions and cancels one at
// the end of its period (customer.subscription.updated with
// cancel_at_period_end), renews one so cancelled, or pays a failed
// renewal's invoice as with a new card (invoice.paid).

var portalParamNames = formNames(reflect.TypeFor[stripe.BillingPortalSessionParams]())

// portalSession is a billing portal Session exactly as the API renders it.
type portalSession struct {
	ID            string    `json:"id"`
	Object        string    `json:"object"`
	Configuration string    `json:"configuration"`
	Created       int64     `json:"created"`
	Customer      string    `json:"customer"`
	Flow          *struct{} `json:"flow"`
	Livemode      bool      `json:"livemode"`
	Locale        *string   `json:"locale"`
	OnBehalfOf    *string   `json:"on_behalf_of"`
	ReturnURL     *string   `json:"return_url"`
	URL           string    `json:"url"`
}

// createPortalSession serves POST /v1/billing_portal/sessions.
func (s *Server) createPortalSession(r *http.Request, form url.Values) (any, error) {
	custID := form.Get("customer")
	if custID == "" {
		return nil, missingParam("customer")
	}
	returnURL := optString(form, "return_url")
	if returnURL != nil {
		if err := checkURL("return_url", *returnURL); err != nil {
			return nil, err
		}
	}
	if slices.ContainsFunc(slices.Collect(maps.Keys(form)), func(k string) bool { return strings.HasPrefix(k, "flow_data") }) {
		return nil, invalidParam("", "flow_data", "The fake Stripe does not model portal flows: open the portal without flow_data.")
	}
	cust, ok := s.customers[custID]
	if !ok {
		return nil, executed(noSuch(http.StatusBadRequest, "customer", clip(custID), "customer"))
	}
	if s.portalConfig == "" {
		id, err := s.newID("bpc_", objectIDLen)
		if err != nil {
			return nil, fmt.Errorf("create portal configuration: %w", err)
		}
		s.portalConfig = id
	}
	id, err := s.newID("bps_", objectIDLen)
	if err != nil {
		return nil, fmt.Errorf("create portal session: %w", err)
	}
	ps := &portalSession{
		ID:            id,
		Object:        "billing_portal.session",
		Configuration: s.portalConfig,
		Created:       s.now().Unix(),
		Customer:      cust.c.ID,
		Livemode:      cust.c.Livemode,
		ReturnURL:     returnURL,
		URL:           s.baseURL(r) + "/portal/" + id,
	}
	s.portals[id] = ps
	s.log.Info("fakestripe: portal session created", "portal", id, "customer", cust.c.ID)
	return ps, nil
}

var portalTemplate = template.Must(template.New("portal").Parse(pageHead + `<h1>Your subscriptions</h1>
<p>{{.Email}}</p>
{{if not .Subs}}<p>You have no subscriptions.</p>
{{end}}{{range .Subs}}<section>
<h2>{{.Name}}</h2>
<p>{{.Amount}}. Status: {{.Status}}.</p>
{{if .Due}}<p>Your last payment failed.</p>
<form method="post"><input type="hidden" name="subscription" value="{{.ID}}"><input type="hidden" name="action" value="pay"><button type="submit">Pay now</button></form>
{{end}}{{if .Ended}}<p>Ended {{.Date}}.</p>
{{else if .Cancelling}}<p>Your plan will be canceled on {{.Date}}.</p>
<form method="post"><input type="hidden" name="subscription" value="{{.ID}}"><input type="hidden" name="action" value="renew"><button type="submit">Renew plan</button></form>
{{else}}<p>Your plan renews on {{.Date}}.</p>
<form method="post"><input type="hidden" name="subscription" value="{{.ID}}"><input type="hidden" name="action" value="cancel"><button type="submit">Cancel plan</button></form>
{{end}}</section>
{{end}}{{if .ReturnURL}}<p><a href="{{.ReturnURL}}">Return</a></p>
{{end}}</body>
</html>
`))

type portalPageData struct {
	Title     string
	Email     string
	Subs      []portalSub
	ReturnURL string
}

type portalSub struct {
	ID, Name, Amount, Status, Date string
	Cancelling, Ended, Due         bool
}

// portalPage serves GET /portal/{id}.
func (s *Server) portalPage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ps, ok := s.portals[r.PathValue("id")]
	var d portalPageData
	if ok {
		d = s.portalPageFor(ps)
	}
	s.mu.Unlock()
	if !ok {
		s.renderMessage(w, http.StatusNotFound, "Not found", "This portal session does not exist.")
		return
	}
	s.render(w, http.StatusOK, portalTemplate, d)
}

// portalPageFor lists the customer's subscriptions, newest first. The
// caller holds s.mu.
func (s *Server) portalPageFor(ps *portalSession) portalPageData {
	d := portalPageData{Title: "Customer portal", Email: s.customers[ps.Customer].c.Email}
	if ps.ReturnURL != nil {
		d.ReturnURL = *ps.ReturnURL
	}
	var subs []*subscriptionRecord
	for _, sub := range s.subscriptions {
		if sub.s.Customer == ps.Customer {
			subs = append(subs, sub)
		}
	}
	slices.SortFunc(subs, func(a, b *subscriptionRecord) int {
		return cmp.Or(cmp.Compare(b.s.Created, a.s.Created), strings.Compare(b.s.ID, a.s.ID))
	})
	for _, sub := range subs {
		it := sub.s.Items.Data[0].Price
		date := sub.s.CurrentPeriodEnd
		if sub.s.EndedAt != nil {
			date = *sub.s.EndedAt
		}
		d.Subs = append(d.Subs, portalSub{
			ID:         sub.s.ID,
			Name:       strings.Join(sub.names, ", "),
			Amount:     fmt.Sprintf("%s / %s", formatAmount(it.UnitAmount, it.Currency), it.Recurring.Interval),
			Status:     sub.s.Status,
			Date:       time.Unix(date, 0).UTC().Format("2 January 2006, 15:04 UTC"),
			Cancelling: sub.s.CancelAtPeriodEnd,
			Ended:      sub.s.Status == subCanceled,
			Due:        s.dueInvoice(sub) != nil,
		})
	}
	return d
}

// portalAction serves POST /portal/{id}: action cancel (at the period's
// end), renew or pay, of one of the customer's subscriptions. Its events
// are delivered before the customer is sent back to the portal.
func (s *Server) portalAction(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxPayForm)
	if err := r.ParseForm(); err != nil {
		s.renderMessage(w, http.StatusBadRequest, "Bad request", "The form could not be read.")
		return
	}
	id, action := r.PathValue("id"), r.PostForm.Get("action")
	s.mu.Lock()
	ps, ok := s.portals[id]
	sub, found := s.subscriptions[r.PostForm.Get("subscription")]
	var evs []*event
	var err error
	status, msg := 0, ""
	switch {
	case !ok:
		status, msg = http.StatusNotFound, "This portal session does not exist."
	case !found || sub.s.Customer != ps.Customer:
		status, msg = http.StatusNotFound, "This subscription is not yours to manage."
	case sub.s.Status == subCanceled:
		status, msg = http.StatusConflict, "This subscription has already ended."
	case action == "cancel" || action == "renew":
		var ev *event
		if ev, err = s.setCancelAtPeriodEnd(sub, action == "cancel", eventRequest{}); ev != nil {
			evs = append(evs, ev)
		}
	case action == "pay":
		evs, err = s.payDue(sub)
	default:
		status, msg = http.StatusBadRequest, "Choose cancel, renew or pay."
	}
	s.mu.Unlock()
	switch {
	case status != 0:
		s.renderMessage(w, status, "Cannot do that", msg)
		return
	case err != nil:
		s.log.Error("fakestripe: portal", "portal", id, "err", err)
		s.renderMessage(w, http.StatusInternalServerError, "Error", "The fake Stripe failed to update this subscription.")
		return
	}
	s.deliverAll(context.WithoutCancel(r.Context()), Control{}, evs)
	http.Redirect(w, r, "/portal/"+id, http.StatusSeeOther)
}
