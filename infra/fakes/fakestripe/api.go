package fakestripe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stripe/stripe-go/v76"
)

// maxAPIBody bounds a form-encoded API request body.
const maxAPIBody = 1 << 20

// Call is one API request the fake received (any path under /v1/).
type Call struct {
	Method         string     `json:"method"`
	Path           string     `json:"path"`
	Params         url.Values `json:"params"` // the parsed form body (POST) or query (GET)
	IdempotencyKey string     `json:"idempotency_key,omitempty"`
	RequestID      string     `json:"request_id,omitempty"` // the Request-Id answered
	Status         int        `json:"status"`               // the HTTP status answered
	Time           time.Time  `json:"time"`
}

// Calls returns the API calls received so far, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		c.Params = cloneValues(c.Params)
		out[i] = c
	}
	return out
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// requestIDLen is the length of a Request-Id after its req_ prefix.
const requestIDLen = 14

// apiFunc handles one API request with s.mu held. It returns the response
// object, or an error: an *apiError is sent as is, anything else as a 500.
// An error wrapped by executed is kept for an idempotency key.
type apiFunc func(r *http.Request, form url.Values) (any, error)

// apiAnswer is what an API call is answered with.
type apiAnswer struct {
	status   int
	body     []byte
	replayed bool   // an idempotent request's answer sent again
	original string // the Request-Id of the call that made the answer
}

// requestKey carries the API request's Request-Id and Idempotency-Key in
// its context, for the events the call makes.
type requestKey struct{}

// requestOf is the event "request" of the API call r: its Request-Id and
// Idempotency-Key, as Stripe puts them in the events a call causes.
func requestOf(r *http.Request) eventRequest {
	req, _ := r.Context().Value(requestKey{}).(eventRequest)
	return req
}

