package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/casefile"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
)

// Request is one operator action, as `sam remote invoke OpsFunction -e
// events/ops/<action>.json` or `make ops ACTION=…` sends it.
type Request struct {
	Action string `json:"action"`
	// Session is the order's session id, or any start of it that only one
	// order has (alerts and `list` name an order by oracle.ShortID).
	Session string `json:"session,omitempty"`
	// Email is `list`'s: the customer's address, whose orders are found
	// through Stripe's sessions (no order holds the address or its hash).
	Email string `json:"email,omitempty"`
	// AuthorisedBy and Reason are required by every action that changes
	// something (and by a reveal): who decided it and why, as recorded.
	AuthorisedBy string `json:"authorised_by,omitempty"`
	Reason       string `json:"reason,omitempty"`
	// Reveal shows the customer's query in `show`.
	Reveal bool `json:"reveal,omitempty"`
	// Mode is `deliver`'s choice for a quarantined order: cleaned or
	// regenerate.
	Mode string `json:"mode,omitempty"`
	// Tier and Query are `rerun`'s: what the customer asked for.
	Tier  string `json:"tier,omitempty"`
	Query string `json:"query,omitempty"`
	// Kind is `resend`'s mail kind; Force passes the once-per-kind guard
	// of an email already sent.
	Kind  string `json:"kind,omitempty"`
	Force bool   `json:"force,omitempty"`
	// Queue is `redrive`'s: mail (the mail dead letters) or the name of a
	// dead-letter queue (generate, mail-jobs, mail-events).
	Queue string `json:"queue,omitempty"`
	// From and To bound `report` (UTC days, inclusive); Day is the day of
	// `seal` and `verify-seal` (default: yesterday).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	Day  string `json:"day,omitempty"`
	// Show is `inbox`'s: the stored message to print, as its alert names it.
	Show string `json:"show,omitempty"`
	// TX is a transaction hash: `x402-confirm`'s settlement found on the
	// chain, or `refund`'s transfer back to an agent.
	TX string `json:"tx,omitempty"`
	// N is chat-grant's: how many free exchanges to give.
	N int `json:"n,omitempty"`
}

// Answer is what an action did: Message in a sentence, Text for a
// terminal, Data for a program.
type Answer struct {
	Action  string `json:"action"`
	OK      bool   `json:"ok"`
	Changed bool   `json:"changed"`
	Message string `json:"message"`
	Text    string `json:"text,omitempty"`
	Data    any    `json:"data,omitempty"`
}

// Orders is the order store (store.Orders).
type Orders interface {
	casefile.Orders
	MarkRefunded(ctx context.Context, sessionID string, r store.Refund) (bool, error)
	Rerun(ctx context.Context, sessionID string, tier oracle.Tier, query string) (bool, error)
	Regenerate(ctx context.Context, sessionID string) (bool, error)
	DeliverCleaned(ctx context.Context, sessionID string, v store.StoredVerdict) (bool, error)
	ReopenMail(ctx context.Context, sessionID string, kind oracle.MailKind) (bool, error)
}

// Index reads orders by state, and finds them by their name or the start
// of their session id (store.OrderIndex).
type Index interface {
	ByStatus(ctx context.Context, status oracle.Status, exp store.Expiring, each func(store.Indexed) error) error
	WithName(ctx context.Context, name string, limit int) ([]string, error)
	WithPrefix(ctx context.Context, prefix string, limit int) ([]string, error)
}

// Customers lists one Stripe mode's sessions by the customer's address
// (stripex.Client).
type Customers interface {
	SessionsByEmail(ctx context.Context, addr string, each func(oracle.Session) error) error
}

// Refunder makes refunds in one Stripe mode (stripex.Refunds).
type Refunder interface {
	RefundSession(ctx context.Context, sessionID, pi string) (stripex.Refund, error)
}

// Sender sends a job to one queue (queue.Sender).
type Sender interface {
	Send(ctx context.Context, j queue.Job) error
}

// Verdicts checks a stored verdict before it is shown, setting a corrupt
// one aside (repair.Guard).
type Verdicts interface {
	Check(ctx context.Context, o oracle.Order) (repair.Outcome, error)
}

// Auditor appends audit records (audit.Recorder).
type Auditor interface {
	Require(ctx context.Context, r audit.Record, id string) error
}

