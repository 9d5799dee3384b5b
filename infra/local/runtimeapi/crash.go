package runtimeapi

import (
	"net/http"
	"sync"
	"time"
)

// Kill is one process killed at a crash point (shared/crashpoint).
type Kill struct {
	// Function is the function's name; Environment the execution
	// environment killed, e.g. "GeneratorFunction#3".
	Function, Environment string
	// Point is the crash point the process reached.
	Point string
	// Payload is the invocation it was running (nil between invocations),
	// which fails as Runtime.ExitError.
	Payload []byte
	// At is when the process reached the point.
	At time.Time
}

// killPlan is how many more processes to kill at each crash point, and
// who hears of each kill.
type killPlan struct {
	mu    sync.Mutex
	armed map[string]*arm
	count map[string]int // killed so far, by point
}

type arm struct {
	left int
	then func(Kill)
}

// take reports whether a process reaching point is to be killed, counts
// the kill and returns who hears of it.
func (p *killPlan) take(point string) (kill bool, then func(Kill)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.armed[point]
	if a == nil || a.left <= 0 {
		return false, nil
	}
	a.left--
	if p.count == nil {
		p.count = map[string]int{}
	}
	p.count[point]++
	return true, a.then
}

// KillAt arms the function's kill plan: the next times processes that
// reach point (a shared/crashpoint name) are killed there with SIGKILL,
// whatever invocation they run, as a crash of the host would kill them;
// then, when not nil, hears of each kill once the process has exited. A
// later call for the same point replaces this one; times 0 disarms it.
func (f *Function) KillAt(point string, times int, then func(Kill)) {
	f.kills.mu.Lock()
	defer f.kills.mu.Unlock()
	if f.kills.armed == nil {
		f.kills.armed = map[string]*arm{}
	}
	f.kills.armed[point] = &arm{left: times, then: then}
}

// Killed is how many processes were killed at point so far.
func (f *Function) Killed(point string) int {
	f.kills.mu.Lock()
	defer f.kills.mu.Unlock()
	return f.kills.count[point]
}

// crashpoint answers a process that reached a crash point: at once when
// the plan spares it, never when it kills it. A killed process is gone
// before the handler returns, so nothing it could still do after the
// point happens; its invocation fails as any crash does (Runtime.ExitError)
// and the environment is replaced.
func (e *environment) crashpoint(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	point := r.PathValue("point")
	kill, then := e.f.kills.take(point)
	if !kill {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	e.mu.Lock()
	var payload []byte
	if e.current != nil {
		payload = e.current.payload
	}
	e.mu.Unlock()
	e.f.out.logf(e.prefix, "killed at crash point %s", point)
	_ = e.cmd.Process.Kill()
	// run cancels ctx once the process has exited.
	<-e.ctx.Done()
	if then != nil {
		name := e.prefix[1 : len(e.prefix)-2] // "[Name#N] " -> "Name#N"
		then(Kill{Function: e.f.cfg.Name, Environment: name, Point: point, Payload: payload, At: at})
	}
}
