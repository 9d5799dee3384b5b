package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/oracle"
)

// A reply to an order's verdict email finds its order by the message id
// the send's own record (MailSent) keeps on the order, with no Ledger
// record of the message: the mailer writes none for a verdict email. Only
// a message that left is found so; a message no send recorded is no
// order's.
func TestAReplyToTheVerdictEmailFindsItsOrderByTheSendsRecord(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const sent, unsent = "cs_test_inboxVerdictSent0001", "cs_test_inboxVerdictNone0002"
	for _, c := range []struct {
		id, result string
		state      oracle.MailState
	}{
		{sent, "0100019verdict-sent", oracle.MailSent},
		{unsent, "none: no address", ""},
	} {
		if _, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: c.id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "q",
			AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: e.clock.Now()}, time.Minute); err != nil {
			t.Fatal(err)
		}
		token, err := e.orders.ClaimMail(ctx, c.id, oracle.MailVerdict, 0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.orders.MailSent(ctx, c.id, oracle.MailVerdict, token, c.result, c.state); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []struct {
		name    string
		headers []string
		want    string
	}{
		{"replies to the verdict email", []string{"In-Reply-To: <0100019verdict-sent@email.amazonses.com>"}, "order " + oracle.ShortID(sent)},
		{"references it", []string{"References: <x@example.com> <0100019verdict-sent@eu-west-1.amazonses.com>"}, "order " + oracle.ShortID(sent)},
		{"names what an unsent email recorded", []string{"In-Reply-To: <none: no address@email.amazonses.com>"}, "no order"},
		{"replies to an unknown message", []string{"In-Reply-To: <0100019never-sent@email.amazonses.com>"}, "no order"},
	} {
		raw := message(fmt.Sprintf("replier%d@example.com", i), "Re: Your verdict", append([]string{fmt.Sprintf("Message-ID: <reply-%d@example.com>", i)}, c.headers...)...)
		if err := e.handle(e.receive(raw, "PASS", "PASS")); err != nil {
			t.Fatal(err)
		}
		a := e.inboxAlerts()
		if len(a) != i+1 || !strings.Contains(a[i], c.want+";") {
			t.Errorf("%s: alert %q, want %q", c.name, a[len(a)-1], c.want)
		}
	}
}
