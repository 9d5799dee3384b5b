package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
)

// Ledger keeps what the inbox knows of each message and sender, by keyed
// hash only (shared/store).
type Ledger interface {
	BeginMessage(ctx context.Context, key string, lease, ttl time.Duration) (string, error)
	MessageDone(ctx context.Context, key, token, outcome string) error
	ReleaseMessage(ctx context.Context, key, token string) error
	TakeCooldown(ctx context.Context, sender, key string, ttl time.Duration) (bool, error)
	ReleaseCooldown(ctx context.Context, sender, key string) error
}

// SentMessages finds the session an email was sent for by its message id
// (store.SentMessages: a verdict email's by the order's index, others in
// the Ledger).
type SentMessages interface {
	SentMessage(ctx context.Context, messageID string) (string, bool, error)
}

// Orders tells whether a session named in a message is an order.
type Orders interface {
	Get(ctx context.Context, sessionID string) (oracle.Order, bool, error)
}

// Sender queues the autoresponse's mail job.
type Sender interface {
	Send(ctx context.Context, j queue.Job) error
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// TextFilter is the content filter the subject shown in an alert passes.
type TextFilter interface {
	Text(text string) sosfilter.Result
}

// Core processes each received message once, whichever source read it:
// the operator's alert, the order it belongs to, the acknowledgement owed
// (queued for the mailer), the audit record.
type Core struct {
	Ledger Ledger
	Orders Orders
	Sent   SentMessages
	Mail   Sender
	Alerts Alerter
	Audit  *audit.Recorder
	Filter TextFilter
	Hasher *audit.Hasher
	Policy inbox.Policy
	// Cooldown is how long a sender waits for a second acknowledgement
	// (24 h); Retention how long a message is remembered as processed.
	Cooldown, Retention time.Duration
	// Lease bounds one processing before another may take over.
	Lease time.Duration
	Log   *slog.Logger
	Now   func() time.Time
}

// Received is one message a source stored in the inbox bucket.
type Received struct {
	Object string    // its key in the inbox bucket
	Raw    []byte    // the message as received
	At     time.Time // when it was received: its audit records' partition
	Junk   string    // the receiving service's spam or virus verdict, if any
}

// outcomeAcknowledged is the outcome of a message whose acknowledgement
// was queued; any other outcome is the reason none was (inbox.Skip).
const outcomeAcknowledged = "acknowledged"

// maxShownSubject bounds the subject an alert shows, in runes.
const maxShownSubject = 80

// Process handles one received message. A message already processed
// changes nothing (a redelivered event, overlapping polls, two sources);
// an error leaves it unprocessed, for the source's retry.
func (c *Core) Process(ctx context.Context, r Received) error {
	started := c.Now()
	m, err := inbox.Parse(r.Raw)
	if err != nil {
		// Nothing to answer and no one to name; the operator still hears
		// of it once, and the stored message is there to read.
		c.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.InboxMessage, Subject: r.Object,
			Detail: "a message that is no readable email reached the inbox; nothing was sent; " + readIt(r.Object)})
		c.Log.WarnContext(ctx, "received message does not parse", "object", r.Object, "error", err.Error())
		return nil
	}
	m.Junk = r.Junk
	key := inbox.Key(c.Hasher, m, r.Raw)
	log := c.Log.With("message", oracle.Clip(key, 12))
	token, err := c.Ledger.BeginMessage(ctx, key, c.Lease, c.Retention)
	switch {
	case errors.Is(err, store.ErrMessageSeen):
		log.InfoContext(ctx, "message already processed")
		return nil
	case errors.Is(err, store.ErrMessageInFlight):
		// Its holder finishes it, or fails and its source retries.
		log.InfoContext(ctx, "message being processed by another invocation")
		return nil
	case err != nil:
		return err
	}
	session, err := c.order(ctx, m)
	if err != nil {
		c.release(ctx, log, key, token)
		return err
	}
	sender := ""
	if m.From != "" {
		sender = c.Hasher.Email(m.From)
	}
	outcome := string(c.Policy.Acknowledge(m))
	if outcome == "" {
		if outcome, err = c.acknowledge(ctx, sender, key, r.Object); err != nil {
			c.release(ctx, log, key, token)
			return err
		}
	}
	c.alert(ctx, m, r.Object, key, sender, session, outcome)
	c.Audit.Record(ctx, audit.Record{Timestamp: c.Now().UTC(), SessionID: session, Email: sender,
		LatencyMS: max(c.Now().Sub(started).Milliseconds(), 0), Status: audit.StatusOK, Source: audit.SourceInbox,
		SessionCreated: r.At.UTC(), Event: audit.EventInboxMessage,
		Inbox: &audit.InboxMessage{MessageKey: key, Domain: inbox.Domain(m.From), Via: inbox.Via(r.Object), Outcome: outcome}},
		audit.InboxRecordID(key, audit.NameReceived))
	if err := c.Ledger.MessageDone(ctx, key, token, outcome); err != nil {
		// Its effects are each once already (the cooldown, the reply's own
		// delivery record, the alert's window, the audit id).
		log.ErrorContext(ctx, "closing the message failed", "error", err.Error())
	}
	log.InfoContext(ctx, "message processed", "outcome", outcome, obs.Order(session))
	return nil
}

