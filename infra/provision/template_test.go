package provision_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/infra/testkit"
)

// emittedMetrics returns the metrics the code emits: the constants of
// shared/obs/names.go, by value, which every call site names its metric
// by (TestMetricsAreNamedInOnePlace).
func emittedMetrics(t *testing.T, root string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "shared", "obs", "names.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[strings.Trim(lit.Value, `"`)] = true
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("shared/obs/names.go names no metric")
	}
	return out
}

// stackNamespace is the namespace of the stack's own metrics, as the
// template writes it for alarms: !Sub "Oracle/${AWS::StackName}".
func stackNamespace(v any) bool {
	switch in := v.(type) {
	case sam.Intrinsic:
		return in.Name == "Fn::Sub" && in.Arg == "Oracle/${AWS::StackName}"
	case *sam.Intrinsic:
		return in.Name == "Fn::Sub" && in.Arg == "Oracle/${AWS::StackName}"
	}
	return false
}

func TestAlarmsCanFire(t *testing.T) {
	root := filepath.Dir(provision.TemplatePath())
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	known := emittedMetrics(t, root)
	alarms := tmpl.OfType("AWS::CloudWatch::Alarm")
	if len(alarms) == 0 {
		t.Fatal("no alarms")
	}
	for _, a := range alarms {
		p := a.Properties
		if stackNamespace(p["Namespace"]) && !known[fmt.Sprint(p["MetricName"])] {
			t.Errorf("%s watches %v, which nothing emits", a.LogicalID, p["MetricName"])
		}
		if ns, ok := p["Namespace"].(string); ok && !strings.HasPrefix(ns, "AWS/") {
			t.Errorf("%s watches the namespace %s, which every stack in the account shares", a.LogicalID, ns)
		}
		if actions, _ := p["AlarmActions"].([]any); len(actions) == 0 {
			t.Errorf("%s has no action: it would notify nobody", a.LogicalID)
		}
	}
	// Alarms publish to the alerts topic only if CloudWatch may use its key:
	// under the AWS-managed SNS key (alias/aws/sns), which lets CloudWatch
	// in and cannot be changed, they would fail silently. The topics have
	// no key (docs/architecture.md says why); SES publishes to the mail
	// events topic under the same rule.
	for _, topic := range tmpl.OfType("AWS::SNS::Topic") {
		if key, ok := topic.Properties["KmsMasterKeyId"]; ok {
			t.Errorf("%s is encrypted with %v: the AWS-managed key stops alarms and SES, a key of the template costs $1 a month", topic.LogicalID, key)
		}
	}
	if keys := tmpl.OfType("AWS::KMS::Key"); len(keys) != 0 {
		t.Errorf("the template makes %d KMS keys, at $1 a month each", len(keys))
	}
}

// Every alarm of the template has its line in docs/operating.md's Alarms
// table, saying what it means and what the operator does, and every line
// there names an alarm of the template.
func TestOperatingGuideListsEveryAlarm(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	listed := testkit.DocTableKeys(t, "docs/operating.md", "Alarms")
	var want []string
	for _, a := range tmpl.OfType("AWS::CloudWatch::Alarm") {
		want = append(want, a.LogicalID)
	}
	sort.Strings(listed)
	sort.Strings(want)
	if !slices.Equal(listed, want) {
		t.Errorf("docs/operating.md lists the alarms\n  %q\nthe template defines\n  %q", listed, want)
	}
}

// settingRead matches a setting code reads by name: the getters of
// shared/config and os.Getenv. A secret (Secret, or Credential: one read
// again when refused) is read as NAME_ARN (deployed) or NAME (local).
var settingRead = regexp.MustCompile(`\b(String|Optional|Int|Days|Duration|URL|List|Address|Secret|Credential|Getenv)\((?:ctx, )?"([A-Z][A-Z0-9_]*)"`)

// settingsRead returns the settings the function in dir reads: in the
// non-test Go files of its own package and of every package of this module
// it imports (shared/coldstart reads LOG_LEVEL for all of them).
func settingsRead(t *testing.T, dir string) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{if .Module}}{{if eq .Module.Path "42sisters.ai/oracle"}}{{.Dir}}{{end}}{{end}}`, ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", dir, err)
	}
	read := map[string]bool{}
	// The AWS SDK reads its endpoints' variables itself (an empty one is
	// unset): every function's config, and the SES v2 client's where linked.
	sdk := exec.Command("go", "list", "-deps", ".")
	sdk.Dir = dir
	deps, err := sdk.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", dir, err)
	}
	// Every function is a Go binary, whose runtime reads its collector's
	// settings.
	read["GOGC"], read["GOMEMLIMIT"] = true, true
	for _, pkg := range strings.Fields(string(deps)) {
		switch pkg {
		case "github.com/aws/aws-sdk-go-v2/config":
			read["AWS_ENDPOINT_URL"] = true
		case "github.com/aws/aws-sdk-go-v2/service/sesv2":
			read["AWS_ENDPOINT_URL_SESV2"] = true
		}
	}
	for _, pkg := range strings.Fields(string(out)) {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", pkg, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range settingRead.FindAllStringSubmatch(string(b), -1) {
				read[m[2]] = true
				if m[1] == "Secret" || m[1] == "Credential" {
					read[m[2]+"_ARN"] = true
				}
			}
		}
	}
	return read
}

