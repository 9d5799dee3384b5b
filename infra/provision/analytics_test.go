package provision_test

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/audit"
)

// hiveType is the Athena (Hive DDL) type of a Go type as encoding/json
// writes it: times are RFC 3339 strings, named strings are strings, nested
// structs are struct<…> of their JSON fields.
func hiveType(t *testing.T, typ reflect.Type) string {
	t.Helper()
	if typ == reflect.TypeFor[time.Time]() {
		return "string"
	}
	switch typ.Kind() {
	case reflect.Pointer:
		return hiveType(t, typ.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int32:
		return "int"
	case reflect.Int64:
		return "bigint"
	case reflect.Float64:
		return "double"
	case reflect.Slice:
		return "array<" + hiveType(t, typ.Elem()) + ">"
	case reflect.Struct:
		var fields []string
		for _, c := range jsonColumns(t, typ) {
			fields = append(fields, c.name+":"+c.typ)
		}
		return "struct<" + strings.Join(fields, ",") + ">"
	}
	t.Fatalf("no Athena type for %s", typ)
	return ""
}

type column struct{ name, typ string }

// jsonColumns are the JSON fields of a struct type, in its order.
func jsonColumns(t *testing.T, typ reflect.Type) []column {
	t.Helper()
	var out []column
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, column{name, hiveType(t, f.Type)})
	}
	return out
}

func loadTemplate(t *testing.T) *sam.Template {
	t.Helper()
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func mapAt(t *testing.T, m map[string]any, keys ...string) map[string]any {
	t.Helper()
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			t.Fatalf("no mapping %s in %v", k, m)
		}
		m = next
	}
	return m
}

func isRef(v any, logicalID string) bool {
	in, ok := v.(sam.Intrinsic)
	return ok && in.Name == "Ref" && in.Arg == logicalID
}

// TestAuditTableIsTheRecord: the Athena table over the audit bucket has
// audit.Record's JSON fields as its columns, with their types, nested
// records as structs; it is partitioned as audit.Key writes the keys, and
// its projection knows every source the audit package has.
func TestAuditTableIsTheRecord(t *testing.T) {
	tmpl := loadTemplate(t)
	table, ok := tmpl.Resources["AuditRecordsTable"]
	if !ok || table.Type != "AWS::Glue::Table" {
		t.Fatal("the template has no AuditRecordsTable (AWS::Glue::Table)")
	}
	if !isRef(table.Properties["DatabaseName"], "AuditDatabase") {
		t.Errorf("the table is not in AuditDatabase: %v", table.Properties["DatabaseName"])
	}
	in := mapAt(t, table.Properties, "TableInput")
	sd := mapAt(t, in, "StorageDescriptor")

	var got []column
	for _, c := range sd["Columns"].([]any) {
		m := c.(map[string]any)
		got = append(got, column{fmt.Sprint(m["Name"]), fmt.Sprint(m["Type"])})
	}
	want := jsonColumns(t, reflect.TypeFor[audit.Record]())
	if !slices.Equal(got, want) {
		var b strings.Builder
		for _, c := range want {
			fmt.Fprintf(&b, "\n  %s %s", c.name, c.typ)
		}
		t.Errorf("the table's columns\n  %v\nare not audit.Record's JSON fields:%s", got, b.String())
	}
	if serde := mapAt(t, sd, "SerdeInfo")["SerializationLibrary"]; serde != "org.openx.data.jsonserde.JsonSerDe" {
		t.Errorf("SerDe %v, want the OpenX JSON SerDe", serde)
	}

	// The partitions are the keys' date= and source= parts, under names no
	// column has.
	var keys []string
	for _, k := range in["PartitionKeys"].([]any) {
		keys = append(keys, fmt.Sprint(k.(map[string]any)["Name"]))
	}
	if !slices.Equal(keys, []string{"date", "source_partition"}) {
		t.Fatalf("partition keys %v, want date and source_partition", keys)
	}
	for _, c := range got {
		if slices.Contains(keys, c.name) {
			t.Errorf("the partition key %s repeats a column: Athena refuses the table", c.name)
		}
	}
	p := mapAt(t, in, "Parameters")
	for k, v := range map[string]string{
		"projection.enabled": "true", "projection.date.type": "date", "projection.date.format": "yyyy-MM-dd",
		"projection.date.interval": "1", "projection.date.interval.unit": "DAYS", "projection.source_partition.type": "enum",
	} {
		if fmt.Sprint(p[k]) != v {
			t.Errorf("%s is %v, want %s", k, p[k], v)
		}
	}
	start, end, _ := strings.Cut(fmt.Sprint(p["projection.date.range"]), ",")
	if _, err := time.Parse("2006-01-02", start); err != nil || end != "NOW" {
		t.Errorf("projection.date.range %v, want a start day and NOW", p["projection.date.range"])
	}
	var sources []string
	for _, s := range audit.Sources() {
		sources = append(sources, string(s))
	}
	if got := strings.Split(fmt.Sprint(p["projection.source_partition.values"]), ","); !slices.Equal(got, sources) {
		t.Errorf("the source projection is %v, the audit package's sources %v", got, sources)
	}

	// The location template, filled in, is the folder audit.Key writes a
	// record of that day and source to.
	v := &sam.Values{Refs: map[string]string{"AuditBucket": "audit-bucket"}}
	loc, err := tmpl.ResolveString(p["storage.location.template"], v)
	if err != nil {
		t.Fatal(err)
	}
	root, err := tmpl.ResolveString(sd["Location"], v)
	if err != nil || root != "s3://audit-bucket/records/" {
		t.Errorf("location %q (%v), want the records/ prefix", root, err)
	}
	day := time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC)
	for _, src := range audit.Sources() {
		filled := strings.NewReplacer("${date}", day.Format("2006-01-02"), "${source_partition}", string(src)).Replace(loc)
		key := audit.Key(audit.Record{SessionCreated: day, Source: src}, "cs_test_x.paid")
		if want := "s3://audit-bucket/" + path.Dir(key) + "/"; filled != want {
			t.Errorf("the location template gives %q for %s, the key is under %q", filled, src, want)
		}
	}
}

