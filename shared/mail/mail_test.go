package mail_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
)

type fixture struct {
	ses      *mail.SES
	client   *sesv2.Client
	endpoint string
	clock    *testkit.Clock
}

// newFixture is SES in moto with the brand's sender verified. moto keeps
// one SES mailbox for the whole server, so each test finds its own
// messages by id and sends to its own recipient.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := provision.ForTest(t, nil)
	c := sesv2.NewFromConfig(f.AWS)
	if err := motoserver.VerifySender(context.Background(), c, letter.DefaultBrand().From()); err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock(time.Date(2026, 11, 21, 14, 23, 7, 0, time.UTC))
	return &fixture{ses: &mail.SES{Client: mail.NewClient(f.AWS), Now: clock.Now}, client: c, endpoint: aws.ToString(f.AWS.BaseEndpoint), clock: clock}
}

func recipient(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "customer+" + hex.EncodeToString(b) + "@example.com"
}

// received is the message moto accepted under id.
func (fx *fixture) received(t *testing.T, id string) motoserver.Sent {
	t.Helper()
	all, err := motoserver.Mailbox{}.Sent(context.Background(), fx.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.ID == id {
			wire(t, s.Raw)
			return s
		}
	}
	t.Fatalf("message %s is not in the mailbox (%d messages)", id, len(all))
	return motoserver.Sent{}
}

// wire checks what SES demands of a raw message and moto does not: 7-bit
// ASCII, CRLF line ends, lines of at most 998 characters.
func wire(t *testing.T, raw string) {
	t.Helper()
	for i, line := range strings.Split(strings.TrimSuffix(raw, "\r\n"), "\r\n") {
		if len(line) > 998 || strings.ContainsAny(line, "\r\n") {
			t.Errorf("line %d is %d characters or has a bare line break", i+1, len(line))
		}
		for _, c := range []byte(line) {
			if c >= 0x80 {
				t.Errorf("line %d is not 7-bit ASCII", i+1)
				break
			}
		}
	}
}

func TestVerdictLetterArrivesIntact(t *testing.T) {
	fx := newFixture(t)
	brand := letter.DefaultBrand()
	query := "Crème brûlée café in Montréal 🍮 — should I open it?\nSecond line with trailing spaces   \n" + strings.Repeat("Très long ", 150)
	a := oracle.Analysis{
		Verdict: oracle.VerdictNull,
		Summary: "Not enough signal to judge — «café» economics depend on rent 🏙️, which you haven't given.",
		Breakdown: map[string]oracle.DimensionNote{
			"Stability": {Verdict: oracle.VerdictGreen, Analysis: "Dessert demand is steady année après année."}, "Turbulence": {Verdict: oracle.VerdictAmber, Analysis: "Tourist seasons swing ±40%."},
			"Change Rate": {Verdict: oracle.VerdictRed, Analysis: "Rents rise faster than prices = trouble."}, "Completion": {Verdict: oracle.VerdictAmber, Analysis: "No supplier named."},
			"Curvature": {Verdict: oracle.VerdictGreen, Analysis: "Catering could compound — 一石二鳥."},
		},
		Strategy: &oracle.Strategy{NextStep: "Price a 12-month lease.", Alternative: "Start as a pop-up.", Tests: []string{"Sell 100 at a market.", "Ask 3 cafés to stock you.", "Cost the oven."}},
	}
	m, err := letter.Verdict(brand, oracle.TierStrategy, query, a, "https://42sisters.ai/oracle/result?session_id=cs_test_abc123&from=mail")
	if err != nil {
		t.Fatal(err)
	}
	to := recipient(t)
	id, err := fx.ses.Send(context.Background(), mail.Outgoing{From: brand.From(), To: to, ReplyTo: brand.Support, Subject: m.Subject, Text: m.Text, HTML: m.HTML})
	if err != nil {
		t.Fatal(err)
	}
	got := fx.received(t, id)
	if got.Subject != m.Subject || got.Text != m.Text || got.HTML != m.HTML {
		t.Fatalf("the message changed on the way:\nsubject %q\ntext:\n%s\nhtml:\n%s", got.Subject, got.Text, got.HTML)
	}
	if got.From != "42 Sisters AI <oracle@42sisters.ai>" || len(got.To) != 1 || got.To[0] != to || got.ReplyTo != "oracle@42sisters.ai" {
		t.Errorf("addresses: from %q to %q reply-to %q", got.From, got.To, got.ReplyTo)
	}
	if !got.At.Equal(fx.clock.Now()) {
		t.Errorf("date %v, want %v", got.At, fx.clock.Now())
	}
}

