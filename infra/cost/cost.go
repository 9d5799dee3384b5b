package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"42sisters.ai/oracle/infra/local/schedule"
	"42sisters.ai/oracle/infra/sam"
)

// report is what the burst test writes (ORACLE_BURST_FIGURES): each run's
// measured invocations and AWS requests.
type report struct {
	Form string        `json:"form"`
	Runs []measuredRun `json:"runs"`
}

type measuredRun struct {
	Name      string                   `json:"name"`
	Orders    int                      `json:"orders"`
	Emails    int                      `json:"emails"`
	Functions map[string]functionStats `json:"functions"`
	AWS       usage                    `json:"aws"`
	LogBytes  int                      `json:"log_bytes"`
	Seconds   float64                  `json:"seconds"`
}

// functionStats are runtimeapi.Stats as the test wrote them.
type functionStats struct {
	Invocations  int64
	BilledMS     int64
	MemoryMB     int
	Environments int64
}

type usage struct {
	Operations map[string]requests `json:"operations"`
	WriteUnits float64             `json:"write_units"`
}

type requests struct {
	Count        int64   `json:"count"`
	RequestBytes int64   `json:"request_bytes"`
	SQSChunks    int64   `json:"sqs_chunks"`
	ReadUnits    float64 `json:"read_units"`
}

// line is one priced input: quantity times unit price.
type line struct {
	What     string
	Quantity float64
	Unit     string
	Price    float64
}

func (l line) cost() float64 { return l.Quantity * l.Price }

func total(lines []line) float64 {
	sum := 0.0
	for _, l := range lines {
		sum += l.cost()
	}
	return sum
}

// S3 operations billed at the PUT rate; the rest of S3's are GET-rate.
var s3PutClass = map[string]bool{"PutObject": true, "CopyObject": true, "ListObjectsV2": true, "POSTBucket": true, "PUTBucket": true}

// runLines prices everything a run used: every invocation and its
// duration, each function reached through the HTTP API (routed) as an API
// request, every metered AWS request, each email, the bytes logged, a
// trace per invocation, and the S3 storage of what the run wrote for the
// audit log's retention (retentionDays). It returns the operations it has
// no price for (free ones such as SSM standard parameters, or ones this
// tool does not know), with their counts.
//
// Lambda's SQS pollers receive and delete the batches (the local stack's
// poller does, unmetered): one receive and one delete per invocation of a
// queue-triggered function (in queued). SES publishes its events to SNS,
// for the feedback function: one publish per feedback invocation.
func runLines(r measuredRun, routed, queued map[string]bool, retentionDays int) (lines []line, unpriced []string) {
	var invocations int64
	names := make([]string, 0, len(r.Functions))
	for name := range r.Functions {
		names = append(names, name)
	}
	sort.Strings(names)
	var apiRequests, batches int64
	for _, name := range names {
		f := r.Functions[name]
		if f.Invocations == 0 {
			continue
		}
		invocations += f.Invocations
		gbs := float64(f.BilledMS) / 1000 * float64(f.MemoryMB) / 1024
		lines = append(lines, line{fmt.Sprintf("Lambda %s: %d invocations, %d ms billed at %d MB", name, f.Invocations, f.BilledMS, f.MemoryMB), gbs, "GB-s", lambdaPerGBSecondArm})
		if routed[name] {
			apiRequests += f.Invocations
		}
		if queued[name] {
			batches += f.Invocations
		}
	}
	lines = append(lines, line{"Lambda requests", float64(invocations), "requests", lambdaPerRequest})
	if apiRequests > 0 {
		lines = append(lines, line{"HTTP API requests (the routed functions' invocations)", float64(apiRequests), "requests", httpAPIPerRequest})
	}
	var reads float64
	sqsChunks, publishes := 2*batches, r.Functions["FeedbackFunction"].Invocations
	var s3Puts, s3Gets, secretCalls, kmsCalls, putBytes int64
	ops := make([]string, 0, len(r.AWS.Operations))
	for op := range r.AWS.Operations {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		req := r.AWS.Operations[op]
		service, name, _ := strings.Cut(op, ".")
		switch {
		case service == "dynamodb":
			reads += req.ReadUnits
		case service == "sqs":
			sqsChunks += req.SQSChunks
		case service == "s3" && s3PutClass[name]:
			s3Puts += req.Count
			if name == "PutObject" {
				putBytes += req.RequestBytes
			}
		case service == "s3":
			s3Gets += req.Count
		case service == "sns" && name == "Publish":
			publishes += req.Count
		case service == "secretsmanager":
			secretCalls += req.Count
		case service == "kms":
			kmsCalls += req.Count
		default:
			unpriced = append(unpriced, fmt.Sprintf("%s (%d)", op, req.Count))
		}
	}
	lines = append(lines,
		line{"DynamoDB reads (strongly consistent, 4 KB units)", reads, "RRU", dynamoPerReadUnit},
		line{"DynamoDB writes (1 KB units, updates at the item's final size)", r.AWS.WriteUnits, "WRU", dynamoPerWriteUnit},
		line{"SQS requests (64 KB chunks; the event sources' receive and delete per batch)", float64(sqsChunks), "requests", sqsPerRequest},
		line{"S3 PUT-class requests", float64(s3Puts), "requests", s3PerPut},
		line{"S3 GET-class requests", float64(s3Gets), "requests", s3PerGet},
		line{"SNS publishes (SES's events for the feedback function included)", float64(publishes), "requests", snsPerPublish},
		line{"SES emails", float64(r.Emails), "messages", sesPerMessage},
		line{"Secrets Manager calls (cold starts)", float64(secretCalls), "requests", secretsPerCall},
		line{"KMS requests", float64(kmsCalls), "requests", kmsPerRequest},
		line{"CloudWatch Logs ingested", float64(r.LogBytes) / 1e9, "GB", logsPerGB},
		line{"X-Ray traces (every invocation: an upper bound)", float64(invocations), "traces", xrayPerTrace},
		line{fmt.Sprintf("S3 storage of what was put, for the audit retention (%d days)", retentionDays), float64(putBytes) / 1e9 * float64(retentionDays) / daysPerMonth, "GB-months", s3PerGBMonth},
	)
	return lines, unpriced
}

