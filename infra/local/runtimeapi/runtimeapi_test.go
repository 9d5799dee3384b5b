package runtimeapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/testkit"

	"42sisters.ai/oracle/infra/local/internal/echotest"
	"42sisters.ai/oracle/infra/local/runtimeapi"
	"42sisters.ai/oracle/shared/crashpoint"
)

var echoBin string

func TestMain(m *testing.M) { os.Exit(echotest.Main(m, &echoBin)) }

func start(t *testing.T, cfg runtimeapi.Config) *runtimeapi.Function {
	t.Helper()
	if cfg.Binary == "" {
		cfg.Binary = echoBin
	}
	if cfg.Name == "" {
		cfg.Name = "Echo"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	f, err := runtimeapi.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func invoke(t *testing.T, f *runtimeapi.Function, payload string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return f.Invoke(ctx, []byte(payload))
}

type echoed struct {
	Payload    json.RawMessage   `json:"payload"`
	RequestID  string            `json:"requestId"`
	ARN        string            `json:"arn"`
	DeadlineMs int64             `json:"deadlineMs"`
	TraceID    string            `json:"traceId"`
	Env        map[string]string `json:"env"`
	PID        int               `json:"pid"`
}

func TestInvokeRunsTheBootstrapLikeLambda(t *testing.T) {
	t.Setenv("ORACLE_HOST_ONLY", "leak")
	log := &testkit.Buffer{}
	f := start(t, runtimeapi.Config{
		Timeout:     7 * time.Second,
		MemoryMB:    256,
		Region:      "eu-west-1",
		AWSEndpoint: "http://127.0.0.1:5999",
		Env:         map[string]string{"ORDERS_TABLE": "orders", "AWS_REGION": "overridden-by-lambda"},
		Log:         log,
	})
	before := time.Now()
	out, err := invoke(t, f, `{"do":"echo","n":1}`)
	if err != nil {
		t.Fatal(err)
	}
	var got echoed
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	if string(got.Payload) != `{"do":"echo","n":1}` {
		t.Errorf("payload = %s", got.Payload)
	}
	if len(got.RequestID) != 36 {
		t.Errorf("request id = %q", got.RequestID)
	}
	if got.ARN != "arn:aws:lambda:eu-west-1:123456789012:function:Echo" {
		t.Errorf("arn = %q", got.ARN)
	}
	if !strings.HasPrefix(got.TraceID, "Root=1-") {
		t.Errorf("trace id = %q", got.TraceID)
	}
	deadline := time.UnixMilli(got.DeadlineMs)
	if lo, hi := before.Add(7*time.Second-time.Second), time.Now().Add(7*time.Second); deadline.Before(lo) || deadline.After(hi) {
		t.Errorf("deadline %v not about 7 s after %v", deadline, before)
	}
	want := map[string]string{
		"ORDERS_TABLE":                    "orders",
		"AWS_LAMBDA_FUNCTION_NAME":        "Echo",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"_HANDLER":                        "bootstrap",
		"AWS_REGION":                      "eu-west-1",
		"AWS_DEFAULT_REGION":              "eu-west-1",
		"AWS_ACCESS_KEY_ID":               "test",
		"AWS_SECRET_ACCESS_KEY":           "test",
		"AWS_ENDPOINT_URL":                "http://127.0.0.1:5999",
	}
	for k, v := range want {
		if got.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, got.Env[k], v)
		}
	}
	if !strings.HasPrefix(got.Env["AWS_LAMBDA_RUNTIME_API"], "127.0.0.1:") {
		t.Errorf("AWS_LAMBDA_RUNTIME_API = %q", got.Env["AWS_LAMBDA_RUNTIME_API"])
	}
	if s := got.Env["AWS_LAMBDA_LOG_STREAM_NAME"]; !logStream.MatchString(s) {
		t.Errorf("AWS_LAMBDA_LOG_STREAM_NAME = %q, want Lambda's form", s)
	}
	if _, ok := got.Env["ORACLE_HOST_ONLY"]; ok {
		t.Error("the host environment leaked into the function")
	}
	// Either of the two environments may have served it.
	waitLog(t, log, regexp.MustCompile(`(?m)^\[Echo#[12]\] echo: invoked do="echo"$`))
}

