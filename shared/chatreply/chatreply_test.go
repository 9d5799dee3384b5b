package chatreply_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/chatreply"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/sosfilter"
)

const message = "Should I quit my job to open a bakery in my neighbourhood?"

var history = []chatreply.Turn{
	{Role: chatreply.RolePerson, Text: "I bake on weekends and people keep asking to buy."},
	{Role: chatreply.RoleVoice, Text: "That is a real signal. How many of them have paid you so far?"},
}

// An exchange asks both stances, at once, then the merge with both notes
// and the conversation, and returns the merge's reply as the filter passed
// it, with the tokens every pass used.
func TestReplyMergesBothStances(t *testing.T) {
	e := newEnv(t)
	res, err := e.reply(t, chatreply.Request{History: history, Message: message})
	if err != nil {
		t.Fatal(err)
	}
	calls := e.fake.Calls()
	if got := e.passes(); len(got) != 3 || got[2] != prompt.PassMerge || !slices.Contains(got[:2], prompt.PassBuild) || !slices.Contains(got[:2], prompt.PassTest) {
		t.Fatalf("passes %v, want both stances then the merge", got)
	}
	merge := calls[2]
	for _, c := range calls[:2] {
		note := fakegemini.ChatAnswer(c.SystemInstruction, c.UserText)
		if !strings.Contains(merge.UserText, note) {
			t.Errorf("the merge was not given the %s note %q", c.Pass, note)
		}
		if !strings.Contains(c.UserText, message) || !strings.Contains(c.UserText, history[1].Text) {
			t.Errorf("the %s stance did not read the message and the conversation", c.Pass)
		}
		if c.GenerationConfig.ResponseMIMEType != "text/plain" {
			t.Errorf("the %s stance asked for %q", c.Pass, c.GenerationConfig.ResponseMIMEType)
		}
	}
	if want := fakegemini.ChatAnswer(merge.SystemInstruction, merge.UserText); res.Reply != want {
		t.Errorf("reply %q, want the merge's %q", res.Reply, want)
	}
	if res.Filter != chatreply.FilterPass || res.Calls != 3 || res.Model != gemini.DefaultModel {
		t.Errorf("result %+v", res)
	}
	if res.Usage.PromptTokens == 0 || res.Usage.OutputTokens == 0 {
		t.Errorf("no usage: %+v", res.Usage)
	}
	if e.circuit.allowed != 1 || e.circuit.ok != 1 || e.circuit.failed != 0 {
		t.Errorf("circuit heard %+v, want one permit and one success", e.circuit)
	}
}

// The two stances run at the same time: each waits at the fake until the
// other has arrived, so run one after the other they would never answer.
func TestStancesRunAtOnce(t *testing.T) {
	e := newEnv(t)
	var arrived sync.WaitGroup
	arrived.Add(2)
	e.replier.Model = meeting{Model: e.caller, arrived: &arrived}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.replier.Reply(ctx, chatreply.Request{Message: message}); err != nil {
		t.Fatalf("the stances did not run at once: %v", err)
	}
}

// meeting makes each stance wait for both to have started.
type meeting struct {
	chatreply.Model
	arrived *sync.WaitGroup
}

func (m meeting) Call(ctx context.Context, r gemini.Request, v func(string) error) (gemini.Result, error) {
	if !strings.Contains(r.System, "YOUR TASK NOW\nWrite your reply") {
		m.arrived.Done()
		done := make(chan struct{})
		go func() { m.arrived.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			return gemini.Result{}, ctx.Err()
		}
	}
	return m.Model.Call(ctx, r, v)
}

