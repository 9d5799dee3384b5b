package fakestripe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"

	"42sisters.ai/oracle/infra/fakes/fakecontrol"
)

// Disputes and early fraud warnings start with the cardholder's bank, not
// with an API call, so the fake makes them on local routes: POST /_disputes
// and POST /_early_fraud_warnings, each naming a paid payment intent. Each
// answers with the object as Stripe renders it and sends its event before
// answering, correctly signed and once: the Control shapes checkout
// payments only.

// maxLocalBody bounds the body of a local route.
const maxLocalBody = 4 << 10

// disputeResponseTime is how long a merchant has to answer a dispute in the
// fake: evidence_details.due_by is its creation plus this.
const disputeResponseTime = 7 * 24 * time.Hour

// Parameters of the local routes.
var (
	disputeParamNames           = setOf([]string{"payment_intent", "reason", "amount"})
	earlyFraudWarningParamNames = setOf([]string{"payment_intent", "fraud_type"})
)

// disputeReasons and fraudTypes are the values stripe-go v76 lists.
var (
	disputeReasons = []string{
		string(stripe.DisputeReasonBankCannotProcess), string(stripe.DisputeReasonCheckReturned),
		string(stripe.DisputeReasonCreditNotProcessed), string(stripe.DisputeReasonCustomerInitiated),
		string(stripe.DisputeReasonDebitNotAuthorized), string(stripe.DisputeReasonDuplicate),
		string(stripe.DisputeReasonFraudulent), string(stripe.DisputeReasonGeneral),
		string(stripe.DisputeReasonIncorrectAccountDetails), string(stripe.DisputeReasonInsufficientFunds),
		string(stripe.DisputeReasonProductNotReceived), string(stripe.DisputeReasonProductUnacceptable),
		string(stripe.DisputeReasonSubscriptionCanceled), string(stripe.DisputeReasonUnrecognized),
	}
	fraudTypes = []string{
		string(stripe.RadarEarlyFraudWarningFraudTypeCardNeverReceived),
		string(stripe.RadarEarlyFraudWarningFraudTypeFraudulentCardApplication),
		string(stripe.RadarEarlyFraudWarningFraudTypeMadeWithCounterfeitCard),
		string(stripe.RadarEarlyFraudWarningFraudTypeMadeWithLostCard),
		string(stripe.RadarEarlyFraudWarningFraudTypeMadeWithStolenCard),
		string(stripe.RadarEarlyFraudWarningFraudTypeMisc),
		string(stripe.RadarEarlyFraudWarningFraudTypeUnauthorizedUseOfCard),
	}
)

// dispute is a Dispute exactly as the API renders it, the fields the fake
// models. It has no balance transactions: the fake keeps no balance.
type dispute struct {
	ID                  string            `json:"id"`
	Object              string            `json:"object"`
	Amount              int64             `json:"amount"`
	BalanceTransactions []struct{}        `json:"balance_transactions"`
	Charge              string            `json:"charge"`
	Created             int64             `json:"created"`
	Currency            string            `json:"currency"`
	Evidence            map[string]any    `json:"evidence"`
	EvidenceDetails     evidenceDetails   `json:"evidence_details"`
	IsChargeRefundable  bool              `json:"is_charge_refundable"`
	Livemode            bool              `json:"livemode"`
	Metadata            map[string]string `json:"metadata"`
	PaymentIntent       string            `json:"payment_intent"`
	Reason              string            `json:"reason"`
	Status              string            `json:"status"`
}

type evidenceDetails struct {
	DueBy           int64 `json:"due_by"`
	HasEvidence     bool  `json:"has_evidence"`
	PastDue         bool  `json:"past_due"`
	SubmissionCount int   `json:"submission_count"`
}

// emptyEvidence is a new dispute's evidence: every field stripe-go's
// DisputeEvidence knows, null.
func emptyEvidence() map[string]any {
	ev := make(map[string]any)
	for f := range reflect.TypeFor[stripe.DisputeEvidence]().Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			ev[name] = nil
		}
	}
	return ev
}

