package store_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// Every conditional write whose answer is lost and retried by the SDK
// reports what its first attempt did, not a lost race: no stuck lease, no
// verdict without its email, no mail held up, no alert or notice skipped.
func TestRetriedWritesKnowTheirOwnFirstAttempt(t *testing.T) {
	f := provision.ForTest(t, nil)
	l := &testkit.Lossy{}
	db := awsenv.NewTables(f.AWS, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: l} })
	clk := testkit.NewClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	orders := store.NewOrders(db, f.Ref("OrdersTable"), clk.Now)
	ledger := store.NewLedger(db, f.Ref("LedgerTable"), clk.Now)
	ctx := context.Background()
	start := func(t *testing.T, id string) string {
		t.Helper()
		paidOrder(t, orders, id)
		_, tok, err := orders.StartGeneration(ctx, id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	tests := []struct {
		name string
		op   string
		run  func(t *testing.T, id string)
	}{
		{"claim", "PutItem", func(t *testing.T, id string) {
			c, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease)
			if err != nil || c.Outcome != oracle.Claimed || c.Lease == "" {
				t.Fatalf("claim %+v %v", c, err)
			}
			if err := orders.JobEnqueued(ctx, id, c.Lease); err != nil {
				t.Fatalf("the claimer's lease: %v", err)
			}
		}},
		{"advance a pending payment", "PutItem", func(t *testing.T, id string) {
			l.Arm("")
			if c, err := orders.ClaimOrder(ctx, order(id, oracle.StatusAwaitingPayment), lease); err != nil || c.Outcome != oracle.Claimed {
				t.Fatalf("pending claim %+v %v", c, err)
			}
			l.ArmAfter("PutItem", 1) // the create attempt is answered; the advance's answer is lost
			c, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease)
			if err != nil || c.Outcome != oracle.Claimed || c.Lease == "" {
				t.Fatalf("claim %+v %v", c, err)
			}
			if err := orders.JobEnqueued(ctx, id, c.Lease); err != nil {
				t.Fatalf("the claimer's lease: %v", err)
			}
		}},
		{"resume an abandoned claim", "UpdateItem", func(t *testing.T, id string) {
			l.Arm("")
			if c, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease); err != nil || c.Outcome != oracle.Claimed {
				t.Fatalf("first claim %+v %v", c, err)
			}
			clk.Add(lease + time.Second) // the first claimer died before enqueueing
			l.Arm("UpdateItem")
			c, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease)
			if err != nil || c.Outcome != oracle.Resumed || c.Lease == "" {
				t.Fatalf("resume %+v %v", c, err)
			}
			if err := orders.JobEnqueued(ctx, id, c.Lease); err != nil {
				t.Fatalf("the resumer's lease: %v", err)
			}
		}},
		{"start generation", "UpdateItem", func(t *testing.T, id string) {
			l.Arm("")
			paidOrder(t, orders, id)
			l.Arm("UpdateItem")
			o, tok, err := orders.StartGeneration(ctx, id, time.Minute)
			if err != nil || tok == "" || store.GenLease(t, orders, id) != tok || o.Attempts != 1 {
				t.Fatalf("start %+v %q %v", o, tok, err)
			}
		}},
		{"store verdict", "UpdateItem", func(t *testing.T, id string) {
			l.Arm("")
			tok := start(t, id)
			l.Arm("UpdateItem")
			o, err := orders.StoreVerdict(ctx, id, tok, verdict)
			if err != nil || o.Status != oracle.StatusReady || o.Verdict != verdict.Canonical {
				t.Fatalf("store %+v %v", o, err)
			}
		}},
		{"hold", "UpdateItem", func(t *testing.T, id string) {
			l.Arm("")
			tok := start(t, id)
			l.Arm("UpdateItem")
			if ok, err := orders.Hold(ctx, id, tok, "crosscheck_low_coherence"); err != nil || !ok {
				t.Fatalf("hold %v %v", ok, err)
			}
		}},
		{"quarantine", "UpdateItem", func(t *testing.T, id string) {
			l.Arm("")
			tok := start(t, id)
			l.Arm("UpdateItem")
			if ok, err := orders.QuarantineGeneration(ctx, id, tok, store.Quarantine{Gate: "generator", Terms: []string{"cat3.csdm"}, Record: "k", FilterVersion: "v"}); err != nil || !ok {
				t.Fatalf("quarantine %v %v", ok, err)
			}
		}},
		{"mark failed", "UpdateItem", func(t *testing.T, id string) {
			l.Arm("")
			start(t, id)
			l.Arm("UpdateItem")
			if ok, err := orders.MarkFailed(ctx, id, "model_unavailable"); err != nil || !ok {
				t.Fatalf("mark failed %v %v", ok, err)
			}
		}},
		{"claim mail", "UpdateItem", func(t *testing.T, id string) {
			l.Arm("")
			paidOrder(t, orders, id)
			l.Arm("UpdateItem")
			tok, err := orders.ClaimMail(ctx, id, "verdict", 0, time.Minute)
			if err != nil || tok == "" {
				t.Fatalf("claim mail %q %v", tok, err)
			}
			if err := orders.MailSent(ctx, id, "verdict", tok, "msg-1", oracle.MailSent); err != nil {
				t.Fatalf("the claimer's token: %v", err)
			}
		}},
		{"ledger mark", "PutItem", func(t *testing.T, id string) {
			if first, err := ledger.Mark(ctx, "alert#CIRCUIT_OPEN#"+id, time.Minute); err != nil || !first {
				t.Fatalf("mark %v %v", first, err)
			}
			if first, _ := ledger.Mark(ctx, "alert#CIRCUIT_OPEN#"+id, time.Minute); first {
				t.Fatal("a second mark won")
			}
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk.Add(time.Second)
			l.Arm(tc.op)
			tc.run(t, "cs_test_lostanswer"+strings.Repeat("x", i+1))
			if l.Armed() {
				t.Fatal("no answer was lost: the test proves nothing")
			}
		})
	}
}
