package oracle

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// Session is what the service needs of a Stripe Checkout Session, whichever
// way it arrived (a signed webhook event or a retrieval by id).
type Session struct {
	ID            string
	PaymentStatus string // "paid", "unpaid" or "no_payment_required"
	// Tier and Query as the session carried them (shared/stripex reads
	// Stripe's metadata and the Payment Link field); Drop says why they
	// cannot be fulfilled, if so. TierRaw is the tier as written, for the
	// operator's alert on a drop.
	Tier        Tier
	Query       string
	Drop        DropReason
	TierRaw     string
	Referral    string
	Smoke       bool   // flagged by the smoke test; honoured only in test mode
	Email       string // transient: used for its keyed hash only, never stored or logged
	AmountTotal int64
	// AmountSubtotal is the price before discounts and taxes: the tier's
	// price, when the session was made as this service makes them.
	AmountSubtotal int64
	Currency       string
	Livemode       bool
	Created        time.Time
	// PaymentIntent is the session's payment intent (pi_...): how a
	// charge's refund or dispute finds its order.
	PaymentIntent string
	// TraceParent is the W3C traceparent of the checkout that made the
	// session (its client_reference_id), for the webhook to continue the
	// order's trace; empty for a session the checkout did not make.
	TraceParent string
}

// HoldAmountMismatch is why a paid order whose amount or currency is not
// its tier's price is HELD at its claim: a mis-set Payment Link or a
// tampered integration, for the operator to deliver or refund.
const HoldAmountMismatch = "amount_mismatch"

// PricedAsTier reports whether the session was priced as its tier: the
// subtotal is the tier's fixed price, in the tier's currency.
func (s Session) PricedAsTier() bool {
	return s.Currency == Currency && s.AmountSubtotal == s.Tier.PriceCents()
}

// Paid reports whether Stripe confirmed the payment. Only "paid" counts
// (SPEC_ORACLE_VERDICT_PIPELINE invariant 1).
func (s Session) Paid() bool { return s.PaymentStatus == "paid" }

var agentOrderIDPattern = regexp.MustCompile(`^x402_(test|live)_[A-Za-z0-9]{32}$`)

// ValidSessionID reports whether id names an order: a Checkout Session's
// id (cs_test_ or cs_live_ and 1 to 250 letters and digits), or an agent
// order's (NewAgentOrderID), which stands for the session an x402
// payment has none of. It is checked by hand, not by a regular
// expression: the webhook checks every event's session on its path, where
// a regexp's matcher runs cold, and a {1,250} bound compiles into 250
// copies at every cold start (docs/performance.md).
func ValidSessionID(id string) bool {
	n := modePrefix(id)
	rest := id[n:]
	switch {
	case n == 0:
		return false
	case strings.HasPrefix(id, "cs_"):
		if len(rest) < 1 || len(rest) > 250 {
			return false
		}
	case len(rest) != 32:
		return false
	}
	for i := 0; i < len(rest); i++ {
		if !isBase62(rest[i]) {
			return false
		}
	}
	return true
}

// IsAgentOrder reports whether id names an order paid over x402: no
// Stripe session stands behind it and no email goes with it.
func IsAgentOrder(id string) bool { return agentOrderIDPattern.MatchString(id) }

// alphanumeric reports whether s is n letters and digits: what follows an
// order name's mode.
func alphanumeric(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isBase62(s[i]) {
			return false
		}
	}
	return true
}

// afterMode is what follows prefix and the mode (test_ or live_) in id; ""
// when id does not start so, which no caller's run accepts.
func afterMode(id, prefix string) string {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return ""
	}
	for _, mode := range [...]string{"test_", "live_"} {
		if r, ok := strings.CutPrefix(rest, mode); ok {
			return r
		}
	}
	return ""
}

// base62 is the alphabet of the random ids: letters and digits only, so
// that no separator cuts an id into words the content filter would read.
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// RandomBase62 draws n base62 characters from random, each uniform over the
// alphabet (rejection sampling): 5.95 bits each.
func RandomBase62(random io.Reader, n int) (string, error) {
	b := make([]byte, n)
	out := make([]byte, 0, n)
	for len(out) < n {
		if _, err := io.ReadFull(random, b); err != nil {
			return "", err
		}
		for _, c := range b {
			if c < 248 && len(out) < n { // 248 = 4 * 62
				out = append(out, base62[c%62])
			}
		}
	}
	return string(out), nil
}

// NewAgentOrderID draws the id of an order paid over x402 from random:
// x402_live_… for a payment on a mainnet, x402_test_… on a test network,
// as Stripe marks its sessions' mode. Its 32 base62 characters are 190
// bits, since the id alone opens the verdict (as a session id does).
func NewAgentOrderID(random io.Reader, livemode bool) (string, error) {
	mode := "test"
	if livemode {
		mode = "live"
	}
	id, err := RandomBase62(random, 32)
	if err != nil {
		return "", fmt.Errorf("draw an agent order id: %w", err)
	}
	return "x402_" + mode + "_" + id, nil
}

