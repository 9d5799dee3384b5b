package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/crosscheck"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/sqsbatch"
	"42sisters.ai/oracle/shared/store"
)

// Orders is the order store (shared/store).
type Orders interface {
	Get(ctx context.Context, sessionID string) (oracle.Order, bool, error)
	StartGeneration(ctx context.Context, sessionID string, lease time.Duration) (oracle.Order, string, error)
	ResetForRegeneration(ctx context.Context, sessionID string, hold time.Duration) (bool, error)
	StoreVerdict(ctx context.Context, sessionID, lease string, v store.StoredVerdict) (oracle.Order, error)
	AbandonGeneration(ctx context.Context, sessionID, lease string) error
	MarkFailed(ctx context.Context, sessionID, reason string) (bool, error)
	Park(ctx context.Context, sessionID string) (time.Time, error)
	Hold(ctx context.Context, sessionID, lease, reason string) (bool, error)
	QuarantineGeneration(ctx context.Context, sessionID, lease string, q store.Quarantine) (bool, error)
}

// Model makes one bounded, retried model call (gemini.Caller).
type Model interface {
	Call(ctx context.Context, r gemini.Request, validate func(text string) error) (gemini.Result, error)
}

// Circuit is the breaker every generator container shares (shared/circuit).
type Circuit interface {
	Allow(ctx context.Context) (circuit.Permit, error)
	Succeeded(ctx context.Context, p circuit.Permit, latency time.Duration) (circuit.Transition, error)
	Failed(ctx context.Context, p circuit.Permit) (circuit.Transition, error)
}

// Sender sends a job to a queue.
type Sender interface {
	Send(ctx context.Context, j queue.Job) error
}

// Auditor appends audit records.
type Auditor interface {
	Write(ctx context.Context, r audit.Record, id string) (bool, error)
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// ContentFilter is gate 1 of the outbound content filter (shared/sosfilter).
type ContentFilter interface {
	Analysis(a oracle.Analysis, query string) (oracle.Analysis, sosfilter.Report)
}

// QuarantineStore keeps what the filter stopped (shared/quarantine).
type QuarantineStore interface {
	Put(ctx context.Context, r quarantine.Record) (string, error)
}

// Once is a "first caller wins" guard that a failed step can release
// (store.Ledger).
type Once interface {
	Mark(ctx context.Context, key string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, key string) error
}

// Originals keep each session's first verdict past its order (store.Ledger).
type Originals interface {
	KeepOriginal(ctx context.Context, sessionID string, o oracle.Original, ttl time.Duration) error
}

// Defaults of the Handler's windows; tests and the local stack shorten them.
const (
	DefaultParkingBudget = 6 * time.Hour
	DefaultRetryBase     = 30 * time.Second
	maxRetryDelay        = 15 * time.Minute
)

// Handler consumes the generate queue.
type Handler struct {
	Orders  Orders
	Model   Model
	Circuit Circuit
	Key     *KeyHealth
	Mail    Sender
	// Requeue sends to the generate queue itself: parked and re-delayed jobs.
	Requeue Sender
	Audit   Auditor
	Alerts  Alerter
	// Filter is gate 1: every verdict passes it before it is stored;
	// Quarantine keeps what it stops.
	Filter     ContentFilter
	Quarantine QuarantineStore
	// Originals keep the first verdict's label and hash for
	// OriginalRetention, so a regeneration after the order is deleted can
	// still be compared with what was emailed.
	Originals         Originals
	OriginalRetention time.Duration
	// Once takes each quarantine reminder step once.
	Once   Once
	Hasher *audit.Hasher
	Log    *slog.Logger
	Now    func() time.Time
	Rand   func() float64
	// Retention is how long a verdict is kept, from its generation.
	Retention time.Duration
	// CallTimeout bounds one model call; the generation lease outlasts it.
	CallTimeout time.Duration
	// MaxReceives is the queue's maxReceiveCount: the delivery that fails
	// with it is the last, so the order is marked FAILED and alerted.
	MaxReceives int
	// ParkingBudget bounds how long an order waits for the model to come
	// back (circuit open, key rejected, transient failures) before it fails.
	ParkingBudget time.Duration
	// RetryBase is the first re-delay after a transient model failure; it
	// doubles per attempt up to 15 minutes.
	RetryBase time.Duration
	// QuarantineReminder is how often an unresolved quarantine is alerted
	// again.
	QuarantineReminder time.Duration
}

// Handle processes a batch and reports the records that failed, so that
// SQS redelivers only those (and, after the queue's maxReceiveCount, moves
// them to the dead-letter queue).
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return sqsbatch.Process(ctx, h.Log, ev, h.process), nil
}

