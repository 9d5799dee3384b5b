package fakestripe

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
)

// Subscription statuses the fake reaches.
const (
	subActive   = "active"
	subPastDue  = "past_due"
	subUnpaid   = "unpaid"
	subCanceled = "canceled"
)

// Invoice statuses and billing reasons.
const (
	invoiceDraft        = "draft"
	invoiceOpen         = "open"
	invoicePaid         = "paid"
	reasonCreate        = "subscription_create"
	reasonCycle         = "subscription_cycle"
	cancelRequested     = "cancellation_requested"
	cancelPaymentFailed = "payment_failed"
)

// Billing as the fake does it: a renewal's invoice is a draft for an hour
// after the period ends, as on Stripe, then finalized and charged; a failed
// charge is retried 3, 5 and 7 days after each failure (a custom retry
// schedule), four attempts in all.
var (
	finalizeDelay = time.Hour
	retryDelays   = []time.Duration{3 * 24 * time.Hour, 5 * 24 * time.Hour, 7 * 24 * time.Hour}
)

// Parameter names of the subscription calls.
var (
	subscriptionParamNames       = formNames(reflect.TypeFor[stripe.SubscriptionParams]())
	subscriptionCancelParamNames = formNames(reflect.TypeFor[stripe.SubscriptionCancelParams]())
	subscriptionListParamNames   = formNames(reflect.TypeFor[stripe.SubscriptionListParams]())
	invoiceListParamNames        = formNames(reflect.TypeFor[stripe.InvoiceListParams]())
	invoiceStatuses              = setOf([]string{"draft", "open", "paid", "uncollectible", "void"})
	subscriptionStatuses         = setOf([]string{"active", "all", "canceled", "ended", "incomplete", "incomplete_expired", "past_due", "paused", "trialing", "unpaid"})
)

// customerObject is a Customer as the API renders it, the fields the fake
// models. Checkout makes one when a subscription session is paid.
type customerObject struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Address          *struct{}         `json:"address"`
	Balance          int64             `json:"balance"`
	Created          int64             `json:"created"`
	Currency         *string           `json:"currency"`
	Delinquent       bool              `json:"delinquent"`
	Description      *string           `json:"description"`
	Email            string            `json:"email"`
	InvoicePrefix    string            `json:"invoice_prefix"`
	Livemode         bool              `json:"livemode"`
	Metadata         map[string]string `json:"metadata"`
	Name             *string           `json:"name"`
	Phone            *string           `json:"phone"`
	PreferredLocales []string          `json:"preferred_locales"`
	TaxExempt        string            `json:"tax_exempt"`
	TestClock        *string           `json:"test_clock"`
}

type customerRecord struct {
	c        customerObject
	invoices int // invoices numbered so far
}

// subscriptionObject is a Subscription exactly as the API renders it at
// stripe-go v76's version, 2023-10-16: current_period_start and _end are
// the subscription's own (later versions moved them onto the items).
type subscriptionObject struct {
	ID                    string               `json:"id"`
	Object                string               `json:"object"`
	Application           *string              `json:"application"`
	ApplicationFeePercent *float64             `json:"application_fee_percent"`
	AutomaticTax          automaticTax         `json:"automatic_tax"`
	BillingCycleAnchor    int64                `json:"billing_cycle_anchor"`
	BillingThresholds     *struct{}            `json:"billing_thresholds"`
	CancelAt              *int64               `json:"cancel_at"`
	CancelAtPeriodEnd     bool                 `json:"cancel_at_period_end"`
	CanceledAt            *int64               `json:"canceled_at"`
	CancellationDetails   cancellationDetails  `json:"cancellation_details"`
	CollectionMethod      string               `json:"collection_method"`
	Created               int64                `json:"created"`
	Currency              string               `json:"currency"`
	CurrentPeriodEnd      int64                `json:"current_period_end"`
	CurrentPeriodStart    int64                `json:"current_period_start"`
	Customer              string               `json:"customer"`
	DaysUntilDue          *int64               `json:"days_until_due"`
	DefaultPaymentMethod  *string              `json:"default_payment_method"`
	DefaultSource         *string              `json:"default_source"`
	DefaultTaxRates       []struct{}           `json:"default_tax_rates"`
	Description           *string              `json:"description"`
	Discount              *struct{}            `json:"discount"`
	EndedAt               *int64               `json:"ended_at"`
	Items                 listObject[subItem]  `json:"items"`
	LatestInvoice         *string              `json:"latest_invoice"`
	Livemode              bool                 `json:"livemode"`
	Metadata              map[string]string    `json:"metadata"`
	OnBehalfOf            *string              `json:"on_behalf_of"`
	PauseCollection       *struct{}            `json:"pause_collection"`
	PendingSetupIntent    *string              `json:"pending_setup_intent"`
	PendingUpdate         *struct{}            `json:"pending_update"`
	Schedule              *string              `json:"schedule"`
	StartDate             int64                `json:"start_date"`
	Status                string               `json:"status"`
	TestClock             *string              `json:"test_clock"`
	TransferData          *struct{}            `json:"transfer_data"`
	TrialEnd              *int64               `json:"trial_end"`
	TrialSettings         subscriptionTrialCfg `json:"trial_settings"`
	TrialStart            *int64               `json:"trial_start"`
}

