package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
)

// The generator's windows compressed 60:1, so that a 10-minute outage
// takes 10 s: the circuit opens after two failed generations and
// half-opens after 1 s, re-delays start at 500 ms (SQS rounds delays to
// whole seconds), backoffs between attempts are short, a hung attempt is
// abandoned after 2 s, and the parking budget is never reached.
var compressed = map[string]string{
	"GEMINI_CALL_TIMEOUT":           "2s",
	"GEMINI_BACKOFF_BASE":           "10ms",
	"GEMINI_CIRCUIT_OPEN_THRESHOLD": "2",
	"GEMINI_CIRCUIT_OPEN_FOR":       "1s",
	"GENERATE_RETRY_BASE":           "500ms",
	"PARKING_BUDGET":                "5m",
}

// outageLength is the 10-minute outage, compressed.
const outageLength = 10 * time.Second

// TestModelOutage runs the verdict engine's outage acceptance items on one
// local stack, with two generator processes and the generator's windows
// compressed 60:1:
//
//   - a 10-minute model outage (the fake Gemini answering 503): orders paid
//     as it begins trip the circuit, orders paid while it is open are
//     parked; none becomes FAILED, the verdict API answers pending
//     meanwhile, and once the model is back every order is READY with one
//     email, the circuit closed and both transitions alerted;
//   - the circuit one generator process opened is seen open by the other,
//     which parks jobs without calling the model: while the circuit is
//     open only the half-open probes reach the model;
//   - GEMINI_TIMEOUT VC-6: the webhook has answered while the model hangs,
//     and the order still ends READY with one email.
func TestModelOutage(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.Instances = 2 // two generator containers share the circuit
	// One generate batch at a time, so that the accounting below can tell
	// which invocation each model call and log line belongs to.
	o.MaximumConcurrency = map[string]int{"GeneratorFunction": 1}
	o.Env = map[string]map[string]string{"GeneratorFunction": compressed}
	dispatch := watchDispatch(&o)
	gen := watchGenerate(&o)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	logs := o.Log.(*testkit.Buffer)
	q := sqs.NewFromConfig(s.AWS)
	var sessions []string

	t.Run("outage", func(t *testing.T) {
		post(t, s.GeminiURL+"/_control", `{"status":503,"calls":10000}`)
		began := time.Now()
		var orders []order
		// Orders paid as the outage begins meet the 503s themselves and
		// trip the circuit.
		for i, tier := range []string{"quick", "full"} {
			orders = append(orders, buy(t, s, tier, fmt.Sprintf("outage-early-%d", i)))
		}
		waitAlert(t, s, "CIRCUIT_OPEN")
		// Orders paid while it is open are parked (or one of them is let
		// through as a half-open probe).
		for i, tier := range []string{"strategy", "quick"} {
			orders = append(orders, buy(t, s, tier, fmt.Sprintf("outage-open-%d", i)))
		}
		for _, ord := range orders {
			sessions = append(sessions, ord.session)
		}

		// The outage lasts its compressed 10 minutes, and longer if need be
		// until every order has been parked, both processes have parked jobs
		// because the circuit was open (one of them a process that did not
		// trip it) and a half-open probe has failed: what is checked below
		// has then happened, however slow the machine.
		var seen openSeen
		var missing []string
		var probed bool
		if !testkit.Eventually(90*time.Second, 100*time.Millisecond, func() bool {
			lines := generatorLines(logs.String())
			seen, missing = seenOpenByAnother(lines), unparked(lines, orders)
			probed = slices.ContainsFunc(lines, func(l logLine) bool { return l.msg == msgProbeFailed })
			return time.Since(began) >= outageLength && seen.byAnother && len(seen.parkers) >= 2 && len(missing) == 0 && probed
		}) {
			t.Fatalf("after %v of outage: parked by %v (open seen by another process: %v), never parked: %v, a probe failed: %v",
				time.Since(began).Round(time.Second), seen.parkers, seen.byAnother, missing, probed)
		}
		// Parked, not failed: the result page keeps waiting.
		for _, ord := range orders {
			status, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", s.APIURL+"/api/verdict?session_id="+ord.session))
			if status != http.StatusAccepted || !strings.Contains(string(body), `"status":"pending"`) {
				t.Errorf("verdict API during the outage for the %s order: %d %s, want 202 pending", ord.tier, status, body)
			}
		}

		post(t, s.GeminiURL+"/_control", `{}`) // the model is back
		for _, ord := range orders {
			waitReady(t, s.APIURL, ord.session)
		}
		drained(ctx, t, q, s)
		for _, ord := range orders {
			oneVerdictEmail(t, s, ord)
		}
		waitAlert(t, s, "CIRCUIT_CLOSED")
		if n := countAlerts(s, "CIRCUIT_OPEN"); n != 1 {
			t.Errorf("%d CIRCUIT_OPEN alerts, want 1: %q", n, s.Alerts())
		}

		circuitAccounting(t, generatorLines(logs.String()), gen.list(), modelCalls(t, s.GeminiURL))
	})

	t.Run("webhook answers while the model hangs", func(t *testing.T) {
		drained(ctx, t, q, s)
		// Every attempt hangs until the generator gives it up, until the
		// hang is lifted.
		post(t, s.GeminiURL+"/_control", `{"hang":true,"calls":10000}`)
		ord := buy(t, s, "full", "hang")
		sessions = append(sessions, ord.session)

		// Ordering, not timing: a call for the order is seen hanging, then
		// the webhook's 200 and the order still pending, then the same call
		// still hanging; so the webhook had answered while the model hung.
		var before []modelCall
		if !testkit.Eventually(60*time.Second, 20*time.Millisecond, func() bool {
			before = modelCalls(t, s.GeminiURL)
			i := slices.IndexFunc(before, func(c modelCall) bool { return c.Status == 0 && strings.Contains(c.UserText, ord.query) })
			if i < 0 {
				return false
			}
			deliveries := deliveriesFor(t, s.StripeURL, ord.session)
			status, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", s.APIURL+"/api/verdict?session_id="+ord.session))
			if modelCalls(t, s.GeminiURL)[i].Status != 0 {
				return false // that attempt was given up meanwhile; watch the next
			}
			if !slices.Equal(deliveries, []int{http.StatusOK}) {
				t.Errorf("webhook deliveries answered %v while the model hung, want one 200", deliveries)
			}
			if status != http.StatusAccepted || !strings.Contains(string(body), `"status":"pending"`) {
				t.Errorf("verdict API while the model hung: %d %s, want 202 pending", status, body)
			}
			return true
		}) {
			t.Fatalf("no model call for the order seen hanging: %+v", before)
		}

		post(t, s.GeminiURL+"/_control", `{}`)
		waitReady(t, s.APIURL, ord.session)
		drained(ctx, t, q, s)
		oneVerdictEmail(t, s, ord)
		// The hung attempts were abandoned by the generator (no answer
		// recorded) and a later one answered.
		var statuses []int
		for _, c := range modelCalls(t, s.GeminiURL) {
			if strings.Contains(c.UserText, ord.query) {
				statuses = append(statuses, c.Status)
			}
		}
		if n := len(statuses); n < 2 || statuses[n-1] != http.StatusOK || slices.ContainsFunc(statuses[:n-1], func(st int) bool { return st != 0 }) {
			t.Errorf("model calls for the order answered %v, want hung ones (0) then one 200", statuses)
		}
	})

	dispatch.verify(t, s, sessions)
	if n := countAlerts(s, "GENERATION_FAILED"); n != 0 {
		t.Errorf("%d GENERATION_FAILED alerts: %q", n, s.Alerts())
	}
	if strings.Contains(logs.String(), `"generation failed for good"`) {
		t.Error("an order failed for good")
	}
}