// The named queries, one per figure of shared/auditfigures.
var figureQueries = []string{
	"CacheHitRatioQuery", "ChatExchangesQuery", "ChatRecurringRevenueQuery", "ChatSubscriptionsQuery", "ContentFilterQuery", "CrosscheckRejectionRateQuery", "CustomerWaitQuery", "DivergenceRateQuery", "EmailFailureRateQuery", "ErrorDetailCoverageQuery",
	"PaidSessionsQuery", "RevenueQuery", "TopErrorPatternsQuery", "WebhookLatencyQuery", "X402ByEndpointQuery", "X402LatencyQuery", "X402OutcomesQuery",
}

// TestNamedQueriesAreTheFigures: every named query runs in the audit
// workgroup against the audit database, reads the table only within the
// range it is given, and leaves the smoke test's records out wherever it
// reads it; the revenue counts live mode only, card and agent apart.
func TestNamedQueriesAreTheFigures(t *testing.T) {
	tmpl := loadTemplate(t)
	var names []string
	for _, q := range tmpl.OfType("AWS::Athena::NamedQuery") {
		names = append(names, q.LogicalID)
		p := q.Properties
		if !isRef(p["WorkGroup"], "AuditWorkgroup") || !isRef(p["Database"], "AuditDatabase") {
			t.Errorf("%s runs in workgroup %v, database %v; want AuditWorkgroup and AuditDatabase", q.LogicalID, p["WorkGroup"], p["Database"])
		}
		text, ok := p["QueryString"].(string)
		if !ok {
			t.Errorf("%s: the query is not plain text: %v", q.LogicalID, p["QueryString"])
			continue
		}
		reads := strings.Count(text, "FROM audit_records")
		if reads == 0 {
			t.Errorf("%s does not read audit_records", q.LogicalID)
		}
		if n := strings.Count(text, "coalesce(smoke, false) = false"); n != reads {
			t.Errorf("%s reads the table %d times but leaves smoke records out %d times:\n%s", q.LogicalID, reads, n, text)
		}
		if n := strings.Count(text, `"date" BETWEEN ? AND ?`); n != reads {
			t.Errorf("%s reads the table %d times but bounds the days %d times:\n%s", q.LogicalID, reads, n, text)
		}
		if strings.Count(text, "?") != 2*reads {
			t.Errorf("%s takes parameters other than the range:\n%s", q.LogicalID, text)
		}
		if q.LogicalID == "RevenueQuery" && !strings.Contains(text, "AND livemode = true") {
			t.Errorf("the revenue query counts test-mode sessions:\n%s", text)
		}
		if q.LogicalID == "RevenueQuery" && !strings.Contains(text, "GROUP BY GROUPING SETS ((day, tier, rail, currency), (rail, currency))") {
			t.Errorf("the revenue query does not keep the rails apart:\n%s", text)
		}
	}
	if !slices.Equal(names, figureQueries) {
		t.Errorf("named queries %v, want %v", names, figureQueries)
	}
}

// TestAuditWorkgroupIsBounded: every query of the workgroup uses its
// settings, is cancelled past the scan limit and writes its results,
// encrypted, to a private bucket that forgets them, never the audit log's.
func TestAuditWorkgroupIsBounded(t *testing.T) {
	tmpl := loadTemplate(t)
	wg, ok := tmpl.Resources["AuditWorkgroup"]
	if !ok || wg.Type != "AWS::Athena::WorkGroup" {
		t.Fatal("the template has no AuditWorkgroup (AWS::Athena::WorkGroup)")
	}
	cfg := mapAt(t, wg.Properties, "WorkGroupConfiguration")
	if cfg["EnforceWorkGroupConfiguration"] != "true" || !isRef(cfg["BytesScannedCutoffPerQuery"], "AuditQueryScanLimitBytes") {
		t.Errorf("workgroup configuration %v: want it enforced, with the scan limit parameter as the cutoff", cfg)
	}
	res := mapAt(t, cfg, "ResultConfiguration")
	out, _ := res["OutputLocation"].(sam.Intrinsic)
	if s, _ := out.Arg.(string); out.Name != "Fn::Sub" || !strings.HasPrefix(s, "s3://${AuditQueryResultsBucket}/") {
		t.Errorf("results go to %v, want the AuditQueryResultsBucket", res["OutputLocation"])
	}
	if mapAt(t, res, "EncryptionConfiguration")["EncryptionOption"] == nil {
		t.Error("query results are not encrypted")
	}
	b := tmpl.Resources["AuditQueryResultsBucket"].Properties
	rules, _ := mapAt(t, b, "LifecycleConfiguration")["Rules"].([]any)
	if len(rules) == 0 || rules[0].(map[string]any)["ExpirationInDays"] == nil {
		t.Error("the results bucket keeps query results for ever")
	}
	if len(mapAt(t, b, "BucketEncryption")) == 0 || fmt.Sprint(mapAt(t, b, "PublicAccessBlockConfiguration")) != "map[BlockPublicAcls:true BlockPublicPolicy:true IgnorePublicAcls:true RestrictPublicBuckets:true]" {
		t.Errorf("the results bucket is not encrypted and private: %v", b)
	}
	if b["ObjectLockEnabled"] != nil {
		t.Error("the results bucket locks its objects: results could never expire")
	}
}