type automaticTax struct {
	Enabled   bool      `json:"enabled"`
	Liability *struct{} `json:"liability"`
}

type cancellationDetails struct {
	Comment  *string `json:"comment"`
	Feedback *string `json:"feedback"`
	Reason   *string `json:"reason"`
}

type subscriptionTrialCfg struct {
	EndBehavior struct {
		MissingPaymentMethod string `json:"missing_payment_method"`
	} `json:"end_behavior"`
}

// subItem is a SubscriptionItem as the API renders it.
type subItem struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	BillingThresholds *struct{}         `json:"billing_thresholds"`
	Created           int64             `json:"created"`
	Metadata          map[string]string `json:"metadata"`
	Price             priceObject       `json:"price"`
	Quantity          int64             `json:"quantity"`
	Subscription      string            `json:"subscription"`
	TaxRates          []struct{}        `json:"tax_rates"`
}

// subscriptionRecord is a subscription with what the API does not show.
type subscriptionRecord struct {
	s         subscriptionObject
	sessionID string // the Checkout Session that made it
	recurring priceRecurring
	periods   int            // period ends passed since the anchor
	pending   *invoiceRecord // the invoice awaiting a payment attempt
	names     []string       // the items' product names
}

// invoiceObject is an Invoice as the API renders it at 2023-10-16, the
// fields the fake models.
type invoiceObject struct {
	ID                 string              `json:"id"`
	Object             string              `json:"object"`
	AccountCountry     string              `json:"account_country"`
	AmountDue          int64               `json:"amount_due"`
	AmountPaid         int64               `json:"amount_paid"`
	AmountRemaining    int64               `json:"amount_remaining"`
	AttemptCount       int64               `json:"attempt_count"`
	Attempted          bool                `json:"attempted"`
	AutoAdvance        bool                `json:"auto_advance"`
	BillingReason      string              `json:"billing_reason"`
	Charge             *string             `json:"charge"`
	CollectionMethod   string              `json:"collection_method"`
	Created            int64               `json:"created"`
	Currency           string              `json:"currency"`
	Customer           string              `json:"customer"`
	CustomerEmail      string              `json:"customer_email"`
	Lines              listObject[lineObj] `json:"lines"`
	Livemode           bool                `json:"livemode"`
	Metadata           map[string]string   `json:"metadata"`
	NextPaymentAttempt *int64              `json:"next_payment_attempt"`
	Number             *string             `json:"number"`
	Paid               bool                `json:"paid"`
	PaymentIntent      *string             `json:"payment_intent"`
	PeriodEnd          int64               `json:"period_end"`
	PeriodStart        int64               `json:"period_start"`
	Status             string              `json:"status"`
	StatusTransitions  statusTransitions   `json:"status_transitions"`
	Subscription       string              `json:"subscription"`
	// SubscriptionDetails copies the subscription's metadata, as Stripe
	// does for invoices created since 2023-06-29.
	SubscriptionDetails subscriptionDetails `json:"subscription_details"`
	Subtotal            int64               `json:"subtotal"`
	Total               int64               `json:"total"`
}

type subscriptionDetails struct {
	Metadata map[string]string `json:"metadata"`
}