// logStream is the form of Lambda's log stream names.
var logStream = regexp.MustCompile(`^\d{4}/\d{2}/\d{2}/\[\$LATEST\][0-9a-f]{32}$`)

// waitLog waits for a line matching re: the output travels through a pipe,
// so it may land after the response.
func waitLog(t *testing.T, log *testkit.Buffer, re *regexp.Regexp) {
	t.Helper()
	if !testkit.Eventually(10*time.Second, 10*time.Millisecond, func() bool { return re.MatchString(log.String()) }) {
		t.Fatalf("log lacks a line matching %s:\n%s", re, log)
	}
}

// TestEachEnvironmentHasItsOwnLogStream: a replacement process is a new
// execution environment, with the next number in its log prefix and a new
// log stream name, and the runtime's line about the old process carries
// the old one's prefix.
func TestEachEnvironmentHasItsOwnLogStream(t *testing.T) {
	log := &testkit.Buffer{}
	f := start(t, runtimeapi.Config{Instances: 1, Log: log})
	stream := func() string {
		out, err := invoke(t, f, `{"do":"echo"}`)
		if err != nil {
			t.Fatal(err)
		}
		var got echoed
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("response %s: %v", out, err)
		}
		return got.Env["AWS_LAMBDA_LOG_STREAM_NAME"]
	}
	first := stream()
	waitLog(t, log, regexp.MustCompile(`(?m)^\[Echo#1\] echo: invoked do="echo"$`))
	if _, err := invoke(t, f, `{"do":"exit"}`); err == nil {
		t.Fatal("the crash did not fail the invocation")
	}
	second := stream()
	waitLog(t, log, regexp.MustCompile(`(?m)^\[Echo#1\] process exited \(exit status 3\); starting a new one$`))
	waitLog(t, log, regexp.MustCompile(`(?m)^\[Echo#2\] echo: invoked do="echo"$`))
	if !logStream.MatchString(first) || !logStream.MatchString(second) || first == second {
		t.Errorf("log streams %q then %q, want two distinct Lambda stream names", first, second)
	}
	if strings.Contains(log.String(), "[Echo] ") {
		t.Errorf("a line without the environment's number:\n%s", log)
	}
}

func TestFailuresAndRecovery(t *testing.T) {
	tests := []struct {
		name     string
		payload  string
		timeout  time.Duration
		wantType string
		wantMsg  string
		// restarted: the failure replaced the process.
		restarted bool
	}{
		{name: "function error", payload: `{"do":"error"}`, wantType: "errorString", wantMsg: "boom"},
		{name: "timeout kills the process", payload: `{"do":"sleep"}`, timeout: time.Second, wantType: runtimeapi.ErrorTypeTimeout, wantMsg: "Task timed out after 1.00 seconds", restarted: true},
		{name: "crash", payload: `{"do":"exit"}`, wantType: runtimeapi.ErrorTypeExit, wantMsg: "Runtime exited with error: exit status 3", restarted: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, runtimeapi.Config{Instances: 1, Timeout: tc.timeout, Log: &testkit.Buffer{}})
			pid := func() int {
				out, err := invoke(t, f, `{"do":"pid"}`)
				if err != nil {
					t.Fatalf("pid: %v", err)
				}
				var p struct{ PID int }
				if err := json.Unmarshal(out, &p); err != nil {
					t.Fatal(err)
				}
				return p.PID
			}
			before := pid()
			_, err := invoke(t, f, tc.payload)
			var fe *runtimeapi.Error
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a function error", err)
			}
			if fe.Type != tc.wantType || !strings.Contains(fe.Message, tc.wantMsg) {
				t.Errorf("error = %+v, want type %s message containing %q", fe, tc.wantType, tc.wantMsg)
			}
			if after := pid(); (after != before) != tc.restarted {
				t.Errorf("pid %d -> %d, want restarted=%v", before, after, tc.restarted)
			}
		})
	}
}