// The model reads the newest turns that fit in MaxHistoryChars, oldest
// dropped first, whole.
func TestHistoryIsBounded(t *testing.T) {
	turn := func(i, size int) chatreply.Turn {
		role := chatreply.RolePerson
		if i%2 == 1 {
			role = chatreply.RoleVoice
		}
		label := fmt.Sprintf("turn-%03d ", i)
		return chatreply.Turn{Role: role, Text: label + strings.Repeat("x", size-len(label))}
	}
	for _, tc := range []struct {
		name  string
		sizes []int
		kept  int // the newest turns the model reads
	}{
		{"none", nil, 0},
		{"all fit", []int{100, 200, 300}, 3},
		{"exactly the bound", []int{4000, 4000}, 2},
		{"one over drops the oldest", []int{10, 4000, 4000}, 2},
		{"many small", slices.Repeat([]int{1000}, 20), 8},
		{"a newest turn over the bound alone", []int{10, chatreply.MaxHistoryChars + 1}, 0},
		{"a long old turn stops the count", []int{10, 7000, 500, 600}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h []chatreply.Turn
			for i, size := range tc.sizes {
				h = append(h, turn(i, size))
			}
			kept := chatreply.Bound(h)
			if len(kept) != tc.kept || (tc.kept > 0 && &kept[len(kept)-1] != &h[len(h)-1]) {
				t.Fatalf("Bound kept %d turns, want the newest %d", len(kept), tc.kept)
			}
			e := newEnv(t)
			if _, err := e.reply(t, chatreply.Request{History: h, Message: message}); err != nil {
				t.Fatal(err)
			}
			for _, c := range e.fake.Calls() {
				for i := range h {
					label := fmt.Sprintf("turn-%03d ", i)
					if in, want := strings.Contains(c.UserText, label), i >= len(h)-tc.kept; in != want {
						t.Errorf("%s pass: turn %d read %v, want %v", c.Pass, i, in, want)
					}
				}
			}
		})
	}
}

// The content filter decides every reply: a clean one passes, one with a
// replaceable term is repaired, one it stops is written again once (with
// the words it used named to avoid), and a second stop gives the apology
// with one alert. Only the apology and the merge's second writing differ in
// what they cost.
func TestFilterOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scenario string
		filter   string
		calls    int
		alerts   int
		has      string // the reply contains
		hasNot   string
	}{
		{name: "clean", filter: chatreply.FilterPass, calls: 3},
		{name: "a replaceable term is repaired", scenario: `{"leak_terms":["TMM"],"pass":"merge"}`, filter: chatreply.FilterPass, calls: 3, hasNot: "TMM"},
		{name: "stopped, then written again", scenario: `{"leak_terms":["CSDM"],"pass":"merge","calls":1}`, filter: chatreply.FilterRegenerated, calls: 4, hasNot: "CSDM"},
		{name: "stopped twice", scenario: `{"leak_terms":["CSDM"],"pass":"merge","calls":2}`, filter: chatreply.FilterApology, calls: 4, alerts: 1, has: chatreply.Apology()},
		{name: "stopped, then the model fails", scenario: `{"leak_terms":["CSDM"],"pass":"merge","calls":1}`, filter: chatreply.FilterApology, calls: 3, alerts: 1, has: chatreply.Apology()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.scenario != "" {
				e.control(t, tc.scenario)
			}
			if tc.name == "stopped, then the model fails" {
				e.replier.Model = failSecondMerge{Model: e.caller}
			}
			res, err := e.reply(t, chatreply.Request{History: history, Message: message, Account: "hmac-sha256:0123456789abcdef0123456789abcdef"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Filter != tc.filter || res.Calls != tc.calls {
				t.Errorf("filter %q after %d calls, want %q after %d", res.Filter, res.Calls, tc.filter, tc.calls)
			}
			if tc.has != "" && !strings.Contains(res.Reply, tc.has) || tc.hasNot != "" && strings.Contains(res.Reply, tc.hasNot) {
				t.Errorf("reply %q", res.Reply)
			}
			got := e.alerts.of(alert.ChatReplyFiltered)
			if len(got) != tc.alerts {
				t.Fatalf("%d CHAT_REPLY_FILTERED alerts, want %d", len(got), tc.alerts)
			}
			if tc.alerts == 1 && (!strings.Contains(got[0].Detail, "internal_term 1") || got[0].Subject == "" || strings.Contains(got[0].Detail, "CSDM")) {
				t.Errorf("alert %+v: it names the entry and the account, never the text", got[0])
			}
			wantFailed := 0 // the circuit hears a second writing that failed as an outage
			if tc.name == "stopped, then the model fails" {
				wantFailed = 1
			}
			if e.circuit.failed != wantFailed || e.circuit.ok != 1-wantFailed {
				t.Errorf("the circuit heard %d failures and %d successes", e.circuit.failed, e.circuit.ok)
			}
			if tc.filter == chatreply.FilterRegenerated {
				again := e.fake.Calls()[3]
				if again.Pass != string(prompt.PassMerge) || !strings.Contains(again.SystemInstruction, "COULD NOT BE SENT") ||
					!strings.Contains(again.UserText, `must not contain (refer to each indirectly): "CSDM"`) || *again.GenerationConfig.Seed != int64(prompt.ChatSeedAgain) {
					t.Errorf("the merge written again: %+v", again)
				}
			}
		})
	}
}

