package main

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

const testPeriod = 5 * time.Minute

// withHealth gives the env's handler its health endpoint, reading the
// fixture's Ledger at the env's clock, and returns that Ledger.
func (e *env) withHealth() *store.Ledger {
	ledger := store.NewLedger(awsenv.NewTables(e.f.AWS), e.f.Ref("LedgerTable"), e.clock.Now)
	e.h.Health = &HealthEndpoint{Records: ledger, Period: testPeriod, Log: e.h.Log, Now: e.clock.Now}
	return ledger
}

// call sends req to the handler and returns the response and its JSON body.
func (e *env) call(req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, map[string]any) {
	e.t.Helper()
	resp, err := e.h.Handle(context.Background(), req)
	if err != nil {
		e.t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		e.t.Fatalf("body %q: %v", resp.Body, err)
	}
	return resp, body
}

// healthRequest is GET /api/health as API Gateway sends it.
func healthRequest() events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{RouteKey: "GET /api/health", RawPath: "/api/health"}
}

// run is a health record of checks with these statuses, at, each check
// carrying a detail and figures the endpoint must not show.
func run(at time.Time, statuses map[string]health.Status) health.Record {
	r := health.Record{At: at, DurationMs: 4321, Orders: map[string]int64{"PAID": 7}, OrdersTotal: 99, PastTTL: 3,
		Queues: []health.Queue{{Name: "generate", Visible: 11}}, Reconcile: health.Reconciliation{Stuck: 2}}
	for _, name := range slices.Sorted(maps.Keys(statuses)) {
		r.Checks = append(r.Checks, health.Check{Name: name, Status: statuses[name], DurationMs: 1234, Detail: "detail-of-" + name + " cs_test_secret", Retried: true})
	}
	r.Overall = health.OverallOf(r.Checks)
	return r
}

// GET /api/health sums up the latest run: 200 for ok and warn, 503 for
// critical, for a record older than three periods (stale) and before any
// run; the body names every check and its status, and nothing more.
func TestHealthEndpoint(t *testing.T) {
	e := newEnv(t)
	ledger := e.withHealth()
	ok := map[string]health.Status{"orders_table": health.OK, "ledger_table": health.OK, "email": health.OK}
	warn := map[string]health.Status{"orders_table": health.OK, "ledger_table": health.Warn, "email": health.OK}
	critical := map[string]health.Status{"orders_table": health.OK, "ledger_table": health.Warn, "email": health.Critical}
	cases := []struct {
		name     string
		age      time.Duration            // of the record when asked
		statuses map[string]health.Status // nil: no record written
		code     int
		status   health.Status
		stale    bool
	}{
		// First: the fixture's Ledger holds no record yet.
		{"no record", 0, nil, http.StatusServiceUnavailable, health.Critical, false},
		{"ok", time.Minute, ok, http.StatusOK, health.OK, false},
		{"warn", time.Minute, warn, http.StatusOK, health.Warn, false},
		{"critical", time.Minute, critical, http.StatusServiceUnavailable, health.Critical, false},
		{"three periods old", 3 * testPeriod, ok, http.StatusOK, health.OK, false},
		{"stale", 3*testPeriod + time.Second, ok, http.StatusServiceUnavailable, health.Critical, true},
		{"stale warn", time.Hour, warn, http.StatusServiceUnavailable, health.Critical, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			at := e.clock.Now()
			if c.statuses != nil {
				if err := ledger.PutHealth(context.Background(), run(at, c.statuses), time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			e.clock.Add(c.age)
			resp, body := e.call(healthRequest())
			if resp.StatusCode != c.code || body["status"] != string(c.status) {
				t.Fatalf("%d %s, want %d with status %s", resp.StatusCode, resp.Body, c.code, c.status)
			}
			if cc := resp.Headers["Cache-Control"]; cc != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", cc)
			}
			if c.statuses == nil {
				if !slices.Equal(slices.Sorted(maps.Keys(body)), []string{"error", "status"}) || body["error"] != noHealthRun {
					t.Errorf("body %s, want the status and %q only", resp.Body, noHealthRun)
				}
				return
			}
			want := []string{"at", "checks", "status"}
			if c.stale {
				want = []string{"at", "checks", "stale", "status"}
			}
			if got := slices.Sorted(maps.Keys(body)); !slices.Equal(got, want) {
				t.Errorf("body fields %v, want %v: %s", got, want, resp.Body)
			}
			if stale, _ := body["stale"].(bool); stale != c.stale {
				t.Errorf("stale %v, want %v", body["stale"], c.stale)
			}
			if got, _ := time.Parse(time.RFC3339Nano, body["at"].(string)); !got.Equal(at) {
				t.Errorf("at %v, want %s", body["at"], at)
			}
			checks, _ := body["checks"].(map[string]any)
			if len(checks) != len(c.statuses) {
				t.Errorf("checks %v, want %v", checks, c.statuses)
			}
			for name, st := range c.statuses {
				if checks[name] != string(st) {
					t.Errorf("check %s: %v, want %s", name, checks[name], st)
				}
			}
			// The time, checked above, is the clock's and may hold any digits.
			shown := strings.Replace(resp.Body, body["at"].(string), "", 1)
			for _, leak := range []string{"detail", "cs_test_", "duration", "retried", "4321", "1234", "99", "PAID", "generate"} {
				if strings.Contains(shown, leak) {
					t.Errorf("the body shows %q: %s", leak, resp.Body)
				}
			}
		})
	}
}