func TestInitCrashFailsTheWaitingInvocation(t *testing.T) {
	f := start(t, runtimeapi.Config{Binary: "/bin/false", Instances: 1, Log: &testkit.Buffer{}})
	_, err := invoke(t, f, `{}`)
	var fe *runtimeapi.Error
	if !errors.As(err, &fe) || fe.Type != runtimeapi.ErrorTypeExit {
		t.Fatalf("err = %v, want %s", err, runtimeapi.ErrorTypeExit)
	}
}

// barrier is a server that answers no request until n are waiting on it.
func barrier(t *testing.T, n int) *httptest.Server {
	var mu sync.Mutex
	arrived, release := 0, make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if arrived++; arrived == n {
			close(release)
		}
		mu.Unlock()
		select {
		case <-release:
			fmt.Fprint(w, "released")
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestInstancesRunConcurrently(t *testing.T) {
	// The barrier answers only when both invocations are waiting on it, so
	// the test passes only if two processes run at the same time.
	barrier := barrier(t, 2)
	log := &testkit.Buffer{}
	f := start(t, runtimeapi.Config{Instances: 2, Timeout: 20 * time.Second, Log: log})
	payload := fmt.Sprintf(`{"do":"get","url":%q}`, barrier.URL)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			out, err := f.Invoke(context.Background(), []byte(payload))
			if err == nil && string(out) != `"released"` {
				err = fmt.Errorf("response %s", out)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	// Two processes at once: each logged under its own number.
	for _, re := range []string{`(?m)^\[Echo#1\] echo: invoked do="get"$`, `(?m)^\[Echo#2\] echo: invoked do="get"$`} {
		waitLog(t, log, regexp.MustCompile(re))
	}
}

func TestInvokeAfterCloseFails(t *testing.T) {
	f := start(t, runtimeapi.Config{Log: &testkit.Buffer{}})
	f.Close()
	if _, err := invoke(t, f, `{}`); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("err = %v, want closed", err)
	}
}

// TestKillPlanKillsAtTheNamedPoint: a process is told to go on at a crash
// point nobody armed; the armed point kills the next two processes that
// reach it with SIGKILL (each invocation fails as a crash, the environment
// is replaced and the plan's callback hears of it with the invocation),
// then spares the third.
func TestKillPlanKillsAtTheNamedPoint(t *testing.T) {
	log := &testkit.Buffer{}
	var mu sync.Mutex
	var kills []runtimeapi.Kill
	f := start(t, runtimeapi.Config{Instances: 1, Log: log})
	const point = "generator/after-lease"
	reach := func(p string) ([]byte, error) { return invoke(t, f, fmt.Sprintf(`{"do":"crashpoint","point":%q}`, p)) }
	if out, err := reach(point); err != nil || string(out) != `"went on past `+point+`"` {
		t.Fatalf("unarmed: %s %v, want the process to go on", out, err)
	}
	f.KillAt(point, 2, func(k runtimeapi.Kill) {
		mu.Lock()
		kills = append(kills, k)
		mu.Unlock()
	})
	if out, err := reach("mailer/after-send"); err != nil || !strings.Contains(string(out), "went on") {
		t.Fatalf("another point: %s %v, want the process to go on", out, err)
	}
	for i := range 2 {
		out, err := reach(point)
		var fe *runtimeapi.Error
		if !errors.As(err, &fe) || fe.Type != runtimeapi.ErrorTypeExit || !strings.Contains(fe.Message, "signal: killed") {
			t.Fatalf("kill %d: %s %v, want %s with signal: killed", i+1, out, err, runtimeapi.ErrorTypeExit)
		}
	}
	if out, err := reach(point); err != nil || !strings.Contains(string(out), "went on") {
		t.Fatalf("after the plan ran out: %s %v, want the process to go on", out, err)
	}
	if n := f.Killed(point); n != 2 {
		t.Errorf("Killed = %d, want 2", n)
	}
	waitLog(t, log, regexp.MustCompile(`(?m)^\[Echo#1\] killed at crash point generator/after-lease$`))
	waitLog(t, log, regexp.MustCompile(`(?m)^\[Echo#2\] killed at crash point generator/after-lease$`))
	waitLog(t, log, regexp.MustCompile(`(?m)^\[Echo#3\] echo: invoked do="crashpoint"$`))
	mu.Lock()
	defer mu.Unlock()
	if len(kills) != 2 {
		t.Fatalf("the plan heard of %d kills, want 2", len(kills))
	}
	for i, k := range kills {
		if k.Function != "Echo" || k.Environment != fmt.Sprintf("Echo#%d", i+1) || k.Point != point ||
			!strings.Contains(string(k.Payload), `"point":"`+point+`"`) || k.At.IsZero() {
			t.Errorf("kill %d = %+v", i+1, k)
		}
	}
}

// Every process is told where to announce its crash points, whatever its
// function's own environment says.
func TestCrashPointsAreAnnouncedByEveryProcess(t *testing.T) {
	f := start(t, runtimeapi.Config{Instances: 1, Log: &testkit.Buffer{}, Env: map[string]string{crashpoint.Variable: "off"}})
	out, err := invoke(t, f, `{"do":"echo"}`)
	if err != nil {
		t.Fatal(err)
	}
	var got echoed
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if v := got.Env[crashpoint.Variable]; v != "on" {
		t.Errorf("%s = %q, want on", crashpoint.Variable, v)
	}
}

// TestAnExtensionFinishesBeforeTheNextInvocation: an internal extension
// registered at init is sent each invocation's INVOKE, with its request
// id, and the environment starts no other invocation until the extension
// has asked for its next event, though the answer went back at once.
// TestCloseLetsAnExtensionFinish: closing a function (the stack's
// shutdown, the end of a make invoke) waits for an extension still at
// work on the invocation it has answered (its 300 ms), as Lambda shuts
// no environment down before its extensions are done with an invocation.
func TestCloseLetsAnExtensionFinish(t *testing.T) {
	log := &testkit.Buffer{}
	f := start(t, runtimeapi.Config{Env: map[string]string{"ECHO_EXTENSION": "1"}, Instances: 1, Log: log})
	out, err := invoke(t, f, `{"do":"extension"}`)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		RequestID string `json:"requestId"`
	}
	if err := json.Unmarshal(out, &got); err != nil || got.RequestID == "" {
		t.Fatalf("%s: %v", out, err)
	}
	f.Close()
	if want := "echo: extension done with INVOKE " + got.RequestID; !strings.Contains(log.String(), want) {
		t.Fatalf("the process was stopped before its extension finished: no %q in\n%s", want, log)
	}
}

func TestAnExtensionFinishesBeforeTheNextInvocation(t *testing.T) {
	// One environment, so that each invocation follows the one before in it.
	f := start(t, runtimeapi.Config{Env: map[string]string{"ECHO_EXTENSION": "1"}, Instances: 1})
	var ids []string
	for i := range 3 {
		out, err := invoke(t, f, `{"do":"extension"}`)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			RequestID string   `json:"requestId"`
			Done      []string `json:"done"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		want := make([]string, 0, i)
		for _, id := range ids {
			want = append(want, "INVOKE "+id)
		}
		if strings.Join(got.Done, ",") != strings.Join(want, ",") {
			t.Fatalf("invocation %d found the extension done with %q, want %q: each invocation before it, whole", i+1, got.Done, want)
		}
		ids = append(ids, got.RequestID)
	}
}
