package stack_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
)

// TestChatSignInEmailThroughTheStack: a sign-in job on the mail queue, as
// the chat function sends it, becomes one email in /_local/mail whose link
// signs its account in; the job again sends nothing more, and no log line
// of the stack holds the address or the link.
func TestChatSignInEmailThroughTheStack(t *testing.T) {
	t.Parallel()
	o := options(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h, err := audit.NewHasher(stack.LocalHashPepper)
	if err != nil {
		t.Fatal(err)
	}
	accounts := chat.NewStore(awsenv.NewTables(s.AWS), s.Resources.Ref("ChatTable"), h, nil)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	addr := "chat-" + hex.EncodeToString(b) + "@example.com"
	account, _, err := accounts.SignUp(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(queue.Job{Kind: oracle.MailChatSignIn, Account: account, Nonce: "req_" + hex.EncodeToString(b)})
	q := sqs.NewFromConfig(s.AWS)
	for range 2 {
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.Resources.Ref("MailQueue")), MessageBody: aws.String(string(body))}); err != nil {
			t.Fatal(err)
		}
	}
	mailbox(t, s.APIURL, addr) // waits for the first
	mailIdle(t, s)
	got := mailbox(t, s.APIURL, addr)
	if len(got) != 1 || got[0].Subject != "Your sign-in link for Sisters Chat" {
		t.Fatalf("%d emails (%+v), want the one sign-in email", len(got), got)
	}
	link := regexp.MustCompile(`/chat/signin\?token=([A-Za-z0-9_-]{43})\n`).FindStringSubmatch(got[0].Text)
	if link == nil || !strings.HasPrefix(got[0].Text[strings.Index(got[0].Text, "http"):], s.APIURL) {
		t.Fatalf("no sign-in link to the stack's site in\n%s", got[0].Text)
	}
	if signedIn, err := accounts.ConsumeSignIn(ctx, link[1]); err != nil || signedIn != account {
		t.Fatalf("the emailed link signs in %q, %v; want %q", signedIn, err, account)
	}
	for _, line := range strings.Split(o.Log.(*testkit.Buffer).String(), "\n") {
		if strings.Contains(line, addr) || strings.Contains(line, link[1]) {
			t.Errorf("a log line holds the address or the link: %.300s", line)
		}
	}
}
