package fakeses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"42sisters.ai/oracle/shared/sesevent"
)

// sendEmailPath is SES v2's SendEmail.
const sendEmailPath = "/v2/email/outbound-emails"

const (
	// maxSendBody bounds a SendEmail request: SES takes messages of up to
	// 40 MB, which base64 in JSON makes about 54 MB.
	maxSendBody = 64 << 20
	// maxAnswer bounds moto's answer to SendEmail, a message id in JSON.
	maxAnswer = 1 << 20
	// publishTimeout bounds publishing one send's events.
	publishTimeout = 30 * time.Second
)

// sendRequest is the part of a SendEmail request the front reads.
type sendRequest struct {
	FromEmailAddress string `json:"FromEmailAddress"`
	Destination      *struct {
		ToAddresses  []string `json:"ToAddresses"`
		CcAddresses  []string `json:"CcAddresses"`
		BccAddresses []string `json:"BccAddresses"`
	} `json:"Destination"`
	ConfigurationSetName string `json:"ConfigurationSetName"`
	EmailTags            []struct {
		Name  string `json:"Name"`
		Value string `json:"Value"`
	} `json:"EmailTags"`
	Content struct {
		Raw *struct {
			Data []byte `json:"Data"` // base64 in the JSON
		} `json:"Raw"`
		Simple *struct {
			Subject struct {
				Data string `json:"Data"`
			} `json:"Subject"`
		} `json:"Simple"`
	} `json:"Content"`
}

// tags returns the request's EmailTags, name to value.
func (req *sendRequest) tags() map[string]string {
	if len(req.EmailTags) == 0 {
		return nil
	}
	out := make(map[string]string, len(req.EmailTags))
	for _, t := range req.EmailTags {
		out[t.Name] = t.Value
	}
	return out
}

// send is one SendEmail request on its way through moto.
type send struct {
	req      sendRequest
	received time.Time
	sourceIP string
	call     *Call

	once   sync.Once
	events []sesevent.Event // to publish once the client has its answer
}

type sendKey struct{}

// sendOf returns the SendEmail request a proxied request carries, if any.
func sendOf(ctx context.Context) *send {
	c, _ := ctx.Value(sendKey{}).(*send)
	return c
}

// handleSend serves SendEmail: an injected failure, or moto's answer
// followed by the events.
func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	c := &send{received: s.now()}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSendBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if !errors.As(err, &tooBig) {
			return // the client went away mid-request
		}
		c.call = &Call{Time: c.received, Status: http.StatusBadRequest, Code: "MessageRejected", Injected: true, RequestID: s.requestID()}
		s.record(c.call)
		writeError(w, http.StatusBadRequest, c.call.Code, c.call.RequestID, 0, "Message length is more than the maximum allowed.")
		return
	}
	// A body SES would not parse goes to moto all the same, to be refused
	// there; it can have no events.
	_ = json.Unmarshal(body, &c.req)
	c.call = &Call{Time: c.received, ConfigurationSet: c.req.ConfigurationSetName, Tags: c.req.tags()}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		c.sourceIP = host
	}

	if f, ok := s.takeFailure(); ok {
		c.call.Status, c.call.Code, c.call.Injected, c.call.RequestID = f.Status, f.Code, true, s.requestID()
		s.record(c.call)
		s.logCall(c.call)
		writeError(w, f.Status, f.Code, c.call.RequestID, f.RetryAfterS, message(f.Code))
		return
	}

	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	s.forward(w, r.WithContext(context.WithValue(r.Context(), sendKey{}, c)))
	if len(c.events) == 0 {
		return
	}
	// SES publishes after it accepted the message: the client has its
	// whole answer (moto's, whose length is set) before the first event.
	// A flush error means the client went away; the events go regardless.
	_ = http.NewResponseController(w).Flush()
	s.publish(context.WithoutCancel(r.Context()), c)
}

// readSendAnswer is the proxy's ModifyResponse: for SendEmail it reads
// moto's answer, records the call and decides the events, all before the
// answer goes on to the client, which gets the same bytes.
func (s *Server) readSendAnswer(resp *http.Response) error {
	c := sendOf(resp.Request.Context())
	if c == nil {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read moto's SendEmail answer: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))

	var messageID string
	if resp.StatusCode == http.StatusOK {
		var out struct {
			MessageID string `json:"MessageId"`
		}
		if resp.Header.Get("Content-Encoding") != "" || json.Unmarshal(b, &out) != nil || out.MessageID == "" {
			s.log.Warn("fakeses: moto accepted a send without a readable message id; no events")
		}
		messageID = out.MessageID
	}
	code, _, _ := strings.Cut(resp.Header.Get("X-Amzn-Errortype"), ":")
	s.answered(c, resp.StatusCode, code, resp.Header.Get("X-Amzn-Requestid"), messageID)
	return nil
}

// answered records the answer to c, once, and decides its events.
func (s *Server) answered(c *send, status int, code, requestID, messageID string) {
	c.once.Do(func() {
		c.call.Status, c.call.Code, c.call.RequestID, c.call.MessageID = status, code, requestID, messageID
		if status == http.StatusOK && messageID != "" && s.publishes(c.req.ConfigurationSetName) {
			c.events = s.events(c, messageID)
			for _, e := range c.events {
				c.call.Events = append(c.call.Events, e.EventType)
			}
		}
		s.record(c.call)
		s.logCall(c.call)
	})
}

// publishes reports whether a send with the configuration set configSet
// has events.
func (s *Server) publishes(configSet string) bool {
	return s.opts.ConfigurationSet != "" && s.opts.EventsTopicARN != "" && configSet == s.opts.ConfigurationSet
}

// publish sends c's events to the topic, in order, those that follow the
// recipient's server's answer DeliveryDelay after the Send event. A
// failure is logged: the message was sent, as SES's would be when its
// event destination fails.
func (s *Server) publish(ctx context.Context, c *send) {
	waited := s.opts.DeliveryDelay <= 0
	for _, e := range c.events {
		if !waited && e.EventType != sesevent.Send {
			<-s.after(s.opts.DeliveryDelay)
			waited = true
		}
		s.publishOne(ctx, e)
	}
}

// publishOne sends one event to the topic, logging a failure.
func (s *Server) publishOne(ctx context.Context, e sesevent.Event) {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	b, err := json.Marshal(e)
	if err == nil {
		_, err = s.topics.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(s.opts.EventsTopicARN), Message: aws.String(string(b))})
	}
	if err != nil {
		s.log.Error("fakeses: publish event", "event", e.EventType, "message_id", e.Mail.MessageID, "err", err)
	}
}

// logCall logs a SendEmail request without its addresses or tags.
func (s *Server) logCall(c *Call) {
	s.log.Info("fakeses: SendEmail", "status", c.Status, "code", c.Code, "injected", c.Injected,
		"message_id", c.MessageID, "configuration_set", c.ConfigurationSet, "events", c.Events)
}
