package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/crosscheck"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/sosfilter"
)

// The generator's audit records. Each has an id unique for what it
// records, and a generation writes its records as one object once its
// outcome is known (writeStep), so a redelivered job writes nothing twice;
// a record that cannot be written alerts (audit.Recorder) and withholds
// nothing from the customer.

// record is the audit record of the task's order, as the generator's
// verdict_generated event; the callers name other events.
func (h *Handler) record(t *task, status audit.Status, detail *string, model string) audit.Record {
	r := audit.OfOrder(h.Hasher, t.order, audit.SourceGenerator, audit.EventVerdictGenerated, status, t.started, h.Now())
	r.ErrorDetail, r.Model = detail, model
	return r
}

// audit writes the record of the order's outcome when its generation
// stored no verdict (it failed, was held or quarantined), with the
// records the generation carried, as one object.
func (h *Handler) audit(ctx context.Context, t *task, status audit.Status, detail *string, id, model string) {
	r := h.record(t, status, detail, model)
	switch status {
	case audit.StatusError:
		r.Event = audit.EventGenerationFailed
	case audit.StatusRegenerated:
		r.Event = audit.EventVerdictRegenerated
	}
	h.writeStep(ctx, t, t.order, audit.Line{Record: r, ID: id})
}

// auditCrosscheck keeps the record of the n-th crosscheck of this
// generation, passed or not, for the generation's object.
func (h *Handler) auditCrosscheck(ctx context.Context, t *task, d crosscheck.Decision, n int) {
	status, detail := audit.StatusOK, (*string)(nil)
	if !d.Approved {
		status, detail = audit.StatusError, audit.Detail("crosscheck rejected the reply: "+string(d.Reason)+" by the "+string(d.Rule)+" rule")
	}
	r := h.record(t, status, detail, "")
	r.Event = audit.EventCrosscheck
	r.Crosscheck = &audit.Crosscheck{VerdictLabel: d.VerdictLabel, CoherenceScore: d.CoherenceScore, Threshold: d.Threshold,
		Phi: crosscheck.PHI, Approved: d.Approved, Flags: d.Flags, CrosscheckReason: string(d.Reason), Rule: string(d.Rule)}
	h.carry(t, r, audit.RecordID(t.order.SessionID, audit.NameCrosscheck, t.order.Attempts, n))
}

// auditFilter keeps the record of gate 1's decision on this generation
// (the entries' ids, never the text) for the generation's object.
func (h *Handler) auditFilter(ctx context.Context, t *task, rep sosfilter.Report) {
	status, detail := audit.StatusOK, (*string)(nil)
	if rep.Action == sosfilter.Quarantine {
		status, detail = audit.StatusError, audit.Detail("quarantined by the content filter: "+string(rep.Reason))
	}
	r := h.record(t, status, detail, "")
	r.Event = audit.EventFilter
	r.Filter = &audit.Filter{Gate: quarantine.GateGenerator, Action: rep.Action.String(), Reason: string(rep.Reason),
		TermIDs: rep.Terms(), Version: rep.Version}
	if r.Filter.TermIDs == nil {
		r.Filter.TermIDs = []string{}
	}
	h.carry(t, r, audit.RecordID(t.order.SessionID, audit.NameFilterGenerator, t.order.Attempts))
}

// auditRewrite keeps the record of gate 1 sending the generation's first
// writing back (its entries' ids; what it would have done, and why, in
// the reason), for the generation's object.
func (h *Handler) auditRewrite(t *task, rep sosfilter.Report) {
	reason := "it would have " + strings.ToLower(rep.Action.String()) + "d it"
	if rep.Reason != "" {
		reason += ": " + string(rep.Reason)
	}
	r := h.record(t, audit.StatusOK, nil, "")
	r.Event = audit.EventFilter
	r.Filter = &audit.Filter{Gate: quarantine.GateGenerator, Action: audit.FilterRewrite, Reason: reason, TermIDs: rep.Terms(), Version: rep.Version}
	h.carry(t, r, audit.RecordID(t.order.SessionID, audit.NameFilterRewrite, t.order.Attempts))
}

// carried is one of a generation's crosscheck and gate 1 records, as the
// order carries it with its verdict: what the record holds beyond the
// order, from which fromCarried makes the same record again.
type carried struct {
	ID          string            `json:"id"`
	Event       audit.Event       `json:"event"`
	Status      audit.Status      `json:"status"`
	Detail      *string           `json:"detail,omitempty"`
	At          time.Time         `json:"at"`
	LatencyMS   int64             `json:"latency_ms"`
	OrderStatus string            `json:"order_status"`
	VerdictHash string            `json:"verdict_hash,omitempty"`
	Crosscheck  *audit.Crosscheck `json:"crosscheck,omitempty"`
	Filter      *audit.Filter     `json:"filter,omitempty"`
}

