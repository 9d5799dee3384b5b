// Package testkit holds the small helpers tests share: a settable clock to
// inject instead of time.Now, a buffer that concurrent writers (loggers,
// processes) can share, a wait for a condition, and the sample events.
package testkit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
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

// SQSSamples reads the sample SQS events of a function (events/<fn>/*.json,
// from the function's package directory), each of one record, by file name;
// it fails when there is none or one does not parse.
func SQSSamples(tb testing.TB, fn string) map[string]events.SQSEvent {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "events", fn, "*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("samples of %s: %v %v", fn, files, err)
	}
	out := map[string]events.SQSEvent{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		var ev events.SQSEvent
		if err := json.Unmarshal(b, &ev); err != nil || len(ev.Records) != 1 {
			tb.Fatalf("%s: not an SQS event of one record: %v", file, err)
		}
		out[file] = ev
	}
	return out
}
