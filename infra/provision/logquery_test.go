package provision_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
)

// goStringLiterals returns every double-quoted string literal of the
// functions' and shared packages' code (tests left out): the keys and
// messages a log line can have.
func goStringLiterals(t *testing.T, root string) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`"((?:[^"\\\n]|\\.)*)"`)
	out := map[string]bool{}
	for _, dir := range []string{"shared", "functions"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			for _, m := range re.FindAllSubmatch(b, -1) {
				out[string(m[1])] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Logs Insights words that are not fields.
var insightsWords = map[string]bool{
	"fields": true, "filter": true, "sort": true, "limit": true, "stats": true, "by": true, "as": true,
	"and": true, "or": true, "not": true, "like": true, "in": true, "asc": true, "desc": true,
	"ispresent": true, "isempty": true, "max": true, "min": true, "avg": true, "sum": true, "count": true,
	"latest": true, "earliest": true, "pct": true, "bin": true, "display": true, "parse": true, "dedup": true,
}

// queryFields returns the fields a query reads (its own aliases and
// Insights' @ fields left out) and the values it compares msg and kind with.
func queryFields(q string) (fields []string, values map[string][]string) {
	values = map[string][]string{}
	for _, m := range regexp.MustCompile(`\b(msg|kind)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(q, -1) {
		values[m[1]] = append(values[m[1]], m[2])
	}
	// Strings and regular expressions name no field.
	q = regexp.MustCompile(`"[^"]*"|/(?:[^/\\]|\\.)*/`).ReplaceAllString(q, " ")
	aliases := map[string]bool{}
	for _, m := range regexp.MustCompile(`\bas\s+([A-Za-z_][A-Za-z0-9_]*)`).FindAllStringSubmatch(q, -1) {
		aliases[m[1]] = true
	}
	seen := map[string]bool{}
	for _, w := range regexp.MustCompile(`@?[A-Za-z_][A-Za-z0-9_]*`).FindAllString(q, -1) {
		if strings.HasPrefix(w, "@") || insightsWords[w] || aliases[w] || seen[w] {
			continue
		}
		seen[w] = true
		fields = append(fields, w)
	}
	return fields, values
}

// TestLogQueriesReadWhatTheCodeLogs: each saved Logs Insights query reads
// the template's function log groups (the ones following an order or
// errors read every one of them), and every field it reads, every message
// and kind it filters on, is one the code writes.
func TestLogQueriesReadWhatTheCodeLogs(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	functionGroups := map[string]bool{}
	for _, f := range tmpl.OfType("AWS::Serverless::Function") {
		lc, _ := f.Properties["LoggingConfig"].(map[string]any)
		ref, ok := lc["LogGroup"].(sam.Intrinsic)
		if !ok || ref.Name != "Ref" {
			t.Fatalf("%s logs to no log group of the template", f.LogicalID)
		}
		functionGroups[fmt.Sprint(ref.Arg)] = true
	}
	literals := goStringLiterals(t, filepath.Dir(provision.TemplatePath()))
	// slog's own keys, and those of lines Lambda writes itself.
	builtin := map[string]bool{"time": true, "level": true, "msg": true}

	queries := tmpl.OfType("AWS::Logs::QueryDefinition")
	names := map[string]bool{}
	for _, q := range queries {
		name := fmt.Sprint(q.Properties["Name"])
		names[q.LogicalID] = true
		if sub, ok := q.Properties["Name"].(sam.Intrinsic); !ok || sub.Name != "Fn::Sub" || !strings.HasPrefix(fmt.Sprint(sub.Arg), "${AWS::StackName}/") {
			t.Errorf("%s is named %s, not under the stack's name: two stacks' queries would mix", q.LogicalID, name)
		}
		var groups []string
		list, _ := q.Properties["LogGroupNames"].([]any)
		for _, g := range list {
			ref, ok := g.(sam.Intrinsic)
			if !ok || ref.Name != "Ref" || !functionGroups[fmt.Sprint(ref.Arg)] {
				t.Errorf("%s reads %v, not a function's log group", q.LogicalID, g)
				continue
			}
			groups = append(groups, fmt.Sprint(ref.Arg))
		}
		if len(groups) == 0 {
			t.Errorf("%s reads no log group", q.LogicalID)
		}
		if q.LogicalID == "OrderLogsQuery" || q.LogicalID == "ErrorLogsQuery" {
			var want []string
			for g := range functionGroups {
				want = append(want, g)
			}
			sort.Strings(want)
			sort.Strings(groups)
			if !slices.Equal(groups, want) {
				t.Errorf("%s reads %v, want every function's log group %v", q.LogicalID, groups, want)
			}
		}
		fields, values := queryFields(fmt.Sprint(q.Properties["QueryString"]))
		for _, f := range fields {
			if !builtin[f] && !literals[f] {
				t.Errorf("%s reads the field %q, which no code logs", q.LogicalID, f)
			}
		}
		for key, vs := range values {
			for _, v := range vs {
				if !literals[v] {
					t.Errorf("%s filters on %s = %q, which no code writes", q.LogicalID, key, v)
				}
			}
		}
	}
	for _, want := range []string{"OrderLogsQuery", "ErrorLogsQuery", "SlowestOrdersQuery", "ModelFailuresQuery"} {
		if !names[want] {
			t.Errorf("no saved query %s", want)
		}
	}
}

// TestSlowestOrdersHaveTheirWait: the generator's lines the slowest-orders
// query sorts carry the customer's wait (wait_ms) in the call that writes
// them, not just somewhere in the code. The mailer's "mail sent" line,
// whose words are its delivery path's data, is read as it is written:
// TestEveryLineOfAnInvocationNamesItsRequestTraceAndOrder (functions/mailer).
func TestSlowestOrdersHaveTheirWait(t *testing.T) {
	root := filepath.Dir(provision.TemplatePath())
	for _, c := range []struct{ file, msg string }{
		{"functions/generator/verdict.go", "verdict stored"},
	} {
		b, err := os.ReadFile(filepath.Join(root, c.file))
		if err != nil {
			t.Fatal(err)
		}
		// The call's arguments, up to the line that closes it.
		call := regexp.MustCompile(`(?s)InfoContext\(ctx, "` + c.msg + `",.*?\)\n`).Find(b)
		if !strings.Contains(string(call), `"wait_ms"`) {
			t.Errorf("%s: the %q line has no wait_ms: %s", c.file, c.msg, call)
		}
	}
}

func TestQueryFieldsParse(t *testing.T) {
	fields, values := queryFields(`fields @timestamp, order, wait_ms
| filter msg = "mail sent" and kind = "verdict" and @message like /a|b order_x/
| stats max(wait_ms) as longest by order | sort longest desc`)
	if !slices.Equal(fields, []string{"order", "wait_ms", "msg", "kind"}) {
		t.Errorf("fields %v", fields)
	}
	if !slices.Equal(values["msg"], []string{"mail sent"}) || !slices.Equal(values["kind"], []string{"verdict"}) {
		t.Errorf("values %v", values)
	}
}
