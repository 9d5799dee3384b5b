package auditfigures_test

import (
	"context"
	"testing"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/auditfigures"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
)

// TestFiguresCountEveryLineOfAStep: a step's object is read line by line,
// so its every record counts: the generation's two crosschecks (one
// rejected), gate 1 and the verdict stored, and the email's gate 2,
// attempt and delivery, beside the claim's record written alone.
func TestFiguresCountEveryLineOfAStep(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	bucket := f.Ref("AuditBucket")
	w := audit.NewWriter(c, bucket)
	id := audit.RecordID
	const s = "cs_live_steps00000000000000000"
	verdict := audit.MailEvent(oracle.MailVerdict)
	filter := func(gate string) func(*audit.Record) {
		return func(r *audit.Record) { r.Filter = &audit.Filter{Gate: gate, Action: "PASS", TermIDs: []string{}} }
	}
	steps := [][]audit.Line{
		{{Record: rec(s, day1, audit.SourceWebhook, audit.EventCheckoutCompleted, audit.StatusOK, latency(900)), ID: id(s, audit.NamePaid)}},
		{
			{Record: rec(s, day1, audit.SourceGenerator, audit.EventCrosscheck, audit.StatusError, crosscheck(false), detail("crosscheck rejected the reply")), ID: id(s, audit.NameCrosscheck, 1, 1)},
			{Record: rec(s, day1, audit.SourceGenerator, audit.EventCrosscheck, audit.StatusOK, crosscheck(true)), ID: id(s, audit.NameCrosscheck, 1, 2)},
			{Record: rec(s, day1, audit.SourceGenerator, audit.EventFilter, audit.StatusOK, filter("generator")), ID: id(s, audit.NameFilterGenerator, 1)},
			{Record: rec(s, day1, audit.SourceGenerator, audit.EventVerdictGenerated, audit.StatusOK, orderStatus("READY"), wait(8000)), ID: id(s, audit.NameGenerated)},
		},
		{
			{Record: rec(s, day1, audit.SourceEmailService, audit.EventFilter, audit.StatusOK, filter("mailer")), ID: id(s, audit.NameFilterMail, oracle.MailVerdict)},
			{Record: rec(s, day1, audit.SourceEmailService, audit.EventMailAttempt, audit.StatusEmailSent, attempt(0)), ID: id(s, audit.NameMailAttempt, oracle.MailVerdict, 0)},
			{Record: rec(s, day1, audit.SourceEmailService, verdict, audit.StatusEmailSent, wait(9000)), ID: id(s, audit.NameMail, oracle.MailVerdict)},
		},
	}
	for _, st := range steps {
		if _, err := w.WriteStep(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	got, err := auditfigures.Compute(ctx, c, bucket, day1, day1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Records != 8 {
		t.Errorf("%d records, want 8: every line of the three objects", got.Records)
	}
	if r := got.CrosscheckRejectionRate; r.Numerator != 1 || r.Denominator != 2 {
		t.Errorf("crosscheck rejections %d of %d, want 1 of 2", r.Numerator, r.Denominator)
	}
	if v, e := got.CustomerWait.ToVerdict.Records, got.CustomerWait.ToEmail.Records; v != 1 || e != 1 {
		t.Errorf("waits to the verdict %d, to the email %d; want one each", v, e)
	}
	if r := got.EmailFailureRate; r.Denominator != 1 || r.Numerator != 0 {
		t.Errorf("emails %d failed of %d, want 0 of 1", r.Numerator, r.Denominator)
	}
}
