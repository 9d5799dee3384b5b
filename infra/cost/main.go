// Command cost prices a verdict's infrastructure (everything but the model)
// and the stack's idle month, each idle line beside its figure before issue
// 30, from the figures a burst of orders through the local stack measured
// (`make cost` runs one; `make bench-burst` writes .build/burst-full.json)
// and the public prices of one region (prices.go); the model's cost of a
// verdict per tier and of a Sisters Chat exchange, from the tokens the fake
// model counts, at Gemini's prices; and each sale's margin in one table.
//
// Usage: go run ./infra/cost FIGURES.json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/infra/samconfig"
)

// The goals: a verdict's infrastructure (issue 16, item 5) and the idle
// month (issue 30, item 5).
const (
	goalPerVerdict = 0.0005
	goalIdle       = 5.0
)

// main exits 1 when the figures cannot be priced, and when a goal is not
// met: a budget that cannot fail is not one (issue 40).
func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cost:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: cost FIGURES.json (written by the burst test with ORACLE_BURST_FIGURES)")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return fmt.Errorf("read the figures: %w", err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("read the figures %s: %w", args[0], err)
	}
	if len(rep.Runs) == 0 || rep.Runs[0].Orders == 0 {
		return fmt.Errorf("%s holds no run with orders", args[0])
	}
	t, err := sam.Load(filepath.Join(filepath.Dir(provision.TemplatePath()), "template.yaml"))
	if err != nil {
		return err
	}
	routed, queued := map[string]bool{}, map[string]bool{}
	for _, fn := range t.Functions() {
		routed[fn.LogicalID] = len(fn.Routes) > 0
		queued[fn.LogicalID] = len(fn.Queues) > 0
	}
	retention, err := t.ResolveInt(sam.Intrinsic{Name: "Ref", Arg: "AuditRetentionDays"}, &sam.Values{})
	if err != nil {
		return fmt.Errorf("AuditRetentionDays: %w", err)
	}

	fmt.Fprintf(w, "Prices: us-east-1, on demand, as of %s (infra/cost/prices.go); figures: %s (%s form)\n", PricesDate, args[0], rep.Form)
	var verdict float64
	for i, r := range rep.Runs {
		lines, unpriced := runLines(r, routed, queued, retention)
		per := perVerdict(r, lines)
		if i == 0 {
			verdict = per
		}
		fmt.Fprintf(w, "\nThe %s run: %d orders, %d emails, in %.1f s\n", r.Name, r.Orders, r.Emails, r.Seconds)
		printLines(w, lines, float64(r.Orders))
		if len(unpriced) > 0 {
			fmt.Fprintf(w, "  not priced (free, or no price here): %v\n", unpriced)
		}
		fmt.Fprintf(w, "  per verdict: $%.6f (the model excluded)\n", per)
	}
	idle, params, err := idleMonth(t, verdict)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nIdle, a %d-day month with no orders (credentials by the kind of their ARN in samconfig.toml, else SSM as docs/deploying.md makes them)\n", daysPerMonth)
	printIdle(w, idle)
	chat, err := measureChat(context.Background())
	if err != nil {
		return err
	}
	printChat(w, chat)
	verdicts, err := measureVerdicts(context.Background())
	if err != nil {
		return err
	}
	dailyCap, err := t.ResolveInt(sam.Intrinsic{Name: "Ref", Arg: "ChatDailyCap"}, &sam.Values{Params: params})
	if err != nil {
		return fmt.Errorf("ChatDailyCap: %w", err)
	}
	printModel(w, verdicts, sales(verdicts, chat, verdict, dailyCap))
	idleNow := idleTotal(idle)
	fmt.Fprintf(w, "\nCOST: $%.6f per verdict (goal under $%.4f: %s); $%.2f a month idle, $%.2f before (goal under $%.0f: %s)\n",
		verdict, goalPerVerdict, met(verdict < goalPerVerdict), idleNow, idleTotal(idleBaseline), goalIdle, met(idleNow < goalIdle))
	fmt.Fprintf(w, "COST: $%.6f of model per chat exchange, at most $%.6f\n", chat.measured(), chat.most())
	return goals(verdict, idleNow)
}

// idleMonth prices the idle month of t as deployed: the parameters a
// guided deploy saved in samconfig.toml, the metric names the code has,
// the daily smoke test's verdict at verdict. It returns the parameters
// too.
func idleMonth(t *sam.Template, verdict float64) ([]idleLine, map[string]string, error) {
	root := filepath.Dir(provision.TemplatePath())
	// The parameters a guided deploy saved: they name the credentials'
	// ARNs and so their kinds.
	deployed, err := samconfig.Read(filepath.Join(root, "samconfig.toml"))
	if err != nil {
		return nil, nil, err
	}
	params := deployed.Parameters
	names, err := metricNames(filepath.Join(root, "shared", "obs", "names.go"))
	if err != nil {
		return nil, nil, err
	}
	idle, err := idleLines(t, params, verdict, names)
	if err != nil {
		return nil, nil, err
	}
	return idle, params, nil
}

// goals is an error naming each goal a verdict's cost (verdict) and the
// idle month (idle) do not meet.
func goals(verdict, idle float64) error {
	var missed []string
	if verdict >= goalPerVerdict {
		missed = append(missed, fmt.Sprintf("a verdict costs $%.6f, the goal is under $%.4f", verdict, goalPerVerdict))
	}
	if idle >= goalIdle {
		missed = append(missed, fmt.Sprintf("the idle month costs $%.2f, the goal is under $%.0f", idle, goalIdle))
	}
	if len(missed) > 0 {
		return fmt.Errorf("goal not met: %s", strings.Join(missed, "; "))
	}
	return nil
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// printLines prints each line's quantity, price and cost, each also per
// one of per (orders; 1 for a month).
func printLines(w io.Writer, lines []line, per float64) {
	for _, l := range lines {
		if l.Quantity == 0 {
			continue
		}
		fmt.Fprintf(w, "  %-100s %12.4f %-16s x $%.10f = $%.6f", l.What, l.Quantity, l.Unit, l.Price, l.cost())
		if per != 1 {
			fmt.Fprintf(w, "  ($%.8f each)", l.cost()/per)
		}
		fmt.Fprintln(w)
	}
}
