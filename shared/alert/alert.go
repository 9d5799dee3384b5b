// Package alert raises operator alerts: severities, a 60-second dedupe
// window per kind and session, SNS delivery with a retry, orders named by
// oracle.ShortID only (never by the whole id, even in a detail), and a log
// line with an AlertFallback metric, which an alarm watches, when SNS
// cannot be reached. Raising an alert never fails its caller.
package alert

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
)

// Severity of an alert.
type Severity string

// Severities (SPEC_ORACLE_CACHE_ALERT "Severity Levels"), and INFO for
// notices that ask nothing of the operator (a check that recovered).
const (
	Info     Severity = "INFO"
	Warn     Severity = "WARN"
	Error    Severity = "ERROR"
	Critical Severity = "CRITICAL"
)

// Alert is one operator alert.
type Alert struct {
	Severity Severity
	// Kind names what happened (kinds.go); with the session it is the
	// dedupe key.
	Kind Kind
	// Session is the session id concerned, if any. Only its name
	// (oracle.ShortID) is ever shown; the whole id keys the dedupe window.
	Session string
	// Subject names what the alert is about when that is not a session (a
	// health check, a queue); with the kind and the session it keys the
	// dedupe window, so two checks failing at once are both heard.
	Subject string
	// Detail is a short human-readable description, free of emails and queries.
	Detail string
	// Line, when set, is the exact alert text (specs with their own format,
	// such as [SILENT-DROP]); otherwise a standard line is built.
	Line string
}

// Text is the alert as it is published and logged. It names every order
// by its name only, wherever the detail or the line holds its whole id: the
// alert goes out by email, and a whole id opens the customer's result page.
func (a Alert) Text(now time.Time) string {
	if a.Line != "" {
		return oracle.NameIDs(a.Line)
	}
	session := oracle.ShortID(a.Session)
	if session == "" {
		session = "-"
	}
	return oracle.NameIDs(fmt.Sprintf("[ORACLE-ALERT] %s | %s | %s | %s | %s", a.Severity, now.UTC().Format(time.RFC3339), a.Kind, session, a.Detail))
}

// Publisher is the SNS call alerts need.
type Publisher interface {
	Publish(ctx context.Context, in *sns.PublishInput, opts ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// Deduper is the "first caller in this window wins" guard (store.Ledger).
type Deduper interface {
	Mark(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
}

// Alerter raises alerts.
type Alerter struct {
	SNS     Publisher
	Topic   string
	Dedupe  Deduper
	Metrics Counter
	Log     *slog.Logger
	Now     func() time.Time
	// Window is the dedupe window (60 s by default).
	Window time.Duration
	// Timeout bounds the whole raise, so an alert never holds up a customer.
	Timeout time.Duration
}

// DefaultWindow is the dedupe window (SPEC_ORACLE_CACHE_ALERT invariant 6).
const DefaultWindow = 60 * time.Second

// DefaultTimeout bounds a raise when Timeout is not set.
const DefaultTimeout = 3 * time.Second

// Raise delivers a. It dedupes by kind and session within the window,
// publishes to SNS (two attempts), and falls back to an error log line
// marked alert_fallback=true, counting AlertFallback, when SNS fails. CRITICAL alerts also count a
// CriticalAlerts metric, which an alarm watches.
func (al *Alerter) Raise(ctx context.Context, a Alert) {
	now := time.Now
	if al.Now != nil {
		now = al.Now
	}
	window := al.Window
	if window == 0 {
		window = DefaultWindow
	}
	timeout := al.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	text := a.Text(now())
	attrs := []any{"severity", string(a.Severity), "kind", string(a.Kind), "session", oracle.ShortID(a.Session), "alert", text}

	if a.Severity == Critical && al.Metrics != nil {
		al.Metrics.Count(obs.CriticalAlerts, 1)
	}
	if al.Dedupe != nil {
		// The dedupe lives in the Ledger, which may be what is failing: it
		// gets a third of the time, so the alert itself is still sent.
		dctx, dcancel := context.WithTimeout(ctx, timeout/3)
		first, err := al.Dedupe.Mark(dctx, dedupeKey(a), window)
		dcancel()
		switch {
		case err != nil:
			// Better a duplicate alert than a missing one.
			al.Log.WarnContext(ctx, "alert dedupe unavailable; sending anyway", append(attrs, "error", err.Error())...)
		case !first:
			al.Log.InfoContext(ctx, "alert suppressed within dedupe window", attrs...)
			return
		}
	}
	var err error
	for attempt := 1; attempt <= 2; attempt++ {
		_, err = al.SNS.Publish(ctx, &sns.PublishInput{
			TopicArn: aws.String(al.Topic),
			Subject:  aws.String(subject(a)),
			Message:  aws.String(text),
		})
		if err == nil {
			al.Log.WarnContext(ctx, "alert raised", attrs...)
			return
		}
	}
	al.Log.ErrorContext(ctx, "alert could not be published; this line is the alert", append(attrs, "alert_fallback", true, "error", err.Error())...)
	// A metric line, not the topic: AlertFallbackAlarm hears it when SNS
	// is what failed.
	if al.Metrics != nil {
		al.Metrics.Count(obs.AlertFallback, 1)
	}
}

// dedupeKey is the Ledger key of a's dedupe window. An escalation (the
// same thing found again, now CRITICAL) is news, so a CRITICAL alert never
// shares the window of a milder one.
func dedupeKey(a Alert) string {
	k := "alert#" + string(a.Kind) + "#" + a.Session
	if a.Subject != "" {
		k += "#" + a.Subject
	}
	if a.Severity == Critical {
		k += "#" + string(a.Severity)
	}
	return k
}

// subject is the SNS subject: ASCII, at most 100 characters.
func subject(a Alert) string {
	s := fmt.Sprintf("Oracle %s: %s", a.Severity, a.Kind)
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}