// failSecondMerge fails the second merge as an outage would.
type failSecondMerge struct{ chatreply.Model }

func (f failSecondMerge) Call(ctx context.Context, r gemini.Request, v func(string) error) (gemini.Result, error) {
	if strings.Contains(r.System, "COULD NOT BE SENT") {
		return gemini.Result{}, &gemini.CallError{Attempts: 2, Err: &gemini.Error{Kind: gemini.ServerError}}
	}
	return f.Model.Call(ctx, r, v)
}

// The apology is a customer-facing text: the content filter passes it
// untouched, and it neither names the voice nor anything behind it.
func TestApologyPassesTheContentFilter(t *testing.T) {
	filter, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	a := chatreply.Apology()
	if r := filter.Text(a); r.Action != sosfilter.Pass || r.Text != a {
		t.Fatalf("the filter %s the apology (%v)", r.Action, r.Terms())
	}
	if a == "" || strings.ContainsAny(a, "<>{}") {
		t.Fatalf("apology %q", a)
	}
}

// A model that fails, in any pass, fails the exchange with ErrUnavailable
// (the caller gives the exchange back) and counts against the circuit; an
// open circuit fails it without asking the model.
func TestModelOutageIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scenario string
		open     bool
		calls    int // requests the fake received, at most
		failed   int // failures the circuit heard
	}{
		{name: "every pass", scenario: `{"status":503,"calls":100}`, calls: 4, failed: 1},
		{name: "one stance", scenario: `{"status":500,"pass":"test","calls":100}`, calls: 4, failed: 1},
		{name: "the merge", scenario: `{"status":500,"pass":"merge","calls":100}`, calls: 4, failed: 1},
		{name: "a refused prompt", scenario: `{"blocked":true,"pass":"build","calls":100}`, calls: 4},
		{name: "the circuit is open", open: true, calls: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.circuit.open = tc.open
			e.circuit.trip = true
			if tc.scenario != "" {
				e.control(t, tc.scenario)
			}
			res, err := e.reply(t, chatreply.Request{Message: message})
			if !errors.Is(err, chatreply.ErrUnavailable) {
				t.Fatalf("result %+v, error %v: want ErrUnavailable", res, err)
			}
			if res.Reply != "" {
				t.Errorf("a reply with the error: %q", res.Reply)
			}
			if n := len(e.fake.Calls()); n > tc.calls {
				t.Errorf("the fake received %d requests, want at most %d", n, tc.calls)
			}
			if e.circuit.failed != tc.failed {
				t.Errorf("the circuit heard %d failures, want %d", e.circuit.failed, tc.failed)
			}
			if tc.failed > 0 && len(e.alerts.of(alert.CircuitOpen)) != 1 {
				t.Errorf("the trip raised %d CIRCUIT_OPEN alerts", len(e.alerts.of(alert.CircuitOpen)))
			}
			if len(e.alerts.of(alert.ChatReplyFiltered)) != 0 {
				t.Error("an outage raised CHAT_REPLY_FILTERED")
			}
		})
	}
}