// perVerdict is a run's cost divided by its orders.
func perVerdict(r measuredRun, lines []line) float64 {
	if r.Orders == 0 {
		return 0
	}
	return total(lines) / float64(r.Orders)
}

// scheduledRun is what one scheduled invocation is assumed to cost beyond
// its Lambda request: its billed seconds, and for the smoke test the verdict
// it makes.
var scheduledSeconds = map[string]float64{
	"HealthFunction": 1,  // about 0.4 s a run against moto (docs/performance.md)
	"SmokeFunction":  10, // thirteen stages, mostly waiting on the pipeline
	"OpsFunction":    5,  // the day's seal reads the day's audit records
	"InboxFunction":  1,  // one Graph poll
}

// healthRunReads are the DynamoDB reads of one health run with nothing to
// act on (docs/performance.md: 36 calls a run), each priced as one unit.
const healthRunReads = 36

// idleLine is one line of the idle month, keyed so that the same line
// at the baseline (idleBaseline) stands beside it.
type idleLine struct {
	Key string
	line
}

func idleTotal(lines []idleLine) float64 {
	sum := 0.0
	for _, l := range lines {
		sum += l.cost()
	}
	return sum
}

// The idle month as `make cost` priced it at main c4c4584 on 2026-11-27,
// before issue 30 made the bill lean: the "before" of each line. Its
// alarms are priced as now, by the metrics they read (it counted 32 alarms,
// $16.63 in all; they read 36 metrics, $17.03).
const (
	IdleBaselineCommit = "c4c4584"
	IdleBaselineDate   = "2026-11-27"
)

var idleBaseline = []idleLine{
	{"alarms", line{"CloudWatch alarm metrics (32 alarms, four reading two metrics each)", 36, "alarm-metric-months", alarmPerMonth}},
	{"idlemetrics", line{"custom metrics written while idle (none counted then)", 0, "metric-months", metricPerMonth}},
	{"dashboards", line{"CloudWatch dashboards", 1, "dashboard-months", dashboardPerMonth}},
	{"kms", line{"KMS keys (the alerts topic's)", 1, "key-months", kmsKeyPerMonth}},
	{"secretsmanager", line{"Secrets Manager secrets (every credential)", 9, "secret-months", secretPerMonth}},
	{"metricfilters", line{"custom metrics of the metric filters", 13, "metric-months", metricPerMonth}},
	{"schedule HealthFunction Every", line{"HealthFunction Every", 8639, "runs", 0.0000130333}},
	{"schedule OpsFunction Seal", line{"OpsFunction Seal", 30, "runs", 0.0000335335}},
	{"schedule SmokeFunction Daily", line{"SmokeFunction Daily", 30, "runs", 0.0002302592}},
	{"sqs", line{"SQS receives of 7 event sources' idle pollers", 7 * sqsIdlePollers * secondsPerMonth / sqsIdlePollSeconds, "requests", sqsPerRequest}},
}

