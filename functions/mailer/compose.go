package main

import (
	"fmt"
	"net/url"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/shared/oracle"
)

// compose renders the mail of kind from the stored order; next has
// decided that the order is owed it.
func (h *Handler) compose(kind oracle.MailKind, o oracle.Order) (letter.Message, error) {
	switch kind {
	case oracle.MailVerdict:
		a, err := oracle.ParseAnalysis(o.Tier, []byte(o.Verdict))
		if err != nil {
			return letter.Message{}, fmt.Errorf("stored verdict of %s: %w", oracle.ShortID(o.SessionID), err)
		}
		return letter.Verdict(h.Brand, o.Tier, o.Query, a, h.link(o))
	case oracle.MailSilentDrop:
		return letter.SilentDropNotice(h.Brand)
	case oracle.MailFailed:
		return letter.Notice(h.Brand, letter.Failed, h.link(o))
	case oracle.MailReview:
		if o.Failure == oracle.HoldAmountMismatch {
			return letter.Notice(h.Brand, letter.PaymentReview, h.link(o))
		}
		return letter.Notice(h.Brand, letter.Review, h.link(o))
	case oracle.MailDivergence:
		return letter.Notice(h.Brand, letter.Divergence, h.link(o))
	case oracle.MailRefund:
		return letter.Notice(h.Brand, letter.Refund, h.link(o))
	}
	return letter.Message{}, fmt.Errorf("unknown mail kind %q", kind)
}

// link is the order's result page.
func (h *Handler) link(o oracle.Order) string {
	return h.BaseURL + "/oracle/result?session_id=" + url.QueryEscape(o.SessionID)
}
