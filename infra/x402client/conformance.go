package x402client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// package.json) runs its server scenarios with `conformance server --url
// <url> [--scenario <name>] [--suite active|all|pending] [-o <dir>]`: each
// scenario connects with the official TypeScript MCP client and records
// checks, each SUCCESS, FAILURE, WARNING, SKIPPED or INFO; with -o it writes
// a scenario's checks to <dir>/server-<scenario>-<timestamp>/checks.json.
// It exits 1 when any check failed (a scenario that throws is one FAILURE),
// else 0; `conformance list` names the scenarios. Its exit status cannot say
// which scenarios apply to a server, so Conformance reads the checks and
// judges each scenario by Scenarios below.

// Scenarios is every server scenario of the pinned suite (0.1.13, `--suite
// all`), and whether it applies to the agent rail's MCP server: stateless
// Streamable HTTP with JSON answers, tools only (no resources, prompts,
// completions, sampling or elicitation; logging as the Go SDK offers it by
// default), on localhost under make run. A scenario that calls a tool of the suite's own (test_simple_text,
// json_schema_2020_12_tool, ...) or needs a capability the server does not
// offer does not apply: a server passes it only by serving the suite's test
// fixtures.
var Scenarios = []ScenarioRule{
	{"server-initialize", true, "initialize: serverInfo, protocol version and capabilities the official client accepts"},
	{"ping", true, "ping answers {} (a basic utility every server must answer)"},
	{"tools-list", true, "tools/list: every tool has a name, a description and an inputSchema"},
	{"dns-rebinding-protection", true, "a request whose Host and Origin are not localhost's is refused with 4xx, a localhost one accepted (the stack is a localhost server)"},
	{"logging-set-level", true, "logging/setLevel answers {}: the Go SDK's server advertises logging unless told otherwise, and answers it"},
	{"completion-complete", false, "completion/complete on the suite's prompt test_prompt_with_arguments: no prompts, no completions"},
	{"tools-call-simple-text", false, "calls the suite's tool test_simple_text"},
	{"tools-call-image", false, "calls the suite's tool test_image_content"},
	{"tools-call-audio", false, "calls the suite's tool test_audio_content"},
	{"tools-call-embedded-resource", false, "calls the suite's tool test_embedded_resource"},
	{"tools-call-mixed-content", false, "calls the suite's tool test_multiple_content_types"},
	{"tools-call-with-logging", false, "calls the suite's tool test_tool_with_logging (and needs logging)"},
	{"tools-call-error", false, "calls the suite's tool test_error_handling"},
	{"tools-call-with-progress", false, "calls the suite's tool test_tool_with_progress (progress notifications over SSE)"},
	{"tools-call-sampling", false, "calls the suite's tool test_sampling: a server-to-client request, which a stateless server cannot make"},
	{"tools-call-elicitation", false, "calls the suite's tool test_elicitation: a server-to-client request, which a stateless server cannot make"},
	{"json-schema-2020-12", false, "lists the suite's tool json_schema_2020_12_tool (pending in the suite)"},
	{"elicitation-sep1034-defaults", false, "calls the suite's elicitation tool: no elicitation"},
	{"elicitation-sep1330-enums", false, "calls the suite's elicitation tool: no elicitation"},
	{"server-sse-polling", false, "SSE polling with sessions and event ids: a stateless server answering JSON has no SSE stream (pending in the suite)"},
	{"server-sse-multiple-streams", false, "several SSE streams of one session: a stateless server has no sessions or SSE streams"},
	{"resources-list", false, "no resources"},
	{"resources-read-text", false, "no resources"},
	{"resources-read-binary", false, "no resources"},
	{"resources-templates-read", false, "no resources"},
	{"resources-subscribe", false, "no resources"},
	{"resources-unsubscribe", false, "no resources"},
	{"prompts-list", false, "no prompts"},
	{"prompts-get-simple", false, "no prompts"},
	{"prompts-get-with-args", false, "no prompts"},
	{"prompts-get-embedded-resource", false, "no prompts"},
	{"prompts-get-with-image", false, "no prompts"},
}

// ScenarioRule says whether a conformance scenario applies, and why.
type ScenarioRule struct {
	Name    string
	Applies bool
	Why     string
}

