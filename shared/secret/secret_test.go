package secret_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/secret"
)

// source is a secret store whose value the test rotates; it counts reads.
type source struct {
	value string
	err   error
	reads int
}

func (s *source) Secret(context.Context, string) (string, error) {
	s.reads++
	return s.value, s.err
}

func TestRenew(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	type step struct {
		at      time.Duration // after cold start
		rotate  string        // the store's value from now on, when set
		fail    bool          // the store fails from now on
		refused string
		want    string
		ok      bool
		reads   int // reads of the store so far
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"a rotated key is read on the first refusal a minute after cold start", []step{
			{at: time.Minute, rotate: "new", refused: "old", want: "new", ok: true, reads: 1},
		}},
		{"within a minute of the cold start read the store is not asked", []step{
			{at: 30 * time.Second, rotate: "new", refused: "old", want: "old", reads: 0},
			{at: 59 * time.Second, refused: "old", want: "old", reads: 0},
			{at: 60 * time.Second, refused: "old", want: "new", ok: true, reads: 1},
		}},
		{"an unchanged secret: no retry, and no second read within the minute", []step{
			{at: time.Minute, refused: "old", want: "old", reads: 1},
			{at: time.Minute + 59*time.Second, rotate: "new", refused: "old", want: "old", reads: 1},
			{at: 2 * time.Minute, refused: "old", want: "new", ok: true, reads: 2},
		}},
		{"a request that carried the old value retries with one renewed meanwhile", []step{
			{at: time.Minute, rotate: "new", refused: "old", want: "new", ok: true, reads: 1},
			{at: time.Minute + time.Second, refused: "old", want: "new", ok: true, reads: 1},
			{at: time.Minute + 2*time.Second, refused: "new", want: "new", reads: 1},
		}},
		{"a failed read keeps the value and waits the minute too", []step{
			{at: time.Minute, fail: true, refused: "old", want: "old", reads: 1},
			{at: time.Minute + time.Second, refused: "old", want: "old", reads: 1},
		}},
		{"an empty secret is not taken", []step{
			{at: time.Minute, rotate: " ", refused: "old", want: "old", reads: 1},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := &source{value: "old"}
			now := start
			v := secret.New(secret.Options{Name: "GEMINI_API_KEY", ARN: "arn:aws:secretsmanager:us-east-1:1:secret:k", Source: src,
				Initial: "old", Now: func() time.Time { return now }})
			for i, s := range c.steps {
				now = start.Add(s.at)
				if s.rotate != "" {
					src.value = s.rotate
				}
				if s.fail {
					src.err = errors.New("throttled")
				}
				got, ok := v.Renew(ctx, s.refused)
				if got != s.want || ok != s.ok || src.reads != s.reads {
					t.Fatalf("step %d: Renew(%q) = %q, %v after %d reads; want %q, %v after %d", i, s.refused, got, ok, src.reads, s.want, s.ok, s.reads)
				}
				if v.Get() != s.want {
					t.Fatalf("step %d: Get() = %q, want %q", i, v.Get(), s.want)
				}
			}
		})
	}
}

func TestStaticNeverRenews(t *testing.T) {
	v := secret.Static("local")
	if got, ok := v.Renew(context.Background(), "local"); got != "local" || ok {
		t.Fatalf("Renew = %q, %v", got, ok)
	}
	var none *secret.Value
	if none.Get() != "" {
		t.Fatal("a nil Value is not empty")
	}
}
