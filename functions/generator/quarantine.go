package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/quarantine"
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
		t.log.WarnContext(ctx, "generation lease lost before quarantining the order")
		return nil
	}
	t.log.ErrorContext(ctx, "verdict quarantined by the content filter", "terms", strings.Join(rep.Terms(), ","), "reason", string(rep.Reason), "filter_version", rep.Version)
	h.audit(ctx, t, audit.StatusError, audit.Detail("quarantined by the content filter: "+string(rep.Reason)), audit.RecordID(o.SessionID, audit.NameQuarantinedGenerator), g.result.Model)
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.VerdictQuarantined, Session: o.SessionID,
		Detail: fmt.Sprintf("the content filter stopped the verdict at gate 1 (%s: %s); nothing was delivered. Review the record the order names (quarantine_record), then deliver a cleaned verdict or refund",
			rep.Reason, strings.Join(rep.Terms(), ", "))})
	if err := h.notify(ctx, o, oracle.MailReview); err != nil {
		return fmt.Errorf("enqueue review notice: %w", err)
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
