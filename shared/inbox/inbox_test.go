package inbox_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"42sisters.ai/oracle/shared/inbox"
)

const session = "cs_test_a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ"

// eml joins header lines and a body into a message with CRLF line ends.
func eml(headers []string, body string) []byte {
	return []byte(strings.Join(headers, "\r\n") + "\r\n\r\n" + strings.ReplaceAll(body, "\n", "\r\n"))
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name string
		raw  []byte
		want inbox.Message
	}{
		{
			name: "a reply to the verdict email, the link quoted in quoted-printable HTML",
			raw: eml([]string{
				"From: Ana Lima <Ana.Lima@Example.com>", "To: oracle@42sisters.ai", "Subject: Re: Your Oracle Verdict",
				"Message-ID: <reply-1@mail.example.com>", "In-Reply-To: <0100018c-aaaa@email.amazonses.com>",
				"References: <0100018c-aaaa@email.amazonses.com> <older@x.example>", "MIME-Version: 1.0",
				`Content-Type: multipart/alternative; boundary="b1"`,
			}, "--b1\nContent-Type: text/plain; charset=utf-8\n\nThanks! One more question.\n--b1\n"+
				"Content-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n"+
				"<a href=3D\"http://localhost:3000/oracle/result?session_id=3D"+session[:20]+"=\n"+session[20:]+"\">page</a>\n--b1--\n"),
			want: inbox.Message{ID: "reply-1@mail.example.com", From: "ana.lima@example.com", Subject: "Re: Your Oracle Verdict",
				Replies: []string{"0100018c-aaaa@email.amazonses.com", "older@x.example"}, Sessions: []string{session}},
		},
		{
			name: "an encoded subject naming the session, a base64 body",
			raw: eml([]string{"From: bo@example.org", "Subject: =?utf-8?q?Commande_=C3=A0_rembourser?= " + session, "Message-ID: <b64@example.org>",
				"Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64"}, "Qm9uam91ciwgbWVyY2kgIQ==\n"),
			want: inbox.Message{ID: "b64@example.org", From: "bo@example.org", Subject: "Commande à rembourser " + session, Sessions: []string{session}},
		},
		{
			name: "a bounce: a delivery status report from MAILER-DAEMON",
			raw: eml([]string{"From: MAILER-DAEMON@amazonses.com", "Subject: Delivery Status Notification (Failure)", "Message-ID: <dsn@amazonses.com>",
				`Content-Type: multipart/report; report-type=delivery-status; boundary="r"`}, "--r\nContent-Type: text/plain\n\nAn error occurred.\n--r--\n"),
			want: inbox.Message{ID: "dsn@amazonses.com", From: "mailer-daemon@amazonses.com", Subject: "Delivery Status Notification (Failure)", Automatic: "report: delivery-status"},
		},
		{
			name: "an out-of-office reply",
			raw:  eml([]string{"From: cy@example.net", "Subject: Automatic reply: Your Oracle Verdict", "Auto-Submitted: auto-replied", "Message-ID: <ooo@example.net>"}, "Away until Monday.\n"),
			want: inbox.Message{ID: "ooo@example.net", From: "cy@example.net", Subject: "Automatic reply: Your Oracle Verdict", Automatic: "auto-submitted: auto-replied"},
		},
		{
			name: "Auto-Submitted: no is a person's",
			raw:  eml([]string{"From: di@example.net", "Subject: hello", "Auto-Submitted: no"}, "Hi.\n"),
			want: inbox.Message{From: "di@example.net", Subject: "hello"},
		},
		{
			name: "list mail",
			raw:  eml([]string{"From: news@lists.example.com", "Subject: Weekly", "List-Id: <weekly.lists.example.com>"}, "News.\n"),
			want: inbox.Message{From: "news@lists.example.com", Subject: "Weekly", Automatic: "mailing list"},
		},
		{
			name: "bulk precedence",
			raw:  eml([]string{"From: promo@shop.example", "Subject: Sale", "Precedence: Bulk"}, "Buy.\n"),
			want: inbox.Message{From: "promo@shop.example", Subject: "Sale", Automatic: "precedence: bulk"},
		},
		{
			name: "the null reverse path",
			raw:  eml([]string{"Return-Path: <>", "From: Mail Delivery System <mailer@relay.example>", "Subject: Undelivered Mail"}, "Sorry.\n"),
			want: inbox.Message{From: "mailer@relay.example", Subject: "Undelivered Mail", Automatic: "bounce"},
		},
		{
			name: "no From that parses, a malformed multipart",
			raw:  eml([]string{"From: not an address", "Subject: ?", `Content-Type: multipart/mixed; boundary="x"`}, "--x\nContent-Type: text/plain\n\n"+session+" truncated"),
			want: inbox.Message{Subject: "?", Sessions: []string{session}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := inbox.Parse(c.raw)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != c.want.ID || got.From != c.want.From || got.Subject != c.want.Subject || got.Automatic != c.want.Automatic ||
				!slices.Equal(got.Replies, c.want.Replies) || !slices.Equal(got.Sessions, c.want.Sessions) {
				t.Fatalf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestParseRefusesWhatIsNoMessage(t *testing.T) {
	for _, raw := range []string{"", "\x00\x01\x02", "no headers at all",
		"From: leak@example.com\r\nSubject: ok\r\n broken continuation\r\nTo leak@example.com\r\n\r\nbody"} {
		_, err := inbox.Parse([]byte(raw))
		if !errors.Is(err, inbox.ErrNotAMessage) {
			t.Errorf("Parse(%q) = %v, want ErrNotAMessage", raw, err)
		}
		// The error reaches logs: it never quotes the message.
		if err != nil && strings.Contains(err.Error(), "leak@") {
			t.Errorf("Parse(%q): the error quotes the message: %v", raw, err)
		}
	}
}

// TestParseKeepsAtMostFourSessions: a message listing many session ids
// (a pasted log, an attack) links to the first few only.
func TestParseKeepsAtMostFourSessions(t *testing.T) {
	var body strings.Builder
	for i := range 50 {
		body.WriteString("cs_live_" + strings.Repeat(string(rune('a'+i%26)), 20) + "\n")
	}
	m, err := inbox.Parse(eml([]string{"From: e@example.com", "Subject: many"}, body.String()))
	if err != nil || len(m.Sessions) != 4 {
		t.Fatalf("%d sessions (%v)", len(m.Sessions), err)
	}
}

// TestAcknowledge: who is owed the acknowledgement (V3 to V6, G8); every
// message is alerted whatever this says.
func TestAcknowledge(t *testing.T) {
	p := inbox.Policy{Own: []string{"oracle@42sisters.ai"}, Skip: inbox.DefaultSkip}
	for _, c := range []struct {
		name string
		m    inbox.Message
		want inbox.Skip
	}{
		{"V3 a customer", inbox.Message{From: "user@example.com"}, ""},
		{"V4 the skip set", inbox.Message{From: "noreply@stripe.com"}, inbox.SkipListed},
		{"V4 receipts", inbox.Message{From: "receipts@stripe.com"}, inbox.SkipListed},
		{"V5 a no-reply sender", inbox.Message{From: "no-reply@anything.com"}, inbox.SkipNoReply},
		{"G8 no-reply in any case", inbox.Message{From: "no-reply-billing@anything.com", Subject: "x"}, inbox.SkipNoReply},
		{"noreply without the hyphen", inbox.Message{From: "noreply@github.example"}, inbox.SkipNoReply},
		{"V6 the service itself", inbox.Message{From: "oracle@42sisters.ai"}, inbox.SkipOwn},
		{"a bounce", inbox.Message{From: "mailer-daemon@amazonses.com", Automatic: "bounce"}, inbox.SkipAutomatic},
		{"an auto-reply", inbox.Message{From: "cy@example.net", Automatic: "auto-submitted: auto-replied"}, inbox.SkipAutomatic},
		{"spam", inbox.Message{From: "win@prize.example", Junk: "spam"}, inbox.SkipJunk},
		{"no sender", inbox.Message{}, inbox.SkipNoSender},
		{"an address without a domain", inbox.Message{From: "user@"}, inbox.SkipNoSender},
	} {
		if got := p.Acknowledge(c.m); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestParsedSendersInAnyCaseAreSkipped: the parsed address is lower-case,
// so the skip set and the prefix guard hold whatever case the sender wrote
// (G8).
func TestParsedSendersInAnyCaseAreSkipped(t *testing.T) {
	p := inbox.Policy{Own: []string{"oracle@42sisters.ai"}, Skip: inbox.DefaultSkip}
	for from, want := range map[string]inbox.Skip{
		"NO-REPLY@Anything.com":        inbox.SkipNoReply,
		"NoReply@Stripe.com":           inbox.SkipListed,
		"Oracle <ORACLE@42sisters.ai>": inbox.SkipOwn,
	} {
		m, err := inbox.Parse(eml([]string{"From: " + from, "Subject: hi"}, "hi\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Acknowledge(m); got != want {
			t.Errorf("%s: %q, want %q", from, got, want)
		}
	}
}

// TestReplySubject: "Re: " once (V9).
func TestReplySubject(t *testing.T) {
	for in, want := range map[string]string{
		"Hello":        "Re: Hello",
		"Re: Hello":    "Re: Hello",
		"  Re: Hello ": "Re: Hello",
		"RE: Hello":    "RE: Hello", // Outlook's prefix counts too
		"Reply needed": "Re: Reply needed",
		"":             "Re: your message",
	} {
		if got := inbox.ReplySubject(in); got != want {
			t.Errorf("ReplySubject(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParse: any bytes give a message or ErrNotAMessage, never a panic;
// what is kept stays within its bounds and names only valid session ids.
func FuzzParse(f *testing.F) {
	f.Add(eml([]string{"From: a@example.com", "Subject: Re: x", `Content-Type: multipart/mixed; boundary="b"`}, "--b\nContent-Transfer-Encoding: base64\n\nY3NfdGVzdF8x\n--b--\n"))
	f.Add(eml([]string{"From: a@example.com", "Content-Transfer-Encoding: quoted-printable"}, session+"=\n=3D"))
	f.Add([]byte("From: <>\r\n\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := inbox.Parse(raw)
		if err != nil {
			if !errors.Is(err, inbox.ErrNotAMessage) {
				t.Fatalf("error %v is not ErrNotAMessage", err)
			}
			return
		}
		if len(m.Sessions) > 4 {
			t.Fatalf("%d sessions kept", len(m.Sessions))
		}
		for _, s := range m.Sessions {
			if !strings.HasPrefix(s, "cs_") {
				t.Fatalf("session %q", s)
			}
		}
		if m.From != strings.ToLower(m.From) {
			t.Fatalf("From %q is not lower-case", m.From)
		}
	})
}

// The operator reads a stored message whole: the sender's address, the
// subject decoded, the text of each part; no control character reaches
// the terminal.
func TestShow(t *testing.T) {
	raw := "From: Ana <ana@example.com>\r\nTo: oracle@42sisters.ai\r\nSubject: =?UTF-8?Q?Caf=C3=A9?= \x1b[31mred\r\n" +
		"Message-ID: <q1@example.com>\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nHello,\r\nthe body\x1b]0;title\x07.\r\n" +
		"--b--\r\n"
	got := inbox.Show([]byte(raw))
	for _, want := range []string{"From: Ana <ana@example.com>\n", "Subject: Café ?[31mred\n", "Message-Id: <q1@example.com>\n", "\nHello,\nthe body?]0;title?."} {
		if !strings.Contains(got, want) {
			t.Errorf("shown:\n%s\nwant it to hold %q", got, want)
		}
	}
	if strings.ContainsAny(got, "\x1b\x07\r") {
		t.Errorf("a control character reaches the terminal: %q", got)
	}
	if got := inbox.Show([]byte("\x00 no message")); !strings.Contains(got, "not an email message") {
		t.Errorf("garbage shown as %q", got)
	}
}

// A stored message is named by its id or its whole key, never a path.
func TestObject(t *testing.T) {
	for _, c := range []struct {
		name, want string
	}{
		{"o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1", inbox.Prefix + "o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1"},
		{inbox.Prefix + "graph-0a1b", inbox.Prefix + "graph-0a1b"},
		{" local-0a1b ", inbox.Prefix + "local-0a1b"},
		{"../audit/x", ""},
		{"inbound/a/b", ""},
		{"", ""},
	} {
		if got, ok := inbox.Object(c.name); got != c.want || ok != (c.want != "") {
			t.Errorf("Object(%q) = %q %v, want %q", c.name, got, ok, c.want)
		}
	}
}
