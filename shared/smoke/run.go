package smoke

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/x402"
)

// StageTimeout bounds each stage, as the spec does: a pipeline that takes
// longer to make a quick verdict is degraded.
const StageTimeout = 30 * time.Second

// Sessions reads and expires test-mode Checkout Sessions (stripex.Client).
type Sessions interface {
	RawSession(ctx context.Context, id string) ([]byte, error)
	ExpireSession(ctx context.Context, id string) error
}

// Orders reads the smoke order and removes it (store.Orders).
type Orders interface {
	Get(ctx context.Context, sessionID string) (oracle.Order, bool, error)
	DeleteSmoke(ctx context.Context, sessionID string) (bool, error)
}

// AuditLog reads one session's audit records (audit.Reader).
type AuditLog interface {
	Session(ctx context.Context, sessionID string, created time.Time) ([]audit.Record, error)
}

// Probe checks a dependency and says what it saw.
type Probe func(ctx context.Context) (figure string, err error)

// Runner runs the thirteen stages against one deployment.
type Runner struct {
	// StripeKey is the test-mode secret key; SigningSecret the test-mode
	// webhook signing secret (stripex.SmokeSecrets picks both).
	StripeKey     string
	SigningSecret string
	// APIURL is the deployment's base URL: /api/checkout, /api/webhook and
	// /api/verdict hang from it.
	APIURL   string
	HTTP     *http.Client
	Sessions Sessions
	Stores   Probe
	Email    Probe
	Orders   Orders
	Audit    AuditLog
	// Agent is the agent rail's part (stages 10 and 11); its zero value
	// is a rail that is off.
	Agent Agent
	// Chat and ChatMail are the chat stage's (12): the chat table's
	// accounts and the mailer's records of their emails. Origin is the
	// site's (BASE_URL's), which the chat's page sends its requests from.
	Chat     ChatAccounts
	ChatMail ChatMailLog
	Origin   string

	Now          func() time.Time
	StageTimeout time.Duration
	// Poll is how often stages 6, 8 and 11 look again.
	Poll time.Duration
}

// run is one run's state, handed from stage to stage.
type run struct {
	session string
	order   oracle.Order
	// agent and mcp are the agent payments' orders (over HTTP and as the
	// MCP tool), each once the deployment named it; mcpClient is the MCP
	// conversation; agentNA says why the agent stages do not apply.
	agent     *agentRun
	mcp       *agentRun
	mcpClient *mcpClient
	agentNA   string
	// chat is the smoke account's sign-in, once it was asked for.
	chat *chatRun
}

// Run runs the thirteen stages and returns the report. A failed environment
// check ends the run at once (nothing is created); any other failure lets
// the later stages try what does not depend on it, and the cleanup always
// runs when a session, an agent order or the smoke chat account was made.
func (r *Runner) Run(ctx context.Context) Report {
	now := r.now()
	rep := Report{Started: now}
	st := &run{}
	stages := []func(context.Context, *run) (string, error){
		r.environment, r.stores, r.email, r.checkout, r.webhook, r.stored, r.verdictAPI, r.verdictEmail, r.decisions,
		r.agentPayment, r.agentVerdict, r.chat, r.cleanup,
	}
	// needs says which stage's work each stage builds on (0: none); the
	// cleanup needs whatever was made.
	needs := [...]int{0, 0, 0, 0, 4, 5, 6, 6, 6, 0, 10, 0, 0}
	for i, stage := range stages {
		n := i + 1
		res := Result{Stage: n}
		if dep := needs[i]; dep > 0 && rep.Results[dep-1].Outcome != Pass {
			res.Outcome, res.Err = Skip, fmt.Sprintf("stage %d did not pass", dep)
			rep.Results = append(rep.Results, res)
			continue
		}
		if n == len(stages) && st.session == "" && st.agent == nil && st.mcp == nil && st.chat == nil {
			res.Outcome, res.Err = Skip, "nothing was made to clean up"
			rep.Results = append(rep.Results, res)
			continue
		}
		start := r.now()
		sctx, cancel := context.WithTimeout(ctx, r.timeout())
		fig, err := safely(sctx, st, stage)
		cancel()
		res.Duration, res.Figure = r.now().Sub(start), fig
		res.Outcome = Pass
		if err != nil {
			res.Outcome, res.Err = Fail, oracle.Clip(err.Error(), 300)
		}
		rep.Results = append(rep.Results, res)
		if n == 1 && err != nil {
			break // a live key or no secrets: nothing else may run
		}
	}
	rep.Session, rep.Duration = st.session, r.now().Sub(now)
	return rep
}

