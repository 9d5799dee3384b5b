// Package repair is what every reader of a stored verdict (the verdict API
// behind the result page, the mailer, the agent's paid request, the health
// job's sample, `make ops ACTION=show`) does before it serves, mails,
// samples or shows one: the verdict must parse and match its keyed
// hash. A corrupt one is set aside by one conditional write, so that of
// concurrent readers exactly one raises CRITICAL VERDICT_CORRUPT, and the
// order is repaired as SPEC_ORACLE_REGEN_CONSISTENCY has it: generated
// again (compared with the emailed verdict, whose divergence rules apply)
// or, when it cannot be, held for the operator (SPEC_ORACLE_CACHE_ALERT
// failure mode 4).
package repair

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// Orders sets a corrupt verdict aside (store.Orders).
type Orders interface {
	SetAside(ctx context.Context, seen oracle.Order, mode store.SetAsideMode) (bool, error)
}

// Sender sends a job to the generate queue (queue.Sender).
type Sender interface {
	Send(ctx context.Context, j queue.Job) error
}

// Alerter raises operator alerts (alert.Alerter).
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Guard checks stored verdicts as they are read.
type Guard struct {
	Orders Orders
	// Hash is the keyed hash stored beside each verdict (audit.Hasher.Hash).
	Hash     func(string) string
	Generate Sender
	Alerts   Alerter
	Log      *slog.Logger
}

// Outcome is what a reader met.
type Outcome int

const (
	// Intact: the verdict may be served.
	Intact Outcome = iota
	// Regenerating: the verdict was set aside and a new one is on its way.
	Regenerating
	// Held: the verdict was set aside and the order waits for the operator.
	Held
)

// Check returns Intact for an order that is not READY or whose verdict is
// sound. A corrupt one is set aside (by this call or a concurrent one) and
// never served: the outcome says what the customer is told. An error means
// the set-aside could not be written; the verdict must not be served then
// either.
func (g *Guard) Check(ctx context.Context, o oracle.Order) (Outcome, error) {
	if o.Status != oracle.StatusReady {
		return Intact, nil
	}
	why := oracle.VerdictProblem(o, g.Hash)
	if why == "" {
		return Intact, nil
	}
	mode := modeOf(o)
	won, err := g.Orders.SetAside(ctx, o, mode)
	if err != nil {
		// Not silent: the operator hears of it now (the alert's window
		// keeps reloads from repeating it), and the next read tries again.
		g.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.VerdictCorrupt, Session: o.SessionID,
			Detail: "the stored verdict " + why + " and could not be set aside (" + oracle.Clip(err.Error(), 200) + "); it is not served"})
		return Regenerating, fmt.Errorf("the stored verdict %s: %w", why, err)
	}
	outcome := Regenerating
	if mode == store.SetAsideHold {
		outcome = Held
	}
	if !won {
		// Another reader set it aside first and raised the alert.
		return outcome, nil
	}
	log := g.Log.With(obs.Order(o.SessionID))
	detail := "the stored verdict " + why + "; set aside, and "
	switch mode {
	case store.SetAsideRegenerate:
		emailed := o.VerdictLabel
		if o.Regen && o.OriginalVerdict != "" {
			emailed = o.OriginalVerdict // an earlier regeneration kept the emailed one
		}
		detail += strings.TrimSpace("generated again, compared with the emailed "+string(emailed)) + " verdict"
	case store.SetAsideGenerate:
		detail += "generated again; its email had not gone out, so the new one is emailed"
	case store.SetAsideHold:
		detail += "held for the operator (" + holdReason(o) + "): deliver it (make ops ACTION=deliver generates it again) or refund it"
	}
	g.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.VerdictCorrupt, Session: o.SessionID, Detail: detail})
	log.ErrorContext(ctx, "corrupt stored verdict set aside", "problem", why, "mode", mode.String())
	// The generator does what the order now calls for: a generation, or
	// the review notice of a held order. Should the send fail, the health
	// job finds the PAID order without progress and sends its job again.
	if err := g.Generate.Send(ctx, queue.Job{SessionID: o.SessionID, Reason: queue.ReasonRegenerate}); err != nil {
		log.ErrorContext(ctx, "queueing the repair of a corrupt verdict failed; the health job will send it again", "error", err.Error())
	}
	return outcome, nil
}

// modeOf is how an order with a corrupt verdict is repaired. A second
// corruption of one order means its verdicts do not survive the store, and
// an order that lacks a tier or a query cannot be generated: both wait for
// the operator. Otherwise the verdict is generated again: as a
// regeneration compared with what was emailed, or as a first verdict when
// its email never left.
func modeOf(o oracle.Order) store.SetAsideMode {
	switch {
	case holdReason(o) != "":
		return store.SetAsideHold
	case o.Mail[oracle.MailVerdict] == "":
		return store.SetAsideGenerate
	}
	return store.SetAsideRegenerate
}

func holdReason(o oracle.Order) string {
	switch {
	case o.SetAsideAt != nil:
		return "its verdict was found corrupt before"
	case o.Query == "":
		return "it lacks the query to generate from"
	}
	if _, err := oracle.ParseTier(string(o.Tier)); err != nil {
		return "it lacks the tier to generate from"
	}
	return ""
}
