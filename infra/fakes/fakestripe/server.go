// Package fakestripe is a stateful, in-memory fake of the parts of Stripe the
// Oracle verdict service uses: Checkout Sessions, refunds, a hosted pay page,
// Payment Link style sessions, disputes and early fraud warnings, prices,
// subscriptions with their invoices and customer portal, a billing clock,
// and signed webhook deliveries.
//
// It speaks the wire format of the official stripe-go v76 client (form-encoded
// requests, JSON responses, Stripe error objects), so the service's real code
// runs against it unchanged. Parameters that Stripe knows but the fake does not
// model are accepted and ignored; parameters Stripe does not know are refused
// as Stripe refuses them.
//
// Endpoints:
//
//	POST /v1/checkout/sessions              create a Checkout Session
//	GET  /v1/checkout/sessions              list Checkout Sessions, newest first
//	GET  /v1/checkout/sessions/{id}         retrieve a Checkout Session
//	POST /v1/checkout/sessions/{id}/expire  expire an open Checkout Session
//	POST /v1/refunds                        refund a paid session's payment intent or charge
//	GET  /v1/refunds/{id}                   retrieve a refund
//	GET  /v1/charges/{id}                   retrieve a paid payment intent's charge
//	POST /v1/prices, GET /v1/prices         create a price; list prices (lookup_keys)
//	GET  /v1/prices/{id}                    retrieve a price
//	GET  /v1/customers/{id}                 retrieve a customer a subscription made
//	GET  /v1/subscriptions                  list subscriptions, newest first
//	GET, POST, DELETE /v1/subscriptions/{id} retrieve, update (cancel_at_period_end), cancel now
//	GET  /v1/invoices/{id}                  retrieve an invoice
//	POST /v1/billing_portal/sessions        open the customer portal
//	GET  /pay/{id}, POST /pay/{id}          the hosted pay page (pays or subscribes)
//	GET  /link/{tier}                       open a Payment Link for a tier
//	GET  /portal/{id}, POST /portal/{id}    the customer portal: cancel at the period's end, renew, pay
//	POST /_control                          shape the next payment's webhook deliveries; fail renewals
//	GET  /_clock, POST /_clock              the fake's time; advance it to bill subscriptions
//	POST /_disputes                         the cardholder disputes a paid payment intent
//	POST /_early_fraud_warnings             the issuer warns of fraud on a paid payment intent
//	POST /_events/{id}/deliver              resend a stored event
//	GET  /_calls, DELETE /_calls            API calls received
//	GET  /_deliveries                       webhook deliveries attempted
//	GET  /_events                           events created
package fakestripe

import (
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"42sisters.ai/oracle/shared/oracle"
)

// Options configures a Server. The zero value serves a working fake that
// delivers no webhooks.
type Options struct {
	// PublicURL is where this server is reachable; a session's url is
	// PublicURL + "/pay/" + id. Empty means the scheme and host of the request
	// that created the session.
	PublicURL string
	// WebhookURL is where signed events are POSTed. Empty means events are
	// created and stored but not delivered.
	WebhookURL string
	// WebhookSecret (whsec_...) signs deliveries.
	WebhookSecret string
	// LinkSuccessURL is the success_url of Payment Link style sessions and
	// should contain {CHECKOUT_SESSION_ID}. Empty means the customer lands on
	// the fake's own confirmation page, as with a link that has no redirect.
	LinkSuccessURL string
	// Clock is the time source for timestamps and signatures; nil means
	// time.Now. POST /_clock moves the fake's own time ahead of it, for
	// billing; signatures keep to Clock, as a receiver checks them against
	// its own clock.
	Clock func() time.Time
	// Rand is the source of ids; nil means crypto/rand. It is only read with
	// the server's lock held, so it need not be safe for concurrent use.
	Rand io.Reader
	// HTTPClient delivers webhooks; nil means a client with a 10 s timeout
	// that, like Stripe, does not follow redirects.
	HTTPClient *http.Client
	// Logger receives request and delivery logs; nil discards them.
	Logger *slog.Logger
}

// Server is the fake. It implements http.Handler and is safe for concurrent use.
type Server struct {
	opts   Options
	wall   func() time.Time // Options.Clock
	now    func() time.Time // wall plus the offset /_clock adds
	offset atomic.Int64     // nanoseconds the clock was advanced
	rand   io.Reader
	client *http.Client
	log    *slog.Logger
	mux    *http.ServeMux

	mu          sync.Mutex
	sessions    map[string]*sessionRecord
	intents     map[string]*paymentIntent
	refunds     map[string]*refund
	links       map[oracle.Tier]string    // Payment Link id per tier, made on first use
	charges     map[string]*paymentIntent // by charge id
	idempotency *idempotencyStore
	events      []*event
	outbox      []*event // events an API call made, sent before it answers
	eventByID   map[string]*event
	calls       []Call
	deliveries  []Delivery
	control     Control
	accepted    string // the one key accepted, when set (AcceptOnly)

	prices        map[string]*priceRecord
	products      map[string]string // product name by id
	customers     map[string]*customerRecord
	subscriptions map[string]*subscriptionRecord
	invoices      map[string]*invoiceRecord
	portals       map[string]*portalSession
	portalConfig  string   // the billing portal configuration's id, made on first use
	renewals      Renewals // how the next renewal payments go
}

