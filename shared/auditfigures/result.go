package auditfigures

import (
	"strings"

	"42sisters.ai/oracle/shared/audit"
)

// Figures are the figures of the business over a range of partition days.
// Every ratio carries its numerator and denominator, and a ratio, a
// percentile or a total with nothing to count says so (JSON null, "no
// data"), never NaN or a zero that would read as a measurement.
type Figures struct {
	From string `json:"from"` // the first partition day, YYYY-MM-DD (UTC)
	To   string `json:"to"`   // the last, included
	// Records is how many records the figures are computed from;
	// SmokeRecords how many smoke records were read and left out.
	Records      int64 `json:"records"`
	SmokeRecords int64 `json:"smoke_records_left_out"`

	Paid Paid `json:"paid_sessions"`
	// AgainstStripe is the paid sessions compared with Stripe's own list
	// (VC-1); null when Stripe was not asked (no key for either mode).
	AgainstStripe *StripeCheck `json:"against_stripe"`
	// WebhookLatency is the webhook's own time; CustomerWait is the
	// customer's, from the payment (VC-2).
	WebhookLatency Latency      `json:"webhook_latency"`
	CustomerWait   CustomerWait `json:"customer_wait"`
	Cache          Cache        `json:"cache"`
	Errors         Errors       `json:"errors"`
	// EmailFailureRate is EMAIL_FAILED over EMAIL_SENT and EMAIL_FAILED
	// among the deliveries (mail_<kind> records; each delivery's attempts,
	// mail_attempt records, are not deliveries).
	EmailFailureRate Ratio `json:"email_failure_rate"`
	// CrosscheckRejectionRate is the tmm_crosscheck records not approved
	// over all of them.
	CrosscheckRejectionRate Ratio `json:"crosscheck_rejection_rate"`
	// DivergenceRate is the regen_divergence_check records whose level is
	// significant over all of them.
	DivergenceRate Ratio   `json:"regeneration_divergence_rate"`
	Revenue        Revenue `json:"revenue"`
	// X402 is the agent rail's verification outcomes and latency.
	X402 X402 `json:"x402"`
	// Chat is Sisters Chat's exchanges and subscription.
	Chat Chat `json:"chat"`
	// ContentFilter is the content filter's outcomes by day, oldest
	// first: how many verdicts gate 1 had written again, and how many
	// payloads either gate held for review.
	ContentFilter []FilterDay `json:"content_filter"`
}

// FilterDay is one day's (the records' UTC date) content filter outcomes:
// Rewrites counts gate 1's REWRITE records (a verdict it would have
// repaired or held, written again by the model), Quarantines the
// QUARANTINE records of either gate (a verdict or an email held).
type FilterDay struct {
	Date        string `json:"date"`
	Rewrites    int64  `json:"rewrites"`
	Quarantines int64  `json:"quarantines"`
}

// X402 is the agent rail's x402 records (AUDIT_TRAIL's x402 form, one per
// verification outcome): how many of each outcome, and latency_ms of the
// settled payments (OK: from the paid request's arrival to its order
// recorded PAID, the facilitator's /verify and /settle included) against
// VC-2's bound on its p95, LatencyBoundMS (5,000 ms). P95WithinBound is
// null when no payment was settled.
type X402 struct {
	Outcomes []Outcome `json:"outcomes"`
	// ByEndpoint is the records by the endpoint paid, each endpoint met
	// (an HTTP route, an MCP tool), HTTP first, then by name; ByTransport
	// their totals by transport, HTTP and MCP each listed even when none
	// came by it.
	ByEndpoint     []EndpointOutcomes  `json:"by_endpoint"`
	ByTransport    []TransportOutcomes `json:"by_transport"`
	Latency        Latency             `json:"latency_ok"`
	LatencyBoundMS int64               `json:"latency_p95_bound_ms"`
	P95WithinBound *bool               `json:"p95_within_bound"`
}

// Outcome is how many x402 records have one status: OK, REPLAY, INVALID,
// VERIFY_FAILED, SETTLE_FAILED, SETTLE_UNCONFIRMED, FACILITATOR_DOWN,
// RETRY (a payment sent again under its payment identifier, answered from
// the order its first use made: one record per order and hour),
// IDENTIFIER_CONFLICT (an identifier used before, with another payment or
// request: refused 409, one record per payer and hour), each listed even
// when none has it.
type Outcome struct {
	Status  string `json:"status"`
	Records int64  `json:"records"`
}

