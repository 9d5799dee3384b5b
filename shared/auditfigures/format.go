package auditfigures

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"42sisters.ai/oracle/shared/oracle"
)

// String is the ratio as Format writes it: a percentage and its counts.
func (r Ratio) String() string {
	if r.Value == nil {
		return fmt.Sprintf("no data (%d of %d)", r.Numerator, r.Denominator)
	}
	return fmt.Sprintf("%.1f %% (%d of %d)", *r.Value*100, r.Numerator, r.Denominator)
}

// String is the figures as Format writes them.
func (f Figures) String() string {
	var b strings.Builder
	_ = f.Format(&b)
	return b.String()
}

// Format writes the figures for an operator's terminal: one line per
// figure with its counts and its healthy value, then the top error
// patterns and the revenue.
func (f Figures) Format(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format+"\n", a...) }

	p("Figures of the business, partition days %s to %s (UTC), from the audit log", f.From, f.To)
	p("%d records; %d smoke records left out", f.Records, f.SmokeRecords)
	p("")
	p("figure\tvalue\thealthy")
	var sources []string
	for _, s := range slices.Sorted(maps.Keys(f.Paid.RecordsBySource)) {
		sources = append(sources, fmt.Sprintf("%s %d", s, f.Paid.RecordsBySource[s]))
	}
	bySource := ""
	if len(sources) > 0 {
		bySource = " (" + strings.Join(sources, ", ") + ")"
	}
	p("paid sessions (card)\t%d sessions from %d paid records%s\tone record each; two when the result page claimed first", f.Paid.Sessions, f.Paid.Records, bySource)
	p("double-processed sessions\t%d with more than one webhook paid record\t0", f.Paid.DoubleProcessed)
	p("paid sessions against Stripe\t%s\t100 %%, none missing", f.AgainstStripe)
	p("webhook latency (its own time)\t%s\tp95 under 1 s", f.WebhookLatency)
	p("customer's wait, payment to verdict stored\t%s\tp95 under 60 s; none over", f.CustomerWait.ToVerdict)
	p("customer's wait, payment to email sent\t%s\tp95 under 60 s; none over", f.CustomerWait.ToEmail)
	p("cache-hit ratio\t%s: %d CACHED, %d REGENERATED; %d OK (first verdicts)\tnear 100 %%", f.Cache.HitRatio, f.Cache.Cached, f.Cache.Regenerated, f.Cache.OK)
	p("error-detail coverage\t%s failure records\t100 %%", f.Errors.Coverage)
	p("email failure rate\t%s deliveries\tnear 0 %%; look closer above 5 %%", f.EmailFailureRate)
	p("crosscheck rejection rate\t%s crosschecks\tnear 0 %%", f.CrosscheckRejectionRate)
	p("significant divergence rate\t%s regenerations\tunder 5 %%", f.DivergenceRate)
	p("x402 verification outcomes (agent)\t%s\tmostly OK; REPLAY and the others near 0", f.X402.outcomes())
	p("x402 by endpoint (agent)\t%s\tRETRY few beside OK; IDENTIFIER_CONFLICT near 0", f.X402.transports())
	for _, e := range f.X402.ByEndpoint {
		p("  %s\t%s", e.Endpoint, e.EndpointCounts)
	}
	p("x402 latency, request to settled (OK)\t%s\tp95 under %d ms", f.X402.latency(), f.X402.LatencyBoundMS)
	p("chat exchanges (plan outcome)\t%s\tmostly answered; model_failed near 0", f.Chat.exchanges())
	p("chat replies replaced by the apology\t%d\t0", f.Chat.Apologies)
	p("chat trials started, converted\t%d started; %s converted\t", f.Chat.TrialsStarted, f.Chat.TrialsConverted)
	p("chat subscribers, recurring revenue\t%d active; %s\t", f.Chat.ActiveSubscribers, f.Chat.recurring())
	p("chat churn\t%s of the subscriptions that granted access ended\tlow", f.Chat.Churn)
	if len(f.ContentFilter) == 0 {
		p("content filter, by day\tno verdict written again, nothing held\t")
	}
	for _, d := range f.ContentFilter {
		p("content filter, %s\twritten again by the model: %d; held for review: %d\tfew written again; none held", d.Date, d.Rewrites, d.Quarantines)
	}
	p("")
	if len(f.Errors.TopPatterns) == 0 {
		p("top error patterns: no data")
	} else {
		p("top error patterns (ids and numbers replaced)")
		for _, e := range f.Errors.TopPatterns {
			p("  %d\t%s", e.Records, e.Pattern)
		}
	}
	p("")
	for _, t := range f.Revenue.TestMode {
		p("test mode (no money moved)\t%s\t%d %s\t%s paid\t%s refunded\t%s net", t.Rail, t.Sessions, unit(t.Rail), amount(t.AmountTotal, t.Currency),
			refunds(t.Amounts, t.Currency), amount(t.AmountNet, t.Currency))
	}
	if len(f.Revenue.Rows) == 0 {
		p("revenue (live mode and main networks, each paid session or settled order once): no data")
		return tw.Flush()
	}
	p("revenue (live mode and main networks, each paid session or settled order once)")
	p("  date\ttier\trail\tsessions or orders\tpaid\trefunded\tnet")
	for _, r := range f.Revenue.Rows {
		p("  %s\t%s\t%s\t%d\t%s\t%s\t%s", r.Date, r.Tier, r.Rail, r.Sessions, amount(r.AmountTotal, r.Currency), refunds(r.Amounts, r.Currency), amount(r.AmountNet, r.Currency))
	}
	for _, t := range f.Revenue.Totals {
		p("  total\t\t%s\t%d\t%s\t%s\t%s", t.Rail, t.Sessions, amount(t.AmountTotal, t.Currency), refunds(t.Amounts, t.Currency), amount(t.AmountNet, t.Currency))
	}
	return tw.Flush()
}

