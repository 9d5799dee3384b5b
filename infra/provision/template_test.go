package provision_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
)

// emittedMetrics returns the metric names the functions' code counts.
func emittedMetrics(t *testing.T, root string) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`\.Count\("([A-Za-z]+)"`)
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

func TestAlarmsCanFire(t *testing.T) {
	root := filepath.Dir(provision.TemplatePath())
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	known := emittedMetrics(t, root)
	alertCode, err := os.ReadFile(filepath.Join(root, "shared", "alert", "alert.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tmpl.OfType("AWS::Logs::MetricFilter") {
		if !strings.Contains(fmt.Sprint(f.Properties["FilterPattern"]), "alert_fallback") || !strings.Contains(string(alertCode), `"alert_fallback", true`) {
			t.Errorf("%s filters on something shared/alert does not write", f.LogicalID)
		}
		for _, m := range f.Properties["MetricTransformations"].([]any) {
			known[fmt.Sprint(m.(map[string]any)["MetricName"])] = true
		}
	}
	alarms := tmpl.OfType("AWS::CloudWatch::Alarm")
	if len(alarms) == 0 {
		t.Fatal("no alarms")
	}
	for _, a := range alarms {
		p := a.Properties
		if p["Namespace"] == "Oracle" && !known[fmt.Sprint(p["MetricName"])] {
			t.Errorf("%s watches Oracle/%v, which nothing emits", a.LogicalID, p["MetricName"])
		}
		if actions, _ := p["AlarmActions"].([]any); len(actions) == 0 {
			t.Errorf("%s has no action: it would notify nobody", a.LogicalID)
		}
	}
	// Alarms publish to the alerts topic only if its key lets CloudWatch in.
	topic := tmpl.Resources["AlertsTopic"].Properties
	in, ok := topic["KmsMasterKeyId"].(sam.Intrinsic)
	if !ok || in.Name != "Ref" {
		t.Fatalf("the alerts topic is not encrypted with a key of the template: %v", topic["KmsMasterKeyId"])
	}
	policy := fmt.Sprint(tmpl.Resources[fmt.Sprint(in.Arg)].Properties["KeyPolicy"])
	if !strings.Contains(policy, "cloudwatch.amazonaws.com") || !strings.Contains(policy, "kms:GenerateDataKey*") {
		t.Fatalf("the alerts key does not let CloudWatch alarms publish: %s", policy)
	}
}