// Every variable the template gives a function is one its code reads, every
// setting a function reads is in docs/configuration.md's table, and the
// generator's idea of the generate queue's maxReceiveCount is the queue's.
func TestTemplateSettingsAreReadAndDocumented(t *testing.T) {
	root := filepath.Dir(provision.TemplatePath())
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "\n## Settings\n")
	table, _, _ = strings.Cut(table, "\n## ")
	if table == "" {
		t.Fatal("docs/configuration.md has no Settings section")
	}
	for _, fn := range tmpl.Functions() {
		read := settingsRead(t, filepath.Join(root, fn.CodeURI))
		for name := range fn.Env {
			if !read[name] {
				t.Errorf("%s: the template sets %s, which %s never reads", fn.LogicalID, name, fn.CodeURI)
			}
		}
		var names []string
		for name := range read {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if strings.HasSuffix(name, "_ARN") && read[strings.TrimSuffix(name, "_ARN")] {
				continue // a secret: its _ARN form is what the table names
			}
			// A secret is documented by its _ARN form, how it is deployed.
			if !strings.Contains(table, "`"+name+"`") && !(read[name+"_ARN"] && strings.Contains(table, "`"+name+"_ARN`")) {
				t.Errorf("%s reads %s, which docs/configuration.md's settings table does not name", fn.CodeURI, name)
			}
		}
		if fn.LogicalID != "GeneratorFunction" {
			continue
		}
		if len(fn.Queues) != 1 {
			t.Fatalf("the generator consumes %d queues, want 1", len(fn.Queues))
		}
		queue := tmpl.Resources[fn.Queues[0].QueueLogicalID].Properties
		redrive, _ := queue["RedrivePolicy"].(map[string]any)
		if got, want := fmt.Sprint(fn.Env["GENERATE_MAX_RECEIVES"]), fmt.Sprint(redrive["maxReceiveCount"]); got != want {
			t.Errorf("GENERATE_MAX_RECEIVES is %s but %s's maxReceiveCount is %s: the generator would mark orders FAILED too early or never", got, fn.Queues[0].QueueLogicalID, want)
		}
	}
}

