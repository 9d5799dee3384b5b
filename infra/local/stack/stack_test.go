package stack_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/local/traces"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/infra/tools"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
)

// buildDir receives the bootstraps of every stack the package's tests
// start. go build leaves a binary that is up to date alone, so only the
// first stack links the functions; each later one reuses what it built.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "oracle-stack-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	if code == 0 {
		// Last: what every test left behind, searched for what they used.
		code = sweepSuite()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// options are stack options for a test: free ports, the test's moto, a
// unique prefix, the package's build directory, and logs shown on failure.
func options(t testing.TB) stack.Options {
	t.Helper()
	tools.Find(t, "moto_server")
	var ports [6]int
	for i := range ports {
		p, err := motoserver.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	logs := &testkit.Buffer{}
	prefix := "e2e" + hex.EncodeToString(b) + "-"
	used.stack(prefix, motoserver.ForTest(t), logs)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stack logs:\n%s", logs)
		}
	})
	return stack.Options{
		Root:            filepath.Dir(provision.TemplatePath()),
		BuildDir:        buildDir,
		Port:            ports[0],
		StripePort:      ports[1],
		GeminiPort:      ports[2],
		SESPort:         ports[3],
		GraphPort:       ports[4],
		FacilitatorPort: ports[5],
		MotoEndpoint:    motoserver.ForTest(t),
		Prefix:          prefix,
		Log:             logs,
	}
}