type statusTransitions struct {
	FinalizedAt           *int64 `json:"finalized_at"`
	MarkedUncollectibleAt *int64 `json:"marked_uncollectible_at"`
	PaidAt                *int64 `json:"paid_at"`
	VoidedAt              *int64 `json:"voided_at"`
}

// lineObj is an invoice line item for a subscription item's period.
type lineObj struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Amount           int64             `json:"amount"`
	Currency         string            `json:"currency"`
	Description      string            `json:"description"`
	Livemode         bool              `json:"livemode"`
	Metadata         map[string]string `json:"metadata"`
	Period           linePeriod        `json:"period"`
	Price            priceObject       `json:"price"`
	Proration        bool              `json:"proration"`
	Quantity         int64             `json:"quantity"`
	Subscription     string            `json:"subscription"`
	SubscriptionItem string            `json:"subscription_item"`
	Type             string            `json:"type"`
}

type linePeriod struct {
	End   int64 `json:"end"`
	Start int64 `json:"start"`
}

type invoiceRecord struct {
	i           invoiceObject
	pi          *paymentIntent // made when the invoice is finalized
	nextAttempt time.Time      // when the pending invoice is next charged
}

// addInterval is anchor plus n of a price's intervals. Months are counted
// from the anchor and clamped to the month's last day, as Stripe bills a
// subscription that began on the 31st on the 30th or the 28th.
func addInterval(anchor time.Time, rc priceRecurring, n int) time.Time {
	k := int(rc.IntervalCount) * n
	switch rc.Interval {
	case intervalDay:
		return anchor.AddDate(0, 0, k)
	case intervalWeek:
		return anchor.AddDate(0, 0, 7*k)
	case intervalYear:
		k *= 12
	}
	y, m, d := anchor.Date()
	first := time.Date(y, m+time.Month(k), 1, anchor.Hour(), anchor.Minute(), anchor.Second(), 0, anchor.Location())
	last := first.AddDate(0, 1, -1).Day()
	return first.AddDate(0, 0, min(d, last)-1)
}

// newCustomer stores a customer paying with email. The caller holds s.mu.
func (s *Server) newCustomer(email string, livemode bool) (*customerRecord, error) {
	id, err := s.newID("cus_", 14)
	if err != nil {
		return nil, fmt.Errorf("create customer: %w", err)
	}
	prefix, err := s.newID("", 8)
	if err != nil {
		return nil, fmt.Errorf("create customer: %w", err)
	}
	c := &customerRecord{c: customerObject{
		ID:               id,
		Object:           "customer",
		Created:          s.now().Unix(),
		Email:            email,
		InvoicePrefix:    strings.ToUpper(prefix),
		Livemode:         livemode,
		Metadata:         map[string]string{},
		PreferredLocales: []string{},
		TaxExempt:        "none",
	}}
	s.customers[id] = c
	return c, nil
}

func (s *Server) retrieveCustomer(r *http.Request, _ url.Values) (any, error) {
	id := r.PathValue("id")
	c, ok := s.customers[id]
	if !ok {
		return nil, noSuch(http.StatusNotFound, "customer", clip(id), "id")
	}
	return c.c, nil
}

