package gemini_test

import (
	"context"
	"testing"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
)

// A key Google refuses is read again from its secret in moto's Secrets
// Manager, at most once a minute, and a new key is tried at once as the
// next attempt, within the ceiling of three (INV-2): a refused key that did
// not change still ends the Call at once (INV-4, VC-3).
func TestARefusedKeyIsReadAgain(t *testing.T) {
	const oldKey, newKey = "AIzaSy-old-key-0123456789", "AIzaSy-new-key-0123456789"
	cases := []struct {
		name     string
		rotate   bool
		after    time.Duration // since the cold start read
		control  string        // the fake's scenario
		attempts int
		ok       bool
		kind     gemini.Kind
	}{
		{"rotated: the second attempt carries the new key", true, time.Minute, ``, 2, true, 0},
		{"not rotated: no retry", false, time.Minute, ``, 1, false, gemini.AuthFailure},
		{"rotated, but read less than a minute ago: no retry", true, 59 * time.Second, ``, 1, false, gemini.AuthFailure},
		{"rotated, then the model fails: never a fourth attempt", true, time.Minute, `{"status":500,"calls":10}`, 3, false, gemini.ServerError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, fakegemini.Options{})
			f.fake.AcceptOnly(newKey)
			if c.control != "" {
				f.control(t, c.control)
			}
			clock := testkit.NewClock(time.Now())
			key := testkit.RotatingSecret(t, "GEMINI_API_KEY", oldKey, clock)
			if c.rotate {
				key.Rotate(newKey)
			}
			clock.Add(c.after)
			h := newHarness()
			caller := fakeCaller(t, f, h, gemini.Policy{MinCall: -1}, gemini.Options{Key: key.Value})
			res, err := caller.Call(context.Background(), request(oracle.TierQuick), validator(oracle.TierQuick))
			calls := len(f.fake.Calls())
			if c.ok {
				if err != nil || res.Attempts != c.attempts {
					t.Fatalf("Call = %+v, %v; want success on attempt %d", res, err, c.attempts)
				}
			} else if err == nil || callError(t, err).Attempts != c.attempts || gemini.KindOf(err) != c.kind {
				t.Fatalf("Call error %v; want %s after %d attempts", err, c.kind, c.attempts)
			}
			if calls != c.attempts {
				t.Fatalf("the model got %d requests, want %d", calls, c.attempts)
			}
			if c.ok && len(h.slept()) != 0 {
				t.Fatalf("the attempt with the new key waited %v", h.slept())
			}
		})
	}
}

// The key check reads a refused key again and checks the new one, so that
// the generator's parked orders and the health job see the rotation.
func TestCheckKeyReadsARefusedKeyAgain(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	f.fake.AcceptOnly("AIzaSy-new-key-0123456789")
	clock := testkit.NewClock(time.Now())
	key := testkit.RotatingSecret(t, "GEMINI_API_KEY", "AIzaSy-old-key-0123456789", clock)
	client := f.client(t, gemini.Options{Key: key.Value})
	if err := client.CheckKey(context.Background()); gemini.KindOf(err) != gemini.AuthFailure {
		t.Fatalf("CheckKey with the revoked key = %v, want an AuthFailure", err)
	}
	key.Rotate("AIzaSy-new-key-0123456789")
	clock.Add(time.Minute)
	if err := client.CheckKey(context.Background()); err != nil {
		t.Fatalf("CheckKey after the rotation = %v", err)
	}
}