// ShortID is the name alerts, logs and reports give a session: its mode
// prefix (cs_live_ or cs_test_) and the first 16 of the random characters
// after it. Four of them, as SPEC_ORACLE_CACHE_ALERT's 12 characters keep,
// name two orders alike within a few thousand; sixteen (95 bits) would need
// about 10^14 orders for one shared name, and `make ops` refuses a name
// that is ambiguous anyway. The rest stays out because a whole session id
// opens its verdict, and with it the customer's query.
func ShortID(id string) string {
	n := shortIDLen
	if strings.HasPrefix(id, "x402_") {
		n += len("x402_") - len("cs_")
	}
	if len(id) <= n {
		return id
	}
	return id[:n]
}

// shortIDLen is len("cs_live_") and 16 random characters (an agent
// order's name keeps its longer prefix and as many).
const shortIDLen = 24

// Source names where an order was claimed from.
type Source string

// Claim sources, as the audit trail names them.
const (
	SourceWebhook    Source = "webhook"
	SourceResultPage Source = "result_page"
	// SourceReconcile: the health job found a paid session without an
	// order (its webhook never arrived) and claimed it.
	SourceReconcile Source = "reconcile"
	// SourceX402: an agent paid over x402 and its settlement succeeded.
	SourceX402 Source = "x402"
)

// SmokeRetention bounds how long anything of a smoke order is kept: the
// smoke test deletes its order at once, and should that fail, the order
// still expires within a day instead of lingering for the retention.
const SmokeRetention = 24 * time.Hour

// Retention is how long the order keeps what it would keep for d: no
// longer than SmokeRetention for a smoke order.
func (o Order) Retention(d time.Duration) time.Duration {
	if o.Smoke {
		return min(d, SmokeRetention)
	}
	return d
}