func TestNonASCIISubjectAndPlainTextOnly(t *testing.T) {
	// The notice's subject has a dash outside ASCII; a long accented
	// subject folds over several header lines; a message may be text only.
	fx := newFixture(t)
	n, err := letter.SilentDropNotice(letter.DefaultBrand())
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("Votre verdict « très » attendu — ", 40) // folded: encoded, it is longer than a header line may be
	for _, m := range []mail.Outgoing{
		{Subject: n.Subject, Text: n.Text, HTML: n.HTML},
		{Subject: long, Text: "Ligne unique sans fin " + strings.Repeat("é", 3000) + "\n= égal =\n"},
	} {
		m.From, m.To = letter.DefaultBrand().From(), recipient(t)
		id, err := fx.ses.Send(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		got := fx.received(t, id)
		if got.Subject != m.Subject || got.Text != m.Text || got.HTML != m.HTML {
			t.Errorf("changed on the way: subject %q, text %d bytes (want %d), html %d bytes (want %d)", got.Subject, len(got.Text), len(m.Text), len(got.HTML), len(m.HTML))
		}
		if got.ReplyTo != "" {
			t.Errorf("reply-to %q without one being set", got.ReplyTo)
		}
	}
}

func TestMailboxReadsOtherEncodings(t *testing.T) {
	// Mail that another sender built: a single base64 part, and HTML inside
	// multipart/mixed inside multipart/alternative.
	fx := newFixture(t)
	to := recipient(t)
	raws := map[string][2]string{ // raw message -> text, HTML
		"From: oracle@42sisters.ai\r\nTo: " + to + "\r\nSubject: =?UTF-8?B?w6l0w6k=?=\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: base64\r\n\r\nw6l0w6kg8J+MnQ==\r\n": {"été 🌝", ""},
		"From: oracle@42sisters.ai\r\nTo: " + to + "\r\nSubject: nested\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=outer\r\n\r\n" +
			"--outer\r\nContent-Type: multipart/alternative; boundary=inner\r\n\r\n" +
			"--inner\r\nContent-Type: text/plain; charset=UTF-8\r\n\r\nplain\r\n" +
			"--inner\r\nContent-Type: text/html; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n<p>caf=C3=A9</p>\r\n--inner--\r\n" +
			"--outer--\r\n": {"plain", "<p>café</p>"},
	}
	for raw, want := range raws {
		out, err := fx.client.SendEmail(context.Background(), &sesv2.SendEmailInput{
			FromEmailAddress: aws.String("oracle@42sisters.ai"),
			Destination:      &types.Destination{ToAddresses: []string{to}},
			Content:          &types.EmailContent{Raw: &types.RawMessage{Data: []byte(raw)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		got := fx.received(t, aws.ToString(out.MessageId))
		if got.Text != want[0] || got.HTML != want[1] {
			t.Errorf("read text %q html %q, want %q %q", got.Text, got.HTML, want[0], want[1])
		}
		if len(got.To) != 1 || got.To[0] != to {
			t.Errorf("recipients %q", got.To)
		}
	}
}

func TestUnverifiedSenderIsPermanent(t *testing.T) {
	fx := newFixture(t)
	to := recipient(t)
	_, err := fx.ses.Send(context.Background(), mail.Outgoing{From: "oracle@unverified.example", To: to, Subject: "s", Text: "t"})
	var e *mail.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a *mail.Error, got %v", err)
	}
	if e.Class != mail.Permanent || e.Code != "MessageRejected" || e.Status != http.StatusBadRequest {
		t.Errorf("classified %s (code %q, status %d), want a permanent rejection", e.Class, e.Code, e.Status)
	}
	if strings.Contains(strings.ToLower(err.Error()), strings.ToLower(to)) {
		t.Errorf("the recipient is in the error: %v", err)
	}
}

func TestVerifySenderIsIdempotent(t *testing.T) {
	fx := newFixture(t)
	for i := 0; i < 2; i++ {
		if err := motoserver.VerifySender(context.Background(), fx.client, "Sender <sender@42sisters.ai>"); err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	if err := motoserver.VerifySender(context.Background(), fx.client, "not an address"); err == nil {
		t.Fatal("an invalid address was accepted")
	}
	id, err := fx.ses.Send(context.Background(), mail.Outgoing{From: "sender@42sisters.ai", To: recipient(t), Subject: "s", Text: "t"})
	if err != nil || id == "" {
		t.Fatalf("send from the verified sender: %q %v", id, err)
	}
}

// fakeSES answers every request with one SES error whose message quotes the
// recipient, as SES's sandbox does when a recipient is unverified.
func fakeSES(t *testing.T, status int, code, message string) *mail.SES {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", code)
		w.Header().Set("X-Amzn-Requestid", "req-1234")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"message":` + quote(message) + `}`))
	}))
	t.Cleanup(srv.Close)
	return client(srv.URL)
}

func client(endpoint string) *mail.SES {
	// No SDK retries: each case is one request and one answer.
	c := mail.NewClient(awsenv.ForEndpoint(endpoint, provision.TestRegion), func(o *sesv2.Options) { o.Retryer = aws.NopRetryer{} })
	return &mail.SES{Client: c}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

const victim = "Jane.Doe+oracle@Example.com"

func TestErrorClassification(t *testing.T) {
	cases := []struct {
		status int
		code   string
		class  mail.Class
	}{
		{429, "TooManyRequestsException", mail.Transient},
		{400, "LimitExceededException", mail.Transient},
		{400, "MessageRejected", mail.Permanent},
		{400, "BadRequestException", mail.Permanent},
		{404, "NotFoundException", mail.Permanent},
		{400, "AccountSuspendedException", mail.Blocked},
		{400, "SendingPausedException", mail.Blocked},
		{400, "MailFromDomainNotVerifiedException", mail.Blocked},
		{403, "AccessDeniedException", mail.Blocked},
		{403, "ExpiredTokenException", mail.Transient},
		{500, "InternalFailure", mail.Transient},
		{503, "ServiceUnavailable", mail.Transient},
		{400, "SomeFutureException", mail.Permanent},
		{429, "SomeFutureThrottle", mail.Transient},
	}
	message := "Email address is not verified. The following identities failed the check in region US-EAST-1: " + victim
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			ses := fakeSES(t, c.status, c.code, message)
			_, err := ses.Send(context.Background(), mail.Outgoing{From: "oracle@42sisters.ai", To: victim, Subject: "s", Text: "t"})
			var e *mail.Error
			if !errors.As(err, &e) {
				t.Fatalf("want a *mail.Error, got %v", err)
			}
			if e.Class != c.class || e.Code != c.code || e.Status != c.status || e.RequestID != "req-1234" || e.Transport != "SES" {
				t.Errorf("got %s %s code %q status %d request %q, want %s", e.Transport, e.Class, e.Code, e.Status, e.RequestID, c.class)
			}
			if mail.ClassOf(err) != c.class {
				t.Errorf("ClassOf = %s, want %s", mail.ClassOf(err), c.class)
			}
			if s := strings.ToLower(err.Error()); strings.Contains(s, "jane.doe") || strings.Contains(s, "identities failed") {
				t.Errorf("SES's message reached the error: %v", err)
			}
		})
	}
}

func TestNoAnswerIsTransient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	endpoint := srv.URL
	srv.Close() // nothing listens there any more
	_, err := client(endpoint).Send(context.Background(), mail.Outgoing{From: "oracle@42sisters.ai", To: victim, Subject: "s", Text: "t"})
	if mail.ClassOf(err) != mail.Transient || strings.Contains(strings.ToLower(err.Error()), "jane.doe") {
		t.Fatalf("connection refused: %v", err)
	}
	// A context that has run out is a temporary failure that still says so.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = client(endpoint).Send(ctx, mail.Outgoing{From: "oracle@42sisters.ai", To: victim, Subject: "s", Text: "t"})
	var e *mail.Error
	if !errors.As(err, &e) || e.Class != mail.Transient || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestMalformedMessagesAreRefusedBeforeSending(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("a malformed message reached SES")
	}))
	defer srv.Close()
	ses := client(srv.URL)
	ok := mail.Outgoing{From: "oracle@42sisters.ai", To: victim, Subject: "s", Text: "t"}
	cases := map[string]func(*mail.Outgoing){
		"recipient not an address":   func(m *mail.Outgoing) { m.To = "Jane.Doe at example.com" },
		"two recipients":             func(m *mail.Outgoing) { m.To = victim + ", Jane.Doe2@example.com" },
		"recipient header injection": func(m *mail.Outgoing) { m.To = victim + "\r\nBcc: Jane.Doe3@example.com" },
		"sender not an address":      func(m *mail.Outgoing) { m.From = "oracle" },
		"reply-to not an address":    func(m *mail.Outgoing) { m.ReplyTo = "Jane.Doe@" },
		"subject header injection":   func(m *mail.Outgoing) { m.Subject = "hi\r\nBcc: Jane.Doe@example.com" },
		"blank subject":              func(m *mail.Outgoing) { m.Subject = "  " },
		"ASCII subject too long":     func(m *mail.Outgoing) { m.Subject = strings.Repeat("x", 1000) },
		"no plain text":              func(m *mail.Outgoing) { m.Text, m.HTML = "", "<p>only html</p>" },
		"invalid UTF-8":              func(m *mail.Outgoing) { m.Text = "caf\xe9" },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			m := ok
			mutate(&m)
			_, err := ses.Send(context.Background(), m)
			var e *mail.Error
			if !errors.As(err, &e) || e.Class != mail.Permanent {
				t.Fatalf("want a permanent rejection, got %v", err)
			}
			if strings.Contains(strings.ToLower(err.Error()), "jane.doe") {
				t.Errorf("an address is in the error: %v", err)
			}
		})
	}
}

// Item 7 of the email work: a customer whose address has an internationalised
// domain gets the email, sent to the domain's punycode; an address whose
// local part is not ASCII cannot be sent through SES at all and is refused
// for good, without quoting it.
func TestInternationalisedAddresses(t *testing.T) {
	fx := newFixture(t)
	local := strings.TrimSuffix(recipient(t), "@example.com")
	id, err := fx.ses.Send(context.Background(), mail.Outgoing{From: letter.DefaultBrand().From(), To: local + "@bücher.example", Subject: "s", Text: "t"})
	if err != nil {
		t.Fatalf("an IDN domain: %v", err)
	}
	got := fx.received(t, id)
	if len(got.To) != 1 || got.To[0] != local+"@xn--bcher-kva.example" {
		t.Fatalf("sent to %q, want the punycode domain", got.To)
	}
	for name, to := range map[string]string{"non-ASCII local part": "jösé@example.com", "a domain IDNA refuses": "jane@bü\u200dcher.example"} {
		_, err := fx.ses.Send(context.Background(), mail.Outgoing{From: letter.DefaultBrand().From(), To: to, Subject: "s", Text: "t"})
		if mail.ClassOf(err) != mail.Permanent {
			t.Errorf("%s: %v, want a permanent refusal", name, err)
		}
		if err != nil && strings.Contains(err.Error(), strings.Split(to, "@")[0]) {
			t.Errorf("%s: the address is in the error: %v", name, err)
		}
	}
}

// VER-07: the same email sent again is the same bytes but for its Date
// header (the multipart boundary follows from the content).
func TestTheSameEmailIsTheSameBytes(t *testing.T) {
	fx := newFixture(t)
	m := mail.Outgoing{From: letter.DefaultBrand().From(), To: recipient(t), Subject: "Your verdict", Text: "GREEN\n\nGo.", HTML: "<p>GREEN</p>"}
	var raws []string
	for i := 0; i < 2; i++ {
		id, err := fx.ses.Send(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, withoutDate(fx.received(t, id).Raw))
		fx.clock.Add(time.Hour)
	}
	if raws[0] != raws[1] {
		t.Fatalf("two sends of one email differ:\n%s\n---\n%s", raws[0], raws[1])
	}
	m.Text += " Changed."
	id, err := fx.ses.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if withoutDate(fx.received(t, id).Raw) == raws[0] {
		t.Fatal("a different email has the same bytes: the comparison proves nothing")
	}
}

func withoutDate(raw string) string {
	var keep []string
	for _, line := range strings.Split(raw, "\r\n") {
		if !strings.HasPrefix(line, "Date: ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\r\n")
}

// The configuration set and the tags travel with the message, so that SES's
// events about it name the session and the kind.
func TestConfigurationSetAndTagsAreSent(t *testing.T) {
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"MessageId":"msg-1"}`))
	}))
	t.Cleanup(srv.Close)
	ses := client(srv.URL)
	ses.ConfigurationSet = "oracle-mail"
	id, err := ses.Send(context.Background(), mail.Outgoing{From: "oracle@42sisters.ai", To: victim, Subject: "s", Text: "t",
		Tags: map[string]string{"session_id": "cs_test_abc", "mail_kind": "verdict"}})
	if err != nil || id != "msg-1" {
		t.Fatalf("send: %q %v", id, err)
	}
	for _, want := range []string{`"ConfigurationSetName":"oracle-mail"`, `{"Name":"mail_kind","Value":"verdict"}`, `{"Name":"session_id","Value":"cs_test_abc"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("the request lacks %s: %s", want, body)
		}
	}
}

// A throttled SES that says when to come back is heard.
func TestSESRetryAfterIsKept(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-Errortype", "TooManyRequestsException")
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"message":"slow down"}`))
	}))
	t.Cleanup(srv.Close)
	_, err := client(srv.URL).Send(context.Background(), mail.Outgoing{From: "oracle@42sisters.ai", To: victim, Subject: "s", Text: "t"})
	if mail.ClassOf(err) != mail.Transient || mail.RetryAfter(err) != 120*time.Second {
		t.Fatalf("%v: class %s, retry after %s", err, mail.ClassOf(err), mail.RetryAfter(err))
	}
}

