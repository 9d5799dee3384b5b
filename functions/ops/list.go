package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/casefile"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// Attention is one order that waits for the operator: never the address,
// never the query.
type Attention struct {
	Session string        `json:"session"` // oracle.ShortID
	Status  oracle.Status `json:"status"`
	Age     string        `json:"age"` // since the order last changed
	Reason  string        `json:"reason"`
}

// waiting are the states that wait for the operator, and what each asks.
var waiting = []struct {
	status oracle.Status
	reason string
}{
	{oracle.StatusDropped, "paid without a usable tier or query: rerun it or refund it"},
	{oracle.StatusHeld, "held: deliver it (regenerate) or refund it"},
	{oracle.StatusQuarantined, "stopped by the content filter: deliver it (cleaned or regenerate) or refund it"},
	{oracle.StatusFailed, "no verdict within the parking budget: refund it"},
}

// list shows the orders needing attention: those waiting for the
// operator, those without progress (stuck), and the emails given up on.
func (h *Handler) list(ctx context.Context, r Request) (Answer, error) {
	if r.Email != "" {
		return h.listCustomer(ctx, r.Email)
	}
	now := h.Now()
	var rows []Attention
	for _, w := range waiting {
		err := h.Index.ByStatus(ctx, w.status, store.Expiring{}, func(x store.Indexed) error {
			rows = append(rows, Attention{Session: oracle.ShortID(x.SessionID), Status: x.Status, Age: age(now, x.UpdatedAt), Reason: w.reason})
			return nil
		})
		if err != nil {
			return Answer{}, err
		}
	}
	for _, s := range []oracle.Status{oracle.StatusPaid, oracle.StatusGenerating} {
		err := h.Index.ByStatus(ctx, s, store.Expiring{}, func(x store.Indexed) error {
			parked := x.JobDueAt != nil && x.JobDueAt.After(now)
			if !parked && now.Sub(x.UpdatedAt) > h.StuckAfter {
				rows = append(rows, Attention{Session: oracle.ShortID(x.SessionID), Status: x.Status, Age: age(now, x.UpdatedAt),
					Reason: fmt.Sprintf("no progress for %s: the health job re-sends its job; show it if it stays", age(now, x.UpdatedAt))})
			}
			return nil
		})
		if err != nil {
			return Answer{}, err
		}
	}
	dead, err := h.Dead.MailDeadLetters(ctx)
	if err != nil {
		return Answer{}, err
	}
	for _, d := range dead {
		rows = append(rows, Attention{Session: oracle.ShortID(d.SessionID), Status: "MAIL_DEAD_LETTER", Age: age(now, d.DeadAt),
			Reason: fmt.Sprintf("the %s email was given up on (%s, %d tries): redrive the mail dead letters, or resend it", d.Kind, d.Class, len(d.Tries))})
	}
	if len(rows) == 0 {
		return Answer{Message: "nothing needs attention", Data: rows}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s  %-16s  %5s  %s\n", "SESSION", "STATE", "AGE", "WHAT IT NEEDS")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-24s  %-16s  %5s  %s\n", r.Session, r.Status, r.Age, r.Reason)
	}
	return Answer{Message: fmt.Sprintf("%d orders need attention", len(rows)), Text: b.String(), Data: rows}, nil
}

// CustomerOrder is one of a customer's orders as `list EMAIL=…` shows it:
// never the address, never the query.
type CustomerOrder struct {
	Session string        `json:"session"` // oracle.ShortID
	Status  oracle.Status `json:"status"`
	Tier    oracle.Tier   `json:"tier,omitempty"`
	Mode    string        `json:"mode"` // live or test
	Created time.Time     `json:"created"`
}

// maxAddress is the longest address `list` takes (RFC 5321's path limit).
const maxAddress = 254

// listCustomer shows the orders of the customer whose address is addr.
// No order keeps the address, nor its hash (a hash beside the query would
// tie the query to the customer); Stripe keeps it on each session, so the
// sessions Stripe lists for the address, in each mode whose key is
// configured, name the orders. Sessions without an order (never paid,
// expired, or past their retention) are counted, not shown.
func (h *Handler) listCustomer(ctx context.Context, addr string) (Answer, error) {
	addr = strings.TrimSpace(addr)
	if len(addr) > maxAddress || !audit.HasEmail(addr) {
		return Answer{}, refuse("email is the customer's address, as they gave it to Stripe")
	}
	modes := []struct {
		name string
		c    Customers
	}{{"live", h.LiveCustomers}, {"test", h.TestCustomers}}
	var rows []CustomerOrder
	asked, without := 0, 0
	for _, m := range modes {
		if m.c == nil {
			continue
		}
		asked++
		err := m.c.SessionsByEmail(ctx, addr, func(s oracle.Session) error {
			o, found, err := h.Orders.Get(ctx, s.ID)
			if err != nil {
				return err
			}
			if !found {
				without++
				return nil
			}
			rows = append(rows, CustomerOrder{Session: oracle.ShortID(o.SessionID), Status: o.Status, Tier: o.Tier, Mode: m.name, Created: o.SessionCreated})
			return nil
		})
		if err != nil {
			return Answer{}, fmt.Errorf("the customer's %s sessions: %w", m.name, err)
		}
	}
	if asked == 0 {
		return Answer{}, refuse("no Stripe key is configured: the customer's sessions cannot be listed")
	}
	msg := fmt.Sprintf("%d orders of this customer", len(rows))
	if without > 0 {
		msg += fmt.Sprintf("; %d more of their sessions have no order (never paid, expired, or past their retention)", without)
	}
	if len(rows) == 0 {
		return Answer{Message: msg, Data: rows}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s  %-16s  %-8s  %-4s  %s\n", "SESSION", "STATE", "TIER", "MODE", "CREATED")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-24s  %-16s  %-8s  %-4s  %s\n", r.Session, r.Status, r.Tier, r.Mode, r.Created.UTC().Format(time.RFC3339))
	}
	return Answer{Message: msg, Text: b.String(), Data: rows}, nil
}

