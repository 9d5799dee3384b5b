package auditfigures

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
)

// claimEvents are the events of a session's claim: Stripe's payment events
// (the webhook's), the result page's landing and the health job's
// reconciliation.
var claimEvents = map[audit.Event]bool{
	audit.EventCheckoutCompleted: true,
	audit.EventAsyncSucceeded:    true,
	audit.EventLanding:           true,
	audit.EventReconcile:         true,
}

// claimSources are the sources that claim sessions.
var claimSources = map[audit.Source]bool{audit.SourceWebhook: true, audit.SourceResultPage: true, audit.SourceReconcile: true}

// paidClaim reports whether r records the claim of a paid session: a claim
// event from a claiming source whose order is in a paid state. Its status
// may be ERROR: a dropped order or a held amount was paid all the same
// (a failed payment's order is not in a paid state).
func paidClaim(r audit.Record) bool {
	return claimSources[r.Source] && claimEvents[r.Event] && oracle.Status(r.OrderStatus).Paid()
}

// refundRecord reports whether r records a refund Stripe made (the
// webhook's charge.refunded, full or partial).
func refundRecord(r audit.Record) bool {
	return r.Source == audit.SourceWebhook && r.Event == audit.EventChargeRefunded && r.AmountRefunded > 0
}

// deliveryRecord reports whether r records the outcome of an email's
// delivery (mail_<kind>), not one of its attempts (mail_attempt).
func deliveryRecord(r audit.Record) bool {
	return r.Source == audit.SourceEmailService && strings.HasPrefix(string(r.Event), "mail_") && r.Event != audit.EventMailAttempt &&
		(r.Status == audit.StatusEmailSent || r.Status == audit.StatusEmailFailed)
}

// The rails a paid order came by: a card (a Stripe Checkout Session) or
// an agent's x402 payment.
const (
	RailCard  = "card"
	RailAgent = "agent"
)

// session is what the figures keep of one paid session or settled agent
// order.
type session struct {
	date, tier, currency, rail string
	amount                     int64
	live                       bool
	from                       int // the rank of the record the fields came from (sourceRank, settledAgent's)
	webhookRecords             int
}

// x402Statuses are the outcomes of an x402 payment's verification, as
// Figures lists them (audit's x402 statuses, OK first).
var x402Statuses = []audit.Status{audit.StatusOK, audit.StatusReplay, audit.StatusInvalid, audit.StatusVerifyFailed,
	audit.StatusSettleFailed, audit.StatusSettleUnconfirmed, audit.StatusFacilitatorDown, audit.StatusRetry, audit.StatusIdentifierConflict}

// X402LatencyBound is the bound on the p95 latency_ms of the settled x402
// payments (SPEC_ORACLE_AUDIT_TRAIL VC-2, the x402 path).
const X402LatencyBound = 5 * time.Second

// x402Record reports whether r is an x402 payment's verification outcome.
func x402Record(r audit.Record) bool {
	return r.Source == audit.SourceX402 && r.Event == audit.EventX402Payment
}

// Operator actions on agent orders that move their money.
const (
	actionX402Confirm = "x402-confirm"
	actionRefund      = "refund"
)

// operatorOnAgent reports whether r records the operator's action on an
// agent order whose outcome begins with done ("confirmed <tx>", "refunded
// <tx>").
func operatorOnAgent(r audit.Record, action, done string) bool {
	return r.Source == audit.SourceOperator && r.Event == audit.EventOperator && r.Operator != nil &&
		r.Operator.Action == action && strings.HasPrefix(r.Operator.Outcome, done+" ") && oracle.IsAgentOrder(r.SessionID)
}

// settledAgent reports whether r records an agent order's settlement, and
// from which record by preference: the x402 record of a settled payment
// (OK) first, else the operator's confirmation of a settlement whose
// answer was lost (x402-confirm).
func settledAgent(r audit.Record) (rank int, ok bool) {
	switch {
	case x402Record(r) && r.Status == audit.StatusOK:
		return 0, true
	case operatorOnAgent(r, actionX402Confirm, "confirmed"):
		return 1, true
	}
	return 0, false
}

// failure lists the statuses of failure records (audit.FailureStatuses).
var failure = func() map[audit.Status]bool {
	m := map[audit.Status]bool{}
	for _, s := range audit.FailureStatuses() {
		m[s] = true
	}
	return m
}()