// order is one order the test paid for.
type order struct {
	tier, query, addr, session string
}

// buy pays for an order whose query and address are unique to the test
// run, so model calls and emails can be told apart.
func buy(t *testing.T, s *stack.Stack, tier, name string) order {
	t.Helper()
	stamp := time.Now().UnixNano()
	o := order{
		tier:  tier,
		query: fmt.Sprintf("Should I keep my stall open through the %s storm (%d)?", name, stamp),
		addr:  fmt.Sprintf("%s-%d@example.com", name, stamp),
	}
	o.session = pay(t, s, tier, o.query, o.addr)
	return o
}

// oneVerdictEmail checks that the order's address got exactly one email,
// its verdict.
func oneVerdictEmail(t *testing.T, s *stack.Stack, o order) {
	t.Helper()
	mails := mailbox(t, s.APIURL, o.addr)
	if len(mails) != 1 {
		t.Errorf("%s order: %d emails, want 1", o.tier, len(mails))
		return
	}
	if !strings.Contains(mails[0].Text, "VERDICT: ") || !strings.Contains(mails[0].Text, o.query) {
		t.Errorf("%s order: the email is not its verdict:\n%s", o.tier, mails[0].Text)
	}
}

// waitAlert waits for an alert of the kind to reach the alerts topic.
func waitAlert(t *testing.T, s *stack.Stack, kind string) {
	t.Helper()
	if !testkit.Eventually(60*time.Second, 50*time.Millisecond, func() bool { return countAlerts(s, kind) > 0 }) {
		t.Fatalf("no %s alert; alerts: %q", kind, s.Alerts())
	}
}