func (h *Handler) process(ctx context.Context, rec events.SQSMessage) error {
	receives, _ := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	job, err := queue.Parse(rec.Body)
	if err == nil && job.Reason == "" {
		err = errors.New("a mail job on the generate queue")
	}
	if err != nil {
		// Garbage never vanishes: it fails until the dead-letter queue takes
		// it, and the operator hears of it now.
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: "GARBAGE_JOB", Session: rec.MessageId,
			Detail: "unreadable message on the generate queue (" + rec.MessageId + "); it will reach the dead-letter queue"})
		return fmt.Errorf("message %s: %w", rec.MessageId, err)
	}
	log := h.Log.With(obs.Session(job.SessionID), "reason", job.Reason, "receive", receives, "attempt", job.Attempt)
	started := h.Now()
	if job.NotBefore != nil && job.NotBefore.After(started) {
		// A wait longer than SQS's 15-minute delay goes in hops.
		return h.Requeue.Send(ctx, job)
	}
	if job.Reason == queue.ReasonQuarantineReview {
		return h.remindQuarantine(ctx, log, job)
	}
	if job.Reason == queue.ReasonRegenerate {
		// Only an expired verdict is reset; a live one is left alone.
		if _, err := h.Orders.ResetForRegeneration(ctx, job.SessionID, h.lease(ctx)+time.Hour); err != nil {
			return err
		}
	}
	order, found, err := h.Orders.Get(ctx, job.SessionID)
	switch {
	case err != nil:
		return err
	case !found:
		log.Warn("generate job for an unknown order acknowledged")
		return nil
	case order.Status == oracle.StatusReady:
		// A redelivery after the verdict was stored: finish what may not
		// have been finished (both steps are idempotent).
		return h.afterStore(ctx, log, order, started)
	case order.Status == oracle.StatusFailed || order.Status == oracle.StatusHeld || order.Status == oracle.StatusQuarantined:
		// A redelivery after the order was settled without a verdict: the
		// attempt that settled it may have died before queueing what the
		// customer and the operator are owed.
		return h.settled(ctx, log, order)
	case order.Status != oracle.StatusPaid && order.Status != oracle.StatusGenerating:
		log.Info("generation not owed; job acknowledged", "status", string(order.Status))
		return nil
	}

	// Whatever keeps the model from answering, the order waits instead of
	// failing: the key is refused, or the circuit is open.
	if until, ok := h.Key.Rejected(ctx); ok {
		return h.park(ctx, log, job, order, until, "the model key is refused")
	}
	permit, err := h.Circuit.Allow(ctx)
	var open *circuit.OpenError
	if errors.As(err, &open) {
		return h.park(ctx, log, job, order, open.Until, "the circuit is open ("+string(open.Reason)+")")
	}
	if err != nil {
		log.Warn("circuit state unreadable; calling the model", "error", err.Error())
	}

	order, lease, err := h.Orders.StartGeneration(ctx, job.SessionID, h.lease(ctx))
	var notOwed *store.ErrNotOwed
	switch {
	case errors.As(err, &notOwed):
		log.Info("generation not owed; job acknowledged", "status", string(notOwed.Order.Status))
		return nil
	case err != nil:
		return err
	}
	log = log.With("generation", order.Attempts)

	callStart := h.Now()
	g, err := h.generate(ctx, order, started)
	h.report(ctx, log, permit, h.Now().Sub(callStart), err)
	if err != nil {
		return h.failed(ctx, log, job, order, lease, receives, started, err)
	}
	// Gate 1: what the model wrote reaches the store only through the
	// content filter, on first generations and regenerations alike.
	filtered, rep := h.Filter.Analysis(g.analysis, order.Query)
	h.auditFilter(ctx, order, rep, fmt.Sprintf("%s.filter-generator-%d", order.SessionID, order.Attempts), started)
	if rep.Action == sosfilter.Quarantine {
		return h.quarantine(ctx, log, order, lease, g, rep, started)
	}
	if rep.Action == sosfilter.Replace {
		log.Warn("content filter replaced terms in the verdict", "terms", strings.Join(rep.Terms(), ","), "filter_version", rep.Version)
	}
	g.analysis = filtered
	canonical, err := g.analysis.CanonicalJSON()
	if err != nil {
		return h.failed(ctx, log, job, order, lease, receives, started, err)
	}
	v := store.StoredVerdict{
		Canonical:      string(canonical),
		Hash:           h.Hasher.Hash(string(canonical)),
		PromptVersion:  prompt.Version,
		Model:          g.result.Model,
		Label:          g.analysis.Verdict,
		CoherenceScore: g.decision.CoherenceScore,
		FilterVersion:  rep.Version,
		ExpiresAt:      h.Now().Add(h.Retention),
	}
	if order.Regen {
		v.Divergence = oracle.Diverge(order.OriginalVerdict, g.analysis.Verdict)
	}
	stored, err := h.Orders.StoreVerdict(ctx, order.SessionID, lease, v)
	if errors.Is(err, store.ErrLeaseLost) {
		// Another generator overtook this slow one; whichever stored first
		// is the verdict, and its own job finishes the work.
		log.Warn("generation lease lost before storing; the verdict of the other attempt stands")
		return nil
	}
	if err != nil {
		_ = h.Orders.AbandonGeneration(ctx, order.SessionID, lease)
		return err
	}
	log.Info("verdict stored", "verdict", string(g.analysis.Verdict), "model", g.result.Model,
		"model_attempts", g.result.Attempts, "coherence", g.decision.CoherenceScore, "latency_ms", h.Now().Sub(started).Milliseconds())
	return h.afterStore(ctx, log, stored, started)
}