// newSubscription stores an active subscription of cust to the session's
// recurring items, its first period starting now, and its first invoice,
// paid. The caller holds s.mu.
func (s *Server) newSubscription(rec *sessionRecord, cust *customerRecord) (*subscriptionRecord, *invoiceRecord, error) {
	now := s.now().UTC()
	id, err := s.newID("sub_", objectIDLen)
	if err != nil {
		return nil, nil, fmt.Errorf("create subscription: %w", err)
	}
	rc := *rec.items[0].price.p.Recurring
	sub := &subscriptionRecord{sessionID: rec.s.ID, recurring: rc, s: subscriptionObject{
		ID:                 id,
		Object:             "subscription",
		BillingCycleAnchor: now.Unix(),
		CollectionMethod:   "charge_automatically",
		Created:            now.Unix(),
		Currency:           rec.s.Currency,
		CurrentPeriodStart: now.Unix(),
		CurrentPeriodEnd:   addInterval(now, rc, 1).Unix(),
		Customer:           cust.c.ID,
		DefaultTaxRates:    []struct{}{},
		Items:              listObject[subItem]{Object: "list", URL: "/v1/subscription_items?subscription=" + id},
		Livemode:           rec.s.Livemode,
		Metadata:           rec.subMetadata,
		StartDate:          now.Unix(),
		Status:             subActive,
	}}
	sub.s.TrialSettings.EndBehavior.MissingPaymentMethod = "create_invoice"
	for _, it := range rec.items {
		siID, err := s.newID("si_", 14)
		if err != nil {
			return nil, nil, fmt.Errorf("create subscription: %w", err)
		}
		sub.s.Items.Data = append(sub.s.Items.Data, subItem{
			ID: siID, Object: "subscription_item", Created: now.Unix(), Metadata: map[string]string{},
			Price: it.price.p, Quantity: it.Quantity, Subscription: id, TaxRates: []struct{}{},
		})
		sub.names = append(sub.names, it.Name)
	}
	n := len(sub.s.Items.Data)
	sub.s.Items.TotalCount = &n

	inv, err := s.newInvoice(sub, reasonCreate, now, now)
	if err != nil {
		return nil, nil, err
	}
	s.finalize(inv)
	if err := s.charge(sub, inv, true); err != nil {
		return nil, nil, err
	}
	s.subscriptions[id] = sub
	return sub, inv, nil
}

// newInvoice stores a draft invoice of sub's current period, whose own
// period is [start, end] (the period before, for a renewal). The caller
// holds s.mu.
func (s *Server) newInvoice(sub *subscriptionRecord, reason string, start, end time.Time) (*invoiceRecord, error) {
	id, err := s.newID("in_", objectIDLen)
	if err != nil {
		return nil, fmt.Errorf("create invoice: %w", err)
	}
	cust := s.customers[sub.s.Customer]
	inv := &invoiceRecord{i: invoiceObject{
		ID:               id,
		Object:           "invoice",
		AccountCountry:   "CA",
		AutoAdvance:      true,
		BillingReason:    reason,
		CollectionMethod: "charge_automatically",
		Created:          s.now().Unix(),
		Currency:         sub.s.Currency,
		Customer:         cust.c.ID,
		CustomerEmail:    cust.c.Email,
		Lines:            listObject[lineObj]{Object: "list", URL: "/v1/invoices/" + id + "/lines"},
		Livemode:         sub.s.Livemode,
		Metadata:         map[string]string{},
		PeriodEnd:        end.Unix(),
		PeriodStart:      start.Unix(),
		Status:           invoiceDraft,
		Subscription:     sub.s.ID,
	}}
	inv.i.SubscriptionDetails.Metadata = maps.Clone(sub.s.Metadata)
	for i, it := range sub.s.Items.Data {
		ilID, err := s.newID("il_", objectIDLen)
		if err != nil {
			return nil, fmt.Errorf("create invoice: %w", err)
		}
		amount := it.Price.UnitAmount * it.Quantity
		inv.i.Lines.Data = append(inv.i.Lines.Data, lineObj{
			ID: ilID, Object: "line_item", Amount: amount, Currency: it.Price.Currency,
			Description: fmt.Sprintf("%d × %s (at %s / %s)", it.Quantity, sub.names[i], formatAmount(it.Price.UnitAmount, it.Price.Currency), it.Price.Recurring.Interval),
			Livemode:    sub.s.Livemode, Metadata: map[string]string{},
			Period: linePeriod{Start: sub.s.CurrentPeriodStart, End: sub.s.CurrentPeriodEnd},
			Price:  it.Price, Quantity: it.Quantity, Subscription: sub.s.ID, SubscriptionItem: it.ID, Type: "subscription",
		})
		inv.i.Subtotal += amount
	}
	n := len(inv.i.Lines.Data)
	inv.i.Lines.TotalCount = &n
	inv.i.Total, inv.i.AmountDue, inv.i.AmountRemaining = inv.i.Subtotal, inv.i.Subtotal, inv.i.Subtotal
	s.invoices[id] = inv
	sub.s.LatestInvoice = &id
	return inv, nil
}

