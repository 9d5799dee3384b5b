// Package testkit holds the small helpers tests share: a settable clock to
// inject instead of time.Now, a buffer that concurrent writers (loggers,
// processes) can share, and a wait for a condition.
package testkit

import (
	"bytes"
	"sync"
	"time"
)

// Clock is a settable clock; pass its Now wherever code takes a clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock forward by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Buffer is a bytes.Buffer safe for concurrent writers.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Eventually checks cond at once and then every interval until it holds or
// timeout has passed, and reports whether it held. The last check comes
// after the deadline, so a slow machine gets the whole timeout. cond may
// fail its test itself when it meets a state it can never recover from.
func Eventually(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}
