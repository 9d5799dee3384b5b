package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// memOrders is the order store in memory, keeping the rules of
// shared/store the generator relies on: one live generation lease at a
// time, one verdict never replaced, the parking clock started once, and
// each transition only from the states the store allows it from.
type memOrders struct {
	mu     sync.Mutex
	now    func() time.Time
	orders map[string]*memOrder
	leases int
}

// memOrder is an order with what the store keeps beside it.
type memOrder struct {
	oracle.Order
	lease       string
	leaseUntil  time.Time
	parkedSince time.Time
	expires     time.Time
}

func newMemOrders(now func() time.Time) *memOrders {
	return &memOrders{now: now, orders: map[string]*memOrder{}}
}

// add records o as it stands.
func (m *memOrders) add(o oracle.Order) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.orders[o.SessionID] = &memOrder{Order: o}
}

func (m *memOrders) Get(_ context.Context, id string) (oracle.Order, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	if !ok {
		return oracle.Order{}, false, nil
	}
	return o.Order, true, nil
}

func (m *memOrders) StartGeneration(_ context.Context, id string, lease time.Duration) (oracle.Order, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	if !ok {
		return oracle.Order{}, "", &store.ErrNotOwed{Order: oracle.Order{SessionID: id}, Missing: true}
	}
	now := m.now()
	free := o.Status == oracle.StatusPaid || (o.Status == oracle.StatusGenerating && !o.leaseUntil.After(now))
	if o.Verdict != "" || !free {
		return oracle.Order{}, "", &store.ErrNotOwed{Order: o.Order}
	}
	m.leases++
	o.lease, o.leaseUntil = "lease-"+strconv.Itoa(m.leases), now.Add(lease)
	o.Status = oracle.StatusGenerating
	o.Attempts++
	return o.Order, o.lease, nil
}

func (m *memOrders) ResetForRegeneration(_ context.Context, id string, hold time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	now := m.now()
	if !ok || o.Status != oracle.StatusReady || o.Verdict == "" || o.expires.After(now) {
		return false, nil
	}
	o.Status, o.Regen, o.RegenReason = oracle.StatusPaid, true, oracle.RegenExpired
	o.OriginalVerdictHash, o.OriginalVerdict = o.VerdictHash, o.VerdictLabel
	o.Verdict, o.VerdictHash, o.VerdictLabel, o.GeneratedAt, o.Divergence = "", "", "", nil, ""
	o.expires = now.Add(hold)
	return true, nil
}

func (m *memOrders) StoreVerdict(_ context.Context, id, lease string, v store.StoredVerdict) (oracle.Order, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	if !ok || o.lease != lease || o.Verdict != "" {
		return oracle.Order{}, fmt.Errorf("store verdict %s: %w", id, store.ErrLeaseLost)
	}
	now := m.now()
	o.Verdict, o.VerdictHash, o.VerdictLabel, o.CoherenceScore = v.Canonical, v.Hash, v.Label, v.CoherenceScore
	o.PromptVersion, o.Model, o.FilterVersion, o.Divergence = v.PromptVersion, v.Model, v.FilterVersion, v.Divergence
	o.GeneratedAt, o.Status, o.expires, o.GenAudit = &now, oracle.StatusReady, v.ExpiresAt, v.Audit
	o.lease, o.leaseUntil, o.parkedSince = "", time.Time{}, time.Time{}
	return o.Order, nil
}

func (m *memOrders) AbandonGeneration(_ context.Context, id, lease string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.orders[id]; ok && o.lease == lease {
		o.lease, o.leaseUntil = "", time.Time{}
	}
	return nil
}

func (m *memOrders) MarkFailed(_ context.Context, id, reason string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	if !ok || o.Verdict != "" || (o.Status != oracle.StatusGenerating && o.Status != oracle.StatusPaid) {
		return false, nil
	}
	o.Status, o.Failure, o.lease, o.leaseUntil = oracle.StatusFailed, reason, "", time.Time{}
	return true, nil
}

func (m *memOrders) Park(_ context.Context, id string, due time.Time) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	if !ok {
		return time.Time{}, &store.ErrNotOwed{Order: oracle.Order{SessionID: id}}
	}
	if o.Verdict != "" || (o.Status != oracle.StatusPaid && o.Status != oracle.StatusGenerating) {
		return time.Time{}, &store.ErrNotOwed{Order: o.Order}
	}
	if o.parkedSince.IsZero() {
		o.parkedSince = m.now()
	}
	o.JobDueAt = &due
	return o.parkedSince, nil
}