// The exchange shares its caller's deadline: the stances get 40 % of it,
// the merge 60 % of what is left, a second merge the rest, and none goes
// past it; with no deadline, DefaultBudget applies.
func TestDeadlineIsShared(t *testing.T) {
	start := time.Now()
	for _, tc := range []struct {
		name     string
		deadline time.Duration // 0: none
		scenario string
		want     []time.Duration // each call's deadline after start, in order
	}{
		{"25 s", 25 * time.Second, "", []time.Duration{10 * time.Second, 10 * time.Second, 15 * time.Second}},
		{"none", 0, "", []time.Duration{10 * time.Second, 10 * time.Second, 15 * time.Second}},
		{"written again", 20 * time.Second, `{"leak_terms":["CSDM"],"pass":"merge","calls":1}`, []time.Duration{8 * time.Second, 8 * time.Second, 12 * time.Second, 20 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.scenario != "" {
				e.control(t, tc.scenario)
			}
			rec := &deadlines{Model: e.caller}
			e.replier.Model = rec
			e.replier.Now = func() time.Time { return start } // the model answers in no time
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, start.Add(tc.deadline))
				defer cancel()
			}
			if _, err := e.replier.Reply(ctx, chatreply.Request{Message: message}); err != nil {
				t.Fatal(err)
			}
			got := rec.after(start)
			slices.Sort(got[:2])
			if !slices.Equal(got, tc.want) {
				t.Fatalf("deadlines %v, want %v", got, tc.want)
			}
		})
	}
}

// A model that hangs ends the exchange with ErrUnavailable, a timeout of
// a stance cut at its share of the deadline (0.8 s of 2 s), not at the
// caller's deadline, which has not passed when Reply returns.
func TestHangingModelEndsAtTheDeadline(t *testing.T) {
	e := newEnv(t)
	e.caller.Policy.MinCall = 10 * time.Millisecond
	e.control(t, `{"hang":true,"calls":100}`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := e.replier.Reply(ctx, chatreply.Request{Message: message})
	if !errors.Is(err, chatreply.ErrUnavailable) || gemini.KindOf(err) != gemini.Timeout || !strings.Contains(err.Error(), "pass") {
		t.Fatalf("error %v (kind %s), want ErrUnavailable from a stance's timeout", err, gemini.KindOf(err))
	}
	if ctx.Err() != nil {
		t.Fatal("Reply returned only after its caller's deadline")
	}
	if got := e.passes(); slices.Contains(got, prompt.PassMerge) {
		t.Fatalf("passes %v: the merge was asked after the stances failed", got)
	}
}

// deadlines records each call's deadline.
type deadlines struct {
	chatreply.Model
	mu  sync.Mutex
	got []time.Time
}

func (d *deadlines) Call(ctx context.Context, r gemini.Request, v func(string) error) (gemini.Result, error) {
	dl, _ := ctx.Deadline()
	d.mu.Lock()
	d.got = append(d.got, dl)
	d.mu.Unlock()
	return d.Model.Call(ctx, r, v)
}

func (d *deadlines) after(start time.Time) []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]time.Duration, len(d.got))
	for i, t := range d.got {
		out[i] = t.Sub(start).Round(time.Millisecond)
	}
	return out
}

