package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
)

// step is the generator's step of one first verdict: its crosscheck,
// gate 1 and verdict_generated records, the outcome last.
func step(h *audit.Hasher, session string, at time.Time) []audit.Line {
	o := oracle.Order{SessionID: session, Tier: oracle.TierQuick, Query: "Should I?", SessionCreated: at, Status: oracle.StatusReady}
	rec := func(event audit.Event) audit.Record {
		return audit.OfOrder(h, o, audit.SourceGenerator, event, audit.StatusOK, at, at)
	}
	cross := rec(audit.EventCrosscheck)
	cross.Crosscheck = &audit.Crosscheck{VerdictLabel: "GREEN", Flags: []string{}}
	filter := rec(audit.EventFilter)
	filter.Filter = &audit.Filter{Gate: "generator", Action: "PASS", TermIDs: []string{}}
	return []audit.Line{
		{Record: cross, ID: audit.RecordID(session, audit.NameCrosscheck, 1, 1)},
		{Record: filter, ID: audit.RecordID(session, audit.NameFilterGenerator, 1)},
		{Record: rec(audit.EventVerdictGenerated), ID: audit.RecordID(session, audit.NameGenerated)},
	}
}

// objects returns every object of the bucket, by key.
func objects(t *testing.T, c *s3.Client, bucket string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	l, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, v := range l.Versions {
		key := aws.ToString(v.Key)
		if _, ok := out[key]; ok {
			t.Fatalf("%s has two versions: a write overwrote it", key)
		}
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: v.Key})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(g.Body)
		g.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[key] = b
	}
	return out
}

// TestAStepIsOneObjectOfLines: a step's records are one object under its
// outcome's key, one JSON record a line, each with its own id, and the
// reader returns every line of it.
func TestAStepIsOneObjectOfLines(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	bucket := f.Ref("AuditBucket")
	h := hasher(t)
	at := time.Date(2026, 11, 21, 14, 23, 7, 0, time.UTC)
	lines := step(h, "cs_test_step", at)
	if ok, err := audit.NewWriter(c, bucket).WriteStep(ctx, lines); err != nil || !ok {
		t.Fatalf("written %v, %v", ok, err)
	}
	objs := objects(t, c, bucket)
	key := audit.Key(lines[2].Record, lines[2].ID)
	body, ok := objs[key]
	if len(objs) != 1 || !ok {
		t.Fatalf("objects %d, want one under %s", len(objs), key)
	}
	rows := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if len(rows) != len(lines) || !strings.HasSuffix(string(body), "\n") {
		t.Fatalf("%d lines, want %d, each ended by a newline:\n%s", len(rows), len(lines), body)
	}
	for i, row := range rows {
		var r audit.Record
		if err := json.Unmarshal([]byte(row), &r); err != nil {
			t.Fatalf("line %d is not one JSON record: %v", i+1, err)
		}
		if r.RecordID != lines[i].ID || r.Event != lines[i].Record.Event {
			t.Errorf("line %d: %s %s, want %s %s", i+1, r.RecordID, r.Event, lines[i].ID, lines[i].Record.Event)
		}
	}
	got, err := audit.NewReader(c, bucket).Session(ctx, "cs_test_step", at)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.RecordID)
	}
	if want := []string{lines[0].ID, lines[1].ID, lines[2].ID}; !slices.Equal(ids, want) {
		t.Errorf("the reader returned %q, want every line %q", ids, want)
	}
}