// safely runs a stage; a panic in one is its failure, not the run's end.
func safely(ctx context.Context, st *run, stage func(context.Context, *run) (string, error)) (fig string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return stage(ctx, st)
}

// ErrLiveKey is the environment check's refusal of a live key.
var ErrLiveKey = errors.New("FATAL: production Stripe key in smoke test — aborting")

func (r *Runner) environment(context.Context, *run) (string, error) {
	switch {
	case stripex.IsLiveKey(r.StripeKey):
		return "", ErrLiveKey
	case !stripex.IsTestKey(r.StripeKey):
		return "", errors.New("no test-mode Stripe key (sk_test_ or rk_test_)")
	case r.SigningSecret == "":
		return "", errors.New("no test-mode webhook signing secret")
	case r.APIURL == "":
		return "", errors.New("no API URL")
	}
	if err := r.Agent.check(); err != nil {
		return "", err
	}
	if r.Agent.notApplicable() != "" {
		return "stripe=test x402=n/a", nil
	}
	return "stripe=test x402=" + string(x402.NetworkBaseSepolia), nil
}

func (r *Runner) stores(ctx context.Context, _ *run) (string, error) { return r.Stores(ctx) }

func (r *Runner) email(ctx context.Context, _ *run) (string, error) { return r.Email(ctx) }

// checkout asks the deployed checkout for a smoke session.
func (r *Runner) checkout(ctx context.Context, st *run) (string, error) {
	body, err := json.Marshal(map[string]string{"tier": string(oracle.TierQuick), "query": Query})
	if err != nil {
		return "", err
	}
	var out struct {
		SessionID string `json:"session_id"`
		URL       string `json:"url"`
	}
	if err := r.call(ctx, http.MethodPost, "/api/checkout", body, map[string]string{stripex.SmokeHeader: stripex.SignSmoke(body, r.SigningSecret, r.now())}, &out); err != nil {
		return "", err
	}
	if !strings.HasPrefix(out.SessionID, "cs_test_") || out.URL == "" {
		return "", fmt.Errorf("the checkout answered session %q, want a test-mode session and its page", oracle.ShortID(out.SessionID))
	}
	st.session = out.SessionID
	return "session_id=" + oracle.ShortID(out.SessionID), nil
}

// webhook posts the session's checkout.session.completed, signed as Stripe
// signs it, built from the session as Stripe has it, marked paid: no card
// is charged, test mode or not.
func (r *Runner) webhook(ctx context.Context, st *run) (string, error) {
	raw, err := r.Sessions.RawSession(ctx, st.session)
	if err != nil {
		return "", err
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("the session from Stripe: %w", err)
	}
	// Only the checkout's smoke session is ever marked paid here.
	meta, _ := s["metadata"].(map[string]any)
	if s["livemode"] != false || meta[stripex.MetaSmoke] != "1" {
		return "", errors.New("the session is not a test-mode session flagged smoke")
	}
	// The checkout made it out to the smoke address; no customer enters
	// another, as no customer pays.
	email, _ := s["customer_email"].(string)
	if email == "" {
		return "", errors.New("the smoke session has no customer email")
	}
	s["status"], s["payment_status"] = "complete", "paid"
	s["customer_details"] = map[string]any{"email": email}
	id := make([]byte, 12)
	if _, err := rand.Read(id); err != nil {
		return "", err
	}
	event, err := json.Marshal(map[string]any{
		"id": "evt_smoke_" + hex.EncodeToString(id), "object": "event", "type": "checkout.session.completed",
		"livemode": false, "created": r.now().Unix(), "api_version": stripe.APIVersion, "pending_webhooks": 1,
		"data": map[string]any{"object": s},
	})
	if err != nil {
		return "", err
	}
	var out struct {
		Received bool `json:"received"`
	}
	if err := r.call(ctx, http.MethodPost, "/api/webhook", event, map[string]string{"Stripe-Signature": stripex.SignSmoke(event, r.SigningSecret, r.now())}, &out); err != nil {
		return "", err
	}
	if !out.Received {
		return "", errors.New(`the webhook did not answer {"received": true}`)
	}
	return "received=true", nil
}

