package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/crashpoint"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/sqsbatch"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/tracing"
)

// Orders is the order store (shared/store).
type Orders interface {
	StartGeneration(ctx context.Context, sessionID string, lease time.Duration) (oracle.Order, string, error)
	ResetForRegeneration(ctx context.Context, sessionID string, hold time.Duration) (bool, error)
	StoreVerdict(ctx context.Context, sessionID, lease string, v store.StoredVerdict) (oracle.Order, error)
	AbandonGeneration(ctx context.Context, sessionID, lease string) error
	MarkFailed(ctx context.Context, sessionID, reason string) (bool, error)
	Park(ctx context.Context, sessionID string, due time.Time) (time.Time, error)
	ParkLeased(ctx context.Context, leased oracle.Order, lease string, due time.Time) (time.Time, error)
	Hold(ctx context.Context, sessionID, lease, reason string) (bool, error)
	QuarantineGeneration(ctx context.Context, sessionID, lease string, q store.Quarantine) (bool, error)
}

// Model makes one bounded, retried model call (gemini.Caller).
type Model interface {
	Call(ctx context.Context, r gemini.Request, validate func(text string) error) (gemini.Result, error)
}

// Circuit is the breaker every generator container shares (shared/circuit),
// read once per job, beside the claim of the order.
type Circuit interface {
	Read(ctx context.Context) (circuit.Reading, error)
	Admit(ctx context.Context, r circuit.Reading) (circuit.Permit, error)
	Succeeded(ctx context.Context, p circuit.Permit, latency time.Duration) (circuit.Transition, error)
	Failed(ctx context.Context, p circuit.Permit) (circuit.Transition, error)
}

// Sender sends a job to a queue.
type Sender interface {
	Send(ctx context.Context, j queue.Job) error
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// ContentFilter is gate 1 of the outbound content filter (shared/sosfilter).
type ContentFilter interface {
	Analysis(a oracle.Analysis) (oracle.Analysis, sosfilter.Report)
	// ListedIn names the listed words a verdict holds, for the model to
	// write it again without them.
	ListedIn(a oracle.Analysis) []string
}

// QuarantineStore keeps what the filter stopped (shared/quarantine).
type QuarantineStore interface {
	Put(ctx context.Context, r quarantine.Record) (string, error)
}

// Originals keep each session's first verdict past its order (store.Ledger).
type Originals interface {
	KeepOriginal(ctx context.Context, sessionID string, o oracle.Original, ttl time.Duration) error
}

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
	Emit(figs ...obs.Figure)
}

// Defaults of the Handler's windows; tests and the local stack shorten them.
const (
	DefaultParkingBudget = 6 * time.Hour
	DefaultRetryBase     = 30 * time.Second
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
	// Audit writes the generator's records, alerting when one is lost.
	Audit  *audit.Recorder
	Alerts Alerter
	// Filter is gate 1: every verdict passes it before it is stored;
	// Quarantine keeps what it stops.
	Filter     ContentFilter
	Quarantine QuarantineStore
	// Originals keep the first verdict's label and hash for
	// OriginalRetention, so a regeneration after the order is deleted can
	// still be compared with what was emailed.
	Originals         Originals
	OriginalRetention time.Duration
	Hasher            *audit.Hasher
	// Metrics counts the deliveries that fail (GeneratorRecordFailures).
	Metrics Counter
	Log     *slog.Logger
	Now     func() time.Time
	Rand    func() float64
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
}

// task is one delivery of a generate job on its way through the Handler.
type task struct {
	job      queue.Job
	receives int // SQS's ApproximateReceiveCount of this delivery
	started  time.Time
	log      *slog.Logger
	// order is the job's order as last read or written; lease is the
	// generation lease, once this task holds it; asked, once the model has
	// been asked under it.
	order oracle.Order
	lease string
	asked bool
	// carried are this generation's crosscheck and gate 1 records, stored
	// with its verdict (oracle.Order.GenAudit) and written with its
	// outcome (writeStep); written, once they are on their way; storing,
	// once a verdict carrying them may be stored.
	carried []carried
	written bool
	storing bool
	// background is the work nobody waits for before the next step: the
	// audit records, the circuit's report, the first verdict's keeping.
	// The job's message is acknowledged only once it is done, so a crash
	// before then brings the job back to do it again.
	background sync.WaitGroup
	mu         sync.Mutex
	failures   []error
}

// spawn starts f beside the task's steps; a failure of f fails the job's
// delivery (SQS brings it back), once the task's own steps are done.
func (t *task) spawn(ctx context.Context, f func(ctx context.Context) error) {
	t.background.Go(func() {
		if err := f(ctx); err != nil {
			t.mu.Lock()
			t.failures = append(t.failures, err)
			t.mu.Unlock()
		}
	})
}

// settle waits for the task's background work and returns its failures.
func (t *task) settle() error {
	t.background.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	return errors.Join(t.failures...)
}

// Handle processes a batch and reports the records that failed, so that
// SQS redelivers only those (and, after the queue's maxReceiveCount, moves
// them to the dead-letter queue).
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return sqsbatch.Process(ctx, h.Log, sqsbatch.Failures{Metrics: h.Metrics, Name: obs.GeneratorRecordFailures}, ev, h.process), nil
}