// TestAStepWrittenAgainAddsNothing: the step written again, by five
// writers at once or by a redelivery whose records differ in their times,
// is added once: the first object stands whole (S3's 412 to the others
// means its records are there), and no line of the others is kept.
func TestAStepWrittenAgainAddsNothing(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	bucket := f.Ref("AuditBucket")
	w := audit.NewWriter(c, bucket)
	h := hasher(t)
	at := time.Date(2026, 11, 21, 14, 23, 7, 0, time.UTC)
	first := step(h, "cs_test_again", at)
	var wg sync.WaitGroup
	var mu sync.Mutex
	added := 0
	for range 5 {
		wg.Go(func() {
			ok, err := w.WriteStep(ctx, first)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				added++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if added != 1 {
		t.Fatalf("%d writes added the step, want 1", added)
	}
	before := objects(t, c, bucket)
	again := step(h, "cs_test_again", at.Add(time.Minute))
	if ok, err := w.WriteStep(ctx, again); err != nil || ok {
		t.Fatalf("the redelivered step: written %v, %v; want nothing added and no error", ok, err)
	}
	after := objects(t, c, bucket)
	if len(after) != 1 || len(before) != 1 {
		t.Fatalf("%d objects, want the one", len(after))
	}
	for k, b := range after {
		if !bytes.Equal(b, before[k]) {
			t.Fatalf("the object changed:\n%s\nwas\n%s", b, before[k])
		}
		recs, err := audit.Decode(k, b)
		if err != nil || len(recs) != 3 || !recs[2].Timestamp.Equal(at) {
			t.Fatalf("records %+v (%v), want the first write's three", recs, err)
		}
	}
}

// TestAStepIsWholeOrNothing: a step that cannot be written whole is not
// written at all: every line is checked before the one PutObject, and S3
// stores a PutObject entirely or not at all (its SHA-256 is checked), so
// no object holds part of a step.
func TestAStepIsWholeOrNothing(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	bucket := f.Ref("AuditBucket")
	w := audit.NewWriter(c, bucket)
	h := hasher(t)
	at := time.Date(2026, 11, 21, 14, 23, 7, 0, time.UTC)
	cases := []struct {
		name  string
		spoil func(l []audit.Line) []audit.Line
	}{
		{"a line holds an address", func(l []audit.Line) []audit.Line { l[1].Record.Email = "customer@example.com"; return l }},
		{"a line of another session", func(l []audit.Line) []audit.Line { l[0].Record.SessionID = "cs_test_other"; return l }},
		{"a line of another source", func(l []audit.Line) []audit.Line { l[0].Record.Source = audit.SourceEmailService; return l }},
		{"a line of another day", func(l []audit.Line) []audit.Line {
			l[0].Record.SessionCreated = at.AddDate(0, 0, 1)
			return l
		}},
		{"two lines of one id", func(l []audit.Line) []audit.Line { l[1].ID = l[0].ID; return l }},
		{"a line's id is unsafe", func(l []audit.Line) []audit.Line { l[0].ID = "../escape"; return l }},
		{"no line", func([]audit.Line) []audit.Line { return nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if ok, err := w.WriteStep(ctx, tc.spoil(step(h, "cs_test_whole", at))); err == nil || ok {
				t.Fatalf("written %v, %v; want an error", ok, err)
			}
			if objs := objects(t, c, bucket); len(objs) != 0 {
				t.Fatalf("%d objects written, want none", len(objs))
			}
		})
	}
}

// TestDecodeReadsEveryLine: Decode reads a step's every line, and an
// object written alone before steps were (one JSON record, without its id,
// pretty-printed or not) as one record named by its key.
func TestDecodeReadsEveryLine(t *testing.T) {
	key := "records/date=2026-11-21/source=webhook/cs_test_old.paid.json"
	cases := []struct {
		name string
		body string
		ids  []string
		bad  bool
	}{
		{"a step", `{"record_id":"a","event":"x"}` + "\n" + `{"record_id":"b","event":"y"}` + "\n", []string{"a", "b"}, false},
		{"an old record", `{"event":"checkout.session.completed"}`, []string{"cs_test_old.paid"}, false},
		{"an old record, indented", "{\n  \"event\": \"checkout.session.completed\"\n}\n", []string{"cs_test_old.paid"}, false},
		{"a torn line", `{"record_id":"a"}` + "\n" + `{"record_id":`, nil, true},
		{"empty", "", nil, true},
		{"not JSON", "hello", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := audit.Decode(key, []byte(tc.body))
			if tc.bad {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", recs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.RecordID)
			}
			if !slices.Equal(ids, tc.ids) {
				t.Errorf("ids %q, want %q", ids, tc.ids)
			}
		})
	}
}
