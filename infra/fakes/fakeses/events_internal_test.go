package fakeses

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/sesevent"
)

func TestReadHeaders(t *testing.T) {
	long := strings.Repeat("x", 6000)
	tests := []struct {
		name      string
		raw       string
		want      []sesevent.Header
		truncated bool
	}{
		{
			name: "CRLF, a fold and a body",
			raw:  "From: A <a@example.com>\r\nSubject: one\r\n  two\r\nX-Empty:\r\n\r\nBody: not a header\r\n",
			want: []sesevent.Header{{Name: "From", Value: "A <a@example.com>"}, {Name: "Subject", Value: "one  two"}, {Name: "X-Empty", Value: ""}},
		},
		{
			name: "LF only, no body",
			raw:  "To: b@example.com\nContent-Type: text/plain;\n\tcharset=UTF-8",
			want: []sesevent.Header{{Name: "To", Value: "b@example.com"}, {Name: "Content-Type", Value: "text/plain;\tcharset=UTF-8"}},
		},
		{
			name: "a line that is no header is skipped",
			raw:  "garbage\r\nTo: b@example.com\r\n\r\n",
			want: []sesevent.Header{{Name: "To", Value: "b@example.com"}},
		},
		{
			name:      "cut at 10 KB",
			raw:       "A: " + long + "\r\nB: " + long + "\r\nC: c\r\n\r\n",
			want:      []sesevent.Header{{Name: "A", Value: long}},
			truncated: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, truncated := readHeaders([]byte(tt.raw))
			if !reflect.DeepEqual(got, tt.want) || truncated != tt.truncated {
				t.Errorf("got %q %v, want %q %v", got, truncated, tt.want, tt.truncated)
			}
		})
	}
}

// TestEventsOfABareRawMessage: a raw message that leaves the sender and the
// recipients to its headers gets them from there, and its events pass
// sesevent's checks.
func TestEventsOfABareRawMessage(t *testing.T) {
	at := time.Date(2026, 4, 16, 12, 0, 0, 0, time.UTC)
	s := New(Options{Moto: "http://127.0.0.1:1", ConfigurationSet: "set", EventsTopicARN: "arn:aws:sns:eu-west-1:210987654321:events", Now: func() time.Time { return at.Add(1500 * time.Millisecond) }})
	s.opts.AWS.Region = "eu-west-1"
	var req sendRequest
	raw := "From: \"Oracle, 42\" <oracle@example.com>\r\nTo: a@example.com, B <complaint@simulator.amazonses.com>\r\nCc: c@example.com\r\nMessage-ID: <own-id@example.com>\r\nSubject: hi\r\n\r\nbody\r\n"
	b, err := json.Marshal(map[string]any{
		"ConfigurationSetName": "set",
		"Content":              map[string]any{"Raw": map[string]any{"Data": []byte(raw)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	events := s.events(&send{req: req, received: at, sourceIP: "127.0.0.1"}, "msg-1")

	var types []sesevent.EventType
	for _, e := range events {
		types = append(types, e.EventType)
		if err := e.Validate(); err != nil {
			t.Errorf("%s: %v", e.EventType, err)
		}
	}
	if want := []sesevent.EventType{sesevent.Send, sesevent.Delivery, sesevent.Complaint}; !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	m := events[0].Mail
	if m.Source != `"Oracle, 42" <oracle@example.com>` || !slices.Equal(m.Destination, []string{"a@example.com", "B <complaint@simulator.amazonses.com>", "c@example.com"}) {
		t.Errorf("source %q destination %q", m.Source, m.Destination)
	}
	if m.SourceARN != "arn:aws:ses:eu-west-1:210987654321:identity/oracle@example.com" || m.SendingAccountID != "210987654321" {
		t.Errorf("source ARN %q account %q", m.SourceARN, m.SendingAccountID)
	}
	if ch := m.CommonHeaders; ch.MessageID != "own-id@example.com" || !slices.Equal(ch.From, []string{"Oracle, 42 <oracle@example.com>"}) || !slices.Equal(ch.Cc, []string{"c@example.com"}) {
		t.Errorf("commonHeaders %+v", ch)
	}
	if got := events[0].Tag("ses:source-ip"); got != "127.0.0.1" {
		t.Errorf("ses:source-ip %q", got)
	}
	if d := events[1].Delivery; d.ProcessingTimeMillis != 1500 || !slices.Equal(d.Recipients, []string{"a@example.com", "complaint@simulator.amazonses.com", "c@example.com"}) {
		t.Errorf("delivery %+v", d)
	}
	if got := events[2].Recipients(); !slices.Equal(got, []string{"complaint@simulator.amazonses.com"}) {
		t.Errorf("complaint names %v", got)
	}
}
