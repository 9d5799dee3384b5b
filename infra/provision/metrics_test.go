package provision_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/awsenv"
)

// Every metric the code emits is on the dashboard, and the dashboard
// charts no metric of the stack's namespace that nothing emits.
func TestEveryEmittedMetricIsCharted(t *testing.T) {
	root := filepath.Dir(provision.TemplatePath())
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	emitted, charted := emittedMetrics(t, root), dashboardOracleMetrics(t, tmpl)
	for _, name := range sortedKeys(emitted) {
		if !charted[name] {
			t.Errorf("the code emits %s, which the dashboard does not chart", name)
		}
	}
	for _, name := range sortedKeys(charted) {
		if !emitted[name] {
			t.Errorf("the dashboard charts %s, which nothing emits", name)
		}
	}
}

// metricCall is a metric named at its call site by a string rather than
// by a constant of shared/obs/names.go.
var metricCall = regexp.MustCompile(`\.(Count|Gauge)\("|Metrics\.Duration\("|(Figure|sqsbatch\.Failures)\{[^}]*Name: "`)

// Every call site names its metric by a constant of shared/obs/names.go,
// so that list is what the code emits; and each constant is emitted
// somewhere.
func TestMetricsAreNamedInOnePlace(t *testing.T) {
	root := filepath.Dir(provision.TemplatePath())
	names := metricConstants(t, root)
	var code strings.Builder
	for _, dir := range []string{"shared", "functions"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, filepath.Join("obs", "names.go")) {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range metricCall.FindAll(b, -1) {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s names a metric by a string (%s): name it in shared/obs/names.go", rel, m)
			}
			if strings.HasSuffix(p, filepath.Join("shared", "obs", "metrics.go")) {
				b = regexp.MustCompile(`\bName: ([A-Z])`).ReplaceAll(b, []byte("Name: obs.$1"))
			}
			code.Write(b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		if !regexp.MustCompile(`\bobs\.` + name + `\b`).MatchString(code.String()) {
			t.Errorf("obs.%s is never emitted: drop it (and its chart), or emit it", name)
		}
	}
}

// metricConstants are the identifiers of shared/obs/names.go's constants.
func metricConstants(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "shared", "obs", "names.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\t([A-Z][A-Za-z0-9]*)\s+= "`).FindAllSubmatch(b, -1) {
		out = append(out, string(m[1]))
	}
	if len(out) != len(emittedMetrics(t, root)) {
		t.Fatalf("read %d constants of names.go, parsed %d", len(out), len(emittedMetrics(t, root)))
	}
	return out
}

// TestTwoStacksShareNoAlarm deploys the template twice into one moto
// account, as a production and a staging stack whose names one prefixes
// the other's: every function of each emits into its own stack's
// namespace, and no metric (namespace, name and dimensions) is watched
// by an alarm of both.
func TestTwoStacksShareNoAlarm(t *testing.T) {
	cfg := awsenv.ForEndpoint(motoserver.ForTest(t), provision.TestRegion)
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	watched := map[string]map[string]bool{} // stack -> watched metrics
	for _, name := range []string{"oracle", "oracle-staging"} {
		prefix := "t" + hex.EncodeToString(b) + "-" + name + "-"
		st, err := provision.Provision(context.Background(), provision.Options{Template: tmpl, AWS: cfg, Prefix: prefix, StackName: name, Alarms: true,
			Params: map[string]string{"BaseUrl": "http://localhost:3000", "AllowedOrigins": "http://localhost:3000"}})
		if err != nil {
			t.Fatal(err)
		}
		namespace := "Oracle/" + name
		for _, fn := range tmpl.Functions() {
			env, err := st.Env(fn)
			if err != nil {
				t.Fatal(err)
			}
			// Pages emits no metric (TestTemplateSettingsAreReadAndDocumented
			// holds that it is given no namespace).
			if got, ok := env["METRICS_NAMESPACE"]; (ok || fn.LogicalID != "PagesFunction") && got != namespace {
				t.Errorf("%s of %s emits into %q, want %q", fn.LogicalID, name, got, namespace)
			}
		}
		alarms, err := provision.Alarms(context.Background(), cfg, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(alarms) != len(tmpl.OfType("AWS::CloudWatch::Alarm")) {
			t.Fatalf("%s: %d alarms in moto, the template has %d", name, len(alarms), len(tmpl.OfType("AWS::CloudWatch::Alarm")))
		}
		watched[name] = map[string]bool{}
		for _, a := range alarms {
			metrics := a.Watched()
			if len(metrics) == 0 {
				t.Errorf("%s watches no metric", a.Name)
			}
			for _, m := range metrics {
				if strings.HasPrefix(m, "Oracle") && !strings.HasPrefix(m, namespace+" ") {
					t.Errorf("%s watches %s, outside its stack's namespace %s", a.Name, m, namespace)
				}
				watched[name][m] = true
			}
		}
		own := 0
		for m := range watched[name] {
			if strings.HasPrefix(m, namespace+" ") {
				own++
			}
		}
		if own == 0 {
			t.Errorf("%s: no alarm watches the stack's own figures", name)
		}
		t.Logf("%s: %d alarms watch %d metrics, %d of them in %s", name, len(alarms), len(watched[name]), own, namespace)
	}
	for m := range watched["oracle"] {
		if watched["oracle-staging"][m] {
			t.Errorf("both stacks alarm on %s: one stack's figure would fire the other's alarm", m)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The dashboard costs $3 a month past the account's three free ones, more
// than the rest of the idle CloudWatch bill: it is made only with
// Dashboard=true, off by default, and its output only with it.
func TestTheDashboardIsOptional(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	dashboards := tmpl.OfType("AWS::CloudWatch::Dashboard")
	if len(dashboards) != 1 || dashboards[0].Condition == "" {
		t.Fatalf("dashboards %+v, want one under a condition", dashboards)
	}
	for value, made := range map[string]bool{"": false, "false": false, "true": true} {
		params := map[string]string{}
		if value != "" {
			params["Dashboard"] = value
		}
		ok, err := tmpl.Condition(dashboards[0].Condition, &sam.Values{Params: params})
		if err != nil || ok != made {
			t.Errorf("Dashboard=%q: made %v (%v), want %v", value, ok, err, made)
		}
	}
	out, err := os.ReadFile(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^  DashboardName:\n    Condition: ` + dashboards[0].Condition + `\n`).Match(out) {
		t.Error("the DashboardName output is not under the dashboard's condition")
	}
}
