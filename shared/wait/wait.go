// Package wait pauses for a while unless the context ends first: the one
// real sleep behind every injectable one (retries' backoffs, the health
// job's retry delay, the agent's poll, the fakes' slow answers).
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends and then returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