// api wraps an API handler with what every Stripe endpoint does: read the
// form, authenticate, refuse unknown parameters (allowed nil skips that),
// replay idempotent requests, encode the answer and record the call; then
// it delivers the events the call made.
func (s *Server) api(allowed map[string]bool, h apiFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		form, formErr := readForm(w, r)
		idemKey := strings.TrimSpace(r.Header.Get("Idempotency-Key"))

		s.mu.Lock()
		var req eventRequest
		reqID, err := s.newID("req_", requestIDLen)
		if err != nil {
			s.log.Error("fakestripe: request id", "err", err)
			reqID = ""
		} else {
			req.ID = &reqID
		}
		if idemKey != "" {
			req.IdempotencyKey = &idemKey
		}
		r = r.WithContext(context.WithValue(r.Context(), requestKey{}, req))
		ans := s.serveAPI(r, form, formErr, allowed, h, reqID, idemKey)
		s.calls = append(s.calls, Call{
			Method:         r.Method,
			Path:           r.URL.Path,
			Params:         form,
			IdempotencyKey: r.Header.Get("Idempotency-Key"),
			RequestID:      reqID,
			Status:         ans.status,
			Time:           s.now(),
		})
		outbox := s.outbox
		s.outbox = nil
		s.mu.Unlock()

		// Delivering before answering, as the pay page does, lets a test
		// see the call's events as soon as the call returns.
		for _, ev := range outbox {
			s.deliver(context.WithoutCancel(r.Context()), Control{}, ev)
		}

		s.log.Debug("fakestripe: api call", "method", r.Method, "path", r.URL.Path, "status", ans.status, "replayed", ans.replayed)
		if reqID != "" {
			w.Header().Set("Request-Id", reqID)
		}
		if idemKey != "" {
			w.Header().Set("Idempotency-Key", idemKey)
		}
		if ans.original != "" {
			w.Header().Set("Original-Request", ans.original)
		}
		if ans.replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		if ans.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="Stripe"`)
		}
		writeJSONBody(w, ans.status, ans.body)
	}
}

// serveAPI runs h with s.mu held and returns the answer to send. A POST
// with an Idempotency-Key whose answer is kept gets that answer again, or
// an idempotency_error when its parameters differ.
func (s *Server) serveAPI(r *http.Request, form url.Values, formErr error, allowed map[string]bool, h apiFunc, reqID, idemKey string) apiAnswer {
	key, err := authenticate(r)
	if err == nil {
		err = s.rolled(key)
	}
	if err == nil {
		err = formErr
	}
	if err == nil {
		err = checkParams(form, allowed)
	}
	if err != nil {
		return s.errorResponse(err)
	}

	idempotent := r.Method == http.MethodPost && idemKey != ""
	scope := key + "\x00" + idemKey
	request := r.Method + " " + r.URL.Path + "?" + form.Encode()
	if idempotent {
		if prev, ok := s.idempotency.get(scope, s.now()); ok {
			if prev.request != request {
				e := newAPIError(http.StatusBadRequest, "", "",
					"Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '%s' if you meant to execute a different request.", idemKey)
				e.Type = typeIdempotency
				return s.errorResponse(e)
			}
			return apiAnswer{status: prev.status, body: prev.body, replayed: true, original: prev.requestID}
		}
	}

	var ans apiAnswer
	v, err := h(r, form)
	if err == nil {
		var body []byte
		if body, err = json.Marshal(v); err != nil {
			err = fmt.Errorf("marshal %T: %w", v, err)
		}
		ans = apiAnswer{status: http.StatusOK, body: body}
	}
	if err != nil {
		ans = s.errorResponse(err)
	}
	if idempotent {
		ans.original = reqID
		if keptForKey(err) {
			s.idempotency.put(&idempotentResult{scope: scope, request: request, requestID: reqID, status: ans.status, body: ans.body, at: s.now()})
		}
	}
	return ans
}

func (s *Server) errorResponse(err error) apiAnswer {
	var e *apiError
	if !errors.As(err, &e) {
		s.log.Error("fakestripe: internal error", "err", err)
		e = internalError()
	}
	return apiAnswer{status: e.status, body: e.body()}
}

// authenticate accepts a test-mode secret key sent as a bearer token, the
// way stripe-go sends it, and returns it.
func authenticate(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", newAPIError(http.StatusUnauthorized, "", "",
			"You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.")
	}
	key, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || !strings.HasPrefix(key, "sk_test_") || len(key) == len("sk_test_") || strings.ContainsAny(key, " \t") {
		return "", newAPIError(http.StatusUnauthorized, "", "", "Invalid API Key provided: %s", redactKey(key))
	}
	return key, nil
}

// redactKey shows at most a key's first eight and last four characters, as
// Stripe's error messages do.
func redactKey(key string) string {
	if len(key) < 16 {
		return strings.Repeat("*", len(key))
	}
	return key[:8] + strings.Repeat("*", min(len(key)-12, 24)) + key[len(key)-4:]
}

// readForm parses a request's parameters: the form-encoded body of a POST,
// the query string otherwise.
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	raw := r.URL.RawQuery
	if r.Method == http.MethodPost {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAPIBody))
		if err != nil {
			return url.Values{}, invalidParam("", "", "Could not read the request body: %v", err)
		}
		raw = string(b)
	}
	form, err := url.ParseQuery(raw)
	if err != nil {
		return url.Values{}, invalidParam("", "", "Invalid request: the parameters are not valid form encoding: %v", err)
	}
	return form, nil
}

// checkParams refuses what Stripe refuses before any endpoint logic: text
// that is not UTF-8, top-level parameters the endpoint does not have (when
// allowed is not nil) and expand, which the fake does not implement.
func checkParams(form url.Values, allowed map[string]bool) error {
	for _, key := range slices.Sorted(maps.Keys(form)) {
		if !utf8.ValidString(key) {
			return invalidParam("", "", "Invalid request: parameter names must be valid UTF-8.")
		}
		for _, v := range form[key] {
			if !utf8.ValidString(v) {
				return invalidParam("", key, "Invalid string: the value of %s is not valid UTF-8.", key)
			}
		}
		name, _, _ := strings.Cut(key, "[")
		if allowed != nil && !allowed[name] {
			return invalidParam(codeParameterUnknown, name, "Received unknown parameter: %s", name)
		}
		if name == "expand" && slices.ContainsFunc(form[key], func(v string) bool { return v != "" }) {
			return invalidParam("", "expand", "This property cannot be expanded (%s): the fake Stripe does not implement expand.", form.Get(key))
		}
	}
	return nil
}

// Top-level parameter names per endpoint, read from stripe-go's own
// parameter structs so that exactly what stripe-go can send is accepted.
var (
	sessionParamNames  = formNames(reflect.TypeFor[stripe.CheckoutSessionParams]())
	refundParamNames   = formNames(reflect.TypeFor[stripe.RefundParams]())
	retrieveParamNames = map[string]bool{"expand": true}
)

// formNames collects the `form` tag names of a stripe-go parameter struct,
// descending into embedded `form:"*"` structs.
func formNames(t reflect.Type) map[string]bool {
	names := make(map[string]bool)
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("form"), ",")
		switch {
		case name == "*" && f.Type.Kind() == reflect.Struct:
			maps.Copy(names, formNames(f.Type))
		case name != "" && name != "-" && name != "*":
			names[name] = true
		}
	}
	return names
}

func unknownAPIRoute(r *http.Request, _ url.Values) (any, error) {
	return nil, routeNotFound(r)
}