// The transports an agent pays by: an HTTP route (/x402/query…) or an MCP
// tool (the x402 record's endpoint is then MCPEndpointPrefix and the tool's
// name, "mcp:oracle_quick_take").
const (
	TransportHTTP     = "http"
	TransportMCP      = "mcp"
	MCPEndpointPrefix = "mcp:"
)

// EndpointCounts are an endpoint's or a transport's x402 records: all of
// them, whatever their status, and among them the settled payments (OK),
// the retries answered from their order (RETRY) and the identifier
// conflicts (IDENTIFIER_CONFLICT).
type EndpointCounts struct {
	Records            int64 `json:"records"`
	OK                 int64 `json:"ok"`
	Retry              int64 `json:"retry"`
	IdentifierConflict int64 `json:"identifier_conflict"`
}

// EndpointOutcomes is one endpoint's x402 records.
type EndpointOutcomes struct {
	Transport string `json:"transport"` // TransportHTTP or TransportMCP
	Endpoint  string `json:"endpoint"`
	EndpointCounts
}

// TransportOutcomes is one transport's x402 records.
type TransportOutcomes struct {
	Transport string `json:"transport"`
	EndpointCounts
}

// transportOf is the transport of an x402 record's endpoint.
func transportOf(endpoint string) string {
	if strings.HasPrefix(endpoint, MCPEndpointPrefix) {
		return TransportMCP
	}
	return TransportHTTP
}

// plus adds o's counts to c's.
func (c *EndpointCounts) plus(o EndpointCounts) {
	c.Records += o.Records
	c.OK += o.OK
	c.Retry += o.Retry
	c.IdentifierConflict += o.IdentifierConflict
}

// add counts a record with status s.
func (c *EndpointCounts) add(s audit.Status) {
	c.Records++
	switch s {
	case audit.StatusOK:
		c.OK++
	case audit.StatusRetry:
		c.Retry++
	case audit.StatusIdentifierConflict:
		c.IdentifierConflict++
	}
}

// Ratio is Numerator over Denominator.
type Ratio struct {
	Numerator   int64 `json:"numerator"`
	Denominator int64 `json:"denominator"`
	// Value is Numerator/Denominator; null when Denominator is 0.
	Value *float64 `json:"value"`
}

func ratio(n, d int64) Ratio {
	r := Ratio{Numerator: n, Denominator: d}
	if d != 0 {
		v := float64(n) / float64(d)
		r.Value = &v
	}
	return r
}

// Paid is the card's paid sessions against their paid records (VC-1): a paid
// claim is a record of a Stripe payment event, of the result page's
// landing or of the health job's reconciliation whose order is a paid
// one, whatever its status (a drop or a held amount is ERROR). A session the result page claimed first has two, the
// page's and the webhook's, and counts once.
type Paid struct {
	Sessions int64 `json:"sessions"`
	Records  int64 `json:"records"`
	// RecordsBySource splits Records by the source that wrote them.
	RecordsBySource map[string]int64 `json:"records_by_source"`
	// SessionsPerRecord is Sessions over Records: 1 when every session was
	// claimed by its webhook alone, lower when the result page claimed
	// some first.
	SessionsPerRecord Ratio `json:"sessions_per_record"`
	// DoubleProcessed is the sessions with more than one paid record from
	// the webhook: the spec's double-processing indicator, healthy at 0.
	DoubleProcessed int64 `json:"double_processed_sessions"`
}

// Latency is latency_ms of a set of records (the webhook's paid records,
// the settled x402 payments: VC-2), or the customer's waits: nearest-rank
// percentiles, the smallest value at least p % of the records do not
// exceed. P50MS, P95MS and MaxMS are null when there is no record.
type Latency struct {
	Method  string `json:"method"`
	Records int64  `json:"records"`
	P50MS   *int64 `json:"p50_ms"`
	P95MS   *int64 `json:"p95_ms"`
	MaxMS   *int64 `json:"max_ms"`
}

// CustomerWait is the customer's wait from the payment (the records'
// wait_ms): to the first verdict stored (verdict_generated, OK) and to the
// verdict email sent (mail_verdict, EMAIL_SENT). Records without a wait
// (written before it was recorded) are left out.
type CustomerWait struct {
	ToVerdict Wait `json:"to_verdict_stored"`
	ToEmail   Wait `json:"to_email_sent"`
}

// Wait is a Latency of waits and how many were longer than 60 s, the
// spec's bound (VC-2), healthy at 0.
type Wait struct {
	Latency
	Over60s int64 `json:"over_60s"`
}