// lease outlasts what is left of this invocation, so a live generator is
// never overtaken; only one that died is.
func (h *Handler) lease(ctx context.Context) time.Duration {
	lease := 2 * h.CallTimeout
	if d, ok := ctx.Deadline(); ok {
		lease = max(lease, d.Sub(h.Now())+30*time.Second)
	}
	return lease
}

// generation is a model reply that passed the crosscheck and the schema.
type generation struct {
	result   gemini.Result
	raw      string // the reply as the model wrote it, for a quarantine record
	analysis oracle.Analysis
	decision crosscheck.Decision
}

// rejected is a reply the crosscheck refused (SPEC_ORACLE_TMM_CROSSCHECK).
type rejected struct{ decision crosscheck.Decision }

func (r *rejected) Error() string {
	return fmt.Sprintf("the crosscheck rejected the reply (%s, C=%.4f)", r.decision.Reason, r.decision.CoherenceScore)
}

// generate asks the model, checking each reply before anything else sees
// it: the crosscheck first (audited every time), then the tier's schema. A
// reply either fails gets the model call's one stricter retry, which is the
// crosscheck's "one fresh generation".
func (h *Handler) generate(ctx context.Context, o oracle.Order, started time.Time) (generation, error) {
	p, err := prompt.Build(o.Tier, o.Query)
	if err != nil {
		return generation{}, fmt.Errorf("build prompt: %w", err)
	}
	var g generation
	checks := 0
	validate := func(text string) error {
		checks++
		d := crosscheck.Check(o.Tier, []byte(text))
		h.auditCrosscheck(ctx, o, d, checks, started)
		if !d.Approved && !slices.Contains(d.Flags, crosscheck.FlagMalformedJSON) {
			return &rejected{decision: d}
		}
		a, err := oracle.ParseAnalysis(o.Tier, []byte(text))
		if err != nil {
			return err
		}
		g.analysis, g.decision, g.raw = a, d, text
		return nil
	}
	res, err := h.Model.Call(ctx, gemini.Request{System: p.System, User: p.User, Schema: prompt.Schema(o.Tier), Seed: prompt.Seed}, validate)
	g.result = res
	return g, err
}