// Handler runs the operator's actions.
type Handler struct {
	Orders  Orders
	Index   Index
	Records casefile.Records
	Live    Refunder // nil when no live key is configured
	Test    Refunder // nil when no test key is configured
	// LiveCustomers and TestCustomers find a customer's sessions in each
	// mode; nil when that mode's key is not configured.
	LiveCustomers Customers
	TestCustomers Customers
	Generate      Sender
	Mail          Sender
	Audit         Auditor
	Hasher        *audit.Hasher
	// Verdicts is asked before `show` shows an order.
	Verdicts    Verdicts
	Cleaner     Cleaner
	Quarantined Quarantined
	Dead        DeadLetters
	Ledger      Releaser
	// DeadQueues are the dead-letter queues a redrive may name, by the
	// name the request gives (generate, mail-jobs).
	DeadQueues map[string]DeadQueue
	Seals      Sealer
	Figures    Figures
	// Inbox is the inbox bucket, where the support address's messages are.
	Inbox Messages
	Log   *slog.Logger
	Now   func() time.Time
	// StuckAfter is how long a PAID or GENERATING order may go without
	// progress before `list` shows it.
	StuckAfter time.Duration
	// Retention is how long a verdict the operator delivers is kept.
	Retention time.Duration
	// Payer and Claims confirm or void an agent's order whose settlement
	// was left unconfirmed.
	Payer  Payer
	Claims Claimer
	// Sisters Chat's accounts, conversations and subscriptions, and its
	// Stripe billing (nil when no Stripe key is configured).
	Chat         ChatAccounts
	ChatMessages ChatMessages
	ChatSubs     ChatSubscriptions
	ChatBilling  ChatBilling
	ChatRefunds  ChatRefunder
	// ChatDailyCap is the chat's fair-use cap (CHAT_DAILY_CAP), for show.
	ChatDailyCap int
}

// errRefused marks a request the action does not apply to: answered with
// ok false and the reason, never retried.
var errRefused = errors.New("refused")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errRefused, fmt.Sprintf(format, args...))
}

// action is one of the operator's actions; changes says whether it needs
// who authorised it and why.
type action struct {
	run     func(h *Handler, ctx context.Context, r Request) (Answer, error)
	changes bool
}

var actions = map[string]action{
	"list":         {(*Handler).list, false},
	"show":         {(*Handler).show, false},
	"deliver":      {(*Handler).deliver, true},
	"rerun":        {(*Handler).rerun, true},
	"refund":       {(*Handler).refund, true},
	"resend":       {(*Handler).resend, true},
	"redrive":      {(*Handler).redrive, true},
	"report":       {(*Handler).report, false},
	"seal":         {(*Handler).seal, true},
	"verify-seal":  {(*Handler).verifySeal, false},
	"inbox":        {(*Handler).inboxShow, false},
	"x402-confirm": {(*Handler).x402Confirm, true},
	"x402-void":    {(*Handler).x402Void, true},
	"chat":         {(*Handler).chatShow, false},
	"chat-grant":   {(*Handler).chatGrant, true},
	"chat-refund":  {(*Handler).chatRefund, true},
	"chat-erase":   {(*Handler).chatErase, true},
}

