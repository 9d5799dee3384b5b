package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
)

// Cleaner is the content filter's reviewed cleaning (sosfilter.Filter).
type Cleaner interface {
	Reviewed(a oracle.Analysis) (oracle.Analysis, sosfilter.Report)
}

// Quarantined reads a quarantine record (quarantine.Reader).
type Quarantined interface {
	Get(ctx context.Context, key string) (quarantine.Record, error)
}

// Delivery modes of a quarantined order.
const (
	modeCleaned    = "cleaned"
	modeRegenerate = "regenerate"
)

// deliver releases a QUARANTINED or HELD order: a cleaned delivery of the
// quarantined verdict (gate 2 still runs on its email), or a regeneration
// (a held order's only way: its verdict failed the crosscheck, or it was
// never generated because of its amount). One verdict, one email.
func (h *Handler) deliver(ctx context.Context, r Request) (Answer, error) {
	o, err := h.resolve(ctx, r)
	if err != nil {
		return Answer{}, err
	}
	mode := r.Mode
	if mode == "" && o.Status == oracle.StatusHeld {
		mode = modeRegenerate
	}
	switch {
	case mode != modeCleaned && mode != modeRegenerate:
		return Answer{}, refuse("say how to deliver %s: mode cleaned (the quarantined verdict with its terms replaced) or regenerate", oracle.ShortID(o.SessionID))
	case mode == modeCleaned && o.Status == oracle.StatusHeld:
		return Answer{}, refuse("%s is HELD (%s): it has no verdict to clean; deliver it with mode regenerate", oracle.ShortID(o.SessionID), o.Failure)
	case o.Status != oracle.StatusQuarantined && o.Status != oracle.StatusHeld:
		if o.Status == oracle.StatusReady || o.Status == oracle.StatusPaid || o.Status == oracle.StatusGenerating {
			// The same request again, or another operator's: the order is
			// on its way; nothing more is done.
			return Answer{Message: fmt.Sprintf("%s is already %s: nothing more to deliver", oracle.ShortID(o.SessionID), o.Status)}, nil
		}
		return Answer{}, refuse("%s is %s: only a QUARANTINED or HELD order is delivered", oracle.ShortID(o.SessionID), o.Status)
	}
	if mode == modeRegenerate {
		changed, err := h.Orders.Regenerate(ctx, o.SessionID)
		if err != nil {
			return Answer{}, err
		}
		if err := h.Generate.Send(ctx, queue.Job{SessionID: o.SessionID, Reason: queue.ReasonOperator}); err != nil {
			return Answer{}, fmt.Errorf("enqueue the generation: %w", err)
		}
		if err := h.record(ctx, r, o, "regenerating"); err != nil {
			return Answer{}, err
		}
		return Answer{Changed: changed, Message: fmt.Sprintf("%s is being generated again; the customer gets the verdict by email when it is ready", oracle.ShortID(o.SessionID))}, nil
	}
	v, err := h.cleaned(ctx, o)
	if err != nil {
		return Answer{}, err
	}
	changed, err := h.Orders.DeliverCleaned(ctx, o.SessionID, v)
	if err != nil {
		return Answer{}, err
	}
	if err := h.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: oracle.MailVerdict}); err != nil {
		return Answer{}, fmt.Errorf("enqueue the verdict email: %w", err)
	}
	if err := h.record(ctx, r, o, "cleaned verdict delivered"); err != nil {
		return Answer{}, err
	}
	return Answer{Changed: changed, Message: fmt.Sprintf("%s: the cleaned verdict is stored and served; its email goes through gate 2", oracle.ShortID(o.SessionID))}, nil
}