// report tells the circuit how the model fared: a final failure of the
// kinds that show it unwell counts; any answer, even a refused one, is a
// success (the model is up). latency is the whole call, retries and
// backoffs included, as the circuit's slow streak needs (GAP-02B: a model
// that answers only on its third attempt is slow).
func (h *Handler) report(ctx context.Context, log *slog.Logger, p circuit.Permit, latency time.Duration, callErr error) {
	if errors.Is(callErr, gemini.ErrNoBudget) {
		return // nothing was asked
	}
	var t circuit.Transition
	var err error
	if gemini.Countable(callErr) {
		t, err = h.Circuit.Failed(ctx, p)
	} else {
		t, err = h.Circuit.Succeeded(ctx, p, latency)
	}
	if err != nil {
		log.Error("recording the model's health in the circuit failed", "error", err.Error())
	}
	switch {
	case t.Tripped():
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: "CIRCUIT_OPEN",
			Detail: "the model circuit opened (" + t.String() + "); paid orders are parked until it closes"})
	case t.Changed() && t.To == circuit.Closed:
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: "CIRCUIT_CLOSED", Detail: "the model circuit closed; parked orders resume"})
	}
	if t.Changed() {
		log.Warn("circuit " + t.String())
	}
}

// failed handles a generation that produced no verdict; nothing partial is
// stored whatever the cause.
func (h *Handler) failed(ctx context.Context, log *slog.Logger, job queue.Job, o oracle.Order, lease string, receives int, started time.Time, cause error) error {
	class := failureClass(cause)
	log.Warn("generation failed", "class", class, "error", cause.Error())
	var rej *rejected
	if errors.As(cause, &rej) {
		return h.hold(ctx, log, o, lease, rej.decision, started)
	}
	if err := h.Orders.AbandonGeneration(ctx, o.SessionID, lease); err != nil {
		log.Error("releasing the generation lease failed", "error", err.Error())
	}
	h.audit(ctx, o, audit.StatusError, audit.Detail("generation failed: "+class), fmt.Sprintf("%s.attempt-%d", o.SessionID, o.Attempts), "", started)
	switch kind := gemini.KindOf(cause); {
	case kind == gemini.AuthFailure:
		until := h.Key.Reject(h.Now())
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: "GEMINI_AUTH_FAILURE",
			Detail: "the model refused the API key; orders are parked until a working key is deployed"})
		return h.park(ctx, log, job, o, until, "the model key is refused")
	case kind == gemini.BadRequest:
		// The same request would be refused again: retrying is pointless.
		return h.giveUp(ctx, log, o, class)
	case gemini.Countable(cause), errors.Is(cause, gemini.ErrNoBudget):
		next := job
		next.Attempt++
		return h.park(ctx, log, next, o, h.Now().Add(h.retryDelay(next.Attempt)), "the model failed ("+class+")")
	}
	// Content and internal failures: SQS redelivers, and the last delivery
	// gives up (the message then reaches the dead-letter queue).
	if h.MaxReceives > 0 && receives >= h.MaxReceives {
		_ = h.giveUp(ctx, log, o, class)
	}
	return cause
}

// retryDelay is the wait before attempt n after a transient failure:
// RetryBase doubled per attempt with equal jitter, at most 15 minutes.
func (h *Handler) retryDelay(n int) time.Duration {
	d := float64(h.RetryBase) * math.Pow(2, float64(max(n-1, 0)))
	d = min(d, float64(maxRetryDelay))
	return time.Duration(d/2 + h.Rand()*d/2)
}

