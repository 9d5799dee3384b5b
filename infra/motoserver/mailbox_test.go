package motoserver_test

import (
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/motoserver"
)

func TestParseMessage(t *testing.T) {
	raw := "From: =?UTF-8?Q?42_Sisters_=C3=A9?= <oracle@42sisters.ai>\r\n" +
		"To: Jane <jane@example.com>, bob@example.com\r\n" +
		"Cc: carol@example.com\r\n" +
		"Reply-To: help@42sisters.ai\r\n" +
		"Subject: =?UTF-8?Q?caf=C3=A9?=\r\n" +
		"Date: Sat, 21 Nov 2026 14:23:07 +0000\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: multipart/alternative; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\ncaf=C3=A9\r\nline two\r\n" +
		"--b\r\nContent-Type: text/html; charset=UTF-8\r\n\r\n<p>hi</p>\r\n--b--\r\n"
	s, err := motoserver.ParseMessage(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := motoserver.Sent{
		From: "42 Sisters é <oracle@42sisters.ai>", To: []string{"jane@example.com", "bob@example.com", "carol@example.com"},
		ReplyTo: "help@42sisters.ai", Subject: "café", Text: "café\nline two", HTML: "<p>hi</p>",
		At: time.Date(2026, 11, 21, 14, 23, 7, 0, time.UTC),
	}
	if s.From != want.From || strings.Join(s.To, ",") != strings.Join(want.To, ",") || s.ReplyTo != want.ReplyTo ||
		s.Subject != want.Subject || s.Text != want.Text || s.HTML != want.HTML || !s.At.Equal(want.At) {
		t.Errorf("parsed %+v,\nwant %+v", s, want)
	}
	if s.ID != "" || s.Raw != "" {
		t.Errorf("ID %q and Raw %q are the caller's to set", s.ID, s.Raw)
	}
}

func TestParseMessageErrorsDoNotQuoteTheMessage(t *testing.T) {
	for name, raw := range map[string]string{
		"header line without a colon": "To jane.doe@example.com\r\n\r\nbody",
		"broken multipart":            "To: jane.doe@example.com\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\ntext without an end",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := motoserver.ParseMessage(raw)
			if err == nil {
				t.Fatal("a malformed message was read")
			}
			if strings.Contains(err.Error(), "jane.doe") {
				t.Errorf("the error quotes the message: %v", err)
			}
		})
	}
}