// cleaned is the quarantined verdict of o with its terms replaced: the
// verdict stopped at gate 2 is stored on the order, one stopped at gate 1
// is in its quarantine record.
func (h *Handler) cleaned(ctx context.Context, o oracle.Order) (store.StoredVerdict, error) {
	raw := []byte(o.Verdict)
	model, promptVersion := o.Model, o.PromptVersion
	if o.QuarantineGate == quarantine.GateGenerator || o.Verdict == "" {
		if o.QuarantineRecord == "" {
			return store.StoredVerdict{}, refuse("%s has no quarantine record to clean: deliver it with mode regenerate", oracle.ShortID(o.SessionID))
		}
		rec, err := h.Quarantined.Get(ctx, o.QuarantineRecord)
		if err != nil {
			return store.StoredVerdict{}, err
		}
		raw, model, promptVersion = rec.Raw, rec.Model, rec.PromptVersion
	}
	a, err := oracle.ParseAnalysis(o.Tier, raw)
	if err != nil {
		return store.StoredVerdict{}, refuse("the quarantined verdict of %s does not parse (%v): deliver it with mode regenerate", oracle.ShortID(o.SessionID), err)
	}
	a, rep := h.Cleaner.Reviewed(a)
	if rep.Action == sosfilter.Quarantine {
		return store.StoredVerdict{}, refuse("the verdict of %s holds what no substitute may clean (%s: %v): deliver it with mode regenerate, or refund it",
			oracle.ShortID(o.SessionID), rep.Reason, rep.Terms())
	}
	canonical, err := a.CanonicalJSON()
	if err != nil {
		return store.StoredVerdict{}, err
	}
	return store.StoredVerdict{
		Canonical: string(canonical), Hash: h.Hasher.Hash(string(canonical)), Label: a.Verdict,
		CoherenceScore: o.CoherenceScore, FilterVersion: rep.Version, Model: model, PromptVersion: promptVersion,
		ExpiresAt: h.Now().Add(o.Retention(h.Retention)),
	}, nil
}

// rerun generates the verdict of a DROPPED order with the tier and query
// the operator agreed with the customer, against the payment recorded.
func (h *Handler) rerun(ctx context.Context, r Request) (Answer, error) {
	tier, err := oracle.ParseTier(r.Tier)
	if err != nil {
		return Answer{}, refuse("rerun needs the tier the customer paid for: quick, full or strategy")
	}
	query := r.Query
	if err := oracle.ValidateQuery(query); err != nil {
		return Answer{}, refuse("rerun needs the customer's question: %v", err)
	}
	o, err := h.resolve(ctx, r)
	if err != nil {
		return Answer{}, err
	}
	if o.Status != oracle.StatusDropped {
		if o.Status == oracle.StatusPaid && o.Tier == tier && o.Query == query {
			// The same request again: make sure its job is on its way.
			if err := h.Generate.Send(ctx, queue.Job{SessionID: o.SessionID, Reason: queue.ReasonOperator}); err != nil {
				return Answer{}, fmt.Errorf("enqueue the generation: %w", err)
			}
		}
		if o.Status.Paid() && o.Tier == tier && o.Query == query {
			return Answer{Message: fmt.Sprintf("%s was re-run already; it is %s", oracle.ShortID(o.SessionID), o.Status)}, nil
		}
		return Answer{}, refuse("%s is %s: only a DROPPED order is re-run", oracle.ShortID(o.SessionID), o.Status)
	}
	if o.AmountTotal != tier.PriceCents() {
		return Answer{}, refuse("%s paid %s, which is not the %s tier's price (%s): re-run it as the tier paid for",
			oracle.ShortID(o.SessionID), oracle.FormatAmount(o.AmountTotal, o.Currency), tier, oracle.FormatAmount(tier.PriceCents(), oracle.Currency))
	}
	changed, err := h.Orders.Rerun(ctx, o.SessionID, tier, query)
	if err != nil {
		return Answer{}, err
	}
	if err := h.Generate.Send(ctx, queue.Job{SessionID: o.SessionID, Reason: queue.ReasonOperator}); err != nil {
		return Answer{}, fmt.Errorf("enqueue the generation: %w", err)
	}
	if err := h.record(ctx, r, o, "re-run as "+string(tier)); err != nil {
		return Answer{}, err
	}
	return Answer{Changed: changed, Message: fmt.Sprintf("%s is being generated as %s; the customer gets the verdict by email", oracle.ShortID(o.SessionID), tier)}, nil
}

