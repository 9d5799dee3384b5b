// Package sesevent reads and writes the email sending events Amazon SES
// publishes through a configuration set's event destination to Amazon SNS
// ("Contents of event data that Amazon SES publishes to Amazon SNS" in the
// SES Developer Guide), as an SQS queue subscribed to the topic receives
// them: wrapped in SNS's notification envelope, or bare when the
// subscription delivers raw messages.
//
// The types mirror the documented JSON field for field, so that the consumer
// parses what SES sends and the local fake SES (infra/fakes/fakeses) builds
// its events from the same types: the two cannot drift apart.
//
// Events hold recipients' email addresses. Nothing in this package puts an
// address into an error.
package sesevent

import (
	"slices"
	"time"
)

// EventType is an event record's eventType.
type EventType string

// The event types SES publishes for a configuration set whose destination
// matches them, with SES's exact spelling. Open, Click and Subscription
// exist too but need tracking the service does not enable; Parse refuses
// them.
const (
	Send             EventType = "Send"
	Delivery         EventType = "Delivery"
	Bounce           EventType = "Bounce"
	Complaint        EventType = "Complaint"
	Reject           EventType = "Reject"
	RenderingFailure EventType = "Rendering Failure"
	DeliveryDelay    EventType = "DeliveryDelay"
)

// known are the event types Parse accepts.
var known = []EventType{Send, Delivery, Bounce, Complaint, Reject, RenderingFailure, DeliveryDelay}

// Bounce types (BounceInfo.BounceType). Only Permanent means the address
// will never take mail; a Transient bounce comes after SES stopped retrying
// this message, and a later one may pass.
const (
	BouncePermanent    = "Permanent"
	BounceTransient    = "Transient"
	BounceUndetermined = "Undetermined"
)

// Bounce subtypes (BounceInfo.BounceSubType) the service tells apart.
const (
	// BounceGeneral is a hard bounce without a more precise reason.
	BounceGeneral = "General"
	// BounceOnAccountSuppressionList means SES did not even try: the
	// address is on the account's suppression list.
	BounceOnAccountSuppressionList = "OnAccountSuppressionList"
)

// TagConfigurationSet is the tag SES adds to mail.tags with the name of the
// configuration set the message was sent with.
const TagConfigurationSet = "ses:configuration-set"

// NotificationType is the Type of the SNS envelope that carries a published
// message; SNS also sends SubscriptionConfirmation and
// UnsubscribeConfirmation envelopes, which carry no event.
const NotificationType = "Notification"

// Notification is SNS's envelope, the body an SQS queue receives from a
// topic when the subscription's RawMessageDelivery is false ("HTTP/HTTPS
// notification JSON format" in the SNS Developer Guide). Message holds the
// SES event as a JSON string.
type Notification struct {
	Type             string    `json:"Type"`
	MessageID        string    `json:"MessageId"`
	TopicARN         string    `json:"TopicArn"`
	Subject          string    `json:"Subject,omitempty"`
	Message          string    `json:"Message"`
	Timestamp        time.Time `json:"Timestamp,omitzero"`
	SignatureVersion string    `json:"SignatureVersion,omitempty"`
	Signature        string    `json:"Signature,omitempty"`
	SigningCertURL   string    `json:"SigningCertURL,omitempty"`
	UnsubscribeURL   string    `json:"UnsubscribeURL,omitempty"`
	// SubscribeURL and Token come only with the confirmation types.
	SubscribeURL      string                      `json:"SubscribeURL,omitempty"`
	Token             string                      `json:"Token,omitempty"`
	MessageAttributes map[string]MessageAttribute `json:"MessageAttributes,omitempty"`
}

