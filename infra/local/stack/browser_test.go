package stack_test

import (
	"42sisters.ai/oracle/infra/browsertest"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/chromedp/chromedp"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
)

// TestBrowserEndToEnd is the customer's whole path on the local stack, in
// headless Chromium, for every tier and every verdict (four paths that
// cover each): the order form, the
// fake Stripe's pay page, the result page showing the verdict, and exactly
// one email with the same verdict in the mailbox.
func TestBrowserEndToEnd(t *testing.T) {
	t.Parallel()
	o := options(t)
	watch := watchDispatch(&o)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	artifacts := filepath.Join(filepath.Dir(provision.TemplatePath()), "test-artifacts", "e2e")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	browser := browsertest.Start(t)

	var addrs, queries, sessions []string
	t.Cleanup(func() { privacySweep(t, s, o, addrs, queries) })
	defer func() { watch.verify(t, s, sessions) }()
	// Every tier and every verdict, each at least once: the pages'
	// own browser test renders every pair, and each path here costs a
	// whole checkout in Chromium.
	tiers := oracle.Tiers()
	for i, v := range []oracle.Verdict{oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed, oracle.VerdictNull} {
		tier := tiers[i%len(tiers)]
		t.Run(fmt.Sprintf("%s/%s", tier, v), func(t *testing.T) {
			post(t, s.GeminiURL+"/_control", fmt.Sprintf(`{"verdict":%q}`, v))
			addr := fmt.Sprintf("%s-%s-%d@example.com", tier, strings.ToLower(string(v)), time.Now().UnixNano())
			query := fmt.Sprintf("Should I open a %s bakery? (%s)", strings.ToLower(string(v)), tier)
			addrs, queries = append(addrs, addr), append(queries, query)
			tab := browsertest.Tab(t, browser, 60*time.Second)
			err := chromedp.Do(tab,
				chromedp.Navigate(s.APIURL+"/"),
				chromedp.WaitVisible(chromedp.ID("order")),
				chromedp.Click(chromedp.CSS(`label[for="tier-`+string(tier)+`"]`)),
				chromedp.SendKeys(chromedp.ID("query"), query),
				chromedp.Click(chromedp.ID("submit")),
				// The fake Stripe's hosted pay page.
				chromedp.WaitVisible(chromedp.ID("email")),
				chromedp.SendKeys(chromedp.ID("email"), addr),
				chromedp.Submit(chromedp.ID("email")),
				// Back on the result page, which turns into the verdict.
				chromedp.WaitVisible(chromedp.ID("verdict")),
			)
			if err != nil {
				t.Fatalf("browser: %v", err)
			}
			word, err := chromedp.Run(tab, chromedp.TextContent(chromedp.ID("verdict")))
			if err != nil {
				t.Fatal(err)
			}
			location, err := chromedp.Run(tab, chromedp.Location())
			if err != nil {
				t.Fatal(err)
			}
			page, err := url.Parse(location)
			if err != nil {
				t.Fatal(err)
			}
			sessions = append(sessions, page.Query().Get("session_id"))
			if shot, err := chromedp.Run(tab, chromedp.FullScreenshot(100)); err == nil {
				_ = os.WriteFile(filepath.Join(artifacts, fmt.Sprintf("%s-%s.png", tier, strings.ToLower(string(v)))), shot, 0o644)
			}
			if !strings.Contains(word, string(v)) {
				t.Fatalf("the page shows %q, want %s", word, v)
			}
			mails := mailbox(t, s.APIURL, addr)
			if len(mails) != 1 {
				t.Fatalf("%d emails to the customer, want 1", len(mails))
			}
			if !strings.Contains(mails[0].Text, "VERDICT: ") || !strings.Contains(mails[0].Text, " "+string(v)+"\n") || !strings.Contains(mails[0].Text, query) {
				t.Fatalf("the email does not carry the %s verdict:\n%s", v, mails[0].Text)
			}
		})
	}
}

// mailbox waits up to 30 s for the customer's email in the local mailbox
// (/_local/mail) and returns the messages sent to addr.
func mailbox(t *testing.T, api, addr string) []motoserver.Sent {
	t.Helper()
	var mine []motoserver.Sent
	testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool {
		_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", api+"/_local/mail?format=json"))
		var all []motoserver.Sent // the page's lower-case keys match its fields
		if err := json.Unmarshal(body, &all); err != nil {
			t.Fatalf("local mailbox: %v: %.200s", err, body)
		}
		mine = nil
		for _, m := range all {
			if slices.Contains(m.To, addr) {
				mine = append(mine, m)
			}
		}
		return len(mine) > 0
	})
	return mine
}

// privacySweep checks, after the whole suite, that no email address is in
// any order item, Ledger item or audit record, that no query or email text
// is in the Ledger, and that no address or query reached a log line of any
// function (PRODUCT_TIERS VC-6, AUDIT_TRAIL VC-4).
func privacySweep(t *testing.T, s *stack.Stack, o stack.Options, addrs, queries []string) {
	t.Helper()
	for _, a := range addrs {
		used.address(a)
	}
	for _, q := range queries {
		used.query(q)
	}
	ctx := context.Background()
	items, err := dynamodb.NewFromConfig(s.AWS).Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.Resources.Ref("OrdersTable"))})
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range items.Items {
		if dump := fmt.Sprintf("%#v", item); strings.Contains(dump, "@") {
			t.Errorf("an order item holds an email address: %s", dump)
		}
	}
	// The Ledger too: dead letters, the suppression list and the alert
	// windows hold sessions, kinds and keyed hashes, never an address, a
	// query or an email's text.
	ledger, err := dynamodb.NewFromConfig(s.AWS).Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.Resources.Ref("LedgerTable"))})
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range ledger.Items {
		dump := fmt.Sprintf("%#v", item)
		if strings.Contains(dump, "@") || strings.Contains(dump, "VERDICT:") {
			t.Errorf("a Ledger item holds an email address or an email's text: %s", dump)
		}
		for _, q := range queries {
			if strings.Contains(dump, q) {
				t.Errorf("a Ledger item holds a query: %s", dump)
			}
		}
	}
	testkit.AuditRecords(t, awsenv.S3(s.AWS), s.Resources.Ref("AuditBucket")) // fails on any address
	logs := o.Log.(*testkit.Buffer).String()
	for _, secret := range append(append([]string{}, addrs...), queries...) {
		// The fake Stripe and the local mailbox are Stripe's and the
		// customer's side; the functions' own lines must never carry these.
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, secret) && !strings.HasPrefix(line, "[stripe]") && !strings.HasPrefix(line, "[gemini]") {
				t.Errorf("a log line carries customer data: %.200s", line)
			}
		}
	}
}