// ConformanceCheck is one check of a scenario, as checks.json has it.
type ConformanceCheck struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	Details      json.RawMessage `json:"details,omitempty"`
}

// ScenarioResult is one scenario's run.
type ScenarioResult struct {
	ScenarioRule
	// Passed: its checks include a SUCCESS and no FAILURE.
	Passed bool
	Checks []ConformanceCheck
}

// ConformanceReport is one run of the suite.
type ConformanceReport struct {
	Scenarios []ScenarioResult
	// Output is what the suite printed, for a failure's message.
	Output string
}

// Err is nil when every scenario that applies passed, else one error naming
// each that did not, with its failed checks.
func (r ConformanceReport) Err() error {
	var failed []string
	for _, s := range r.Scenarios {
		if !s.Applies || s.Passed {
			continue
		}
		var why []string
		for _, c := range s.Checks {
			if c.Status == "FAILURE" {
				why = append(why, c.ID+": "+c.ErrorMessage)
			}
		}
		if len(why) == 0 {
			why = []string{"no check succeeded"}
		}
		failed = append(failed, fmt.Sprintf("%s (%s)", s.Name, strings.Join(why, "; ")))
	}
	if len(failed) == 0 {
		return nil
	}
	return errors.New("x402client: MCP conformance: " + strings.Join(failed, ", "))
}

// Conformance runs every server scenario of the MCP conformance suite
// against the MCP endpoint at url (e.g. http://localhost:3000/mcp) and
// returns each one's checks, judged by Scenarios. An error means the suite
// did not run, or ran a scenario Scenarios does not know (a new version of
// the suite, to be judged before it is trusted).
func (c *Client) Conformance(ctx context.Context, url string) (ConformanceReport, error) {
	dir, err := os.MkdirTemp("", "conformance-")
	if err != nil {
		return ConformanceReport{}, fmt.Errorf("x402client: conformance: %w", err)
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, c.node, filepath.Join(Dir(), "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"server", "--url", url, "--suite", "all", "-o", dir)
	cmd.Dir = Dir()
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	// Exit status 1 is a failed check, which the checks say; anything else
	// is the suite failing to run.
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return ConformanceReport{}, fmt.Errorf("x402client: conformance %s: %w: %s", url, err, out.String())
	}
	report := ConformanceReport{Output: out.String()}
	ran, err := readChecks(dir)
	if err != nil {
		return ConformanceReport{}, fmt.Errorf("x402client: conformance %s: %w", url, err)
	}
	for name := range ran {
		if !slices.ContainsFunc(Scenarios, func(r ScenarioRule) bool { return r.Name == name }) {
			return ConformanceReport{}, fmt.Errorf("x402client: conformance %s: scenario %s is not in Scenarios: judge whether it applies", url, name)
		}
	}
	for _, rule := range Scenarios {
		checks, ok := ran[rule.Name]
		if !ok {
			// The suite writes no checks for a scenario that threw; it
			// printed why.
			checks = []ConformanceCheck{{ID: rule.Name, Status: "FAILURE", ErrorMessage: "the scenario wrote no checks (see Output)"}}
		}
		report.Scenarios = append(report.Scenarios, ScenarioResult{ScenarioRule: rule, Passed: passed(checks), Checks: checks})
	}
	return report, nil
}

// readChecks reads every <dir>/server-<scenario>-<timestamp>/checks.json.
func readChecks(dir string) (map[string][]ConformanceCheck, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	ran := map[string][]ConformanceCheck{}
	for _, e := range entries {
		name, ok := scenarioOf(e.Name())
		if !ok {
			return nil, fmt.Errorf("unexpected result %s", e.Name())
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, err
		}
		var checks []ConformanceCheck
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		ran[name] = checks
	}
	return ran, nil
}

// resultDir is a result directory's name: server-<scenario>-<ISO timestamp
// with - for : and .>, e.g. server-tools-list-2026-12-02T03-40-00-123Z.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// scenarioOf is the scenario of a result directory's name.
func scenarioOf(dirName string) (string, bool) {
	m := resultDir.FindStringSubmatch(dirName)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func passed(checks []ConformanceCheck) bool {
	succeeded := false
	for _, c := range checks {
		switch c.Status {
		case "FAILURE":
			return false
		case "SUCCESS":
			succeeded = true
		}
	}
	return succeeded
}