// finalize makes a draft invoice open: numbered, with the payment intent
// its attempts charge. The caller holds s.mu.
func (s *Server) finalize(inv *invoiceRecord) {
	if inv.i.Status != invoiceDraft {
		return
	}
	cust := s.customers[inv.i.Customer]
	cust.invoices++
	number := fmt.Sprintf("%s-%04d", cust.c.InvoicePrefix, cust.invoices)
	now := s.now().Unix()
	inv.i.Number, inv.i.Status, inv.i.StatusTransitions.FinalizedAt = &number, invoiceOpen, &now
}

// charge attempts an open invoice's payment: it succeeds when ok. The
// caller holds s.mu.
func (s *Server) charge(sub *subscriptionRecord, inv *invoiceRecord, ok bool) error {
	if inv.pi == nil {
		piID, err := s.newID("pi_", objectIDLen)
		if err != nil {
			return fmt.Errorf("charge invoice %s: %w", inv.i.ID, err)
		}
		inv.pi = &paymentIntent{id: piID, sessionID: sub.sessionID, livemode: inv.i.Livemode, currency: inv.i.Currency, amount: inv.i.AmountDue, invoice: inv.i.ID}
		s.intents[piID] = inv.pi
		inv.i.PaymentIntent = &piID
	}
	inv.i.Attempted = true
	inv.i.AttemptCount++
	if !ok {
		return nil
	}
	if err := s.succeed(inv.pi, inv.i.CustomerEmail); err != nil {
		return fmt.Errorf("charge invoice %s: %w", inv.i.ID, err)
	}
	now := s.now().Unix()
	inv.i.Charge = &inv.pi.charge.id
	inv.i.Paid, inv.i.Status, inv.i.StatusTransitions.PaidAt = true, invoicePaid, &now
	inv.i.AmountPaid, inv.i.AmountRemaining = inv.i.AmountDue, 0
	inv.i.AutoAdvance, inv.i.NextPaymentAttempt = false, nil
	return nil
}

// subEvent stores a customer.subscription.* event carrying sub as it is now.
// The caller holds s.mu.
func (s *Server) subEvent(typ string, sub *subscriptionRecord, previous map[string]any, req eventRequest) (*event, error) {
	return s.newEvent(eventSpec{typ: typ, sessionID: sub.sessionID, livemode: sub.s.Livemode, object: sub.s, previous: previous, request: req})
}

// invoiceEvent stores an invoice.* event carrying inv as it is now.
func (s *Server) invoiceEvent(typ string, sub *subscriptionRecord, inv *invoiceRecord) (*event, error) {
	return s.newEvent(eventSpec{typ: typ, sessionID: sub.sessionID, livemode: inv.i.Livemode, object: inv.i})
}

// setCancelAtPeriodEnd schedules or unschedules sub's cancellation at its
// period's end, as the portal and the update call do. It returns the
// customer.subscription.updated event, or nil when nothing changed. The
// caller holds s.mu.
func (s *Server) setCancelAtPeriodEnd(sub *subscriptionRecord, on bool, req eventRequest) (*event, error) {
	if sub.s.CancelAtPeriodEnd == on {
		return nil, nil
	}
	previous := map[string]any{
		"cancel_at":            sub.s.CancelAt,
		"cancel_at_period_end": sub.s.CancelAtPeriodEnd,
		"canceled_at":          sub.s.CanceledAt,
		"cancellation_details": sub.s.CancellationDetails,
	}
	sub.s.CancelAtPeriodEnd = on
	sub.s.CancelAt, sub.s.CanceledAt, sub.s.CancellationDetails.Reason = nil, nil, nil
	if on {
		end, now, reason := sub.s.CurrentPeriodEnd, s.now().Unix(), cancelRequested
		sub.s.CancelAt, sub.s.CanceledAt, sub.s.CancellationDetails.Reason = &end, &now, &reason
	}
	s.log.Info("fakestripe: subscription cancel_at_period_end", "subscription", sub.s.ID, "on", on)
	return s.subEvent(eventSubUpdated, sub, previous, req)
}