// TestASendIsRetriedAtOnceOnlyWhenSESCertainlyDidNotTakeIt: with the
// client's own retryer, an answer lost after SES read the request (a
// connection reset, a 500, a 503) is one request and a transient failure,
// never a second send; throttling, which SES answers without taking the
// message, is retried.
func TestASendIsRetriedAtOnceOnlyWhenSESCertainlyDidNotTakeIt(t *testing.T) {
	cases := []struct {
		name     string
		answer   func(w http.ResponseWriter)
		requests int
	}{
		{"connection reset after the request", func(w http.ResponseWriter) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				if tcp, ok := conn.(*net.TCPConn); ok {
					_ = tcp.SetLinger(0) // an RST, not a FIN
				}
				conn.Close()
			}
		}, 1},
		{"answer cut mid-body", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"MessageId":`))
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		}, 1},
		{"internal error", func(w http.ResponseWriter) {
			w.Header().Set("X-Amzn-Errortype", "InternalFailure")
			w.WriteHeader(http.StatusInternalServerError)
		}, 1},
		{"unavailable", func(w http.ResponseWriter) {
			w.Header().Set("X-Amzn-Errortype", "ServiceUnavailable")
			w.WriteHeader(http.StatusServiceUnavailable)
		}, 1},
		{"throttled", func(w http.ResponseWriter) {
			w.Header().Set("X-Amzn-Errortype", "TooManyRequestsException")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"message":"slow down"}`))
		}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			requests := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				mu.Lock()
				requests++
				mu.Unlock()
				c.answer(w)
			}))
			t.Cleanup(srv.Close)
			cfg := awsenv.ForEndpoint(srv.URL, provision.TestRegion)
			// The retryer's backoff, not waited for.
			ses := &mail.SES{Client: mail.NewClient(cfg, func(o *sesv2.Options) {
				o.Retryer = retry.AddWithMaxBackoffDelay(o.Retryer, time.Millisecond)
			})}
			_, err := ses.Send(context.Background(), mail.Outgoing{From: "oracle@42sisters.ai", To: victim, Subject: "s", Text: "t"})
			if mail.ClassOf(err) != mail.Transient {
				t.Fatalf("%v: class %s, want transient", err, mail.ClassOf(err))
			}
			mu.Lock()
			defer mu.Unlock()
			if requests != c.requests {
				t.Fatalf("%d requests, want %d", requests, c.requests)
			}
		})
	}
}