// New returns a fake Stripe configured by opts.
func New(opts Options) *Server {
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	s := &Server{
		opts:        opts,
		wall:        opts.Clock,
		rand:        opts.Rand,
		client:      opts.HTTPClient,
		log:         opts.Logger,
		mux:         http.NewServeMux(),
		sessions:    make(map[string]*sessionRecord),
		intents:     make(map[string]*paymentIntent),
		refunds:     make(map[string]*refund),
		links:       make(map[oracle.Tier]string),
		charges:     make(map[string]*paymentIntent),
		idempotency: newIdempotencyStore(),
		eventByID:   make(map[string]*event),

		prices:        make(map[string]*priceRecord),
		products:      make(map[string]string),
		customers:     make(map[string]*customerRecord),
		subscriptions: make(map[string]*subscriptionRecord),
		invoices:      make(map[string]*invoiceRecord),
		portals:       make(map[string]*portalSession),
	}
	if s.wall == nil {
		s.wall = time.Now
	}
	s.now = func() time.Time { return s.wall().Add(time.Duration(s.offset.Load())) }
	if s.rand == nil {
		s.rand = rand.Reader
	}
	if s.client == nil {
		s.client = &http.Client{
			Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.HandleFunc("POST /v1/checkout/sessions", s.api(sessionParamNames, s.createSession))
	s.mux.HandleFunc("GET /v1/checkout/sessions", s.api(sessionListParamNames, s.listSessions))
	s.mux.HandleFunc("GET /v1/checkout/sessions/{id}", s.api(retrieveParamNames, s.retrieveSession))
	s.mux.HandleFunc("POST /v1/checkout/sessions/{id}/expire", s.api(retrieveParamNames, s.expireSession))
	s.mux.HandleFunc("POST /v1/refunds", s.api(refundParamNames, s.createRefund))
	s.mux.HandleFunc("GET /v1/refunds/{id}", s.api(retrieveParamNames, s.retrieveRefund))
	s.mux.HandleFunc("GET /v1/charges/{id}", s.api(retrieveParamNames, s.retrieveCharge))
	s.mux.HandleFunc("POST /v1/prices", s.api(priceParamNames, s.createPrice))
	s.mux.HandleFunc("GET /v1/prices", s.api(priceListParamNames, s.listPrices))
	s.mux.HandleFunc("GET /v1/prices/{id}", s.api(retrieveParamNames, s.retrievePrice))
	s.mux.HandleFunc("GET /v1/customers/{id}", s.api(retrieveParamNames, s.retrieveCustomer))
	s.mux.HandleFunc("GET /v1/subscriptions", s.api(subscriptionListParamNames, s.listSubscriptions))
	s.mux.HandleFunc("GET /v1/subscriptions/{id}", s.api(retrieveParamNames, s.retrieveSubscription))
	s.mux.HandleFunc("POST /v1/subscriptions/{id}", s.api(subscriptionParamNames, s.updateSubscription))
	s.mux.HandleFunc("DELETE /v1/subscriptions/{id}", s.api(subscriptionCancelParamNames, s.cancelSubscription))
	s.mux.HandleFunc("GET /v1/invoices", s.api(invoiceListParamNames, s.listInvoices))
	s.mux.HandleFunc("GET /v1/invoices/{id}", s.api(retrieveParamNames, s.retrieveInvoice))
	s.mux.HandleFunc("POST /v1/billing_portal/sessions", s.api(portalParamNames, s.createPortalSession))
	s.mux.HandleFunc("/v1/", s.api(nil, unknownAPIRoute))

	s.mux.HandleFunc("GET /pay/{id}", s.payPage)
	s.mux.HandleFunc("POST /pay/{id}", s.pay)
	s.mux.HandleFunc("GET /link/{tier}", s.link)
	s.mux.HandleFunc("GET /portal/{id}", s.portalPage)
	s.mux.HandleFunc("POST /portal/{id}", s.portalAction)

	s.mux.HandleFunc("POST /_control", s.handleControl)
	s.mux.HandleFunc("GET /_clock", s.handleClock)
	s.mux.HandleFunc("POST /_clock", s.handleClock)
	s.mux.HandleFunc("POST /_disputes", s.local(disputeParamNames, s.createDispute))
	s.mux.HandleFunc("POST /_early_fraud_warnings", s.local(earlyFraudWarningParamNames, s.createEarlyFraudWarning))
	s.mux.HandleFunc("POST /_events/{id}/deliver", s.handleRedeliver)
	s.mux.HandleFunc("GET /_calls", s.handleCalls)
	s.mux.HandleFunc("DELETE /_calls", s.handleClearCalls)
	s.mux.HandleFunc("GET /_deliveries", s.handleDeliveries)
	s.mux.HandleFunc("GET /_events", s.handleEvents)

	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, routeNotFound(r))
	})
}

// ServeHTTP serves the fake's API, pay pages and test endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// baseURL is where customers reach this server: PublicURL, or else the
// scheme and host r was sent to.
func (s *Server) baseURL(r *http.Request) string {
	if s.opts.PublicURL != "" {
		return s.opts.PublicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
