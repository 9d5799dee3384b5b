package wait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/wait"
)

// TestSleepEndsWithItsContext: a pause ends when its context does, with
// the context's error, and a pause that runs out returns nil.
func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wait.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled pause returned %v", err)
	}
	if err := wait.Sleep(context.Background(), 0); err != nil {
		t.Fatalf("a pause that ran out returned %v", err)
	}
}
