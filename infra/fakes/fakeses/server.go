// Package fakeses is a front for moto server's SES v2 that does the two
// things moto does not: fail SendEmail on demand, the way SES fails, and
// publish the email sending events SES publishes through a configuration
// set to an SNS topic.
//
// Every request is forwarded to moto unchanged, signature and all, so any
// SES (or other) call works through the front as it does against moto.
// SendEmail (POST /v2/email/outbound-emails) is the exception:
//
//   - When a failure is queued (see Control), the front answers it in SES's
//     REST-JSON error format (the HTTP status, X-Amzn-Errortype,
//     X-Amzn-Requestid, Retry-After when set, a JSON message), so the SDK
//     returns a smithy.APIError with that code and moto never sees the
//     request.
//   - Otherwise moto sends (or refuses) the message and its answer goes
//     back to the client. When moto accepted it and the request named
//     Options.ConfigurationSet, the front then publishes the message's
//     events to Options.EventsTopicARN as SES's mailbox simulator would
//     cause them: a Send event, then by recipient
//     bounce@simulator.amazonses.com a Bounce (Permanent, General),
//     complaint@simulator.amazonses.com a Delivery and a Complaint,
//     suppressionlist@simulator.amazonses.com a Bounce (Permanent,
//     OnAccountSuppressionList), and any other address a Delivery. The
//     events carry the message id moto answered, the sender, the
//     recipients, the headers and the request's EmailTags with
//     ses:configuration-set in mail.tags, built from package sesevent's
//     types. They are published after the client has its answer, as SES
//     publishes after accepting; a publishing failure is logged and does
//     not fail the send.
//
// Test endpoints:
//
//	POST   /_control   queue failures, fail every send, or reset (see Control)
//	GET    /_control   the failures pending
//	GET    /_calls     the SendEmail requests received (see Call; never an address or a body)
//	DELETE /_calls     forget them
//
// The mailer's SDK reaches the front through AWS_ENDPOINT_URL_SESV2, or in
// tests through sesv2.Options.BaseEndpoint. The SDK's standard retryer
// retries a 5xx or a throttling error (TooManyRequestsException) up to
// three attempts in all, and each attempt uses up one queued failure.
package fakeses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
)

// Options configures a Server.
type Options struct {
	// Moto is moto server's endpoint, such as http://127.0.0.1:5000.
	Moto string
	// AWS reaches the SNS of moto the events are published to.
	AWS aws.Config
	// ConfigurationSet is the configuration set whose sends publish
	// events; empty publishes none.
	ConfigurationSet string
	// EventsTopicARN is the SNS topic the configuration set's event
	// destination names; empty publishes none.
	EventsTopicARN string
	// Now is the clock of the calls and the events; nil means time.Now.
	Now func() time.Time
	// DeliveryDelay is how long after the Send event the events of the
	// recipient's server's answer (Delivery, Bounce, Complaint) follow,
	// and what their timestamps add to the send's. SES publishes those
	// once it has handed the message on: never before the sender's next
	// request, seconds later in practice. Zero publishes them at once.
	DeliveryDelay time.Duration
	// After waits for DeliveryDelay; nil means time.After. Tests hold
	// the delivery with it.
	After func(time.Duration) <-chan time.Time
	// Logger receives a line per SendEmail and per publishing failure,
	// never an address; nil discards them.
	Logger *slog.Logger
}

// Server is the front. It implements http.Handler and is safe for
// concurrent use.
type Server struct {
	opts    Options
	now     func() time.Time
	after   func(time.Duration) <-chan time.Time
	log     *slog.Logger
	proxy   *httputil.ReverseProxy
	motoErr error // why Options.Moto cannot be used, if it cannot
	topics  publisher
	account string // the account id of the events, from the topic's ARN

	mu     sync.Mutex
	queue  []Failure
	always *Failure
	calls  []*Call
	paused bool   // what GetAccount answers
	seq    uint64 // answers the front made itself, for their request ids
}

// publisher is the part of the SNS client the front uses.
type publisher interface {
	Publish(context.Context, *sns.PublishInput, ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// New returns a front for the moto server at o.Moto. An endpoint that is
// not an http(s) URL makes every forwarded request fail with 502 and the
// reason logged.
func New(o Options) *Server {
	s := &Server{opts: o, now: o.Now, log: o.Logger, topics: sns.NewFromConfig(o.AWS), after: o.After}
	if s.now == nil {
		s.now = time.Now
	}
	if s.after == nil {
		s.after = time.After
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if parts := strings.Split(o.EventsTopicARN, ":"); len(parts) == 6 {
		s.account = parts[4]
	}
	target, err := url.Parse(o.Moto)
	if err == nil && (target.Scheme != "http" && target.Scheme != "https" || target.Host == "") {
		err = errors.New("not an http(s) URL with a host")
	}
	if err != nil {
		s.motoErr = fmt.Errorf("moto endpoint %q: %w", o.Moto, err)
	}
	s.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The Host header is part of the SigV4 signature: the request
			// reaches moto as the client signed it.
			pr.Out.Host = pr.In.Host
		},
		ModifyResponse: s.readSendAnswer,
		ErrorHandler:   s.proxyError,
	}
	return s
}

// ServeHTTP serves SendEmail, the test endpoints, and forwards everything
// else to moto. It dispatches by hand rather than through a ServeMux, which
// would clean or redirect paths that moto should see as sent.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/_control":
		switch r.Method {
		case http.MethodPost:
			s.handleControl(w, r)
		case http.MethodGet:
			s.writeJSON(w, http.StatusOK, s.state())
		default:
			methodNotAllowed(w, "GET, POST")
		}
	case r.URL.Path == "/_calls":
		switch r.Method {
		case http.MethodGet:
			s.writeJSON(w, http.StatusOK, s.Calls())
		case http.MethodDelete:
			s.ClearCalls()
			w.WriteHeader(http.StatusNoContent)
		default:
			methodNotAllowed(w, "GET, DELETE")
		}
	case r.Method == http.MethodPost && r.URL.Path == sendEmailPath:
		s.handleSend(w, r)
	case r.Method == http.MethodGet && r.URL.Path == accountPath:
		s.handleAccount(w)
	default:
		s.forward(w, r)
	}
}

// forward sends r to moto and its answer back.
func (s *Server) forward(w http.ResponseWriter, r *http.Request) {
	if s.motoErr != nil {
		s.proxyError(w, r, s.motoErr)
		return
	}
	s.proxy.ServeHTTP(w, r)
}

// proxyError answers a request moto did not answer with 502, as a gateway
// does; for SendEmail the SDK sees a transient failure.
func (s *Server) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("fakeses: forward to moto", "method", r.Method, "path", r.URL.Path, "err", err)
	if c := sendOf(r.Context()); c != nil {
		s.answered(c, http.StatusBadGateway, "", "", "")
	}
	writeError(w, http.StatusBadGateway, "", s.requestID(), 0, "The fake SES front could not reach moto server.")
}

// writeJSON marshals v and writes it with status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("fakeses: encode answer", "err", fmt.Errorf("marshal %T: %w", v, err))
		writeError(w, http.StatusInternalServerError, "InternalFailure", s.requestID(), 0, "The fake SES front failed to encode its answer.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A write error means the client went away; there is no one to tell.
	_, _ = w.Write(b)
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "", "", 0, "Method not allowed; use "+allow+".")
}
