package motoserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"strings"
	"time"
)

// Sent is a message as moto accepted it.
type Sent struct {
	ID      string   // SES's message id, as Send returned it
	From    string   // the From header, decoded: `42 Sisters AI <oracle@42sisters.ai>`
	To      []string // the recipients' bare addresses
	ReplyTo string   // the Reply-To header's bare address, if any
	Subject string   // decoded
	Text    string   // the plain-text part, decoded, line breaks as "\n"
	HTML    string   // the HTML part, decoded, line breaks as "\n"
	At      time.Time
	Raw     string // the MIME message as SES received it
}

// Mailbox reads what moto server's SES accepted: the local stack's mailbox
// page and the tests look at mail this way, since nothing is delivered.
type Mailbox struct {
	HTTP *http.Client // http.DefaultClient when nil
}

// rawMessage is one message of serve.py's list of what SES accepted
// (/_oracle/ses/raw-messages): the raw messages moto tracks, as its
// /moto-api/data.json lists them under "ses"/"RawMessage", without the
// seconds data.json takes to serialise every other model's instances. A
// raw message keeps the whole MIME text. (moto keeps only one body of a
// Content.Simple message, which is why Send sends Raw; Simple messages are
// not listed.)
type rawMessage struct {
	ID           string   `json:"id"`
	Destinations []string `json:"destinations"`
	RawData      string   `json:"raw_data"`
}

// Sent lists the messages the moto server at motoEndpoint (run by serve.py)
// accepted, oldest first, across all accounts and regions.
func (m Mailbox) Sent(ctx context.Context, motoEndpoint string) ([]Sent, error) {
	c := m.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(motoEndpoint, "/")+"/_oracle/ses/raw-messages", nil)
	if err != nil {
		return nil, fmt.Errorf("read moto mailbox: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read moto mailbox: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read moto mailbox: moto answered %s", resp.Status)
	}
	var raw []rawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		return nil, fmt.Errorf("read moto mailbox: decode the message list: %w", err)
	}
	out := make([]Sent, 0, len(raw))
	for _, r := range raw {
		s, err := ParseMessage(r.RawData)
		if err != nil {
			return nil, fmt.Errorf("read moto mailbox: message %s: %w", r.ID, err)
		}
		s.ID, s.To, s.Raw = r.ID, recipients(r.Destinations), r.RawData
		out = append(out, s)
	}
	return out, nil
}

// recipients are the bare addresses moto sent to, each once: moto adds the
// To header's addresses to the envelope's, so each appears twice.
func recipients(dest []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range dest {
		if a, err := mail.ParseAddress(d); err == nil {
			d = a.Address
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// ParseMessage reads a MIME message into a Sent: its From, Reply-To,
// Subject and Date headers, the bare addresses of its To and Cc headers, and
// its first plain-text and HTML parts, decoded. ID and Raw are left for the
// caller, which knows under what id the message was accepted. Its errors do
// not quote the message, which holds addresses. Other fakes of mail services
// (fakegraph) read the messages they accept with it, so that every mailbox
// reads mail the same way.
func ParseMessage(raw string) (Sent, error) {
	msg, err := mail.ReadMessage(strings.NewReader(raw))
	if err != nil {
		return Sent{}, errors.New("malformed message header")
	}
	var s Sent
	// Moto's mailbox replaces these with the envelope's recipients; a
	// message read on its own has only its headers to say.
	for _, h := range []string{"To", "Cc"} {
		if list, err := msg.Header.AddressList(h); err == nil {
			for _, a := range list {
				s.To = append(s.To, a.Address)
			}
		}
	}
	if from, err := msg.Header.AddressList("From"); err == nil && len(from) > 0 {
		s.From = from[0].Address
		if from[0].Name != "" {
			s.From = from[0].Name + " <" + from[0].Address + ">"
		}
	}
	if r, err := msg.Header.AddressList("Reply-To"); err == nil && len(r) > 0 {
		s.ReplyTo = r[0].Address
	}
	if s.Subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil {
		return Sent{}, fmt.Errorf("undecodable subject: %w", err)
	}
	if at, err := msg.Header.Date(); err == nil {
		s.At = at
	}
	if err := s.body(msg.Header, msg.Body); err != nil {
		return Sent{}, err
	}
	return s, nil
}

// body reads an entity into s's text and HTML, descending into multiparts
// (alternative, mixed, related); the first part of each kind wins.
func (s *Sent) body(h interface{ Get(string) string }, r io.Reader) error {
	typ, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		typ = "text/plain" // RFC 2045's default
	}
	if strings.HasPrefix(typ, "multipart/") {
		mr := multipart.NewReader(r, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("malformed %s: %w", typ, err)
			}
			if err := s.body(p.Header, p); err != nil {
				return err
			}
		}
	}
	// multipart.Reader decodes quoted-printable parts itself and drops
	// their Content-Transfer-Encoding; a single-part message is decoded here.
	switch strings.ToLower(h.Get("Content-Transfer-Encoding")) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("undecodable %s part: %w", typ, err)
	}
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	switch {
	case typ == "text/plain" && s.Text == "":
		s.Text = text
	case typ == "text/html" && s.HTML == "":
		s.HTML = text
	}
	return nil
}
