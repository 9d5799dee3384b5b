// Package runtimeapi runs a Lambda function's real bootstrap binary behind a
// local implementation of the AWS Lambda Runtime API, with Lambda's
// semantics: a pool of execution environments (one process each) that take
// invocations one at a time, a deadline per invocation after which the
// environment is killed and replaced, and a replacement for every process
// that exits.
//
// Each execution environment has its own log stream, as in Lambda: its
// lines are prefixed with the function name and the environment's number,
// e.g. "[WebhookFunction#3] ", numbered from 1 in the order the processes
// start (a replacement gets the next number), and the process gets its own
// AWS_LAMBDA_LOG_STREAM_NAME. Logs thus show which container did what.
package runtimeapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"42sisters.ai/oracle/shared/crashpoint"
)

// Error types Lambda reports for failures outside the function's own code.
const (
	// ErrorTypeTimeout is an invocation that ran past its deadline.
	ErrorTypeTimeout = "Sandbox.Timedout"
	// ErrorTypeExit is an invocation whose process exited before answering.
	ErrorTypeExit = "Runtime.ExitError"
)

// account is moto's default account id, the one provision uses in ARNs.
const account = "123456789012"

// restartPause spaces out restarts of a process that dies before asking for
// work, so a bootstrap that cannot start does not spin.
const restartPause = time.Second

// Config describes one function.
type Config struct {
	// Name is the function name, e.g. its logical id "WebhookFunction".
	Name string
	// Binary is the path of the bootstrap executable.
	Binary string
	// Env is the function's own environment; the Runtime API variables are
	// added to it (and win, as Lambda's reserved variables do).
	Env map[string]string
	// Timeout bounds each invocation; 0 means Lambda's default of 3 s.
	Timeout time.Duration
	// MemoryMB is reported to the function; 0 means 128.
	MemoryMB int
	// Instances is the number of execution environments, so concurrent
	// invocations run concurrently as with Lambda's scale-out; 0 means 2.
	Instances int
	// Region is the function's AWS region; empty means us-east-1.
	Region string
	// AWSEndpoint becomes AWS_ENDPOINT_URL (moto server) when set.
	AWSEndpoint string
	// Log receives the processes' output, each line prefixed with the
	// function name and the number of the execution environment that wrote
	// it, e.g. "[WebhookFunction#2] "; the local runtime's lines about an
	// environment carry its prefix too. nil means os.Stderr.
	Log io.Writer
}

// Error is a failed invocation as Lambda reports it.
type Error struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
}

// Error returns the type and the message.
func (e *Error) Error() string { return e.Type + ": " + e.Message }

// Function is a running function: its execution environments and the queue
// of invocations they take work from.
type Function struct {
	cfg    Config
	arn    string
	out    *output
	envs   atomic.Int64 // execution environments started so far
	queue  chan *invocation
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// stats counts invocations for Stats; envsAtReset is envs at the last
	// ResetStats.
	stats       stats
	envsAtReset atomic.Int64

	// kills is the kill plan: processes to kill at crash points.
	kills killPlan

	// afterAnswers counts the invocations answered whose environment's
	// extension is still at work on them (the traces' export); afterDone
	// signals each one's end. Close lets them finish.
	afterAnswers atomic.Int64
	afterDone    chan struct{}
}

