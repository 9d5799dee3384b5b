package sesevent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"42sisters.ai/oracle/shared/ascii"
)

// ErrNotANotification is the error of Parse for an SNS envelope that is not
// a notification, such as the SubscriptionConfirmation SNS sends when a
// subscription is made. It carries no event: the consumer acknowledges it
// and goes on, where any other error of Parse is a message to look at.
var ErrNotANotification = errors.New("the SNS message is not a notification")

// A Type or eventType that may be quoted in an error is a letter and up
// to 39 letters and spaces; anything else (an address, a document) is not
// quoted.
var letters, wordChars = ascii.NewSet("A-Za-z"), ascii.NewSet("A-Za-z ")

// quoted returns s quoted when it is a plain word, else a stand-in.
func quoted(s string) string {
	if s != "" && letters.Has(s[0]) && wordChars.Run(s[1:], 0, 39) {
		return fmt.Sprintf("%q", s)
	}
	return "(not shown)"
}

// Parse reads an SQS message body that holds one SES event: SNS's
// notification envelope whose Message is the event's JSON, or the event's
// JSON alone (a raw-delivery subscription). It checks what the consumer
// relies on (see Event.Validate). An envelope of another Type, such as a
// SubscriptionConfirmation, gives an error that wraps ErrNotANotification.
// No error quotes an address.
func Parse(body string) (Event, error) {
	b := bytes.TrimSpace([]byte(body))
	if len(b) == 0 {
		return Event{}, errors.New("parse SES event: the body is empty")
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return Event{}, decodeError("the body is not a JSON object", err)
	}
	if _, ok := probe["Type"]; !ok {
		return parseEvent(b)
	}
	var n Notification
	if err := json.Unmarshal(b, &n); err != nil {
		return Event{}, decodeError("the SNS envelope", err)
	}
	if n.Type != NotificationType {
		return Event{}, fmt.Errorf("parse SES event: %w (Type %s)", ErrNotANotification, quoted(n.Type))
	}
	if strings.TrimSpace(n.Message) == "" {
		return Event{}, errors.New("parse SES event: the SNS notification has no Message")
	}
	return parseEvent([]byte(n.Message))
}

// parseEvent reads an event record's JSON.
func parseEvent(b []byte) (Event, error) {
	var probe struct {
		EventType        *string `json:"eventType"`
		NotificationType *string `json:"notificationType"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return Event{}, decodeError("the event", err)
	}
	if probe.EventType == nil && probe.NotificationType != nil {
		// An identity's feedback notifications name their kind so and
		// carry no tags; the service publishes through a configuration set.
		return Event{}, errors.New("parse SES event: a feedback notification (notificationType), not an event publishing record (eventType)")
	}
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		return Event{}, decodeError("the event", err)
	}
	if err := e.Validate(); err != nil {
		return Event{}, fmt.Errorf("parse SES event: %w", err)
	}
	return e, nil
}

// decodeError describes a JSON decoding failure in what. Syntax and type
// errors name a position or a field, never a value, and are wrapped; other
// failures (a timestamp that does not parse) quote the value, which may be
// an address, so only their kind is told.
func decodeError(what string, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if (errors.As(err, &syntax) || errors.As(err, &typ)) && !strings.Contains(err.Error(), "@") {
		return fmt.Errorf("parse SES event: %s: %w", what, err)
	}
	return fmt.Errorf("parse SES event: %s: a field holds a value of the wrong form", what)
}

// Validate checks what a consumer relies on: a known event type, the
// message id, and the object the event type calls for (a Send event's empty
// send object may be left out). The fake SES checks the events it builds
// with it too.
func (e Event) Validate() error {
	if e.EventType == "" {
		return errors.New("the event has no eventType")
	}
	if !slices.Contains(known, e.EventType) {
		return fmt.Errorf("unsupported eventType %s", quoted(string(e.EventType)))
	}
	if strings.TrimSpace(e.Mail.MessageID) == "" {
		return fmt.Errorf("the %s event has no mail.messageId", e.EventType)
	}
	missing := ""
	switch e.EventType {
	case Bounce:
		if e.Bounce == nil {
			missing = "bounce"
		}
	case Complaint:
		if e.Complaint == nil {
			missing = "complaint"
		}
	case Delivery:
		if e.Delivery == nil {
			missing = "delivery"
		}
	case Reject:
		if e.Reject == nil {
			missing = "reject"
		}
	case RenderingFailure:
		if e.Failure == nil {
			missing = "failure"
		}
	case DeliveryDelay:
		if e.DeliveryDelay == nil {
			missing = "deliveryDelay"
		}
	}
	if missing != "" {
		return fmt.Errorf("the %s event has no %s object", e.EventType, missing)
	}
	return nil
}
