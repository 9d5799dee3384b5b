// Package inbox reads the messages that reach the support address: what
// each one is (a person's reply, a bounce, automatic mail), which order it
// is about, and whether it is owed the acknowledgement
// (SPEC_ORACLE_INBOX_WATCH). Its sources (SES receiving, a Microsoft 365
// mailbox read through Graph) give it raw RFC 5322 messages; it keeps of
// them only what deciding and alerting need, never the body.
package inbox

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"slices"
	"strings"

	"42sisters.ai/oracle/shared/ascii"
)

// Message is what the inbox keeps of one received email.
type Message struct {
	// ID is the Message-ID without its angle brackets, "" when absent.
	ID string
	// From is the sender's address, lower-case; "" when the message names
	// none that parses.
	From string
	// Subject is the decoded subject.
	Subject string
	// Replies are the message ids it answers (In-Reply-To, then
	// References), without angle brackets.
	Replies []string
	// Automatic says why the message was sent by a machine, not a person
	// (a bounce, an auto-reply, list mail), "" for a person's.
	Automatic string
	// Sessions are the session ids the subject or the text names (a
	// reply quotes the result page's link), each once, in order.
	Sessions []string
	// Junk is the receiving service's verdict when it found spam or a
	// virus ("spam", "virus"), set by the source.
	Junk string
}

// Bounds of what Parse reads.
const (
	// MaxScan is how much of each text part is searched for session ids.
	MaxScan = 256 << 10
	// maxParts bounds the parts of a message walked, nested ones included.
	maxParts = 32
	// maxDepth bounds the nesting of multiparts.
	maxDepth = 4
	// maxSessions bounds the session ids kept.
	maxSessions = 4
)

// ErrNotAMessage is returned for bytes that are no RFC 5322 message.
var ErrNotAMessage = errors.New("not an email message")

// sessionIDs returns the Checkout Session ids in t, in order, as the
// regular expression cs_(?:test|live)_[A-Za-z0-9]{10,250} finds them: the
// leftmost first, each the longest run its bound allows, the next looked
// for after it. Compiled, that bound was 108 KB and 0.3 ms of the cold
// start of every function that reads the inbox's messages.
func sessionIDs(t string) []string {
	var ids []string
	for i := 0; ; {
		at := strings.Index(t[i:], "cs_")
		if at < 0 {
			return ids
		}
		start := i + at
		if mode := t[start+3:]; strings.HasPrefix(mode, "test_") || strings.HasPrefix(mode, "live_") {
			run := start + len("cs_test_")
			end := run
			for end < len(t) && end-run < 250 && alphanumeric.Has(t[end]) {
				end++
			}
			if end-run >= 10 {
				ids = append(ids, t[start:end])
				i = end
				continue
			}
		}
		i = start + 1
	}
}

var alphanumeric = ascii.NewSet("A-Za-z0-9")

// Parse reads a raw message. A message whose body cannot be read is still
// returned, from its headers: a malformed part must not keep the
// operator from hearing of it.
func Parse(raw []byte) (Message, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		// net/mail's error quotes the header line it could not read,
		// which may hold an address: it is not passed on to any log.
		return Message{}, ErrNotAMessage
	}
	h := msg.Header
	m := Message{ID: firstID(h.Get("Message-Id")), Subject: decodeHeader(h.Get("Subject"))}
	if from, err := mail.ParseAddress(h.Get("From")); err == nil {
		m.From = strings.ToLower(from.Address)
	}
	for _, name := range []string{"In-Reply-To", "References"} {
		for _, id := range ids(h.Get(name)) {
			if !slices.Contains(m.Replies, id) {
				m.Replies = append(m.Replies, id)
			}
		}
	}
	m.Automatic = automatic(h, m.From)
	texts := []string{m.Subject}
	parts := 0
	walk(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body, 0, &parts, func(text []byte) {
		texts = append(texts, string(text))
	})
	for _, t := range texts {
		for _, id := range sessionIDs(t) {
			if len(m.Sessions) < maxSessions && !slices.Contains(m.Sessions, id) {
				m.Sessions = append(m.Sessions, id)
			}
		}
	}
	return m, nil
}