// Order is the durable record of one paid (or pending) Checkout Session.
// It holds the query, so it holds nothing of the customer's address, not
// even its keyed hash (SPEC_ORACLE_PRODUCT_TIERS invariant 5: no mapping
// of query text to customer identity): Stripe keeps the address on the
// session, where the mailer reads it at send time and the operator finds
// a customer's orders.
type Order struct {
	SessionID   string     `dynamodbav:"session_id"`
	Status      Status     `dynamodbav:"status"`
	Tier        Tier       `dynamodbav:"tier,omitempty"`
	TierRaw     string     `dynamodbav:"tier_raw,omitempty"` // what metadata said, kept for dropped orders
	Query       string     `dynamodbav:"query,omitempty"`
	DropReason  DropReason `dynamodbav:"drop_reason,omitempty"`
	Livemode    bool       `dynamodbav:"livemode"`
	Smoke       bool       `dynamodbav:"smoke,omitempty"`
	AmountTotal int64      `dynamodbav:"amount_total"`
	// PaymentIntent keys the by_payment_intent index: a charge event names
	// the payment intent, not the session.
	PaymentIntent string `dynamodbav:"payment_intent,omitempty"`
	Currency      string `dynamodbav:"currency"`
	Referral      string `dynamodbav:"referral_code,omitempty"`
	Source        Source `dynamodbav:"source"`
	// SessionCreated is when Stripe created the session: every audit record
	// of the order is partitioned by its date.
	SessionCreated time.Time  `dynamodbav:"session_created"`
	CreatedAt      time.Time  `dynamodbav:"created_at"`
	UpdatedAt      time.Time  `dynamodbav:"updated_at"`
	PaidAt         *time.Time `dynamodbav:"paid_at,omitempty"`
	// JobEnqueuedAt is set once the job the order is owed (generation for
	// PAID, the notice mail for DROPPED) is on its queue.
	JobEnqueuedAt *time.Time `dynamodbav:"job_enqueued_at,omitempty"`
	// JobDueAt is when the order's parked job comes back (the circuit is
	// open, a retry's backoff): until then no progress is expected, so the
	// health job does not count the order as stuck.
	JobDueAt *time.Time `dynamodbav:"job_due_at,omitempty"`
	// Expires is when the order, and its verdict, are deleted: the
	// retention promised on the result page, counted from the claim and
	// then from the verdict. The store keeps it as the table's TTL.
	Expires time.Time `dynamodbav:"-"`

	// The verdict, once generated: canonical JSON (see Analysis.CanonicalJSON),
	// stored once and never replaced; the page and the email both read it.
	Verdict       string     `dynamodbav:"verdict,omitempty"`
	VerdictHash   string     `dynamodbav:"verdict_hash,omitempty"`
	VerdictLabel  Verdict    `dynamodbav:"verdict_label,omitempty"`
	PromptVersion string     `dynamodbav:"prompt_version,omitempty"`
	Model         string     `dynamodbav:"model,omitempty"`
	GeneratedAt   *time.Time `dynamodbav:"generated_at,omitempty"`
	// Attempts counts generation attempts.
	Attempts int    `dynamodbav:"attempts,omitempty"`
	Failure  string `dynamodbav:"failure,omitempty"` // why generation failed for good (a class, never model text)
	// Regen marks a verdict generated again after the first one expired;
	// OriginalVerdictHash is the first one's, for the divergence check.
	Regen               bool   `dynamodbav:"regen,omitempty"`
	RegenReason         string `dynamodbav:"regen_reason,omitempty"`
	OriginalVerdictHash string `dynamodbav:"original_verdict_hash,omitempty"`
	// OriginalVerdict is the first verdict's label; Divergence is how far
	// the regenerated one moved from it (none, minor or significant).
	OriginalVerdict Verdict `dynamodbav:"original_verdict,omitempty"`
	Divergence      string  `dynamodbav:"divergence,omitempty"`
	// SetAsideVerdict is the last stored verdict found corrupt, as it was
	// found (for the operator), taken off the order at SetAsideAt so that
	// no reader meets it again.
	SetAsideVerdict string     `dynamodbav:"set_aside_verdict,omitempty"`
	SetAsideAt      *time.Time `dynamodbav:"set_aside_at,omitempty"`
	// CoherenceScore is the stored verdict's crosscheck score.
	CoherenceScore float64 `dynamodbav:"coherence_score,omitempty"`
	// GenAudit is the generator's own account of the stored verdict's
	// generation (its crosscheck and gate 1 decisions), carried with the
	// verdict so that the audit records written after its email is queued
	// are written again by a redelivery after a crash; opaque to all but
	// the generator.
	GenAudit string `dynamodbav:"gen_audit,omitempty"`
	// ParkedSince is when the order's job was first parked because the
	// model was unavailable; the parking budget runs from it.
	ParkedSince *time.Time `dynamodbav:"parked_since,omitempty"`
	// FilterVersion is the content filter's block list version that passed
	// the verdict; the quarantine fields say why the filter stopped it
	// (the gate, the entries' ids, the review record's key).
	FilterVersion    string     `dynamodbav:"filter_version,omitempty"`
	QuarantineGate   string     `dynamodbav:"quarantine_gate,omitempty"`
	QuarantineTerms  []string   `dynamodbav:"quarantine_terms,omitempty"`
	QuarantineRecord string     `dynamodbav:"quarantine_record,omitempty"`
	QuarantinedAt    *time.Time `dynamodbav:"quarantined_at,omitempty"`

	// The money events after payment: the refund (by the operator's
	// action or in Stripe's Dashboard; RefundedBy says which), and a
	// dispute the cardholder opened.
	RefundID       string     `dynamodbav:"refund_id,omitempty"`
	RefundedAmount int64      `dynamodbav:"refunded_amount,omitempty"`
	RefundedAt     *time.Time `dynamodbav:"refunded_at,omitempty"`
	RefundedBy     string     `dynamodbav:"refunded_by,omitempty"`
	DisputeID      string     `dynamodbav:"dispute_id,omitempty"`
	DisputedAt     *time.Time `dynamodbav:"disputed_at,omitempty"`

	// Agent is set on an order paid over x402 (Source x402): where and by
	// whom it was settled, for the operator's manual refund should its
	// verdict fail. AmountTotal is then in USDC's atomic units and
	// Currency "usdc".
	Agent *AgentPayment `dynamodbav:"agent,omitempty"`

	// Mail is how far each email the order owed got, by kind; a kind not
	// in it was not sent (yet). The store keeps it per kind.
	Mail map[MailKind]MailState `dynamodbav:"-"`
}

// OwesJob reports whether the order is owed a queued job at its claim.
func (o Order) OwesJob() bool {
	switch o.Status {
	case StatusPaid, StatusDropped:
		return true
	case StatusHeld:
		// Held at its claim, the order is owed the operator's alert and
		// the customer's review notice; held by the generator, nothing more.
		return o.Failure == HoldAmountMismatch
	}
	return false
}

// CurrencyUSDC is the currency of an order paid over x402.
const CurrencyUSDC = "usdc"

// AgentPayment is the settled x402 payment behind an agent order.
type AgentPayment struct {
	// Network is the chain, as CAIP-2 (eip155:8453 is Base).
	Network string `dynamodbav:"network"`
	// Payer is the paying wallet's address: public on the chain, and where
	// a refund goes.
	Payer string `dynamodbav:"payer"`
	// Transaction is the settlement's transaction hash.
	Transaction string `dynamodbav:"transaction"`
	// Endpoint is the route that was paid (/x402/query, …).
	Endpoint string `dynamodbav:"endpoint"`
	// Nonce and ValidBefore are the authorization's: what the operator
	// looks up on the chain when a settlement's outcome is unknown, and
	// when it can no longer settle (Unix seconds).
	Nonce       string `dynamodbav:"nonce,omitempty"`
	ValidBefore string `dynamodbav:"valid_before,omitempty"`
	// PaymentID is the agent's payment identifier (x402's
	// payment-identifier extension), when it sent one: a retry under it
	// is answered from this order.
	PaymentID string `dynamodbav:"payment_id,omitempty"`
}