// end cancels sub now, for reason: customer.subscription.deleted. A
// cancellation already requested keeps its canceled_at. The caller holds
// s.mu.
func (s *Server) end(sub *subscriptionRecord, reason string, req eventRequest) (*event, error) {
	now := s.now().Unix()
	sub.s.Status, sub.s.EndedAt, sub.pending = subCanceled, &now, nil
	if sub.s.CanceledAt == nil || !sub.s.CancelAtPeriodEnd {
		sub.s.CanceledAt = &now
		sub.s.CancellationDetails.Reason = &reason
	}
	s.log.Info("fakestripe: subscription ended", "subscription", sub.s.ID, "reason", reason)
	return s.subEvent(eventSubDeleted, sub, nil, req)
}

// setStatus moves sub to status and stores customer.subscription.updated,
// or nothing when it is already there. The caller holds s.mu.
func (s *Server) setStatus(sub *subscriptionRecord, status string) ([]*event, error) {
	if sub.s.Status == status {
		return nil, nil
	}
	previous := map[string]any{"status": sub.s.Status}
	sub.s.Status = status
	ev, err := s.subEvent(eventSubUpdated, sub, previous, eventRequest{})
	if err != nil {
		return nil, err
	}
	return []*event{ev}, nil
}

// payDue pays sub's open invoice at once, as a customer does in the portal
// with a new card: invoice.paid, and the subscription active again. It
// returns no events when no invoice is open. The caller holds s.mu.
func (s *Server) payDue(sub *subscriptionRecord) ([]*event, error) {
	inv := s.dueInvoice(sub)
	if inv == nil {
		return nil, nil
	}
	if err := s.charge(sub, inv, true); err != nil {
		return nil, err
	}
	sub.pending = nil
	ev, err := s.invoiceEvent(eventInvoicePaid, sub, inv)
	if err != nil {
		return nil, err
	}
	s.log.Info("fakestripe: invoice paid in the portal", "invoice", inv.i.ID, "subscription", sub.s.ID)
	more, err := s.setStatus(sub, subActive)
	return append([]*event{ev}, more...), err
}

// dueInvoice is sub's latest invoice when it is open, a failed renewal's,
// or nil. The caller holds s.mu.
func (s *Server) dueInvoice(sub *subscriptionRecord) *invoiceRecord {
	inv, ok := s.invoices[deref(sub.s.LatestInvoice)]
	if !ok || inv.i.Status != invoiceOpen || sub.s.Status == subCanceled {
		return nil
	}
	return inv
}

func (s *Server) subscription(id string) (*subscriptionRecord, error) {
	sub, ok := s.subscriptions[id]
	if !ok {
		return nil, noSuch(http.StatusNotFound, "subscription", clip(id), "id")
	}
	return sub, nil
}

