package quarantine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/quarantine"
)

func TestPutKeepsEachRecordWhole(t *testing.T) {
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	st := quarantine.NewStore(c, f.Ref("QuarantineBucket"))
	ctx := context.Background()
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	r := quarantine.Record{SessionID: "cs_test_quarantinestore", Tier: "full", Gate: quarantine.GateGenerator, QuarantinedAt: at,
		Terms: []string{"cat3.csdm"}, Reason: "quarantine-class entry", FilterVersion: "v1", Model: "gemini-2.5-flash",
		AmountTotal: 500, Currency: "cad", Raw: json.RawMessage(`{"summary":"The CSDM says no."}`)}
	key, err := st.Put(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	// A retried write of the same record changes nothing and names it.
	if again, err := st.Put(ctx, r); err != nil || again != key {
		t.Fatalf("again: %q %v, want %q", again, err, key)
	}
	r2 := r
	r2.QuarantinedAt, r2.Gate = at.Add(time.Hour), quarantine.GateMailer
	if key2, err := st.Put(ctx, r2); err != nil || key2 == key {
		t.Fatalf("a second quarantine of the session: %q %v", key2, err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.Ref("QuarantineBucket")), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(out.Body)
	var got quarantine.Record
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.SessionID != r.SessionID || got.Gate != r.Gate || !got.QuarantinedAt.Equal(at) || len(got.Terms) != 1 || !bytes.Equal(got.Raw, r.Raw) {
		t.Fatalf("stored %+v", got)
	}
}

func TestPutRefusesIncompleteRecordsAndReportsFailures(t *testing.T) {
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	ctx := context.Background()
	good := quarantine.Record{SessionID: "cs_test_quarantinebad", Gate: quarantine.GateMailer, QuarantinedAt: time.Now(), Raw: json.RawMessage(`{}`)}
	for name, r := range map[string]quarantine.Record{
		"no session": {Gate: good.Gate, QuarantinedAt: good.QuarantinedAt, Raw: good.Raw},
		"no gate":    {SessionID: good.SessionID, QuarantinedAt: good.QuarantinedAt, Raw: good.Raw},
		"no time":    {SessionID: good.SessionID, Gate: good.Gate, Raw: good.Raw},
		"no payload": {SessionID: good.SessionID, Gate: good.Gate, QuarantinedAt: good.QuarantinedAt},
	} {
		if _, err := quarantine.NewStore(c, f.Ref("QuarantineBucket")).Put(ctx, r); err == nil {
			t.Errorf("%s: stored", name)
		}
	}
	// A bucket that is not there fails: the caller fails closed.
	if _, err := quarantine.NewStore(c, f.Ref("QuarantineBucket")+"-missing").Put(ctx, good); err == nil {
		t.Error("a write to a missing bucket reported success")
	}
}