// Start starts cfg.Instances processes of the function's bootstrap. They
// initialise in the background; invocations wait for one to be free.
func Start(cfg Config) (*Function, error) {
	if cfg.Name == "" || cfg.Binary == "" {
		return nil, fmt.Errorf("runtimeapi: a function needs a name and a binary")
	}
	if _, err := os.Stat(cfg.Binary); err != nil {
		return nil, fmt.Errorf("runtimeapi: %s: %w", cfg.Name, err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.MemoryMB <= 0 {
		cfg.MemoryMB = 128
	}
	if cfg.Instances <= 0 {
		cfg.Instances = 2
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Function{
		cfg:       cfg,
		arn:       fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", cfg.Region, account, cfg.Name),
		out:       &output{w: cfg.Log},
		queue:     make(chan *invocation),
		ctx:       ctx,
		cancel:    cancel,
		afterDone: make(chan struct{}, 1),
	}
	for range cfg.Instances {
		f.wg.Add(1)
		go f.supervise()
	}
	return f, nil
}

// Invoke runs one invocation synchronously (RequestResponse) and returns
// the function's response. A function error, a timeout or a crash is an
// *Error. Cancelling ctx abandons the wait, not the invocation, as with
// Lambda.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	inv := &invocation{id: uuid.NewString(), payload: payload, done: make(chan result, 1)}
	select {
	case f.queue <- inv:
	case <-f.ctx.Done():
		return nil, fmt.Errorf("invoke %s: function is closed", f.cfg.Name)
	case <-ctx.Done():
		return nil, fmt.Errorf("invoke %s: %w", f.cfg.Name, ctx.Err())
	}
	select {
	case r := <-inv.done:
		return r.body, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("invoke %s: %w", f.cfg.Name, ctx.Err())
	}
}

// Close kills the processes and waits for them; invocations in flight fail.
// As in Lambda, an environment is not shut down while its extension is at
// work on an invocation already answered (its spans' export, say): Close
// waits for that, for at most ShutdownGrace, first.
func (f *Function) Close() {
	grace := time.NewTimer(ShutdownGrace)
	defer grace.Stop()
wait:
	for f.afterAnswers.Load() > 0 {
		select {
		case <-f.afterDone:
		case <-grace.C:
			break wait
		}
	}
	f.cancel()
	f.wg.Wait()
}

// ShutdownGrace is how long Close waits for extensions to finish their
// work after an answer: Lambda gives extensions 2 s at shutdown.
const ShutdownGrace = 2 * time.Second

// supervise keeps one execution environment running until Close.
func (f *Function) supervise() {
	defer f.wg.Done()
	for f.ctx.Err() == nil {
		e, err := f.start()
		if err != nil {
			f.out.logf("["+f.cfg.Name+"] ", "cannot start: %v", err)
			f.failWaiting(&Error{Type: "Runtime.InvalidEntrypoint", Message: err.Error()})
		} else if e.run() {
			continue
		}
		select {
		case <-time.After(restartPause):
		case <-f.ctx.Done():
		}
	}
}

// failWaiting fails one invocation waiting for an environment, if any: the
// one whose cold start failed, as Lambda fails the invocation that
// triggered a failed init.
func (f *Function) failWaiting(err error) {
	select {
	case inv := <-f.queue:
		inv.finish(nil, err)
	default:
	}
}

// start launches a process with its own Runtime API endpoint and log stream.
func (f *Function) start() (*environment, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the runtime API: %w", err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	e := &environment{f: f, ctx: ctx, cancel: cancel,
		prefix:   fmt.Sprintf("[%s#%d] ", f.cfg.Name, f.envs.Add(1)),
		extReady: make(chan struct{}, 1), extEvent: make(chan []byte, 1)}
	cmd := exec.CommandContext(f.ctx, f.cfg.Binary)
	cmd.Dir = filepath.Dir(f.cfg.Binary)
	cmd.Env = f.environ(ln.Addr().String(), newLogStream(time.Now()))
	e.stdout, e.stderr = f.out.writer(e.prefix), f.out.writer(e.prefix)
	cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
	// Own process group: a Ctrl-C in the terminal reaches the stack, which
	// shuts the functions down in order, not the functions directly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		cancel()
		ln.Close()
		return nil, fmt.Errorf("start %s: %w", f.cfg.Binary, err)
	}
	e.cmd = cmd
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", e.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", e.response)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", e.invocationError)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", e.initError)
	mux.HandleFunc("POST /2020-01-01/extension/register", e.registerExtension)
	mux.HandleFunc("GET /2020-01-01/extension/event/next", e.extensionNext)
	mux.HandleFunc("POST "+crashpoint.Path+"{point...}", e.crashpoint)
	// The server starts after the process so that everything the handlers
	// read (e.cmd) is set before any of them runs; the process's first
	// request waits in the listen backlog meanwhile.
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go e.srv.Serve(ln)
	return e, nil
}