// park puts the job back on the queue until the model can be asked again,
// keeping the order as it is; past the parking budget the order fails.
func (h *Handler) park(ctx context.Context, log *slog.Logger, job queue.Job, o oracle.Order, until time.Time, why string) error {
	since, err := h.Orders.Park(ctx, o.SessionID)
	var notOwed *store.ErrNotOwed
	if errors.As(err, &notOwed) {
		log.Info("generation not owed; job acknowledged", "status", string(notOwed.Order.Status))
		return nil
	}
	if err != nil {
		return err
	}
	now := h.Now()
	deadline := since.Add(h.ParkingBudget)
	if !now.Before(deadline) {
		return h.giveUp(ctx, log, o, "model_unavailable")
	}
	if until.Before(now) {
		until = now
	}
	if until.After(deadline) {
		until = deadline // the budget's end is checked on time
	}
	job.NotBefore = &until
	if err := h.Requeue.Send(ctx, job); err != nil {
		return fmt.Errorf("park: %w", err) // the item fails; SQS brings it back
	}
	log.Info("job parked", "why", why, "until", until.UTC().Format(time.RFC3339), "parked_since", since.UTC().Format(time.RFC3339))
	return nil
}

// giveUp marks the order FAILED, tells the operator and the customer once.
func (h *Handler) giveUp(ctx context.Context, log *slog.Logger, o oracle.Order, class string) error {
	changed, err := h.Orders.MarkFailed(ctx, o.SessionID, class)
	if err != nil {
		return fmt.Errorf("mark failed: %w", err)
	}
	if !changed {
		return nil
	}
	log.Error("generation failed for good", "class", class)
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: "GENERATION_FAILED", Session: o.SessionID,
		Detail: "no verdict (" + class + "); the customer is told to ask for a refund"})
	return h.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: queue.MailFailed})
}

// hold sets aside an order whose replies failed the crosscheck twice: never
// stored, never sent, never replaced by anything else.
func (h *Handler) hold(ctx context.Context, log *slog.Logger, o oracle.Order, lease string, d crosscheck.Decision, started time.Time) error {
	held, err := h.Orders.Hold(ctx, o.SessionID, lease, "crosscheck_"+string(d.Reason))
	if err != nil {
		_ = h.Orders.AbandonGeneration(ctx, o.SessionID, lease)
		return err
	}
	if !held {
		log.Warn("generation lease lost before holding the order")
		return nil
	}
	log.Error("verdict held for review", "crosscheck_reason", string(d.Reason), "coherence", d.CoherenceScore)
	h.audit(ctx, o, audit.StatusError, audit.Detail("held for review: crosscheck "+string(d.Reason)), o.SessionID+".held", "", started)
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: "VERDICT_HELD", Session: o.SessionID,
		Detail: fmt.Sprintf("two replies failed the crosscheck (%s, C=%.4f); the order is HELD for review", d.Reason, d.CoherenceScore)})
	return h.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: queue.MailReview})
}