// refund refunds the order's payment in full through Stripe, with an
// idempotency key derived from the session; the order becomes REFUNDED
// and the customer gets the refund notice. Never automatic: only this
// action, with who authorised it, refunds.
func (h *Handler) refund(ctx context.Context, r Request) (Answer, error) {
	o, err := h.resolve(ctx, r)
	if err != nil {
		return Answer{}, err
	}
	switch {
	case o.Status == oracle.StatusPaid || o.Status == oracle.StatusGenerating:
		return Answer{}, refuse("%s is %s: its verdict is being generated; refund it once it is READY or has failed", oracle.ShortID(o.SessionID), o.Status)
	case !o.Status.Paid():
		return Answer{}, refuse("%s is %s: it was never paid", oracle.ShortID(o.SessionID), o.Status)
	case oracle.IsAgentOrder(o.SessionID):
		if o.Status == oracle.StatusRefunded {
			return Answer{Message: fmt.Sprintf("%s is already refunded (%s)", oracle.ShortID(o.SessionID), o.RefundID)}, nil
		}
		return h.refundAgent(ctx, r, o)
	case o.PaymentIntent == "":
		return Answer{}, refuse("%s has no payment intent recorded: refund it in Stripe's Dashboard; its charge.refunded event then records it", oracle.ShortID(o.SessionID))
	}
	refunds := h.Live
	if !o.Livemode {
		refunds = h.Test
	}
	if refunds == nil {
		return Answer{}, refuse("no Stripe key for %s-mode orders is configured", map[bool]string{true: "live", false: "test"}[o.Livemode])
	}
	refundID, outcome, made := o.RefundID, "already refunded", false
	if o.Status != oracle.StatusRefunded {
		re, err := refunds.RefundSession(ctx, o.SessionID, o.PaymentIntent)
		switch {
		case errors.Is(err, stripex.ErrAlreadyRefunded):
			// Refunded in the Dashboard, its event not here yet.
			refundID, outcome = "refunded in Stripe", "already refunded in Stripe"
		case err != nil:
			return Answer{}, err
		default:
			// Made now unless Stripe replayed an earlier request's (or
			// the SDK's own retry of this one, when Stripe's first answer
			// was lost: then a racing webhook may leave the answer saying
			// nothing changed, though the refund is made and recorded).
			refundID, outcome, made = re.ID, "refunded "+re.ID, !re.Replayed
		}
	}
	// The refund's own event may have reached the webhook, and recorded
	// it, before Stripe answered: this request still made the change.
	_, recorded, err := fulfil.Refunded(ctx, h.Orders, h.Mail, o.SessionID, store.Refund{ID: refundID, Amount: o.AmountTotal, By: store.RefundedByOperator})
	if err != nil {
		return Answer{}, err
	}
	if err := h.record(ctx, r, o, outcome); err != nil {
		return Answer{}, err
	}
	return Answer{Changed: made || recorded, Message: fmt.Sprintf("%s: %s (%s); the order is REFUNDED and the customer gets the refund notice",
		oracle.ShortID(o.SessionID), outcome, oracle.FormatAmount(o.AmountTotal, o.Currency))}, nil
}

// resend sends an email kind of the order again: one whose delivery is
// still open (lost, given up) at once, one already sent only with force.
// The mailer still sends it only while the order is in the state the
// email tells of.
func (h *Handler) resend(ctx context.Context, r Request) (Answer, error) {
	kind := oracle.MailKind(r.Kind)
	if !slices.Contains(oracle.MailKinds(), kind) {
		return Answer{}, refuse("resend needs a mail kind: %v", oracle.MailKinds())
	}
	o, err := h.resolve(ctx, r)
	if err != nil {
		return Answer{}, err
	}
	state, closed := o.Mail[kind]
	changed := false
	if closed {
		if !r.Force && !state.Undelivered() {
			return Answer{}, refuse("the %s email of %s was %s already: resend it with force to send it again", kind, oracle.ShortID(o.SessionID), state)
		}
		if changed, err = h.Orders.ReopenMail(ctx, o.SessionID, kind); err != nil {
			return Answer{}, err
		}
	}
	if err := h.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: kind}); err != nil {
		return Answer{}, fmt.Errorf("enqueue the email: %w", err)
	}
	outcome := "resent"
	if closed {
		outcome = fmt.Sprintf("resent past its %s delivery", state)
	}
	if err := h.record(ctx, r, o, outcome); err != nil {
		return Answer{}, err
	}
	return Answer{Changed: changed, Message: fmt.Sprintf("the %s email of %s is queued (%s)", kind, oracle.ShortID(o.SessionID), outcome)}, nil
}