// alarmMetrics is the number of metrics an alarm reads: those of its
// metric math expression, or its one metric.
func alarmMetrics(r sam.Resource) int {
	metrics, _ := r.Properties["Metrics"].([]any)
	n := 0
	for _, m := range metrics {
		if q, _ := m.(map[string]any); q != nil && q["MetricStat"] != nil {
			n++
		}
	}
	return max(n, 1)
}

// credentialKind is the service an ARN names, "ssm" or "secretsmanager";
// a credential whose ARN this tool is not given is priced as
// docs/deploying.md has the operator make it, an SSM SecureString.
func credentialKind(arn string) string {
	if parts := strings.SplitN(arn, ":", 4); len(parts) == 4 && parts[0] == "arn" && parts[2] == "secretsmanager" {
		return "secretsmanager"
	}
	return "ssm"
}

// idleLines prices what the template provisions that bills with no
// traffic: alarms, dashboards, KMS keys, the credentials (each by its kind:
// a Secrets Manager secret bills by the month, a standard-tier SSM
// SecureString nothing), the metric filters' metrics, every enabled
// schedule's invocations (the health job's reads and audit record, the
// daily smoke test's own verdict at verdictCost), and the SQS event
// sources' pollers long-polling their idle queues, and the custom metrics
// written while idle (metricNames: how many the code names). params resolves the
// template (its defaults where empty) and names the credentials' ARNs
// where known; a resource whose condition is false is not provisioned.
func idleLines(t *sam.Template, params map[string]string, verdictCost float64, metricNames int) ([]idleLine, error) {
	v := &sam.Values{Params: params}
	var err error
	// weigh counts the resources of a type whose condition holds, each by
	// its weight.
	weigh := func(typ string, weight func(sam.Resource) int) float64 {
		n := 0
		for _, r := range t.OfType(typ) {
			if r.Condition != "" {
				ok, cerr := t.Condition(r.Condition, v)
				if cerr != nil {
					err = fmt.Errorf("%s: %w", r.LogicalID, cerr)
				}
				if !ok {
					continue
				}
			}
			n += weight(r)
		}
		return float64(n)
	}
	count := func(typ string) float64 { return weigh(typ, func(sam.Resource) int { return 1 }) }
	alarms := count("AWS::CloudWatch::Alarm")
	kinds := map[string][]string{}
	graph := params["MailTransport"] == "graph"
	for name := range t.Parameters {
		if strings.HasSuffix(name, "Arn") && !strings.Contains(name, "Kms") && (graph || !strings.Contains(name, "Graph")) {
			k := credentialKind(params[name])
			kinds[k] = append(kinds[k], name)
		}
	}
	for _, names := range kinds {
		sort.Strings(names)
	}
	lines := []idleLine{
		// CloudWatch bills a standard alarm per metric it reads: a metric
		// math alarm by each metric of its expression.
		{"alarms", line{fmt.Sprintf("CloudWatch alarm metrics (%.0f alarms)", alarms), weigh("AWS::CloudWatch::Alarm", alarmMetrics), "alarm-metric-months", alarmPerMonth}},
		// A custom metric bills by the hours it is written in: the health
		// job's runs every hour of the month, and a daily smoke run's
		// figures an hour a day (at most every metric the code names).
		{"idlemetrics", line{fmt.Sprintf("custom metrics written while idle: the health job's HealthRuns all month, and at most %d metrics of the daily smoke run an hour a day", metricNames), 1 + float64(metricNames)/24, "metric-months", metricPerMonth}},
		{"dashboards", line{"CloudWatch dashboards (past the account's three free)", count("AWS::CloudWatch::Dashboard"), "dashboard-months", dashboardPerMonth}},
		{"kms", line{"KMS keys", count("AWS::KMS::Key"), "key-months", kmsKeyPerMonth}},
		{"secretsmanager", line{"Secrets Manager secrets (" + strings.Join(kinds["secretsmanager"], ", ") + ")", float64(len(kinds["secretsmanager"])), "secret-months", secretPerMonth}},
		{"ssm", line{"SSM SecureStrings, standard tier (" + strings.Join(kinds["ssm"], ", ") + ")", float64(len(kinds["ssm"])), "parameter-months", ssmStandardPerMonth}},
		{"metricfilters", line{"custom metrics of the metric filters (published on every log event, default 0)", count("AWS::Logs::MetricFilter"), "metric-months", metricPerMonth}},
	}
	if err != nil {
		return nil, err
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	queues := 0
	for _, fn := range t.Functions() {
		queues += len(fn.Queues)
		for _, ev := range fn.Schedules {
			sch, err := t.Schedule(ev, v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", fn.LogicalID, err)
			}
			if !sch.Enabled {
				continue
			}
			n, err := firings(sch.Expression, start, daysPerMonth)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", fn.LogicalID, ev.Name, err)
			}
			secs := scheduledSeconds[fn.LogicalID]
			if secs == 0 {
				secs = 1
			}
			perRun := lambdaPerRequest + secs*float64(fn.MemorySize)/1024*lambdaPerGBSecondArm
			what := fmt.Sprintf("%s %s (%s): %.0f s at %d MB a run", fn.LogicalID, ev.Name, sch.Expression, secs, fn.MemorySize)
			switch fn.LogicalID {
			case "HealthFunction":
				perRun += healthRunReads*dynamoPerReadUnit + s3PerPut
				what += fmt.Sprintf(", %d reads and its audit record", healthRunReads)
			case "SmokeFunction":
				perRun += verdictCost
				what += ", and the verdict it makes"
			}
			lines = append(lines, idleLine{"schedule " + fn.LogicalID + " " + ev.Name, line{what, float64(n), "runs", perRun}})
		}
	}
	polls := float64(queues*sqsIdlePollers) * secondsPerMonth / sqsIdlePollSeconds
	lines = append(lines, idleLine{"sqs", line{fmt.Sprintf("SQS receives of %d event sources' idle pollers (%d each, one 20 s long poll at a time)", queues, sqsIdlePollers), polls, "requests", sqsPerRequest}})
	return lines, nil
}