// sourceRank orders the claims a session's figures are taken from: the
// webhook's (Stripe's own event) first. Every claim of a session carries
// the same payment fields; the order only makes the choice deterministic.
func sourceRank(s audit.Source) int {
	switch s {
	case audit.SourceWebhook:
		return 0
	case audit.SourceResultPage:
		return 1
	case audit.SourceReconcile:
		return 2
	}
	return 3
}

// accumulator counts records as they stream by.
type accumulator struct {
	records, smoke int64

	sessions     map[string]*session // the card's paid sessions
	agents       map[string]*session // the agent rail's settled orders
	refunded     map[string]int64    // by session or order: the most refunded, as Stripe's total grows
	paidRecords  int64
	paidBySource map[string]int64
	webhookLatMS []int64
	waitVerdict  []int64
	waitEmail    []int64
	cached, ok   int64
	regenerated  int64
	failures     int64
	withDetail   int64
	patterns     map[string]int64
	mailSent     int64
	mailFailed   int64
	crosschecks  int64
	rejected     int64
	divergences  int64
	significant  int64
	x402Outcomes map[audit.Status]int64
	x402Paths    map[string]*EndpointCounts // by endpoint
	x402LatMS    []int64
	chat         *chatAccumulator
	filterDays   map[string]*FilterDay
}

func newAccumulator() *accumulator {
	return &accumulator{sessions: map[string]*session{}, agents: map[string]*session{}, refunded: map[string]int64{}, paidBySource: map[string]int64{},
		patterns: map[string]int64{}, x402Outcomes: map[audit.Status]int64{}, x402Paths: map[string]*EndpointCounts{}, chat: newChatAccumulator(), filterDays: map[string]*FilterDay{}}
}

func (a *accumulator) add(r audit.Record) {
	if r.Smoke {
		a.smoke++
		return
	}
	a.records++
	a.chat.add(r)
	if paidClaim(r) {
		a.paidRecords++
		a.paidBySource[string(r.Source)]++
		s := a.sessions[r.SessionID]
		if s == nil || sourceRank(r.Source) < s.from {
			n := &session{date: r.SessionCreated.UTC().Format(DateFormat), tier: r.Tier, currency: strings.ToLower(r.Currency), rail: RailCard,
				amount: r.AmountTotal, live: r.Livemode, from: sourceRank(r.Source)}
			if s != nil {
				n.webhookRecords = s.webhookRecords
			}
			s = n
			a.sessions[r.SessionID] = s
		}
		if r.Source == audit.SourceWebhook {
			s.webhookRecords++
			a.webhookLatMS = append(a.webhookLatMS, r.LatencyMS)
		}
	}
	if r.WaitMS > 0 {
		switch {
		case r.Source == audit.SourceGenerator && r.Event == audit.EventVerdictGenerated && r.Status == audit.StatusOK:
			a.waitVerdict = append(a.waitVerdict, r.WaitMS)
		case r.Source == audit.SourceEmailService && r.Event == audit.MailEvent(oracle.MailVerdict) && r.Status == audit.StatusEmailSent:
			a.waitEmail = append(a.waitEmail, r.WaitMS)
		}
	}
	if refundRecord(r) {
		a.refunded[r.SessionID] = max(a.refunded[r.SessionID], r.AmountRefunded)
	}
	if x402Record(r) {
		a.x402Outcomes[r.Status]++
		if a.x402Paths[r.Endpoint] == nil {
			a.x402Paths[r.Endpoint] = &EndpointCounts{}
		}
		a.x402Paths[r.Endpoint].add(r.Status)
		if r.Status == audit.StatusOK {
			a.x402LatMS = append(a.x402LatMS, r.LatencyMS)
		}
	}
	if rank, ok := settledAgent(r); ok {
		if s := a.agents[r.SessionID]; s == nil || rank < s.from {
			a.agents[r.SessionID] = &session{date: r.SessionCreated.UTC().Format(DateFormat), tier: r.Tier, currency: strings.ToLower(r.Currency),
				rail: RailAgent, amount: r.AmountTotal, live: r.Livemode, from: rank}
		}
	}
	// The operator sends an agent's refund from the pay-to wallet, in
	// full: no Stripe event records it, the operator's action does.
	if operatorOnAgent(r, actionRefund, "refunded") {
		a.refunded[r.SessionID] = max(a.refunded[r.SessionID], r.AmountTotal)
	}
	switch {
	case r.Source == audit.SourceCacheHit && r.Event == audit.EventVerdictServed && r.Status == audit.StatusCached:
		a.cached++
	case r.Source == audit.SourceGenerator && r.Event == audit.EventVerdictGenerated && r.Status == audit.StatusOK:
		a.ok++
	case r.Source == audit.SourceGenerator && r.Event == audit.EventVerdictRegenerated && r.Status == audit.StatusRegenerated:
		a.regenerated++
	}
	if failure[r.Status] {
		a.failures++
		if r.ErrorDetail != nil && *r.ErrorDetail != "" {
			a.withDetail++
			a.patterns[normalise(*r.ErrorDetail)]++
		}
	}
	if deliveryRecord(r) {
		if r.Status == audit.StatusEmailFailed {
			a.mailFailed++
		} else {
			a.mailSent++
		}
	}
	if r.Source == audit.SourceGenerator && r.Event == audit.EventCrosscheck && r.Crosscheck != nil {
		a.crosschecks++
		if !r.Crosscheck.Approved {
			a.rejected++
		}
	}
	if r.Event == audit.EventFilter && r.Filter != nil && (r.Filter.Action == audit.FilterRewrite || r.Filter.Action == "QUARANTINE") {
		date := r.Timestamp.UTC().Format(DateFormat)
		d := a.filterDays[date]
		if d == nil {
			d = &FilterDay{Date: date}
			a.filterDays[date] = d
		}
		if r.Filter.Action == audit.FilterRewrite {
			d.Rewrites++
		} else {
			d.Quarantines++
		}
	}
	if r.Source == audit.SourceGenerator && r.Event == audit.EventDivergenceCheck && r.Divergence != nil {
		a.divergences++
		if r.Divergence.DivergenceLevel == "significant" {
			a.significant++
		}
	}
}