func (m *memOrders) ParkLeased(_ context.Context, leased oracle.Order, lease string, due time.Time) (time.Time, error) {
	id := leased.SessionID
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	if !ok {
		return time.Time{}, &store.ErrNotOwed{Order: oracle.Order{SessionID: id}, Missing: true}
	}
	if o.lease != lease || o.Verdict != "" {
		return time.Time{}, &store.ErrNotOwed{Order: o.Order}
	}
	if o.parkedSince.IsZero() {
		o.parkedSince = m.now()
	}
	o.JobDueAt, o.lease, o.leaseUntil = &due, "", time.Time{}
	if o.Attempts--; o.Attempts == 0 {
		o.Status = oracle.StatusPaid
	}
	return o.parkedSince, nil
}

func (m *memOrders) Hold(_ context.Context, id, lease, reason string) (bool, error) {
	return m.settle(id, lease, func(o *memOrder) { o.Status, o.Failure = oracle.StatusHeld, reason })
}

func (m *memOrders) QuarantineGeneration(_ context.Context, id, lease string, q store.Quarantine) (bool, error) {
	now := m.now()
	return m.settle(id, lease, func(o *memOrder) {
		o.Status, o.QuarantineGate, o.QuarantineTerms, o.QuarantineRecord = oracle.StatusQuarantined, q.Gate, q.Terms, q.Record
		o.FilterVersion, o.QuarantinedAt = q.FilterVersion, &now
	})
}

// settle applies change to an order still leased with lease and without a
// verdict, ending the lease and the parking, and reports whether it did.
func (m *memOrders) settle(id, lease string, change func(*memOrder)) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	if !ok || o.lease != lease || o.Verdict != "" {
		return false, nil
	}
	change(o)
	o.lease, o.leaseUntil, o.parkedSince = "", time.Time{}, time.Time{}
	return true, nil
}

// scriptedModel answers each call with the next answer of its script, the
// last one for good.
type scriptedModel struct {
	script []answer
	calls  int
}

// answer is one model call: a failure, or the replies of its attempts,
// each checked by the Handler's validation as gemini.Caller checks them.
type answer struct {
	err     error
	replies []string
}

func (s *scriptedModel) Call(_ context.Context, _ gemini.Request, validate func(text string) error) (gemini.Result, error) {
	a := s.script[min(s.calls, len(s.script)-1)]
	s.calls++
	if a.err != nil {
		return gemini.Result{}, a.err
	}
	var verr error
	for i, text := range a.replies {
		if verr = validate(text); verr == nil {
			return gemini.Result{Reply: gemini.Reply{Text: text}, Attempts: i + 1, Model: "scripted"}, nil
		}
	}
	// As gemini.Caller reports a last reply that failed validation.
	return gemini.Result{}, &gemini.Error{Kind: gemini.ContentFailure, Err: fmt.Errorf("%w: %w", gemini.ErrInvalidReply, verr)}
}

// Replies the crosscheck passes and rejects (a quick take without its
// verdict).
const (
	goodReply     = `{"verdict":"GREEN","summary":"The instinct is sound and the timing is right: start small."}`
	rejectedReply = `{"summary":""}`
)

// closedCircuit lets every call through and ignores how it fared.
type closedCircuit struct{}

func (closedCircuit) Read(context.Context) (circuit.Reading, error) { return circuit.Reading{}, nil }
func (closedCircuit) Admit(context.Context, circuit.Reading) (circuit.Permit, error) {
	return circuit.Permit{}, nil
}
func (closedCircuit) Succeeded(context.Context, circuit.Permit, time.Duration) (circuit.Transition, error) {
	return circuit.Transition{}, nil
}
func (closedCircuit) Failed(context.Context, circuit.Permit) (circuit.Transition, error) {
	return circuit.Transition{}, nil
}

// jobs is a queue that keeps what is sent to it.
type jobs struct {
	mu   sync.Mutex
	sent []queue.Job
}

func (q *jobs) Send(_ context.Context, j queue.Job) error {
	if err := j.Validate(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, j)
	return nil
}

// take returns the jobs sent since the last take.
func (q *jobs) take() []queue.Job {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.sent
	q.sent = nil
	return out
}

type memQuarantine struct{}

func (memQuarantine) Put(_ context.Context, r quarantine.Record) (string, error) {
	return "quarantine/" + r.SessionID, nil
}

type memOriginals struct{}

func (memOriginals) KeepOriginal(context.Context, string, oracle.Original, time.Duration) error {
	return nil
}
