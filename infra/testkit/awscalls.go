package testkit

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// AWSCalls is an AWS configuration's HTTP client that notes every request
// made through it, by its operation (GetItem, PutObject, SendEmail…), in
// the order the requests were made and answered, so that a test counts
// the calls a function made and which of them it waited for one after
// another. No clock is read: what overlapped is what was in flight at
// once. Hold shows that two calls are made together, whatever their
// speed.
type AWSCalls struct {
	base aws.HTTPClient
	// HoldLimit bounds a hold that is never released (the calls were made
	// one after the other): the call is answered then, and Held says so.
	HoldLimit time.Duration

	mu       sync.Mutex
	calls    []*call
	inFlight int
	holds    []*hold
	vain     []string
}

// call is one request: its operation and whether another was in flight
// when it began. A retry is the SDK's own attempt again of a request
// (amz-sdk-request: attempt=2 or more): moto answering a shared test run
// slowly or with a throttle is no call of the code's, so Ops and Steps
// leave retries out.
type call struct {
	op     string
	joined bool
	retry  bool
}

// retryAttempt reports whether req is the SDK's second or later attempt of
// a request, as its amz-sdk-request header says ("attempt=2; max=3").
func retryAttempt(req *http.Request) bool {
	attempt, _, _ := strings.Cut(req.Header.Get("Amz-Sdk-Request"), ";")
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(attempt), "attempt="))
	return err == nil && n > 1
}

// hold keeps the answer of the next call of op until a call of until has
// begun.
type hold struct {
	op, until string
	armed     bool // a call of op is waiting
	released  chan struct{}
}

// NoteAWSCalls makes cfg's clients note their requests.
func NoteAWSCalls(cfg *aws.Config) *AWSCalls {
	base := cfg.HTTPClient
	if base == nil {
		base = awshttp.NewBuildableClient()
	}
	c := &AWSCalls{base: base, HoldLimit: 10 * time.Second}
	cfg.HTTPClient = c
	return c
}

// Hold keeps the answer of the next call of op until a call of until
// begins: a caller that makes the two together goes on at once, one that
// waits for op's answer before asking until is held for HoldLimit.
func (c *AWSCalls) Hold(op, until string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holds = append(c.holds, &hold{op: op, until: until, released: make(chan struct{})})
}

// Do notes the request, makes it and, when a hold is on its operation,
// keeps its answer until the hold is released.
func (c *AWSCalls) Do(req *http.Request) (*http.Response, error) {
	op := awsmiddleware.GetOperationName(req.Context())
	c.mu.Lock()
	c.calls = append(c.calls, &call{op: op, joined: c.inFlight > 0, retry: retryAttempt(req)})
	c.inFlight++
	var held *hold
	for _, h := range c.holds {
		if h.until == op && !isClosed(h.released) {
			close(h.released)
		}
	}
	for _, h := range c.holds {
		if h.op == op && !h.armed && !isClosed(h.released) {
			h.armed, held = true, h
			break
		}
	}
	c.mu.Unlock()
	resp, err := c.base.Do(req)
	if held != nil {
		select {
		case <-held.released:
		case <-time.After(c.HoldLimit):
			c.mu.Lock()
			c.vain = append(c.vain, held.op+" until "+held.until)
			close(held.released)
			c.mu.Unlock()
		}
	}
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
	return resp, err
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Held returns the holds that were never released by their call: each
// names two calls made one after the other.
func (c *AWSCalls) Held() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.vain)
}

// Reset forgets the calls noted so far.
func (c *AWSCalls) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.vain = nil, nil
}

// Ops returns every operation called, in the order they began; the SDK's
// retries of a request are not calls of their own.
func (c *AWSCalls) Ops() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.calls))
	for _, k := range c.calls {
		if !k.retry {
			out = append(out, k.op)
		}
	}
	return out
}

// Retries returns the operations the SDK tried again, once per retry.
func (c *AWSCalls) Retries() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, k := range c.calls {
		if k.retry {
			out = append(out, k.op)
		}
	}
	return out
}

// Steps groups the calls as their caller waited for them: a call begins
// a new step when no other was in flight as it began, and joins the step
// in flight otherwise. Each step's operations are sorted.
func (c *AWSCalls) Steps() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var steps [][]string
	for _, k := range c.calls {
		if k.retry {
			continue
		}
		if !k.joined || len(steps) == 0 {
			steps = append(steps, nil)
		}
		steps[len(steps)-1] = append(steps[len(steps)-1], k.op)
	}
	for _, s := range steps {
		slices.Sort(s)
	}
	return steps
}

// StepsThrough is Steps up to and including the first step holding a
// call of op (all of them when none does), and how many there are: the
// round trips waited for before op's answer.
func (c *AWSCalls) StepsThrough(op string) [][]string {
	steps := c.Steps()
	for i, s := range steps {
		if slices.Contains(s, op) {
			return steps[:i+1]
		}
	}
	return steps
}

// FormatSteps writes steps as "A+B → C → D", for messages and reports.
func FormatSteps(steps [][]string) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = strings.Join(s, "+")
	}
	return strings.Join(parts, " → ")
}