func (a *accumulator) figures(from, to string) Figures {
	f := Figures{
		From: from, To: to, Records: a.records, SmokeRecords: a.smoke,
		Cache:                   Cache{Cached: a.cached, OK: a.ok, Regenerated: a.regenerated, HitRatio: ratio(a.cached, a.cached+a.regenerated)},
		EmailFailureRate:        ratio(a.mailFailed, a.mailSent+a.mailFailed),
		CrosscheckRejectionRate: ratio(a.rejected, a.crosschecks),
		DivergenceRate:          ratio(a.significant, a.divergences),
	}

	f.Paid = Paid{Sessions: int64(len(a.sessions)), Records: a.paidRecords, RecordsBySource: a.paidBySource,
		SessionsPerRecord: ratio(int64(len(a.sessions)), a.paidRecords)}
	for _, s := range a.sessions {
		if s.webhookRecords > 1 {
			f.Paid.DoubleProcessed++
		}
	}

	f.WebhookLatency = latencyOf(a.webhookLatMS)
	f.CustomerWait = CustomerWait{ToVerdict: waitOf(a.waitVerdict), ToEmail: waitOf(a.waitEmail)}

	f.Errors = Errors{Coverage: ratio(a.withDetail, a.failures), TopPatterns: []Pattern{}}
	for p, n := range a.patterns {
		f.Errors.TopPatterns = append(f.Errors.TopPatterns, Pattern{Pattern: p, Records: n})
	}
	slices.SortFunc(f.Errors.TopPatterns, func(x, y Pattern) int {
		return cmp.Or(cmp.Compare(y.Records, x.Records), strings.Compare(x.Pattern, y.Pattern))
	})
	f.Errors.TopPatterns = f.Errors.TopPatterns[:min(len(f.Errors.TopPatterns), TopPatternCount)]

	f.Revenue = a.revenue()
	f.X402 = a.x402()
	f.Chat = a.chat.figures()
	f.ContentFilter = []FilterDay{}
	for _, date := range slices.Sorted(maps.Keys(a.filterDays)) {
		f.ContentFilter = append(f.ContentFilter, *a.filterDays[date])
	}
	return f
}

