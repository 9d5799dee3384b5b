package runtimeapi

import (
	"sync"
	"time"
)

// Stats are what a function's invocations would be billed and limited by
// in Lambda: how many ran, for how long, with how much memory, and the
// most that ran at once (Lambda's concurrency: execution environments busy
// at the same moment).
type Stats struct {
	// Invocations counts the invocations an environment took, Errors those
	// that ended in an error (the function's, a timeout or a crash).
	Invocations, Errors int64
	// Ended counts the invocations that have ended (answered, failed or
	// timed out), so that a caller can tell one is over without asking
	// the function's stores.
	Ended int64
	// BilledMS is the sum of the invocations' durations, each rounded up
	// to the millisecond as Lambda bills them: from the moment an
	// environment took the invocation until its answer.
	BilledMS int64
	// MemoryMB is the configured memory each invocation is billed at.
	MemoryMB int
	// Peak is the most invocations in flight at once.
	Peak int
	// Environments counts the execution environments started: the cold
	// starts, each of which runs the bootstrap's initialisation.
	Environments int64
}

// GBSeconds is the billed compute: duration times memory, in GB-seconds.
func (s Stats) GBSeconds() float64 {
	return float64(s.BilledMS) / 1000 * float64(s.MemoryMB) / 1024
}

// stats counts one function's invocations.
type stats struct {
	mu       sync.Mutex
	inFlight int
	s        Stats
}

// begin counts an invocation an environment has just taken.
func (st *stats) begin(inv *invocation) {
	st.mu.Lock()
	defer st.mu.Unlock()
	inv.stats, inv.began = st, time.Now()
	st.inFlight++
	st.s.Invocations++
	st.s.Peak = max(st.s.Peak, st.inFlight)
}

// end counts an invocation that has answered, failed or timed out.
func (st *stats) end(began time.Time, failed bool) {
	took := time.Since(began)
	billed := int64((took + time.Millisecond - 1) / time.Millisecond)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.inFlight--
	st.s.Ended++
	st.s.BilledMS += billed
	if failed {
		st.s.Errors++
	}
}

// Stats returns the function's figures since it started or since the last
// ResetStats.
func (f *Function) Stats() Stats {
	f.stats.mu.Lock()
	defer f.stats.mu.Unlock()
	s := f.stats.s
	s.MemoryMB = f.cfg.MemoryMB
	s.Environments = f.envs.Load() - f.envsAtReset.Load()
	return s
}

// ResetStats starts the figures again from now, so a run can measure one
// phase of its own; invocations in flight count towards the new peak.
func (f *Function) ResetStats() {
	f.stats.mu.Lock()
	defer f.stats.mu.Unlock()
	f.stats.s = Stats{Peak: f.stats.inFlight}
	f.envsAtReset.Store(f.envs.Load())
}

// Busy reports whether an invocation is in flight or an extension is still
// at work on one answered: an invocation's answer counts it as the
// extension's before it leaves the flight, so there is no moment between.
func (f *Function) Busy() bool {
	f.stats.mu.Lock()
	n := f.stats.inFlight
	f.stats.mu.Unlock()
	return n > 0 || f.afterAnswers.Load() > 0
}
