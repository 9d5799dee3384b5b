package auditfigures_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/auditfigures"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// The two partition days of the seeded log, and one on each side of them.
var (
	day1   = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	day2   = time.Date(2026, 11, 21, 23, 30, 0, 0, time.UTC) // late: still the 21st in UTC
	before = time.Date(2026, 11, 19, 12, 0, 0, 0, time.UTC)
	after  = time.Date(2026, 11, 22, 0, 5, 0, 0, time.UTC)
)

// The seeded sessions.
const (
	sessA = "cs_live_a1webhookfirst000000000" // live quick, day 1: the webhook claims it
	sessH = "cs_live_h8secondquick000000000"  // live quick, day 1: the webhook claims it, refunded in full
	sessB = "cs_live_b2pagefirst00000000000"  // live full, day 2: the result page claims it first; refunded in part
	sessC = "cs_test_c3testmode000000000000"  // test mode quick, day 1
	sessD = "cs_test_d4smoke000000000000000"  // the smoke test's, day 2
	sessE = "cs_live_e5reconciled0000000000"  // live quick, day 2: the health job claims it
	sessF = "cs_live_f6dropped0000000000000"  // live quick, paid without a query, day 2
	sessG = "cs_live_g7asyncfailed000000000"  // a delayed payment that failed, day 1
	sessX = "cs_live_x9outsiderange0000000"   // paid on the day after the range
	sessY = "cs_live_y0beforerange00000000"   // paid on the day before the range
)

// The agent rail's orders, paid over x402.
var (
	agentL1 = agentOrder("live", "L1quickrefunded")   // Base, quick, day 1: settled, replayed once, refunded by the operator
	agentL2 = agentOrder("live", "L2strategy")        // Base, strategy, day 2: settled, then retried under its payment identifier
	agentL3 = agentOrder("live", "L3fullconfirmed")   // Base, full, day 2: its answer lost, then confirmed by the operator
	agentM1 = agentOrder("live", "M1quickmcp")        // Base, quick, day 2, over MCP: settled, retried, its identifier reused
	agentW  = agentOrder("live", "Wverifyrefusedmcp") // day 2, over MCP: /verify refused it
	agentT1 = agentOrder("test", "T1quicksepolia")    // Base Sepolia, quick, day 1: settled (test mode)
	agentV  = agentOrder("live", "Vverifyrefused")    // day 1: /verify refused it
	agentS  = agentOrder("live", "Ssettlerefused")    // day 2: /settle refused it
	agentD  = agentOrder("live", "Dfacilitatordown")  // day 2: the facilitator was down
	agentK  = agentOrder("test", "Ksmoke")            // the smoke test's, day 2
)

// agentOrder is an agent order's id: its mode, then name padded to 32.
func agentOrder(mode, name string) string {
	return "x402_" + mode + "_" + name + strings.Repeat("0", 32-len(name))
}

// seed writes records with the audit log's own writer.
type seed struct {
	t *testing.T
	w *audit.Writer
}

