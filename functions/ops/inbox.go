package main

import (
	"context"
	"errors"
	"time"

	"42sisters.ai/oracle/shared/inbox"
)

// Messages reads the inbox bucket (inbox.Messages).
type Messages interface {
	Get(ctx context.Context, key string) ([]byte, time.Time, error)
}

// inboxShow prints a message the support address received, as its alert
// names it (INBOX_MESSAGE, INBOX_FAILED): the sender's address and the
// body are the operator's to read, so they are in the answer, never in a
// log or a record.
func (h *Handler) inboxShow(ctx context.Context, r Request) (Answer, error) {
	if r.Show == "" {
		return Answer{}, refuse("name the message: SHOW is the id its alert gives (make ops ACTION=inbox SHOW=…)")
	}
	object, ok := inbox.Object(r.Show)
	if !ok {
		return Answer{}, refuse("SHOW is a stored message's id: letters, digits and dashes, as its alert gives it")
	}
	raw, at, err := h.Inbox.Get(ctx, object)
	if errors.Is(err, inbox.ErrGone) {
		return Answer{}, refuse("no message is stored as %s (the inbox bucket keeps each one for its retention)", object)
	}
	if err != nil {
		return Answer{}, err
	}
	return Answer{Message: "the message stored as " + object + ", received " + at.UTC().Format(time.RFC3339),
		Text: inbox.Show(raw)}, nil
}
