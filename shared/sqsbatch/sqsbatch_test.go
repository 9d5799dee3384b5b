package sqsbatch

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/shared/obs"
)

func TestOnlyFailedRecordsAreReported(t *testing.T) {
	var logs bytes.Buffer
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "ok"}, {MessageId: "fails"}, {MessageId: "panics"}, {MessageId: "ok2"}}}
	resp := Process(context.Background(), obs.NewLogger(&logs, "INFO"), ev, func(_ context.Context, r events.SQSMessage) error {
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
}
