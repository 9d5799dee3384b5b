package main

import (
	"maps"
	"slices"
	"testing"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
)

// Each step of an email writes its audit records as one object, a record
// a line, into the audit bucket (moto): the step that ends the delivery
// gate 2's decision, its attempt's record and the email's, named by the
// email's; an attempt tried again later its own record alone, named apart
// when the account could not send (not spent: its number runs again). No
// record is in two objects.
func TestEachEmailStepIsOneAuditObject(t *testing.T) {
	busy := &mail.Error{Class: mail.Transient, Transport: "SES", Status: 503, Code: "ServiceUnavailable"}
	refused := &mail.Error{Class: mail.Permanent, Code: "MessageRejected", Status: 400}
	blocked := &mail.Error{Class: mail.Blocked, Code: "SendingPausedException", Status: 400}
	kind := oracle.MailVerdict
	id := func(name audit.RecordName, parts ...any) string {
		return audit.RecordID(memSession, name, append([]any{kind}, parts...)...)
	}
	gate2, email := id(audit.NameFilterMail), id(audit.NameMail)
	ended := func(attempt ...any) []string {
		if len(attempt) == 0 {
			return []string{gate2, email}
		}
		return []string{gate2, id(audit.NameMailAttempt, attempt...), email}
	}
	alone := func(parts ...any) (string, []string) {
		a := id(audit.NameMailAttempt, parts...)
		return a, []string{a}
	}
	a0, o0 := alone(0)
	a1, o1 := alone(1)
	a2, o2 := alone(2)
	cases := []struct {
		name       string
		errs       []error
		to         string
		suppressed bool
		want       func(e *memEnv) map[string][]string
	}{
		{"sent", nil, "customer@example.com", false, func(*memEnv) map[string][]string {
			return map[string][]string{email: ended(0)}
		}},
		{"sent on the third attempt", []error{busy, busy}, "customer@example.com", false, func(*memEnv) map[string][]string {
			return map[string][]string{a0: o0, a1: o1, email: ended(2)}
		}},
		{"failed on every attempt", []error{busy, busy, busy, busy}, "customer@example.com", false, func(*memEnv) map[string][]string {
			return map[string][]string{a0: o0, a1: o1, a2: o2, email: ended(3)}
		}},
		{"refused for good", []error{refused}, "customer@example.com", false, func(*memEnv) map[string][]string {
			return map[string][]string{email: ended(0)}
		}},
		{"blocked, then sent", []error{blocked}, "customer@example.com", false, func(e *memEnv) map[string][]string {
			b, ob := alone(0, audit.PartBlocked, audit.Hourly(e.clock.Now().Add(-DefaultBlockedRetry)))
			return map[string][]string{b: ob, email: ended(0)}
		}},
		{"no address", nil, "", false, func(*memEnv) map[string][]string {
			return map[string][]string{email: ended()}
		}},
		{"a complained address", nil, "customer@example.com", true, func(*memEnv) map[string][]string {
			return map[string][]string{email: ended()}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := provision.ForTest(t, nil)
			e := newMemEnv(t, failing(tc.errs...))
			e.h.Test = session(tc.to)
			if tc.suppressed {
				e.ledger.suppressed[e.h.Hasher.Email(tc.to)] = true
			}
			c := awsenv.S3(f.AWS)
			e.h.Audit = &audit.Recorder{Writer: audit.NewWriter(c, f.Ref("AuditBucket")), Alerts: e.alerts, Log: e.h.Log}
			e.runQueue(t, start)
			got := testkit.AuditObjects(t, c, f.Ref("AuditBucket"))
			if want := tc.want(e); !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("objects %q, want %q", got, want)
			}
			if k := e.alerts.Kinds(); slices.Contains(k, "AUDIT_WRITE_FAILED") {
				t.Errorf("alerts %q", k)
			}
		})
	}
}
