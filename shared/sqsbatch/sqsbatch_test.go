package sqsbatch

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/obs"
)

func TestOnlyFailedRecordsAreReportedAndCounted(t *testing.T) {
	var logs bytes.Buffer
	metrics := &testkit.Metrics{}
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "ok"}, {MessageId: "fails"}, {MessageId: "panics"}, {MessageId: "ok2"}}}
	resp := Process(context.Background(), obs.NewLogger(&logs, "INFO"), Failures{Metrics: metrics, Name: "TestRecordFailures"}, ev, func(_ context.Context, r events.SQSMessage) error {
		switch r.MessageId {
		case "fails":
			return errors.New("boom")
		case "panics":
			panic("kaboom")
		}
		return nil
	})
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if strings.Join(got, ",") != "fails,panics" {
		t.Fatalf("failures %v", got)
	}
	if !strings.Contains(logs.String(), "kaboom") {
		t.Fatal("the panic was not logged")
	}
	if c := metrics.Counts(); !maps.Equal(c, map[string]float64{"TestRecordFailures": 2}) {
		t.Fatalf("counted %v, want the failed and the panicked record", c)
	}
}

// A batch that succeeds counts nothing, and a function without metrics
// (nil) still has its failures reported.
func TestSuccessCountsNothing(t *testing.T) {
	log := obs.NewLogger(&bytes.Buffer{}, "INFO")
	metrics := &testkit.Metrics{}
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "ok"}}}
	ok := func(context.Context, events.SQSMessage) error { return nil }
	if resp := Process(context.Background(), log, Failures{Metrics: metrics, Name: "TestRecordFailures"}, ev, ok); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	if c := metrics.Counts(); len(c) != 0 {
		t.Fatalf("counted %v for a batch that succeeded", c)
	}
	fail := func(context.Context, events.SQSMessage) error { return errors.New("boom") }
	if resp := Process(context.Background(), log, Failures{}, ev, fail); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %v without metrics", resp.BatchItemFailures)
	}
}
