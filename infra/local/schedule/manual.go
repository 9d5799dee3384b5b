package schedule

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// ManualClock is a Clock that moves only when told to, for tests: Set
// wakes the goroutines sleeping until a time it reaches, and Sleepers tells
// when the goroutines under test have gone back to sleep, so a test knows
// each firing is over without sleeping itself.
type ManualClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers []*sleeper
	changed  chan struct{} // closed, and replaced, whenever sleepers changes
}

type sleeper struct {
	until time.Time
	wake  chan struct{}
}

// NewManualClock is a clock that reads now until it is Set.
func NewManualClock(now time.Time) *ManualClock {
	return &ManualClock{now: now, changed: make(chan struct{})}
}

// Now is the time the clock was last set to.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// SleepUntil returns at once when the clock already reads t, else when Set
// reaches t or ctx ends.
func (c *ManualClock) SleepUntil(ctx context.Context, t time.Time) bool {
	c.mu.Lock()
	if !t.After(c.now) {
		c.mu.Unlock()
		return true
	}
	s := &sleeper{until: t, wake: make(chan struct{})}
	c.sleepers = append(c.sleepers, s)
	c.notify()
	c.mu.Unlock()
	select {
	case <-s.wake:
		return true
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		if i := slices.Index(c.sleepers, s); i >= 0 {
			c.sleepers = slices.Delete(c.sleepers, i, i+1)
			c.notify()
		}
		return false
	}
}

// Set moves the clock to t (forwards or back) and wakes every goroutine
// sleeping until t or earlier.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	woken := false
	c.sleepers = slices.DeleteFunc(c.sleepers, func(s *sleeper) bool {
		if s.until.After(t) {
			return false
		}
		close(s.wake)
		woken = true
		return true
	})
	if woken {
		c.notify()
	}
}

// Sleepers waits until at least n goroutines sleep on the clock, or ctx
// ends, and returns the times they sleep until, earliest first.
func (c *ManualClock) Sleepers(ctx context.Context, n int) ([]time.Time, error) {
	for {
		c.mu.Lock()
		var times []time.Time
		for _, s := range c.sleepers {
			times = append(times, s.until)
		}
		changed := c.changed
		c.mu.Unlock()
		if len(times) >= n {
			slices.SortFunc(times, time.Time.Compare)
			return times, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return times, fmt.Errorf("%d goroutine(s) sleep on the clock, want %d: %w", len(times), n, ctx.Err())
		}
	}
}

// notify wakes the Sleepers waiting for a change; c.mu is held.
func (c *ManualClock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}
