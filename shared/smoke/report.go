// Package smoke is the end-to-end smoke test of the deployed pipeline:
// thirteen stages from the environment to the cleanup, each with its own
// deadline, a card payment's path in Stripe test mode, an agent's over
// x402 on Base Sepolia and one exchange of Sisters Chat's trial, run by
// the scheduled smoke function and by `make smoke` alike, and the report
// they print.
package smoke

import (
	"fmt"
	"strings"
	"time"
)

// Query is the smoke test's fixed query: meta on purpose, so a smoke
// verdict is known for one wherever it shows.
const Query = "Is the Oracle pipeline operational? This is an automated smoke test."

// Stages are the thirteen stages, in order.
var Stages = [...]string{
	"Environment check",
	"Stores",
	"Email transport",
	"Test checkout session",
	"Webhook",
	"Verdict stored",
	"Verdict API",
	"Verdict email",
	"Crosscheck and filter",
	"Agent payment (x402)",
	"Agent verdict (x402)",
	"Sisters Chat",
	"Cleanup",
}

// Outcome is how a stage ended.
type Outcome string

// Outcomes.
const (
	Pass Outcome = "PASS"
	Fail Outcome = "FAIL"
	// Skip: a stage that needs what a failed stage before it should have
	// made (the session, the verdict) does not run.
	Skip Outcome = "SKIP"
)

// Result is one stage's outcome, its figure (session=..., verdict=...) and,
// when it failed, why.
type Result struct {
	Stage    int // 1 to 13
	Outcome  Outcome
	Figure   string
	Err      string
	Duration time.Duration
}

// Report is a whole run.
type Report struct {
	Started  time.Time
	Results  []Result
	Duration time.Duration
	// Session is the smoke session's id, once the checkout made one.
	Session string
}

// Passed counts the stages that passed.
func (r Report) Passed() int {
	n := 0
	for _, s := range r.Results {
		if s.Outcome == Pass {
			n++
		}
	}
	return n
}

// OK reports every stage passed.
func (r Report) OK() bool { return r.Passed() == len(Stages) }

// EnvironmentFailed reports the first stage failed, so nothing else ran.
func (r Report) EnvironmentFailed() bool {
	return len(r.Results) > 0 && r.Results[0].Outcome == Fail
}

// ExitCode is `make smoke`'s: 0 all passed, 1 a stage failed, 2 the
// environment check failed.
func (r Report) ExitCode() int {
	switch {
	case r.EnvironmentFailed():
		return 2
	case r.OK():
		return 0
	}
	return 1
}

// FirstFailure is the first stage that failed, if any.
func (r Report) FirstFailure() (Result, bool) {
	for _, s := range r.Results {
		if s.Outcome == Fail {
			return s, true
		}
	}
	return Result{}, false
}

// String is the report as the spec lays it out: a title, a line per stage
// with dots to the outcome and its figure, the error under a failed stage,
// the result and the duration.
func (r Report) String() string {
	var b strings.Builder
	title := "ORACLE SMOKE TEST — " + r.Started.UTC().Format(time.RFC3339)
	b.WriteString(title + "\n")
	b.WriteString(strings.Repeat("=", 42) + "\n\n")
	for _, s := range r.Results {
		label := fmt.Sprintf("[STAGE %d] %s ", s.Stage, Stages[s.Stage-1])
		line := label + strings.Repeat(".", max(3, 51-len(label))) + " " + string(s.Outcome)
		if s.Figure != "" {
			line += "  " + s.Figure
		}
		b.WriteString(line + "\n")
		if s.Err != "" {
			b.WriteString("  Error: " + s.Err + "\n")
		}
	}
	b.WriteString("\n" + r.Summary() + "\n")
	fmt.Fprintf(&b, "Duration: %.1fs\n", r.Duration.Seconds())
	return b.String()
}

// Summary is the RESULT line.
func (r Report) Summary() string {
	if r.OK() {
		return fmt.Sprintf("RESULT: %d/%d PASS — Pipeline operational.", r.Passed(), len(Stages))
	}
	return fmt.Sprintf("RESULT: %d/%d PASS — Pipeline DEGRADED.", r.Passed(), len(Stages))
}

// Headline is the one-line notice of the run for the alerts topic, as the
// spec's [SMOKE] broadcast: the score, the duration and, on failure, the
// first failing stage and why.
func (r Report) Headline() string {
	if f, ok := r.FirstFailure(); ok {
		return fmt.Sprintf("[SMOKE] Oracle pipeline: %d/%d FAIL — Stage %d (%s): %s (%.1fs)",
			r.Passed(), len(Stages), f.Stage, Stages[f.Stage-1], f.Err, r.Duration.Seconds())
	}
	return fmt.Sprintf("[SMOKE] Oracle pipeline: %d/%d PASS (%.1fs)", r.Passed(), len(Stages), r.Duration.Seconds())
}
