package testkit

import (
	"net"
	"net/http"
	"sync"
	"syscall"
)

// Faulty is an HTTP transport for an AWS client that refuses every request
// while it is down, as a dependency that is unreachable does, and passes
// them on while it is up: a fault-injecting proxy in front of moto.
type Faulty struct {
	mu   sync.Mutex
	down bool
	// Refused counts the requests refused so far.
	refused int
}

// Down makes every request fail until Up.
func (f *Faulty) Down() { f.set(true) }

// Up lets requests through again.
func (f *Faulty) Up() { f.set(false) }

func (f *Faulty) set(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

// Refused reports how many requests were refused.
func (f *Faulty) Refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

// RoundTrip implements http.RoundTripper.
func (f *Faulty) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	down := f.down
	if down {
		f.refused++
	}
	f.mu.Unlock()
	if down {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	return http.DefaultTransport.RoundTrip(r)
}