// environ is the process environment: the function's variables and the ones
// Lambda sets, and nothing inherited from this process.
func (f *Function) environ(runtimeAPI, logStream string) []string {
	vars := map[string]string{
		"PATH":                      "/usr/local/bin:/usr/bin:/bin",
		"LANG":                      "en_US.UTF-8",
		"TZ":                        ":UTC",
		"LAMBDA_TASK_ROOT":          filepath.Dir(f.cfg.Binary),
		"AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/" + f.cfg.Name,
	}
	for k, v := range f.cfg.Env {
		vars[k] = v
	}
	for k, v := range map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          runtimeAPI,
		"AWS_LAMBDA_FUNCTION_NAME":        f.cfg.Name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(f.cfg.MemoryMB),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_LOG_STREAM_NAME":      logStream,
		"_HANDLER":                        "bootstrap",
		"AWS_REGION":                      f.cfg.Region,
		"AWS_DEFAULT_REGION":              f.cfg.Region,
		"AWS_ACCESS_KEY_ID":               "test",
		"AWS_SECRET_ACCESS_KEY":           "test",
		// Every process announces its crash points here, as a Lambda
		// runtime knows its reserved variables: never from the template.
		crashpoint.Variable: "on",
	} {
		vars[k] = v
	}
	if f.cfg.AWSEndpoint != "" {
		vars["AWS_ENDPOINT_URL"] = f.cfg.AWSEndpoint
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// environment is one execution environment: a process and the Runtime API
// endpoint only it talks to, so every request is known to come from it.
type environment struct {
	f      *Function
	prefix string          // of its log lines: "[Name#N] "
	ctx    context.Context // ends when the process has exited
	cancel context.CancelFunc
	cmd    *exec.Cmd
	srv    *http.Server
	stdout *lineWriter
	stderr *lineWriter

	mu      sync.Mutex
	current *invocation // in flight
	timer   *time.Timer // the current invocation's deadline
	asked   bool        // the runtime has asked for work: init is over
	initErr *Error
	exited  bool
	// afterAnswer: the invocation answered last is still its extension's
	// (Function.afterAnswers counts it).
	afterAnswer bool

	// An internal extension registered in the process (one at most, as
	// the service's functions register one: shared/tracing's).
	extID    string
	extReady chan struct{} // the extension asked for its next event: it is done
	extEvent chan []byte   // the INVOKE it is sent when an invocation starts
}

// run waits for the process to exit, fails its invocation in flight and
// reports whether it had finished initialising.
func (e *environment) run() bool {
	waitErr := e.cmd.Wait()
	e.stdout.flush()
	e.stderr.flush()
	e.mu.Lock()
	e.exited = true
	inv := e.take("")
	asked, initErr := e.asked, e.initErr
	e.mu.Unlock()
	e.endAfterAnswer()
	e.cancel()
	e.srv.Close()
	if e.f.ctx.Err() != nil {
		waitErr = fmt.Errorf("function closed")
	}
	var reason *Error
	if initErr != nil {
		reason = initErr
	} else {
		reason = &Error{Type: ErrorTypeExit, Message: "Runtime exited with error: " + waitErr.Error()}
	}
	if inv != nil {
		inv.finish(nil, &Error{Type: reason.Type, Message: "RequestId: " + inv.id + " Error: " + reason.Message})
	}
	if e.f.ctx.Err() == nil {
		e.f.out.logf(e.prefix, "process exited (%v); starting a new one", waitErr)
	}
	if !asked {
		e.f.failWaiting(reason)
	}
	return asked
}

// take ends the current invocation if id names it ("" for any) and returns
// it; e.mu must be held.
func (e *environment) take(id string) *invocation {
	inv := e.current
	if inv == nil || (id != "" && inv.id != id) {
		return nil
	}
	e.current = nil
	e.timer.Stop()
	return inv
}

func (e *environment) next(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.asked = true
	// Asking for more work ends the previous invocation; one the runtime
	// never answered fails rather than waiting for its deadline.
	unanswered := e.take("")
	e.mu.Unlock()
	if unanswered != nil {
		unanswered.finish(nil, &Error{Type: "Runtime.InvalidResponse", Message: "the runtime asked for the next invocation without answering " + unanswered.id})
	}
	done := e.extensionDone(r.Context())
	e.endAfterAnswer()
	if !done {
		return
	}
	var inv *invocation
	select {
	case inv = <-e.f.queue:
	case <-r.Context().Done():
		return
	case <-e.ctx.Done():
		return
	}
	e.f.stats.begin(inv)
	timeout := e.f.cfg.Timeout
	deadline := time.Now().Add(timeout)
	e.mu.Lock()
	if e.exited {
		e.mu.Unlock()
		inv.finish(nil, &Error{Type: ErrorTypeExit, Message: "RequestId: " + inv.id + " Error: Runtime exited"})
		return
	}
	e.current = inv
	e.timer = time.AfterFunc(timeout, func() { e.expire(inv) })
	e.mu.Unlock()
	e.invokeExtension(inv, deadline)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", e.f.arn)
	h.Set("Lambda-Runtime-Trace-Id", newTraceID())
	w.WriteHeader(http.StatusOK)
	// A failed write means the process died; run fails the invocation.
	_, _ = w.Write(inv.payload)
}

// registerExtension registers an internal extension, as Lambda's
// Extensions API does, during the init phase only: once the runtime has
// asked for work it is too late.
func (e *environment) registerExtension(w http.ResponseWriter, r *http.Request) {
	name := r.Header.Get("Lambda-Extension-Name")
	e.mu.Lock()
	asked, registered := e.asked, e.extID != ""
	if !asked && !registered && name != "" {
		e.extID = uuid.NewString()
	}
	id := e.extID
	e.mu.Unlock()
	switch {
	case name == "":
		writeStatus(w, http.StatusBadRequest, "InvalidRequest", "no Lambda-Extension-Name")
		return
	case asked:
		writeStatus(w, http.StatusForbidden, "Extension.InvalidState", "extensions register during the init phase")
		return
	case registered:
		writeStatus(w, http.StatusForbidden, "Extension.AlreadyRegistered", "this environment has its extension")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Lambda-Extension-Identifier", id)
	_ = json.NewEncoder(w).Encode(map[string]string{"functionName": e.f.cfg.Name, "functionVersion": "$LATEST", "handler": "bootstrap"})
}

// extensionNext is the extension's request for its next event: it says
// the extension is done with the invocation before (or with its init),
// and waits for the next invocation to start.
func (e *environment) extensionNext(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	known := e.extID != "" && r.Header.Get("Lambda-Extension-Identifier") == e.extID
	e.mu.Unlock()
	if !known {
		writeStatus(w, http.StatusForbidden, "Extension.UnknownExtensionIdentifier", "no extension with this identifier")
		return
	}
	select {
	case e.extReady <- struct{}{}:
	default:
	}
	select {
	case ev := <-e.extEvent:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(ev)
	case <-r.Context().Done():
	case <-e.ctx.Done():
	}
}

// extensionDone waits, when an extension is registered, until it has
// asked for its next event: as in Lambda, no invocation starts in an
// environment whose extension is still at work on the one before. An
// extension that never asks again holds the environment for one timeout,
// then its process is killed, as Lambda ends an invocation that outran
// its timeout.
func (e *environment) extensionDone(ctx context.Context) bool {
	e.mu.Lock()
	registered := e.extID != ""
	e.mu.Unlock()
	if !registered {
		return true
	}
	limit := time.NewTimer(e.f.cfg.Timeout)
	defer limit.Stop()
	select {
	case <-e.extReady:
		return true
	case <-limit.C:
		e.f.out.logf(e.prefix, "the extension did not finish within %s; killing the process", e.f.cfg.Timeout)
		_ = e.cmd.Process.Kill()
		return false
	case <-ctx.Done():
		return false
	case <-e.ctx.Done():
		return false
	}
}

// invokeExtension sends the extension, if any, the invocation's INVOKE.
func (e *environment) invokeExtension(inv *invocation, deadline time.Time) {
	e.mu.Lock()
	registered := e.extID != ""
	e.mu.Unlock()
	if !registered {
		return
	}
	ev, _ := json.Marshal(map[string]any{"eventType": "INVOKE", "deadlineMs": deadline.UnixMilli(), "requestId": inv.id, "invokedFunctionArn": e.f.arn})
	select {
	case e.extEvent <- ev:
	default:
	}
}

// expire fails an invocation that reached its deadline and kills its
// process, as Lambda does: the environment may be in any state.
func (e *environment) expire(inv *invocation) {
	e.mu.Lock()
	if e.current != inv {
		e.mu.Unlock()
		return
	}
	e.current = nil
	e.mu.Unlock()
	msg := fmt.Sprintf("Task timed out after %.2f seconds", e.f.cfg.Timeout.Seconds())
	e.f.out.logf(e.prefix, "%s %s", inv.id, msg)
	inv.finish(nil, &Error{Type: ErrorTypeTimeout, Message: msg})
	_ = e.cmd.Process.Kill()
}

func (e *environment) response(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "InvalidResponse", err.Error())
		return
	}
	inv := e.finished(r.PathValue("id"))
	if inv == nil {
		writeStatus(w, http.StatusBadRequest, "InvalidRequestID", "no invocation in flight with this id")
		return
	}
	// aws-lambda-go streams the response and, when producing it fails
	// midway, reports the error in trailers instead.
	if t := r.Trailer.Get("Lambda-Runtime-Function-Error-Type"); t != "" {
		b, _ := base64.StdEncoding.DecodeString(r.Trailer.Get("Lambda-Runtime-Function-Error-Body"))
		inv.finish(nil, parseError(b, t))
	} else {
		inv.finish(body, nil)
	}
	writeStatus(w, http.StatusAccepted, "", "")
}

