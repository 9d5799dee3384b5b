package main

import (
	"errors"
	"fmt"
	"testing"

	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
)

func TestNextStepOfAMailJobFollowsItsOrder(t *testing.T) {
	order := func(s oracle.Status) oracle.Order { return oracle.Order{SessionID: "cs_test_a", Status: s} }
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
		{"an unknown kind is composed, and fails", "postcard", ready, true, stepSend},
	}
	for _, tc := range tests {
		if got := next(tc.kind, tc.order, tc.found); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestOutcomeOfASendFollowsItsFailureClass(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want outcome
	}{
		{"sent", nil, sent},
		{"SES did not answer", &mail.Error{Class: mail.Transient}, retry},
		{"throttled", &mail.Error{Class: mail.Transient, Code: "TooManyRequestsException", Status: 429}, retry},
		{"wrapped temporary", fmt.Errorf("send: %w", &mail.Error{Class: mail.Transient}), retry},
		{"account blocked", &mail.Error{Class: mail.Blocked, Code: "AccountSuspendedException", Status: 400}, blocked},
		{"message refused", &mail.Error{Class: mail.Permanent, Code: "MessageRejected", Status: 400}, refused},
		{"a failure nobody classified", errors.New("transport"), refused},
	}
	for _, tc := range tests {
		if got := afterSend(tc.err); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
