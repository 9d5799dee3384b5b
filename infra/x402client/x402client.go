// Package x402client runs the official x402 and MCP TypeScript clients (the
// scripts beside it, on @x402/fetch, @x402/evm, @x402/extensions,
// @modelcontextprotocol/sdk and viem at the versions package-lock.json pins,
// which `make tools` installs with npm ci) against an endpoint, and decodes
// what they printed: pay.mjs pays over HTTP, validate.mjs checks a 402 with
// the official packages, mcp.mjs buys a tool over MCP, and Conformance runs
// the MCP conformance suite. It is how the tests use the agent rail as an
// unmodified third-party client would, so that our reading of the protocols
// is checked against someone else's.
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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/tools"
)

// KeyEnv is where pay.mjs reads the payer's private key (0x and 64 hex
// digits); without it the script pays from a fresh random key.
const KeyEnv = "X402_PRIVATE_KEY"

// Answer is one HTTP answer as pay.mjs read it. The x402 headers come
// decoded, as JSON (shared/x402's types read them).
type Answer struct {
	Status int `json:"status"`
	// Body is the answer's body: its JSON, or a JSON string of its text.
	Body json.RawMessage `json:"body"`
	// PaymentResponse is the PAYMENT-RESPONSE header decoded, if sent;
	// {"undecodable": header, "error": why} when the client could not.
	PaymentResponse json.RawMessage `json:"paymentResponse,omitempty"`
	// PaymentRequired is the PAYMENT-REQUIRED header decoded, if sent.
	PaymentRequired json.RawMessage `json:"paymentRequired,omitempty"`
	Location        string          `json:"location,omitempty"`
	RetryAfter      string          `json:"retryAfter,omitempty"`
}

// Result is what one run of pay.mjs reports: the answer the client got last.
type Result struct {
	Answer
	// PaymentSignature is the PAYMENT-SIGNATURE header the client sent (or,
	// with Options.Replay, the one replayed); empty when it sent none.
	PaymentSignature string `json:"paymentSignature"`
	// PaymentSignatures lists every header the client signed, when it signed
	// more than one (a client recovering from a refused payment).
	PaymentSignatures []string `json:"paymentSignatures,omitempty"`
	// Payer is the paying address (from the replayed header with Replay).
	Payer string `json:"payer"`
	// PaymentID is the payment-identifier id in PaymentSignature's payload,
	// empty when it carries none.
	PaymentID string `json:"paymentId"`
	// Answers holds every answer to the signed request with Options.Twice or
	// Options.Retries, in the order sent, the client's first.
	Answers []Answer `json:"answers,omitempty"`
}

// Options are pay.mjs's options.
type Options struct {
	// Key is the payer's private key; empty: a fresh random one (KeyEnv in
	// this process's environment is not passed on).
	Key string
	// Replay sends this PAYMENT-SIGNATURE header again as is, without the
	// client.
	Replay string
	// Twice sends the client's signed request (or Replay's) twice at once.
	Twice bool
	// Network restricts the client to one network (CAIP-2).
	Network string
	// PaymentID makes the client add the payment-identifier extension with
	// this id to a payment whose 402 declares it.
	PaymentID string
	// Retries sends the very same signed request (or Replay's) this many
	// more times after the first answer, one after another: an agent
	// retrying after a lost answer.
	Retries int
	// Concurrent sends the Retries all at once.
	Concurrent bool
}

// Client runs the scripts with node.
type Client struct {
	node string
}

// Dir is this package's directory: pay.mjs, package.json and the lock file.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// New finds node and the installed client. Without node the test is skipped,
// unless tools.RequireEnv is set (make test sets it), when it fails; node
// without the client installed as the lock file pins it always fails, since
// `make tools` is the fix.
func New(tb testing.TB) *Client {
	tb.Helper()
	node := tools.Find(tb, "node")
	if err := CheckInstalled(Dir()); err != nil {
		tb.Fatalf("%v: run make tools (npm ci in infra/x402client)", err)
	}
	return &Client{node: node}
}

// CheckInstalled says whether node_modules under dir holds every package of
// dir's package-lock.json at its locked version.
func CheckInstalled(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return fmt.Errorf("x402client: %w", err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		return fmt.Errorf("x402client: package-lock.json: %w", err)
	}
	var stale []string
	for path, p := range lock.Packages {
		if !strings.HasPrefix(path, "node_modules/") {
			continue // the project itself
		}
		var installed struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path), "package.json"))
		if err == nil {
			err = json.Unmarshal(b, &installed)
		}
		if err != nil || installed.Version != p.Version {
			stale = append(stale, strings.TrimPrefix(path, "node_modules/")+"@"+p.Version)
		}
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		return fmt.Errorf("x402client: not installed as locked: %s", strings.Join(stale, ", "))
	}
	return nil
}

// Pay runs pay.mjs against url, POSTing body when it is not empty, and
// returns what it reported. Any HTTP status is a Result; an error means no
// answer came (or the script failed), with what the script said.
func (c *Client) Pay(ctx context.Context, url, body string, o Options) (Result, error) {
	var args []string
	if o.Twice {
		args = append(args, "--twice")
	}
	if o.Replay != "" {
		args = append(args, "--replay", o.Replay)
	}
	if o.Network != "" {
		args = append(args, "--network", o.Network)
	}
	if o.PaymentID != "" {
		args = append(args, "--payment-id", o.PaymentID)
	}
	if o.Retries > 0 {
		args = append(args, "--retries", strconv.Itoa(o.Retries))
	}
	if o.Concurrent {
		args = append(args, "--concurrent")
	}
	args = append(args, "--", url)
	if body != "" {
		args = append(args, body)
	}
	var r Result
	if err := c.run(ctx, "pay.mjs", args, nil, o.Key, &r); err != nil {
		return Result{}, fmt.Errorf("x402client: pay %s: %w", url, err)
	}
	if r.Status == 0 {
		return Result{}, errors.New("x402client: pay " + url + ": the report names no status")
	}
	return r, nil
}

// run runs script (a file of this package's directory) with args, stdin and
// the payer's key, and decodes the one JSON object it prints into out.
func (c *Client) run(ctx context.Context, script string, args []string, stdin []byte, key string, out any) error {
	cmd := exec.CommandContext(ctx, c.node, append([]string{filepath.Join(Dir(), script)}, args...)...)
	cmd.Dir = Dir()
	cmd.Env = environ(key)
	cmd.WaitDelay = 5 * time.Second
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", script, err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return fmt.Errorf("%s: reading its report: %w", script, err)
	}
	return nil
}

// environ is this process's environment with the payer's key set to key, or
// removed when key is empty, so that a fresh key is really fresh.
func environ(key string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, KeyEnv+"=") {
			env = append(env, kv)
		}
	}
	if key != "" {
		env = append(env, KeyEnv+"="+key)
	}
	return env
}