// failureClass names a failure for audit records and alerts without
// quoting the model or the customer.
func failureClass(err error) string {
	var rej *rejected
	switch {
	case errors.As(err, &rej):
		return "crosscheck_" + string(rej.decision.Reason)
	case errors.Is(err, gemini.ErrInvalidReply):
		return "invalid_reply"
	case errors.Is(err, gemini.ErrNoBudget):
		return "no_time_left"
	case gemini.KindOf(err) != 0:
		return "model_" + gemini.KindOf(err).String()
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "internal"
}

// divergenceCheck compares a regenerated verdict with the first one: an
// audit record (one per regeneration, however often this runs) and, when it
// moved far, the customer's notice (SPEC_ORACLE_REGEN_CONSISTENCY), which
// the mailer sends once.
func (h *Handler) divergenceCheck(ctx context.Context, log *slog.Logger, o oracle.Order) error {
	original := string(o.OriginalVerdict)
	if original == "" {
		original = "UNKNOWN"
	}
	r := h.record(o, audit.StatusOK, nil, "", h.Now())
	r.Event = "regen_divergence_check"
	r.Divergence = &audit.Divergence{OriginalVerdict: original, RegenVerdict: string(o.VerdictLabel),
		TopLevelMatch: o.OriginalVerdict == o.VerdictLabel, DivergenceLevel: o.Divergence}
	h.write(ctx, r, fmt.Sprintf("%s.divergence-%d", o.SessionID, o.GeneratedAt.Unix()))
	log.Info("regenerated verdict compared", "original", original, "regenerated", string(o.VerdictLabel), "divergence", o.Divergence)
	if !oracle.NotifyDivergence(o.Divergence) {
		return nil
	}
	if err := h.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: queue.MailDivergence}); err != nil {
		return fmt.Errorf("enqueue divergence notice: %w", err)
	}
	return nil
}

// afterStore audits the stored verdict, checks a regenerated one's
// divergence, keeps the first verdict past the order and enqueues a first
// verdict's email; a redelivery of a READY order runs it again, so
// everything here is idempotent. A failed audit write alerts but
// does not withhold the customer's email.
func (h *Handler) afterStore(ctx context.Context, log *slog.Logger, o oracle.Order, started time.Time) error {
	status, id := audit.StatusOK, o.SessionID+".generated"
	if o.Regen && o.GeneratedAt != nil {
		status, id = audit.StatusRegenerated, fmt.Sprintf("%s.regenerated-%d", o.SessionID, o.GeneratedAt.Unix())
		if err := h.divergenceCheck(ctx, log, o); err != nil {
			return err
		}
	}
	h.audit(ctx, o, status, nil, id, o.Model, started)
	original := oracle.Original{Verdict: o.VerdictLabel, Hash: o.VerdictHash}
	if o.Regen {
		original = oracle.Original{Verdict: o.OriginalVerdict, Hash: o.OriginalVerdictHash}
	}
	if err := h.Originals.KeepOriginal(ctx, o.SessionID, original, h.OriginalRetention); err != nil {
		return err
	}
	if o.Regen {
		// The emailed verdict stands (REGEN_CONSISTENCY invariant 4): a
		// regeneration only reaches the customer's inbox as the divergence
		// notice.
		return nil
	}
	if err := h.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: queue.MailVerdict}); err != nil {
		return fmt.Errorf("enqueue verdict mail: %w", err)
	}
	log.Info("verdict mail enqueued")
	return nil
}

// auditCrosscheck writes the record of one crosscheck, passed or not.
func (h *Handler) auditCrosscheck(ctx context.Context, o oracle.Order, d crosscheck.Decision, n int, started time.Time) {
	status, detail := audit.StatusOK, (*string)(nil)
	if !d.Approved {
		status, detail = audit.StatusError, audit.Detail("crosscheck rejected the reply: "+string(d.Reason))
	}
	r := h.record(o, status, detail, "", started)
	r.Event = "tmm_crosscheck"
	r.Crosscheck = &audit.Crosscheck{VerdictLabel: d.VerdictLabel, CoherenceScore: d.CoherenceScore, Threshold: d.Threshold,
		Phi: crosscheck.PHI, Approved: d.Approved, Flags: d.Flags, CrosscheckReason: string(d.Reason)}
	h.write(ctx, r, fmt.Sprintf("%s.crosscheck-%d-%d", o.SessionID, o.Attempts, n))
}

func (h *Handler) audit(ctx context.Context, o oracle.Order, status audit.Status, detail *string, id, model string, started time.Time) {
	r := h.record(o, status, detail, model, started)
	switch status {
	case audit.StatusError:
		r.Event = "generation_failed"
	case audit.StatusRegenerated:
		r.Event = "verdict_regenerated"
	}
	h.write(ctx, r, id)
}

