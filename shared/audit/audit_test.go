package audit_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/oracle"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func hasher(t *testing.T) *audit.Hasher {
	t.Helper()
	h, err := audit.NewHasher("0123456789abcdef-pepper")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func valid(h *audit.Hasher) audit.Record {
	at := time.Date(2026, 11, 21, 14, 23, 7, 0, time.UTC)
	return audit.Record{
		Timestamp: at, SessionCreated: at, SessionID: "cs_test_abc123", Tier: "quick",
		QueryHash: h.Hash("Should I?"), Email: h.Email("a@b.co"), Status: audit.StatusOK,
		Source: audit.SourceWebhook, Event: "checkout.session.completed",
	}
}

func TestHasher(t *testing.T) {
	h := hasher(t)
	if h.Email(" Customer@Example.com ") != h.Email("customer@example.com") {
		t.Fatal("email hash is not normalised")
	}
	// One address, one hash, in either spelling of its domain; a
	// look-alike (İ, which Go lowers to i) never shares the person's.
	if h.Email("ana@bücher.de") != h.Email("ana@xn--bcher-kva.de") {
		t.Fatal("an internationalised domain hashes apart from its punycode")
	}
	if h.Email("kate@gmaİl.com") == h.Email("kate@gmail.com") || h.Email("\u212Aate@gmail.com") == h.Email("kate@gmail.com") {
		t.Fatal("a look-alike address hashes as the address it imitates")
	}
	if h.Hash("x") == h.Hash("y") || h.Hash("") != "" {
		t.Fatal("hash is not a function of its input")
	}
	other, _ := audit.NewHasher("another-pepper-0123456789")
	if other.Hash("x") == h.Hash("x") {
		t.Fatal("hash does not depend on the pepper")
	}
	if _, err := audit.NewHasher("short"); err == nil {
		t.Fatal("a short pepper was accepted")
	}
}

// chat makes a record the chat's record of event, naming subscription.
func chat(h *audit.Hasher, event audit.Event, subscription string) func(*audit.Record) {
	return func(r *audit.Record) {
		r.Source, r.Event, r.SessionID, r.Email = audit.SourceChat, event, "", h.Email("Person@example.com")
		r.Chat = &audit.Chat{Plan: audit.ChatPlanTrial, Outcome: audit.ChatAnswered, MessageChars: 12, ReplyChars: 300,
			Filter: audit.ChatFilterPass, Subscription: subscription}
	}
}

// erased makes a record the chat's record of an erasure, naming
// subscription outside its erasure block.
func erased(h *audit.Hasher, subscription string) func(*audit.Record) {
	return func(r *audit.Record) {
		r.Source, r.Event, r.SessionID, r.Email = audit.SourceChat, audit.EventChatErased, "", h.Email("Person@example.com")
		r.Chat = &audit.Chat{Outcome: audit.ChatErased, Subscription: subscription,
			Erasure: &audit.Erasure{Account: true, Messages: 6, Tokens: 2, RateEntries: 1, Other: 1, Cancelled: []string{"sub_2"}}}
	}
}

// chatMail makes a record the mailer's record of a chat account's email,
// then applies set.
func chatMail(h *audit.Hasher, set func(*audit.Record)) func(*audit.Record) {
	return func(r *audit.Record) {
		r.Source, r.SessionID, r.Email, r.Status = audit.SourceEmailService, "", h.Email("Person@example.com"), audit.StatusEmailSent
		set(r)
	}
}