func (s *Server) retrieveSubscription(r *http.Request, _ url.Values) (any, error) {
	sub, err := s.subscription(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return sub.s, nil
}

// updateSubscription serves POST /v1/subscriptions/{id}: the fake models
// cancel_at_period_end and metadata, and accepts and ignores the rest.
func (s *Server) updateSubscription(r *http.Request, form url.Values) (any, error) {
	var cancel *bool
	switch v := form.Get("cancel_at_period_end"); v {
	case "":
	case "true", "false":
		on := v == "true"
		cancel = &on
	default:
		return nil, invalidParam("", "cancel_at_period_end", "Invalid boolean: %s", clip(v))
	}
	if _, err := parseMetadata(form); err != nil {
		return nil, err
	}
	sub, err := s.subscription(r.PathValue("id"))
	if err != nil {
		return nil, executed(err)
	}
	if sub.s.Status == subCanceled && cancel != nil {
		return nil, executed(invalidParam("", "cancel_at_period_end", "A canceled subscription can only update its cancellation_details and metadata."))
	}
	if cancel != nil {
		ev, err := s.setCancelAtPeriodEnd(sub, *cancel, requestOf(r))
		if err != nil {
			return nil, err
		}
		if ev != nil {
			s.outbox = append(s.outbox, ev)
		}
	}
	if changed := updateMetadata(sub.s.Metadata, form); changed != nil {
		ev, err := s.subEvent(eventSubUpdated, sub, map[string]any{"metadata": changed}, requestOf(r))
		if err != nil {
			return nil, err
		}
		s.outbox = append(s.outbox, ev)
	}
	return sub.s, nil
}

// updateMetadata applies an update call's metadata to md, an empty value
// unsetting a key, and returns md as it was, or nil when nothing changed.
func updateMetadata(md map[string]string, form url.Values) map[string]string {
	before := maps.Clone(md)
	for param, vals := range form {
		inner, ok := strings.CutPrefix(param, "metadata[")
		if !ok {
			continue
		}
		key := strings.TrimSuffix(inner, "]")
		if v := vals[len(vals)-1]; v == "" {
			delete(md, key)
		} else {
			md[key] = v
		}
	}
	if maps.Equal(before, md) {
		return nil
	}
	return before
}

// cancelSubscription serves DELETE /v1/subscriptions/{id}: it ends now.
func (s *Server) cancelSubscription(r *http.Request, _ url.Values) (any, error) {
	sub, err := s.subscription(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if sub.s.Status == subCanceled {
		return nil, invalidParam("", "", "This subscription (%s) has already been canceled.", sub.s.ID)
	}
	sub.s.CancelAtPeriodEnd = false
	ev, err := s.end(sub, cancelRequested, requestOf(r))
	if err != nil {
		return nil, err
	}
	s.outbox = append(s.outbox, ev)
	return sub.s, nil
}

// listSubscriptions serves GET /v1/subscriptions: newest first, by status
// (default: all but canceled), customer, price and current_period_end[gte].
func (s *Server) listSubscriptions(_ *http.Request, form url.Values) (any, error) {
	status, customer, price := form.Get("status"), form.Get("customer"), form.Get("price")
	if status != "" && !subscriptionStatuses[status] {
		return nil, invalidParam("", "status", "Invalid status: must be one of active, all, canceled, ended, incomplete, incomplete_expired, past_due, paused, trialing, or unpaid")
	}
	endFrom, _, err := parseInt(form, "current_period_end[gte]", 0, 1<<40)
	if err != nil {
		return nil, err
	}
	all := slices.SortedFunc(maps.Values(s.subscriptions), func(a, b *subscriptionRecord) int {
		return cmp.Or(cmp.Compare(b.s.Created, a.s.Created), strings.Compare(b.s.ID, a.s.ID))
	})
	objs := make([]subscriptionObject, len(all))
	for i, sub := range all {
		objs[i] = sub.s
	}
	return listPage(form, "/v1/subscriptions", "subscription", objs, func(o subscriptionObject) string { return o.ID }, func(o subscriptionObject) bool {
		switch {
		case status == "" && o.Status == subCanceled:
			return false
		case status != "" && status != "all" && status != "ended" && o.Status != status:
			return false
		case status == "ended" && o.Status != subCanceled:
			return false
		case customer != "" && o.Customer != customer:
			return false
		case price != "" && !slices.ContainsFunc(o.Items.Data, func(it subItem) bool { return it.Price.ID == price }):
			return false
		case o.CurrentPeriodEnd < endFrom:
			return false
		}
		return true
	})
}

func (s *Server) retrieveInvoice(r *http.Request, _ url.Values) (any, error) {
	id := r.PathValue("id")
	inv, ok := s.invoices[id]
	if !ok {
		return nil, noSuch(http.StatusNotFound, "invoice", clip(id), "invoice")
	}
	return inv.i, nil
}

// listInvoices serves GET /v1/invoices: newest first, by subscription,
// customer and status.
func (s *Server) listInvoices(_ *http.Request, form url.Values) (any, error) {
	status, customer, subscription := form.Get("status"), form.Get("customer"), form.Get("subscription")
	if status != "" && !invoiceStatuses[status] {
		return nil, invalidParam("", "status", "Invalid status: must be one of draft, open, paid, uncollectible, or void")
	}
	all := slices.SortedFunc(maps.Values(s.invoices), func(a, b *invoiceRecord) int {
		return cmp.Or(cmp.Compare(b.i.Created, a.i.Created), strings.Compare(b.i.ID, a.i.ID))
	})
	objs := make([]invoiceObject, len(all))
	for i, inv := range all {
		objs[i] = inv.i
	}
	return listPage(form, "/v1/invoices", "invoice", objs, func(o invoiceObject) string { return o.ID }, func(o invoiceObject) bool {
		return (status == "" || o.Status == status) && (customer == "" || o.Customer == customer) && (subscription == "" || o.Subscription == subscription)
	})
}