func (h *Handler) record(o oracle.Order, status audit.Status, detail *string, model string, started time.Time) audit.Record {
	r := audit.OfOrder(h.Hasher, o, audit.SourceGenerator, "verdict_generated", status, started, h.Now())
	r.ErrorDetail, r.Model = detail, model
	return r
}

func (h *Handler) write(ctx context.Context, r audit.Record, id string) {
	if _, err := h.Audit.Write(ctx, r, id); err != nil {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: "AUDIT_WRITE_FAILED", Session: r.SessionID, Detail: r.Event + " audit record not written"})
		h.Log.Error("audit write failed", obs.Session(r.SessionID), "event", r.Event, "error", err.Error())
	}
}

// remindQuarantine repeats the CRITICAL alert every QuarantineReminder while
// an order the content filter stopped is still QUARANTINED: a refund or a
// cleaned delivery is the operator's to make, and not making it leaves a
// paying customer waiting (SPEC_ORACLE_SOS_FILTER invariant 4).
func (h *Handler) remindQuarantine(ctx context.Context, log *slog.Logger, job queue.Job) error {
	o, found, err := h.Orders.Get(ctx, job.SessionID)
	if err != nil {
		return err
	}
	if !found || o.Status != oracle.StatusQuarantined {
		log.Info("quarantine resolved; reminders end")
		return nil
	}
	// A reminder scheduled twice (a redelivered job settles again) would
	// start a second chain; each step is taken once.
	step := fmt.Sprintf("quarantine-reminder#%s#%d", o.SessionID, job.Attempt)
	first, err := h.Once.Mark(ctx, step, 2*h.QuarantineReminder)
	if err != nil {
		return err
	}
	if !first {
		log.Info("quarantine reminder already sent; duplicate acknowledged")
		return nil
	}
	since := "unknown"
	if o.QuarantinedAt != nil {
		since = o.QuarantinedAt.UTC().Format(time.RFC3339)
	}
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: "QUARANTINE_UNRESOLVED", Session: o.SessionID,
		Detail: fmt.Sprintf("quarantined at the %s gate since %s (%s), still unresolved: deliver a cleaned verdict or refund",
			o.QuarantineGate, since, strings.Join(o.QuarantineTerms, ", "))})
	if err := h.scheduleQuarantineReminder(ctx, o.SessionID, job.Attempt+1); err != nil {
		if rerr := h.Once.Release(ctx, step); rerr != nil {
			log.Error("releasing the reminder step failed", "error", rerr.Error())
		}
		return err
	}
	return nil
}

// settled queues again what an order settled without a verdict is owed:
// the failure notice, or the review notice and (while quarantined) the
// reminder chain. The mailer sends each notice once and the reminder steps
// are taken once, so a repeat changes nothing.
func (h *Handler) settled(ctx context.Context, log *slog.Logger, o oracle.Order) error {
	kind := queue.MailReview
	if o.Status == oracle.StatusFailed {
		kind = queue.MailFailed
	}
	if err := h.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: kind}); err != nil {
		return fmt.Errorf("enqueue %s notice: %w", kind, err)
	}
	if o.Status == oracle.StatusQuarantined {
		if err := h.scheduleQuarantineReminder(ctx, o.SessionID, 0); err != nil {
			return err
		}
	}
	log.Info("settled order's notices queued again", "status", string(o.Status), "kind", kind)
	return nil
}

