package smoke

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/x402"
)

// TestTheAgentStagePaysBaseSepoliaWhenBaseAloneIsOffered: with
// X402Networks both the 402 offers Base alone; the smoke test pays the
// same price to the same wallet on Base Sepolia from the smoke wallet,
// which the agent function takes from that wallet only. The deployment
// here is a server that offers Base and settles only a Base Sepolia
// payment the smoke wallet signed.
func TestTheAgentStagePaysBaseSepoliaWhenBaseAloneIsOffered(t *testing.T) {
	const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	key := secp256k1.PrivKeyFromBytes(bytes.Repeat([]byte{9}, 32))
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	base, _ := x402.LookupNetwork(x402.NetworkBase)
	sepolia, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	price := oracle.TierQuick.PriceUSDCAtomic()
	order, err := oracle.NewAgentOrderID(rand.Reader, false)
	if err != nil {
		t.Fatal(err)
	}
	tx := "0x" + strings.Repeat("ab", 32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get(x402.HeaderPaymentSignature)
		if header == "" {
			pr, _ := x402.EncodeHeader(x402.PaymentRequired{X402Version: x402.Version,
				Accepts: []x402.PaymentRequirements{x402.Requirement(base, price, payTo, 5*time.Minute)}})
			w.Header().Set(x402.HeaderPaymentRequired, pr)
			w.WriteHeader(http.StatusPaymentRequired)
			return
		}
		p, err := x402.DecodePaymentSignature(header)
		want := x402.Requirement(sepolia, price, payTo, 5*time.Minute)
		if err == nil {
			_, err = x402.CheckTerms(p, []x402.PaymentRequirements{want}, now, 30*time.Second)
		}
		if err == nil {
			err = x402.CheckSigner(p, want)
		}
		if err != nil || !x402.SameAddress(p.Payload.Authorization.From, x402.AddressOf(key.PubKey())) {
			t.Errorf("the payment %+v: %v", p, err)
			w.WriteHeader(http.StatusPaymentRequired)
			return
		}
		settled, _ := x402.EncodeHeader(x402.SettleResponse{Success: true, Transaction: tx, Network: x402.NetworkBaseSepolia, Payer: p.Payload.Authorization.From})
		w.Header().Set(x402.HeaderPaymentResponse, settled)
		w.Header().Set("Location", "/x402/result/"+order)
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "pending", "order_id": order})
	}))
	defer srv.Close()
	r := &Runner{APIURL: srv.URL, HTTP: srv.Client(), Now: func() time.Time { return now },
		Agent: Agent{PayTo: payTo, Testnet: true, Key: key, Payer: x402.AddressOf(key.PubKey())}}
	st := &run{}
	figure, err := r.agentPayment(context.Background(), st)
	if err != nil {
		t.Fatalf("the agent stage: %v", err)
	}
	if st.agent == nil || st.agent.order != order || st.agent.tx != tx || !strings.Contains(figure, "answer=202") {
		t.Fatalf("figure %q, run %+v", figure, st.agent)
	}
}