// StripeCheck is the log's paid sessions against Stripe's own list of the
// paid Checkout Sessions created on the same partition days (VC-1), for
// each mode with a key (Modes): Logged is those of Stripe's that have a
// paid record in the log over all of Stripe's (healthy: 100 %);
// MissingFromLog names the others, NotInStripe the log's paid sessions
// Stripe does not list as paid, each at most MaxListed by their short
// form. Smoke sessions are left out on both sides. Error, when set, is why
// Stripe could not be listed: the comparison is then absent, not zero.
type StripeCheck struct {
	Modes          []string `json:"modes"`
	StripePaid     int64    `json:"stripe_paid_sessions"`
	Logged         Ratio    `json:"logged"`
	MissingFromLog []string `json:"missing_from_log"`
	NotInStripe    []string `json:"not_in_stripe"`
	Error          string   `json:"error,omitempty"`
}

// MaxListed bounds the sessions a StripeCheck names.
const MaxListed = 20

// Cache is how verdicts reached readers: Cached the hours in which the
// verdict API served a session's stored verdict (verdict_served, CACHED:
// one record per session and hour), OK the generator's first
// verdicts (verdict_generated, OK), Regenerated the verdicts generated
// again because none was stored any more (verdict_regenerated,
// REGENERATED). HitRatio is Cached over Cached and Regenerated: of the
// reads of a verdict, the share the store answered.
type Cache struct {
	Cached      int64 `json:"cached"`
	OK          int64 `json:"ok"`
	Regenerated int64 `json:"regenerated"`
	HitRatio    Ratio `json:"hit_ratio"`
}

// Errors is the failure records (status ERROR, EMAIL_FAILED or an x402
// refusal or doubt: audit.FailureStatuses; each attempt's included): Coverage is those carrying an error_detail over all
// of them (VC-5, healthy at 100 %), TopPatterns the most frequent details
// with ids and numbers replaced (Pattern), at most TopPatternCount, most
// frequent first and alphabetically among equals.
type Errors struct {
	Coverage    Ratio     `json:"detail_coverage"`
	TopPatterns []Pattern `json:"top_patterns"`
}

// TopPatternCount is how many error patterns Figures lists.
const TopPatternCount = 5

// Pattern is an error pattern and how many failure records have it.
type Pattern struct {
	Pattern string `json:"pattern"`
	Records int64  `json:"records"`
}

// Revenue is what was paid, by rail: the card's live-mode paid sessions,
// each session once, from its paid record's amount_total (in the
// currency's minor unit, cents) and currency, and what Stripe refunded of
// it (the webhook's charge.refunded records, full or partial, the largest
// of a session's); and the agent rail's orders settled on a main network
// (live mode), each order once, from its x402 record with status OK (or,
// for a settlement whose answer was lost, the operator's x402-confirm)
// in USDC's atomic units, and what the operator sent back (the refund
// action's record, in full). By partition day, tier, rail and currency,
// and in total per rail and currency.
type Revenue struct {
	Rows   []RevenueRow   `json:"by_day_and_tier"`
	Totals []RevenueTotal `json:"totals"`
	// TestMode is the test-mode sessions' and the test networks' orders'
	// amounts per rail and currency, apart: no money moved, but a stack in
	// test mode (the local one) shows its payments and refunds add up.
	TestMode []RevenueTotal `json:"test_mode_totals"`
}

// RevenueRow is one day's, tier's and rail's revenue in one currency.
type RevenueRow struct {
	Date     string `json:"date"`
	Tier     string `json:"tier"`
	Rail     string `json:"rail"` // RailCard or RailAgent
	Currency string `json:"currency"`
	Amounts
}

// RevenueTotal is the range's revenue by one rail in one currency.
type RevenueTotal struct {
	Rail     string `json:"rail"`
	Currency string `json:"currency"`
	Amounts
}

// Amounts are a set of paid sessions' (or settled orders') amounts: what
// they paid, how many were refunded (fully or in part) and how much, and
// what stays.
type Amounts struct {
	Sessions         int64 `json:"sessions"`
	AmountTotal      int64 `json:"amount_total"`
	RefundedSessions int64 `json:"refunded_sessions"`
	AmountRefunded   int64 `json:"amount_refunded"`
	AmountNet        int64 `json:"amount_net"`
}

func (a *Amounts) add(paid, refunded int64) {
	a.Sessions++
	a.AmountTotal += paid
	if refunded > 0 {
		a.RefundedSessions++
		a.AmountRefunded += refunded
	}
	a.AmountNet = a.AmountTotal - a.AmountRefunded
}
