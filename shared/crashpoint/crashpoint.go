// Package crashpoint names the step boundaries of the functions where a
// crash changes what happens next, so that the local stack can kill a
// function's process exactly there and show that every order still ends
// with one verdict and one email (the crash-injection tests in
// infra/local/stack).
//
// A function calls Reach at each boundary. In Lambda it does nothing: one
// nil check, no allocation. Under the local Runtime API (infra/local/runtimeapi),
// which adds Variable to the environment of every process it starts as
// Lambda adds its reserved variables, Reach tells the Runtime API which
// point the process reached and waits for its answer: go on, or a SIGKILL.
package crashpoint

import (
	"context"
	"net/http"
	"os"
	"time"
)

// Variable is set ("on") by the local Runtime API in the environment of
// the processes it starts; Lambda never sets it and no template names it.
const Variable = "ORACLE_LOCAL_CRASHPOINTS"

// Path is where the local Runtime API hears of a point reached: a POST to
// Path followed by the point's name, on the process's own Runtime API
// endpoint (AWS_LAMBDA_RUNTIME_API).
const Path = "/_local/crashpoint/"

// Point is a named step boundary.
type Point string

// The points, in the order a paid order passes them.
const (
	// GeneratorLeased: the generation lease is taken; the model not asked.
	GeneratorLeased Point = "generator/after-lease"
	// GeneratorReplied: the model has answered; nothing is filtered or stored.
	GeneratorReplied Point = "generator/after-model-reply"
	// GeneratorFiltered: gate 1 has decided; the verdict is not stored.
	GeneratorFiltered Point = "generator/after-filter"
	// GeneratorStored: the verdict is stored; its email is not queued.
	GeneratorStored Point = "generator/after-store"
	// MailerClaimed: the attempt of the email is claimed; nothing is sent.
	MailerClaimed Point = "mailer/after-claim"
	// MailerSent: the transport accepted the email; the delivery is not
	// recorded. The one point where a crash sends the email twice.
	MailerSent Point = "mailer/after-send"
	// MailerRecorded: the send is recorded in its delivery; its audit
	// records (gate 2's, the attempt's, the email's) are not written.
	MailerRecorded Point = "mailer/after-record"
	// GeneratorHandedOver: the stored verdict's email is queued; its audit
	// records, the records its generation carried, the circuit's report
	// and the first verdict's keeping, begun beside the store or the
	// hand-off, may not be done. A redelivery does them.
	GeneratorHandedOver Point = "generator/after-handoff"
)

// Points lists every point: those of the functions' first steps in the
// order a paid order passes them, then those added since.
func Points() []Point {
	return []Point{GeneratorLeased, GeneratorReplied, GeneratorFiltered, GeneratorStored, MailerClaimed, MailerSent,
		MailerRecorded, GeneratorHandedOver}
}

// local announces points to the local Runtime API; nil in Lambda. It is
// read once, at cold start.
var local = fromEnv(os.Getenv)

// Reach announces that the process reached p: in Lambda it returns at
// once; under the local Runtime API it returns when told to go on, or the
// process is killed before it returns.
func Reach(ctx context.Context, p Point) {
	if local == nil {
		return
	}
	local.reach(ctx, p)
}

// announcer tells one local Runtime API endpoint of the points reached.
type announcer struct {
	url    string // the endpoint's crash point path
	client *http.Client
}

// fromEnv returns the announcer the environment asks for, or nil.
func fromEnv(getenv func(string) string) *announcer {
	api := getenv("AWS_LAMBDA_RUNTIME_API")
	if getenv(Variable) != "on" || api == "" {
		return nil
	}
	// The Runtime API answers at once or kills the process; the timeout
	// only keeps a wedged local runtime from holding the function forever.
	return &announcer{url: "http://" + api + Path, client: &http.Client{Timeout: 30 * time.Second}}
}

// reach posts the point and waits for the answer. A failure to ask changes
// nothing: the function goes on as it would in Lambda.
func (a *announcer) reach(ctx context.Context, p Point) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url+string(p), nil)
	if err != nil {
		return
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return
	}
	_ = resp.Body.Close()
}