// automatic says why a message with these headers is a machine's: RFC
// 3834's Auto-Submitted, Precedence bulk, list or junk, a mailing list's
// headers, the common auto-reply headers, a delivery or read report, or a
// bounce (the null reverse path, MAILER-DAEMON or postmaster).
func automatic(h mail.Header, from string) string {
	if v := strings.ToLower(strings.TrimSpace(h.Get("Auto-Submitted"))); v != "" && v != "no" {
		return "auto-submitted: " + firstWord(v)
	}
	if v := strings.ToLower(strings.TrimSpace(h.Get("Precedence"))); v == "bulk" || v == "list" || v == "junk" {
		return "precedence: " + v
	}
	if h.Get("List-Id") != "" || h.Get("List-Unsubscribe") != "" {
		return "mailing list"
	}
	if h.Get("X-Autoreply") != "" || h.Get("X-Autorespond") != "" || h.Get("X-Auto-Response-Suppress") != "" {
		return "auto-reply"
	}
	if mt, params, err := mime.ParseMediaType(h.Get("Content-Type")); err == nil && mt == "multipart/report" {
		return "report: " + strings.ToLower(params["report-type"])
	}
	if strings.TrimSpace(h.Get("Return-Path")) == "<>" {
		return "bounce"
	}
	local, _, _ := strings.Cut(from, "@")
	if local == "mailer-daemon" || local == "postmaster" {
		return "bounce"
	}
	return ""
}

// walk calls text with the decoded content of every text part of a body
// of this content type and transfer encoding, at most MaxScan bytes each.
func walk(contentType, encoding string, body io.Reader, depth int, parts *int, text func([]byte)) {
	if *parts >= maxParts {
		return
	}
	*parts++
	mt, params, err := mime.ParseMediaType(contentType)
	if contentType == "" || err != nil {
		mt = "text/plain" // RFC 2045's default
	}
	switch {
	case strings.HasPrefix(mt, "multipart/") && depth < maxDepth && params["boundary"] != "":
		r := multipart.NewReader(body, params["boundary"])
		for {
			p, err := r.NextRawPart()
			if err != nil {
				return // the end, or a malformed part: what was read stands
			}
			walk(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p, depth+1, parts, text)
		}
	case strings.HasPrefix(mt, "text/"):
		var r io.Reader = body
		switch strings.ToLower(strings.TrimSpace(encoding)) {
		case "quoted-printable":
			r = quotedprintable.NewReader(body)
		case "base64":
			r = base64.NewDecoder(base64.StdEncoding, newlineStripper{body})
		}
		b, _ := io.ReadAll(io.LimitReader(r, MaxScan)) // a decoding error keeps what was decoded
		text(b)
	}
}

// newlineStripper drops the line breaks of a base64 body, which
// base64.NewDecoder does not skip.
type newlineStripper struct{ r io.Reader }

func (n newlineStripper) Read(p []byte) (int, error) {
	for {
		k, err := n.r.Read(p)
		kept := 0
		for _, c := range p[:k] {
			if c != '\r' && c != '\n' {
				p[kept] = c
				kept++
			}
		}
		if kept > 0 || err != nil {
			return kept, err
		}
	}
}

// decodeHeader decodes RFC 2047 encoded words, or returns the header as
// it is when it has none that decode.
func decodeHeader(v string) string {
	d, err := new(mime.WordDecoder).DecodeHeader(v)
	if err != nil {
		return strings.TrimSpace(v)
	}
	return strings.TrimSpace(d)
}

// ids are the message ids of a header: <id> tokens, brackets removed.
func ids(v string) []string {
	var out []string
	for f := range strings.FieldsSeq(v) {
		if id := strings.Trim(f, "<>,"); id != "" && strings.Contains(id, "@") {
			out = append(out, id)
		}
	}
	return out
}

func firstID(v string) string {
	if all := ids(v); len(all) > 0 {
		return all[0]
	}
	return ""
}

func firstWord(v string) string {
	w, _, _ := strings.Cut(v, ";")
	return strings.TrimSpace(w)
}
