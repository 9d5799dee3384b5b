package chatreply_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/chatreply"
	"42sisters.ai/oracle/shared/gemini"
)

// BenchmarkChatReply is one exchange at the bounds per iteration (a
// history of MaxHistoryChars, a message of MaxMessageChars) through the
// real Replier, client and Caller against the fake Gemini over HTTP:
// own-% is the time of Reply less the time it waited on its model calls
// (the two stances at once counted once, as the wall clock sees them), as
// a percentage of that wait. The own work is the prompts (each scans the
// history for listed words), the content filter on the reply, and the
// goroutines of the stances. Locally the calls are the fake's
// milliseconds; Gemini's take seconds, so the share there is far smaller.
func BenchmarkChatReply(b *testing.B) {
	e := newEnv(b)
	timer := &waitTimer{}
	e.replier.Model = timedModel{Model: e.caller, t: timer}
	e.replier.Circuit = nil
	req := chatreply.Request{Message: strings.Repeat("Is this plan sound? ", 100)[:chatreply.MaxMessageChars]}
	for len(req.History)*1000 < chatreply.MaxHistoryChars {
		role := chatreply.RolePerson
		if len(req.History)%2 == 1 {
			role = chatreply.RoleVoice
		}
		req.History = append(req.History, chatreply.Turn{Role: role, Text: strings.Repeat("We talked about the bakery. ", 40)[:1000]})
	}
	ctx := context.Background()
	var handled time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := e.replier.Reply(ctx, req)
		handled += time.Since(start)
		if err != nil || res.Filter != chatreply.FilterPass {
			b.Fatalf("%+v %v", res, err)
		}
	}
	b.StopTimer()
	calls, n := timer.total(), float64(b.N)
	own := handled - calls
	b.ReportMetric(float64(own.Microseconds())/n, "own-µs/op")
	b.ReportMetric(float64(calls.Microseconds())/n, "calls-µs/op")
	b.ReportMetric(100*float64(own)/float64(calls), "own-%")
}

// waitTimer sums the wall-clock time during which at least one model call
// is in flight.
type waitTimer struct {
	mu       sync.Mutex
	inFlight int
	since    time.Time
	d        time.Duration
}

func (t *waitTimer) begin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inFlight == 0 {
		t.since = time.Now()
	}
	t.inFlight++
}

func (t *waitTimer) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight--
	if t.inFlight == 0 {
		t.d += time.Since(t.since)
	}
}

func (t *waitTimer) total() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.d
}

type timedModel struct {
	chatreply.Model
	t *waitTimer
}

func (m timedModel) Call(ctx context.Context, r gemini.Request, v func(string) error) (gemini.Result, error) {
	m.t.begin()
	defer m.t.end()
	return m.Model.Call(ctx, r, v)
}
