package main

import (
	"context"
	"fmt"
	"strings"
)

// address is an order's recipient as Stripe's session names it, and
// whether it is on the suppression list, read while the delivery's claim
// reads the order: the session's mode is in its id (cs_live_…, cs_test_…),
// so the read need not wait for the order.
type address struct {
	h         *Handler
	sessionID string
	// live is the mode the read was made in; started is false when the id
	// did not tell it, and wait reads in the order's mode.
	live, started bool
	done          chan struct{}
	cancel        context.CancelFunc
	to            string
	suppressed    bool
	err           error
}

// lookUp starts reading the recipient of the session's email.
func (h *Handler) lookUp(ctx context.Context, sessionID string) *address {
	a := &address{h: h, sessionID: sessionID, done: make(chan struct{})}
	switch {
	case strings.HasPrefix(sessionID, "cs_live_"):
		a.live, a.started = true, true
	case strings.HasPrefix(sessionID, "cs_test_"):
		a.started = true
	default:
		close(a.done)
		return a
	}
	ctx, a.cancel = context.WithCancel(ctx)
	go func() {
		defer close(a.done)
		a.to, a.suppressed, a.err = h.readAddress(ctx, sessionID, a.live)
	}()
	return a
}

// wait returns the recipient of the order's email, and whether it is
// suppressed; the order's mode (live) is the truth, and a read made in
// another is made again.
func (a *address) wait(ctx context.Context, live bool) (to string, suppressed bool, err error) {
	<-a.done
	if !a.started || a.live != live {
		return a.h.readAddress(ctx, a.sessionID, live)
	}
	return a.to, a.suppressed, a.err
}

// stop ends a read no longer needed and waits for it: nothing outlives the
// job that started it.
func (a *address) stop() {
	if a.cancel != nil {
		a.cancel()
	}
	<-a.done
}

// readAddress reads the session's address from Stripe at send time
// (customer_details.email, then customer_email) and, when there is one,
// whether it is on the suppression list.
func (h *Handler) readAddress(ctx context.Context, sessionID string, live bool) (to string, suppressed bool, err error) {
	src := h.Live
	if !live {
		src = h.Test
	}
	if src == nil {
		return "", false, fmt.Errorf("no Stripe key for %s sessions", map[bool]string{true: "live", false: "test"}[live])
	}
	s, err := src.RetrieveSession(ctx, sessionID)
	if err != nil {
		return "", false, fmt.Errorf("recipient: %w", err)
	}
	if s.Email == "" {
		return "", false, nil
	}
	suppressed, err = h.suppressed(ctx, s.Email)
	if err != nil {
		return "", false, err
	}
	return s.Email, suppressed, nil
}
