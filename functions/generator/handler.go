package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/queue"
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
}

// Model generates a verdict (shared/gemini).
type Model interface {
	Generate(ctx context.Context, r gemini.Request) (gemini.Reply, error)
}

// Sender sends a job to the mail queue.
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

// Handler consumes the generate queue.
type Handler struct {
	Orders Orders
	Model  Model
	Mail   Sender
	Audit  Auditor
	Alerts Alerter
	Hasher *audit.Hasher
	Log    *slog.Logger
	Now    func() time.Time
	// Retention is how long a verdict is kept, from its generation.
	Retention time.Duration
	// CallTimeout bounds one model call.
	CallTimeout time.Duration
	// Reserve is kept back from the Lambda deadline for the writes that
	// follow the model call.
	Reserve time.Duration
	// MaxReceives is the queue's maxReceiveCount: the delivery that fails
	// with it is the last, so the order is marked FAILED and alerted.
	MaxReceives int
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
	log := h.Log.With(obs.Session(job.SessionID), "reason", job.Reason, "receive", receives)
	started := h.Now()
	if job.Reason == queue.ReasonRegenerate {
		// Only an expired verdict is reset; a live one is left alone.
		if _, err := h.Orders.ResetForRegeneration(ctx, job.SessionID, h.lease(ctx)+time.Hour); err != nil {
			return err
		}
	}

	order, lease, err := h.Orders.StartGeneration(ctx, job.SessionID, h.lease(ctx))
	var notOwed *store.ErrNotOwed
	switch {
	case errors.As(err, &notOwed):
		if notOwed.Order.Status == oracle.StatusReady {
			// A redelivery after the verdict was stored: finish what may not
			// have been finished (both steps are idempotent).
			return h.afterStore(ctx, log, notOwed.Order, started)
		}
		log.Info("generation not owed; job acknowledged", "status", string(notOwed.Order.Status))
		return nil
	case err != nil:
		return err
	}
	log = log.With("attempt", order.Attempts)

	analysis, model, err := h.generate(ctx, order)
	if err != nil {
		return h.failed(ctx, log, order, lease, receives, started, err)
	}
	canonical, err := analysis.CanonicalJSON()
	if err != nil {
		return h.failed(ctx, log, order, lease, receives, started, err)
	}
	stored, err := h.Orders.StoreVerdict(ctx, order.SessionID, lease, store.StoredVerdict{
		Canonical:     string(canonical),
		Hash:          h.Hasher.Hash(string(canonical)),
		PromptVersion: prompt.Version,
		Model:         model,
		ExpiresAt:     h.Now().Add(h.Retention),
	})
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
	log.Info("verdict stored", "verdict", string(analysis.Verdict), "latency_ms", h.Now().Sub(started).Milliseconds())
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

// generate calls the model once and validates its reply for the tier.
func (h *Handler) generate(ctx context.Context, o oracle.Order) (oracle.Analysis, string, error) {
	p, err := prompt.Build(o.Tier, o.Query)
	if err != nil {
		return oracle.Analysis{}, "", fmt.Errorf("build prompt: %w", err)
	}
	timeout := h.CallTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, d.Sub(h.Now())-h.Reserve)
	}
	if timeout <= 0 {
		return oracle.Analysis{}, "", errors.New("no time left for a model call")
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	reply, err := h.Model.Generate(callCtx, gemini.Request{System: p.System, User: p.User, Schema: prompt.Schema(o.Tier), Seed: prompt.Seed})
	if err != nil {
		return oracle.Analysis{}, "", fmt.Errorf("model call: %w", err)
	}
	a, err := oracle.ParseAnalysis(o.Tier, []byte(reply.Text))
	if err != nil {
		return oracle.Analysis{}, "", fmt.Errorf("%w: %w", errInvalidReply, err)
	}
	return a, reply.Model, nil
}

var errInvalidReply = errors.New("the model's reply is not a valid verdict")

// failed gives up this attempt: nothing partial is stored, the lease is
// released for the redelivery, the attempt is audited, and the last
// attempt marks the order FAILED and alerts.
func (h *Handler) failed(ctx context.Context, log *slog.Logger, o oracle.Order, lease string, receives int, started time.Time, cause error) error {
	class := failureClass(cause)
	log.Warn("generation attempt failed", "class", class, "error", cause.Error())
	if err := h.Orders.AbandonGeneration(ctx, o.SessionID, lease); err != nil {
		log.Error("releasing the generation lease failed", "error", err.Error())
	}
	h.audit(ctx, o, audit.StatusError, audit.Detail("generation failed: "+class), fmt.Sprintf("%s.attempt-%d", o.SessionID, o.Attempts), started)
	if h.MaxReceives > 0 && receives >= h.MaxReceives {
		if changed, err := h.Orders.MarkFailed(ctx, o.SessionID, class); err != nil {
			log.Error("marking the order failed failed", "error", err.Error())
		} else if changed {
			h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: "GENERATION_FAILED", Session: o.SessionID,
				Detail: fmt.Sprintf("no verdict after %d attempts (%s); the customer is told to ask for a refund", receives, class)})
		}
	}
	return cause
}

// failureClass names a failure for audit records and alerts without
// quoting the model or the customer.
func failureClass(err error) string {
	var ge *gemini.Error
	switch {
	case errors.Is(err, errInvalidReply):
		return "invalid_reply"
	case errors.As(err, &ge):
		return "model_" + ge.Kind.String()
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "internal"
}

// afterStore audits the stored verdict and enqueues its email. A failed
// audit write alerts but does not withhold the customer's email.
func (h *Handler) afterStore(ctx context.Context, log *slog.Logger, o oracle.Order, started time.Time) error {
	status, id := audit.StatusOK, o.SessionID+".generated"
	if o.Regen && o.GeneratedAt != nil {
		status, id = audit.StatusRegenerated, fmt.Sprintf("%s.regenerated-%d", o.SessionID, o.GeneratedAt.Unix())
	}
	h.audit(ctx, o, status, nil, id, started)
	if err := h.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: queue.MailVerdict}); err != nil {
		return fmt.Errorf("enqueue verdict mail: %w", err)
	}
	log.Info("verdict mail enqueued")
	return nil
}

func (h *Handler) audit(ctx context.Context, o oracle.Order, status audit.Status, detail *string, id string, started time.Time) {
	now := h.Now()
	r := audit.Record{
		Timestamp:      now.UTC(),
		SessionID:      o.SessionID,
		Tier:           string(o.Tier),
		QueryHash:      h.Hasher.Hash(o.Query),
		VerdictHash:    o.VerdictHash,
		Email:          o.EmailHash,
		LatencyMS:      max(now.Sub(started).Milliseconds(), 0),
		Status:         status,
		Source:         audit.SourceGenerator,
		ErrorDetail:    detail,
		SessionCreated: o.SessionCreated,
		Event:          "verdict_generated",
		Livemode:       o.Livemode,
		AmountTotal:    o.AmountTotal,
		Currency:       o.Currency,
		OrderStatus:    string(o.Status),
	}
	switch status {
	case audit.StatusError:
		r.Event = "generation_failed"
	case audit.StatusRegenerated:
		r.Event = "verdict_regenerated"
	}
	if _, err := h.Audit.Write(ctx, r, id); err != nil {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: "AUDIT_WRITE_FAILED", Session: o.SessionID, Detail: "generation audit record not written"})
		h.Log.Error("audit write failed", obs.Session(o.SessionID), "error", err.Error())
	}
}