// TestCheckoutToPaidOrder follows one order from the checkout to its email,
// with every request body base64-encoded as API Gateway sends binary
// content; the other tests of the stack send plain bodies.
func TestCheckoutToPaidOrder(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.ForceBase64 = true
	watch := watchDispatch(&o)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	if want := fmt.Sprintf("http://localhost:%d", o.Port); s.APIURL != want {
		t.Errorf("APIURL = %s, want %s", s.APIURL, want)
	}
	// What make run writes for sam local invoke, from this stack.
	checkSAMEnv(t, s, o)
	// Every call to the API is checked against its OpenAPI document.
	checker := apiChecker(t, s)
	client := &http.Client{
		Transport:     checker,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}

	// The customer asks for a checkout.
	req, _ := http.NewRequest("POST", s.APIURL+"/api/checkout", strings.NewReader(`{"tier":"quick","query":"Should I open a bakery?"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", s.APIURL)
	status, body, _ := send(t, client, req)
	if status != 200 {
		t.Fatalf("checkout: %d %s", status, body)
	}
	var checkout struct{ URL string }
	if err := json.Unmarshal(body, &checkout); err != nil {
		t.Fatalf("checkout body %s: %v", body, err)
	}
	payPrefix := fmt.Sprintf("http://localhost:%d/pay/", o.StripePort)
	sessionID := strings.TrimPrefix(checkout.URL, payPrefix)
	if !strings.HasPrefix(checkout.URL, payPrefix) || !strings.HasPrefix(sessionID, "cs_test_") {
		t.Fatalf("checkout url = %q, want %scs_test_...", checkout.URL, payPrefix)
	}

	// The hosted pay page, then paying on it.
	req, _ = http.NewRequest("GET", checkout.URL, nil)
	status, body, hdr := send(t, client, req)
	if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("pay page: %d %s %s", status, hdr.Get("Content-Type"), body)
	}
	addr := fmt.Sprintf("customer-%d@example.com", time.Now().UnixNano())
	req, _ = http.NewRequest("POST", checkout.URL, strings.NewReader(url.Values{"email": {addr}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	status, body, hdr = send(t, client, req)
	wantLocation := fmt.Sprintf("http://localhost:%d/oracle/result?session_id=%s", o.Port, sessionID)
	if status != http.StatusSeeOther || hdr.Get("Location") != wantLocation {
		t.Fatalf("pay: %d Location %q, want 303 %q (%s)", status, hdr.Get("Location"), wantLocation, body)
	}

	// The webhook, delivered before the redirect, made a paid order with
	// one generation job; the generator consumed it and stored the verdict.
	var item map[string]ddbtypes.AttributeValue
	if !testkit.Eventually(60*time.Second, 100*time.Millisecond, func() bool {
		item = orderItem(t, s, sessionID)
		st, ok := item["status"].(*ddbtypes.AttributeValueMemberS)
		return ok && st.Value == "READY"
	}) {
		t.Fatalf("the order did not become READY: %v", item)
	}
	v, ok := item["verdict"].(*ddbtypes.AttributeValueMemberS)
	if !ok {
		t.Fatalf("no verdict stored: %v", item)
	}
	if _, err := oracle.ParseAnalysis(oracle.TierQuick, []byte(v.Value)); err != nil {
		t.Errorf("stored verdict is not a valid quick take: %v", err)
	}
	if a, ok := item["attempts"].(*ddbtypes.AttributeValueMemberN); !ok || a.Value != "1" {
		t.Errorf("attempts = %v, want exactly one generation", item["attempts"])
	}

	// The mailer sent exactly one email, with the stored verdict and the
	// result page link, to the address paid with (read through the local
	// mailbox, /_local/mail).
	link := fmt.Sprintf("http://localhost:%d/oracle/result?session_id=%s", o.Port, sessionID)
	mine := mailbox(t, s.APIURL, addr)
	if len(mine) != 1 {
		t.Fatalf("%d emails for the session, want 1", len(mine))
	}
	if m := mine[0]; len(m.To) != 1 || m.Subject != "Your 42 Sisters AI Verdict" || !strings.Contains(m.Text, link) || !strings.Contains(m.Text, "Should I open a bakery?") {
		t.Errorf("email to %v %q, want the verdict with the link %s:\n%s", m.To, m.Subject, link, m.Text)
	}
	// Every line the order's run logged names its Lambda request and its
	// trace, and the order by its whole id: what the saved query one-order
	// reads in AWS.
	checkOrderLogs(t, o.Log.(*testkit.Buffer), sessionID)
	// The mailbox's page for people lists it too.
	req, _ = http.NewRequest("GET", s.APIURL+"/_local/mail", nil)
	status, body, hdr = send(t, client, req)
	if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(body), addr) {
		t.Errorf("local mailbox page: %d %s %.300s", status, hdr.Get("Content-Type"), body)
	}
	// VC-4: the email's link answers: the result page is served.
	req, _ = http.NewRequest("GET", link, nil)
	status, _, hdr = send(t, client, req)
	if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Errorf("result page link: %d %s", status, hdr.Get("Content-Type"))
	}

	// The result page's API serves the same stored verdict.
	req, _ = http.NewRequest("GET", s.APIURL+"/api/verdict?session_id="+sessionID, nil)
	status, body, _ = send(t, client, req)
	var served struct {
		Status  string          `json:"status"`
		Verdict json.RawMessage `json:"verdict"`
	}
	if err := json.Unmarshal(body, &served); status != http.StatusOK || err != nil || served.Status != "ready" || string(served.Verdict) != v.Value {
		t.Errorf("verdict API: %d %s, want the stored verdict %s", status, body, v.Value)
	}

	checkedAll(t, checker, "POST /api/checkout 200", "GET /oracle/result 200", "GET /api/verdict 200")
	watch.verify(t, s, []string{sessionID})

	// SQS delivers at least once: the same generate and mail jobs arriving
	// again, several in one batch, change nothing.
	q := sqs.NewFromConfig(s.AWS)
	drained(ctx, t, q, s)
	for queueID, job := range map[string]queue.Job{
		"GenerateQueue": {SessionID: sessionID, Reason: queue.ReasonPaid, Attempt: 1},
		"MailQueue":     {SessionID: sessionID, Kind: oracle.MailVerdict, Attempt: 1},
	} {
		body, _ := json.Marshal(job)
		var entries []sqstypes.SendMessageBatchRequestEntry
		for i := range 3 {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(string(body))})
		}
		if _, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.Resources.Ref(queueID)), Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	drained(ctx, t, q, s)
	if n := len(mailbox(t, s.APIURL, addr)); n != 1 {
		t.Errorf("after duplicate jobs: %d emails for the session, want 1", n)
	}
	again := orderItem(t, s, sessionID)
	if got, ok := again["verdict"].(*ddbtypes.AttributeValueMemberS); !ok || got.Value != v.Value {
		t.Errorf("after duplicate jobs the verdict changed: %v", again["verdict"])
	}
	if a, ok := again["attempts"].(*ddbtypes.AttributeValueMemberN); !ok || a.Value != "1" {
		t.Errorf("after duplicate jobs attempts = %v, want 1", again["attempts"])
	}
	if calls := len(modelCalls(t, s.GeminiURL)); calls != 1 {
		t.Errorf("the model was called %d times, want 1", calls)
	}
}

// orderItem reads the session's order as stored.
func orderItem(t testing.TB, s *stack.Stack, session string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := dynamodb.NewFromConfig(s.AWS).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(s.Resources.Ref("OrdersTable")),
		Key:            map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: session}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// drained waits until the generate and mail queues hold no message, visible
// or in flight, and their dead-letter queues none either. The deadletter
// function drains those at once, so a message that reached one is also
// found by its record in the Ledger.
func drained(ctx context.Context, t *testing.T, q *sqs.Client, s *stack.Stack) {
	t.Helper()
	busy := ""
	if !testkit.Eventually(60*time.Second, 100*time.Millisecond, func() bool {
		busy = ""
		for _, queueID := range []string{"GenerateQueue", "MailQueue", "DeadLetterQueue"} {
			attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(s.Resources.Ref(queueID)),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
					sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(queueID, "DeadLetterQueue") && (attrs.Attributes["ApproximateNumberOfMessages"] != "0" || attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != "0") {
				t.Fatalf("%s holds %s messages and %s in flight", queueID, attrs.Attributes["ApproximateNumberOfMessages"], attrs.Attributes["ApproximateNumberOfMessagesNotVisible"])
			}
			if attrs.Attributes["ApproximateNumberOfMessages"] != "0" || attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != "0" {
				busy = queueID
			}
		}
		return busy == ""
	}) {
		t.Fatalf("%s did not drain", busy)
	}
	if dead := deadLetterRecords(ctx, t, s); len(dead) > 0 {
		t.Fatalf("messages reached a dead-letter queue: %q", dead)
	}
}

func send(t testing.TB, c *http.Client, req *http.Request) (int, []byte, http.Header) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

func TestInvokeOneFunction(t *testing.T) {
	t.Parallel()
	o := options(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	event, err := json.Marshal(events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: "POST /api/checkout",
		RawPath:  "/api/checkout",
		Headers:  map[string]string{"content-type": "application/json"},
		Body:     `{"tier":"quick","query":"Should I open a bakery?"}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/api/checkout"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A running stack's trace receiver on its front door's port: the
	// invocation's spans join it.
	received := traces.NewStore(traces.Limits{})
	mux := http.NewServeMux()
	mux.Handle("/_local/otlp/v1/traces", traces.Receiver{Store: received})
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", o.Port))
	if err != nil {
		t.Fatal(err)
	}
	front := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = front.Serve(ln) }()
	defer front.Close()
	out, err := stack.Invoke(ctx, o, "CheckoutFunction", event)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	if resp.StatusCode != 200 || !strings.Contains(resp.Body, "/pay/cs_test_") {
		t.Errorf("response %d %s, want 200 with a pay page url", resp.StatusCode, resp.Body)
	}
	session := regexp.MustCompile(`cs_test_[A-Za-z0-9]+`).FindString(resp.Body)
	if got := received.Order(oracle.ShortID(session)); len(got) != 1 || len(got[0].Spans) < 2 || got[0].Spans[0].Service != "checkout" {
		t.Errorf("the running stack received %+v for %s, want the invocation's trace: the checkout's span and its call to Stripe", got, session)
	}
	if _, err := stack.Invoke(ctx, o, "NoSuchFunction", event); err == nil || !strings.Contains(err.Error(), "CheckoutFunction") {
		t.Errorf("unknown function: err = %v, want one listing the functions", err)
	}
}

func TestStripeKeyMustBeTestMode(t *testing.T) {
	tests := []struct{ key, want string }{
		{"sk_live_123", "live-mode key"},
		{"pk_test_123", "sk_test_"},
	}
	for _, tc := range tests {
		_, err := stack.Start(context.Background(), stack.Options{Root: t.TempDir(), StripeSecretKey: tc.key})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("key %s: err = %v, want %q", tc.key, err, tc.want)
		}
	}
}