func countAlerts(s *stack.Stack, kind string) int {
	n := 0
	for _, a := range s.Alerts() {
		if strings.Contains(a, " | "+kind+" | ") {
			n++
		}
	}
	return n
}

// modelCall is one generateContent request the fake Gemini received.
type modelCall struct {
	Time     time.Time `json:"time"`
	UserText string    `json:"user_text"`
	// Status is 0 while the call hangs, and stays 0 when the caller gave up.
	Status int `json:"status"`
}

func modelCalls(t *testing.T, gemini string) []modelCall {
	t.Helper()
	_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", gemini+"/_calls"))
	var calls []modelCall
	if err := json.Unmarshal(body, &calls); err != nil {
		t.Fatalf("/_calls: %v", err)
	}
	return calls
}

// generateWatch records when each generate job was handed to the
// generator. The test caps the generate queue's poller at one batch at a
// time and its batches hold one job, so the invocations follow one
// another: the one that got delivery k ran between it and delivery k+1,
// and every model call and log line of it falls in that window.
type generateWatch struct {
	mu         sync.Mutex
	deliveries []delivery
}

type delivery struct {
	at      time.Time
	session string
}

// watchGenerate installs the watch on the stack's options, after any
// BeforeDelivery already set.
func watchGenerate(o *stack.Options) *generateWatch {
	w := &generateWatch{}
	before := o.BeforeDelivery
	o.BeforeDelivery = func(q string, batch events.SQSEvent) {
		if before != nil {
			before(q, batch)
		}
		if q != "GenerateQueue" {
			return
		}
		d := delivery{at: time.Now()}
		for _, m := range batch.Records {
			if job, err := queue.Parse(m.Body); err == nil {
				d.session += job.SessionID
			}
		}
		w.mu.Lock()
		w.deliveries = append(w.deliveries, d)
		w.mu.Unlock()
	}
	return w
}

func (w *generateWatch) list() []delivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.deliveries)
}

// logLine is one JSON log line of a generator process.
type logLine struct {
	env     string // the execution environment, e.g. "GeneratorFunction#2"
	at      time.Time
	msg     string
	session string // the order, by its whole id
	why     string
}

var generatorLine = regexp.MustCompile(`^\[(GeneratorFunction#\d+)\] (\{.*\})$`)

