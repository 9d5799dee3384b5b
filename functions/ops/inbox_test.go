package main

import (
	"context"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/obs"
)

// TestInboxShowsTheStoredMessage: `make ops ACTION=inbox SHOW=<id>` prints
// the message its alert names, the sender's address and the body
// included, from the id or the whole key; the log keeps neither; a name
// that is a path, or a message that is not stored, is refused.
func TestInboxShowsTheStoredMessage(t *testing.T) {
	e := newEnv(t)
	logs := &testkit.Buffer{}
	e.h.Log = obs.NewLogger(logs, "DEBUG")
	const id = "o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1"
	raw := "From: Ana <ana@example.com>\r\nTo: oracle@42sisters.ai\r\nSubject: Where is my verdict?\r\n" +
		"Message-ID: <q1@example.com>\r\n\r\nI paid an hour ago: the-body-of-the-message.\r\n"
	if err := inbox.NewMessages(awsenv.S3(e.f.AWS), e.f.Ref("InboxBucket")).Put(context.Background(), inbox.Prefix+id, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	for _, show := range []string{id, inbox.Prefix + id} {
		a := e.do(Request{Action: "inbox", Show: show})
		if !a.OK || !strings.Contains(a.Message, inbox.Prefix+id) || !strings.Contains(a.Text, "From: Ana <ana@example.com>") ||
			!strings.Contains(a.Text, "Subject: Where is my verdict?") || !strings.Contains(a.Text, "the-body-of-the-message") {
			t.Fatalf("SHOW=%s: %+v", show, a)
		}
	}
	for _, c := range []struct{ show, want string }{
		{"", "name the message"},
		{"../records/x", "letters, digits and dashes"},
		{"neverstored", "no message is stored as inbound/neverstored"},
	} {
		if a := e.do(Request{Action: "inbox", Show: c.show}); a.OK || !strings.Contains(a.Message, c.want) {
			t.Errorf("SHOW=%q: %+v, want refused with %q", c.show, a, c.want)
		}
	}
	if l := logs.String(); strings.Contains(l, "ana@example.com") || strings.Contains(l, "the-body-of-the-message") {
		t.Errorf("the log holds the address or the body:\n%s", l)
	}
}