// process reads one message; run does its work.
func (h *Handler) process(ctx context.Context, rec events.SQSMessage) error {
	receives, _ := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	job, err := queue.Parse(rec.Body)
	if err == nil && job.Reason == "" {
		err = errors.New("a mail job on the generate queue")
	}
	if err != nil {
		// Garbage never vanishes: it fails until the dead-letter queue takes
		// it, and the operator hears of it now.
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.GarbageJob, Session: rec.MessageId,
			Detail: "unreadable message on the generate queue (" + rec.MessageId + "); it will reach the dead-letter queue"})
		return fmt.Errorf("message %s: %w", rec.MessageId, err)
	}
	// The order's whole id on this record's span and every span under it.
	ctx = tracing.WithOrder(ctx, job.SessionID)
	t := &task{job: job, receives: receives, started: h.Now(),
		log: h.Log.With("reason", job.Reason, "receive", receives, "attempt", job.Attempt)}
	err = h.run(ctx, t)
	h.writeUnsettled(ctx, t)
	return errors.Join(err, t.settle())
}

// run does what the job calls for.
func (h *Handler) run(ctx context.Context, t *task) error {
	if t.job.Reason == queue.ReasonQuarantineReview {
		// A reminder of the retired chain, still on the queue when this
		// deployed: acknowledged at once, neither alerted nor sent on.
		t.log.InfoContext(ctx, "quarantine reminder acknowledged; reminders now come from the health job")
		return nil
	}
	if t.job.NotBefore != nil && t.job.NotBefore.After(t.started) {
		// A wait longer than SQS's 15-minute delay goes in hops.
		return h.Requeue.Send(ctx, t.job)
	}
	if t.job.Reason == queue.ReasonRegenerate {
		// Only an expired verdict is reset; a live one is left alone.
		if _, err := h.Orders.ResetForRegeneration(ctx, t.job.SessionID, h.lease(ctx)+time.Hour); err != nil {
			return err
		}
	}
	return h.generate(ctx, t)
}

// notOwed does what a job calls for when its order owes no generation,
// as the refused claim found the order: finish what follows a stored
// verdict, queue again what a settled order is owed, or acknowledge.
func (h *Handler) notOwed(ctx context.Context, t *task, e *store.ErrNotOwed) error {
	t.order = e.Order
	switch s := next(e.Order, !e.Missing); s {
	case stepResume:
		t.carried = uncarry(ctx, t)
		return h.afterStore(ctx, t)
	case stepRenotify:
		return h.settled(ctx, t)
	case stepUnknownOrder:
		t.log.WarnContext(ctx, "generate job for an unknown order acknowledged")
	default:
		// A live lease of another generator, or a state never generated.
		t.log.InfoContext(ctx, "generation not owed; job acknowledged", "status", string(e.Order.Status))
	}
	return nil
}

// generate leases the order, asks the model and hands a reply that passed
// its checks to gate 1. The claim of the order is the read of it: the
// conditional update that takes the lease returns the order, and a refused
// one the order that refused it. The circuit is read beside it. Whatever
// keeps the model from answering (the key is refused, the circuit is open)
// gives the lease back and parks the order instead of failing it.
func (h *Handler) generate(ctx context.Context, t *task) error {
	type reading struct {
		r   circuit.Reading
		err error
	}
	read := make(chan reading, 1)
	go func() {
		r, err := h.Circuit.Read(ctx)
		read <- reading{r, err}
	}()
	order, lease, err := h.Orders.StartGeneration(ctx, t.job.SessionID, h.lease(ctx))
	circuitRead := <-read
	var notOwed *store.ErrNotOwed
	switch {
	case errors.As(err, &notOwed):
		return h.notOwed(ctx, t, notOwed)
	case err != nil:
		return err
	}
	t.order, t.lease = order, lease
	t.log = t.log.With("generation", order.Attempts)
	crashpoint.Reach(ctx, crashpoint.GeneratorLeased)

	if until, ok := h.Key.Rejected(ctx); ok {
		return h.park(ctx, t, until, "the model key is refused")
	}
	permit, err := circuit.Permit{}, circuitRead.err
	if err == nil {
		permit, err = h.Circuit.Admit(ctx, circuitRead.r)
	}
	var open *circuit.OpenError
	if errors.As(err, &open) {
		return h.park(ctx, t, open.Until, "the circuit is open ("+string(open.Reason)+")")
	}
	if err != nil {
		t.log.WarnContext(ctx, "circuit state unreadable; calling the model", "error", err.Error())
	}

	t.asked = true
	callStart := h.Now()
	g, err := h.ask(ctx, t)
	crashpoint.Reach(ctx, crashpoint.GeneratorReplied)
	latency := h.Now().Sub(callStart)
	if err != nil {
		h.report(ctx, t.log, permit, latency, err)
		return h.failed(ctx, t, err)
	}
	// The model answered: the circuit hears of it while the verdict is
	// stored and handed on (a write only when a count or its state changes).
	t.spawn(ctx, func(ctx context.Context) error {
		h.report(ctx, t.log, permit, latency, nil)
		return nil
	})
	return h.store(ctx, t, g)
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
