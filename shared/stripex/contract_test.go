package stripex

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/tools"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
)

// stripeMock starts stripe-mock, Stripe's own server that validates requests
// against the published OpenAPI specification.
func stripeMock(t *testing.T) string {
	t.Helper()
	bin := tools.Find(t, "stripe-mock")
	port, err := motoserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-http-addr", fmt.Sprintf("127.0.0.1:%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url + "/v1/charges"); err == nil {
			resp.Body.Close()
			return url
		}
		<-tick.C
	}
	t.Fatal("stripe-mock did not start")
	return ""
}

func TestCheckoutRequestContract(t *testing.T) {
	url := stripeMock(t)
	c := New("sk_test_123", Options{BaseURL: url, Timeout: 5 * time.Second})
	queries := map[string]string{
		"short":     "Should I open a bakery?",
		"multibyte": strings.Repeat("Crème brûlée 🍮 ", 120),
		"maximum":   strings.Repeat("q", oracle.MaxQueryUnits),
	}
	for _, tier := range oracle.Tiers() {
		for name, q := range queries {
			t.Run(string(tier)+"/"+name, func(t *testing.T) {
				s, err := c.CreateCheckoutSession(context.Background(), CheckoutRequest{
					Tier: tier, Query: q, Referral: "FRIEND-1",
					SuccessURL: "https://42sisters.ai/oracle/result?session_id={CHECKOUT_SESSION_ID}",
					CancelURL:  "https://42sisters.ai/?cancelled=1",
				})
				if err != nil {
					t.Fatalf("stripe-mock refused the request: %v", err)
				}
				if s.ID == "" {
					t.Fatal("no session id")
				}
			})
		}
	}
	if _, err := c.RetrieveSession(context.Background(), "cs_test_123"); err != nil {
		t.Fatalf("retrieve: %v", err)
	}
}

func TestListRequestContract(t *testing.T) {
	url := stripeMock(t)
	c := New("sk_test_123", Options{BaseURL: url, Timeout: 5 * time.Second})
	to := time.Now()
	n := 0
	err := c.CompletedSessions(context.Background(), to.Add(-24*time.Hour), to, func(oracle.Session) error {
		n++
		return nil
	})
	if err != nil {
		t.Fatalf("stripe-mock refused the list request: %v", err)
	}
	// stripe-mock answers any list with its one fixture session: proof
	// that the answer decodes, not that the filters work.
	if n == 0 {
		t.Error("no session listed")
	}
	if err := c.SessionsByEmail(context.Background(), "ada@example.com", func(oracle.Session) error { return nil }); err != nil {
		t.Fatalf("stripe-mock refused the list by customer email: %v", err)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Fatalf("stripe-mock refused the ping: %v", err)
	}
}

// TestBillingRequestContract: the chat's calls (its Price made, its
// Checkout in mode subscription, the portal, the subscriptions listed)
// are requests the published API accepts. stripe-mock answers any price
// list with a fixture that is not the chat's price, so the Price found is
// set here, as the lookup would find it.
func TestBillingRequestContract(t *testing.T) {
	url := stripeMock(t)
	b := NewBilling(secret.Static("sk_test_123"), Options{BaseURL: url, Timeout: 5 * time.Second})
	ctx := context.Background()
	p := chatPriceParams()
	p.Context = ctx
	if _, err := b.prices("sk_test_123").New(p); err != nil {
		t.Fatalf("stripe-mock refused the price: %v", err)
	}
	if _, err := b.findChatPrice(ctx); err != nil {
		t.Fatalf("stripe-mock refused the price lookup: %v", err)
	}
	b.priceID = "price_123"
	if _, err := b.CreateChatCheckout(ctx, ChatCheckout{Account: "hmac-sha256:0123456789abcdef0123456789abcdef", Email: "ada@example.com", SiteURL: "https://42sisters.ai"}, time.Now()); err != nil {
		t.Fatalf("stripe-mock refused the subscription checkout: %v", err)
	}
	if _, err := b.CreatePortal(ctx, "cus_123", "https://42sisters.ai"); err != nil {
		t.Fatalf("stripe-mock refused the portal session: %v", err)
	}
	n := 0
	if err := b.ChatSubscriptions(ctx, time.Now().Add(-time.Hour), func(Subscription) error { n++; return nil }); err != nil || n == 0 {
		t.Fatalf("stripe-mock refused the subscription list (%d listed): %v", n, err)
	}
}
