package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/storeguard"
)

// verdictWriteRefused is the transport of a store that refuses the write
// storing a verdict (StoreVerdict's UpdateItem, which sets verdict_hash)
// while refuse is set, as a store failing at that moment does; every other
// request passes.
type verdictWriteRefused struct{ refuse atomic.Bool }

func (v *verdictWriteRefused) RoundTrip(r *http.Request) (*http.Response, error) {
	if v.refuse.Load() && r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.UpdateItem" && r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		if bytes.Contains(b, []byte("verdict_hash = :h")) {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// REGEN_CONSISTENCY FM-2: a regeneration whose store write fails is never
// silent. Its job fails, so SQS delivers it again, the operator gets
// STORE_FAILED from the store guard every function's clients have, the
// verdict emailed stays recorded as the original, the lease is freed, and
// the next delivery stores the regenerated one (issue 41, item 4).
func TestARegenerationWhoseStoreWriteFailsFailsItsJobAndAlerts(t *testing.T) {
	e := newEnv(t)
	v := &verdictWriteRefused{}
	cfg := e.f.AWS.Copy()
	cfg.HTTPClient = &http.Client{Transport: v}
	g := &storeguard.Guard{Alerts: e.h.Alerts}
	g.Options(&cfg)
	e.h.Orders = store.NewOrders(awsenv.NewTables(cfg), e.f.Ref("OrdersTable"), e.clock.Now)

	id := "cs_test_regenStoreWriteFails"
	e.paid(id, oracle.TierFull, "Open a second bakery")
	e.control(fakegemini.Scenario{Verdict: oracle.VerdictGreen})
	if failed := e.run(record("g", job(id), 1)); len(failed) != 0 {
		t.Fatal("the first generation failed")
	}
	first := e.order(id)
	e.mailJobs()

	e.clock.Add(e.h.Retention + time.Hour)
	regen := fmt.Sprintf(`{"session_id":%q,"reason":"regenerate","attempt":0}`, id)
	v.refuse.Store(true)
	if failed := e.run(record("r", regen, 1)); len(failed) != 1 {
		t.Fatal("a regeneration that could not be stored did not fail its job")
	}
	alerts := e.alerts()
	if len(alerts) != 1 || !strings.Contains(alerts[0], string(alert.StoreFailed)) || !strings.Contains(alerts[0], "UpdateItem") {
		t.Fatalf("alerts %q, want one STORE_FAILED naming the write", alerts)
	}
	if o := e.order(id); o.Status == oracle.StatusReady || o.Verdict != "" || o.OriginalVerdictHash != first.VerdictHash || e.leased(id) {
		t.Fatalf("after the failed write the order is %s (verdict %q, original %q, leased %v), want nothing stored, the first kept, the lease free",
			o.Status, o.Verdict, o.OriginalVerdictHash, e.leased(id))
	}

	v.refuse.Store(false)
	if failed := e.run(record("r2", regen, 2)); len(failed) != 0 {
		t.Fatal("the delivery after the store came back failed")
	}
	if o := e.order(id); o.Status != oracle.StatusReady || !o.Regen || o.OriginalVerdict != oracle.VerdictGreen {
		t.Fatalf("after the retry the order is %+v, want the regenerated verdict stored", o)
	}
}
