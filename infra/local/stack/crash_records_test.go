package stack_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
)

// mailRecordsKept checks that an order killed anywhere ends with its
// verdict email's audit records, each once, in the one object of the step
// that sent it: gate 2's decision, the first attempt's and the email's.
// They follow the send's record, so a kill after it (mailer/after-record)
// leaves them to the redelivered job, which writes that object.
func mailRecordsKept(ctx context.Context, t *testing.T, s *stack.Stack, session string) {
	t.Helper()
	kind := oracle.MailVerdict
	want := []string{
		audit.RecordID(session, audit.NameFilterMail, kind),
		audit.RecordID(session, audit.NameMailAttempt, kind, 0),
		audit.RecordID(session, audit.NameMail, kind),
	}
	var objects map[string][]string
	if !testkit.Eventually(30*time.Second, 50*time.Millisecond, func() bool {
		objects = stepObjects(ctx, t, s, session, audit.SourceEmailService)
		return len(objects[want[2]]) > 0
	}) {
		t.Errorf("%s: no object of its email's records", oracle.ShortID(session))
	}
	if got := objects[want[2]]; !slices.Equal(got, want) {
		t.Errorf("%s: the email's object holds %q, want %q", oracle.ShortID(session), got, want)
	}
	if dup := repeated(objects); len(dup) != 0 {
		t.Errorf("%s: email records in more than one line: %q", oracle.ShortID(session), dup)
	}
}

// stepObjects returns the record ids of each of session's audit objects of
// source, line by line, by the object's id (its last record's): every line
// of each object is read, so a record written twice, in two objects or in
// one, is seen twice.
func stepObjects(ctx context.Context, t *testing.T, s *stack.Stack, session string, source audit.Source) map[string][]string {
	t.Helper()
	c, bucket := awsenv.S3(s.AWS), s.Resources.Ref("AuditBucket")
	out := map[string][]string{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("records/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("list the audit records: %v", err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if !strings.Contains(key, "/source="+string(source)+"/"+session+".") {
				continue
			}
			g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			if err != nil {
				t.Fatalf("read %s: %v", oracle.ShortID(session), err)
			}
			b, err := io.ReadAll(g.Body)
			g.Body.Close()
			if err != nil {
				t.Fatalf("read %s: %v", oracle.ShortID(session), err)
			}
			recs, err := audit.Decode(key, b)
			if err != nil {
				t.Fatalf("%s: %v", oracle.ShortID(session), err)
			}
			for _, r := range recs {
				out[audit.IDOf(key)] = append(out[audit.IDOf(key)], r.RecordID)
			}
		}
	}
	return out
}

// repeated returns the record ids that more than one line holds.
func repeated(objects map[string][]string) []string {
	n := map[string]int{}
	var dup []string
	for _, ids := range objects {
		for _, id := range ids {
			if n[id]++; n[id] == 2 {
				dup = append(dup, id)
			}
		}
	}
	return dup
}