func (e *environment) invocationError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	inv := e.finished(r.PathValue("id"))
	if inv == nil {
		writeStatus(w, http.StatusBadRequest, "InvalidRequestID", "no invocation in flight with this id")
		return
	}
	inv.finish(nil, parseError(body, r.Header.Get("Lambda-Runtime-Function-Error-Type")))
	writeStatus(w, http.StatusAccepted, "", "")
}

func (e *environment) initError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ierr := parseError(body, r.Header.Get("Lambda-Runtime-Function-Error-Type"))
	e.f.out.logf(e.prefix, "init error: %v", ierr)
	e.mu.Lock()
	e.initErr = ierr
	e.mu.Unlock()
	writeStatus(w, http.StatusAccepted, "", "")
}

// finished ends the invocation id names, answered; with an extension, the
// extension's work on it begins (until the runtime's next request finds
// the extension done).
func (e *environment) finished(id string) *invocation {
	e.mu.Lock()
	defer e.mu.Unlock()
	inv := e.take(id)
	if inv != nil && e.extID != "" && !e.afterAnswer {
		e.afterAnswer = true
		e.f.afterAnswers.Add(1)
	}
	return inv
}

// endAfterAnswer ends the extension's work on the invocation answered
// last, if it was counted.
func (e *environment) endAfterAnswer() {
	e.mu.Lock()
	was := e.afterAnswer
	e.afterAnswer = false
	e.mu.Unlock()
	if was {
		e.f.afterAnswers.Add(-1)
		select {
		case e.f.afterDone <- struct{}{}:
		default:
		}
	}
}