// stored waits for the order to be READY with a verdict that parses.
func (r *Runner) stored(ctx context.Context, st *run) (string, error) {
	var last *oracle.Order
	err := r.until(ctx, func() (bool, error) {
		o, found, err := r.Orders.Get(ctx, st.session)
		if err != nil || !found {
			return false, err
		}
		st.order, last = o, &o
		return o.Status == oracle.StatusReady, nil
	})
	if err != nil {
		if last == nil {
			return "", fmt.Errorf("no order for the session: %w", err)
		}
		return "", fmt.Errorf("the order is %s%s, not READY: %w", last.Status, progress(*last), err)
	}
	if !st.order.Smoke {
		return "", errors.New("the order is not flagged smoke")
	}
	a, err := oracle.ParseAnalysis(st.order.Tier, []byte(st.order.Verdict))
	if err != nil {
		return "", fmt.Errorf("the stored verdict: %w", err)
	}
	if a.Summary == "" {
		return "", errors.New("the stored verdict has no summary")
	}
	return "verdict=" + string(a.Verdict), nil
}

// progress says how far generation got: what the operator looks at first
// when the verdict is late (the model failing, the circuit parking it).
func progress(o oracle.Order) string {
	var parts []string
	if o.Attempts > 0 {
		parts = append(parts, fmt.Sprintf("%d model attempt(s)", o.Attempts))
	}
	if o.ParkedSince != nil {
		parts = append(parts, "parked since "+o.ParkedSince.UTC().Format(time.RFC3339))
	}
	if o.Failure != "" {
		parts = append(parts, "failed: "+o.Failure)
	}
	if o.DropReason != "" {
		parts = append(parts, "dropped: "+string(o.DropReason))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// verdictAPI reads the verdict as the result page does.
func (r *Runner) verdictAPI(ctx context.Context, st *run) (string, error) {
	var out struct {
		Status  string          `json:"status"`
		Tier    oracle.Tier     `json:"tier"`
		Query   string          `json:"query"`
		Verdict json.RawMessage `json:"verdict"`
	}
	if err := r.call(ctx, http.MethodGet, "/api/verdict?session_id="+url.QueryEscape(st.session), nil, nil, &out); err != nil {
		return "", err
	}
	if out.Status != "ready" || out.Tier != oracle.TierQuick {
		return "", fmt.Errorf("status %q tier %q, want ready and quick", out.Status, out.Tier)
	}
	if out.Query != Query {
		return "", errors.New("the query does not match")
	}
	if _, err := oracle.ParseAnalysis(out.Tier, out.Verdict); err != nil {
		return "", fmt.Errorf("the verdict served: %w", err)
	}
	return "tier=quick query_match=true", nil
}

// verdictEmail waits for the mailer to record the verdict email sent.
func (r *Runner) verdictEmail(ctx context.Context, st *run) (string, error) {
	var state oracle.MailState
	err := r.until(ctx, func() (bool, error) {
		o, _, err := r.Orders.Get(ctx, st.session)
		if err != nil {
			return false, err
		}
		state = o.Mail[oracle.MailVerdict]
		return state != "", nil // any state is the mailer's last word on this attempt
	})
	if err != nil {
		return "", fmt.Errorf("the verdict email is not recorded sent: %w", err)
	}
	if state != oracle.MailSent && state != oracle.MailDelivered {
		return "", fmt.Errorf("the verdict email is %s", state)
	}
	return "status=" + string(state), nil
}

// decisions reads the run's records from the audit log: every one a paid
// verdict leaves is there and flagged smoke, and the crosscheck's and
// both filter gates' decisions on the verdict are passing.
func (r *Runner) decisions(ctx context.Context, st *run) (string, error) {
	recs, err := r.Audit.Session(ctx, st.session, st.order.SessionCreated)
	if err != nil {
		return "", err
	}
	var cross *audit.Crosscheck
	gates := map[string]string{}
	seen := map[audit.Event]bool{}
	for _, rec := range recs {
		if !rec.Smoke {
			return "", fmt.Errorf("the %s record %s is not flagged smoke", rec.Source, rec.Event)
		}
		seen[rec.Event] = true
		if rec.Crosscheck != nil {
			cross = rec.Crosscheck
		}
		if rec.Filter != nil && (rec.Filter.MailKind == "" || rec.Filter.MailKind == oracle.MailVerdict) {
			gates[rec.Filter.Gate] = rec.Filter.Action
		}
	}
	var missing []string
	for _, e := range expectedRecords {
		if !seen[e] {
			missing = append(missing, string(e))
		}
	}
	switch {
	case len(missing) > 0:
		return "", fmt.Errorf("the audit log lacks the run's %s record(s)", strings.Join(missing, ", "))
	case cross == nil:
		return "", errors.New("no crosscheck record")
	case !cross.Approved:
		return "", fmt.Errorf("the crosscheck did not approve (C=%.4f)", cross.CoherenceScore)
	case len(gates) < 2:
		return "", fmt.Errorf("filter decisions %v, want both gates'", gates)
	}
	for gate, action := range gates {
		if action != "PASS" {
			return "", fmt.Errorf("filter gate %s: %s", gate, action)
		}
	}
	return fmt.Sprintf("C=%.4f approved=true filter=PASS records=%d", cross.CoherenceScore, len(recs)), nil
}

// expectedRecords are the audit records every paid verdict leaves, which
// a run must find (AUDIT_TRAIL VC-6): the payment, the generation, its
// crosscheck and filter decisions, the verdict served and the email.
var expectedRecords = []audit.Event{
	audit.EventCheckoutCompleted, audit.EventVerdictGenerated, audit.EventCrosscheck,
	audit.EventFilter, audit.EventVerdictServed, audit.EventMailAttempt,
}

// cleanup removes the smoke order and expires the session, removes the
// agent order, and forgets the smoke chat's conversation and removes its
// account, so nothing of the run stays where a customer or a count could
// see it; its audit records stay, flagged smoke, as the log is
// append-only.
func (r *Runner) cleanup(ctx context.Context, st *run) (string, error) {
	var done, failed []string
	if st.session != "" {
		if fig, err := r.cleanSession(ctx, st.session); err != nil {
			failed = append(failed, err.Error())
		} else {
			done = append(done, fig)
		}
	}
	for _, a := range []*agentRun{st.agent, st.mcp} {
		if a == nil {
			continue
		}
		// Only an order flagged smoke, in test mode, can be deleted.
		deleted, err := r.Orders.DeleteSmoke(ctx, a.order)
		switch {
		case err != nil:
			failed = append(failed, "the agent order "+oracle.ShortID(a.order)+": "+err.Error())
		case deleted:
			done = append(done, oracle.ShortID(a.order)+" deleted")
		default:
			done = append(done, "no agent order "+oracle.ShortID(a.order)+" to delete")
		}
	}
	if st.chat != nil {
		if fig, err := r.cleanChat(ctx, st.chat); err != nil {
			failed = append(failed, err.Error())
		} else {
			done = append(done, fig)
		}
	}
	if len(failed) > 0 {
		return "", errors.New(strings.Join(failed, "; "))
	}
	return strings.Join(done, ", "), nil
}

// cleanSession deletes the session's order and expires the session.
func (r *Runner) cleanSession(ctx context.Context, session string) (string, error) {
	deleted, err := r.Orders.DeleteSmoke(ctx, session)
	if err != nil {
		return "", err
	}
	if err := r.Sessions.ExpireSession(ctx, session); err != nil {
		return "", err
	}
	if !deleted {
		return "session expired, no order to delete", nil
	}
	return oracle.ShortID(session) + " deleted", nil
}

// call sends one request to the deployment and decodes a 200's JSON. Its
// errors name the route, never the query string: a session id in full
// must not reach the report, the log or the alert.
func (r *Runner) call(ctx context.Context, method, path string, body []byte, headers map[string]string, out any) error {
	route, _, _ := strings.Cut(path, "?")
	status, _, b, err := r.exchange(ctx, r.HTTP, method, r.APIURL+path, route, body, headers)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s %s → %d %s", method, route, status, oracle.Clip(string(b), 200))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not JSON: %w", method, route, err)
	}
	return nil
}

// exchange sends one request to target and returns the answer, whatever
// its status. Its errors name route, never target, which may hold an id
// that opens a verdict.
func (r *Runner) exchange(ctx context.Context, c *http.Client, method, target, route string, body []byte, headers map[string]string) (int, http.Header, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: not a URL", method, route)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the whole URL
		}
		return 0, nil, nil, fmt.Errorf("%s %s: %w", method, route, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: %w", method, route, err)
	}
	return resp.StatusCode, resp.Header, b, nil
}

// until asks done every Poll until it says yes, fails, or ctx ends.
func (r *Runner) until(ctx context.Context, done func() (bool, error)) error {
	poll := r.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		ok, err := done()
		if ctx.Err() != nil {
			// A read cut short by the deadline says only that time ran out.
			return fmt.Errorf("not within the stage's %s", r.timeout())
		}
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within the stage's %s", r.timeout())
		case <-t.C:
		}
	}
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) timeout() time.Duration {
	if r.StageTimeout > 0 {
		return r.StageTimeout
	}
	return StageTimeout
}