// Actions lists the action names.
func Actions() []string {
	names := make([]string, 0, len(actions))
	for n := range actions {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// maxNote bounds authorised_by and reason as recorded.
const maxNote = 200

// Handle runs r. A request the action does not apply to is answered with
// ok false and why; an error is a failure to be retried (the same request
// again changes nothing it already changed).
func (h *Handler) Handle(ctx context.Context, r Request) (Answer, error) {
	a, ok := actions[r.Action]
	if !ok {
		return Answer{Action: r.Action, Message: fmt.Sprintf("unknown action %q; the actions are %s", oracle.Clip(r.Action, 32), strings.Join(Actions(), ", "))}, nil
	}
	r.AuthorisedBy, r.Reason = strings.TrimSpace(r.AuthorisedBy), strings.TrimSpace(r.Reason)
	if (a.changes || r.Reveal) && (r.AuthorisedBy == "" || r.Reason == "") {
		return Answer{Action: r.Action, Message: r.Action + " changes something: say who authorised it (authorised_by) and why (reason)"}, nil
	}
	if len(r.AuthorisedBy) > maxNote || len(r.Reason) > maxNote {
		return Answer{Action: r.Action, Message: fmt.Sprintf("authorised_by and reason are at most %d characters", maxNote)}, nil
	}
	ans, err := a.run(h, ctx, r)
	ans.Action = r.Action
	if errors.Is(err, errRefused) || errors.Is(err, casefile.ErrNoOrder) {
		ans.OK, ans.Message = false, strings.TrimPrefix(err.Error(), errRefused.Error()+": ")
		// Not the message: it may echo the session id the operator typed.
		h.Log.InfoContext(ctx, "operator action refused", "action", r.Action)
		return ans, nil
	}
	if err != nil {
		h.Log.ErrorContext(ctx, "operator action failed", "action", r.Action, "error", err.Error())
		return Answer{}, fmt.Errorf("%s: %w", r.Action, err)
	}
	ans.OK = true
	h.Log.InfoContext(ctx, "operator action", "action", r.Action, "changed", ans.Changed)
	return ans, nil
}

// maxCandidates bounds the orders an ambiguous session prefix lists.
const maxCandidates = 10

// resolve finds the order r names: its name (oracle.ShortID, as alerts,
// log lines and `list` give it), its full session id, or any start of one
// that no other order shares. An ambiguous name or start is refused with
// the orders it could be.
func (h *Handler) resolve(ctx context.Context, r Request) (oracle.Order, error) {
	id := strings.TrimSpace(r.Session)
	if !oracle.ValidSessionID(id) && !validPrefix(id) {
		return oracle.Order{}, refuse("name the order: session is its name as alerts and list show it (cs_live_, cs_test_, x402_live_ or x402_test_ and 16 more characters, e.g. cs_live_a1B2c3D4e5F6g7H8), or any start of its id that only it has")
	}
	if o, found, err := h.Orders.Get(ctx, id); err != nil || found {
		return o, err
	}
	// One more than the list shows, to tell "these" from "these and more".
	var matches []string
	var err error
	if oracle.IsName(id) {
		// By the name index: a query, not a scan.
		matches, err = h.Index.WithName(ctx, id, maxCandidates+1)
	}
	if err == nil && len(matches) == 0 {
		// A shorter start, or an order written before orders had names.
		matches, err = h.Index.WithPrefix(ctx, id, maxCandidates+1)
	}
	if err != nil {
		return oracle.Order{}, err
	}
	switch len(matches) {
	case 0:
		return oracle.Order{}, refuse("no order's session starts with %s", id)
	case 1:
		o, found, err := h.Orders.Get(ctx, matches[0])
		if err == nil && !found {
			err = refuse("the order %s is gone", oracle.ShortID(matches[0]))
		}
		return o, err
	}
	// The whole ids: the operator picks one, and two candidates can share
	// a name when the start given is longer than it.
	more := ""
	if len(matches) > maxCandidates {
		matches, more = matches[:maxCandidates], ", and more"
	}
	return oracle.Order{}, refuse("more than one order's session starts with %s: give more of it (%s%s)", id, strings.Join(matches, ", "), more)
}

// record audits an operator action on o (zero for an action on no one
// order): one record per distinct request, so the same request twice is
// recorded once, with the first outcome.
func (h *Handler) record(ctx context.Context, r Request, o oracle.Order, outcome string) error {
	return h.recordOn(ctx, r, o, "", outcome)
}

// recordOn is record, on a chat account (its keyed hash) when account is
// set: the record names it as its email, never the address.
func (h *Handler) recordOn(ctx context.Context, r Request, o oracle.Order, account, outcome string) error {
	now := h.Now()
	rec := audit.OfOrder(h.Hasher, o, audit.SourceOperator, audit.EventOperator, audit.StatusOK, now, now)
	if o.SessionID == "" {
		rec.SessionCreated, rec.QueryHash = now.UTC(), ""
	}
	rec.Email = account
	rec.Operator = &audit.Operator{Action: r.Action, AuthorisedBy: r.AuthorisedBy, Reason: r.Reason, Outcome: outcome}
	digest := h.digest(r, o.SessionID)
	id := "operator-" + r.Action + "-" + digest
	if o.SessionID != "" {
		id = audit.RecordID(o.SessionID, audit.NameOperator, r.Action, digest)
	}
	if err := h.Audit.Require(ctx, rec, id); err != nil {
		return fmt.Errorf("record the action: %w", err)
	}
	return nil
}

// digest names the request r on session: what it asks, so that the same
// request twice is one (one record, one grant). A chat action adds its
// account (the address's keyed hash) and its number.
func (h *Handler) digest(r Request, session string) string {
	parts := []string{r.Action, session, r.AuthorisedBy, r.Reason, r.Mode, r.Tier,
		h.Hasher.Hash(r.Query), r.Kind, fmt.Sprint(r.Force), fmt.Sprint(r.Reveal), r.Queue, r.Day, r.TX}
	if strings.HasPrefix(r.Action, "chat") {
		parts = append(parts, h.Hasher.Email(r.Email), fmt.Sprint(r.N))
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// age is how long ago t was, rounded for a terminal.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	d := now.Sub(t)
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