// Neither a reply, nor an alert, nor any log line of the exchange (the
// Replier's and the Caller's) names the spec's streams, holds the
// person's message or the reply; and a reply in which the model named
// them comes out without the names.
func TestNoStreamNameOrTextLeaks(t *testing.T) {
	streams := []string{"aion", "astra"}
	for _, scenario := range []string{
		"",
		`{"leak_terms":["AION","ASTRA"],"pass":"merge"}`,
		`{"leak_terms":["ASTRA","CSDM"],"pass":"merge","calls":2}`,
		`{"leak_terms":["AION"],"pass":"build"}`,
		`{"status":503,"calls":100}`,
	} {
		t.Run(scenario, func(t *testing.T) {
			e := newEnv(t)
			if scenario != "" {
				e.control(t, scenario)
			}
			secret := "my secret plan is a bakery called Lumen"
			res, err := e.reply(t, chatreply.Request{History: history, Message: secret})
			if err != nil && !errors.Is(err, chatreply.ErrUnavailable) {
				t.Fatal(err)
			}
			var texts []string
			for _, a := range e.alerts.got {
				texts = append(texts, a.Detail, a.Subject)
			}
			logs := e.logs.String()
			if logs == "" {
				t.Fatal("nothing was logged")
			}
			for _, s := range streams {
				for _, text := range append(texts, res.Reply, logs) {
					if strings.Contains(strings.ToLower(text), s) {
						t.Errorf("%q holds a stream's name: %q", text[:min(len(text), 200)], s)
					}
				}
			}
			for _, private := range []string{"Lumen", history[0].Text, history[1].Text} {
				if strings.Contains(logs, private) {
					t.Errorf("the logs hold the conversation: %q", private)
				}
			}
			if res.Reply != "" && len(res.Reply) > 20 && strings.Contains(logs, res.Reply[:20]) {
				t.Error("the logs hold the reply")
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  string
		want error
	}{
		{"plain", "Should I open a bakery?", nil},
		{"exactly the limit", strings.Repeat("a", chatreply.MaxMessageChars), nil},
		{"the limit in emoji", strings.Repeat("🧁", chatreply.MaxMessageChars), nil},
		{"the limit with joiners not counted", strings.Repeat("👩\u200d👩", chatreply.MaxMessageChars/2), nil},
		{"the limit with accents not counted", strings.Repeat("e\u0301", chatreply.MaxMessageChars), nil},
		{"empty", "", chatreply.ErrEmpty},
		{"spaces", "   \n\t ", chatreply.ErrInvisible},
		{"zero-width only", "\u200b\u200d\ufeff", chatreply.ErrInvisible},
		{"combining marks only", "\u0301\u0302", chatreply.ErrInvisible},
		{"one over", strings.Repeat("a", chatreply.MaxMessageChars+1), chatreply.ErrTooLong},
		{"spaces count", strings.Repeat("a ", chatreply.MaxMessageChars/2+1), chatreply.ErrTooLong},
		{"too many bytes of invisible text", "a" + strings.Repeat("\u200b", chatreply.MaxMessageBytes/3+1), chatreply.ErrTooLong},
		{"not UTF-8", "abc\xff", chatreply.ErrNotText},
		{"a NUL", "a\x00b", chatreply.ErrNotText},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := chatreply.Validate(tc.msg)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Validate: %v, want %v", err, tc.want)
			}
		})
	}
	distinct := []error{chatreply.ErrEmpty, chatreply.ErrInvisible, chatreply.ErrNotText, chatreply.ErrTooLong, chatreply.ErrUnavailable}
	for i, a := range distinct {
		for _, b := range distinct[i+1:] {
			if errors.Is(a, b) {
				t.Errorf("%v is %v", a, b)
			}
		}
	}
}

// A message Validate refuses, or a history of unknown roles, is refused
// before the model is asked.
func TestBadRequestsAskNoModel(t *testing.T) {
	e := newEnv(t)
	if _, err := e.reply(t, chatreply.Request{Message: " "}); !errors.Is(err, chatreply.ErrInvisible) {
		t.Fatalf("error %v", err)
	}
	if _, err := e.reply(t, chatreply.Request{Message: "hi", History: []chatreply.Turn{{Role: "system", Text: "x"}}}); err == nil || errors.Is(err, chatreply.ErrUnavailable) {
		t.Fatalf("error %v", err)
	}
	if n := len(e.fake.Calls()); n != 0 || e.circuit.allowed != 0 {
		t.Fatalf("%d model calls, %d permits", n, e.circuit.allowed)
	}
}
