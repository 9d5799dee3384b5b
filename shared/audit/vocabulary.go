package audit

import (
	"fmt"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/oracle"
)

// Event names what a record records. Every event the service writes is
// defined here, once.
type Event string

// The events.
const (
	// Stripe's events, as the webhook received them: the record of the
	// session's claim (paid, dropped, awaiting or failed payment).
	EventCheckoutCompleted Event = "checkout.session.completed"
	EventAsyncSucceeded    Event = "checkout.session.async_payment_succeeded"
	EventAsyncFailed       Event = "checkout.session.async_payment_failed"
	// Stripe's money events after a payment: a refund (made by the
	// operator's action or in the Dashboard), a dispute the cardholder
	// opened, and Radar's early warning of a fraudulent payment.
	EventChargeRefunded   Event = "charge.refunded"
	EventDisputeCreated   Event = "charge.dispute.created"
	EventEarlyFraudWarned Event = "radar.early_fraud_warning.created"
	// EventOperator is one action of the operator on an order (the ops
	// function), with who authorised it and why (Record.Operator).
	EventOperator Event = "operator_action"
	// EventLanding is the claim made by the result page when the customer
	// arrived before the webhook.
	EventLanding Event = "landing"

	// The generator's: a verdict stored, stored again after its retention,
	// or no verdict (the cause in error_detail); each crosscheck of a reply;
	// each decision of the content filter (the mailer's gate writes it
	// too); a regenerated verdict compared with the one emailed.
	EventVerdictGenerated   Event = "verdict_generated"
	EventVerdictRegenerated Event = "verdict_regenerated"
	EventGenerationFailed   Event = "generation_failed"
	EventCrosscheck         Event = "tmm_crosscheck"
	EventFilter             Event = "sos_filter"
	EventDivergenceCheck    Event = "regen_divergence_check"

	// EventVerdictServed is a stored verdict served by the verdict API: one
	// record per session and hour, however often the page is loaded.
	EventVerdictServed Event = "verdict_served"

	// EventMailAttempt is one attempt to send an email, with the message's
	// hash and the attempt's number (mail_<kind> records the delivery's
	// outcome).
	EventMailAttempt Event = "mail_attempt"

	// EventReconcile is the claim the health job made of a paid session
	// that had no order; EventHealthRun is one run of the health job.
	EventReconcile Event = "reconcile"
	EventHealthRun Event = "health_run"

	// EventInboxMessage is a message that reached the support inbox, with
	// what was done about it; EventAutoresponse the delivery of its
	// acknowledgement (each attempt is an EventMailAttempt).
	EventInboxMessage Event = "inbox_message"
	EventAutoresponse Event = "mail_autoresponse"

	// EventX402Payment is one verification outcome of an agent's x402
	// payment (Record's x402 fields; the status says which).
	EventX402Payment Event = "x402_payment"

	// EventChatExchange is one message of Sisters Chat and what became of
	// it; EventChatSubscription one of Stripe's events about a chat
	// subscription, as applied (Record.Chat).
	EventChatExchange     Event = "chat_exchange"
	EventChatSubscription Event = "chat_subscription"
	// EventChatErased is a chat account erased at its owner's request
	// (DELETE /api/chat/account): what was deleted, counted, and the
	// subscriptions cancelled (Record.Chat.Erasure); never the address.
	EventChatErased Event = "chat_erased"
)

// MailEvent is the event of one delivery of a mail kind ("mail_verdict").
func MailEvent(kind oracle.MailKind) Event { return Event("mail_" + string(kind)) }

// RecordName says what a record's id records. With the session, and the
// parts that tell a session's several records of one name apart, it makes
// the id unique for what happened, so a retried write finds its record
// already there and the log holds each event once.
type RecordName string