// earlyFraudWarning is a Radar EarlyFraudWarning exactly as the API
// renders it.
type earlyFraudWarning struct {
	ID            string `json:"id"`
	Object        string `json:"object"`
	Actionable    bool   `json:"actionable"`
	Charge        string `json:"charge"`
	Created       int64  `json:"created"`
	FraudType     string `json:"fraud_type"`
	Livemode      bool   `json:"livemode"`
	PaymentIntent string `json:"payment_intent"`
}

// localFunc makes an object on a local route with s.mu held, putting the
// events it makes in s.outbox.
type localFunc func(form url.Values) (any, error)

// local serves a local route: it reads the parameters, a form or a JSON
// object, runs h, sends h's events and answers with h's object.
func (s *Server) local(allowed map[string]bool, h localFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		form, err := readLocalParams(w, r, allowed)
		if err == nil {
			err = checkParams(form, allowed)
		}
		if err != nil {
			s.writeAnswer(w, s.errorResponse(err))
			return
		}

		s.mu.Lock()
		v, err := h(form)
		outbox := s.outbox
		s.outbox = nil
		s.mu.Unlock()
		if err != nil {
			s.writeAnswer(w, s.errorResponse(err))
			return
		}
		for _, ev := range outbox {
			s.deliver(context.WithoutCancel(r.Context()), Control{}, ev)
		}
		s.writeJSON(w, http.StatusOK, v)
	}
}

func (s *Server) writeAnswer(w http.ResponseWriter, ans apiAnswer) {
	writeJSONBody(w, ans.status, ans.body)
}

// readLocalParams reads a local route's body: a JSON object of strings and
// integers when it starts with "{", else a form, so that both
// `curl -d payment_intent=pi_…` and `curl -d '{"payment_intent":"pi_…"}'`
// work.
func readLocalParams(w http.ResponseWriter, r *http.Request, allowed map[string]bool) (url.Values, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLocalBody))
	if err != nil {
		return nil, invalidParam("", "", "Could not read the request body: %v", err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		form, err := url.ParseQuery(string(b))
		if err != nil {
			return nil, invalidParam("", "", "Invalid request: the parameters are not valid form encoding: %v", err)
		}
		return form, nil
	}
	obj, err := fakecontrol.Decode[map[string]json.RawMessage](bytes.NewReader(b))
	if err != nil {
		return nil, invalidParam("", "", "Invalid request: %v", err)
	}
	form := make(url.Values, len(obj))
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !allowed[k] {
			return nil, invalidParam(codeParameterUnknown, k, "Received unknown parameter: %s", clip(k))
		}
		var str string
		var n json.Number
		switch {
		case json.Unmarshal(obj[k], &str) == nil:
			form.Set(k, str)
		case json.Unmarshal(obj[k], &n) == nil:
			form.Set(k, n.String())
		default:
			return nil, invalidParam("", k, "Invalid %s: must be a string or an integer.", k)
		}
	}
	return form, nil
}

// chargeToWarn finds the paid payment intent a local route names.
func (s *Server) chargeToWarn(form url.Values, what string) (*paymentIntent, error) {
	piID := form.Get("payment_intent")
	if piID == "" {
		return nil, missingParam("payment_intent")
	}
	pi, ok := s.intents[piID]
	if !ok {
		return nil, noSuch(http.StatusNotFound, "payment_intent", clip(piID), "payment_intent")
	}
	if !pi.succeeded {
		return nil, invalidParam("", "payment_intent", "This PaymentIntent (%s) does not have a successful charge to %s.", piID, what)
	}
	return pi, nil
}

// oneOf returns the parameter's value, def when absent, or refuses a value
// not in allowed.
func oneOf(form url.Values, param, def string, allowed []string) (string, error) {
	v := form.Get(param)
	if v == "" {
		return def, nil
	}
	if !slices.Contains(allowed, v) {
		return "", invalidParam("", param, "Invalid %s: must be one of %s", param, strings.Join(allowed, ", "))
	}
	return v, nil
}