// quarantine sets aside a verdict the content filter stopped at gate 1: it
// is kept whole for review and never stored, served or sent. If the review
// record cannot be written, nothing is decided: the generation is released
// and retried, and the operator hears of it (fail closed, GAP-L).
func (h *Handler) quarantine(ctx context.Context, log *slog.Logger, o oracle.Order, lease string, g generation, rep sosfilter.Report, started time.Time) error {
	now := h.Now()
	key, err := h.Quarantine.Put(ctx, quarantine.Record{
		SessionID: o.SessionID, Tier: string(o.Tier), Gate: quarantine.GateGenerator, QuarantinedAt: now.UTC(),
		Terms: rep.Terms(), Reason: string(rep.Reason), FilterVersion: rep.Version, PromptVersion: prompt.Version, Model: g.result.Model,
		Livemode: o.Livemode, AmountTotal: o.AmountTotal, Currency: o.Currency, Raw: rawPayload(g.raw),
	})
	if err != nil {
		_ = h.Orders.AbandonGeneration(ctx, o.SessionID, lease)
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: "QUARANTINE_RECORD_FAILED", Session: o.SessionID,
			Detail: "the content filter stopped a verdict and its review record could not be written; nothing was delivered and the generation will be retried"})
		return fmt.Errorf("quarantine: %w", err)
	}
	ok, err := h.Orders.QuarantineGeneration(ctx, o.SessionID, lease, store.Quarantine{Gate: quarantine.GateGenerator, Terms: rep.Terms(), Record: key, FilterVersion: rep.Version})
	if err != nil {
		_ = h.Orders.AbandonGeneration(ctx, o.SessionID, lease)
		return err
	}
	if !ok {
		log.Warn("generation lease lost before quarantining the order")
		return nil
	}
	log.Error("verdict quarantined by the content filter", "terms", strings.Join(rep.Terms(), ","), "reason", string(rep.Reason), "filter_version", rep.Version)
	h.audit(ctx, o, audit.StatusError, audit.Detail("quarantined by the content filter: "+string(rep.Reason)), o.SessionID+".quarantined-generator", g.result.Model, started)
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: "VERDICT_QUARANTINED", Session: o.SessionID,
		Detail: fmt.Sprintf("the content filter stopped the verdict at gate 1 (%s: %s); nothing was delivered. Review the record the order names (quarantine_record), then deliver a cleaned verdict or refund",
			rep.Reason, strings.Join(rep.Terms(), ", "))})
	if err := h.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: queue.MailReview}); err != nil {
		return fmt.Errorf("enqueue review notice: %w", err)
	}
	return h.scheduleQuarantineReminder(ctx, o.SessionID, 0)
}

// scheduleQuarantineReminder queues the next QUARANTINE_UNRESOLVED check.
func (h *Handler) scheduleQuarantineReminder(ctx context.Context, sessionID string, attempt int) error {
	at := h.Now().Add(h.QuarantineReminder)
	if err := h.Requeue.Send(ctx, queue.Job{SessionID: sessionID, Reason: queue.ReasonQuarantineReview, Attempt: attempt, NotBefore: &at}); err != nil {
		return fmt.Errorf("schedule the quarantine reminder: %w", err)
	}
	return nil
}

// rawPayload is the model's reply as JSON for the record: the reply itself
// when it is JSON (it passed the schema), else as a JSON string.
func rawPayload(raw string) json.RawMessage {
	if json.Valid([]byte(raw)) {
		return json.RawMessage(raw)
	}
	b, _ := json.Marshal(raw)
	return b
}

// auditFilter writes the record of one content filter decision: the
// entries' ids, never the text.
func (h *Handler) auditFilter(ctx context.Context, o oracle.Order, rep sosfilter.Report, id string, started time.Time) {
	status, detail := audit.StatusOK, (*string)(nil)
	if rep.Action == sosfilter.Quarantine {
		status, detail = audit.StatusError, audit.Detail("quarantined by the content filter: "+string(rep.Reason))
	}
	r := h.record(o, status, detail, "", started)
	r.Event = "sos_filter"
	r.Filter = filterRecord(rep)
	h.write(ctx, r, id)
}

// filterRecord is the audit form of gate 1's report.
func filterRecord(rep sosfilter.Report) *audit.Filter {
	f := &audit.Filter{Gate: quarantine.GateGenerator, Action: rep.Action.String(), Reason: string(rep.Reason), TermIDs: rep.Terms(), Exempted: rep.Exempted(), Version: rep.Version}
	if f.TermIDs == nil {
		f.TermIDs = []string{}
	}
	return f
}
