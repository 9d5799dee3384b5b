package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
)

// quarantine sets aside a verdict the content filter stopped at gate 1: it
// is kept whole for review and never stored, served or sent. If the review
// record cannot be written, nothing is decided: the generation is released
// and retried, and the operator hears of it (fail closed, GAP-L).
func (h *Handler) quarantine(ctx context.Context, t *task, g generation, rep sosfilter.Report) error {
	o := t.order
	now := h.Now()
	key, err := h.Quarantine.Put(ctx, quarantine.Record{
		SessionID: o.SessionID, Tier: string(o.Tier), Gate: quarantine.GateGenerator, QuarantinedAt: now.UTC(),
		Terms: rep.Terms(), Reason: string(rep.Reason), FilterVersion: rep.Version, PromptVersion: prompt.Version, Model: g.result.Model,
		Livemode: o.Livemode, AmountTotal: o.AmountTotal, Currency: o.Currency, Raw: rawPayload(g.raw),
	})
	if err != nil {
		h.abandon(ctx, t)
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.QuarantineRecordFailed, Session: o.SessionID,
			Detail: "the content filter stopped a verdict and its review record could not be written; nothing was delivered and the generation will be retried"})
		return fmt.Errorf("quarantine: %w", err)
	}
	ok, err := h.Orders.QuarantineGeneration(ctx, o.SessionID, t.lease, store.Quarantine{Gate: quarantine.GateGenerator, Terms: rep.Terms(), Record: key, FilterVersion: rep.Version})
	if err != nil {
		h.abandon(ctx, t)
		return err
	}
	if !ok {
		t.log.Warn("generation lease lost before quarantining the order")
		return nil
	}
	t.log.Error("verdict quarantined by the content filter", "terms", strings.Join(rep.Terms(), ","), "reason", string(rep.Reason), "filter_version", rep.Version)
	h.audit(ctx, t, audit.StatusError, audit.Detail("quarantined by the content filter: "+string(rep.Reason)), audit.RecordID(o.SessionID, audit.NameQuarantinedGenerator), g.result.Model)
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.VerdictQuarantined, Session: o.SessionID,
		Detail: fmt.Sprintf("the content filter stopped the verdict at gate 1 (%s: %s); nothing was delivered. Review the record the order names (quarantine_record), then deliver a cleaned verdict or refund",
			rep.Reason, strings.Join(rep.Terms(), ", "))})
	if err := h.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: oracle.MailReview}); err != nil {
		return fmt.Errorf("enqueue review notice: %w", err)
	}
	return h.scheduleQuarantineReminder(ctx, o.SessionID, 0)
}

// scheduleQuarantineReminder queues the next QUARANTINE_UNRESOLVED check.
func (h *Handler) scheduleQuarantineReminder(ctx context.Context, sessionID string, attempt int) error {
	if err := h.Requeue.Send(ctx, queue.QuarantineReminder(sessionID, attempt, h.Now().Add(h.QuarantineReminder))); err != nil {
		return fmt.Errorf("schedule the quarantine reminder: %w", err)
	}
	return nil
}

// rawPayload is the model's reply as JSON for the record: the reply itself
// when it is JSON (it passed the schema), else as a JSON string.
func rawPayload(raw string) json.RawMessage {
	if json.Valid([]byte(raw)) {
		return json.RawMessage(raw)
	}
	b, _ := json.Marshal(raw)
	return b
}

// remindQuarantine repeats the CRITICAL alert every QuarantineReminder while
// an order the content filter stopped is still QUARANTINED: a refund or a
// cleaned delivery is the operator's to make, and not making it leaves a
// paying customer waiting (SPEC_ORACLE_SOS_FILTER invariant 4).
func (h *Handler) remindQuarantine(ctx context.Context, t *task) error {
	o, job, log := t.order, t.job, t.log
	// A reminder scheduled twice (a redelivered job settles again) would
	// start a second chain; each step is taken once.
	step := fmt.Sprintf("quarantine-reminder#%s#%d", o.SessionID, job.Attempt)
	first, err := h.Once.Mark(ctx, step, 2*h.QuarantineReminder)
	if err != nil {
		return err
	}
	if !first {
		log.Info("quarantine reminder already sent; duplicate acknowledged")
		return nil
	}
	since := "unknown"
	if o.QuarantinedAt != nil {
		since = o.QuarantinedAt.UTC().Format(time.RFC3339)
	}
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.QuarantineUnresolved, Session: o.SessionID,
		Detail: fmt.Sprintf("quarantined at the %s gate since %s (%s), still unresolved: deliver a cleaned verdict or refund",
			o.QuarantineGate, since, strings.Join(o.QuarantineTerms, ", "))})
	if err := h.scheduleQuarantineReminder(ctx, o.SessionID, job.Attempt+1); err != nil {
		if rerr := h.Once.Release(ctx, step); rerr != nil {
			log.Error("releasing the reminder step failed", "error", rerr.Error())
		}
		return err
	}
	return nil
}
