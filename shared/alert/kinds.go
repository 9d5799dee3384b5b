package alert

// Kind names what happened. Every kind the service raises is defined here,
// once, with what it means and what the operator does about it;
// docs/operating.md lists the same kinds (a test keeps the two equal).
type Kind string

// The kinds, grouped by where they are raised.
const (
	// SilentDrop (CRITICAL): a paid session arrived without a usable tier
	// or query. The order is DROPPED and the customer was asked to reply
	// with their question. Answer the reply, then re-run the order or
	// refund it.
	SilentDrop Kind = "SILENT-DROP"
	// WebhookSecretMissing (CRITICAL): no Stripe signing secret is
	// configured, so every event is refused with 503 and Stripe retries.
	// Set the secret's ARN and deploy within Stripe's three days of retries.
	WebhookSecretMissing Kind = "WEBHOOK_SECRET_MISSING"
	// WebhookUnreadable (ERROR): a correctly signed event could not be
	// read; it was answered 500, so Stripe retries it. Read the event in
	// Stripe's Dashboard and fix the parser if the retries keep failing.
	WebhookUnreadable Kind = "WEBHOOK_UNREADABLE"
	// WebhookAPIVersion (CRITICAL from the live endpoint, ERROR from the
	// test one): a webhook endpoint sends events in another Stripe API
	// version than the one the code reads (or in none); each is refused
	// with 409, nothing read or recorded, and Stripe retries it. Raised
	// once a day per version and mode while they come. Recreate the
	// endpoint with the version docs/deploying.md gives.
	WebhookAPIVersion Kind = "WEBHOOK_API_VERSION"
	// StripeAuth (CRITICAL): Stripe refused the API key; no customer can
	// pay. Rotate or restore the key in its secret.
	StripeAuth Kind = "STRIPE_AUTH"
	// AuditWriteFailed (ERROR): an audit record could not be written. The
	// customer was served regardless; check the audit bucket's health and
	// permissions. Claims are retried until their record is written.
	AuditWriteFailed Kind = "AUDIT_WRITE_FAILED"
	// StoreFailed (ERROR): a call to the Orders table or the Ledger still
	// failed after the SDK's retries, or did not answer within its
	// deadline; the function that met it raised this at once (one alert
	// per table and operation a minute). The work it was doing failed and
	// is retried (Stripe's retries, SQS redelivery). Check DynamoDB's
	// health, the table's throttling and the function's permissions.
	StoreFailed Kind = "STORE_FAILED"
	// GarbageJob (ERROR): a queue message that is not a valid job. It is
	// failed until it reaches the dead-letter queue; read it there and find
	// who sent it.
	GarbageJob Kind = "GARBAGE_JOB"

	// GeminiAuthFailure (CRITICAL): the model refused the Gemini key. Jobs
	// are parked, not failed; fix the key in its secret and they resume.
	GeminiAuthFailure Kind = "GEMINI_AUTH_FAILURE"
	// CircuitOpen (ERROR): the shared model circuit opened; paid orders are
	// parked until the model answers again. Check Gemini's status and quota.
	CircuitOpen Kind = "CIRCUIT_OPEN"
	// CircuitClosed (WARN): the model circuit closed; parked orders resume.
	// Nothing to do.
	CircuitClosed Kind = "CIRCUIT_CLOSED"
	// GenerationFailed (ERROR): no verdict within the parking budget. The
	// order is FAILED and the customer was sent the refund notice; refund
	// the payment.
	GenerationFailed Kind = "GENERATION_FAILED"
	// VerdictHeld (ERROR): two replies failed the crosscheck. The order is
	// HELD and the customer was told it is under review; regenerate it or
	// refund it.
	VerdictHeld Kind = "VERDICT_HELD"
	// AmountMismatch (CRITICAL): a paid session's subtotal or currency is
	// not its tier's fixed price (a mis-set Payment Link, a tampered
	// integration). The order is HELD, nothing was generated, and the
	// customer was told it is under review; deliver it or refund it.
	AmountMismatch Kind = "AMOUNT_MISMATCH"

	// VerdictQuarantined (CRITICAL): gate 1 of the content filter stopped
	// a verdict. Nothing reached the customer; review the quarantine record,
	// then deliver a cleaned verdict, regenerate, or refund.
	VerdictQuarantined Kind = "VERDICT_QUARANTINED"
	// EmailQuarantined (CRITICAL): gate 2 stopped an email (and the order
	// is no longer served). Review it as a quarantined verdict.
	EmailQuarantined Kind = "EMAIL_QUARANTINED"
	// QuarantineUnresolved (CRITICAL): an order is still QUARANTINED; the
	// health job repeats the alert every 24 hours until it is resolved.
	QuarantineUnresolved Kind = "QUARANTINE_UNRESOLVED"
	// QuarantineRecordFailed (CRITICAL): the review record of a stopped
	// payload could not be written. Nothing was delivered and the job is
	// retried; check the quarantine bucket.
	QuarantineRecordFailed Kind = "QUARANTINE_RECORD_FAILED"

	// EmailFailed (ERROR): the transport refused one message for good (an
	// address that cannot be encoded or is invalid, a rejected message, a
	// 400). It is not retried; the mail dead-letter record keeps what a
	// resend needs and the result page says the email could not be
	// delivered, while still serving the verdict. Reach the customer
	// another way if needed.
	EmailFailed Kind = "EMAIL_FAILED"
	// EmailBlocked (CRITICAL): the account cannot send (SES sending paused
	// or the account suspended, the sender unverified, credentials or the
	// Graph token refused, 403). Mail jobs are parked without spending an
	// attempt and resume by themselves once a send works again; fix the
	// account.
	EmailBlocked Kind = "EMAIL_BLOCKED"
	// EmailDeadLetter (CRITICAL): an email failed on every attempt of the
	// retry schedule. Its dead-letter record (Ledger, maildead#<session>#<kind>)
	// lists each attempt's time and failure class; the result page still
	// serves the verdict and says the email could not be delivered.
	EmailDeadLetter Kind = "EMAIL_DEAD_LETTER"
	// EmailBounced (WARN): the recipient's server refused a sent email for
	// good. The result page says so and still serves the verdict; nothing
	// to do unless the customer writes in.
	EmailBounced Kind = "EMAIL_BOUNCED"
	// EmailComplaint (WARN): a recipient marked an email as spam. Their
	// address (as a keyed hash) is on the suppression list and is not
	// emailed again.
	EmailComplaint Kind = "EMAIL_COMPLAINT"
	// JobDeadLettered (CRITICAL): a message reached a dead-letter queue
	// (a garbage job, or a job whose function failed on every delivery).
	// Its dead-letter record (Ledger, deadletter#<queue>#<message id>)
	// keeps the job; find the cause in the function's logs.
	JobDeadLettered Kind = "JOB_DEAD_LETTERED"

	// HealthCheckFailed (ERROR, then CRITICAL): a health check failed
	// after its retry within the run: ERROR on the first run, CRITICAL
	// from the HEALTH_FAIL_CRITICAL-th run in a row. The detail names the
	// check and what failed; fix the dependency it names.
	HealthCheckFailed Kind = "HEALTH_CHECK_FAILED"
	// HealthDegraded (WARN): a health check reports a degraded figure (a
	// queue backing up, the sending quota nearly used, dead letters since
	// the last run). Look before it becomes a failure.
	HealthDegraded Kind = "HEALTH_DEGRADED"
	// Recovered (INFO): a check that failed or degraded passes again; one
	// notice per recovery. Nothing to do.
	Recovered Kind = "RECOVERED"
	// OrderStuck (WARN, then CRITICAL): a paid order made no progress
	// (PAID or GENERATING past STUCK_AFTER, or an owed email unsent 30
	// minutes after it was due); the health job sent its job again through
	// the idempotent path. CRITICAL when it is stuck again on the next run:
	// read the functions' logs for that session.
	OrderStuck Kind = "ORDER_STUCK"
	// WebhookMissed (ERROR): a paid Checkout Session had no order, so its
	// webhook never arrived (a deleted endpoint, a wrong signing secret);
	// the health job claimed it and the customer is served. Check the
	// endpoint and its secret in Stripe's Dashboard.
	WebhookMissed Kind = "WEBHOOK_MISSED"
	// OrderUnresolved (the severity of the first alert): a DROPPED, FAILED
	// or HELD order is still waiting for the operator; the health job
	// repeats the alert every 24 hours until it is resolved.
	OrderUnresolved Kind = "ORDER_UNRESOLVED"
	// VerdictCorrupt (CRITICAL): a stored verdict no longer parses or no
	// longer matches its hash. Raised once per order by the reader that
	// sets it aside (shared/repair: the verdict API, the mailer, the
	// agent, the health job's sample, make ops), saying whether it is
	// generated again or held.
	VerdictCorrupt Kind = "VERDICT_CORRUPT"
	// SmokePassed (INFO): the smoke test's thirteen stages passed; the report
	// is the detail. Nothing to do.
	SmokePassed Kind = "SMOKE_PASSED"
	// SmokeFailed (CRITICAL): a smoke test stage failed; the detail names
	// the first failing stage and its error. The paid path is likely
	// broken for customers too: read the report in the smoke function's
	// log and the named stage's function logs.
	SmokeFailed Kind = "SMOKE_FAILED"

	// Refunded (WARN): a full refund was made in Stripe's Dashboard, not
	// through the ops function. The order is REFUNDED and the customer got
	// the refund notice; check that it was meant.
	Refunded Kind = "REFUNDED"
	// PartialRefund (WARN): part of a payment was refunded in Stripe's
	// Dashboard; the order is unchanged. Check that it was meant.
	PartialRefund Kind = "PARTIAL_REFUND"
	// DisputeOpened (CRITICAL): a cardholder disputed a payment. The
	// detail names the evidence bundle written for it and the deadline;
	// upload the bundle in Stripe's Dashboard before then.
	DisputeOpened Kind = "DISPUTE_OPENED"
	// EarlyFraudWarning (ERROR): Stripe's Radar warns that a payment was
	// fraudulent. Refunding it now avoids a dispute and its fee.
	EarlyFraudWarning Kind = "EARLY_FRAUD_WARNING"
	// ChargeUnknown (ERROR): a refund, dispute or fraud warning names a
	// payment no order has. Look it up in Stripe's Dashboard: another
	// product on the account, or an order lost before its claim.
	ChargeUnknown Kind = "CHARGE_UNKNOWN"
	// ChatSubscriptionUnknown (ERROR): an event about a subscription names
	// no chat account that exists (no account in its metadata, or one the
	// chat table does not have), or one other than the account the
	// subscription belongs to. It is answered 200 and nothing is stored.
	// Look the subscription up in Stripe's Dashboard: another product on
	// the account needs nothing; a chat subscriber's needs the account
	// found (make ops ACTION=chat) and the subscription's metadata fixed.
	ChatSubscriptionUnknown Kind = "CHAT_SUBSCRIPTION_UNKNOWN"
	// ChatSubscriptionRepaired (WARN): the health job found a chat
	// subscription Stripe has in another state (status, period, or
	// cancellation) than the chat table, or not at all, and stored
	// Stripe's: an event was lost or refused. Nothing to do for the
	// subscriber; many point at the webhook endpoint (its events, its
	// version).
	ChatSubscriptionRepaired Kind = "CHAT_SUBSCRIPTION_REPAIRED"

	// InboxMessage (WARN): a message reached the support inbox. The
	// detail shows the sender's keyed hash and domain, the subject
	// (shortened, and withheld when the content filter stops it) and
	// whether it was acknowledged; the alert names its order when the
	// message replies to one of our emails or names a session. Read it in
	// the mailbox and answer within 24 hours.
	InboxMessage Kind = "INBOX_MESSAGE"
	// InboxSeeded (INFO): the polled mailbox was read for the first time;
	// the unread messages already there were recorded as seen, with no
	// alert and no autoresponse. Read them in the mailbox.
	InboxSeeded Kind = "INBOX_SEEDED"
	// InboxUnreadable (ERROR): the inbox could not be read (Graph refused
	// or failed, or a stored message could not be fetched); no message
	// is lost, the next poll or SES's retry reads it again.
	InboxUnreadable Kind = "INBOX_UNREADABLE"
	// InboxFailed (CRITICAL): the inbox function failed on a message SES
	// delivered, past Lambda's two retries; the invocation's record
	// reached its on-failure destination. The message was neither alerted
	// nor acknowledged: read it (`make ops ACTION=inbox SHOW=<id>`), fix
	// the cause (the function's log), then `make inbox-replay`.
	InboxFailed Kind = "INBOX_FAILED"
	// AutoresponseFailed (WARN while retried, ERROR once given up): the
	// acknowledgement of an inbox message failed. A given-up one is not
	// sent: answer the message by hand.
	AutoresponseFailed Kind = "AUTORESPONSE_FAILED"

	// The agent rail's (x402).
	//
	// X402SettleFailed (WARN): the facilitator refused to settle a payment
	// that passed the local checks and its /verify; no money moved and
	// nothing was generated. Many in a row point at the facilitator.
	X402SettleFailed Kind = "X402_SETTLE_FAILED"
	// X402SettleUnconfirmed (ERROR): a settlement's answer was lost and its
	// retries could not tell whether the money moved. The order waits
	// unpaid; check the payer's nonce on the chain, then confirm or void
	// the order.
	X402SettleUnconfirmed Kind = "X402_SETTLE_UNCONFIRMED"
	// X402RefundOwed (ERROR): a settled agent payment ended without a
	// verdict; the detail names the payer, the transaction and the amount
	// for a manual refund.
	X402RefundOwed Kind = "X402_REFUND_OWED"
	// X402FacilitatorDown (CRITICAL from the agent function; ERROR, then
	// CRITICAL, from the health job's check): the facilitator did not
	// answer, or no longer lists our network and scheme: agents cannot pay.
	// One RECOVERED when the check passes again.
	X402FacilitatorDown Kind = "X402_FACILITATOR_DOWN"

	// The Sisters Chat's.
	//
	// ChatReplyFiltered (WARN): the content filter stopped a chat reply and
	// the reply written again (or writing it again failed); the person got
	// the fixed apology and the exchange was not spent. The detail names the
	// block list categories that matched, never an entry or the text. Many
	// point at the chat prompt: run make prompt-check.
	ChatReplyFiltered Kind = "CHAT_REPLY_FILTERED"
	// ChatTrialsPaused (WARN): today's new Sisters Chat trials reached
	// ChatNewTrialsPerDay; new trials are refused until midnight UTC.
	// Raised once a day, by the first refusal.
	ChatTrialsPaused Kind = "CHAT_TRIALS_PAUSED"
)

