package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
)

// quarantine holds an email the filter stopped at gate 2: it is kept whole
// for review and never sent, and the order (if its verdict was READY) is
// no longer served. If the review record cannot be written, nothing is
// sent and the job is retried (fail closed, GAP-L).
func (h *Handler) quarantine(ctx context.Context, t *task, msg letter.Message, rep sosfilter.Report) error {
	o, kind := t.order, t.job.Kind
	terms := rep.Terms()
	raw, err := json.Marshal(quarantine.Mail{Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML})
	if err != nil {
		return fmt.Errorf("encode the stopped email: %w", err)
	}
	key, err := h.Quarantine.Put(ctx, quarantine.Record{
		SessionID: o.SessionID, Tier: string(o.Tier), Gate: quarantine.GateMailer, QuarantinedAt: h.Now().UTC(),
		Terms: terms, Reason: string(rep.Reason), FilterVersion: rep.Version, PromptVersion: o.PromptVersion, Model: o.Model,
		Livemode: o.Livemode, AmountTotal: o.AmountTotal, Currency: o.Currency, MailKind: kind, Raw: raw,
	})
	if err != nil {
		h.release(ctx, t)
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.QuarantineRecordFailed, Session: o.SessionID,
			Detail: "the content filter stopped the " + string(kind) + " email and its review record could not be written; nothing was sent and the job will be retried"})
		return fmt.Errorf("quarantine: %w", err)
	}
	// The order stops being served before the delivery is closed: if this
	// write fails, the claim is released and the retry quarantines again,
	// instead of finding the mail done and the verdict still on the page.
	held, err := h.Orders.QuarantineReady(ctx, o.SessionID, store.Quarantine{Gate: quarantine.GateMailer, Terms: terms, Record: key, FilterVersion: rep.Version})
	if err != nil {
		h.release(ctx, t)
		return err
	}
	h.close(ctx, t, "quarantined", "")
	t.log.ErrorContext(ctx, "email quarantined by the content filter", "terms", strings.Join(terms, ","), "reason", string(rep.Reason), "filter_version", rep.Version)
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.EmailQuarantined, Session: o.SessionID,
		Detail: fmt.Sprintf("the content filter stopped the %s email at gate 2 (%s: %s); nothing was sent. Review the record the order names (quarantine_record), then deliver a cleaned verdict or refund",
			kind, rep.Reason, strings.Join(terms, ", "))})
	if !held {
		return nil // not a served verdict: the alert is the operator's whole task
	}
	return h.quarantineFollowUps(ctx, o.SessionID)
}

// quarantineFollowUps queues what a quarantined order is owed: the
// customer's review notice. A job that finds its verdict already
// quarantined runs it again, since the attempt that quarantined it may
// have died first; the notice is sent once, so a repeat changes nothing.
func (h *Handler) quarantineFollowUps(ctx context.Context, sessionID string) error {
	if err := h.Mail.Send(ctx, queue.Job{SessionID: sessionID, Kind: oracle.MailReview}); err != nil {
		return fmt.Errorf("enqueue review notice: %w", err)
	}
	return nil
}