// The dashboard's body is JSON once CloudFormation substitutes its
// references, and it charts every function's errors and duration.
func TestDashboardChartsEveryFunction(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	var body string
	switch v := tmpl.Resources["OperationsDashboard"].Properties["DashboardBody"].(type) {
	case sam.Intrinsic:
		body, _ = v.Arg.(string)
	case *sam.Intrinsic:
		body, _ = v.Arg.(string)
	}
	var dash struct {
		Widgets []struct {
			Properties struct{ Metrics [][]any } `json:"properties"`
		} `json:"widgets"`
	}
	refs := regexp.MustCompile(`\$\{([A-Za-z0-9:.]+)\}`)
	if err := json.Unmarshal([]byte(refs.ReplaceAllString(body, "ref:$1")), &dash); err != nil || len(dash.Widgets) == 0 {
		t.Fatalf("the dashboard body is not JSON with widgets: %v\n%s", err, body)
	}
	// Each Lambda chart names its metric in its first row; the rows after
	// it ("...") repeat it for other functions.
	charted := map[string]bool{} // "Errors ref:WebhookFunction"
	for _, w := range dash.Widgets {
		rows := w.Properties.Metrics
		if len(rows) == 0 || len(rows[0]) < 2 || rows[0][0] != "AWS/Lambda" {
			continue
		}
		for _, row := range rows {
			for _, v := range row {
				if ref, ok := v.(string); ok && strings.HasPrefix(ref, "ref:") {
					charted[fmt.Sprint(rows[0][1])+" "+ref] = true
				}
			}
		}
	}
	for _, fn := range tmpl.Functions() {
		for _, metric := range []string{"Errors", "Duration"} {
			if !charted[metric+" ref:"+fn.LogicalID] {
				t.Errorf("the dashboard has no %s chart for %s", metric, fn.LogicalID)
			}
		}
	}
}

// TestTheSmokeTestIsScheduledAndWatched: the smoke function runs daily at
// 07:00 UTC, one run at a time, within the three minutes its thirteen
// stages may take; an alarm fires when no run has passed for 26 hours, a
// run that never happened included; and its role may delete orders but
// not write them, scan them or touch the queues, and in the chat table may
// only put sign-in tokens and delete accounts' items.
func TestTheSmokeTestIsScheduledAndWatched(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	var fn *sam.Function
	for _, f := range tmpl.Functions() {
		if f.LogicalID == "SmokeFunction" {
			fn = &f
		}
	}
	if fn == nil {
		t.Fatal("no SmokeFunction")
	}
	if len(fn.Schedules) != 1 || fmt.Sprint(fn.Schedules[0].Expression) != "cron(0 7 * * ? *)" {
		t.Errorf("schedules %+v, want one daily at 07:00 UTC", fn.Schedules)
	}
	props := tmpl.Resources["SmokeFunction"].Properties
	if fn.Timeout != 180 || fmt.Sprint(props["ReservedConcurrentExecutions"]) != "1" {
		t.Errorf("timeout %d s, reserved concurrency %v; want 180 and 1", fn.Timeout, props["ReservedConcurrentExecutions"])
	}
	a := tmpl.Resources["SmokeMissingPassAlarm"].Properties
	window := atoiT(t, a["Period"]) * atoiT(t, a["EvaluationPeriods"])
	if a["MetricName"] != "SmokePassed" || a["Statistic"] != "Maximum" || a["ComparisonOperator"] != "LessThanThreshold" ||
		fmt.Sprint(a["Threshold"]) != "1" || a["TreatMissingData"] != "breaching" || window != 26*3600 || fmt.Sprint(a["DatapointsToAlarm"]) != fmt.Sprint(a["EvaluationPeriods"]) {
		t.Errorf("SmokeMissingPassAlarm %v, want no pass in 26 h (missing data breaching)", a)
	}
	policy, err := json.Marshal(props["Policies"])
	if err != nil {
		t.Fatal(err)
	}
	for _, forbidden := range []string{"dynamodb:PutItem\",\"dynamodb:DeleteItem", "dynamodb:Scan", "dynamodb:UpdateItem", "sqs:", "s3:PutObject", "s3:DeleteObject"} {
		if strings.Contains(string(policy), forbidden) {
			t.Errorf("the smoke function's policy allows %s: %s", forbidden, policy)
		}
	}
	// Only what AWS grants account-wide is granted on every resource.
	for _, m := range regexp.MustCompile(`\{"Action":(\[[^\]]*\]),"Effect":"Allow","Resource":"\*"`).FindAllStringSubmatch(string(policy), -1) {
		if m[1] != `["ses:GetAccount"]` {
			t.Errorf("the smoke function may %s on every resource", m[1])
		}
	}
	if !strings.Contains(string(policy), `{"Action":["dynamodb:GetItem","dynamodb:DeleteItem"],"Effect":"Allow","Resource":{"Name":"Fn::GetAtt","Arg":["OrdersTable","Arn"]}`) {
		t.Errorf("the smoke function may not read and delete its order: %s", policy)
	}
	chat := 0
	for _, m := range regexp.MustCompile(`\{"Action":(\[[^\]]*\])(,"Condition":\{[^}]*\}\})?,"Effect":"Allow","Resource":\{"Name":"Fn::GetAtt","Arg":\["ChatTable","Arn"\]\}`).FindAllStringSubmatch(string(policy), -1) {
		chat++
		switch m[1] + m[2] {
		case `["dynamodb:PutItem"],"Condition":{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["signin#*"]}}`,
			`["dynamodb:GetItem","dynamodb:DeleteItem"],"Condition":{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["acct#*"]}}`,
			`["dynamodb:DeleteItem"],"Condition":{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["trial#*"]}}`:
		default:
			t.Errorf("the smoke function may %s%s on the chat table", m[1], m[2])
		}
	}
	if chat != 3 {
		t.Errorf("%d statements on the chat table, want the sign-in token's, the account's and its trial's: %s", chat, policy)
	}
}

