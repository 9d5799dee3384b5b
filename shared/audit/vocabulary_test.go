package audit_test

import (
	"testing"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
)

// The ids are the records' keys in S3: a change would write a second
// record of an event already recorded. These are the ids written before
// the names were defined in one place.
func TestRecordIDsKeepTheirForm(t *testing.T) {
	const s = "cs_test_a1b2c3"
	for _, tc := range []struct{ got, want string }{
		{audit.RecordID(s, audit.NamePaid), s + ".paid"},
		{audit.RecordID(s, audit.NamePaymentFailed), s + ".payment_failed"},
		{audit.RecordID(s, audit.NameGenerated), s + ".generated"},
		{audit.RecordID(s, audit.NameRegenerated, int64(1767225600)), s + ".regenerated-1767225600"},
		{audit.RecordID(s, audit.NameAttempt, 3), s + ".attempt-3"},
		{audit.RecordID(s, audit.NameCrosscheck, 2, 1), s + ".crosscheck-2-1"},
		{audit.RecordID(s, audit.NameFilterGenerator, 1), s + ".filter-generator-1"},
		{audit.RecordID(s, audit.NameQuarantinedGenerator), s + ".quarantined-generator"},
		{audit.RecordID(s, audit.NameMail, oracle.MailSilentDrop), s + ".mail-silent_drop"},
		{audit.RecordID(s, audit.NameFilterMail, oracle.MailVerdict), s + ".filter-mail-verdict"},
		{audit.RecordID(s, audit.NameServed, "req-1"), s + ".served-req-1"},
		{string(audit.MailEvent(oracle.MailReview)), "mail_review"},
		{audit.ChatAccountRecordID(audit.HashPrefix+"0123456789abcdef0123456789abcdef", audit.NameChatErased, int64(1767225600)),
			"chat-0123456789abcdef0123456789abcdef.erased-1767225600"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
