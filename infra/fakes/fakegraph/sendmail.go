package fakegraph

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"42sisters.ai/oracle/infra/motoserver"
)

// maxSendBody is Graph's limit on a request, which bounds a MIME message
// sent whole: 4 MB.
const maxSendBody = 4 << 20

// Message is a message in the mailbox, as GET /_mailbox lists it.
type Message struct {
	// ID is "graph-" and the client-request-id of the request that sent
	// it, which is the id mail.Graph.Send returns; "graph-" and the
	// request-id answered when the client sent none.
	ID      string    `json:"id"`
	Mailbox string    `json:"mailbox"` // the user the message was sent as, from the URL
	From    string    `json:"from"`
	To      []string  `json:"to"`
	ReplyTo string    `json:"reply_to,omitempty"`
	Subject string    `json:"subject"`
	Text    string    `json:"text"`
	HTML    string    `json:"html,omitempty"`
	At      time.Time `json:"at"`
	Raw     string    `json:"raw"` // the MIME message, decoded from base64
}

type received struct {
	sent    motoserver.Sent
	mailbox string
}

// handleSendMail serves POST /v1.0/users/{sender}/sendMail in its MIME
// form. A queued answer comes first; then, as Graph checks them, the bearer
// token, the size, the Content-Type, the base64 and the MIME message.
func (s *Server) handleSendMail(w http.ResponseWriter, r *http.Request) {
	call := Call{Kind: KindSend, Time: time.Now(), RequestID: uuid.NewString(), ClientRequestID: r.Header.Get("client-request-id")}
	if call.ClientRequestID != "" {
		w.Header().Set("client-request-id", call.ClientRequestID)
	}
	fail := func(e graphError) {
		writeGraphError(w, call.RequestID, e)
		call.Status, call.Code, call.RetryAfter = e.status, e.code, e.retryAfter
		s.record(call)
		s.log.Info("fakegraph: sendMail refused", "status", e.status, "code", e.code, "forced", call.Forced, "request_id", call.RequestID)
	}
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSendBody))
	sender := r.PathValue("sender")

	if a := s.nextSendAnswer(); a != nil {
		call.Forced = true
		fail(forcedGraphError(*a, sender, body))
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok || token == "":
		fail(graphError{status: http.StatusUnauthorized, code: "InvalidAuthenticationToken", message: "Access token is empty."})
		return
	case !s.tokenValid(token, call.Time):
		fail(graphError{status: http.StatusUnauthorized, code: "InvalidAuthenticationToken", message: sendDefaults[http.StatusUnauthorized].message})
		return
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(readErr, &tooLarge):
		fail(graphError{status: http.StatusRequestEntityTooLarge, code: "ErrorMessageSizeExceeded", message: sendDefaults[http.StatusRequestEntityTooLarge].message})
		return
	case readErr != nil:
		fail(graphError{status: http.StatusBadRequest, code: "RequestBodyRead", message: "The request body could not be read."})
		return
	}
	if typ, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || typ != "text/plain" {
		fail(graphError{status: http.StatusBadRequest, code: "UnableToDeserializePostBody", message: "A MIME message must be sent as text/plain."})
		return
	}
	raw, err := base64.StdEncoding.DecodeString(string(body))
	if err != nil || len(raw) == 0 {
		fail(graphError{status: http.StatusBadRequest, code: "ErrorMimeContentInvalidBase64String", message: "Invalid base64 string for MIME content."})
		return
	}
	sent, err := motoserver.ParseMessage(string(raw))
	if err != nil {
		fail(graphError{status: http.StatusBadRequest, code: "ErrorMimeContentInvalid", message: "The MIME content is invalid."})
		return
	}
	if len(sent.To) == 0 {
		fail(graphError{status: http.StatusBadRequest, code: "ErrorInvalidRecipients", message: "At least one recipient is required, but none were found."})
		return
	}
	sent.ID, sent.Raw = "graph-"+call.ClientRequestID, string(raw)
	if call.ClientRequestID == "" {
		sent.ID = "graph-" + call.RequestID
	}
	call.Status = http.StatusAccepted
	s.mu.Lock()
	s.received = append(s.received, received{sent: sent, mailbox: sender})
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	w.Header().Set("request-id", call.RequestID)
	w.WriteHeader(http.StatusAccepted)
	s.log.Info("fakegraph: sendMail accepted", "request_id", call.RequestID, "bytes", len(raw))
}

// forcedGraphError is the answer a queued SendAnswer asks for. Like
// Exchange's, its messages quote the addresses they are about.
func forcedGraphError(a SendAnswer, sender string, body []byte) graphError {
	d := sendDefaults[a.Status]
	e := graphError{status: a.Status, code: d.code, message: d.message, retryAfter: a.retryAfterHeader()}
	if a.Code != "" {
		e.code, e.message = a.Code, "The fake Graph was told to refuse this request."
	}
	switch {
	case e.code == "ErrorInvalidRecipients":
		to := "(none)"
		if raw, err := base64.StdEncoding.DecodeString(string(body)); err == nil {
			if m, err := motoserver.ParseMessage(string(raw)); err == nil && len(m.To) > 0 {
				to = m.To[0]
			}
		}
		e.message = fmt.Sprintf("At least one recipient is not valid., Recipient '%s' is not resolved. All recipients must be resolved before a message can be submitted.", to)
	case a.Status == http.StatusNotFound:
		e.message = fmt.Sprintf("The requested user '%.100s' is invalid.", sender)
	}
	return e
}

// Received returns the messages accepted so far, oldest first, read by
// motoserver.ParseMessage; ID is as in Message.
func (s *Server) Received() []motoserver.Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]motoserver.Sent, len(s.received))
	for i, r := range s.received {
		out[i] = r.sent
		out[i].To = slices.Clone(r.sent.To)
	}
	return out
}

// ClearMailbox forgets the messages accepted.
func (s *Server) ClearMailbox() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = nil
}

// handleMailbox serves GET /_mailbox: the messages accepted, oldest first.
func (s *Server) handleMailbox(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := make([]Message, len(s.received))
	for i, r := range s.received {
		m := r.sent
		out[i] = Message{ID: m.ID, Mailbox: r.mailbox, From: m.From, To: slices.Clone(m.To), ReplyTo: m.ReplyTo,
			Subject: m.Subject, Text: m.Text, HTML: m.HTML, At: m.At, Raw: m.Raw}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// handleClearMailbox serves DELETE /_mailbox.
func (s *Server) handleClearMailbox(w http.ResponseWriter, _ *http.Request) {
	s.ClearMailbox()
	w.WriteHeader(http.StatusNoContent)
}