// MessageAttribute is one of a notification's message attributes.
type MessageAttribute struct {
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

// Event is one email sending event record. Exactly one of the objects
// after Mail is set, the one EventType names (Send's is empty).
type Event struct {
	EventType     EventType          `json:"eventType"`
	Mail          Mail               `json:"mail"`
	Bounce        *BounceInfo        `json:"bounce,omitempty"`
	Complaint     *ComplaintInfo     `json:"complaint,omitempty"`
	Delivery      *DeliveryInfo      `json:"delivery,omitempty"`
	Send          *SendInfo          `json:"send,omitempty"`
	Reject        *RejectInfo        `json:"reject,omitempty"`
	Failure       *FailureInfo       `json:"failure,omitempty"`
	DeliveryDelay *DeliveryDelayInfo `json:"deliveryDelay,omitempty"`
}

// Mail describes the message that produced the event.
type Mail struct {
	// Timestamp is when SES accepted the message.
	Timestamp time.Time `json:"timestamp,omitzero"`
	// Source is the sender as sent, with or without a display name.
	Source           string `json:"source"`
	SourceARN        string `json:"sourceArn,omitempty"`
	SendingAccountID string `json:"sendingAccountId,omitempty"`
	// MessageID is the id SES answered SendEmail with; the Message-ID
	// header of the message may differ.
	MessageID   string   `json:"messageId"`
	Destination []string `json:"destination"`
	// HeadersTruncated is set when the headers exceeded 10 KB and Headers
	// holds only the first of them.
	HeadersTruncated bool           `json:"headersTruncated"`
	Headers          []Header       `json:"headers,omitempty"`
	CommonHeaders    *CommonHeaders `json:"commonHeaders,omitempty"`
	// Tags are the message's tags: SES's own (ses:configuration-set,
	// ses:from-domain, …) and the EmailTags it was sent with, each name
	// with its values.
	Tags map[string][]string `json:"tags,omitempty"`
}

// Header is one of the message's original headers.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CommonHeaders are the message's commonly used headers, addresses one per
// entry.
type CommonHeaders struct {
	ReturnPath string   `json:"returnPath,omitempty"`
	From       []string `json:"from,omitempty"`
	Sender     string   `json:"sender,omitempty"`
	ReplyTo    []string `json:"replyTo,omitempty"`
	Date       string   `json:"date,omitempty"`
	To         []string `json:"to,omitempty"`
	Cc         []string `json:"cc,omitempty"`
	Bcc        []string `json:"bcc,omitempty"`
	MessageID  string   `json:"messageId,omitempty"`
	Subject    string   `json:"subject,omitempty"`
}

// BounceInfo is a Bounce event's bounce object.
type BounceInfo struct {
	BounceType        string             `json:"bounceType"`
	BounceSubType     string             `json:"bounceSubType"`
	BouncedRecipients []BouncedRecipient `json:"bouncedRecipients"`
	// Timestamp is when the receiving side reported the bounce.
	Timestamp  time.Time `json:"timestamp,omitzero"`
	FeedbackID string    `json:"feedbackId,omitempty"`
	// ReportingMTA comes only with a delivery status notification.
	ReportingMTA string `json:"reportingMTA,omitempty"`
	RemoteMtaIP  string `json:"remoteMtaIp,omitempty"`
}

// BouncedRecipient is a recipient that bounced; Action, Status and
// DiagnosticCode come from the delivery status notification, if any.
type BouncedRecipient struct {
	EmailAddress   string `json:"emailAddress"`
	Action         string `json:"action,omitempty"`
	Status         string `json:"status,omitempty"`
	DiagnosticCode string `json:"diagnosticCode,omitempty"`
}

// ComplaintInfo is a Complaint event's complaint object.
type ComplaintInfo struct {
	// ComplainedRecipients may name every recipient on the complaining
	// domain: most providers redact who complained.
	ComplainedRecipients []ComplainedRecipient `json:"complainedRecipients"`
	Timestamp            time.Time             `json:"timestamp,omitzero"`
	FeedbackID           string                `json:"feedbackId,omitempty"`
	// ComplaintSubType is empty or OnAccountSuppressionList.
	ComplaintSubType string `json:"complaintSubType,omitempty"`
	// UserAgent, ComplaintFeedbackType (abuse, fraud, not-spam, …) and
	// ArrivalDate come from the feedback report, if one was attached.
	UserAgent             string    `json:"userAgent,omitempty"`
	ComplaintFeedbackType string    `json:"complaintFeedbackType,omitempty"`
	ArrivalDate           time.Time `json:"arrivalDate,omitzero"`
}

// ComplainedRecipient is a recipient a complaint may come from.
type ComplainedRecipient struct {
	EmailAddress string `json:"emailAddress"`
}

// DeliveryInfo is a Delivery event's delivery object.
type DeliveryInfo struct {
	// Timestamp is when the recipient's mail server took the message.
	Timestamp            time.Time `json:"timestamp,omitzero"`
	ProcessingTimeMillis int64     `json:"processingTimeMillis"`
	Recipients           []string  `json:"recipients"`
	SMTPResponse         string    `json:"smtpResponse,omitempty"`
	ReportingMTA         string    `json:"reportingMTA,omitempty"`
	RemoteMtaIP          string    `json:"remoteMtaIp,omitempty"`
}

// SendInfo is a Send event's send object, always empty.
type SendInfo struct{}

// RejectInfo is a Reject event's reject object: SES found a virus and did
// not try to deliver.
type RejectInfo struct {
	Reason string `json:"reason"`
}

// FailureInfo is a Rendering Failure event's failure object.
type FailureInfo struct {
	TemplateName string `json:"templateName,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// DeliveryDelayInfo is a DeliveryDelay event's deliveryDelay object.
type DeliveryDelayInfo struct {
	Timestamp         time.Time          `json:"timestamp,omitzero"`
	DelayType         string             `json:"delayType"`
	ExpirationTime    time.Time          `json:"expirationTime,omitzero"`
	DelayedRecipients []DelayedRecipient `json:"delayedRecipients"`
	ReportingMTA      string             `json:"reportingMTA,omitempty"`
}

// DelayedRecipient is a recipient whose delivery is delayed.
type DelayedRecipient struct {
	EmailAddress   string `json:"emailAddress"`
	Status         string `json:"status,omitempty"`
	DiagnosticCode string `json:"diagnosticCode,omitempty"`
}

// Tag returns the first value of the message tag name, or "" when the
// message has no such tag: the service tags each message with one
// session_id and one mail_kind.
func (e Event) Tag(name string) string {
	if v := e.Mail.Tags[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Recipients returns the addresses the event concerns: the bounced,
// complained about, delivered or delayed recipients, and for the other
// events (or when the event names none) every recipient of the message.
// The slice is the caller's.
func (e Event) Recipients() []string {
	var out []string
	switch {
	case e.EventType == Bounce && e.Bounce != nil:
		for _, r := range e.Bounce.BouncedRecipients {
			out = append(out, r.EmailAddress)
		}
	case e.EventType == Complaint && e.Complaint != nil:
		for _, r := range e.Complaint.ComplainedRecipients {
			out = append(out, r.EmailAddress)
		}
	case e.EventType == Delivery && e.Delivery != nil:
		out = slices.Clone(e.Delivery.Recipients)
	case e.EventType == DeliveryDelay && e.DeliveryDelay != nil:
		for _, r := range e.DeliveryDelay.DelayedRecipients {
			out = append(out, r.EmailAddress)
		}
	}
	if len(out) == 0 {
		out = slices.Clone(e.Mail.Destination)
	}
	return out
}

// PermanentBounce reports whether the event is a hard bounce: the
// addresses it names will not take mail, and sending to them again hurts
// the account's reputation.
func (e Event) PermanentBounce() bool {
	return e.EventType == Bounce && e.Bounce != nil && e.Bounce.BounceType == BouncePermanent
}