func TestValidate(t *testing.T) {
	h := hasher(t)
	cases := []struct {
		name   string
		mutate func(*audit.Record)
		ok     bool
	}{
		{"valid", func(*audit.Record) {}, true},
		{"no timestamp", func(r *audit.Record) { r.Timestamp = time.Time{} }, false},
		{"bad session", func(r *audit.Record) { r.SessionID = "pi_123" }, false},
		{"unknown source", func(r *audit.Record) { r.Source = "cron" }, false},
		{"unknown status", func(r *audit.Record) { r.Status = "MAYBE" }, false},
		{"error without detail", func(r *audit.Record) { r.Status = audit.StatusError }, false},
		{"error with detail", func(r *audit.Record) { r.Status, r.ErrorDetail = audit.StatusError, audit.Detail("boom") }, true},
		{"OK with detail", func(r *audit.Record) { r.ErrorDetail = audit.Detail("boom") }, false},
		{"plaintext email field", func(r *audit.Record) { r.Email = "customer@example.com" }, false},
		{"plaintext query hash", func(r *audit.Record) { r.QueryHash = "Should I quit?" }, false},
		{"unkeyed sha256", func(r *audit.Record) { r.QueryHash = "sha256:8f3a2c1b8f3a2c1b8f3a2c1b8f3a2c1b" }, false},
		{"email hidden in detail", func(r *audit.Record) {
			r.Status, r.ErrorDetail = audit.StatusError, audit.Detail("send to bob@example.org failed")
		}, false},
		{"no event", func(r *audit.Record) { r.Event = "" }, false},
		{"operator action on no order", func(r *audit.Record) {
			r.Source, r.SessionID, r.Event = audit.SourceOperator, "", audit.EventOperator
			r.Operator = &audit.Operator{Action: "seal", AuthorisedBy: "ana", Reason: "daily"}
		}, true},
		{"operator action on no order, unknown status", func(r *audit.Record) {
			r.Source, r.SessionID, r.Event, r.Status = audit.SourceOperator, "", audit.EventOperator, "MAYBE"
			r.Operator = &audit.Operator{Action: "seal", AuthorisedBy: "ana", Reason: "daily"}
		}, false},
		{"inbox message naming no order", func(r *audit.Record) {
			r.Source, r.SessionID, r.Event = audit.SourceInbox, "", audit.EventInboxMessage
			r.Inbox = &audit.InboxMessage{MessageKey: "k", Domain: "example.com", Via: "ses", Outcome: "acknowledged"}
		}, true},
		{"inbox message naming its order", func(r *audit.Record) {
			r.Source, r.Event = audit.SourceInbox, audit.EventInboxMessage
			r.Inbox = &audit.InboxMessage{MessageKey: "k", Domain: "example.com", Via: "ses", Outcome: "cooldown"}
		}, true},
		{"inbox record without its message", func(r *audit.Record) {
			r.Source, r.SessionID, r.Event = audit.SourceInbox, "", audit.EventInboxMessage
		}, false},
		// AUDIT_TRAIL's x402 form: the endpoint, the network and, once
		// settled, the transaction; an order named except for a payment
		// the local checks refused; every refusal with its reason.
		{"x402 settled", x402(audit.StatusOK, "0xabc", nil), true},
		{"x402 settled without its transaction", x402(audit.StatusOK, "", nil), false},
		{"x402 replay", x402(audit.StatusReplay, "", audit.Detail("authorization already used")), true},
		{"x402 replay without its reason", x402(audit.StatusReplay, "", nil), false},
		{"x402 invalid naming no order", func(r *audit.Record) {
			x402(audit.StatusInvalid, "", audit.Detail("invalid_exact_evm_payload_signature"))(r)
			r.SessionID = ""
		}, true},
		{"x402 settle failed naming no order", func(r *audit.Record) {
			x402(audit.StatusSettleFailed, "", audit.Detail("insufficient_funds"))(r)
			r.SessionID = ""
		}, false},
		{"x402 record without its endpoint", func(r *audit.Record) {
			x402(audit.StatusOK, "0xabc", nil)(r)
			r.Endpoint = ""
		}, false},
		{"x402 payer in the clear", func(r *audit.Record) {
			x402(audit.StatusOK, "0xabc", nil)(r)
			r.Payer = "0x857b06519E91e3A54538791bDbb0E22373e36b66"
		}, false},
		{"x402 status on a Stripe record", func(r *audit.Record) { r.Status, r.ErrorDetail = audit.StatusReplay, audit.Detail("x") }, true},
		{"x402 event from another source", func(r *audit.Record) { r.Event = audit.EventX402Payment }, false},
		// The chat's form: the account, the chat block, no session; an
		// exchange names no subscription, a subscription event does.
		{"chat exchange", chat(h, audit.EventChatExchange, ""), true},
		{"chat subscription event", chat(h, audit.EventChatSubscription, "sub_1"), true},
		{"chat exchange naming a subscription", chat(h, audit.EventChatExchange, "sub_1"), false},
		{"chat subscription event naming none", chat(h, audit.EventChatSubscription, ""), false},
		// An erasure: its counts and the subscriptions it cancelled, in its
		// erasure block alone.
		{"chat erasure", erased(h, ""), true},
		{"chat erasure without its block", func(r *audit.Record) {
			erased(h, "")(r)
			r.Chat.Erasure = nil
		}, false},
		{"chat erasure naming a subscription outside its block", erased(h, "sub_1"), false},
		{"erasure block on an exchange", func(r *audit.Record) {
			chat(h, audit.EventChatExchange, "")(r)
			r.Chat.Erasure = &audit.Erasure{Account: true}
		}, false},
		{"chat record naming a session", func(r *audit.Record) {
			chat(h, audit.EventChatExchange, "")(r)
			r.SessionID = "cs_test_abc"
		}, false},
		{"chat record with the address in the clear", func(r *audit.Record) {
			chat(h, audit.EventChatExchange, "")(r)
			r.Email = "customer@example.com"
		}, false},
		{"chat record without its account", func(r *audit.Record) {
			chat(h, audit.EventChatExchange, "")(r)
			r.Email = ""
		}, false},
		{"chat record without its block", func(r *audit.Record) {
			chat(h, audit.EventChatExchange, "")(r)
			r.Chat = nil
		}, false},
		{"chat block on an order's record", func(r *audit.Record) { r.Chat = &audit.Chat{Plan: audit.ChatPlanTrial} }, false},
		// The mailer's records of a chat account's email: the account in
		// the email field, no session, whatever the record is of.
		{"chat email delivered", chatMail(h, func(r *audit.Record) { r.Event = audit.MailEvent(oracle.MailChatSignIn) }), true},
		{"chat email attempt", chatMail(h, func(r *audit.Record) {
			r.Event, r.Status, r.ErrorDetail = audit.EventMailAttempt, audit.StatusEmailFailed, audit.Detail("503")
			r.Mail = &audit.MailAttempt{Kind: oracle.MailChatPaymentFailed, Attempt: 1, MessageHash: h.Hash("m"), Transport: "SES", Class: "transient"}
		}), true},
		{"chat email filtered", chatMail(h, func(r *audit.Record) {
			r.Event, r.Status = audit.EventFilter, audit.StatusOK
			r.Filter = &audit.Filter{Gate: "mailer", Action: "PASS", TermIDs: []string{}, Version: "v", MailKind: oracle.MailChatSignIn}
		}), true},
		{"chat email naming a session", chatMail(h, func(r *audit.Record) {
			r.Event, r.SessionID = audit.MailEvent(oracle.MailChatSignIn), "cs_test_abc"
		}), false},
		{"chat email without its account", chatMail(h, func(r *audit.Record) {
			r.Event, r.Email = audit.MailEvent(oracle.MailChatSignIn), ""
		}), false},
		{"chat email with the address in the clear", chatMail(h, func(r *audit.Record) {
			r.Event, r.Email = audit.MailEvent(oracle.MailChatSignIn), "person@example.com"
		}), false},
		{"an order's email naming no session", func(r *audit.Record) {
			r.Source, r.Event, r.SessionID = audit.SourceEmailService, audit.MailEvent(oracle.MailVerdict), ""
		}, false},
		{"an order's attempt naming no session", func(r *audit.Record) {
			r.Source, r.Event, r.SessionID = audit.SourceEmailService, audit.EventMailAttempt, ""
			r.Mail = &audit.MailAttempt{Kind: oracle.MailVerdict, MessageHash: h.Hash("m"), Transport: "SES"}
		}, false},
		{"inbox message without event", func(r *audit.Record) {
			r.Source, r.SessionID, r.Event = audit.SourceInbox, "", ""
			r.Inbox = &audit.InboxMessage{MessageKey: "k", Domain: "example.com", Via: "ses", Outcome: "acknowledged"}
		}, false},
		{"inbox message with a bad session", func(r *audit.Record) {
			r.Source, r.SessionID, r.Event = audit.SourceInbox, "pi_123", audit.EventInboxMessage
			r.Inbox = &audit.InboxMessage{MessageKey: "k", Domain: "example.com", Via: "ses", Outcome: "acknowledged"}
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := valid(h)
			c.mutate(&r)
			if err := r.Validate(); (err == nil) != c.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, c.ok)
			}
		})
	}
}

