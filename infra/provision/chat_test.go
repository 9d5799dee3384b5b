package provision_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
)

// isRefTo reports whether v is {"Ref": name}.
func isRefTo(v any, name string) bool {
	switch in := v.(type) {
	case sam.Intrinsic:
		return in.Name == "Ref" && in.Arg == name
	case *sam.Intrinsic:
		return in.Name == "Ref" && in.Arg == name
	}
	return false
}

// dashboardOracleMetrics is every metric of the stack's own namespace
// (Oracle/${AWS::StackName}) the operations dashboard charts.
func dashboardOracleMetrics(t *testing.T, tmpl *sam.Template) map[string]bool {
	t.Helper()
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
	if err := json.Unmarshal([]byte(refs.ReplaceAllString(body, "ref:$1")), &dash); err != nil {
		t.Fatalf("the dashboard body is not JSON: %v", err)
	}
	charted := map[string]bool{}
	for _, w := range dash.Widgets {
		namespace := ""
		for _, row := range w.Properties.Metrics {
			if len(row) < 2 {
				continue
			}
			// "." repeats the row above's namespace.
			if ns := fmt.Sprint(row[0]); ns != "." {
				namespace = ns
			}
			if namespace == "Oracle/ref:AWS::StackName" {
				charted[fmt.Sprint(row[1])] = true
			}
		}
	}
	return charted
}

// The Sisters Chat's failures reach the operator at no idle cost: no alarm
// or metric filter of its own beyond the chat function's errors alarm.
// Every metric the chat function counts (only when a message goes
// unanswered) is charted on the dashboard; its "try again" 503s are
// answered through the public API, whose 5xx alarm hears them; its crashes
// have their alarm. The apologies and the subscription events the webhook
// cannot apply are alerts of their own (CHAT_REPLY_FILTERED,
// CHAT_SUBSCRIPTION_UNKNOWN), published as they happen.
func TestChatFailuresAreHeard(t *testing.T) {
	root := filepath.Dir(provision.TemplatePath())
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	counted := regexp.MustCompile(`\.Count\(obs\.([A-Za-z0-9]+)`)
	files, err := filepath.Glob(filepath.Join(root, "functions", "chat", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var metrics []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range counted.FindAllStringSubmatch(string(b), -1) {
			metrics = append(metrics, m[1])
		}
	}
	if len(metrics) == 0 {
		t.Fatal("the chat function counts no metric: its unanswered messages are not charted")
	}
	charted := dashboardOracleMetrics(t, tmpl)
	for _, m := range metrics {
		if !charted[m] {
			t.Errorf("the chat function counts Oracle/%s, which the dashboard does not chart", m)
		}
	}

	events, _ := tmpl.Resources["ChatFunction"].Properties["Events"].(map[string]any)
	apis := 0
	for name, e := range events {
		ev, _ := e.(map[string]any)
		if ev["Type"] != "HttpApi" {
			continue
		}
		apis++
		props, _ := ev["Properties"].(map[string]any)
		if !isRefTo(props["ApiId"], "OracleApi") {
			t.Errorf("the chat's route %s is not on OracleApi: its 5xx would not reach ApiServerErrorsAlarm", name)
		}
	}
	if apis == 0 {
		t.Error("the chat function has no route")
	}
	api := tmpl.Resources["ApiServerErrorsAlarm"].Properties
	dims, _ := api["Dimensions"].([]any)
	if api["Namespace"] != "AWS/ApiGateway" || api["MetricName"] != "5xx" || len(dims) != 1 || !isRefTo(dims[0].(map[string]any)["Value"], "OracleApi") {
		t.Errorf("ApiServerErrorsAlarm does not watch OracleApi's 5xx: %v", api)
	}
	errs := tmpl.Resources["ChatFunctionErrorsAlarm"].Properties
	dims, _ = errs["Dimensions"].([]any)
	if errs["Namespace"] != "AWS/Lambda" || errs["MetricName"] != "Errors" || len(dims) != 1 || !isRefTo(dims[0].(map[string]any)["Value"], "ChatFunction") {
		t.Errorf("ChatFunctionErrorsAlarm does not watch the chat function's errors: %v", errs)
	}
}