// Kinds is every kind, in the order above.
func Kinds() []Kind {
	return []Kind{
		SilentDrop, WebhookSecretMissing, WebhookUnreadable, WebhookAPIVersion, StripeAuth, AuditWriteFailed, StoreFailed, GarbageJob,
		GeminiAuthFailure, CircuitOpen, CircuitClosed, GenerationFailed, VerdictHeld, AmountMismatch,
		VerdictQuarantined, EmailQuarantined, QuarantineUnresolved, QuarantineRecordFailed,
		EmailFailed, EmailBlocked, EmailDeadLetter, EmailBounced, EmailComplaint, JobDeadLettered,
		HealthCheckFailed, HealthDegraded, Recovered, OrderStuck, WebhookMissed, OrderUnresolved, VerdictCorrupt,
		SmokePassed, SmokeFailed, Refunded, PartialRefund, DisputeOpened, EarlyFraudWarning, ChargeUnknown,
		ChatSubscriptionUnknown, ChatSubscriptionRepaired,
		InboxMessage, InboxSeeded, InboxUnreadable, InboxFailed, AutoresponseFailed,
		X402SettleFailed, X402SettleUnconfirmed, X402RefundOwed, X402FacilitatorDown,
		ChatReplyFiltered, ChatTrialsPaused,
	}
}