// parseError reads the runtime's error document; one that is not JSON is
// kept as the message.
func parseError(body []byte, typ string) *Error {
	var fe Error
	if err := json.Unmarshal(body, &fe); err != nil || (fe.Type == "" && fe.Message == "") {
		fe = Error{Message: string(body)}
	}
	if fe.Type == "" {
		fe.Type = typ
	}
	if fe.Type == "" {
		fe.Type = "Unhandled"
	}
	return &fe
}

// writeStatus answers the runtime as Lambda does: {"status":"OK"} or an
// error document.
func writeStatus(w http.ResponseWriter, code int, errType, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if errType == "" {
		_, _ = io.WriteString(w, `{"status":"OK"}`)
		return
	}
	_ = json.NewEncoder(w).Encode(Error{Type: errType, Message: msg})
}

type result struct {
	body []byte
	err  error
}

type invocation struct {
	id      string
	payload []byte
	done    chan result // buffered: finishing never blocks
	once    sync.Once
	// stats counts the invocation from began, when an environment took it
	// (nil if none did).
	stats *stats
	began time.Time
}

func (inv *invocation) finish(body []byte, err error) {
	inv.once.Do(func() {
		if inv.stats != nil {
			inv.stats.end(inv.began, err != nil)
		}
		inv.done <- result{body: body, err: err}
	})
}

// newLogStream returns a log stream name of the form Lambda gives each
// execution environment: its start date, the version and a random id, e.g.
// "2026/11/21/[$LATEST]0123456789abcdef0123456789abcdef".
func newLogStream(now time.Time) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return now.UTC().Format("2006/01/02") + "/[$LATEST]" + hex.EncodeToString(b)
}

// newTraceID returns an X-Ray trace header, which the SDKs propagate.
func newTraceID() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), hex.EncodeToString(b[:12]), hex.EncodeToString(b[12:]))
}
