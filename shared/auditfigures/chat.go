package auditfigures

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/audit"
)

// Chat is Sisters Chat's figures, from its records (source chat): what
// became of the messages, and the subscription's trials, conversions,
// subscribers, monthly recurring revenue and churn. The subscription's
// figures are as the range's records show them: a subscription with no
// event in the range is not seen, so a range that starts after a
// subscription's last event undercounts it (a renewal's invoice.paid is an
// event every month, so a range of a month or more sees every live one).
type Chat struct {
	// Exchanges counts the exchange records by plan and outcome.
	Exchanges []ChatExchanges `json:"exchanges"`
	// Apologies is the answered exchanges whose reply the filter
	// quarantined twice: replaced by the fixed apology.
	Apologies int64 `json:"apologies"`
	// TrialsStarted is the accounts with an answered trial exchange;
	// TrialsConverted, of those, the ones whose subscription granted
	// access in the range.
	TrialsStarted   int64 `json:"trials_started"`
	TrialsConverted Ratio `json:"trials_converted"`
	// ActiveSubscribers is the subscriptions whose last state in the range
	// grants access (active, trialing, past_due); Recurring their monthly
	// revenue, each at its last paid invoice's amount, by mode and
	// currency.
	ActiveSubscribers int64           `json:"active_subscribers"`
	Recurring         []ChatRecurring `json:"monthly_recurring_revenue"`
	// Churn is the subscriptions that granted access in the range and
	// ended in it (last state canceled, unpaid or incomplete_expired) over
	// all that granted access in it.
	Churn Ratio `json:"churn"`
}

// ChatExchanges is how many exchange records have one plan and outcome.
type ChatExchanges struct {
	Plan    string `json:"plan"`
	Outcome string `json:"outcome"`
	Records int64  `json:"records"`
}

// ChatRecurring is the monthly recurring revenue of one mode and currency.
type ChatRecurring struct {
	Live        bool   `json:"livemode"`
	Currency    string `json:"currency"`
	Subscribers int64  `json:"subscribers"`
	Amount      int64  `json:"amount"`
}

// grantingStatuses and endedStatuses are Stripe's subscription statuses
// that grant access, and those that end it.
var (
	grantingStatuses = []string{"active", "trialing", "past_due"}
	endedStatuses    = []string{"canceled", "unpaid", "incomplete_expired"}
)

// chatSubscription is what the range's records say of one subscription.
type chatSubscription struct {
	account  string
	status   string
	at       time.Time // the last state's record
	granted  bool      // some state in the range granted access
	live     bool
	amount   int64 // its last paid invoice
	currency string
	paidAt   time.Time
}

// chatAccumulator counts the chat's records.
type chatAccumulator struct {
	exchanges map[[2]string]int64
	apologies int64
	trials    map[string]bool
	subs      map[string]*chatSubscription
}

func newChatAccumulator() *chatAccumulator {
	return &chatAccumulator{exchanges: map[[2]string]int64{}, trials: map[string]bool{}, subs: map[string]*chatSubscription{}}
}

func (a *chatAccumulator) add(r audit.Record) {
	if r.Source != audit.SourceChat || r.Chat == nil {
		return
	}
	c := r.Chat
	switch r.Event {
	case audit.EventChatExchange:
		a.exchanges[[2]string{c.Plan, c.Outcome}]++
		if c.Outcome != audit.ChatAnswered {
			return
		}
		if c.Filter == audit.ChatFilterApology {
			a.apologies++
		}
		if c.Plan == audit.ChatPlanTrial {
			a.trials[r.Email] = true
		}
	case audit.EventChatSubscription:
		s := a.subs[c.Subscription]
		if s == nil {
			s = &chatSubscription{}
			a.subs[c.Subscription] = s
		}
		if !r.Timestamp.Before(s.at) {
			s.status, s.at, s.account, s.live = c.SubscriptionStatus, r.Timestamp, r.Email, r.Livemode
		}
		if slices.Contains(grantingStatuses, c.SubscriptionStatus) {
			s.granted = true
		}
		if r.AmountTotal > 0 && !r.Timestamp.Before(s.paidAt) {
			s.amount, s.currency, s.paidAt = r.AmountTotal, strings.ToLower(r.Currency), r.Timestamp
		}
	}
}

func (a *chatAccumulator) figures() Chat {
	c := Chat{Exchanges: []ChatExchanges{}, Recurring: []ChatRecurring{}, Apologies: a.apologies, TrialsStarted: int64(len(a.trials))}
	for k, n := range a.exchanges {
		c.Exchanges = append(c.Exchanges, ChatExchanges{Plan: k[0], Outcome: k[1], Records: n})
	}
	slices.SortFunc(c.Exchanges, func(x, y ChatExchanges) int {
		return cmp.Or(strings.Compare(x.Plan, y.Plan), strings.Compare(x.Outcome, y.Outcome))
	})
	subscribed := map[string]bool{}
	recurring := map[ChatRecurring]*ChatRecurring{}
	var granted, ended int64
	for _, s := range a.subs {
		if !s.granted {
			continue
		}
		granted++
		subscribed[s.account] = true
		switch {
		case slices.Contains(endedStatuses, s.status):
			ended++
		case slices.Contains(grantingStatuses, s.status):
			c.ActiveSubscribers++
			k := ChatRecurring{Live: s.live, Currency: s.currency}
			if recurring[k] == nil {
				recurring[k] = &ChatRecurring{Live: s.live, Currency: s.currency}
			}
			recurring[k].Subscribers++
			recurring[k].Amount += s.amount
		}
	}
	var converted int64
	for account := range a.trials {
		if subscribed[account] {
			converted++
		}
	}
	c.TrialsConverted = ratio(converted, c.TrialsStarted)
	c.Churn = ratio(ended, granted)
	for _, r := range recurring {
		c.Recurring = append(c.Recurring, *r)
	}
	slices.SortFunc(c.Recurring, func(x, y ChatRecurring) int {
		if x.Live != y.Live {
			if x.Live {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Currency, y.Currency)
	})
	return c
}