// String is the latency as Format writes it.
func (l Latency) String() string {
	if l.P50MS == nil {
		return "no data (0 records)"
	}
	return fmt.Sprintf("p50 %d ms, p95 %d ms, max %d ms (%d records, %s)", *l.P50MS, *l.P95MS, *l.MaxMS, l.Records, l.Method)
}

// String is the wait as Format writes it.
func (w Wait) String() string {
	if w.P50MS == nil {
		return w.Latency.String()
	}
	return fmt.Sprintf("%s; %d over 60 s", w.Latency, w.Over60s)
}

// String is the comparison as Format writes it.
func (c *StripeCheck) String() string {
	switch {
	case c == nil:
		return "not compared (no Stripe key)"
	case c.Error != "":
		return "not compared: " + c.Error
	}
	s := fmt.Sprintf("%s of Stripe's paid sessions (%s) have a paid record", c.Logged, strings.Join(c.Modes, ", "))
	if len(c.MissingFromLog) > 0 {
		s += "; missing from the log: " + strings.Join(c.MissingFromLog, " ")
	}
	if len(c.NotInStripe) > 0 {
		s += "; not paid in Stripe's list: " + strings.Join(c.NotInStripe, " ")
	}
	return s
}

// refunds writes what was refunded and of how many sessions.
func refunds(a Amounts, currency string) string {
	if a.RefundedSessions == 0 {
		return "none"
	}
	return fmt.Sprintf("%s (%d)", amount(a.AmountRefunded, currency), a.RefundedSessions)
}

// amount writes an amount in its currency's unit: cents as "25.00 CAD",
// USDC's atomic units as "0.05 USDC".
func amount(v int64, currency string) string {
	if strings.EqualFold(currency, oracle.CurrencyUSDC) {
		return oracle.FormatUSDC(v) + " USDC"
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%d.%02d %s", sign, v/100, v%100, strings.ToUpper(currency))
}

// unit is what a rail's count counts.
func unit(rail string) string {
	if rail == RailAgent {
		return "orders"
	}
	return "sessions"
}

// exchanges writes the chat's exchange records by plan and outcome.
func (c Chat) exchanges() string {
	if len(c.Exchanges) == 0 {
		return "no data (0 records)"
	}
	var parts []string
	for _, e := range c.Exchanges {
		parts = append(parts, fmt.Sprintf("%s %s %d", e.Plan, e.Outcome, e.Records))
	}
	return strings.Join(parts, ", ")
}

// recurring writes the chat's monthly recurring revenue, test mode apart.
func (c Chat) recurring() string {
	if len(c.Recurring) == 0 {
		return "no data"
	}
	var parts []string
	for _, r := range c.Recurring {
		s := fmt.Sprintf("%s a month (%d)", amount(r.Amount, r.Currency), r.Subscribers)
		if !r.Live {
			s += " in test mode"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// outcomes writes the x402 records by status.
func (x X402) outcomes() string {
	var parts []string
	var n int64
	for _, o := range x.Outcomes {
		parts = append(parts, fmt.Sprintf("%s %d", o.Status, o.Records))
		n += o.Records
	}
	if n == 0 {
		return "no data (0 records)"
	}
	return strings.Join(parts, ", ")
}

// String is the counts as Format writes them.
func (c EndpointCounts) String() string {
	return fmt.Sprintf("OK %d, RETRY %d, IDENTIFIER_CONFLICT %d (%d records)", c.OK, c.Retry, c.IdentifierConflict, c.Records)
}

// transports writes the x402 records by transport.
func (x X402) transports() string {
	var parts []string
	var n int64
	for _, t := range x.ByTransport {
		parts = append(parts, t.Transport+" "+t.EndpointCounts.String())
		n += t.Records
	}
	if n == 0 {
		return "no data (0 records)"
	}
	return strings.Join(parts, "; ")
}

// latency writes the settled payments' latency against its bound.
func (x X402) latency() string {
	switch {
	case x.P95WithinBound == nil:
		return x.Latency.String()
	case *x.P95WithinBound:
		return x.Latency.String() + "; p95 within the bound"
	}
	return x.Latency.String() + "; p95 OVER the bound"
}