func TestWriterIsAppendOnlyAndIdempotent(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	w := audit.NewWriter(c, f.Ref("AuditBucket"))
	r := valid(hasher(t))

	var wg sync.WaitGroup
	written := make(chan bool, 5)
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := w.Write(ctx, r, "evt_1")
			if err != nil {
				t.Error(err)
			}
			written <- ok
		}()
	}
	wg.Wait()
	close(written)
	n := 0
	for ok := range written {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d writes claimed to add the record, want 1", n)
	}
	key := audit.Key(r, "evt_1")
	if !strings.HasPrefix(key, "records/date=2026-11-21/source=webhook/") {
		t.Fatalf("key %q is not partitioned by date and source", key)
	}
	l, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(f.Ref("AuditBucket"))})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Versions) != 1 {
		t.Fatalf("%d object versions, want 1: a duplicate write overwrote the record", len(l.Versions))
	}
	bad := r
	bad.Email = "customer@example.com"
	if _, err := w.Write(ctx, bad, "evt_2"); err == nil {
		t.Fatal("a record with a plaintext email was written")
	}
	if _, err := w.Write(ctx, r, "../escape"); err == nil {
		t.Fatal("an unsafe id was accepted")
	}
}

func TestOfOrder(t *testing.T) {
	h := hasher(t)
	at := time.Date(2026, 11, 21, 14, 23, 7, 0, time.FixedZone("EST", -5*3600))
	o := oracle.Order{SessionID: "cs_test_of", Tier: oracle.TierFull, Query: "Should I?", VerdictHash: h.Hash("{}"),
		SessionCreated: at, Livemode: true, AmountTotal: 2500, Currency: "cad", Status: oracle.StatusReady}
	r := audit.OfOrder(h, o, audit.SourceGenerator, "verdict_generated", audit.StatusOK, at.Add(-1500*time.Millisecond), at)
	want := audit.Record{Timestamp: at.UTC(), SessionID: o.SessionID, Tier: "full", QueryHash: h.Hash("Should I?"), VerdictHash: o.VerdictHash,
		LatencyMS: 1500, Status: audit.StatusOK, Source: audit.SourceGenerator, SessionCreated: at,
		Event: "verdict_generated", Livemode: true, AmountTotal: 2500, Currency: "cad", OrderStatus: "READY"}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("record\n%+v\nwant\n%+v", r, want)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	o.Smoke = true
	if r := audit.OfOrder(h, o, audit.SourceGenerator, "x", audit.StatusOK, at, at); !r.Smoke {
		t.Fatal("a smoke order's record is not flagged smoke")
	}
	// A clock that stepped back never gives a negative latency.
	if r := audit.OfOrder(h, o, audit.SourceGenerator, "x", audit.StatusOK, at.Add(time.Second), at); r.LatencyMS != 0 {
		t.Fatalf("latency %d", r.LatencyMS)
	}
}

