package stack_test

import (
	"context"
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
// verdict email's audit records, each once: gate 2's decision, the first
// attempt's and the email's. They follow the send's record, so a kill
// after it (mailer/after-record) leaves them to the redelivered job.
func mailRecordsKept(ctx context.Context, t *testing.T, s *stack.Stack, session string) {
	t.Helper()
	kind := oracle.MailVerdict
	want := []string{
		audit.RecordID(session, audit.NameFilterMail, kind),
		audit.RecordID(session, audit.NameMailAttempt, kind, 0),
		audit.RecordID(session, audit.NameMail, kind),
	}
	var missing []string
	if !testkit.Eventually(30*time.Second, 50*time.Millisecond, func() bool {
		missing = missingRecords(ctx, t, s, want)
		return len(missing) == 0
	}) {
		t.Errorf("%s: audit records missing: %q", oracle.ShortID(session), missing)
	}
}

// missingRecords returns which of the email service's record ids the
// audit bucket does not hold.
func missingRecords(ctx context.Context, t *testing.T, s *stack.Stack, ids []string) []string {
	t.Helper()
	held := map[string]bool{}
	p := s3.NewListObjectsV2Paginator(awsenv.S3(s.AWS), &s3.ListObjectsV2Input{Bucket: aws.String(s.Resources.Ref("AuditBucket")), Prefix: aws.String("records/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("list the audit records: %v", err)
		}
		for _, o := range page.Contents {
			held[aws.ToString(o.Key)[strings.LastIndex(aws.ToString(o.Key), "/")+1:]] = strings.Contains(aws.ToString(o.Key), "/source="+string(audit.SourceEmailService)+"/")
		}
	}
	var missing []string
	for _, id := range ids {
		if !held[id+".json"] {
			missing = append(missing, id)
		}
	}
	return missing
}
