package coldstart

import (
	"testing"
	"time"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/storeguard"
)

// TestStoreTimeouts: the store calls' timeouts are AWS's by default, the
// local stack's longer ones when set, and refused when an attempt could
// outlast its call or a value is not a duration.
func TestStoreTimeouts(t *testing.T) {
	for _, c := range []struct {
		name          string
		env           map[string]string
		attempt, call time.Duration
		bad           bool
	}{
		{"AWS's defaults", nil, storeguard.AttemptTimeout, storeguard.CallTimeout, false},
		{"the local stack's", map[string]string{"STORE_ATTEMPT_TIMEOUT": "8s", "STORE_CALL_TIMEOUT": "9s"}, 8 * time.Second, 9 * time.Second, false},
		{"an attempt longer than its call", map[string]string{"STORE_ATTEMPT_TIMEOUT": "6s"}, 0, 0, true},
		{"not a duration", map[string]string{"STORE_CALL_TIMEOUT": "nine"}, 0, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := config.New(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }, nil)
			g, err := storeGuard(env, &Function{})
			if c.bad {
				if err == nil {
					t.Fatalf("accepted %v", c.env)
				}
				return
			}
			if err != nil || g.AttemptTimeout != c.attempt || g.CallTimeout != c.call {
				t.Fatalf("attempt %s, call %s, %v; want %s, %s", g.AttemptTimeout, g.CallTimeout, err, c.attempt, c.call)
			}
		})
	}
}