// rec is a record of session, created at created, with the payment fields
// of a live quick session: each entry below changes what differs.
func rec(session string, created time.Time, src audit.Source, ev audit.Event, st audit.Status, opts ...func(*audit.Record)) audit.Record {
	r := audit.Record{
		Timestamp: created.Add(time.Minute), SessionCreated: created, SessionID: session, Tier: "quick",
		Status: st, Source: src, Event: ev, Livemode: strings.HasPrefix(session, "cs_live_"), AmountTotal: 100, Currency: "cad",
		OrderStatus: "PAID",
	}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func latency(ms int64) func(*audit.Record) { return func(r *audit.Record) { r.LatencyMS = ms } }
func wait(ms int64) func(*audit.Record)    { return func(r *audit.Record) { r.WaitMS = ms } }
func detail(d string) func(*audit.Record) {
	return func(r *audit.Record) { r.ErrorDetail = audit.Detail(d) }
}
func orderStatus(s string) func(*audit.Record) { return func(r *audit.Record) { r.OrderStatus = s } }
func refunded(cents int64) func(*audit.Record) {
	return func(r *audit.Record) { r.AmountRefunded = cents }
}
func smoke(r *audit.Record) { r.Smoke = true }
func full(r *audit.Record)  { r.Tier, r.AmountTotal = "full", 500 }
func crosscheck(approved bool) func(*audit.Record) {
	return func(r *audit.Record) {
		r.Crosscheck = &audit.Crosscheck{VerdictLabel: "GREEN", CoherenceScore: 0.99, Threshold: 0.974, Phi: 0.042, Approved: approved, Flags: []string{}}
	}
}
func divergence(level string) func(*audit.Record) {
	return func(r *audit.Record) {
		r.Divergence = &audit.Divergence{OriginalVerdict: "GREEN", RegenVerdict: "AMBER", DivergenceLevel: level}
	}
}
func attempt(n int) func(*audit.Record) {
	return func(r *audit.Record) {
		r.Mail = &audit.MailAttempt{Kind: oracle.MailVerdict, Attempt: n, Transport: "ses"}
	}
}

// x402 is an agent's payment record of order (none for a payment the
// local checks refused) with status, on Base for a live order, Base
// Sepolia for a test one; an x402_test_ order, like a refused payment's,
// is test mode; each entry changes what differs.
func x402(order string, created time.Time, st audit.Status, opts ...func(*audit.Record)) audit.Record {
	r := rec(order, created, audit.SourceX402, audit.EventX402Payment, st, func(r *audit.Record) {
		r.Livemode, r.Network = strings.HasPrefix(order, "x402_live_"), "eip155:8453"
		if !r.Livemode {
			r.Network = "eip155:84532"
		}
		r.AmountTotal, r.AmountUSDC, r.Currency, r.Endpoint = 50_000, 0.05, "usdc", "/x402/query"
		r.OrderStatus, r.Payer = "AWAITING_PAYMENT", audit.HashPrefix+"0123456789abcdef0123456789abcdef"
		if st == audit.StatusOK {
			r.OrderStatus, r.TxHash = "PAID", "0x"+strings.Repeat("7a", 32)
		}
	})
	for _, o := range opts {
		o(&r)
	}
	return r
}

// endpoint is the route or MCP tool an agent's record was paid through.
func endpoint(e string) func(*audit.Record) { return func(r *audit.Record) { r.Endpoint = e } }

// paymentID is the payment identifier an agent sent.
func paymentID(id string) func(*audit.Record) { return func(r *audit.Record) { r.PaymentID = id } }

// agentTier prices an agent's record at tier.
func agentTier(tier oracle.Tier) func(*audit.Record) {
	return func(r *audit.Record) {
		r.Tier, r.AmountTotal = string(tier), tier.PriceUSDCAtomic()
		r.AmountUSDC = float64(r.AmountTotal) / 1e6
	}
}

// agentOrderFields are the payment fields of an agent order's records
// other than its x402 ones (audit.OfOrder's), at tier.
func agentOrderFields(tier oracle.Tier, live bool) func(*audit.Record) {
	return func(r *audit.Record) {
		r.Tier, r.AmountTotal, r.Currency, r.Livemode = string(tier), tier.PriceUSDCAtomic(), "usdc", live
	}
}

// operator makes a record the operator's action, with its outcome.
func operator(action, outcome string) func(*audit.Record) {
	return func(r *audit.Record) {
		r.Source, r.Event = audit.SourceOperator, audit.EventOperator
		r.Operator = &audit.Operator{Action: action, AuthorisedBy: "ana", Reason: "checked", Outcome: outcome}
	}
}

// chatRec is a chat record of account at at.
func chatRec(account string, at time.Time, ev audit.Event, c *audit.Chat) audit.Record {
	return audit.Record{Timestamp: at, SessionCreated: at, Source: audit.SourceChat, Event: ev, Status: audit.StatusOK, Email: account, Chat: c}
}

func (s seed) write(r audit.Record, id string) {
	s.t.Helper()
	if ok, err := s.w.Write(context.Background(), r, id); err != nil || !ok {
		s.t.Fatalf("write %s: %v (written %v)", id, err, ok)
	}
}

// writeLog seeds the log every figure is checked against.
func writeLog(t *testing.T, w *audit.Writer) {
	s := seed{t, w}
	id := audit.RecordID
	const regen = int64(1767225600)
	paid := audit.EventCheckoutCompleted
	verdict := audit.MailEvent(oracle.MailVerdict)

	// A: claimed by its webhook, generated, crosschecked, emailed (one
	// attempt, one delivery), loaded three times, then regenerated after its
	// retention with a minor divergence.
	s.write(rec(sessA, day1, audit.SourceWebhook, paid, audit.StatusOK, latency(1200)), id(sessA, audit.NamePaid))
	s.write(rec(sessA, day1, audit.SourceGenerator, audit.EventVerdictGenerated, audit.StatusOK, orderStatus("READY"), wait(9000)), id(sessA, audit.NameGenerated))
	s.write(rec(sessA, day1, audit.SourceGenerator, audit.EventCrosscheck, audit.StatusOK, crosscheck(true)), id(sessA, audit.NameCrosscheck, 1, 1))
	s.write(rec(sessA, day1, audit.SourceEmailService, audit.EventMailAttempt, audit.StatusEmailSent, attempt(0)), id(sessA, audit.NameMailAttempt, oracle.MailVerdict, 0))
	s.write(rec(sessA, day1, audit.SourceEmailService, verdict, audit.StatusEmailSent, wait(14000)), id(sessA, audit.NameMail, oracle.MailVerdict))
	for _, req := range []string{"req-1", "req-2", "req-3"} {
		s.write(rec(sessA, day1, audit.SourceCacheHit, audit.EventVerdictServed, audit.StatusCached, orderStatus("READY")), id(sessA, audit.NameServed, req))
	}
	s.write(rec(sessA, day1, audit.SourceGenerator, audit.EventVerdictRegenerated, audit.StatusRegenerated), id(sessA, audit.NameRegenerated, regen))
	s.write(rec(sessA, day1, audit.SourceGenerator, audit.EventDivergenceCheck, audit.StatusOK, divergence("minor")), id(sessA, audit.NameDivergence, regen))

	// H: another live quick session of day 1, claimed by its webhook, then
	// refunded in full.
	s.write(rec(sessH, day1, audit.SourceWebhook, paid, audit.StatusOK, latency(4000)), id(sessH, audit.NamePaid))
	s.write(rec(sessH, day1, audit.SourceWebhook, audit.EventChargeRefunded, audit.StatusOK, orderStatus("REFUNDED"), refunded(100)), id(sessH, audit.NameRefunded))

	// B: the customer reached the result page first, then the webhook came
	// (the order READY by then); a failed generation attempt, a rejected
	// and an approved crosscheck; its email failed twice, then for good.
	s.write(rec(sessB, day2, audit.SourceResultPage, audit.EventLanding, audit.StatusOK, full, latency(300)), id(sessB, audit.NamePaid))
	s.write(rec(sessB, day2, audit.SourceWebhook, paid, audit.StatusOK, full, latency(2500), orderStatus("READY")), id(sessB, audit.NamePaid))
	s.write(rec(sessB, day2, audit.SourceGenerator, audit.EventGenerationFailed, audit.StatusError, full, detail("generation failed: timeout")), id(sessB, audit.NameAttempt, 1))
	s.write(rec(sessB, day2, audit.SourceGenerator, audit.EventCrosscheck, audit.StatusError, full, crosscheck(false),
		detail("crosscheck rejected the reply: low_coherence")), id(sessB, audit.NameCrosscheck, 1, 1))
	s.write(rec(sessB, day2, audit.SourceGenerator, audit.EventCrosscheck, audit.StatusOK, full, crosscheck(true)), id(sessB, audit.NameCrosscheck, 1, 2))
	s.write(rec(sessB, day2, audit.SourceGenerator, audit.EventVerdictGenerated, audit.StatusOK, full, wait(95000)), id(sessB, audit.NameGenerated))
	s.write(rec(sessB, day2, audit.SourceEmailService, audit.EventMailAttempt, audit.StatusEmailFailed, full, attempt(0),
		detail("transient: SES answered 503 after 2 tries")), id(sessB, audit.NameMailAttempt, oracle.MailVerdict, 0))
	s.write(rec(sessB, day2, audit.SourceEmailService, audit.EventMailAttempt, audit.StatusEmailFailed, full, attempt(1),
		detail("transient: SES answered 502 after 3 tries")), id(sessB, audit.NameMailAttempt, oracle.MailVerdict, 1))
	s.write(rec(sessB, day2, audit.SourceEmailService, verdict, audit.StatusEmailFailed, full,
		detail("permanent: SES refused message 0100018c-1234-5678-9abc-def012345678 (400)")), id(sessB, audit.NameMail, oracle.MailVerdict))
	// Then refunded in part, twice: Stripe's amount refunded is the total
	// so far, 1.50 then 2.00.
	for _, cents := range []int64{150, 200} {
		s.write(rec(sessB, day2, audit.SourceWebhook, audit.EventChargeRefunded, audit.StatusError, full, orderStatus("READY"), refunded(cents),
			detail(fmt.Sprintf("partial refund: %d_CAD of 500_CAD", cents))), id(sessB, audit.NameRefundPartial, cents))
	}

	// C: test mode, claimed by its webhook after a delayed payment,
	// emailed, regenerated with a significant divergence.
	s.write(rec(sessC, day1, audit.SourceWebhook, audit.EventAsyncSucceeded, audit.StatusOK, latency(800)), id(sessC, audit.NamePaid))
	s.write(rec(sessC, day1, audit.SourceEmailService, verdict, audit.StatusEmailSent, wait(20000)), id(sessC, audit.NameMail, oracle.MailVerdict))
	s.write(rec(sessC, day1, audit.SourceGenerator, audit.EventVerdictRegenerated, audit.StatusRegenerated), id(sessC, audit.NameRegenerated, regen))
	s.write(rec(sessC, day1, audit.SourceGenerator, audit.EventDivergenceCheck, audit.StatusOK, divergence("significant")), id(sessC, audit.NameDivergence, regen))

	// D: the smoke test's, everything in it odd, so that any record of it
	// counted would show.
	s.write(rec(sessD, day2, audit.SourceWebhook, paid, audit.StatusOK, smoke, latency(99999)), id(sessD, audit.NamePaid))
	s.write(rec(sessD, day2, audit.SourceGenerator, audit.EventVerdictGenerated, audit.StatusOK, smoke, wait(99999)), id(sessD, audit.NameGenerated))
	s.write(rec(sessD, day2, audit.SourceGenerator, audit.EventCrosscheck, audit.StatusError, smoke, crosscheck(false), detail("smoke")), id(sessD, audit.NameCrosscheck, 1, 1))
	s.write(rec(sessD, day2, audit.SourceCacheHit, audit.EventVerdictServed, audit.StatusCached, smoke), id(sessD, audit.NameServed, "req-1"))
	s.write(rec(sessD, day2, audit.SourceEmailService, verdict, audit.StatusEmailFailed, smoke, detail("smoke")), id(sessD, audit.NameMail, oracle.MailVerdict))

	// E: the health job claimed it (its webhook never came).
	s.write(rec(sessE, day2, audit.SourceReconcile, audit.EventReconcile, audit.StatusOK, latency(50)), id(sessE, audit.NamePaid))

	// F: paid without a query: a drop (paid all the same), and the notice
	// sent.
	s.write(rec(sessF, day2, audit.SourceWebhook, paid, audit.StatusError, orderStatus("DROPPED"), latency(600), detail("silent drop: missing_query")), id(sessF, audit.NameDropped))
	s.write(rec(sessF, day2, audit.SourceEmailService, audit.MailEvent(oracle.MailSilentDrop), audit.StatusEmailSent, orderStatus("DROPPED")), id(sessF, audit.NameMail, oracle.MailSilentDrop))

	// G: a delayed payment that failed.
	s.write(rec(sessG, day1, audit.SourceWebhook, audit.EventAsyncFailed, audit.StatusError, orderStatus("PAYMENT_FAILED"), detail("delayed payment failed")), id(sessG, audit.NamePaymentFailed))

	// A health run's record, which names no session.
	run := audit.Record{Timestamp: day2, SessionCreated: day2, Status: audit.StatusOK, Source: audit.SourceHealth, Event: audit.EventHealthRun}
	s.write(run, "health-run-20261121T233000.000000000Z")

	// The agent rail. L1: settled in 1.8 s, then its authorization
	// presented again (REPLAY, naming the order it paid for), its verdict
	// failed and the operator sent the money back.
	tx := "0x" + strings.Repeat("5e", 32)
	s.write(x402(agentL1, day1, audit.StatusOK, latency(1800)), id(agentL1, audit.NameX402, "ok", "req-1"))
	s.write(x402(agentL1, day1, audit.StatusReplay, latency(4), detail("authorization already used: this payment was presented before (replay or concurrent duplicate); nothing was settled for it again")),
		id(agentL1, audit.NameX402, "replay", "req-2"))
	s.write(rec(agentL1, day1, audit.SourceOperator, audit.EventOperator, audit.StatusOK, agentOrderFields(oracle.TierQuick, true), orderStatus("FAILED"),
		operator("refund", "refunded "+tx)), id(agentL1, audit.NameOperator, "refund", "1"))
	// L2, the premium tier, settled in 2.5 s; its agent lost the answer
	// and sent the payment again under its identifier: answered from the
	// order (RETRY), nothing settled again.
	const premium, fullRoute = "/x402/query/premium", "/x402/query/full"
	s.write(x402(agentL2, day2, audit.StatusOK, agentTier(oracle.TierStrategy), latency(2500), endpoint(premium), paymentID("agent-L2-0000000001")),
		id(agentL2, audit.NameX402, "ok", "req-3"))
	s.write(x402(agentL2, day2, audit.StatusRetry, agentTier(oracle.TierStrategy), latency(40), endpoint(premium), paymentID("agent-L2-0000000001"), orderStatus("READY")),
		id(agentL2, audit.NameX402, "retry", audit.Hourly(day2)))
	// L3: its settlement's answer lost, then the operator found it on the
	// chain and confirmed it (the order AWAITING_PAYMENT in the record).
	s.write(x402(agentL3, day2, audit.StatusSettleUnconfirmed, agentTier(oracle.TierFull), latency(31000), endpoint(fullRoute),
		detail("the settlement's answer was lost and its retries did not confirm it: x402: settle: HTTP 502")), id(agentL3, audit.NameX402, "settle-unconfirmed", "req-4"))
	s.write(rec(agentL3, day2, audit.SourceOperator, audit.EventOperator, audit.StatusOK, agentOrderFields(oracle.TierFull, true), orderStatus("AWAITING_PAYMENT"),
		operator("x402-confirm", "confirmed "+tx)), id(agentL3, audit.NameOperator, "x402-confirm", "1"))
	// T1: on Base Sepolia, settled in 0.9 s: test mode.
	s.write(x402(agentT1, day1, audit.StatusOK, latency(900)), id(agentT1, audit.NameX402, "ok", "req-5"))
	// Refused: by the local checks (no order), by /verify, by /settle; and
	// the facilitator down.
	s.write(x402("", day1, audit.StatusInvalid, latency(2), detail("x402: invalid_exact_evm_payload_signature: the signature recovers 0x1111111111111111111111111111111111111111")),
		"x402-req-6.x402-invalid")
	s.write(x402(agentV, day1, audit.StatusVerifyFailed, latency(700), detail("the facilitator's /verify refused it: invalid_exact_evm_insufficient_funds")), id(agentV, audit.NameX402, "verify-failed", "req-7"))
	s.write(x402(agentS, day2, audit.StatusSettleFailed, latency(2100), detail("the facilitator's /settle refused it: invalid_exact_evm_transaction_failed")), id(agentS, audit.NameX402, "settle-failed", "req-8"))
	s.write(x402(agentD, day2, audit.StatusFacilitatorDown, latency(12000), detail("the facilitator's /verify did not answer: x402: verify: HTTP 503")), id(agentD, audit.NameX402, "facilitator-down", "req-9"))
	// Over MCP. M1: the quick tool, settled in 1.5 s, then retried under
	// its identifier (RETRY); later that identifier came with another
	// payment to the full tool: refused (IDENTIFIER_CONFLICT, naming the
	// order the identifier belongs to). W: the strategy tool, /verify
	// refused it. And an identifier of L1's reused on the HTTP route.
	const quickTool, fullTool, strategyTool = "mcp:oracle_quick_take", "mcp:oracle_full_breakdown", "mcp:oracle_strategy_session"
	conflict := detail("the payment identifier was used before with another payment or another request; nothing was settled for this one")
	s.write(x402(agentM1, day2, audit.StatusOK, latency(1500), endpoint(quickTool), paymentID("mcp-M1-000000000001")), id(agentM1, audit.NameX402, "ok", "req-11"))
	s.write(x402(agentM1, day2, audit.StatusRetry, latency(35), endpoint(quickTool), paymentID("mcp-M1-000000000001"), orderStatus("READY")),
		id(agentM1, audit.NameX402, "retry", audit.Hourly(day2)))
	s.write(x402(agentM1, day2, audit.StatusIdentifierConflict, agentTier(oracle.TierFull), latency(30), endpoint(fullTool), paymentID("mcp-M1-000000000001"), conflict),
		id("x402-0123456789abcdef0123456789abcdef", audit.NameX402, "identifier-conflict", "payment_identifier_conflict", audit.Hourly(day2)))
	s.write(x402(agentW, day2, audit.StatusVerifyFailed, agentTier(oracle.TierStrategy), latency(650), endpoint(strategyTool),
		detail("the facilitator's /verify refused it: invalid_exact_evm_insufficient_funds")), id(agentW, audit.NameX402, "verify-failed", "req-12"))
	s.write(x402(agentL1, day1, audit.StatusIdentifierConflict, latency(25), paymentID("agent-L1-0000000001"), conflict),
		id("x402-0123456789abcdef0123456789abcdef", audit.NameX402, "identifier-conflict", "payment_identifier_conflict", audit.Hourly(day1)))
	// The smoke test's, odd, left out: over HTTP and over MCP.
	s.write(x402(agentK, day2, audit.StatusOK, smoke, latency(99999)), id(agentK, audit.NameX402, "ok", "req-10"))
	s.write(x402(agentK, day2, audit.StatusRetry, smoke, endpoint(quickTool)), id(agentK, audit.NameX402, "retry", audit.Hourly(day2)))
	// The operator's refund of a card session is no agent's refund: the
	// card's refunds are Stripe's events (H's, above).
	s.write(rec(sessH, day1, audit.SourceOperator, audit.EventOperator, audit.StatusOK, operator("refund", "refunded re_3AbC"), orderStatus("READY")),
		id(sessH, audit.NameOperator, "refund", "1"))

	// The content filter: day 1, a first writing sent back and a verdict
	// held at gate 1; day 2, another sent back and a clean one (not
	// counted); the smoke test's, left out.
	filter := func(action string) func(*audit.Record) {
		return func(r *audit.Record) {
			r.Filter = &audit.Filter{Gate: "generator", Action: action, TermIDs: []string{"cat2.gamma"}, Version: "1.1.0+0123456789ab"}
		}
	}
	s.write(rec(sessH, day1, audit.SourceGenerator, audit.EventFilter, audit.StatusOK, filter(audit.FilterRewrite)), id(sessH, audit.NameFilterRewrite, 1))
	s.write(rec(sessH, day1, audit.SourceGenerator, audit.EventFilter, audit.StatusError, filter("QUARANTINE"), detail("quarantined by the content filter: quarantine_term")),
		id(sessH, audit.NameFilterGenerator, 1))
	s.write(rec(sessB, day2, audit.SourceGenerator, audit.EventFilter, audit.StatusOK, filter(audit.FilterRewrite)), id(sessB, audit.NameFilterRewrite, 1))
	s.write(rec(sessB, day2, audit.SourceGenerator, audit.EventFilter, audit.StatusOK, filter("PASS")), id(sessB, audit.NameFilterGenerator, 1))
	s.write(rec(sessD, day2, audit.SourceGenerator, audit.EventFilter, audit.StatusOK, filter(audit.FilterRewrite), smoke), id(sessD, audit.NameFilterRewrite, 1))

	// Sisters Chat. P: three trial exchanges (one reply replaced by the
	// apology), a fourth refused, then subscribed (live). Q: one trial
	// exchange and a model failure. R: a subscriber who cancelled. S: a
	// subscriber in test mode. And the smoke test's exchange, left out.
	n := 0
	ex := func(account string, at time.Time, plan, outcome, filter string, opts ...func(*audit.Record)) {
		n++
		r := chatRec(account, at.Add(time.Duration(n)*time.Second), audit.EventChatExchange, &audit.Chat{Plan: plan, Outcome: outcome, Filter: filter, MessageChars: 40, ReplyChars: 600})
		for _, o := range opts {
			o(&r)
		}
		s.write(r, fmt.Sprintf("chat-exchange-%d", n))
	}
	sub := func(account string, at time.Time, id, status string, opts ...func(*audit.Record)) {
		n++
		r := chatRec(account, at.Add(time.Duration(n)*time.Second), audit.EventChatSubscription, &audit.Chat{Subscription: id, SubscriptionStatus: status})
		r.Livemode = true
		for _, o := range opts {
			o(&r)
		}
		s.write(r, fmt.Sprintf("chat-subscription-%d", n))
	}
	paidInvoice := func(r *audit.Record) { r.AmountTotal, r.Currency = 500, "CAD" }
	testMode := func(r *audit.Record) { r.Livemode = false }
	const P, Q, R, S = "hmac-sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "hmac-sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
		"hmac-sha256:cccccccccccccccccccccccccccccccc", "hmac-sha256:dddddddddddddddddddddddddddddddd"
	ex(P, day1, audit.ChatPlanTrial, audit.ChatAnswered, audit.ChatFilterPass)
	ex(P, day1, audit.ChatPlanTrial, audit.ChatAnswered, audit.ChatFilterApology)
	ex(P, day1, audit.ChatPlanTrial, audit.ChatAnswered, audit.ChatFilterRegenerated)
	ex(P, day1, audit.ChatPlanTrial, audit.ChatTrialUsed, "")
	sub(P, day2, "sub_P", "active")
	sub(P, day2, "sub_P", "active", paidInvoice)
	ex(Q, day1, audit.ChatPlanTrial, audit.ChatAnswered, audit.ChatFilterPass)
	ex(Q, day1, audit.ChatPlanTrial, audit.ChatModelFailed, "")
	sub(R, day1, "sub_R", "active")
	sub(R, day1, "sub_R", "active", paidInvoice)
	ex(R, day1, audit.ChatPlanSubscriber, audit.ChatAnswered, audit.ChatFilterPass)
	ex(R, day1, audit.ChatPlanSubscriber, audit.ChatAnswered, audit.ChatFilterPass)
	sub(R, day2, "sub_R", "canceled")
	sub(S, day2, "sub_S", "active", paidInvoice, testMode)
	ex(S, day2, audit.ChatPlanTrial, audit.ChatAnswered, audit.ChatFilterPass, smoke)

	// Outside the range: paid the day before and the day after.
	s.write(rec(sessY, before, audit.SourceWebhook, paid, audit.StatusOK, latency(70000)), id(sessY, audit.NamePaid))
	s.write(rec(sessX, after, audit.SourceWebhook, paid, audit.StatusOK, latency(70000)), id(sessX, audit.NamePaid))
}

func i64(n int64) *int64     { return &n }
func boolp(b bool) *bool     { return &b }
func f64(f float64) *float64 { return &f }

// TestFiguresOfASeededLog checks every figure of a known log exactly.
func TestFiguresOfASeededLog(t *testing.T) {
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	bucket := f.Ref("AuditBucket")
	writeLog(t, audit.NewWriter(c, bucket))

	// The range's ends are days: their times are ignored.
	got, err := auditfigures.Compute(context.Background(), c, bucket, day1.Add(5*time.Hour), time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	want := auditfigures.Figures{
		From: "2026-11-20", To: "2026-11-21",
		// The card's and the agent rail's: 15 x402 records, 3 of the operator.
		Records: 68, SmokeRecords: 9,
		Paid: auditfigures.Paid{
			Sessions: 6, Records: 7,
			RecordsBySource:   map[string]int64{"webhook": 5, "result_page": 1, "reconcile": 1},
			SessionsPerRecord: auditfigures.Ratio{Numerator: 6, Denominator: 7, Value: f64(6.0 / 7)},
			DoubleProcessed:   0,
		},
		// 600, 800, 1200, 2500, 4000: the ranks ceil(0.5×5) = 3 and ceil(0.95×5) = 5.
		WebhookLatency: auditfigures.Latency{Method: "nearest-rank", Records: 5, P50MS: i64(1200), P95MS: i64(4000), MaxMS: i64(4000)},
		// A's verdict stored 9 s after the payment, B's 95 s (over 60 s);
		// A's email 14 s, C's 20 s; the smoke session's 99,999 ms left out.
		CustomerWait: auditfigures.CustomerWait{
			ToVerdict: auditfigures.Wait{Latency: auditfigures.Latency{Method: "nearest-rank", Records: 2, P50MS: i64(9000), P95MS: i64(95000), MaxMS: i64(95000)}, Over60s: 1},
			ToEmail:   auditfigures.Wait{Latency: auditfigures.Latency{Method: "nearest-rank", Records: 2, P50MS: i64(14000), P95MS: i64(20000), MaxMS: i64(20000)}},
		},
		Cache: auditfigures.Cache{Cached: 3, OK: 2, Regenerated: 2, HitRatio: auditfigures.Ratio{Numerator: 3, Denominator: 5, Value: f64(0.6)}},
		// The x402 refusals and doubts are failure records too, the
		// identifier conflicts included (not the retries).
		Errors: auditfigures.Errors{
			Coverage: auditfigures.Ratio{Numerator: 19, Denominator: 19, Value: f64(1)},
			TopPatterns: []auditfigures.Pattern{
				{Pattern: "partial refund: #_CAD of #_CAD", Records: 2},
				{Pattern: "the facilitator's /verify refused it: invalid_exact_evm_insufficient_funds", Records: 2},
				{Pattern: "the payment identifier was used before with another payment or another request; nothing was settled for this one", Records: 2},
				{Pattern: "transient: SES answered # after # tries", Records: 2},
				{Pattern: "authorization already used: this payment was presented before (replay or concurrent duplicate); nothing was settled for it again", Records: 1},
				// "crosscheck rejected the reply: low_coherence", "delayed payment failed", "generation failed: timeout", "permanent: SES refused…",
				// "silent drop: missing_query" and the other x402 ones follow.
			},
		},
		EmailFailureRate:        auditfigures.Ratio{Numerator: 1, Denominator: 4, Value: f64(0.25)},
		CrosscheckRejectionRate: auditfigures.Ratio{Numerator: 1, Denominator: 3, Value: f64(1.0 / 3)},
		DivergenceRate:          auditfigures.Ratio{Numerator: 1, Denominator: 2, Value: f64(0.5)},
		Revenue: auditfigures.Revenue{
			// The drop (F) was paid; H was refunded in full, B in part. On
			// the agent rail, L1 was refunded; L3 was confirmed by the
			// operator; M1 was paid over MCP, once whatever its retries;
			// V, S, D and W were never paid.
			Rows: []auditfigures.RevenueRow{
				{Date: "2026-11-20", Tier: "quick", Rail: "agent", Currency: "usdc", Amounts: auditfigures.Amounts{Sessions: 1, AmountTotal: 50_000, RefundedSessions: 1, AmountRefunded: 50_000, AmountNet: 0}},
				{Date: "2026-11-20", Tier: "quick", Rail: "card", Currency: "cad", Amounts: auditfigures.Amounts{Sessions: 2, AmountTotal: 200, RefundedSessions: 1, AmountRefunded: 100, AmountNet: 100}},
				{Date: "2026-11-21", Tier: "full", Rail: "agent", Currency: "usdc", Amounts: auditfigures.Amounts{Sessions: 1, AmountTotal: 250_000, AmountNet: 250_000}},
				{Date: "2026-11-21", Tier: "full", Rail: "card", Currency: "cad", Amounts: auditfigures.Amounts{Sessions: 1, AmountTotal: 500, RefundedSessions: 1, AmountRefunded: 200, AmountNet: 300}},
				{Date: "2026-11-21", Tier: "quick", Rail: "agent", Currency: "usdc", Amounts: auditfigures.Amounts{Sessions: 1, AmountTotal: 50_000, AmountNet: 50_000}},
				{Date: "2026-11-21", Tier: "quick", Rail: "card", Currency: "cad", Amounts: auditfigures.Amounts{Sessions: 2, AmountTotal: 200, AmountNet: 200}},
				{Date: "2026-11-21", Tier: "strategy", Rail: "agent", Currency: "usdc", Amounts: auditfigures.Amounts{Sessions: 1, AmountTotal: 1_000_000, AmountNet: 1_000_000}},
			},
			Totals: []auditfigures.RevenueTotal{
				{Rail: "agent", Currency: "usdc", Amounts: auditfigures.Amounts{Sessions: 4, AmountTotal: 1_350_000, RefundedSessions: 1, AmountRefunded: 50_000, AmountNet: 1_300_000}},
				{Rail: "card", Currency: "cad", Amounts: auditfigures.Amounts{Sessions: 5, AmountTotal: 900, RefundedSessions: 2, AmountRefunded: 300, AmountNet: 600}},
			},
			// C and T1, apart.
			TestMode: []auditfigures.RevenueTotal{
				{Rail: "agent", Currency: "usdc", Amounts: auditfigures.Amounts{Sessions: 1, AmountTotal: 50_000, AmountNet: 50_000}},
				{Rail: "card", Currency: "cad", Amounts: auditfigures.Amounts{Sessions: 1, AmountTotal: 100, AmountNet: 100}},
			},
		},
		// OK: L1, L2, T1 and M1 (not the smoke test's); VERIFY_FAILED: V
		// and W; RETRY: L2 and M1; IDENTIFIER_CONFLICT: L1's and M1's;
		// every other outcome once. The settled ones' latencies 900, 1500,
		// 1800 and 2500 ms: the ranks 2 and 4, under VC-2's bound.
		X402: auditfigures.X402{
			Outcomes: []auditfigures.Outcome{{Status: "OK", Records: 4}, {Status: "REPLAY", Records: 1}, {Status: "INVALID", Records: 1},
				{Status: "VERIFY_FAILED", Records: 2}, {Status: "SETTLE_FAILED", Records: 1}, {Status: "SETTLE_UNCONFIRMED", Records: 1}, {Status: "FACILITATOR_DOWN", Records: 1},
				{Status: "RETRY", Records: 2}, {Status: "IDENTIFIER_CONFLICT", Records: 2}},
			// By the route or tool each record names, the smoke test's
			// retry over MCP left out.
			ByEndpoint: []auditfigures.EndpointOutcomes{
				{Transport: "http", Endpoint: "/x402/query", EndpointCounts: auditfigures.EndpointCounts{Records: 8, OK: 2, IdentifierConflict: 1}},
				{Transport: "http", Endpoint: "/x402/query/full", EndpointCounts: auditfigures.EndpointCounts{Records: 1}},
				{Transport: "http", Endpoint: "/x402/query/premium", EndpointCounts: auditfigures.EndpointCounts{Records: 2, OK: 1, Retry: 1}},
				{Transport: "mcp", Endpoint: "mcp:oracle_full_breakdown", EndpointCounts: auditfigures.EndpointCounts{Records: 1, IdentifierConflict: 1}},
				{Transport: "mcp", Endpoint: "mcp:oracle_quick_take", EndpointCounts: auditfigures.EndpointCounts{Records: 2, OK: 1, Retry: 1}},
				{Transport: "mcp", Endpoint: "mcp:oracle_strategy_session", EndpointCounts: auditfigures.EndpointCounts{Records: 1}},
			},
			ByTransport: []auditfigures.TransportOutcomes{
				{Transport: "http", EndpointCounts: auditfigures.EndpointCounts{Records: 11, OK: 3, Retry: 1, IdentifierConflict: 1}},
				{Transport: "mcp", EndpointCounts: auditfigures.EndpointCounts{Records: 4, OK: 1, Retry: 1, IdentifierConflict: 1}},
			},
			Latency:        auditfigures.Latency{Method: "nearest-rank", Records: 4, P50MS: i64(1500), P95MS: i64(2500), MaxMS: i64(2500)},
			LatencyBoundMS: 5000, P95WithinBound: boolp(true),
		},
		// P and Q started trials, P converted; P, R and S subscribed, R
		// cancelled; P's live and S's test-mode revenue apart.
		Chat: auditfigures.Chat{
			Exchanges: []auditfigures.ChatExchanges{{Plan: "subscriber", Outcome: "answered", Records: 2}, {Plan: "trial", Outcome: "answered", Records: 4},
				{Plan: "trial", Outcome: "model_failed", Records: 1}, {Plan: "trial", Outcome: "trial_used", Records: 1}},
			Apologies: 1, TrialsStarted: 2, TrialsConverted: auditfigures.Ratio{Numerator: 1, Denominator: 2, Value: f64(0.5)},
			ActiveSubscribers: 2,
			Recurring:         []auditfigures.ChatRecurring{{Live: true, Currency: "cad", Subscribers: 1, Amount: 500}, {Currency: "cad", Subscribers: 1, Amount: 500}},
			Churn:             auditfigures.Ratio{Numerator: 1, Denominator: 3, Value: f64(1.0 / 3)},
		},
		ContentFilter: []auditfigures.FilterDay{{Date: day1.Format(auditfigures.DateFormat), Rewrites: 1, Quarantines: 1},
			{Date: day2.Format(auditfigures.DateFormat), Rewrites: 1}},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("figures\n%s\nwant\n%s", g, w)
	}

	text := got.String()
	for _, line := range []string{
		"partition days 2026-11-20 to 2026-11-21",
		"68 records; 9 smoke records left out",
		"subscriber answered 2, trial answered 4, trial model_failed 1, trial trial_used 1",
		"2 started; 50.0 % (1 of 2) converted",
		"2 active; 5.00 CAD a month (1), 5.00 CAD a month (1) in test mode",
		"33.3 % (1 of 3) of the subscriptions that granted access ended",
		"6 sessions from 7 paid records (reconcile 1, result_page 1, webhook 5)",
		"p50 1200 ms, p95 4000 ms, max 4000 ms (5 records, nearest-rank)",
		"payment to verdict stored  p50 9000 ms, p95 95000 ms, max 95000 ms (2 records, nearest-rank); 1 over 60 s",
		"payment to email sent      p50 14000 ms, p95 20000 ms, max 20000 ms (2 records, nearest-rank); 0 over 60 s",
		"paid sessions against Stripe                not compared (no Stripe key)",
		"60.0 % (3 of 5): 3 CACHED, 2 REGENERATED; 2 OK (first verdicts)",
		"100.0 % (19 of 19) failure records",
		"content filter, " + day1.Format(auditfigures.DateFormat), "written again by the model: 1; held for review: 1",
		"25.0 % (1 of 4) deliveries",
		"33.3 % (1 of 3) crosschecks",
		"50.0 % (1 of 2) regenerations",
		"  2  transient: SES answered # after # tries",
		"2026-11-20  quick     card   2                   2.00 CAD   1.00 CAD (1)   1.00 CAD",
		"2026-11-21  quick     card   2                   2.00 CAD   none           2.00 CAD",
		"2026-11-20  quick     agent  1                   0.05 USDC  0.05 USDC (1)  0.00 USDC",
		"2026-11-21  strategy  agent  1                   1.00 USDC  none           1.00 USDC",
		"2026-11-21  quick     agent  1                   0.05 USDC  none           0.05 USDC",
		"total                 agent  4                   1.35 USDC  0.05 USDC (1)  1.30 USDC",
		"total                 card   5                   9.00 CAD   3.00 CAD (2)   6.00 CAD",
		"test mode (no money moved)  agent  1 orders    0.05 USDC paid",
		"test mode (no money moved)  card   1 sessions  1.00 CAD paid",
		"OK 4, REPLAY 1, INVALID 1, VERIFY_FAILED 2, SETTLE_FAILED 1, SETTLE_UNCONFIRMED 1, FACILITATOR_DOWN 1, RETRY 2, IDENTIFIER_CONFLICT 2",
		"p50 1500 ms, p95 2500 ms, max 2500 ms (4 records, nearest-rank); p95 within the bound",
		"x402 by endpoint (agent)                    http OK 3, RETRY 1, IDENTIFIER_CONFLICT 1 (11 records); mcp OK 1, RETRY 1, IDENTIFIER_CONFLICT 1 (4 records)",
		"RETRY few beside OK; IDENTIFIER_CONFLICT near 0",
		"  /x402/query                               OK 2, RETRY 0, IDENTIFIER_CONFLICT 1 (8 records)",
		"  /x402/query/full                          OK 0, RETRY 0, IDENTIFIER_CONFLICT 0 (1 records)",
		"  /x402/query/premium                       OK 1, RETRY 1, IDENTIFIER_CONFLICT 0 (2 records)",
		"  mcp:oracle_full_breakdown                 OK 0, RETRY 0, IDENTIFIER_CONFLICT 1 (1 records)",
		"  mcp:oracle_quick_take                     OK 1, RETRY 1, IDENTIFIER_CONFLICT 0 (2 records)",
		"  mcp:oracle_strategy_session               OK 0, RETRY 0, IDENTIFIER_CONFLICT 0 (1 records)",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("the text lacks %q:\n%s", line, text)
		}
	}
	for _, leak := range []string{sessA, sessB, agentL1, agentL3} {
		if strings.Contains(text, leak) {
			t.Errorf("the text shows %q:\n%s", leak, text)
		}
	}
}

// TestEmptyRangeHasNoData: a range without records says "no data" for
// every ratio and percentile, in the text and as JSON null, never NaN.
func TestEmptyRangeHasNoData(t *testing.T) {
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	bucket := f.Ref("AuditBucket")
	writeLog(t, audit.NewWriter(c, bucket))

	oct := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	got, err := auditfigures.Compute(context.Background(), c, bucket, oct, oct.AddDate(0, 0, 30))
	if err != nil {
		t.Fatal(err)
	}
	want := auditfigures.Figures{
		From: "2026-10-01", To: "2026-10-31",
		Paid:           auditfigures.Paid{RecordsBySource: map[string]int64{}},
		WebhookLatency: auditfigures.Latency{Method: "nearest-rank"},
		CustomerWait: auditfigures.CustomerWait{ToVerdict: auditfigures.Wait{Latency: auditfigures.Latency{Method: "nearest-rank"}},
			ToEmail: auditfigures.Wait{Latency: auditfigures.Latency{Method: "nearest-rank"}}},
		Errors:  auditfigures.Errors{TopPatterns: []auditfigures.Pattern{}},
		Revenue: auditfigures.Revenue{Rows: []auditfigures.RevenueRow{}, Totals: []auditfigures.RevenueTotal{}, TestMode: []auditfigures.RevenueTotal{}},
		X402: auditfigures.X402{Outcomes: []auditfigures.Outcome{{Status: "OK"}, {Status: "REPLAY"}, {Status: "INVALID"}, {Status: "VERIFY_FAILED"},
			{Status: "SETTLE_FAILED"}, {Status: "SETTLE_UNCONFIRMED"}, {Status: "FACILITATOR_DOWN"}, {Status: "RETRY"}, {Status: "IDENTIFIER_CONFLICT"}},
			ByEndpoint:  []auditfigures.EndpointOutcomes{},
			ByTransport: []auditfigures.TransportOutcomes{{Transport: "http"}, {Transport: "mcp"}},
			Latency:     auditfigures.Latency{Method: "nearest-rank"}, LatencyBoundMS: 5000},
		Chat:          auditfigures.Chat{Exchanges: []auditfigures.ChatExchanges{}, Recurring: []auditfigures.ChatRecurring{}},
		ContentFilter: []auditfigures.FilterDay{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("figures %+v, want %+v", got, want)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sessions_per_record", "hit_ratio", "detail_coverage", "email_failure_rate", "crosscheck_rejection_rate", "regeneration_divergence_rate"} {
		if !bytes.Contains(b, []byte(`"`+name+`":{"numerator":0,"denominator":0,"value":null}`)) {
			t.Errorf("%s is not an empty ratio with a null value: %s", name, b)
		}
	}
	if !bytes.Contains(b, []byte(`"p50_ms":null,"p95_ms":null,"max_ms":null`)) || !bytes.Contains(b, []byte(`"top_patterns":[]`)) {
		t.Errorf("empty latency or patterns: %s", b)
	}
	if !bytes.Contains(b, []byte(`"by_endpoint":[],"by_transport":[{"transport":"http","records":0,"ok":0,"retry":0,"identifier_conflict":0},`+
		`{"transport":"mcp","records":0,"ok":0,"retry":0,"identifier_conflict":0}]`)) {
		t.Errorf("the x402 endpoints are not an empty list beside both transports at 0: %s", b)
	}
	text := got.String()
	if n := strings.Count(text, "no data"); n != 17 {
		t.Errorf("%d figures say no data, want 17 (five ratios, the two latencies, the two waits, the x402 outcomes and endpoints, the patterns, the revenue, the chat's exchanges, conversions, revenue and churn):\n%s", n, text)
	}
	if !strings.Contains(text, "x402 by endpoint (agent)                    no data (0 records)") {
		t.Errorf("the x402 endpoints are not without data:\n%s", text)
	}
	if !bytes.Contains(b, []byte(`"p95_within_bound":null`)) {
		t.Errorf("the x402 latency's bound is judged without a record: %s", b)
	}
	if strings.Contains(strings.ToLower(text), "nan") {
		t.Errorf("the text shows NaN:\n%s", text)
	}
}

// TestUnreadableRecordFailsNamingItsKey: one object that is no record
// fails the figures, naming its key with the session cut to its name
// (oracle.ShortID); nothing is computed over the rest.
func TestUnreadableRecordFailsNamingItsKey(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	bucket := f.Ref("AuditBucket")
	writeLog(t, audit.NewWriter(c, bucket))
	key := "records/date=2026-11-21/source=webhook/cs_live_brokenrecord0000000000000000000.paid.json"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(`{"timestamp": "yesterday"`),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256,
	}); err != nil {
		t.Fatal(err)
	}
	got, err := auditfigures.Compute(ctx, c, bucket, day1, day2)
	if err == nil {
		t.Fatalf("an unreadable record gave figures: %+v", got)
	}
	if want := "records/date=2026-11-21/source=webhook/cs_live_brokenrecord0000….paid.json"; !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "brokenrecord0000000000000000000") {
		t.Fatalf("error %q does not name %s by its short form", err, want)
	}

	// A record that cannot be fetched fails the same way.
	failing := failingGet{Client: c, key: audit.Key(rec(sessB, day2, audit.SourceWebhook, "", ""), audit.RecordID(sessB, audit.NamePaid))}
	_, err = auditfigures.Compute(ctx, failing, bucket, day2, day2)
	if !errors.Is(err, errDenied) || !strings.Contains(err.Error(), "records/date=2026-11-21/source=webhook/"+oracle.ShortID(sessB)+"….paid.json") || strings.Contains(err.Error(), sessB) {
		t.Fatalf("error %v, want the denial naming the record", err)
	}
}

