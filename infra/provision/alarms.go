package provision

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"42sisters.ai/oracle/infra/sam"
)

// CloudWatch's alarms go to moto in CloudWatch's query protocol, signed
// as the SDK signs: the SDK's CloudWatch client speaks the newer CBOR
// protocol, which moto server does not serve.

// alarm creates a CloudWatch alarm, named as its stack's, watching one
// metric or a metric math expression of several.
func (st *Stack) alarm(ctx context.Context, o Options, r sam.Resource) error {
	p, err := st.resolved(r)
	if err != nil {
		return err
	}
	f := url.Values{"Action": {"PutMetricAlarm"}, "AlarmName": {st.Ref(r.LogicalID)}}
	for _, k := range []string{"AlarmDescription", "ComparisonOperator", "EvaluationPeriods", "DatapointsToAlarm", "Threshold",
		"TreatMissingData", "Namespace", "MetricName", "Statistic", "Period"} {
		if v, ok := p[k]; ok {
			f.Set(k, str(v))
		}
	}
	dims := func(prefix string, v any) {
		for i, d := range list(v) {
			f.Set(fmt.Sprintf("%s.member.%d.Name", prefix, i+1), str(d["Name"]))
			f.Set(fmt.Sprintf("%s.member.%d.Value", prefix, i+1), str(d["Value"]))
		}
	}
	dims("Dimensions", p["Dimensions"])
	for _, k := range []string{"AlarmActions", "OKActions"} {
		items, _ := p[k].([]any)
		for i, a := range items {
			f.Set(fmt.Sprintf("%s.member.%d", k, i+1), str(a))
		}
	}
	for i, q := range list(p["Metrics"]) {
		m := fmt.Sprintf("Metrics.member.%d.", i+1)
		for _, k := range []string{"Id", "Expression", "Label", "ReturnData"} {
			if v, ok := q[k]; ok {
				f.Set(m+k, str(v))
			}
		}
		if ms := mapOf(q["MetricStat"]); ms != nil {
			metric := mapOf(ms["Metric"])
			f.Set(m+"MetricStat.Metric.Namespace", str(metric["Namespace"]))
			f.Set(m+"MetricStat.Metric.MetricName", str(metric["MetricName"]))
			dims(m+"MetricStat.Metric.Dimensions", metric["Dimensions"])
			f.Set(m+"MetricStat.Period", str(ms["Period"]))
			f.Set(m+"MetricStat.Stat", str(ms["Stat"]))
		}
	}
	if _, err := cloudwatchQuery(ctx, o.AWS, f); err != nil {
		return fmt.Errorf("put alarm %s: %w", st.Ref(r.LogicalID), err)
	}
	return nil
}

// Alarm is a CloudWatch alarm as moto describes it.
type Alarm struct {
	Name string `xml:"AlarmName"`
	// Metric is what an alarm of one metric watches; Metrics the metric
	// math alarm's queries.
	Metric
	Metrics []struct {
		Id         string
		MetricStat struct {
			Metric Metric
		}
	} `xml:"Metrics>member"`
}

// Metric is a metric's identity: namespace, name and dimensions.
type Metric struct {
	Namespace  string
	MetricName string
	Dimensions []struct{ Name, Value string } `xml:"Dimensions>member"`
}

// String names the metric "namespace name dim=value...", its dimensions
// sorted.
func (m Metric) String() string {
	var ds []string
	for _, d := range m.Dimensions {
		ds = append(ds, d.Name+"="+d.Value)
	}
	sort.Strings(ds)
	return strings.Join(append([]string{m.Namespace, m.MetricName}, ds...), " ")
}

// Watched names each metric the alarm reads.
func (a Alarm) Watched() []string {
	var out []string
	if a.MetricName != "" {
		out = append(out, a.Metric.String())
	}
	for _, q := range a.Metrics {
		if q.MetricStat.Metric.MetricName != "" {
			out = append(out, q.MetricStat.Metric.String())
		}
	}
	return out
}

// Alarms describes the alarms whose names start with prefix (a stack's).
func Alarms(ctx context.Context, cfg aws.Config, prefix string) ([]Alarm, error) {
	b, err := cloudwatchQuery(ctx, cfg, url.Values{"Action": {"DescribeAlarms"}, "AlarmNamePrefix": {prefix}})
	if err != nil {
		return nil, fmt.Errorf("describe alarms %s*: %w", prefix, err)
	}
	var out struct {
		Alarms []Alarm `xml:"DescribeAlarmsResult>MetricAlarms>member"`
	}
	if err := xml.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("describe alarms %s*: %w", prefix, err)
	}
	return out.Alarms, nil
}

// cloudwatchQuery makes one call of CloudWatch's query protocol to cfg's
// endpoint and returns the answer's body.
func cloudwatchQuery(ctx context.Context, cfg aws.Config, form url.Values) ([]byte, error) {
	if cfg.BaseEndpoint == nil {
		return nil, fmt.Errorf("no endpoint: alarms are provisioned into moto server only")
	}
	form.Set("Version", "2010-08-01")
	body := form.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(*cfg.BaseEndpoint, "/")+"/", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "monitoring", cfg.Region, time.Now()); err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, b)
	}
	return b, nil
}
