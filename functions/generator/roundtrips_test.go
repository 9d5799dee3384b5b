package main

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// The AWS requests of the generator, as the testkit's AWSCalls names them.
const (
	getItem     = "GetItem"
	updateItem  = "UpdateItem"
	putObject   = "PutObject"
	sendMessage = "SendMessage"
)

// counted rewires e's handler to make its AWS requests through an AWSCalls.
func (e *env) counted() *testkit.AWSCalls {
	e.t.Helper()
	cfg := e.f.AWS
	calls := testkit.NoteAWSCalls(&cfg)
	db := awsenv.NewTables(cfg)
	e.h.Orders = store.NewOrders(db, e.f.Ref("OrdersTable"), e.clock.Now)
	e.h.Circuit = circuit.New(db, e.f.Ref("LedgerTable"), "gemini", circuit.Options{}, e.clock.Now)
	e.h.Originals = store.NewLedger(db, e.f.Ref("LedgerTable"), e.clock.Now)
	e.h.Mail = queue.NewSender(queue.NewClient(cfg), e.f.Ref("MailQueue"), e.clock.Now)
	e.h.Audit = &audit.Recorder{Writer: audit.NewWriter(awsenv.S3(cfg), e.f.Ref("AuditBucket")), Alerts: e.h.Alerts, Log: e.h.Log}
	return calls
}

// A paid order's generation waits for three round trips before its email
// is handed to the mailer (ten before issue 40): the claim of the order,
// which is its read, beside the circuit's one read; the verdict's store;
// the mail job. Nobody waits for what is begun beside the hand-off: the
// generation's one audit object (its crosscheck, gate 1 and
// verdict_generated records) and the first verdict's keeping. In all,
// four DynamoDB requests and one S3 request (nine and three before).
//
// Concurrency is shown, not timed: the calls counted here hold the claim
// and the circuit's read each until the other is on its way too, and the
// mail job's send until the audit object's write has begun, so a
// generator that waited for one before making the other would be held
// here in vain.
func TestAnOrdersRoundTripsAndRequests(t *testing.T) {
	e := newEnv(t)
	calls := e.counted()
	id := "cs_test_roundtrips"
	e.paid(id, oracle.TierQuick, "Should I open a bakery on my street?")
	calls.Hold(updateItem, getItem)
	calls.Hold(getItem, updateItem)
	calls.Hold(sendMessage, putObject)
	if failed := e.run(record("m", job(id), 1)); len(failed) != 0 {
		t.Fatal("the job failed")
	}
	if held := calls.Held(); len(held) != 0 {
		t.Fatalf("held in vain: %q: a call waited for another that the generator makes beside it", held)
	}
	got := calls.Ops()
	if !slices.Contains(got, sendMessage) {
		t.Fatalf("requests %q: no mail job", got)
	}
	// The path is what the send waited for: the claim and the circuit's
	// read, then the store. What is begun beside the send (the audit
	// object, the original's keeping: the third UpdateItem) may reach the
	// list just before it.
	var path []string
	updates := 0
	for _, op := range got {
		if op == updateItem {
			if updates++; updates > 2 {
				continue
			}
		}
		if op == putObject {
			continue
		}
		if path = append(path, op); op == sendMessage {
			break
		}
	}
	if len(path) > 1 {
		slices.Sort(path[:2]) // made together (the first group above)
	}
	if want := []string{getItem, updateItem, updateItem, sendMessage}; !slices.Equal(path, want) {
		t.Errorf("requests up to the hand-off %q, want %q", path, want)
	}
	rounds := len(path) - 1 // the claim and the circuit's read are one round trip
	if rounds != 3 {
		t.Errorf("%d round trips up to the hand-off, want 3", rounds)
	}
	n := map[string]int{}
	for _, op := range got {
		n[op]++
	}
	if want := map[string]int{getItem: 1, updateItem: 3, putObject: 1, sendMessage: 1}; !reflect.DeepEqual(n, want) {
		t.Errorf("requests %v, want %v", n, want)
	}
	t.Logf("round trips up to the hand-off: %d; requests: %v", rounds, n)
}