var errDenied = errors.New("access denied")

// failingGet refuses to read one key.
type failingGet struct {
	*s3.Client
	key string
}

func (f failingGet) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if aws.ToString(in.Key) == f.key {
		return nil, errDenied
	}
	return f.Client.GetObject(ctx, in, opts...)
}

// TestPaidSessionsAgainstStripesOwnList (VC-1): the log's paid sessions
// are compared with Stripe's own list of the paid sessions created on the
// same days (the fake Stripe, over HTTP): one Stripe has and the log does
// not is missing, one the log has and Stripe does not list as paid is
// named too; unpaid and smoke sessions and the agent rail's orders are
// left out; a Stripe that cannot
// be listed leaves the comparison absent, not zero.
func TestPaidSessionsAgainstStripesOwnList(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	bucket := f.Ref("AuditBucket")
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(fakestripe.New(fakestripe.Options{Clock: func() time.Time { return at }}))
	defer srv.Close()
	stripe := stripex.New("sk_test_figures", stripex.Options{BaseURL: srv.URL})
	session := func(pay, smoke bool) string {
		t.Helper()
		s, err := stripe.CreateCheckoutSession(ctx, stripex.CheckoutRequest{Tier: oracle.TierQuick, Query: "Should I open a bakery?",
			SuccessURL: "http://localhost:3000/oracle/result?session_id={CHECKOUT_SESSION_ID}", CancelURL: "http://localhost:3000/",
			Smoke: smoke, Email: "smoke@simulator.amazonses.com"})
		if err != nil {
			t.Fatal(err)
		}
		if pay {
			resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).
				PostForm(srv.URL+"/pay/"+s.ID, url.Values{"email": {"payer@example.com"}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		return s.ID
	}
	logged, unlogged, _, smoked := session(true, false), session(true, false), session(false, false), session(true, true)
	const notInStripe = "cs_test_notInStripe000000000000"
	s := seed{t, audit.NewWriter(c, bucket)}
	paid := audit.EventCheckoutCompleted
	s.write(rec(logged, at, audit.SourceWebhook, paid, audit.StatusOK), audit.RecordID(logged, audit.NamePaid))
	s.write(rec(notInStripe, at, audit.SourceWebhook, paid, audit.StatusOK), audit.RecordID(notInStripe, audit.NamePaid))
	s.write(rec(smoked, at, audit.SourceWebhook, paid, audit.StatusOK, smoke), audit.RecordID(smoked, audit.NamePaid))
	// An agent's settled order on the test network: no Stripe session
	// stands behind it, and none is missing from Stripe's list.
	agent := agentOrder("test", "settledAgainstStripe")
	s.write(x402(agent, at, audit.StatusOK), audit.RecordID(agent, audit.NameX402, "ok", "req-1"))

	got, err := auditfigures.ComputeAgainstStripe(ctx, c, bucket, at, at, map[bool]auditfigures.SessionLister{false: stripe})
	if err != nil {
		t.Fatal(err)
	}
	want := &auditfigures.StripeCheck{Modes: []string{"test"}, StripePaid: 2,
		Logged:         auditfigures.Ratio{Numerator: 1, Denominator: 2, Value: f64(0.5)},
		MissingFromLog: []string{oracle.ShortID(unlogged)}, NotInStripe: []string{oracle.ShortID(notInStripe)}}
	if !reflect.DeepEqual(got.AgainstStripe, want) {
		t.Fatalf("against Stripe %+v, want %+v", got.AgainstStripe, want)
	}
	line := "50.0 % (1 of 2) of Stripe's paid sessions (test) have a paid record; missing from the log: " + oracle.ShortID(unlogged) +
		"; not paid in Stripe's list: " + oracle.ShortID(notInStripe)
	if text := got.String(); !strings.Contains(text, line) || strings.Contains(text, unlogged) {
		t.Errorf("the text lacks %q, or shows a whole session id:\n%s", line, text)
	}

	srv.Close()
	got, err = auditfigures.ComputeAgainstStripe(ctx, c, bucket, at, at, map[bool]auditfigures.SessionLister{false: stripe})
	if err != nil || got.AgainstStripe == nil || got.AgainstStripe.Error == "" || got.AgainstStripe.Logged.Value != nil || got.Paid.Sessions != 2 {
		t.Fatalf("with Stripe down: %+v, %v; want the figures, and the comparison absent with its error", got.AgainstStripe, err)
	}
}