// The record names, with the parts RecordID takes after them.
const (
	NamePaid          RecordName = "paid"           // the claim of a paid session
	NameDropped       RecordName = "dropped"        // the claim of a silently dropped session
	NamePaymentFailed RecordName = "payment_failed" // an asynchronous payment that failed

	NameGenerated            RecordName = "generated"             // the first verdict
	NameRegenerated          RecordName = "regenerated"           // -<generated at, Unix seconds>
	NameAttempt              RecordName = "attempt"               // -<attempt>: a failed generation
	NameHeld                 RecordName = "held"                  // the crosscheck held the order
	NameCrosscheck           RecordName = "crosscheck"            // -<attempt>-<reply>
	NameFilterGenerator      RecordName = "filter-generator"      // -<attempt>: gate 1's decision
	NameFilterRewrite        RecordName = "filter-rewrite"        // -<attempt>: gate 1 sent the first writing back
	NameQuarantinedGenerator RecordName = "quarantined-generator" // gate 1 stopped the verdict
	NameDivergence           RecordName = "divergence"            // -<generated at, Unix seconds>

	NameMail       RecordName = "mail"        // -<mail kind>: a delivery
	NameFilterMail RecordName = "filter-mail" // -<mail kind>: gate 2's decision
	// NameMailAttempt: -<mail kind>-<attempt>: one attempt of a delivery;
	// -<mail kind>-<attempt>-blocked-<hour> (PartBlocked, Hourly): an
	// attempt the account could not send, which is not spent and runs
	// again under its number.
	NameMailAttempt RecordName = "mail-attempt"

	// NameServed: -<hour, Unix seconds>: the verdict served in that hour
	// (the record of its first load; the CacheHits metric counts each).
	NameServed RecordName = "served"

	NameRefunded      RecordName = "refunded"       // the full refund of the payment
	NameRefundPartial RecordName = "refund-partial" // -<amount refunded so far>: a partial refund
	NameDispute       RecordName = "dispute"        // -<dispute id>
	NameFraudWarning  RecordName = "fraud-warning"  // -<warning id>
	// NameOperator: -<action>-<request>: one operator action, the request
	// being a digest of what was asked, so the same request twice is
	// recorded once.
	NameOperator RecordName = "operator"

	// NameX402: -<status>-<request>: one verification outcome of an x402
	// payment's order, the request being the invocation that met it (the
	// API's requests are never retried, so each is one event). A payment
	// refused before it has an order, or replayed, is anyone's to send
	// again: its record is "x402-<payer>.x402-<status>-<reason>-<hour>"
	// (Hourly), one per payer (the hex of the keyed hash of the address its
	// signature proves, or "unproven"), reason and hour.
	NameX402 RecordName = "x402"

	// An inbox message's records, named with InboxRecordID: its receipt,
	// and the delivery of its autoresponse (NameMail-autoresponse, with
	// NameMailAttempt-autoresponse-<attempt> for each attempt).
	NameReceived RecordName = "received"
)

// PartBlocked is the part of an attempt's record id (NameMailAttempt) that
// names an attempt the account could not send.
const PartBlocked = "blocked"

// ChatMailRecordID is the id of a record of the email of kind owed to a
// chat account for nonce (the request or invoice it answers):
// "chat-<kind>-<account's hex>-<nonce>.<name>", then "-<part>" for each.
func ChatMailRecordID(kind oracle.MailKind, account, nonce string, name RecordName, parts ...any) string {
	return RecordID(chatMailPrefix(kind, account)+nonce, name, parts...)
}

// chatMailPrefix begins the id of every record of the emails of kind owed
// to account.
func chatMailPrefix(kind oracle.MailKind, account string) string {
	return "chat-" + string(kind) + "-" + strings.TrimPrefix(account, HashPrefix) + "-"
}

// InboxRecordID is the id of a record of the inbox message whose key is
// messageKey: "inbox-<key>.<name>", then "-<part>" for each part.
func InboxRecordID(messageKey string, name RecordName, parts ...any) string {
	return RecordID("inbox-"+messageKey, name, parts...)
}

// RecordID is the id of session's record of name: "<session>.<name>", then
// "-<part>" for each part.
func RecordID(session string, name RecordName, parts ...any) string {
	var b strings.Builder
	b.WriteString(session)
	b.WriteByte('.')
	b.WriteString(string(name))
	for _, p := range parts {
		fmt.Fprintf(&b, "-%v", p)
	}
	return b.String()
}

// Hourly is the part of a record's id that keeps one record of an event
// per hour: the writer writes an id once, so the hour's first event is
// recorded and the others find it there. For events that anyone can repeat
// at will (a result page reloaded, a refused payment sent again), whose
// records are locked for years and would otherwise grow the log without
// bound.
func Hourly(t time.Time) int64 { return t.UTC().Truncate(time.Hour).Unix() }

// NameChatSubscription: -<event id>: one of Stripe's events about a chat
// subscription, as applied (with ChatRecordID).
const NameChatSubscription RecordName = "subscription-event"

// ChatRecordID is the id of a record of the chat subscription id:
// "chat-<subscription>.<name>", then "-<part>" for each part.
func ChatRecordID(subscription string, name RecordName, parts ...any) string {
	return RecordID("chat-"+subscription, name, parts...)
}

// NameChatErased: -<Unix seconds>: an account's erasure at that second
// (with ChatAccountRecordID).
const NameChatErased RecordName = "erased"

// ChatAccountRecordID is the id of a record of the chat account (its keyed
// hash): "chat-<account's hex>.<name>", then "-<part>" for each part.
func ChatAccountRecordID(account string, name RecordName, parts ...any) string {
	return RecordID("chat-"+strings.TrimPrefix(account, HashPrefix), name, parts...)
}
