package audit

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	"42sisters.ai/oracle/shared/oracle"
)

// Status is a record's outcome.
type Status string

// Statuses (SPEC_ORACLE_AUDIT_TRAIL "Required fields").
const (
	StatusOK          Status = "OK"
	StatusError       Status = "ERROR"
	StatusCached      Status = "CACHED"
	StatusRegenerated Status = "REGENERATED"
	StatusEmailSent   Status = "EMAIL_SENT"
	StatusEmailFailed Status = "EMAIL_FAILED"
)

// The outcomes of an x402 payment's verification (AUDIT_TRAIL's x402
// records): every one but OK is a refusal or a doubt, with its reason in
// error_detail.
const (
	// StatusReplay: the authorization was claimed before (a replayed or
	// concurrently duplicated payment); nothing was settled for it again.
	StatusReplay Status = "REPLAY"
	// StatusInvalid: the payment failed the local checks (version, scheme,
	// network, asset, payee, amount, validity window, signature).
	StatusInvalid Status = "INVALID"
	// StatusVerifyFailed: the facilitator's /verify refused it.
	StatusVerifyFailed Status = "VERIFY_FAILED"
	// StatusSettleFailed: the facilitator's /settle refused it; no money
	// moved.
	StatusSettleFailed Status = "SETTLE_FAILED"
	// StatusSettleUnconfirmed: /settle's answer was lost and its retries
	// could not tell whether the money moved; the operator checks the
	// chain.
	StatusSettleUnconfirmed Status = "SETTLE_UNCONFIRMED"
	// StatusFacilitatorDown: the facilitator did not answer before the
	// settlement was asked for; no money moved.
	StatusFacilitatorDown Status = "FACILITATOR_DOWN"
	// StatusRetry: a payment sent again under its payment identifier,
	// answered from the order its first use made; nothing was claimed,
	// verified or settled for it again.
	StatusRetry Status = "RETRY"
	// StatusIdentifierConflict: a payment identifier used before came
	// with another payment or another request; refused (409), nothing
	// settled.
	StatusIdentifierConflict Status = "IDENTIFIER_CONFLICT"
)

// failed lists the statuses that describe a failure and so need error_detail.
var failed = map[Status]bool{StatusError: true, StatusEmailFailed: true,
	StatusReplay: true, StatusInvalid: true, StatusVerifyFailed: true, StatusSettleFailed: true, StatusSettleUnconfirmed: true, StatusFacilitatorDown: true,
	StatusIdentifierConflict: true}

// Failure reports whether s describes a failure, whose record carries its
// error_detail.
func (s Status) Failure() bool { return failed[s] }

