package repair

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// setAside answers SetAside as told and notes the mode it was asked for.
type setAside struct {
	won  bool
	err  error
	mode []store.SetAsideMode
}

func (s *setAside) SetAside(_ context.Context, _ oracle.Order, m store.SetAsideMode) (bool, error) {
	s.mode = append(s.mode, m)
	return s.won, s.err
}

type sent struct {
	jobs []queue.Job
	err  error
}

func (s *sent) Send(_ context.Context, j queue.Job) error {
	s.jobs = append(s.jobs, j)
	return s.err
}

func hash(s string) string { return "h:" + s }

// ready is a READY quick order whose verdict is v, stored with the hash of
// stored (v itself when stored is "").
func ready(v, stored string) oracle.Order {
	if stored == "" {
		stored = v
	}
	return oracle.Order{SessionID: "cs_test_repair", Status: oracle.StatusReady, Tier: oracle.TierQuick, Query: "q",
		Verdict: v, VerdictHash: hash(stored), VerdictLabel: oracle.VerdictGreen}
}

const intact = `{"summary":"Go.","verdict":"GREEN"}`

// The guard's decisions, one case per path: what it answers, whether it
// set aside, alerted and queued the repair, and whether it failed.
func TestCheck(t *testing.T) {
	emailed := func(o oracle.Order) oracle.Order {
		o.Mail = map[oracle.MailKind]oracle.MailState{oracle.MailVerdict: oracle.MailDelivered}
		return o
	}
	before := time.Now()
	for _, tc := range []struct {
		name     string
		order    oracle.Order
		store    setAside
		sendErr  error
		want     Outcome
		mode     []store.SetAsideMode
		alert    string // words of the one alert, "" for none
		jobs     int
		wantsErr bool
	}{
		{name: "intact", order: ready(intact, ""), want: Intact},
		{name: "not ready", order: oracle.Order{Status: oracle.StatusPaid}, want: Intact},
		{name: "corrupt, emailed", order: emailed(ready(`{"summ`, "")), store: setAside{won: true}, want: Regenerating,
			mode: []store.SetAsideMode{store.SetAsideRegenerate}, alert: "no longer parses; set aside, and generated again, compared with the emailed GREEN verdict", jobs: 1},
		{name: "corrupt after a regeneration", order: func() oracle.Order {
			o := emailed(ready(`{"summ`, ""))
			o.Regen, o.OriginalVerdict = true, oracle.VerdictAmber
			return o
		}(), store: setAside{won: true}, want: Regenerating,
			mode: []store.SetAsideMode{store.SetAsideRegenerate}, alert: "compared with the emailed AMBER verdict", jobs: 1},
		{name: "tampered, never emailed", order: ready(intact, "other"), store: setAside{won: true}, want: Regenerating,
			mode: []store.SetAsideMode{store.SetAsideGenerate}, alert: "no longer matches its hash; set aside, and generated again; its email had not gone out", jobs: 1},
		{name: "missing", order: ready("", ""), store: setAside{won: true}, want: Regenerating,
			mode: []store.SetAsideMode{store.SetAsideGenerate}, alert: "is missing", jobs: 1},
		{name: "corrupt before", order: func() oracle.Order { o := emailed(ready("x", "")); o.SetAsideAt = &before; return o }(), store: setAside{won: true}, want: Held,
			mode: []store.SetAsideMode{store.SetAsideHold}, alert: "held for the operator (its verdict was found corrupt before)", jobs: 1},
		{name: "no query", order: func() oracle.Order { o := ready("x", ""); o.Query = ""; return o }(), store: setAside{won: true}, want: Held,
			mode: []store.SetAsideMode{store.SetAsideHold}, alert: "it lacks the query", jobs: 1},
		{name: "lost the race", order: ready("x", ""), store: setAside{}, want: Regenerating, mode: []store.SetAsideMode{store.SetAsideGenerate}},
		{name: "store down", order: ready("x", ""), store: setAside{err: errors.New("throttled")}, want: Regenerating,
			mode: []store.SetAsideMode{store.SetAsideGenerate}, alert: "could not be set aside (throttled); it is not served", wantsErr: true},
		{name: "queue down", order: ready("x", ""), store: setAside{won: true}, sendErr: errors.New("queue down"), want: Regenerating,
			mode: []store.SetAsideMode{store.SetAsideGenerate}, alert: "no longer parses", jobs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alerts := &testkit.Alerts{}
			orders, gen := tc.store, &sent{err: tc.sendErr}
			g := &Guard{Orders: &orders, Hash: hash, Generate: gen, Alerts: alerts, Log: obs.NewLogger(io.Discard, "DEBUG")}
			got, err := g.Check(context.Background(), tc.order)
			if got != tc.want || (err != nil) != tc.wantsErr {
				t.Fatalf("outcome %v, error %v; want %v, error %v", got, err, tc.want, tc.wantsErr)
			}
			if len(orders.mode) != len(tc.mode) || (len(tc.mode) == 1 && orders.mode[0] != tc.mode[0]) {
				t.Fatalf("set aside as %v, want %v", orders.mode, tc.mode)
			}
			raised := alerts.Raised()
			if tc.alert == "" && len(raised) != 0 || tc.alert != "" && (len(raised) != 1 || raised[0].Severity != alert.Critical ||
				raised[0].Kind != alert.VerdictCorrupt || !strings.Contains(raised[0].Detail, tc.alert)) {
				t.Fatalf("alerts %+v, want one CRITICAL VERDICT_CORRUPT saying %q", raised, tc.alert)
			}
			if len(gen.jobs) != tc.jobs || (tc.jobs == 1 && (gen.jobs[0].Reason != queue.ReasonRegenerate || gen.jobs[0].SessionID != tc.order.SessionID)) {
				t.Fatalf("jobs %+v, want %d repair job", gen.jobs, tc.jobs)
			}
		})
	}
}