// A Ledger that cannot be read is the store down: 503 with a plain error,
// and the cause logged.
func TestHealthEndpointStoreDown(t *testing.T) {
	e := newEnv(t)
	e.h.Health = &HealthEndpoint{Records: store.NewLedger(awsenv.NewTables(e.f.AWS), "no-such-ledger", e.clock.Now), Period: testPeriod, Log: e.h.Log, Now: e.clock.Now}
	resp, body := e.call(healthRequest())
	if resp.StatusCode != http.StatusServiceUnavailable || body["status"] != string(health.Critical) || body["error"] != healthUnreadable || len(body) != 2 {
		t.Fatalf("%d %s, want 503 critical with %q", resp.StatusCode, resp.Body, healthUnreadable)
	}
	if resp.Headers["Cache-Control"] != "no-store" {
		t.Errorf("headers %v", resp.Headers)
	}
	if logs := e.logs.String(); !strings.Contains(logs, `"level":"ERROR"`) || !strings.Contains(logs, "read the health record") {
		t.Errorf("the failure is not logged as an error:\n%s", logs)
	}
}

// The function routes /api/health to the health answer, by route key or,
// invoked directly, by path, and everything else to the verdict as before.
func TestHealthAndVerdictRoutes(t *testing.T) {
	e := newEnv(t)
	ledger := e.withHealth()
	if err := ledger.PutHealth(context.Background(), run(e.clock.Now(), map[string]health.Status{"email": health.OK}), time.Hour); err != nil {
		t.Fatal(err)
	}
	paid := e.session(oracle.TierQuick, "Should I open a bakery?", true)
	cases := []struct {
		name   string
		req    events.APIGatewayV2HTTPRequest
		code   int
		status string
	}{
		{"health", healthRequest(), http.StatusOK, "ok"},
		// A session id does not turn the health route into a poll.
		{"health with a session id", events.APIGatewayV2HTTPRequest{RouteKey: "GET /api/health", RawPath: "/api/health", QueryStringParameters: map[string]string{"session_id": paid}}, http.StatusOK, "ok"},
		{"health invoked directly", events.APIGatewayV2HTTPRequest{RawPath: "/api/health"}, http.StatusOK, "ok"},
		{"verdict", events.APIGatewayV2HTTPRequest{RouteKey: "GET /api/verdict", RawPath: "/api/verdict", QueryStringParameters: map[string]string{"session_id": paid}}, http.StatusAccepted, "pending"},
		{"verdict without a session", events.APIGatewayV2HTTPRequest{RouteKey: "GET /api/verdict", RawPath: "/api/verdict"}, http.StatusBadRequest, ""},
		// The route key decides: a path that looks like the health route
		// under another key is not it.
		{"verdict route, health path", events.APIGatewayV2HTTPRequest{RouteKey: "GET /api/verdict", RawPath: "/api/health"}, http.StatusBadRequest, ""},
	}
	for _, c := range cases {
		resp, body := e.call(c.req)
		if resp.StatusCode != c.code || c.status != "" && body["status"] != c.status {
			t.Errorf("%s: %d %s, want %d %s", c.name, resp.StatusCode, resp.Body, c.code, c.status)
		}
		if _, ok := body["checks"]; ok != (c.status == "ok") {
			t.Errorf("%s: answered %s", c.name, resp.Body)
		}
	}
}

// HEALTH_PERIOD is read at cold start, 5m by default, 30 s to 1 h.
func TestConfigHealthPeriod(t *testing.T) {
	base := map[string]string{
		"ORDERS_TABLE": "orders", "LEDGER_TABLE": "ledger", "GENERATE_QUEUE_URL": "http://q/generate", "MAIL_QUEUE_URL": "http://q/mail",
		"AUDIT_BUCKET": "audit", "ALERTS_TOPIC_ARN": "arn:aws:sns:us-east-1:1:alerts",
		"STRIPE_SECRET_KEY": "sk_test_x", "HASH_PEPPER": "a-pepper-of-at-least-16-bytes",
	}
	cases := []struct {
		value string // "" leaves it unset
		want  time.Duration
		ok    bool
	}{
		{"", 5 * time.Minute, true},
		{"30s", 30 * time.Second, true},
		{"60m", time.Hour, true},
		{"29s", 0, false},
		{"61m", 0, false},
		{"often", 0, false},
	}
	for _, c := range cases {
		t.Run("HEALTH_PERIOD="+c.value, func(t *testing.T) {
			for k, v := range base {
				t.Setenv(k, v)
			}
			t.Setenv("HEALTH_PERIOD", c.value)
			s, err := loadConfig(context.Background(), aws.Config{})
			if !c.ok {
				if err == nil || !strings.Contains(err.Error(), "HEALTH_PERIOD") {
					t.Fatalf("%v, want a problem naming HEALTH_PERIOD", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.HealthPeriod != c.want {
				t.Errorf("period %s, want %s", s.HealthPeriod, c.want)
			}
		})
	}
}
