package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
)

func TestNextStepOfAMailJobFollowsItsOrder(t *testing.T) {
	order := func(s oracle.Status) oracle.Order { return oracle.Order{SessionID: "cs_test_a", Status: s} }
	agent := func(o oracle.Order) oracle.Order {
		o.SessionID = "x402_test_" + strings.Repeat("a", 32)
		return o
	}
	ready := order(oracle.StatusReady)
	ready.Verdict = `{"verdict":"GREEN"}`
	diverged := ready
	diverged.Divergence = oracle.DivergenceSignificant
	minor := ready
	minor.Divergence = oracle.DivergenceMinor
	tests := []struct {
		name  string
		kind  oracle.MailKind
		order oracle.Order
		found bool
		want  step
	}{
		{"no order", oracle.MailVerdict, oracle.Order{}, false, stepUnknownOrder},
		{"verdict stored", oracle.MailVerdict, ready, true, stepSend},
		{"verdict not stored yet", oracle.MailVerdict, order(oracle.StatusGenerating), true, stepNotOwed},
		{"ready without a verdict", oracle.MailVerdict, order(oracle.StatusReady), true, stepNotOwed},
		{"verdict quarantined: its follow-ups instead", oracle.MailVerdict, order(oracle.StatusQuarantined), true, stepFollowUps},
		{"divergence of a quarantined verdict", oracle.MailDivergence, order(oracle.StatusQuarantined), true, stepFollowUps},
		{"significant divergence", oracle.MailDivergence, diverged, true, stepSend},
		{"minor divergence", oracle.MailDivergence, minor, true, stepNotOwed},
		{"silent drop", oracle.MailSilentDrop, order(oracle.StatusDropped), true, stepSend},
		{"silent drop of a paid order", oracle.MailSilentDrop, order(oracle.StatusPaid), true, stepNotOwed},
		{"failure notice", oracle.MailFailed, order(oracle.StatusFailed), true, stepSend},
		{"failure notice after a verdict", oracle.MailFailed, ready, true, stepNotOwed},
		{"review notice of a held order", oracle.MailReview, order(oracle.StatusHeld), true, stepSend},
		{"review notice of a quarantined order", oracle.MailReview, order(oracle.StatusQuarantined), true, stepSend},
		{"review notice after a cleaned delivery", oracle.MailReview, ready, true, stepNotOwed},
		{"refund notice of a refunded order", oracle.MailRefund, order(oracle.StatusRefunded), true, stepSend},
		{"an agent's verdict: no address to write to", oracle.MailVerdict, agent(ready), true, stepNotOwed},
		{"an agent's failure: no address to write to", oracle.MailFailed, agent(order(oracle.StatusFailed)), true, stepNotOwed},
		{"an agent's refund: no address to write to", oracle.MailRefund, agent(order(oracle.StatusRefunded)), true, stepNotOwed},
		{"refund notice of an order not refunded", oracle.MailRefund, ready, true, stepNotOwed},
		{"an unknown kind is composed, and fails", "postcard", ready, true, stepSend},
	}
	for _, tc := range tests {
		if got := next(tc.kind, tc.order, tc.found); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestOutcomeOfASendFollowsItsClassAndTheSchedule(t *testing.T) {
	schedule := []time.Duration{0, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}
	busy := &mail.Error{Class: mail.Transient, Status: 503}
	tests := []struct {
		name    string
		err     error
		attempt int
		want    outcome
		wait    time.Duration
	}{
		{"sent", nil, 0, sent, 0},
		{"first attempt failed", busy, 0, retry, 5 * time.Minute},
		{"second attempt failed", busy, 1, retry, 30 * time.Minute},
		{"third attempt failed", busy, 2, retry, 2 * time.Hour},
		{"the last attempt failed", busy, 3, deadLetter, 0},
		{"wrapped transient", fmt.Errorf("send: %w", busy), 0, retry, 5 * time.Minute},
		{"Retry-After later than the step", &mail.Error{Class: mail.Transient, Status: 429, RetryAfter: 40 * time.Minute}, 1, retry, 40 * time.Minute},
		{"Retry-After sooner than the step", &mail.Error{Class: mail.Transient, Status: 429, RetryAfter: 2 * time.Minute}, 0, retry, 5 * time.Minute},
		{"Retry-After on the last attempt", &mail.Error{Class: mail.Transient, Status: 429, RetryAfter: time.Minute}, 3, deadLetter, 0},
		{"permanent on the first attempt", &mail.Error{Class: mail.Permanent, Status: 400}, 0, refused, 0},
		{"blocked on the last attempt", &mail.Error{Class: mail.Blocked, Status: 403}, 3, blocked, 0},
		{"a failure nobody classified", errors.New("transport"), 0, retry, 5 * time.Minute},
	}
	for _, tc := range tests {
		got, wait := afterSend(tc.err, tc.attempt, schedule)
		if got != tc.want || wait != tc.wait {
			t.Errorf("%s: %s after %s, want %s after %s", tc.name, got, wait, tc.want, tc.wait)
		}
	}
}

func TestScheduleSetting(t *testing.T) {
	tests := []struct {
		in      string
		want    []time.Duration
		problem string
	}{
		{DefaultSchedule, []time.Duration{0, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}, ""},
		{"0, 1s, 2s", []time.Duration{0, time.Second, 2 * time.Second}, ""},
		{"0", []time.Duration{0}, ""},
		{"5m,30m", nil, "at once"},
		{"0,-1s", nil, "negative"},
		{"0,soon", nil, "not a duration"},
		{"0,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s", nil, "at most 10"},
	}
	for _, tc := range tests {
		got, err := parseSchedule(tc.in)
		if tc.problem != "" {
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("%q: %v, want a problem saying %q", tc.in, err, tc.problem)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
}
