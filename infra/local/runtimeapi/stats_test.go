package runtimeapi_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/local/runtimeapi"
	"42sisters.ai/oracle/infra/testkit"
)

// TestStatsCountWhatLambdaBills: invocations and errors are counted, each
// duration is billed in whole milliseconds at the configured memory, and
// the peak is the most invocations in flight at once (two here, held
// together by a barrier, with a third environment idle).
func TestStatsCountWhatLambdaBills(t *testing.T) {
	barrier := barrier(t, 2)
	f := start(t, runtimeapi.Config{Instances: 3, MemoryMB: 512, Timeout: 20 * time.Second, Log: &testkit.Buffer{}})
	if !testkit.Eventually(20*time.Second, 10*time.Millisecond, func() bool { return f.Stats().Environments == 3 }) {
		t.Fatalf("environments started: %d, want 3", f.Stats().Environments)
	}
	payload := fmt.Sprintf(`{"do":"get","url":%q}`, barrier.URL)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := f.Invoke(context.Background(), []byte(payload)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := invoke(t, f, `{"do":"error"}`); err == nil {
		t.Fatal("the failing invocation succeeded")
	}
	s := f.Stats()
	if s.Invocations != 3 || s.Ended != 3 || s.Errors != 1 || s.Peak != 2 || s.MemoryMB != 512 || s.Environments != 3 {
		t.Errorf("stats %+v, want 3 invocations, all 3 ended, 1 error, a peak of 2, 512 MB, 3 environments", s)
	}
	// Each invocation is billed at least its one rounded-up millisecond.
	if s.BilledMS < 3 {
		t.Errorf("billed %d ms for 3 invocations, want at least 3", s.BilledMS)
	}
	if got, want := s.GBSeconds(), float64(s.BilledMS)/1000*0.5; got != want {
		t.Errorf("GB-seconds %v, want %v", got, want)
	}

	f.ResetStats()
	if _, err := invoke(t, f, `{}`); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.Invocations != 1 || s.Ended != 1 || s.Errors != 0 || s.Peak != 1 || s.Environments != 0 {
		t.Errorf("after a reset and one invocation: %+v, want 1 invocation ended, a peak of 1, no new environment", s)
	}
}
