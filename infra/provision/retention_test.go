package provision_test

import (
	"fmt"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/audit"
)

// TestAuditRecordsExpireWhenTheirRetentionEnds: Object Lock only forbids
// deletion until a record's retention ends; the audit bucket's lifecycle
// rules then expire each record (its current version, and the locked
// version once it is no longer current) at AuditRetentionDays, every
// health run's record at HealthHistoryDays (by the tag the writer gives
// it), and clear the delete markers left behind.
func TestAuditRecordsExpireWhenTheirRetentionEnds(t *testing.T) {
	tmpl := loadTemplate(t)
	rules, _ := mapAt(t, tmpl.Resources["AuditBucket"].Properties, "LifecycleConfiguration")["Rules"].([]any)
	var all, history, markers map[string]any
	for _, x := range rules {
		r, _ := x.(map[string]any)
		if r["Status"] != "Enabled" {
			continue
		}
		switch {
		case r["ExpiredObjectDeleteMarker"] == "true":
			markers = r
		case r["TagFilters"] != nil:
			history = r
		case r["Prefix"] == nil && r["TagFilters"] == nil:
			all = r
		}
	}
	if all == nil || !isRef(all["ExpirationInDays"], "AuditRetentionDays") {
		t.Fatalf("no rule expires every record after AuditRetentionDays: %v", rules)
	}
	if n := fmt.Sprint(mapAt(t, all, "NoncurrentVersionExpiration")["NoncurrentDays"]); n != "1" {
		t.Errorf("the locked version of an expired record is kept %s days after it stops being current, want 1", n)
	}
	if history == nil || !isRef(history["ExpirationInDays"], "HealthHistoryDays") {
		t.Fatalf("no rule expires the health history after HealthHistoryDays: %v", rules)
	}
	tags, _ := history["TagFilters"].([]any)
	key, value, _ := strings.Cut(audit.HistoryTag, "=")
	if len(tags) != 1 || fmt.Sprint(tags[0]) != fmt.Sprint(map[string]any{"Key": key, "Value": value}) {
		t.Errorf("the health history's rule filters on %v, want the writer's tag %s", tags, audit.HistoryTag)
	}
	if n := fmt.Sprint(mapAt(t, history, "NoncurrentVersionExpiration")["NoncurrentDays"]); n != "1" {
		t.Errorf("an expired health run's version is kept %s days, want 1", n)
	}
	if markers == nil {
		t.Error("no rule removes the delete markers the expiry leaves")
	}
	for fn, vars := range map[string][]string{
		"HealthFunction": {"HEALTH_HISTORY_DAYS", "AUDIT_LOCK_MODE"},
		"OpsFunction":    {"HEALTH_HISTORY_DAYS"},
	} {
		env := mapAt(t, tmpl.Resources[fn].Properties, "Environment", "Variables")
		want := map[string]string{"HEALTH_HISTORY_DAYS": "HealthHistoryDays", "AUDIT_LOCK_MODE": "AuditLockMode"}
		for _, v := range vars {
			if !isRef(env[v], want[v]) {
				t.Errorf("%s's %s is %v, want the %s parameter", fn, v, env[v], want[v])
			}
		}
	}
	policy := fmt.Sprint(tmpl.Resources["HealthFunction"].Properties["Policies"])
	for _, action := range []string{"s3:PutObjectTagging", "s3:PutObjectRetention"} {
		if !strings.Contains(policy, action) {
			t.Errorf("the health function may not %s: its run records would be refused", action)
		}
	}
}

// TestEveryLogIsBounded: the health job's history in the logs (a line a
// run, and every function's) is kept as long as its log group's retention,
// and no longer (SPEC_ORACLE_CACHE_HEALTH failure mode 6): every function
// writes to a log group of the template, and every log group has one.
func TestEveryLogIsBounded(t *testing.T) {
	tmpl := loadTemplate(t)
	groups := map[string]bool{}
	for _, g := range tmpl.OfType("AWS::Logs::LogGroup") {
		groups[g.LogicalID] = true
		if days := fmt.Sprint(g.Properties["RetentionInDays"]); days == "" || days == "<nil>" {
			t.Errorf("log group %s keeps its lines for ever: no RetentionInDays", g.LogicalID)
		}
	}
	for _, fn := range tmpl.OfType("AWS::Serverless::Function") {
		group := mapAt(t, fn.Properties, "LoggingConfig")["LogGroup"]
		ref, ok := group.(sam.Intrinsic)
		if !ok || !isRef(group, fmt.Sprint(ref.Arg)) || !groups[fmt.Sprint(ref.Arg)] {
			t.Errorf("%s logs to %v, not to a log group of the template with a retention", fn.LogicalID, group)
		}
	}
	if len(groups) == 0 {
		t.Fatal("the template has no log group")
	}
}