// generatorLines returns the generator processes' JSON log lines, oldest
// first by their own timestamps (each process's lines reach the stack's log
// through its own pipe, so their order there across processes is not the
// order they were written in).
func generatorLines(logs string) []logLine {
	var out []logLine
	for _, line := range strings.Split(logs, "\n") {
		m := generatorLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var rec struct {
			Time  time.Time `json:"time"`
			Msg   string    `json:"msg"`
			Order string    `json:"order"`
			Why   string    `json:"why"`
		}
		if json.Unmarshal([]byte(m[2]), &rec) != nil || rec.Time.IsZero() {
			continue // a metric line
		}
		out = append(out, logLine{env: m[1], at: rec.Time, msg: rec.Msg, session: rec.Order, why: rec.Why})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// The generator's log messages this test reads (handler.go).
const (
	msgParked      = "job parked"
	whyOpen        = "the circuit is open"
	msgTrip        = "circuit CLOSED -> OPEN (failures)"
	msgProbeFailed = "circuit HALF_OPEN -> OPEN (failures)"
	msgClosed      = "circuit HALF_OPEN -> CLOSED"
)

func parkedOpen(l logLine) bool { return l.msg == msgParked && strings.HasPrefix(l.why, whyOpen) }

// openSeen is what the logs show of the shared circuit so far.
type openSeen struct {
	// parkers are the processes that parked a job because it was open.
	parkers map[string]bool
	// byAnother: a process that never tripped the circuit parked a job
	// because it was open. The circuit trips once (circuitAccounting checks
	// it), so that process read the circuit another one opened: a circuit
	// of its own would have had to trip in it first.
	byAnother bool
}

func seenOpenByAnother(lines []logLine) openSeen {
	seen := openSeen{parkers: map[string]bool{}}
	trippers := map[string]bool{}
	for _, l := range lines {
		if l.msg == msgTrip {
			trippers[l.env] = true
		}
	}
	for _, l := range lines {
		if parkedOpen(l) {
			seen.parkers[l.env] = true
			seen.byAnother = seen.byAnother || (len(trippers) > 0 && !trippers[l.env])
		}
	}
	return seen
}

// unparked lists the orders no generator has logged parking yet.
func unparked(lines []logLine, orders []order) []string {
	var missing []string
	for _, o := range orders {
		if !slices.ContainsFunc(lines, func(l logLine) bool { return l.msg == msgParked && l.session == oracle.ShortID(o.session) }) {
			missing = append(missing, o.tier+" "+oracle.ShortID(o.session))
		}
	}
	return missing
}

// circuitAccounting checks, invocation by invocation, that the open circuit
// kept the model from being called: an invocation that parked a job
// because the circuit was open made no model call, and between the trip
// and the close only the half-open probes (each of which either reopened
// or closed the circuit) called the model, each at most as many times as a
// model call's attempts.
func circuitAccounting(t *testing.T, lines []logLine, deliveries []delivery, calls []modelCall) {
	t.Helper()
	// window returns the invocation that was running at `at`.
	window := func(at time.Time) int {
		return sort.Search(len(deliveries), func(k int) bool { return deliveries[k].at.After(at) }) - 1
	}
	callsIn := make([]int, len(deliveries))
	for _, c := range calls {
		if k := window(c.Time); k >= 0 {
			callsIn[k]++
		}
	}
	byWindow := map[int][]logLine{}
	for _, l := range lines {
		byWindow[window(l.at)] = append(byWindow[window(l.at)], l)
	}
	has := func(k int, msg string) bool {
		return slices.ContainsFunc(byWindow[k], func(l logLine) bool { return l.msg == msg })
	}

	trip, closed := -1, -1
	parks := 0
	for _, l := range lines {
		k := window(l.at)
		switch {
		case l.msg == msgTrip:
			if trip >= 0 {
				t.Errorf("the circuit tripped twice (invocations %d and %d)", trip, k)
			}
			trip = k
		case l.msg == msgClosed && closed < 0:
			closed = k
		case parkedOpen(l):
			parks++
			if k < 0 || oracle.ShortID(deliveries[k].session) != l.session {
				t.Errorf("%s parked %s at %s outside the invocation of its job: generate invocations overlapped", l.env, l.session, l.at.Format(time.RFC3339Nano))
				continue
			}
			if callsIn[k] != 0 {
				t.Errorf("%s parked %s because the circuit was open, yet that invocation made %d model call(s)", l.env, l.session, callsIn[k])
			}
		}
	}
	if trip < 0 || closed < trip {
		t.Fatalf("no trip followed by a close in the generators' logs (invocations %d, %d)", trip, closed)
	}
	if parks == 0 {
		t.Error("no job was parked because the circuit was open")
	}
	probes := 0
	for k := trip + 1; k < closed; k++ {
		switch {
		case has(k, msgProbeFailed):
			probes++
			if callsIn[k] == 0 || callsIn[k] > gemini.MaxAttempts {
				t.Errorf("a failed half-open probe made %d model calls, want 1 to %d", callsIn[k], gemini.MaxAttempts)
			}
		case callsIn[k] != 0:
			t.Errorf("while the circuit was open, the invocation for %s made %d model call(s) without being the half-open probe", oracle.ShortID(deliveries[k].session), callsIn[k])
		}
	}
	if probes == 0 {
		t.Error("no half-open probe failed during the outage")
	}
	if callsIn[closed] == 0 || callsIn[closed] > gemini.MaxAttempts {
		t.Errorf("the probe that closed the circuit made %d model calls, want 1 to %d", callsIn[closed], gemini.MaxAttempts)
	}
}