// printIdle prints each idle line now beside its cost at the baseline,
// then the lines the baseline had and the template no longer has.
func printIdle(w io.Writer, now []idleLine) {
	before := map[string]idleLine{}
	for _, b := range idleBaseline {
		before[b.Key] = b
	}
	fmt.Fprintf(w, "  %-100s %12s %-16s   %10s %10s   %s\n", "", "quantity", "", "now", "before", "(main "+IdleBaselineCommit+", "+IdleBaselineDate+")")
	seen := map[string]bool{}
	for _, l := range now {
		seen[l.Key] = true
		b, was := before[l.Key]
		if l.Quantity == 0 && !was {
			continue
		}
		fmt.Fprintf(w, "  %-100s %12.4f %-16s x $%.10f = $%9.6f", l.What, l.Quantity, l.Unit, l.Price, l.cost())
		if was {
			fmt.Fprintf(w, "  $%9.6f", b.cost())
		} else {
			fmt.Fprintf(w, "  %10s", "-")
		}
		fmt.Fprintln(w)
	}
	for _, b := range idleBaseline {
		if !seen[b.Key] {
			fmt.Fprintf(w, "  %-100s %12s %-16s   %14s = $%9.6f  $%9.6f\n", b.What+" (gone)", "0", b.Unit, "", 0.0, b.cost())
		}
	}
	fmt.Fprintf(w, "  per month: $%.2f now, $%.2f before; goal under $%.2f: %s\n", idleTotal(now), idleTotal(idleBaseline), goalIdle, met(idleTotal(now) < goalIdle))
}

// firings counts a schedule expression's firings in days from start.
func firings(expr string, start time.Time, days int) (int, error) {
	e, err := schedule.Parse(expr)
	if err != nil {
		return 0, err
	}
	end := start.AddDate(0, 0, days)
	n := 0
	for at := e.Next(start); at.Before(end); at = e.Next(at) {
		n++
	}
	return n, nil
}