func atoiT(t *testing.T, v any) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(fmt.Sprint(v), &n); err != nil {
		t.Fatalf("%v is not a number", v)
	}
	return n
}

// TestAlertFallbacksAreHeardWithoutFilters: an alert SNS refused is a log
// line and an AlertFallback metric line (shared/alert), whichever function
// raised it; AlertFallbackAlarm watches that metric in the stack's
// namespace. No metric filter is left: each published a figure on every
// log event, billed idle.
func TestAlertFallbacksAreHeardWithoutFilters(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tmpl.OfType("AWS::Logs::MetricFilter") {
		t.Errorf("%s: a metric filter bills its metric on every log event; emit the figure from the code", f.LogicalID)
	}
	a := tmpl.Resources["AlertFallbackAlarm"].Properties
	if !stackNamespace(a["Namespace"]) || a["MetricName"] != "AlertFallback" || a["Statistic"] != "Sum" || fmt.Sprint(a["Threshold"]) != "0" {
		t.Errorf("AlertFallbackAlarm does not fire on one AlertFallback of the stack: %v", a)
	}
}

// Every dead letter ends on the one queue the deadletter function drains
// (the source queues' redrive and the inbox function's on-failure
// destination), and every queue it drains has an alarm that fires
// when the queue does not drain: its messages waiting and in flight,
// summed, above zero for 15 minutes on end, to the alerts topic. The
// function's own alerts say nothing when it is the function that fails.
func TestEveryDrainedQueueHasAnAlarm(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	obj := func(v any) map[string]any { m, _ := v.(map[string]any); return m }
	watched := map[string]string{} // queue -> its alarm
	for _, a := range tmpl.OfType("AWS::CloudWatch::Alarm") {
		p := a.Properties
		metrics := map[string]string{} // metric name -> queue
		ms, _ := p["Metrics"].([]any)  // nil for an alarm on one metric
		for _, m := range ms {
			metric := obj(obj(obj(m)["MetricStat"])["Metric"])
			dims, _ := metric["Dimensions"].([]any)
			for _, d := range dims {
				in, ok := obj(d)["Value"].(sam.Intrinsic)
				if parts, _ := in.Arg.([]any); ok && obj(d)["Name"] == "QueueName" && in.Name == "Fn::GetAtt" && len(parts) == 2 {
					metrics[fmt.Sprint(metric["MetricName"])] = fmt.Sprint(parts[0])
				}
			}
		}
		q := metrics["ApproximateNumberOfMessagesVisible"]
		if q == "" || metrics["ApproximateNumberOfMessagesNotVisible"] != q {
			continue
		}
		if fmt.Sprintf("%v %v %v %v", p["EvaluationPeriods"], p["DatapointsToAlarm"], p["Threshold"], p["ComparisonOperator"]) != "15 15 0 GreaterThanThreshold" ||
			!strings.Contains(fmt.Sprint(p["AlarmActions"]), "AlertsTopic") {
			t.Errorf("%s watches %s but not as the others do (held 15 minutes, to the alerts topic)", a.LogicalID, q)
		}
		watched[q] = a.LogicalID
	}
	var drained []string
	for _, fn := range tmpl.Functions() {
		if fn.LogicalID == "DeadLetterFunction" {
			for _, q := range fn.Queues {
				drained = append(drained, q.QueueLogicalID)
			}
		}
	}
	// What ends on a dead-letter queue: each source queue's redrive, and
	// the inbox function's on-failure destination.
	ends := map[string]bool{}
	for _, fn := range tmpl.Functions() {
		if fn.Async.OnFailureQueue != "" {
			ends[fn.Async.OnFailureQueue] = true
		}
	}
	for _, r := range tmpl.OfType("AWS::SQS::Queue") {
		if target, ok := obj(r.Properties["RedrivePolicy"])["deadLetterTargetArn"].(sam.Intrinsic); ok {
			parts, _ := target.Arg.([]any)
			if len(parts) == 2 {
				ends[fmt.Sprint(parts[0])] = true
			}
		}
	}
	if !ends["DeadLetterQueue"] || len(ends) != 1 {
		t.Errorf("dead letters end on %v; want every source's on DeadLetterQueue alone, one event source's idle pollers", ends)
	}
	for q := range ends {
		if !slices.Contains(drained, q) {
			t.Errorf("the deadletter function drains %q, not %s", drained, q)
		}
	}
	for _, q := range drained {
		if watched[q] == "" {
			t.Errorf("no alarm watches %s, which the deadletter function drains: a failing function leaves it silent", q)
		}
	}
}