// carry keeps r, under id, to be stored with the verdict and written with
// the generation's outcome in one object (writeStep): a crash after the
// verdict is stored and before the object is written leaves the record on
// the order for the job's redelivery to write (afterStore).
func (h *Handler) carry(t *task, r audit.Record, id string) {
	t.carried = append(t.carried, carried{ID: id, Event: r.Event, Status: r.Status, Detail: r.ErrorDetail, At: r.Timestamp,
		LatencyMS: r.LatencyMS, OrderStatus: r.OrderStatus, VerdictHash: r.VerdictHash, Crosscheck: r.Crosscheck, Filter: r.Filter})
}

// writeStep writes the generation's records as one object, beside the
// steps that follow it, not between them: the crosscheck and gate 1
// records it carried, as order o's, then outcome (a regeneration's
// divergence check, then the verdict stored or the failure), whose last
// line names the object. Each record's id is in this object only: the
// outcome's id is the generation's own (its attempt's, or the verdict's),
// so a redelivery that writes the step again finds the object there and
// adds nothing.
func (h *Handler) writeStep(ctx context.Context, t *task, o oracle.Order, outcome ...audit.Line) {
	lines := make([]audit.Line, 0, len(t.carried)+len(outcome))
	for _, c := range t.carried {
		lines = append(lines, audit.Line{Record: h.fromCarried(o, c), ID: c.ID})
	}
	lines = append(lines, outcome...)
	if len(lines) == 0 {
		return
	}
	t.written = true
	t.spawn(ctx, func(ctx context.Context) error {
		h.Audit.RecordStep(ctx, lines)
		return nil
	})
}

// writeUnsettled writes the records of a generation that asked the model
// and ended with no outcome of its own (its lease was lost, or a store
// failed before anything was decided) and cannot have stored a verdict
// that carries them: one object named by its last record.
func (h *Handler) writeUnsettled(ctx context.Context, t *task) {
	if t.asked && !t.written && !t.storing {
		h.writeStep(ctx, t, t.order)
	}
}

// fromCarried is the record c keeps of order o's generation.
func (h *Handler) fromCarried(o oracle.Order, c carried) audit.Record {
	o.Status, o.VerdictHash = oracle.Status(c.OrderStatus), c.VerdictHash
	r := audit.OfOrder(h.Hasher, o, audit.SourceGenerator, c.Event, c.Status, c.At, c.At)
	r.LatencyMS, r.ErrorDetail, r.Crosscheck, r.Filter = c.LatencyMS, c.Detail, c.Crosscheck, c.Filter
	return r
}

// carriedText is the records of t's generation as its verdict carries them.
func carriedText(t *task) (string, error) {
	if len(t.carried) == 0 {
		return "", nil
	}
	b, err := json.Marshal(t.carried)
	if err != nil {
		return "", fmt.Errorf("carry the generation's audit records: %w", err)
	}
	return string(b), nil
}

// uncarry reads the records a stored verdict carries. What cannot be read
// is logged and skipped: the verdict and its email do not wait on it.
func uncarry(ctx context.Context, t *task) []carried {
	if t.order.GenAudit == "" {
		return nil
	}
	var cs []carried
	if err := json.Unmarshal([]byte(t.order.GenAudit), &cs); err != nil {
		t.log.ErrorContext(ctx, "the audit records carried with the verdict are unreadable", "error", err.Error())
		return nil
	}
	return cs
}

// divergenceRecord is the record of a regenerated verdict's comparison
// with the first one, once per regeneration (its id is the
// regeneration's), written in the regeneration's object.
func (h *Handler) divergenceRecord(t *task, original string) audit.Line {
	o := t.order
	r := audit.OfOrder(h.Hasher, o, audit.SourceGenerator, audit.EventDivergenceCheck, audit.StatusOK, h.Now(), h.Now())
	r.Divergence = &audit.Divergence{OriginalVerdict: original, RegenVerdict: string(o.VerdictLabel),
		TopLevelMatch: o.OriginalVerdict == o.VerdictLabel, DivergenceLevel: o.Divergence}
	return audit.Line{Record: r, ID: audit.RecordID(o.SessionID, audit.NameDivergence, o.GeneratedAt.Unix())}
}