func TestHasherFrom(t *testing.T) {
	cases := []struct {
		pepper, problem string
	}{
		{"0123456789abcdef-pepper", ""},
		{"", "HASH_PEPPER_ARN (or HASH_PEPPER for local runs) is required"},
		{"short", "HASH_PEPPER: hash pepper must be at least 16 bytes"},
	}
	for _, c := range cases {
		env := config.New(func(k string) (string, bool) { return map[string]string{"HASH_PEPPER": c.pepper}[k], true }, nil)
		h := audit.HasherFrom(context.Background(), env)
		err := env.Err()
		if c.problem == "" {
			if err != nil || h == nil || h.Hash("x") != hasher(t).Hash("x") {
				t.Errorf("pepper %q: %v", c.pepper, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.problem) || strings.Count(err.Error(), "HASH_PEPPER") != strings.Count(c.problem, "HASH_PEPPER") {
			t.Errorf("pepper %q: %v, want exactly the problem %q", c.pepper, err, c.problem)
		}
	}
}

// TestReaderReadsOneSessionsRecords: every source's records of a session,
// and none of a session whose id it begins.
func TestReaderReadsOneSessionsRecords(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	w := audit.NewWriter(c, f.Ref("AuditBucket"))
	r := valid(hasher(t))
	write := func(session string, src audit.Source, name audit.RecordName) {
		t.Helper()
		rec := r
		rec.SessionID, rec.Source = session, src
		if _, err := w.Write(ctx, rec, audit.RecordID(session, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("cs_test_read", audit.SourceWebhook, audit.NamePaid)
	write("cs_test_read", audit.SourceGenerator, audit.NameCrosscheck)
	write("cs_test_readmore", audit.SourceWebhook, audit.NamePaid)
	got, err := audit.NewReader(c, f.Ref("AuditBucket")).Session(ctx, "cs_test_read", r.SessionCreated)
	if err != nil {
		t.Fatal(err)
	}
	sources := map[audit.Source]int{}
	for _, g := range got {
		if g.SessionID != "cs_test_read" {
			t.Errorf("read %s's record", g.SessionID)
		}
		sources[g.Source]++
	}
	if len(got) != 2 || sources[audit.SourceWebhook] != 1 || sources[audit.SourceGenerator] != 1 {
		t.Errorf("records by source %v, want one webhook and one generator", sources)
	}
}

// TestReaderFindsAChatAccountsEmails: ChatMail finds the delivery records
// of one account's emails of one kind begun on one day, by their nonces,
// and neither their attempts' records nor another account's, kind's or
// day's.
func TestReaderFindsAChatAccountsEmails(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	w := audit.NewWriter(c, f.Ref("AuditBucket"))
	h := hasher(t)
	day := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	account, other := h.Email("smoke@example.com"), h.Email("person@example.com")
	write := func(kind oracle.MailKind, acct, nonce string, name audit.RecordName, created time.Time, status audit.Status) {
		t.Helper()
		rec := audit.Record{Timestamp: created, SessionCreated: created, Email: acct, Status: status,
			Source: audit.SourceEmailService, Event: audit.MailEvent(kind)}
		if status == audit.StatusEmailFailed {
			rec.ErrorDetail = audit.Detail("refused")
		}
		if _, err := w.Write(ctx, rec, audit.ChatMailRecordID(kind, acct, nonce, name)); err != nil {
			t.Fatal(err)
		}
	}
	write(oracle.MailChatSignIn, account, "nonce-sent", audit.NameMail, day, audit.StatusEmailSent)
	write(oracle.MailChatSignIn, account, "nonce-sent", audit.NameMailAttempt, day, audit.StatusEmailSent)
	write(oracle.MailChatSignIn, account, "nonce-failed", audit.NameMail, day.Add(time.Hour), audit.StatusEmailFailed)
	write(oracle.MailChatSignIn, account, "nonce-pending", audit.NameMailAttempt, day, audit.StatusEmailSent)
	write(oracle.MailChatSignIn, other, "nonce-other", audit.NameMail, day, audit.StatusEmailSent)
	write(oracle.MailChatPaymentFailed, account, "in_1", audit.NameMail, day, audit.StatusEmailSent)
	write(oracle.MailChatSignIn, account, "nonce-yesterday", audit.NameMail, day.AddDate(0, 0, -1), audit.StatusEmailSent)
	got, err := audit.NewReader(c, f.Ref("AuditBucket")).ChatMail(ctx, oracle.MailChatSignIn, account, day)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["nonce-sent"].Status != audit.StatusEmailSent || got["nonce-failed"].Status != audit.StatusEmailFailed {
		t.Errorf("records %+v, want nonce-sent (sent) and nonce-failed (failed)", got)
	}
}

// TestHealthHistoryIsBounded: the health job writes one record a period;
// each is locked only for the health history and tagged for the bucket's
// rule that expires it then, while every other record keeps the bucket's
// default retention and no tag.
func TestHealthHistoryIsBounded(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c := awsenv.S3(f.AWS)
	bucket := f.Ref("AuditBucket")
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	w := audit.NewWriter(c, bucket).KeepHealthHistory(90*24*time.Hour, s3types.ObjectLockModeGovernance, func() time.Time { return now })
	run := audit.Record{Timestamp: now, SessionCreated: now, Status: audit.StatusOK, Source: audit.SourceHealth, Event: audit.EventHealthRun}
	paid := valid(hasher(t))
	for _, x := range []struct {
		r  audit.Record
		id string
	}{{run, "health-run-1"}, {paid, "evt_1"}} {
		if ok, err := w.Write(ctx, x.r, x.id); err != nil || !ok {
			t.Fatalf("write %s: %v %v", x.id, ok, err)
		}
	}
	tags := func(key string) []string {
		out, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		var kv []string
		for _, tag := range out.TagSet {
			kv = append(kv, aws.ToString(tag.Key)+"="+aws.ToString(tag.Value))
		}
		return kv
	}
	until := func(key string) time.Time {
		out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToTime(out.ObjectLockRetainUntilDate).UTC()
	}
	runKey, paidKey := audit.Key(run, "health-run-1"), audit.Key(paid, "evt_1")
	if got := tags(runKey); len(got) != 1 || got[0] != audit.HistoryTag {
		t.Errorf("the health run's record is tagged %q, want %s", got, audit.HistoryTag)
	}
	if got, want := until(runKey), now.Add(90*24*time.Hour); !got.Equal(want) {
		t.Errorf("the health run's record is locked until %s, want %s (its history)", got, want)
	}
	if got := tags(paidKey); len(got) != 0 {
		t.Errorf("a payment's record is tagged %q: the health history's rule would expire it", got)
	}
	if got := until(paidKey); got.Before(now.Add(365 * 24 * time.Hour)) {
		t.Errorf("a payment's record is locked until %s, want the bucket's default retention", got)
	}
}

// x402 turns a record into an x402 payment's record with status, tx and
// detail.
func x402(status audit.Status, tx string, detail *string) func(*audit.Record) {
	return func(r *audit.Record) {
		r.Source, r.Event, r.Status, r.ErrorDetail = audit.SourceX402, audit.EventX402Payment, status, detail
		r.SessionID = "x402_test_" + strings.Repeat("a", 32)
		r.TxHash, r.Endpoint, r.AmountUSDC, r.Network = tx, "/x402/query", 0.05, "eip155:84532"
		r.Payer = audit.HashPrefix + "0123456789abcdef0123456789abcdef"
	}
}

// TestFailureStatusesNeedTheirDetail: FailureStatuses, which the figures
// count as failures, are exactly the statuses a record needs its
// error_detail for.
func TestFailureStatusesNeedTheirDetail(t *testing.T) {
	h := hasher(t)
	failures := map[audit.Status]bool{}
	for _, s := range audit.FailureStatuses() {
		failures[s] = true
	}
	for _, s := range []audit.Status{audit.StatusOK, audit.StatusError, audit.StatusCached, audit.StatusRegenerated, audit.StatusEmailSent, audit.StatusEmailFailed,
		audit.StatusReplay, audit.StatusInvalid, audit.StatusVerifyFailed, audit.StatusSettleFailed, audit.StatusSettleUnconfirmed, audit.StatusFacilitatorDown,
		audit.StatusRetry, audit.StatusIdentifierConflict} {
		r := valid(h)
		r.Status = s
		if needs := r.Validate() != nil; needs != failures[s] {
			t.Errorf("%s: a record without error_detail refused %v, a failure status %v", s, needs, failures[s])
		}
	}
	if len(failures) != 9 {
		t.Errorf("failure statuses %v, want 9", audit.FailureStatuses())
	}
	if audit.StatusRetry.Failure() || !audit.StatusIdentifierConflict.Failure() {
		t.Error("a retry answered from its order is no failure; an identifier's conflict is")
	}
}

// TestWithoutAddresses: every address-shaped run is replaced, the rest kept.
func TestWithoutAddresses(t *testing.T) {
	got := audit.WithoutAddresses("payTo ana@example.com is not bob.b@mail.example.org's, 0xabc")
	if got != "payTo [address] is not [address]'s, 0xabc" || audit.HasEmail(got) {
		t.Fatalf("got %q", got)
	}
}