// createDispute serves POST /_disputes: the cardholder disputes a paid
// payment intent's charge, for amount (default the charge's amount) and
// reason (default fraudulent). The dispute is a chargeback, its funds
// withdrawn: it needs a response within disputeResponseTime and the charge
// can no longer be refunded. It emits charge.dispute.created.
func (s *Server) createDispute(form url.Values) (any, error) {
	pi, err := s.chargeToWarn(form, "dispute")
	if err != nil {
		return nil, err
	}
	reason, err := oneOf(form, "reason", string(stripe.DisputeReasonFraudulent), disputeReasons)
	if err != nil {
		return nil, err
	}
	amount, ok, err := parseInt(form, "amount", 1, pi.amount)
	if err != nil {
		return nil, err
	}
	if !ok {
		amount = pi.amount
	}
	ch := pi.charge
	if ch.dispute != nil {
		return nil, invalidParam("", "payment_intent", "Charge %s has already been disputed (%s); a charge has at most one dispute.", ch.id, ch.dispute.ID)
	}

	id, err := s.newID("dp_", objectIDLen)
	if err != nil {
		return nil, fmt.Errorf("create dispute: %w", err)
	}
	now := s.now()
	dp := &dispute{
		ID:                  id,
		Object:              "dispute",
		Amount:              amount,
		BalanceTransactions: []struct{}{},
		Charge:              ch.id,
		Created:             now.Unix(),
		Currency:            pi.currency,
		Evidence:            emptyEvidence(),
		EvidenceDetails:     evidenceDetails{DueBy: now.Add(disputeResponseTime).Unix()},
		IsChargeRefundable:  false,
		Livemode:            pi.livemode,
		Metadata:            map[string]string{},
		PaymentIntent:       pi.id,
		Reason:              reason,
		Status:              string(stripe.DisputeStatusNeedsResponse),
	}
	ev, err := s.newEvent(eventSpec{typ: eventDisputeCreated, sessionID: pi.sessionID, livemode: pi.livemode, object: dp})
	if err != nil {
		return nil, fmt.Errorf("create dispute: %w", err)
	}
	ch.dispute = dp
	s.outbox = append(s.outbox, ev)
	s.log.Info("fakestripe: dispute created", "dispute", id, "payment_intent", pi.id, "charge", ch.id, "amount", amount, "reason", reason, "session", pi.sessionID, "event", ev.id)
	return dp, nil
}

// createEarlyFraudWarning serves POST /_early_fraud_warnings: the card's
// issuer reports a paid payment intent's charge as fraudulent, of
// fraud_type (default made_with_stolen_card). The warning is actionable
// while the charge is neither disputed nor fully refunded. It emits
// radar.early_fraud_warning.created.
func (s *Server) createEarlyFraudWarning(form url.Values) (any, error) {
	pi, err := s.chargeToWarn(form, "warn of")
	if err != nil {
		return nil, err
	}
	fraudType, err := oneOf(form, "fraud_type", string(stripe.RadarEarlyFraudWarningFraudTypeMadeWithStolenCard), fraudTypes)
	if err != nil {
		return nil, err
	}
	ch := pi.charge
	if ch.warning != nil {
		return nil, invalidParam("", "payment_intent", "Charge %s already has an early fraud warning (%s).", ch.id, ch.warning.ID)
	}

	id, err := s.newID("issfr_", objectIDLen)
	if err != nil {
		return nil, fmt.Errorf("create early fraud warning: %w", err)
	}
	w := &earlyFraudWarning{
		ID:            id,
		Object:        "radar.early_fraud_warning",
		Actionable:    ch.dispute == nil && pi.refunded < pi.amount,
		Charge:        ch.id,
		Created:       s.now().Unix(),
		FraudType:     fraudType,
		Livemode:      pi.livemode,
		PaymentIntent: pi.id,
	}
	ev, err := s.newEvent(eventSpec{typ: eventEFWCreated, sessionID: pi.sessionID, livemode: pi.livemode, object: w})
	if err != nil {
		return nil, fmt.Errorf("create early fraud warning: %w", err)
	}
	ch.warning = w
	s.outbox = append(s.outbox, ev)
	s.log.Info("fakestripe: early fraud warning created", "warning", id, "payment_intent", pi.id, "charge", ch.id, "fraud_type", fraudType, "session", pi.sessionID, "event", ev.id)
	return w, nil
}
