package obs

// The names of every metric the service emits, in the stack's namespace
// and without dimensions (each name is one billed metric, and only in the
// hours it is written). Every call site names its metric by one of these;
// a test holds the template's dashboard to this list, and the template's
// alarms to what it emits.
const (
	// Alerts (shared/alert).
	CriticalAlerts = "CriticalAlerts" // a CRITICAL alert raised (CriticalAlertAlarm)
	AlertFallback  = "AlertFallback"  // an alert SNS refused, logged instead (AlertFallbackAlarm)

	// The stores (shared/storeguard).
	StoreRetries = "StoreRetries" // a store call that succeeded on the SDK's retry

	// Orders: the webhook, the fulfilment, the verdict API.
	WebhookProcessed  = "WebhookProcessed"
	WebhookDuplicates = "WebhookDuplicates"
	WebhookRejected   = "WebhookRejected" // a signature refused
	SilentDrops       = "SilentDrops"     // a paid session without a usable tier or query
	CacheHits         = "CacheHits"
	Regenerations     = "Regenerations"

	// The customer's wait from the payment (the order's paid_at), in
	// milliseconds: to the first verdict stored (generator) and to its
	// email sent (mailer); and each over a minute, counted.
	VerdictWait              = "VerdictWait"
	EmailWait                = "EmailWait"
	CustomerWaitsOverAMinute = "CustomerWaitsOverAMinute"

	// The model (shared/gemini): each attempt's latency (its sample count
	// is the attempts), the failed attempts, and the circuit's state
	// (shared/circuit: 1 when it opens, 0 when it closes).
	ModelLatency  = "ModelLatency"
	ModelFailures = "ModelFailures"
	CircuitOpen   = "CircuitOpen"

	// The queues' consumers (shared/sqsbatch): deliveries that failed and
	// will be retried; and dead letters the deadletter function recorded.
	GeneratorRecordFailures  = "GeneratorRecordFailures"
	MailerRecordFailures     = "MailerRecordFailures"
	FeedbackRecordFailures   = "FeedbackRecordFailures"
	DeadLetterRecordFailures = "DeadLetterRecordFailures"
	DeadLetters              = "DeadLetters"

	// Emails: sent and failed for good (mailer), bounced and complained
	// of (feedback, from SES's events).
	EmailsSent       = "EmailsSent"
	EmailsFailed     = "EmailsFailed"
	EmailsBounced    = "EmailsBounced"
	EmailsComplained = "EmailsComplained"

	// Agent payments (x402): settled, refused, replayed, unconfirmed.
	X402Payments    = "X402Payments"
	X402Refused     = "X402Refused"
	X402Replays     = "X402Replays"
	X402Unconfirmed = "X402Unconfirmed"
	// Retries under a payment identifier: answered from the first use's
	// order (X402Retries), or refused 409 for another payment or request
	// under it (X402IdentifierConflicts).
	X402Retries             = "X402Retries"
	X402IdentifierConflicts = "X402IdentifierConflicts"
	// Payment headers refused without an audit record each: not base64 of
	// a JSON payment (X402Undecodable), or no well-formed one
	// (X402Malformed). The Ledger keeps each day's count for the health
	// job's figures.
	X402Undecodable = "X402Undecodable"
	X402Malformed   = "X402Malformed"

	// Sisters Chat: exchanges answered, subscriptions bought (a trial's
	// conversion), messages the model could not answer, apologies.
	ChatExchanges        = "ChatExchanges"
	ChatTrialConversions = "ChatTrialConversions"
	ChatModelFailures    = "ChatModelFailures"
	ChatApologies        = "ChatApologies"

	// The scheduled jobs.
	HealthRuns     = "HealthRuns"
	HealthCritical = "HealthCritical"
	SmokePassed    = "SmokePassed"
)