// Each function's collector settings read as the Go runtime reads them, and
// its soft memory limit leaves Lambda's memory room for what is not heap
// (stacks, the runtime, the binary): between 60 and 80 % of MemorySize.
func TestGCSettingsFitTheMemory(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range tmpl.Functions() {
		gogc, limit, err := provision.GCSettings(fn)
		if err != nil {
			t.Error(err)
			continue
		}
		memory := int64(fn.MemorySize) << 20
		if limit > memory*8/10 || limit < memory*6/10 {
			t.Errorf("%s: GOMEMLIMIT %d MiB of its %d MB", fn.LogicalID, limit>>20, fn.MemorySize)
		}
		if gogc < 100 {
			t.Errorf("%s: GOGC %d, below the default", fn.LogicalID, gogc)
		}
	}
	for _, bad := range []string{"200MB", "-1", "", "MiB"} {
		if _, err := provision.MemoryLimit(bad); err == nil {
			t.Errorf("GOMEMLIMIT %q accepted", bad)
		}
	}
	if n, err := provision.MemoryLimit("200MiB"); err != nil || n != 200<<20 {
		t.Errorf("200MiB read as %d, %v", n, err)
	}
}

// TestStrangersWritesAreThrottledApart: every route on which an anonymous
// caller makes the service write or spend (a Checkout Session, a sign-in
// account and its email, an x402 payment's check, count or record) has a
// throttle of its own below the API's default, so a flood of one cannot
// take the whole API's rate, and is bounded by more than Lambda's
// concurrency.
func TestStrangersWritesAreThrottledApart(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	api := tmpl.Resources["OracleApi"].Properties
	routes, _ := api["RouteSettings"].(map[string]any)
	values := &sam.Values{}
	defaults, _ := api["DefaultRouteSettings"].(map[string]any)
	apiRate, err := tmpl.ResolveInt(defaults["ThrottlingRateLimit"], values)
	if err != nil {
		t.Fatal(err)
	}
	for _, route := range []string{"POST /api/checkout", "POST /api/chat/signin",
		"POST /x402/query", "POST /x402/query/full", "POST /x402/query/premium",
		"OPTIONS /x402/query", "OPTIONS /x402/query/full", "OPTIONS /x402/query/premium", "POST /mcp", "GET /mcp"} {
		settings, ok := routes[route].(map[string]any)
		if !ok {
			t.Errorf("%s has no throttle of its own", route)
			continue
		}
		rate, err := tmpl.ResolveInt(settings["ThrottlingRateLimit"], values)
		if err != nil || rate < 1 || rate >= apiRate {
			t.Errorf("%s: rate %d %v, want at least 1 and below the API's %d", route, rate, err, apiRate)
		}
		if burst, err := tmpl.ResolveInt(settings["ThrottlingBurstLimit"], values); err != nil || burst < rate {
			t.Errorf("%s: burst %d %v, want at least its rate %d", route, burst, err, rate)
		}
	}
}