// x402 is the x402 figures: the outcomes by status, the listed statuses
// first, then any other met; the records by endpoint and transport; and
// the latency of the settled payments against VC-2's bound.
func (a *accumulator) x402() X402 {
	x := X402{Outcomes: []Outcome{}, Latency: latencyOf(a.x402LatMS), LatencyBoundMS: X402LatencyBound.Milliseconds(),
		ByEndpoint: []EndpointOutcomes{}, ByTransport: []TransportOutcomes{{Transport: TransportHTTP}, {Transport: TransportMCP}}}
	for endpoint, c := range a.x402Paths {
		e := EndpointOutcomes{Transport: transportOf(endpoint), Endpoint: endpoint, EndpointCounts: *c}
		x.ByEndpoint = append(x.ByEndpoint, e)
		for i := range x.ByTransport {
			if x.ByTransport[i].Transport == e.Transport {
				x.ByTransport[i].plus(*c)
			}
		}
	}
	slices.SortFunc(x.ByEndpoint, func(p, q EndpointOutcomes) int {
		return cmp.Or(strings.Compare(p.Transport, q.Transport), strings.Compare(p.Endpoint, q.Endpoint))
	})
	for _, st := range x402Statuses {
		x.Outcomes = append(x.Outcomes, Outcome{Status: string(st), Records: a.x402Outcomes[st]})
	}
	var other []string
	for st := range a.x402Outcomes {
		if !slices.Contains(x402Statuses, st) {
			other = append(other, string(st))
		}
	}
	slices.Sort(other)
	for _, st := range other {
		x.Outcomes = append(x.Outcomes, Outcome{Status: st, Records: a.x402Outcomes[audit.Status(st)]})
	}
	if x.Latency.P95MS != nil {
		within := *x.Latency.P95MS < x.LatencyBoundMS
		x.P95WithinBound = &within
	}
	return x
}

// latencyOf is the nearest-rank percentiles of ms, which it sorts.
func latencyOf(ms []int64) Latency {
	l := Latency{Method: "nearest-rank", Records: int64(len(ms))}
	if n := len(ms); n > 0 {
		slices.Sort(ms)
		p50, p95, top := nearestRank(ms, 50), nearestRank(ms, 95), ms[n-1]
		l.P50MS, l.P95MS, l.MaxMS = &p50, &p95, &top
	}
	return l
}

// waitOf is latencyOf and the waits over 60 s.
func waitOf(ms []int64) Wait {
	w := Wait{Latency: latencyOf(ms)}
	for _, v := range ms {
		if v > audit.WaitBudget.Milliseconds() {
			w.Over60s++
		}
	}
	return w
}

// nearestRank is the p-th percentile of sorted (not empty) by the nearest
// rank: the value at rank ceil(p/100 × n), counted from 1.
func nearestRank(sorted []int64, p int) int64 {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

func (a *accumulator) revenue() Revenue {
	type key struct{ date, tier, rail, currency string }
	rows := map[key]*RevenueRow{}
	totals := map[railCurrency]*RevenueTotal{}
	testMode := map[railCurrency]*RevenueTotal{}
	get := func(m map[railCurrency]*RevenueTotal, s *session) *RevenueTotal {
		k := railCurrency{s.rail, s.currency}
		if m[k] == nil {
			m[k] = &RevenueTotal{Rail: s.rail, Currency: s.currency}
		}
		return m[k]
	}
	for _, orders := range []map[string]*session{a.sessions, a.agents} {
		for id, s := range orders {
			refunded := a.refunded[id]
			if !s.live {
				get(testMode, s).add(s.amount, refunded)
				continue
			}
			k := key{s.date, s.tier, s.rail, s.currency}
			row := rows[k]
			if row == nil {
				row = &RevenueRow{Date: s.date, Tier: s.tier, Rail: s.rail, Currency: s.currency}
				rows[k] = row
			}
			row.add(s.amount, refunded)
			get(totals, s).add(s.amount, refunded)
		}
	}
	out := Revenue{Rows: []RevenueRow{}, Totals: sortedTotals(totals), TestMode: sortedTotals(testMode)}
	for _, r := range rows {
		out.Rows = append(out.Rows, *r)
	}
	slices.SortFunc(out.Rows, func(x, y RevenueRow) int {
		return cmp.Or(strings.Compare(x.Date, y.Date), strings.Compare(x.Tier, y.Tier), strings.Compare(x.Rail, y.Rail), strings.Compare(x.Currency, y.Currency))
	})
	return out
}

// railCurrency keys a total.
type railCurrency struct{ rail, currency string }

// sortedTotals are totals by rail and currency.
func sortedTotals(totals map[railCurrency]*RevenueTotal) []RevenueTotal {
	out := []RevenueTotal{}
	for _, t := range totals {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(x, y RevenueTotal) int {
		return cmp.Or(strings.Compare(x.Rail, y.Rail), strings.Compare(x.Currency, y.Currency))
	})
	return out
}