// shown is `show`'s answer: the order's case, and its query when revealed.
type shown struct {
	casefile.File
	Query string `json:"query,omitempty"`
}

// show prints one order's timeline from the audit log and the order; the
// query only when revealed, which is itself recorded.
func (h *Handler) show(ctx context.Context, r Request) (Answer, error) {
	o, err := h.resolve(ctx, r)
	if err != nil {
		return Answer{}, err
	}
	// The operator reads the verdict as every reader does: a corrupt one
	// is set aside (and alerted) before the order is shown.
	if _, err := h.Verdicts.Check(ctx, o); err != nil {
		return Answer{}, err
	}
	f, o, err := casefile.Open(ctx, h.Orders, h.Records, o.SessionID)
	if err != nil {
		return Answer{}, err
	}
	out := shown{File: f}
	if r.Reveal {
		if err := h.record(ctx, r, o, "query revealed"); err != nil {
			return Answer{}, err
		}
		out.Query = o.Query
	}
	var b strings.Builder
	fmt.Fprintf(&b, "session   %s\nstate     %s", o.SessionID, o.Status)
	for _, kv := range [][2]string{{"failure", o.Failure}, {"dropped", string(o.DropReason)}, {"refund", o.RefundID}, {"dispute", o.DisputeID}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " (%s: %s)", kv[0], kv[1])
		}
	}
	if a := o.Agent; a != nil {
		tx := a.Transaction
		if tx == "" {
			tx = "no settlement confirmed"
		}
		fmt.Fprintf(&b, "\ntier      %s, paid %s USDC over x402 at %s, %s mode\npayer     %s on %s (%s)\n", o.Tier, usdc(o.AmountTotal), a.Endpoint,
			map[bool]string{true: "live", false: "test"}[o.Livemode], a.Payer, a.Network, tx)
		if a.Nonce != "" {
			fmt.Fprintf(&b, "authorization nonce %s, valid before %s\n", a.Nonce, unixUTC(a.ValidBefore))
		}
	} else {
		fmt.Fprintf(&b, "\ntier      %s, paid %s (%s), %s mode\n", o.Tier, oracle.FormatAmount(o.AmountTotal, o.Currency), o.PaymentIntent,
			map[bool]string{true: "live", false: "test"}[o.Livemode])
	}
	if o.VerdictLabel != "" {
		fmt.Fprintf(&b, "verdict   %s (%s)\n", o.VerdictLabel, o.VerdictHash)
	}
	if o.SetAsideAt != nil {
		fmt.Fprintf(&b, "set aside %s: a corrupt stored verdict (%d bytes) was taken off the order; %s\n",
			o.SetAsideAt.UTC().Format(time.RFC3339), len(o.SetAsideVerdict), repairState(o))
	}
	for _, k := range oracle.MailKinds() {
		if st, ok := o.Mail[k]; ok {
			fmt.Fprintf(&b, "email     %s: %s\n", k, st)
		}
	}
	if r.Reveal {
		q, _ := json.Marshal(o.Query)
		fmt.Fprintf(&b, "query     %s\n", q)
	}
	b.WriteString("timeline\n")
	for _, rec := range f.Timeline {
		fmt.Fprintf(&b, "  %s  %-13s %-40s %-13s %s\n", rec.Timestamp.UTC().Format(time.RFC3339), rec.Source, rec.Event, rec.Status, line(rec))
	}
	return Answer{Message: fmt.Sprintf("%s is %s; %d audit records", oracle.ShortID(o.SessionID), o.Status, len(f.Timeline)), Text: b.String(), Data: out}, nil
}

// repairState says where the repair of a verdict set aside as corrupt is.
func repairState(o oracle.Order) string {
	switch {
	case o.BeingRepaired():
		return "it is being generated again"
	case o.Status == oracle.StatusHeld && o.Failure == oracle.HoldVerdictCorrupt:
		return "held: deliver it with mode regenerate, or refund it"
	case o.Status == oracle.StatusReady:
		return "a new verdict replaced it"
	}
	return "the order is " + string(o.Status) + " since"
}

// line is what a timeline entry adds to its event: why it failed, who
// acted, what the filter or the crosscheck decided.
func line(r audit.Record) string {
	switch {
	case r.ErrorDetail != nil:
		return *r.ErrorDetail
	case r.Operator != nil:
		return fmt.Sprintf("%s by %s: %s (%s)", r.Operator.Action, r.Operator.AuthorisedBy, r.Operator.Outcome, r.Operator.Reason)
	case r.Filter != nil && r.Filter.Action == audit.FilterRewrite:
		return fmt.Sprintf("gate %s: written again (%s) %s", r.Filter.Gate, r.Filter.Reason, strings.Join(r.Filter.TermIDs, ","))
	case r.Filter != nil:
		return fmt.Sprintf("gate %s: %s %s", r.Filter.Gate, r.Filter.Action, strings.Join(r.Filter.TermIDs, ","))
	case r.Crosscheck != nil:
		return fmt.Sprintf("%s, approved %t", r.Crosscheck.VerdictLabel, r.Crosscheck.Approved)
	case r.Mail != nil:
		return fmt.Sprintf("%s attempt %d via %s", r.Mail.Kind, r.Mail.Attempt+1, r.Mail.Transport)
	}
	return ""
}
