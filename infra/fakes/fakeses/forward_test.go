package fakeses_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"42sisters.ai/oracle/infra/fakes/fakeses"
	"42sisters.ai/oracle/shared/awsenv"
)

// signatureChecker stands in for moto and checks that each request it
// receives still carries a valid SigV4 signature, as AWS would.
type signatureChecker struct {
	t     *testing.T
	mu    sync.Mutex
	paths []string
}

func (c *signatureChecker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		c.t.Errorf("read request: %v", err)
	}
	if err := verifySignature(r, body); err != "" {
		c.t.Errorf("%s %s: %s", r.Method, r.URL.Path, err)
	}
	c.mu.Lock()
	c.paths = append(c.paths, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/v2/email/outbound-emails" {
		_, _ = io.WriteString(w, `{"MessageId":"stub-0001"}`)
		return
	}
	_, _ = io.WriteString(w, `{}`)
}

// verifySignature signs anew, with the test credentials, the headers the
// request says it signed, and compares the signatures; it returns what is
// wrong, or "".
func verifySignature(r *http.Request, body []byte) string {
	auth := r.Header.Get("Authorization")
	_, signedList, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return "no signature: " + auth
	}
	signedList, _, _ = strings.Cut(signedList, ",")
	_, want, _ := strings.Cut(auth, "Signature=")
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "no X-Amz-Date"
	}
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err.Error()
	}
	for _, h := range strings.Split(signedList, ";") {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "ses", region, at); err != nil {
		return err.Error()
	}
	if _, got, _ := strings.Cut(again.Header.Get("Authorization"), "Signature="); got != want {
		return "the signature does not match the request received"
	}
	return ""
}

// TestForwardKeepsTheSignedRequest: SendEmail and the other calls reach
// moto as the SDK signed them (host, headers and body), and moto's answer
// reaches the SDK.
func TestForwardKeepsTheSignedRequest(t *testing.T) {
	checker := &signatureChecker{t: t}
	moto := httptest.NewServer(checker)
	defer moto.Close()
	cfg := awsenv.ForEndpoint(moto.URL, region)

	// The check itself first: a request straight to the stub passes it.
	direct := sesv2.NewFromConfig(cfg)
	if _, err := direct.GetAccount(context.Background(), &sesv2.GetAccountInput{}); err != nil {
		t.Fatalf("GetAccount straight to the stub: %v", err)
	}

	front := httptest.NewServer(fakeses.New(fakeses.Options{Moto: moto.URL, AWS: cfg}))
	defer front.Close()
	ses := sesv2.NewFromConfig(cfg, func(o *sesv2.Options) { o.BaseEndpoint = aws.String(front.URL) })
	out, err := ses.SendEmail(context.Background(), input(configSet, buyer))
	if err != nil {
		t.Fatalf("SendEmail through the front: %v", err)
	}
	if got := aws.ToString(out.MessageId); got != "stub-0001" {
		t.Errorf("message id %q, want moto's stub-0001", got)
	}
	if _, err := ses.ListEmailIdentities(context.Background(), &sesv2.ListEmailIdentitiesInput{}); err != nil {
		t.Fatalf("ListEmailIdentities through the front: %v", err)
	}
	checker.mu.Lock()
	defer checker.mu.Unlock()
	if want := []string{"GET /v2/email/account", "POST /v2/email/outbound-emails", "POST /v2/email/list-identities"}; strings.Join(checker.paths, ",") != strings.Join(want, ",") {
		t.Errorf("moto received %v, want %v", checker.paths, want)
	}
}
