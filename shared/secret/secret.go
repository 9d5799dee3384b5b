// Package secret holds a credential read at cold start that reads itself
// again when a provider refuses it, so that a key the operator fixes in its
// secret takes effect in warm containers without a deploy.
//
// A Value is the one mechanism behind every credential a function sends to a
// provider (the Gemini key, the Stripe keys, the Graph app's credentials,
// the webhook signing secrets). The client that uses it calls Renew with
// the value the provider refused; Renew reads the secret again at most once
// per Every in the container, and says whether there is a different value to
// retry with.
package secret

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// DefaultEvery is the least time between two reads of one secret in one
// container: a provider refusing every request must not turn into a
// Secrets Manager call per request.
const DefaultEvery = time.Minute

// Source reads a secret's current value by ARN (config.AWSSecrets).
type Source interface {
	Secret(ctx context.Context, arn string) (string, error)
}

// Value is a secret's value as last read. It is safe for concurrent use.
type Value struct {
	name  string
	arn   string // empty: a value given in the environment, never read again
	src   Source
	every time.Duration
	now   func() time.Time
	log   *slog.Logger

	mu      sync.Mutex
	current string
	read    time.Time // when current was last read
}

// Options make a Value that reads itself again.
type Options struct {
	// Name is the setting's name (GEMINI_API_KEY), for the log; never the value.
	Name string
	// ARN is where the secret lives; Source reads it.
	ARN    string
	Source Source
	// Initial is the value read at cold start, at Now().
	Initial string
	// Every is the least time between two reads; zero means DefaultEvery.
	Every time.Duration
	// Now is the clock of the rate limit; nil means time.Now.
	Now func() time.Time
	// Log receives a line when a read fails or finds a new value; nil
	// means slog.Default().
	Log *slog.Logger
}

// New returns a Value holding o.Initial, read at o.Now().
func New(o Options) *Value {
	v := &Value{name: o.Name, arn: o.ARN, src: o.Source, every: o.Every, now: o.Now, log: o.Log, current: o.Initial}
	if v.every <= 0 {
		v.every = DefaultEvery
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.log == nil {
		v.log = slog.Default()
	}
	v.read = v.now()
	return v
}

// Static is a Value with no secret behind it (a local run's environment, a
// test): Renew never finds another.
func Static(value string) *Value {
	return &Value{current: value, now: time.Now, log: slog.New(slog.DiscardHandler)}
}

// Get returns the value as last read. A nil Value is empty.
func (v *Value) Get() string {
	if v == nil {
		return ""
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.current
}

// Renew is called when a provider refused refused, the value the request
// carried. It reads the secret again unless it was read less than Every
// ago, and returns the value to retry with and true when that differs from
// refused: a value another request renewed meanwhile counts, a read that
// finds the same value or fails does not. A failed read still waits Every
// before the next, and is logged without the value.
func (v *Value) Renew(ctx context.Context, refused string) (string, bool) {
	if v == nil {
		return refused, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	if v.arn != "" && v.src != nil && !now.Before(v.read.Add(v.every)) {
		v.read = now
		fresh, err := v.src.Secret(ctx, v.arn)
		fresh = strings.TrimSpace(fresh)
		switch {
		case err != nil:
			v.log.WarnContext(ctx, "re-reading a refused secret failed", "secret", v.name, "error", err.Error())
		case fresh == "":
			v.log.WarnContext(ctx, "re-reading a refused secret found it empty; keeping the old value", "secret", v.name)
		case fresh != v.current:
			v.log.InfoContext(ctx, "a refused secret was read again and has a new value", "secret", v.name)
			v.current = fresh
		}
	}
	return v.current, v.current != refused
}