// FailureStatuses returns the statuses that describe a failure, sorted:
// every record with one carries its error_detail.
func FailureStatuses() []Status {
	out := make([]Status, 0, len(failed))
	for s := range failed {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

var known = map[Status]bool{StatusOK: true, StatusError: true, StatusCached: true, StatusRegenerated: true, StatusEmailSent: true, StatusEmailFailed: true,
	StatusReplay: true, StatusInvalid: true, StatusVerifyFailed: true, StatusSettleFailed: true, StatusSettleUnconfirmed: true, StatusFacilitatorDown: true,
	StatusRetry: true, StatusIdentifierConflict: true}

// Source is the component that wrote a record.
type Source string

// Sources.
const (
	SourceWebhook      Source = "webhook"
	SourceResultPage   Source = "result_page"
	SourceCacheHit     Source = "cache_hit"
	SourceEmailService Source = "email_service"
	SourceGenerator    Source = "generator"
	// SourceReconcile: a paid session the health job claimed because its
	// webhook never arrived.
	SourceReconcile Source = "reconcile"
	// SourceHealth: one run of the health job; its records name no session.
	SourceHealth Source = "health"
	// SourceOperator: an action of the operator through the ops function.
	SourceOperator Source = "operator"
	// SourceInbox: a message that reached the support inbox, and the
	// autoresponse to it; a record names the message's order when it has one.
	SourceInbox Source = "inbox"
	// SourceX402: an agent's payment over x402, one record per
	// verification outcome; it names the order the payment was for, except
	// a payment refused by the local checks, which has none.
	SourceX402 Source = "x402"
	// SourceChat: Sisters Chat, one record per exchange and per
	// subscription event (Record.Chat); it names no session, and its email
	// field is the account (the address's keyed hash).
	SourceChat Source = "chat"
)

var sources = map[Source]bool{SourceWebhook: true, SourceResultPage: true, SourceCacheHit: true, SourceEmailService: true, SourceGenerator: true,
	SourceReconcile: true, SourceHealth: true, SourceOperator: true, SourceInbox: true, SourceX402: true, SourceChat: true}

// Sources returns every source, sorted: the values the audit table's
// source partition takes.
func Sources() []Source {
	out := make([]Source, 0, len(sources))
	for s := range sources {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Record is one audit record. Field names follow the spec; the fields after
// error_detail are this service's additions for reconciliation.
type Record struct {
	Timestamp   time.Time `json:"timestamp"`
	SessionID   string    `json:"session_id"`
	Tier        string    `json:"tier"` // as in the session's metadata, never normalised
	QueryHash   string    `json:"query_hash"`
	VerdictHash string    `json:"verdict_hash"`
	Email       string    `json:"email"` // keyed hash
	LatencyMS   int64     `json:"latency_ms"`
	Status      Status    `json:"status"`
	Source      Source    `json:"source"`
	ErrorDetail *string   `json:"error_detail"`

	// SessionCreated is when the Checkout Session was created. Records are
	// partitioned by it, so every record of a session, and every retried
	// write of one, lands in the same partition whatever day it is written.
	SessionCreated time.Time `json:"session_created"`
	Event          Event     `json:"event"`              // what happened (vocabulary.go)
	EventID        string    `json:"event_id,omitempty"` // the Stripe event id
	Livemode       bool      `json:"livemode"`
	AmountTotal    int64     `json:"amount_total"`
	Currency       string    `json:"currency"`
	// AmountRefunded is set on charge.refunded records: how much of the
	// payment Stripe has refunded so far, in the currency's minor unit.
	AmountRefunded int64  `json:"amount_refunded,omitempty"`
	OrderStatus    string `json:"order_status,omitempty"`
	// Smoke marks the smoke test's records: every report and count of the
	// log leaves them out.
	Smoke bool `json:"smoke,omitempty"`
	// Model is the model that answered (generator records).
	Model string `json:"model,omitempty"`
	// WaitMS is the customer's wait: from the payment (the order's paid_at)
	// to this record's event, set on the first verdict's verdict_generated
	// record (the verdict stored) and on the verdict email's mail_verdict
	// record (the email sent). latency_ms, by contrast, is one function's
	// own time.
	WaitMS int64 `json:"wait_ms,omitempty"`

	// Crosscheck is set on tmm_crosscheck records, Divergence on
	// regen_divergence_check records (SPEC_ORACLE_TMM_CROSSCHECK and
	// SPEC_ORACLE_REGEN_CONSISTENCY log entries, without the query preview:
	// the query is only ever a keyed hash here).
	Crosscheck *Crosscheck `json:"crosscheck,omitempty"`
	Divergence *Divergence `json:"divergence,omitempty"`
	// Filter is set on sos_filter records: what the content filter decided
	// at one gate, by entry id, never with the text it read.
	Filter *Filter `json:"filter,omitempty"`
	// Mail is set on mail_attempt records: one attempt of an email.
	Mail *MailAttempt `json:"mail,omitempty"`
	// Operator is set on operator_action records.
	Operator *Operator `json:"operator,omitempty"`
	// Inbox is set on the support inbox's records.
	Inbox *InboxMessage `json:"inbox,omitempty"`

	// The x402 form's fields (source x402): the settlement's transaction
	// hash once settled, the route paid, the price in USDC, the network
	// (CAIP-2) and the payer's keyed hash. The transaction hash is kept
	// whole: it is public on the chain, and a refund names it.
	TxHash     string  `json:"tx_hash,omitempty"`
	Endpoint   string  `json:"endpoint,omitempty"`
	AmountUSDC float64 `json:"amount_usdc,omitempty"`
	Network    string  `json:"network,omitempty"`
	Payer      string  `json:"payer,omitempty"`
	// PaymentID is the client's payment identifier (its idempotency key,
	// chosen by the agent: no personal data), when it sent one.
	PaymentID string `json:"payment_id,omitempty"`

	// Chat is set on the chat's records (source chat).
	Chat *Chat `json:"chat,omitempty"`

	// RecordID is the record's id (RecordID), unique for what it records:
	// the writer sets it on every line, since one object holds each of a
	// step's records (Writer.WriteStep). A record written before it was
	// kept has none; Decode gives it its object's, whose key named it.
	RecordID string `json:"record_id,omitempty"`
}

// Chat is one exchange of Sisters Chat, or one event of its subscription:
// counts and states, never a message's text.
type Chat struct {
	// Plan is what paid for an exchange: trial, granted or subscriber.
	Plan string `json:"plan,omitempty"`
	// Outcome is what became of the message: answered, model_failed,
	// trial_used or capped (the last three spend nothing).
	Outcome      string `json:"outcome,omitempty"`
	MessageChars int    `json:"message_chars,omitempty"`
	ReplyChars   int    `json:"reply_chars,omitempty"`
	// Filter is what the content filter did to the reply: pass,
	// regenerated (the first was quarantined) or apology (both were).
	Filter string `json:"filter,omitempty"`
	// Subscription, SubscriptionStatus and PeriodEnd are set on a
	// subscription event's record: Stripe's ids and state after it.
	Subscription       string     `json:"subscription,omitempty"`
	SubscriptionStatus string     `json:"subscription_status,omitempty"`
	PeriodEnd          *time.Time `json:"period_end,omitempty"`
	// Erasure is set on a chat_erased record, and only there.
	Erasure *Erasure `json:"erasure,omitempty"`
}

// Erasure is what an account's erasure deleted, counted, and the
// subscriptions it cancelled in Stripe first.
type Erasure struct {
	// Account: the account item, which held the address, was there.
	Account     bool `json:"account"`
	Messages    int  `json:"messages"`
	Tokens      int  `json:"signin_tokens"`
	RateEntries int  `json:"rate_entries"`
	// Other items of the account: its subscription's state.
	Other     int      `json:"other_items"`
	Cancelled []string `json:"subscriptions_cancelled,omitempty"`
}

// The chat's plans, outcomes and filter results.
const (
	ChatPlanTrial      = "trial"
	ChatPlanGranted    = "granted"
	ChatPlanSubscriber = "subscriber"

	ChatAnswered    = "answered"
	ChatModelFailed = "model_failed"
	ChatTrialUsed   = "trial_used"
	ChatCapped      = "capped"
	// ChatErased is a chat_erased record's outcome.
	ChatErased = "erased"

	ChatFilterPass        = "pass"
	ChatFilterRegenerated = "regenerated"
	ChatFilterApology     = "apology"
)

// InboxMessage is a message the support inbox received, as its records
// keep it: its key (a keyed hash of its Message-ID) and its sender's
// domain, never the address, the subject or the body. The sender's keyed
// hash is the record's email field.
type InboxMessage struct {
	MessageKey string `json:"message_key"`
	Domain     string `json:"sender_domain"`
	// Via is where the message was read: ses (received by SES) or graph
	// (a Microsoft 365 mailbox polled through Graph).
	Via string `json:"via"`
	// Outcome is what was done: "acknowledged" (an autoresponse queued), or
	// why none was (a skip reason: automatic, cooldown, no_reply...).
	Outcome string `json:"outcome"`
}

// Operator is one action of the operator: what was done, who authorised it
// and why, as they wrote it (never an address: records refuse one).
type Operator struct {
	Action       string `json:"action"`
	AuthorisedBy string `json:"authorised_by"`
	Reason       string `json:"reason"`
	// Outcome says what the action did, e.g. "refunded re_..." or
	// "already refunded".
	Outcome string `json:"outcome"`
}

// MailAttempt is one attempt to send an email (SPEC_ORACLE_EMAIL_RETRY):
// the same message hash on every attempt shows they sent the same bytes.
type MailAttempt struct {
	Kind    oracle.MailKind `json:"mail_kind"`
	Attempt int             `json:"attempt"` // 0 is the first
	// MessageHash is the keyed hash of the subject, text and HTML sent.
	MessageHash string `json:"message_hash"`
	Transport   string `json:"transport"`
	Class       string `json:"class,omitempty"` // the failure class, when it failed
	Code        string `json:"code,omitempty"`  // the server's error code, when it gave one
}

// Filter is one content filter decision (SPEC_ORACLE_SOS_FILTER).
type Filter struct {
	Gate     string          `json:"gate"`   // generator (gate 1) or mailer (gate 2)
	Action   string          `json:"action"` // PASS, REPLACE, QUARANTINE, or REWRITE: gate 1 had the model write it again
	Reason   string          `json:"reason,omitempty"`
	TermIDs  []string        `json:"term_ids"`
	Version  string          `json:"version"`
	MailKind oracle.MailKind `json:"mail_kind,omitempty"`
}

// FilterRewrite is a Filter's Action when gate 1 sent a verdict's first
// writing, which it would have repaired or held, back to the model to be
// written again.
const FilterRewrite = "REWRITE"

// Crosscheck is the decision of one TMM crosscheck.
type Crosscheck struct {
	VerdictLabel     string   `json:"verdict_label"`
	CoherenceScore   float64  `json:"coherence_score"`
	Threshold        float64  `json:"threshold"`
	Phi              float64  `json:"phi"`
	Approved         bool     `json:"approved"`
	Flags            []string `json:"flags"`
	CrosscheckReason string   `json:"crosscheck_reason"`
	// Rule is the rule that decided: formula (C against Ω) or majority (the
	// formula approved; the verdict contradicts most of its dimensions).
	Rule string `json:"rule"`
}

// Divergence compares a regenerated verdict with the first one.
type Divergence struct {
	OriginalVerdict string `json:"original_verdict"` // GREEN, AMBER, RED, NULL or UNKNOWN
	RegenVerdict    string `json:"regen_verdict"`
	TopLevelMatch   bool   `json:"top_level_match"`
	DivergenceLevel string `json:"divergence_level"` // none, minor, significant, unknown
}

// OfOrder is the record of event on o at now: the order's identity, keyed
// hashes and payment fields, with the latency measured from started. The
// caller adds what is particular to the event (detail, model, event id),
// and the address's keyed hash where it has the address (the claim, from
// the session; the mailer, from Stripe at send time): the order keeps no
// trace of it.
func OfOrder(h *Hasher, o oracle.Order, source Source, event Event, status Status, started, now time.Time) Record {
	return Record{
		Timestamp:      now.UTC(),
		SessionID:      o.SessionID,
		Tier:           string(o.Tier),
		QueryHash:      h.Hash(o.Query),
		VerdictHash:    o.VerdictHash,
		LatencyMS:      max(now.Sub(started).Milliseconds(), 0),
		Status:         status,
		Source:         source,
		SessionCreated: o.SessionCreated,
		Event:          event,
		Livemode:       o.Livemode,
		AmountTotal:    o.AmountTotal,
		Currency:       o.Currency,
		OrderStatus:    string(o.Status),
		Smoke:          o.Smoke,
	}
}

// WaitBudget is the longest a customer should wait from payment to verdict:
// the spec's 60,000 ms (SPEC_ORACLE_AUDIT_TRAIL VC-2).
const WaitBudget = 60 * time.Second

// Wait is the customer's wait from paid to at (WaitMS), 0 when the order
// has no payment time.
func Wait(paid *time.Time, at time.Time) time.Duration {
	if paid == nil || at.Before(*paid) {
		return 0
	}
	return at.Sub(*paid)
}

// Detail returns a pointer for ErrorDetail.
func Detail(s string) *string { return &s }

// emailPattern is the VC-4 check: no record may contain an email address.
var emailPattern = regexp.MustCompile(`[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}`)

// HasEmail reports whether s holds something shaped like an email address.
func HasEmail(s string) bool { return emailPattern.MatchString(s) }

// WithoutAddresses is s with everything shaped like an email address
// replaced by "[address]": for a detail that echoes text a stranger sent
// (an x402 payment's fields), which must still make a valid record.
func WithoutAddresses(s string) string { return emailPattern.ReplaceAllString(s, "[address]") }

// Validate checks r against the schema before it is written.
func (r Record) Validate() error {
	_, err := r.encode()
	return err
}

// encode validates r and returns the JSON it is written as.
func (r Record) encode() ([]byte, error) {
	// A record names its session, except a health run's (never), an
	// operator action on no one order (a queue's redrive, a seal) and an
	// inbox message that names no order.
	optional := r.Source == SourceOperator || r.Source == SourceInbox || (r.Source == SourceX402 && r.Status == StatusInvalid)
	chat := r.Source == SourceChat
	chatMail := r.Source == SourceEmailService && r.chatMail()
	switch {
	case r.Timestamp.IsZero() || r.SessionCreated.IsZero():
		return nil, fmt.Errorf("audit record: timestamp or session_created is missing")
	case r.Source == SourceHealth && r.SessionID != "":
		return nil, fmt.Errorf("audit record: a health run's record names no session")
	case r.Source == SourceInbox && r.Inbox == nil:
		return nil, fmt.Errorf("audit record: an inbox record names its message")
	case chat && (r.SessionID != "" || r.Chat == nil || !isHash(r.Email)):
		return nil, fmt.Errorf("audit record: a chat record names its account and its chat block, and no session")
	case !chat && r.Chat != nil:
		return nil, fmt.Errorf("audit record: only a chat record has a chat block")
	case chat && (r.Event == EventChatErased) != (r.Chat.Erasure != nil):
		return nil, fmt.Errorf("audit record: a chat erasure, and only one, has its erasure block")
	case chat && r.Event == EventChatErased && r.Chat.Subscription != "":
		return nil, fmt.Errorf("audit record: a chat erasure lists the subscriptions it cancelled in its erasure block")
	case chat && r.Event != EventChatErased && (r.Event == EventChatExchange) == (r.Chat.Subscription != ""):
		return nil, fmt.Errorf("audit record: a chat exchange names no subscription, a subscription event names one")
	case chatMail && (r.SessionID != "" || !isHash(r.Email)):
		return nil, fmt.Errorf("audit record: a chat account's email names its account and no session")
	case r.Source != SourceHealth && !chat && !chatMail && !(optional && r.SessionID == "") && !oracle.ValidSessionID(r.SessionID):
		return nil, fmt.Errorf("audit record: session_id is invalid")
	case !sources[r.Source]:
		return nil, fmt.Errorf("audit record: unknown source %q", r.Source)
	case !known[r.Status]:
		return nil, fmt.Errorf("audit record: unknown status %q", r.Status)
	case failed[r.Status] && (r.ErrorDetail == nil || *r.ErrorDetail == ""):
		return nil, fmt.Errorf("audit record: status %s needs error_detail", r.Status)
	case !failed[r.Status] && r.ErrorDetail != nil:
		return nil, fmt.Errorf("audit record: status %s must not carry error_detail", r.Status)
	case r.Event == "":
		return nil, fmt.Errorf("audit record: event is missing")
	case (r.Event == EventOperator) != (r.Operator != nil && r.Operator.AuthorisedBy != "" && r.Operator.Reason != ""):
		return nil, fmt.Errorf("audit record: an operator action, and only one, names who authorised it and why")
	case r.LatencyMS < 0:
		return nil, fmt.Errorf("audit record: negative latency")
	case (r.Source == SourceX402) != (r.Event == EventX402Payment):
		return nil, fmt.Errorf("audit record: an x402 payment's record, and only one, has source x402")
	case r.Source == SourceX402 && (r.Endpoint == "" || r.Network == ""):
		return nil, fmt.Errorf("audit record: an x402 record names its endpoint and network")
	case r.Source == SourceX402 && r.Status == StatusOK && r.TxHash == "":
		return nil, fmt.Errorf("audit record: a settled x402 payment names its transaction")
	}
	hashes := map[string]string{"email": r.Email, "query_hash": r.QueryHash, "verdict_hash": r.VerdictHash, "payer": r.Payer}
	if r.Mail != nil {
		hashes["mail.message_hash"] = r.Mail.MessageHash
	}
	for name, h := range hashes {
		if h != "" && !isHash(h) {
			return nil, fmt.Errorf("audit record: %s is not a keyed hash", name)
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("audit record: %w", err)
	}
	if emailPattern.Match(b) {
		return nil, fmt.Errorf("audit record: contains an email address")
	}
	return b, nil
}

// chatMail reports whether r records an email owed to a chat account (its
// delivery, an attempt, or gate 2's decision on it), which names the
// account instead of an order.
func (r Record) chatMail() bool {
	switch {
	case r.Mail != nil:
		return oracle.ChatMail(r.Mail.Kind)
	case r.Filter != nil:
		return oracle.ChatMail(r.Filter.MailKind)
	}
	return r.Event == MailEvent(oracle.MailChatSignIn) || r.Event == MailEvent(oracle.MailChatPaymentFailed)
}

var hashPattern = regexp.MustCompile(`^` + regexp.QuoteMeta(HashPrefix) + `[0-9a-f]{32}$`)

func isHash(s string) bool { return hashPattern.MatchString(s) }
