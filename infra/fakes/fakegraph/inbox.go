package fakegraph

import (
	"bytes"
	"io"
	"net/http"
	"net/mail"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The mailboxes the app reads (Mail.Read): messages delivered to them
// through the test endpoint, listed and read as Graph lists and reads them.
//
//	POST /_inbox/{mailbox}                                  deliver a raw MIME message (the body),
//	                                                        optionally ?received=<RFC 3339>; 201 {"id":…}
//	GET  /v1.0/users/{mailbox}/mailFolders/inbox/messages   list, with $filter "receivedDateTime ge <time>
//	                                                        and isRead eq false", $orderby receivedDateTime
//	                                                        asc, $select, $top and @odata.nextLink
//	GET  /v1.0/users/{mailbox}/messages/{id}/$value         the message's MIME
//
// Reading never marks a message read: the service's reads must not.

// maxDelivered bounds a delivered message.
const maxDelivered = 10 << 20

// inboxMessage is a message in a mailbox's Inbox.
type inboxMessage struct {
	id, internetID string
	received       time.Time
	raw            []byte
}

// inboxFilter is the one $filter form the fake reads.
var inboxFilter = regexp.MustCompile(`^receivedDateTime ge (\S+) and isRead eq false$`)

// handleDeliver serves POST /_inbox/{mailbox}.
func (s *Server) handleDeliver(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDelivered))
	if err != nil || len(raw) == 0 {
		http.Error(w, "POST a raw MIME message as the body", http.StatusBadRequest)
		return
	}
	received := time.Now().UTC()
	if v := r.URL.Query().Get("received"); v != "" {
		if received, err = time.Parse(time.RFC3339, v); err != nil {
			http.Error(w, "received: not an RFC 3339 time", http.StatusBadRequest)
			return
		}
	}
	m := inboxMessage{id: "AAMk" + strings.ReplaceAll(uuid.NewString(), "-", "") + "=", received: received.UTC(), raw: raw}
	if msg, err := mail.ReadMessage(bytes.NewReader(raw)); err == nil {
		m.internetID = strings.TrimSpace(msg.Header.Get("Message-ID"))
	}
	if m.internetID == "" { // Exchange gives every message one
		m.internetID = "<" + uuid.NewString() + "@fake.outlook.com>"
	}
	mailbox := strings.ToLower(r.PathValue("mailbox"))
	s.mu.Lock()
	if s.inboxes == nil {
		s.inboxes = map[string][]inboxMessage{}
	}
	s.inboxes[mailbox] = append(s.inboxes[mailbox], m)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]string{"id": m.id, "internetMessageId": m.internetID})
}

// handleList serves GET /v1.0/users/{mailbox}/mailFolders/inbox/messages.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	requestID := uuid.NewString()
	if e, ok := s.authorised(r); !ok {
		writeGraphError(w, requestID, e)
		return
	}
	q := r.URL.Query()
	f := inboxFilter.FindStringSubmatch(q.Get("$filter"))
	if f == nil || q.Get("$orderby") != "receivedDateTime asc" {
		writeGraphError(w, requestID, graphError{status: http.StatusBadRequest, code: "ErrorInvalidUrlQueryFilter",
			message: "The fake reads only $filter=receivedDateTime ge <time> and isRead eq false, $orderby=receivedDateTime asc."})
		return
	}
	since, err := time.Parse(time.RFC3339, f[1])
	if err != nil {
		writeGraphError(w, requestID, graphError{status: http.StatusBadRequest, code: "BadRequest", message: "Invalid filter clause."})
		return
	}
	top, skip := atoiOr(q.Get("$top"), 10), atoiOr(q.Get("$skip"), 0)
	mailbox := strings.ToLower(r.PathValue("mailbox"))
	s.mu.Lock()
	var all []inboxMessage
	for _, m := range s.inboxes[mailbox] {
		if !m.received.Before(since) {
			all = append(all, m)
		}
	}
	s.mu.Unlock()
	sort.SliceStable(all, func(i, j int) bool { return all[i].received.Before(all[j].received) })
	type listed struct {
		ID                string `json:"id"`
		InternetMessageID string `json:"internetMessageId"`
		Received          string `json:"receivedDateTime"`
	}
	page := struct {
		Value    []listed `json:"value"`
		NextLink string   `json:"@odata.nextLink,omitempty"`
	}{Value: []listed{}}
	for i := skip; i < len(all) && i < skip+top; i++ {
		page.Value = append(page.Value, listed{all[i].id, all[i].internetID, all[i].received.Format(time.RFC3339)})
	}
	if skip+top < len(all) {
		q.Set("$skip", strconv.Itoa(skip+top))
		page.NextLink = "http://" + r.Host + r.URL.Path + "?" + q.Encode()
	}
	writeJSON(w, http.StatusOK, page)
}

// handleValue serves GET /v1.0/users/{mailbox}/messages/{id}/$value.
func (s *Server) handleValue(w http.ResponseWriter, r *http.Request) {
	requestID := uuid.NewString()
	if e, ok := s.authorised(r); !ok {
		writeGraphError(w, requestID, e)
		return
	}
	mailbox, id := strings.ToLower(r.PathValue("mailbox")), r.PathValue("id")
	s.mu.Lock()
	var raw []byte
	for _, m := range s.inboxes[mailbox] {
		if m.id == id {
			raw = m.raw
		}
	}
	s.mu.Unlock()
	if raw == nil {
		writeGraphError(w, requestID, graphError{status: http.StatusNotFound, code: "ErrorItemNotFound",
			message: "The specified object was not found in the store."})
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(raw)
}

// authorised checks the bearer token as sendMail does.
func (s *Server) authorised(r *http.Request) (graphError, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok || token == "":
		return graphError{status: http.StatusUnauthorized, code: "InvalidAuthenticationToken", message: "Access token is empty."}, false
	case !s.tokenValid(token, time.Now()):
		return graphError{status: http.StatusUnauthorized, code: "InvalidAuthenticationToken", message: sendDefaults[http.StatusUnauthorized].message}, false
	}
	return graphError{}, true
}

func atoiOr(v string, def int) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return def
	}
	return min(n, 1000)
}
