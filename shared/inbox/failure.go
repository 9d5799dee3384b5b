package inbox

import (
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"
)

// Failure is what Lambda sends to the inbox function's on-failure
// destination when an invocation failed its two retries (or outlived its
// maximum age): why, how many attempts, the error's type, and the stored
// messages the invocation named. The record's request holds SES's event,
// with addresses in its headers: only the message ids are read from it.
type Failure struct {
	Condition string   // RetriesExhausted or EventAgeExceeded
	Attempts  int      // approximateInvokeCount
	ErrorType string   // the function's error type, or its functionError
	Objects   []string // the stored messages (inbound/<id>)
}

// destinationRecord is Lambda's invocation record for an asynchronous
// invocation's destination.
type destinationRecord struct {
	RequestContext struct {
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	RequestPayload  json.RawMessage `json:"requestPayload"`
	ResponseContext struct {
		FunctionError string `json:"functionError"`
	} `json:"responseContext"`
	ResponsePayload json.RawMessage `json:"responsePayload"`
}

// ParseFailure reads a destination record; ok is false for a body that is
// none, or names no stored message.
func ParseFailure(body string) (f Failure, ok bool) {
	var rec destinationRecord
	if err := json.Unmarshal([]byte(body), &rec); err != nil || rec.RequestContext.Condition == "" || len(rec.RequestPayload) == 0 {
		return Failure{}, false
	}
	var ses events.SimpleEmailEvent
	if err := json.Unmarshal(rec.RequestPayload, &ses); err != nil {
		return Failure{}, false
	}
	f = Failure{Condition: rec.RequestContext.Condition, Attempts: rec.RequestContext.ApproximateInvokeCount, ErrorType: rec.ResponseContext.FunctionError}
	var resp struct {
		ErrorType string `json:"errorType"`
	}
	if json.Unmarshal(rec.ResponsePayload, &resp) == nil && resp.ErrorType != "" {
		f.ErrorType = resp.ErrorType
	}
	for _, r := range ses.Records {
		if object, valid := Object(r.SES.Mail.MessageID); valid {
			f.Objects = append(f.Objects, object)
		}
	}
	return f, len(f.Objects) > 0
}
