package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/mail"
)

// GraphMailbox reads the Microsoft 365 mailbox (mail.Graph).
type GraphMailbox interface {
	Unread(ctx context.Context, mailbox string, since time.Time) ([]mail.InboxMessage, error)
	MIME(ctx context.Context, mailbox, id string) ([]byte, error)
}

// SeenState is what the poll keeps in the Ledger: the mailbox's first
// read, the messages seen, and the window of its failure alert.
type SeenState interface {
	Seeded(ctx context.Context, source string) (bool, error)
	MarkSeeded(ctx context.Context, source string) (bool, error)
	SeedMessage(ctx context.Context, key string, ttl time.Duration) error
	MessageSeen(ctx context.Context, key string) (bool, error)
	Mark(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// Storer keeps a message in the inbox bucket (inbox.Messages).
type Storer interface {
	Put(ctx context.Context, key string, raw []byte) error
}

// Poller reads the Microsoft 365 mailbox every two minutes: the unread
// messages of the lookback window, each new one stored in the inbox bucket
// (where the mailer reads its sender) and handed to the Core. It never
// marks, moves or deletes a message.
type Poller struct {
	Graph    GraphMailbox
	Mailbox  string
	Lookback time.Duration
	State    SeenState
	Store    Storer
	Core     *Core
	Alerts   Alerter
	// FailureAlertEvery bounds INBOX_UNREADABLE to one alert in that
	// time while Graph keeps failing (a poll every 2 minutes would alert
	// 30 times an hour).
	FailureAlertEvery time.Duration
	Log               *slog.Logger
	Now               func() time.Time
}

// source names the polled mailbox's state in the Ledger.
const source = "graph"

// Poll reads the mailbox once. It never fails the invocation (INV-1): a
// failure is alerted and logged, and the next poll, two minutes later,
// reads again what this one could not; the state is only ever added to.
func (p *Poller) Poll(ctx context.Context) error {
	listed, err := p.Graph.Unread(ctx, p.Mailbox, p.Now().Add(-p.Lookback))
	if err != nil {
		p.unreadable(ctx, "listing the mailbox failed", err)
		return nil
	}
	seeded, err := p.State.Seeded(ctx, source)
	if err != nil {
		p.unreadable(ctx, "reading the mailbox's state failed", err)
		return nil
	}
	if !seeded {
		p.seed(ctx, listed)
		return nil
	}
	var processed, failed int
	for _, m := range listed {
		if err := p.one(ctx, m); err != nil {
			failed++
			p.unreadable(ctx, "a message could not be processed", err)
			continue
		}
		processed++
	}
	p.Log.InfoContext(ctx, "mailbox polled", "unread", len(listed), "processed", processed, "failed", failed)
	return nil
}

// one processes a listed message unless it was seen.
func (p *Poller) one(ctx context.Context, m mail.InboxMessage) error {
	key, raw, err := p.key(ctx, m)
	if err != nil {
		return err
	}
	seen, err := p.State.MessageSeen(ctx, key)
	if err != nil || seen {
		return err
	}
	if raw == nil {
		if raw, err = p.Graph.MIME(ctx, p.Mailbox, m.ID); err != nil {
			return fmt.Errorf("read a message: %w", err)
		}
	}
	object := inbox.Prefix + "graph-" + key
	if err := p.Store.Put(ctx, object, raw); err != nil {
		return err
	}
	return p.Core.Process(ctx, Received{Object: object, Raw: raw, At: m.Received})
}

// key is the message's key as the Core computes it: from its Message-ID
// when Graph lists one, without reading the message; from its bytes
// otherwise, which are returned.
func (p *Poller) key(ctx context.Context, m mail.InboxMessage) (string, []byte, error) {
	if id := strings.Trim(strings.TrimSpace(m.InternetMessageID), "<>"); id != "" {
		return inbox.Key(p.Core.Hasher, inbox.Message{ID: id}, nil), nil, nil
	}
	raw, err := p.Graph.MIME(ctx, p.Mailbox, m.ID)
	if err != nil {
		return "", nil, fmt.Errorf("read a message: %w", err)
	}
	msg, err := inbox.Parse(raw)
	if err != nil {
		msg = inbox.Message{}
	}
	return inbox.Key(p.Core.Hasher, msg, raw), raw, nil
}

// seed is the first read (V1, G7): the unread messages already there are
// recorded as seen, with no alert and no acknowledgement each, and the
// operator told once. A seeding that fails part way is done again whole
// by the next poll.
func (p *Poller) seed(ctx context.Context, listed []mail.InboxMessage) {
	for _, m := range listed {
		key, _, err := p.key(ctx, m)
		if err == nil {
			err = p.State.SeedMessage(ctx, key, p.Core.Retention)
		}
		if err != nil {
			p.unreadable(ctx, "the first read of the mailbox failed", err)
			return
		}
	}
	first, err := p.State.MarkSeeded(ctx, source)
	if err != nil {
		p.unreadable(ctx, "the first read of the mailbox failed", err)
		return
	}
	p.Log.InfoContext(ctx, "mailbox read for the first time; its unread messages recorded as seen", "unread", len(listed), "announced", first)
	if first {
		p.Alerts.Raise(ctx, alert.Alert{Severity: alert.Info, Kind: alert.InboxSeeded, Subject: source,
			Detail: "the support mailbox was read for the first time: its " + strconv.Itoa(len(listed)) +
				" unread message(s) of the last " + days(p.Lookback) + " were recorded as seen, with no alert and no acknowledgement each; read them in the mailbox"})
	}
}

// unreadable alerts, at most once per FailureAlertEvery, and logs always.
func (p *Poller) unreadable(ctx context.Context, what string, err error) {
	p.Log.ErrorContext(ctx, what, "error", err.Error())
	first, merr := p.State.Mark(ctx, "inbox#unreadable#"+source, p.FailureAlertEvery)
	if merr != nil || first {
		p.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.InboxUnreadable, Subject: source,
			Detail: "the support mailbox could not be read through Graph: " + what + " (" + err.Error() +
				"); the poll tries again every 2 minutes, and this alert repeats at most every " + p.FailureAlertEvery.String()})
	}
}

func days(d time.Duration) string { return strconv.Itoa(int(d/(24*time.Hour))) + " days" }
