// Package config reads a function's settings from the environment once, at
// cold start, collecting every problem so a misconfigured function fails
// loudly with one message naming all of them.
package config

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/secret"
)

// SecretSource fetches a secret's value by ARN.
type SecretSource = secret.Source

// Env reads settings and records what is missing or malformed.
type Env struct {
	lookup   func(string) (string, bool)
	secrets  SecretSource
	problems []string
	// early holds the secrets being read ahead, by ARN, each taken once.
	early map[string]*fetch
}

// fetch is one secret read ahead.
type fetch struct {
	done  chan struct{}
	value string
	err   error
}

// FromEnviron reads the process environment; secrets given by ARN are
// fetched through src. Every secret the environment names (a NAME_ARN
// holding a Secrets Manager or SSM ARN) is asked for at once, as the Env
// is made: a cold start then waits for the slowest of its secrets rather
// than for their sum (the chat's four were four round trips in a row).
func FromEnviron(src SecretSource) *Env {
	e := New(os.LookupEnv, src)
	if src != nil {
		e.readAhead(os.Environ())
	}
	return e
}

// readAhead starts reading every secret environ names.
func (e *Env) readAhead(environ []string) {
	for _, kv := range environ {
		name, arn, _ := strings.Cut(kv, "=")
		arn = strings.TrimSpace(arn)
		if !strings.HasSuffix(name, "_ARN") || !secretARN(arn) || e.early[arn] != nil {
			continue
		}
		if e.early == nil {
			e.early = map[string]*fetch{}
		}
		f := &fetch{done: make(chan struct{})}
		e.early[arn] = f
		go func() {
			defer close(f.done)
			// The cold start's: nothing cancels it; the SDK's timeouts
			// and retries bound it.
			f.value, f.err = e.secrets.Secret(context.Background(), arn)
		}()
	}
}

// secretARN reports an ARN of Secrets Manager or SSM Parameter Store.
func secretARN(s string) bool {
	parts := strings.SplitN(s, ":", 4)
	return len(parts) == 4 && parts[0] == "arn" && (parts[2] == "secretsmanager" || parts[2] == "ssm")
}

// read returns the secret at arn: the read ahead of it the first time,
// else a read of its own (a credential refused and read again).
func (e *Env) read(ctx context.Context, arn string) (string, error) {
	f, ok := e.early[arn]
	if !ok {
		return e.secrets.Secret(ctx, arn)
	}
	delete(e.early, arn)
	select {
	case <-f.done:
		return f.value, f.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// New reads settings through lookup (tests pass a map's lookup).
func New(lookup func(string) (string, bool), src SecretSource) *Env {
	return &Env{lookup: lookup, secrets: src}
}

func (e *Env) get(name string) string {
	v, _ := e.lookup(name)
	return strings.TrimSpace(v)
}

func (e *Env) problem(format string, args ...any) {
	e.problems = append(e.problems, fmt.Sprintf(format, args...))
}

// Invalid records that the setting name, read by another package's getter,
// is unusable.
func (e *Env) Invalid(name string, err error) {
	e.problem("%s: %v", name, err)
}

// String returns a required setting.
func (e *Env) String(name string) string {
	v := e.get(name)
	if v == "" {
		e.problem("%s is required", name)
	}
	return v
}

// Optional returns a setting or its default.
func (e *Env) Optional(name, def string) string {
	if v := e.get(name); v != "" {
		return v
	}
	return def
}

// Address returns a plain email address (no display name), or def when
// unset. Customers are told to write to it, so a malformed one is a problem.
func (e *Env) Address(name, def string) string {
	v := e.Optional(name, def)
	if a, err := mail.ParseAddress(v); err != nil || a.Name != "" || a.Address != v {
		e.problem("%s must be a plain address such as oracle@42sisters.ai, got %q", name, v)
		return ""
	}
	return v
}

// Int returns an integer setting within [min, max], or def when unset.
func (e *Env) Int(name string, def, min, max int) int {
	v := e.get(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		e.problem("%s must be an integer between %d and %d, got %q", name, min, max, v)
		return def
	}
	return n
}

// Days returns a whole number of days within [min, max] as a duration, or
// def days when unset.
func (e *Env) Days(name string, def, min, max int) time.Duration {
	return time.Duration(e.Int(name, def, min, max)) * 24 * time.Hour
}

// Duration returns a Go duration setting (e.g. "45s"), or def when unset.
func (e *Env) Duration(name string, def time.Duration) time.Duration {
	v := e.get(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		e.problem("%s must be a positive duration such as 45s, got %q", name, v)
		return def
	}
	return d
}

// URL returns a required absolute http(s) URL without a trailing slash.
func (e *Env) URL(name string) string {
	v := e.String(name)
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		e.problem("%s must be an absolute http(s) URL, got %q", name, v)
		return ""
	}
	return strings.TrimRight(v, "/")
}

// List returns a comma-separated setting as its non-empty items.
func (e *Env) List(name string) []string {
	var out []string
	for _, s := range strings.Split(e.get(name), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Credential returns a secret as Secret does, as a value that reads itself
// again (at most once per SECRET_REREAD_INTERVAL, default a minute) when a
// provider refuses it. A secret given in the environment (NAME, local runs)
// is never read again.
func (e *Env) Credential(ctx context.Context, name string, required bool) *secret.Value {
	v := e.Secret(ctx, name, required)
	arn := e.get(name + "_ARN")
	if arn == "" || e.secrets == nil {
		return secret.Static(v)
	}
	return secret.New(secret.Options{Name: name, ARN: arn, Source: e.secrets, Initial: v,
		Every: e.Duration("SECRET_REREAD_INTERVAL", secret.DefaultEvery), Now: time.Now})
}

// Secret returns a secret: fetched from Secrets Manager or SSM when
// NAME_ARN is set (how deployed functions get them), else read from NAME
// (local runs and tests). A required secret that is absent is a problem; an
// optional one is returned empty.
func (e *Env) Secret(ctx context.Context, name string, required bool) string {
	if arn := e.get(name + "_ARN"); arn != "" {
		if e.secrets == nil {
			e.problem("%s_ARN is set but no secret source is configured", name)
			return ""
		}
		v, err := e.read(ctx, arn)
		if err != nil {
			e.problem("%s: %v", name, err)
			return ""
		}
		if v = strings.TrimSpace(v); v == "" && required {
			e.problem("%s: the secret at %s is empty", name, arn)
		}
		return v
	}
	v := e.get(name)
	if v == "" && required {
		e.problem("%s_ARN (or %s for local runs) is required", name, name)
	}
	return v
}

// Err returns every problem found so far, or nil.
func (e *Env) Err() error {
	if len(e.problems) == 0 {
		return nil
	}
	return errors.New("invalid configuration: " + strings.Join(e.problems, "; "))
}