// A crash after the mail job is handed over and before the records that
// follow it leaves them to the job's redelivery: the crosscheck and gate 1
// records, which only the attempt knew, are carried with the verdict and
// written again exactly as they were made, with the verdict's own record.
func TestARedeliveryWritesTheRecordsACrashLost(t *testing.T) {
	e := newEnv(t)
	id := "cs_test_carried"
	e.paid(id, oracle.TierFull, "Should I open a bakery on my street?")
	written := e.h.Audit
	lost := &testkit.AuditLog{} // the records the crashed process never wrote
	e.h.Audit = &audit.Recorder{Writer: lost, Alerts: e.h.Alerts, Log: e.h.Log}
	if failed := e.run(record("m", job(id), 1)); len(failed) != 0 {
		t.Fatal("the first delivery failed")
	}
	if n := len(testkit.AuditRecords(t, e.s3, e.f.Ref("AuditBucket"))); n != 0 {
		t.Fatalf("%d records written by the crashed delivery", n)
	}
	e.h.Audit = written
	if failed := e.run(record("m", job(id), 2)); len(failed) != 0 {
		t.Fatal("the redelivery failed")
	}
	recs := testkit.AuditRecords(t, e.s3, e.f.Ref("AuditBucket"))
	for _, rid := range []string{audit.RecordID(id, audit.NameCrosscheck, 1, 1), audit.RecordID(id, audit.NameFilterGenerator, 1)} {
		want, ok := lost.Record(rid)
		if !ok {
			t.Fatalf("the first delivery made no record %s", rid)
		}
		if !slices.ContainsFunc(recs, func(r audit.Record) bool { return reflect.DeepEqual(r, want) }) {
			t.Errorf("record %s not written again as it was made: %+v", rid, want)
		}
	}
	if !slices.ContainsFunc(recs, func(r audit.Record) bool { return r.Event == audit.EventVerdictGenerated }) {
		t.Error("no verdict_generated record")
	}
	if len(recs) != 3 {
		t.Errorf("%d records, want 3", len(recs))
	}
	if o := e.order(id); o.Attempts != 1 || o.Status != oracle.StatusReady {
		t.Errorf("order %+v: want READY after one generation", o)
	}
	// The three in the generation's one object, which a further
	// redelivery finds there: it adds nothing.
	want := map[string][]string{audit.RecordID(id, audit.NameGenerated): {
		audit.RecordID(id, audit.NameCrosscheck, 1, 1), audit.RecordID(id, audit.NameFilterGenerator, 1), audit.RecordID(id, audit.NameGenerated)}}
	if got := testkit.AuditObjects(t, e.s3, e.f.Ref("AuditBucket")); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("objects %q, want %q", got, want)
	}
	if failed := e.run(record("m", job(id), 3)); len(failed) != 0 {
		t.Fatal("the second redelivery failed")
	}
	v, err := e.s3.ListObjectVersions(t.Context(), &s3.ListObjectVersionsInput{Bucket: aws.String(e.f.Ref("AuditBucket"))})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Versions) != 1 {
		t.Errorf("%d object versions after a second redelivery, want the one", len(v.Versions))
	}
}

// An order parked before the model is asked (the circuit is open) gives
// its lease and the attempt back in the write that parks it.
func TestParkingBeforeTheModelGivesTheAttemptBack(t *testing.T) {
	e := newEnv(t)
	calls := e.counted()
	br := circuit.New(awsenv.NewTables(e.f.AWS), e.f.Ref("LedgerTable"), "gemini", circuit.Options{FailureThreshold: 1}, e.clock.Now)
	p, err := br.Allow(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if tr, err := br.Failed(t.Context(), p); err != nil || !tr.Tripped() {
		t.Fatalf("trip: %v %v", tr, err)
	}
	id := "cs_test_parkleased"
	e.paid(id, oracle.TierQuick, "Should I open a bakery on my street?")
	calls.Reset()
	if failed := e.run(record("m", job(id), 1)); len(failed) != 0 {
		t.Fatal("the job failed")
	}
	if len(e.model.Calls()) != 0 {
		t.Fatal("the model was called through an open circuit")
	}
	o := e.order(id)
	if o.Attempts != 0 || o.Status != oracle.StatusPaid || o.ParkedSince == nil || o.JobDueAt == nil || e.leased(id) {
		t.Fatalf("order %+v (leased %v): want no attempt, parked, no lease", o, e.leased(id))
	}
	got := calls.Ops()
	if len(got) > 1 {
		slices.Sort(got[:2])
	}
	if want := []string{getItem, updateItem, updateItem}; !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q (the claim and the circuit's read, then one write that parks)", got, want)
	}
	if jobs := e.generateJobs(); len(jobs) != 1 || jobs[0].NotBefore == nil {
		t.Errorf("parked jobs %+v, want one", jobs)
	}
}
