package inbox

import (
	"bytes"
	"net/mail"
	"strconv"
	"strings"
	"unicode"
)

// shownHeaders are the headers Show prints, in this order.
var shownHeaders = []string{"From", "Reply-To", "To", "Cc", "Date", "Subject", "Message-Id", "In-Reply-To"}

// Show renders a stored message for the operator's terminal: its main
// headers, decoded, then the text of each of its text parts. The sender's
// address and the body are shown: this is the operator reading support
// mail, never a log. Control characters (a terminal's escape sequences)
// are replaced, so a hostile message cannot drive the terminal.
func Show(raw []byte) string {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return "(not an email message; " + strconv.Itoa(len(raw)) + " bytes)\n"
	}
	var b strings.Builder
	for _, name := range shownHeaders {
		if v := msg.Header.Get(name); v != "" {
			b.WriteString(name + ": " + printable(decodeHeader(v), false) + "\n")
		}
	}
	parts := 0
	walk(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body, 0, &parts, func(text []byte) {
		b.WriteString("\n" + printable(strings.ReplaceAll(string(text), "\r\n", "\n"), true))
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
	})
	return b.String()
}

// printable replaces control characters (keeping line breaks and tabs in
// a body) and invalid UTF-8.
func printable(s string, body bool) string {
	return strings.Map(func(r rune) rune {
		switch {
		case body && (r == '\n' || r == '\t'):
			return r
		case unicode.IsControl(r):
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
}
