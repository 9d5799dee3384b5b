package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/oracle"
)

// Messages reads the inbox bucket (shared/inbox).
type Messages interface {
	Get(ctx context.Context, key string) ([]byte, time.Time, error)
}

// Handler is the inbox function: SES's receipt rule invokes it for each
// message it stored; with a Microsoft 365 mailbox, a schedule invokes it
// to poll. Both hand each message to one Core.
type Handler struct {
	Core     *Core
	Messages Messages
	Alerts   Alerter
	Log      *slog.Logger
	// Poll reads the Microsoft 365 mailbox; nil with SES receiving.
	Poll func(ctx context.Context) error
	// Failures are the records the deadletter function keeps of the
	// invocations that reached FailureQueue, the on-failure destination;
	// Releaser removes one once its messages are processed.
	Failures     FailureRecords
	Releaser     Releaser
	FailureQueue string
}

// event is what the function can be invoked with: SES's receipt event
// (Records), a schedule's (source), or `make inbox-replay`'s (replay).
type event struct {
	Records []events.SimpleEmailRecord `json:"Records"`
	Source  string                     `json:"source"`
	Replay  *replay                    `json:"replay"`
}

// Handle dispatches an invocation: a replay's answer is its summary for
// the operator; SES's and the schedule's have none. An error makes Lambda
// retry the invocation (SES and the schedule invoke asynchronously); an
// invocation that can never succeed alerts and returns nil.
func (h *Handler) Handle(ctx context.Context, raw json.RawMessage) (*replayAnswer, error) {
	var ev event
	if err := json.Unmarshal(raw, &ev); err == nil && ev.Replay != nil {
		return h.replay(ctx, *ev.Replay)
	}
	return nil, h.handle(ctx, raw)
}

func (h *Handler) handle(ctx context.Context, raw json.RawMessage) error {
	var ev event
	if err := json.Unmarshal(raw, &ev); err != nil || (len(ev.Records) == 0 && ev.Source == "") {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.GarbageJob, Subject: "inbox",
			Detail: "the inbox function was invoked with an event it cannot read; nothing was done"})
		h.Log.ErrorContext(ctx, "unreadable invocation", "bytes", len(raw))
		return nil
	}
	if len(ev.Records) > 0 {
		return h.received(ctx, ev.Records)
	}
	if h.Poll == nil {
		h.Log.WarnContext(ctx, "scheduled invocation without a mailbox to poll (MAIL_TRANSPORT is ses)", "source", ev.Source)
		return nil
	}
	return h.Poll(ctx)
}

// received processes the messages SES stored. SES's receipt rule writes
// each message to the inbox bucket (under inbound/, named by its SES id)
// before it invokes the function.
func (h *Handler) received(ctx context.Context, recs []events.SimpleEmailRecord) error {
	var errs []error
	for _, rec := range recs {
		id := rec.SES.Mail.MessageID
		if rec.EventSource != "aws:ses" || !sesID(id) {
			h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.GarbageJob, Subject: "inbox/receipt",
				Detail: "the inbox function got a receipt record that is not SES's or names no message id (" + oracle.Clip(rec.EventSource, 24) + "); skipped"})
			continue
		}
		object := inbox.Prefix + id
		raw, at, err := h.Messages.Get(ctx, object)
		if err != nil {
			h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.InboxUnreadable, Subject: object,
				Detail: "the received message " + object + " could not be read (" + err.Error() + "); SES's invocation is retried"})
			errs = append(errs, err)
			continue
		}
		if err := h.Core.Process(ctx, Received{Object: object, Raw: raw, At: at, Junk: junk(rec.SES.Receipt)}); err != nil {
			errs = append(errs, fmt.Errorf("message %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// junk is SES's verdict when it found a virus or spam.
func junk(r events.SimpleEmailReceipt) string {
	switch {
	case r.VirusVerdict.Status == "FAIL":
		return "virus"
	case r.SpamVerdict.Status == "FAIL":
		return "spam"
	}
	return ""
}

// sesID accepts what SES names a received message: letters and digits
// (and the local stack's "local-" ids), never a path.
func sesID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	return strings.IndexFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
	}) < 0
}
