package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/smoke"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/x402"
)

// TestSmokeTestOnTheLocalStack runs the smoke test as `make smoke LOCAL=1`
// runs it, the command against the description `make run` writes, and as
// its schedule fires the smoke function, on one stack:
//
//   - with a live Stripe key the command exits 2 at the environment check
//     and creates nothing: no Stripe session, no order;
//   - on a healthy stack it prints 13/13 PASS, exits 0 and raises one INFO
//     SMOKE_PASSED, having paid the agent rail on Base Sepolia with the
//     stack's smoke wallet through the fake facilitator, over HTTP and as
//     the MCP tool, once each (the HTTP payment's retry under its
//     identifier paying nothing), and had one
//     exchange of Sisters Chat's trial as the smoke address (its sign-in
//     email in the mailbox's smoke list), and afterwards the orders and
//     chat tables, the customers' mailbox and the audit log's counts
//     (every record flagged smoke) show nothing of it;
//   - the scheduled function passes the same way, with a verdict slower
//     than the agent function's wait polled for at the 202's Location
//     and with oracle_result;
//   - with the smoke address's sign-in links used up for the hour, the
//     chat stage alone fails, named in the one CRITICAL alert;
//   - with the fake Gemini answering 503 the command names the failing
//     stage, exits 1 and raises exactly one CRITICAL alert.
func TestSmokeTestOnTheLocalStack(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.ScheduleOff = true
	// A verdict slower than this is answered 202 and polled for.
	o.Env = map[string]map[string]string{"AgentFunction": {"X402_WAIT": "2s"}}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	described := filepath.Join(t.TempDir(), "stack-local.json")
	if err := s.Deployment().Write(described); err != nil {
		t.Fatal(err)
	}
	cli := buildSmokeCommand(t)
	smokeRun := func(t *testing.T, env []string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, cli, append([]string{"-local", described}, args...)...)
		cmd.Env = append(withoutSecrets(os.Environ()), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("run the smoke command: %v", err)
		}
		t.Logf("smoke command (exit %d):\n%s%s", cmd.ProcessState.ExitCode(), stdout.String(), stderr.String())
		if id := wholeSessionID.FindString(stdout.String() + stderr.String()); id != "" {
			t.Errorf("the command printed a whole session id %q", id)
		}
		return stdout.String(), cmd.ProcessState.ExitCode()
	}

	t.Run("a live key exits 2 and creates nothing", func(t *testing.T) {
		sessions, orders := stripeSessions(t, s), orderCount(t, s)
		out, code := smokeRun(t, []string{"STRIPE_SECRET_KEY=sk_live_" + strings.Repeat("x", 24)})
		if code != 2 || !strings.Contains(out, smoke.ErrLiveKey.Error()) || !strings.Contains(out, "RESULT: 0/13") {
			t.Fatalf("exit %d, output:\n%s\nwant exit 2 and the FATAL line", code, out)
		}
		if got := stripeSessions(t, s); got != sessions {
			t.Errorf("Stripe has %d sessions, had %d: the run created one", got, sessions)
		}
		if got := orderCount(t, s); got != orders {
			t.Errorf("the Orders table has %d items, had %d", got, orders)
		}
	})

	t.Run("make smoke LOCAL=1 passes 13 of 13", func(t *testing.T) {
		before := len(s.Alerts())
		out, code := smokeRun(t, nil)
		if code != 0 || !strings.Contains(out, "RESULT: 13/13 PASS") {
			t.Fatalf("exit %d, output:\n%s", code, out)
		}
		if n := len(regexp.MustCompile(`(?m)^\[STAGE \d+\] .* PASS`).FindAllString(out, -1)); n != 13 {
			t.Errorf("%d stage lines say PASS, want 13:\n%s", n, out)
		}
		// One exchange of the trial, as the smoke address, and nothing of
		// it left: no account, no message, no subscription.
		if !regexp.MustCompile(`\[STAGE 12\] Sisters Chat \.+ PASS  signin_email=sent exchanges_left=3→2 subscription=none forgotten=2\n`).MatchString(out) ||
			!regexp.MustCompile(`\[STAGE 13\] Cleanup \.+ PASS  .*chat account removed\n`).MatchString(out) {
			t.Errorf("the chat stage did not have its exchange and clean it away:\n%s", out)
		}
		if left := chatItems(t, s); len(left) != 0 {
			t.Errorf("the chat table holds the smoke account's items after the run: %q", left)
		}
		if got := customerMail(t, s.APIURL, true); !strings.Contains(got, "/chat/signin?token=") {
			t.Errorf("the smoke list of the mailbox has no sign-in email:\n%s", got)
		}
		// The agent stages paid, as agents do, from the smoke wallet: over
		// HTTP and as the MCP tool, each once; the HTTP payment sent again
		// under its identifier was answered from its order, paying nothing.
		if !regexp.MustCompile(`\[STAGE 10\] Agent payment \(x402\) \.+ PASS  answer=20[02] order=x402_test_\w{16} tx=0x[0-9a-f]{64} mcp: answer=(ready|pending) order=x402_test_\w{16} tx=0x[0-9a-f]{64}\n`).MatchString(out) ||
			!regexp.MustCompile(`\[STAGE 11\] Agent verdict \(x402\) \.+ PASS  verdict=\w+ record=x402/OK records=\d+ retry=200,same_order,paid_once mcp: verdict=\w+ record=x402/OK records=\d+\n`).MatchString(out) {
			t.Errorf("the agent stages did not pay over HTTP and MCP and get both verdicts:\n%s", out)
		}
		if settled := smokeSettlements(t, s); settled != 2 {
			t.Errorf("the fake facilitator settled %d payments from the smoke wallet, want 2 (HTTP and MCP)", settled)
		}
		session := regexp.MustCompile(`session_id=(cs_test_\w+)`).FindStringSubmatch(out)
		if session == nil {
			t.Fatalf("no session in the report:\n%s", out)
		}
		waitForAlert(t, s, alert.SmokePassed, before)
		if got := since(alertsOf(s, alert.SmokePassed), s, before); len(got) != 1 || !strings.Contains(got[0], "[ORACLE-ALERT] INFO") || !strings.Contains(got[0], "13/13 PASS") {
			t.Errorf("SMOKE_PASSED alerts %q, want one INFO", got)
		}
		// The report shows the session by its name (oracle.ShortID) only:
		// find the order, if any were left, by that prefix.
		if left := ordersWithPrefix(t, s, session[1]); len(left) != 0 {
			t.Errorf("smoke orders left in the Orders table: %v", left)
		}
		if got := customerMail(t, s.APIURL, false); strings.Contains(got, stripex.SmokeEmail) || strings.Contains(got, smoke.Query) {
			t.Errorf("the customers' mailbox shows the smoke email:\n%s", got)
		}
		if got := customerMail(t, s.APIURL, true); !strings.Contains(got, stripex.SmokeEmail) {
			t.Errorf("the smoke email is not in the mailbox's smoke list:\n%s", got)
		}
		if left := ordersWithPrefix(t, s, "x402_"); len(left) != 0 {
			t.Errorf("agent orders left in the Orders table: %d", len(left))
		}
	})

	t.Run("the scheduled function passes and leaves only smoke records", func(t *testing.T) {
		// Every model answer takes 3 s: the agent's verdict comes after
		// the agent function's 2 s wait, at the poll address.
		post(t, s.GeminiURL+"/_control", `{"latency_ms":3000,"calls":10}`)
		t.Cleanup(func() { post(t, s.GeminiURL+"/_control", `{}`) })
		before := len(s.Alerts())
		raw, err := s.Fire(ctx, "SmokeFunction")
		if err != nil {
			t.Fatalf("smoke run: %v (%s)", err, raw)
		}
		var rep smoke.Report
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatalf("report %s: %v", raw, err)
		}
		if !rep.OK() || rep.ExitCode() != 0 {
			t.Fatalf("report:\n%s", rep)
		}
		if fig := rep.Results[9].Figure; !strings.HasPrefix(fig, "answer=202 ") || !strings.Contains(fig, " mcp: answer=pending ") {
			t.Errorf("stage 10 says %q, want the paid request answered 202 and the paid tool pending (the verdicts polled for)", fig)
		}
		waitForAlert(t, s, alert.SmokePassed, before)
		if n := len(since(alertsOf(s, alert.SmokeFailed), s, before)); n != 0 {
			t.Errorf("%d SMOKE_FAILED alerts", n)
		}
		if item := orderItem(t, s, rep.Session); item != nil {
			t.Errorf("the smoke order is still there: %v", item)
		}
		// What stays is the audit trail, every record flagged so that no
		// count or revenue figure takes it for a customer's.
		// (AuditRecords also fails on any record holding an address.)
		if left := ordersWithPrefix(t, s, "x402_"); len(left) != 0 {
			t.Errorf("agent orders left in the Orders table: %d", len(left))
		}
		var records []audit.Record
		agent := 0
		for _, r := range testkit.AuditRecords(t, awsenv.S3(s.AWS), s.Resources.Ref("AuditBucket")) {
			// The stack's agent orders are the smoke test's alone.
			if r.SessionID == rep.Session || oracle.IsAgentOrder(r.SessionID) {
				records = append(records, r)
			}
			if oracle.IsAgentOrder(r.SessionID) && r.Source == audit.SourceX402 && r.Status == audit.StatusOK {
				agent++
			}
		}
		// The stack's chat exchanges and chat emails are the smoke test's
		// alone.
		exchanges, signIns := 0, 0
		for _, r := range testkit.AuditRecords(t, awsenv.S3(s.AWS), s.Resources.Ref("AuditBucket")) {
			if r.Source == audit.SourceChat {
				records = append(records, r)
				exchanges++
			}
			if r.Source == audit.SourceEmailService && (r.Event == audit.MailEvent(oracle.MailChatSignIn) ||
				(r.Mail != nil && r.Mail.Kind == oracle.MailChatSignIn) || (r.Filter != nil && r.Filter.MailKind == oracle.MailChatSignIn)) {
				records = append(records, r) // the sign-in emails
				signIns++
			}
		}
		if len(records) == 0 || agent < 4 || exchanges < 2 || signIns < 2 {
			t.Fatalf("the runs left %d audit records, %d of them x402 payments, %d chat exchanges and %d of sign-in emails; want those of both runs", len(records), agent, exchanges, signIns)
		}
		if left := chatItems(t, s); len(left) != 0 {
			t.Errorf("the chat table holds the smoke account's items after the run: %q", left)
		}
		for _, r := range records {
			if !r.Smoke || r.Livemode {
				t.Errorf("audit record %s/%s smoke=%v livemode=%v, want smoke and test mode", r.Source, r.Status, r.Smoke, r.Livemode)
			}
		}
	})

	t.Run("the chat stage failing alone is named in the one critical", func(t *testing.T) {
		// The smoke address asks for as many sign-in links as an account
		// may in an hour: the run's request is answered 202 and no email
		// goes, as when a flood of requests used the links up.
		for range 5 {
			req := mustRequest(t, "POST", s.APIURL+"/api/chat/signin")
			req.Body = io.NopCloser(strings.NewReader(`{"email":"` + stripex.SmokeEmail + `"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", s.Deployment().Parameters["BaseUrl"])
			if status, body, _ := send(t, http.DefaultClient, req); status != http.StatusAccepted {
				t.Fatalf("POST /api/chat/signin: %d %s", status, body)
			}
		}
		before := len(s.Alerts())
		out, code := smokeRun(t, nil, "-stage-timeout", "10s")
		if code != 1 || !strings.Contains(out, "RESULT: 12/13") ||
			!regexp.MustCompile(`\[STAGE 12\] Sisters Chat \.+ FAIL\n  Error: the sign-in email is not recorded sent \(the mail queue and the mailer; or the account's 5 sign-in requests an hour are used\): not within the stage's 10s\n`).MatchString(out) {
			t.Fatalf("exit %d, output:\n%s\nwant exit 1 with stage 12 alone failing", code, out)
		}
		waitForAlert(t, s, alert.SmokeFailed, before)
		var critical []string
		for _, a := range since(s.Alerts(), s, before) {
			if strings.HasPrefix(a, "[ORACLE-ALERT] CRITICAL ") {
				critical = append(critical, a)
			}
		}
		if len(critical) != 1 || !strings.Contains(critical[0], "12/13 FAIL — Stage 12 (Sisters Chat): the sign-in email is not recorded sent") {
			t.Errorf("CRITICAL alerts %q, want one SMOKE_FAILED naming stage 12 and why", critical)
		}
		if left := chatItems(t, s); len(left) != 0 {
			t.Errorf("the chat table holds the smoke account's items after the run: %q", left)
		}
	})

	t.Run("gemini answering 503 fails a named stage and raises one critical", func(t *testing.T) {
		post(t, s.GeminiURL+"/_control", `{"status":503,"calls":10000}`)
		t.Cleanup(func() { post(t, s.GeminiURL+"/_control", `{}`) })
		before := len(s.Alerts())
		out, code := smokeRun(t, nil, "-stage-timeout", "10s")
		// The agent pays (stage 10) and waits in vain for its verdict (11);
		// the chat gets no reply (12, or no sign-in link after the subtest
		// above used them up).
		if code != 1 || !regexp.MustCompile(`\[STAGE 6\] Verdict stored \.+ FAIL`).MatchString(out) || !strings.Contains(out, "RESULT: 7/13") ||
			!regexp.MustCompile(`\[STAGE 11\] Agent verdict \(x402\) \.+ FAIL`).MatchString(out) ||
			!regexp.MustCompile(`\[STAGE 12\] Sisters Chat \.+ FAIL`).MatchString(out) {
			t.Fatalf("exit %d, output:\n%s\nwant exit 1 with stage 6 failing", code, out)
		}
		// Why, without the noise of the read the deadline cut short.
		if !strings.Contains(out, "not READY: not within the stage's 10s") || strings.Contains(out, "context deadline") {
			t.Errorf("stage 6 does not say plainly why it failed:\n%s", out)
		}
		waitForAlert(t, s, alert.SmokeFailed, before)
		var critical []string
		for _, a := range since(s.Alerts(), s, before) {
			if strings.HasPrefix(a, "[ORACLE-ALERT] CRITICAL ") {
				critical = append(critical, a)
			}
		}
		for _, a := range since(s.Alerts(), s, before) {
			if id := wholeSessionID.FindString(a); id != "" {
				t.Errorf("alert %q shows a whole session id", a)
			}
		}
		if len(critical) != 1 || !strings.Contains(critical[0], " | "+string(alert.SmokeFailed)+" | ") || !strings.Contains(critical[0], "Stage 6") {
			t.Errorf("CRITICAL alerts %q, want one SMOKE_FAILED naming stage 6", critical)
		}
	})
}

// wholeSessionID matches a session id, or an agent order's, longer than
// the name (oracle.ShortID) a report, a log line or an alert may show.
var wholeSessionID = regexp.MustCompile(`(cs|x402)_(test|live)_[A-Za-z0-9]{17,}`)

// chatItems lists the chat table's account and message items (pk and
// sk): on this stack only the smoke test's account signs in.
func chatItems(t *testing.T, s *stack.Stack) []string {
	t.Helper()
	out, err := dynamodb.NewFromConfig(s.AWS).Scan(context.Background(), &dynamodb.ScanInput{
		TableName: aws.String(s.Resources.Ref("ChatTable")), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, item := range out.Items {
		if pk := stringAttr(item, "pk"); strings.HasPrefix(pk, "acct#") {
			items = append(items, pk+" "+stringAttr(item, "sk"))
		}
	}
	return items
}

// buildSmokeCommand builds `make smoke`'s command once per package run.
func buildSmokeCommand(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(buildDir, "smoke-command")
	cmd := exec.Command("go", "build", "-o", bin, "./infra/smoke")
	cmd.Dir = filepath.Dir(provision.TemplatePath())
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build ./infra/smoke: %v\n%s", err, out)
	}
	return bin
}

// withoutSecrets drops the Stripe settings and the x402 smoke wallet a
// developer's shell may carry, so the command reads the stack's.
func withoutSecrets(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "STRIPE_") && !strings.HasPrefix(kv, "X402_") {
			out = append(out, kv)
		}
	}
	return out
}

// smokeSettlements counts the fake facilitator's settlements paid from
// the stack's smoke wallet.
func smokeSettlements(t *testing.T, s *stack.Stack) int {
	t.Helper()
	status, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", s.FacilitatorURL+"/_calls"))
	var calls []struct {
		Path    string `json:"path"`
		From    string `json:"from"`
		Outcome string `json:"outcome"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &calls) != nil {
		t.Fatalf("GET /_calls: %d %s", status, body)
	}
	n := 0
	for _, c := range calls {
		if c.Path == "/settle" && x402.SameAddress(c.From, s.SmokePayer) && c.Outcome == "settled" {
			n++
		}
	}
	return n
}

// since keeps the alerts published after the first n of the stack's
// (alerts are listed oldest first; of is a subset of them).
func since(of []string, s *stack.Stack, n int) []string {
	old := map[string]bool{}
	for _, a := range s.Alerts()[:n] {
		old[a] = true
	}
	var out []string
	for _, a := range of {
		if !old[a] {
			out = append(out, a)
		}
	}
	return out
}

// waitForAlert waits for an alert of kind published after the first n:
// alerts reach the test through SNS and a queue.
func waitForAlert(t *testing.T, s *stack.Stack, kind alert.Kind, n int) {
	t.Helper()
	if !testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool { return len(since(alertsOf(s, kind), s, n)) > 0 }) {
		t.Fatalf("no %s alert; alerts: %q", kind, s.Alerts())
	}
}

// stripeSessions counts the fake Stripe's Checkout Sessions.
func stripeSessions(t *testing.T, s *stack.Stack) int {
	t.Helper()
	req := mustRequest(t, "GET", s.StripeURL+"/v1/checkout/sessions?limit=100")
	req.Header.Set("Authorization", "Bearer "+stack.FakeStripeKey)
	status, body, _ := send(t, http.DefaultClient, req)
	var list struct {
		Data    []json.RawMessage `json:"data"`
		HasMore bool              `json:"has_more"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &list) != nil || list.HasMore {
		t.Fatalf("list sessions: %d %s", status, body)
	}
	return len(list.Data)
}

// orderCount counts the Orders table's items.
func orderCount(t *testing.T, s *stack.Stack) int32 {
	t.Helper()
	out, err := dynamodb.NewFromConfig(s.AWS).Scan(context.Background(), &dynamodb.ScanInput{
		TableName: aws.String(s.Resources.Ref("OrdersTable")), Select: ddbtypes.SelectCount, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Count
}

// ordersWithPrefix lists the orders whose session starts with prefix.
func ordersWithPrefix(t *testing.T, s *stack.Stack, prefix string) []string {
	t.Helper()
	out, err := dynamodb.NewFromConfig(s.AWS).Scan(context.Background(), &dynamodb.ScanInput{
		TableName: aws.String(s.Resources.Ref("OrdersTable")), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, item := range out.Items {
		if id := stringAttr(item, "session_id"); strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	return ids
}

// customerMail is the local mailbox's JSON: the customers' messages, or
// with smoke the smoke test's.
func customerMail(t *testing.T, api string, smoke bool) string {
	t.Helper()
	u := api + "/_local/mail?format=json"
	if smoke {
		u += "&smoke=1"
	}
	status, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", u))
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, status, body)
	}
	return string(body)
}