// acknowledge takes the sender's cooldown and queues the acknowledgement;
// it returns the outcome: acknowledged, or cooldown when the sender was
// answered within the window.
func (c *Core) acknowledge(ctx context.Context, sender, key, object string) (string, error) {
	holds, err := c.Ledger.TakeCooldown(ctx, sender, key, c.Cooldown)
	if err != nil {
		return "", err
	}
	if !holds {
		return string(inbox.SkipCooldown), nil
	}
	if err := c.Mail.Send(ctx, queue.Job{Kind: oracle.MailAutoresponse, Inbox: object}); err != nil {
		if rerr := c.Ledger.ReleaseCooldown(ctx, sender, key); rerr != nil {
			c.Log.ErrorContext(ctx, "releasing the cooldown failed", "error", rerr.Error())
		}
		return "", fmt.Errorf("queue the autoresponse: %w", err)
	}
	return outcomeAcknowledged, nil
}

// order is the session the message is about: one it names that is an
// order, or the one whose email it replies to (SES's Message-ID is
// "<SES message id>@<region>.amazonses.com", the id the mailer recorded).
func (c *Core) order(ctx context.Context, m inbox.Message) (string, error) {
	for _, s := range m.Sessions {
		_, found, err := c.Orders.Get(ctx, s)
		if err != nil {
			return "", err
		}
		if found {
			return s, nil
		}
	}
	for _, ref := range m.Replies {
		id, _, _ := strings.Cut(ref, "@")
		if id == "" {
			continue
		}
		s, found, err := c.Sent.SentMessage(ctx, id)
		if err != nil {
			return "", err
		}
		if found {
			return s, nil
		}
	}
	return "", nil
}

// alert puts the message in front of the operator: the sender's keyed
// hash and domain, the subject (shortened, withheld when the content
// filter stops it), what was done and how to read it; never the address
// or the body.
func (c *Core) alert(ctx context.Context, m inbox.Message, object, key, sender, session, outcome string) {
	from := "no sender"
	if sender != "" {
		from = strings.TrimPrefix(sender, audit.HashPrefix)[:12] + " at " + inbox.Domain(m.From)
	}
	did := "acknowledged"
	if outcome != outcomeAcknowledged {
		did = "not acknowledged (" + outcome + ")"
	}
	order := "no order"
	if session != "" {
		order = "order " + oracle.ShortID(session)
	}
	kind := ""
	if m.Automatic != "" {
		kind = " [" + m.Automatic + "]"
	}
	c.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.InboxMessage, Session: session, Subject: key,
		Detail: fmt.Sprintf("message from %s%s, subject %q, %s; %s; answer within 24 hours; %s", from, kind, c.shown(m.Subject), order, did, readIt(object))})
}

// readIt tells the operator where the message stored under object is and
// how to read it: the alert keeps the address and the body out, the
// operator's terminal does not.
func readIt(object string) string {
	return "stored as " + object + ", read it with make ops ACTION=inbox SHOW=" + inbox.ID(object)
}

// shown is the subject as an alert shows it.
func (c *Core) shown(subject string) string {
	subject = strings.Join(strings.FieldsFunc(subject, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if utf8.RuneCountInString(subject) > maxShownSubject {
		subject = string([]rune(subject)[:maxShownSubject-1]) + "…"
	}
	if subject != "" && (c.Filter.Text(subject).Action != sosfilter.Pass || audit.HasEmail(subject)) {
		return "[withheld: the content filter stopped it]"
	}
	return subject
}

func (c *Core) release(ctx context.Context, log *slog.Logger, key, token string) {
	if err := c.Ledger.ReleaseMessage(ctx, key, token); err != nil {
		log.ErrorContext(ctx, "releasing the message failed", "error", err.Error())
	}
}

// DefaultLease outlasts one invocation (30 s timeout), so a live
// processing is never taken over.
const DefaultLease = time.Minute
