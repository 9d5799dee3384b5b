package main

import (
	"context"
	"fmt"
	"time"

	"42sisters.ai/oracle/shared/auditfigures"
	"42sisters.ai/oracle/shared/auditseal"
	"42sisters.ai/oracle/shared/oracle"
)

// The audit log's actions: its seals and its figures.

// Sealer seals and verifies the audit log's days (auditseal.Sealer).
type Sealer interface {
	Seal(ctx context.Context, day time.Time) (auditseal.Seal, bool, error)
	Verify(ctx context.Context, day time.Time) (auditseal.Report, error)
}

// Figures computes the figures of the business over a range of partition
// days (auditfigures.Compute over the audit bucket).
type Figures func(ctx context.Context, from, to time.Time) (auditfigures.Figures, error)

// reportDays is the range report reads when the request names none: the
// last 30 days, today included.
const reportDays = 30

// report computes the figures of the business from the audit records of
// the partition days from..to (default: the last reportDays days). It
// reads; it changes nothing, so it needs no authorisation and is not
// recorded. Its figures hold no session id, address or query.
func (h *Handler) report(ctx context.Context, r Request) (Answer, error) {
	today := h.Now().UTC().Truncate(24 * time.Hour)
	to, err := dateOr(r.To, "to", today)
	if err != nil {
		return Answer{}, err
	}
	from, err := dateOr(r.From, "from", to.AddDate(0, 0, 1-reportDays))
	if err != nil {
		return Answer{}, err
	}
	if to.Before(from) {
		return Answer{}, refuse("the range ends (%s) before it starts (%s)", to.Format(time.DateOnly), from.Format(time.DateOnly))
	}
	if days := int(to.Sub(from).Hours()/24) + 1; days > auditfigures.MaxDays {
		return Answer{}, refuse("%d days is more than the %d the report reads; query Athena (the audit workgroup's named queries) for longer ranges", days, auditfigures.MaxDays)
	}
	f, err := h.Figures(ctx, from, to)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Text: f.String(), Data: f,
		Message: fmt.Sprintf("the figures of %s to %s: %d paid sessions, %d records", f.From, f.To, f.Paid.Sessions, f.Records)}, nil
}

// dateOr is the UTC day s names, or def when s is empty.
func dateOr(s, name string, def time.Time) (time.Time, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, refuse("%s is a date like 2026-11-23", name)
	}
	return d, nil
}

// day is the UTC day r names, yesterday by default.
func (h *Handler) day(r Request) (time.Time, error) {
	if r.Day == "" {
		return h.Now().UTC().AddDate(0, 0, -1), nil
	}
	d, err := time.Parse(time.DateOnly, r.Day)
	if err != nil {
		return time.Time{}, refuse("day is a date like 2026-11-23")
	}
	return d, nil
}

// seal seals a finished day of the audit log (the daily schedule runs it
// for yesterday): its record count and a hash over its records, written
// once under Object Lock.
func (h *Handler) seal(ctx context.Context, r Request) (Answer, error) {
	day, err := h.day(r)
	if err != nil {
		return Answer{}, err
	}
	s, written, err := h.Seals.Seal(ctx, day)
	if err != nil {
		return Answer{}, err
	}
	if !written {
		return Answer{Message: "already sealed: " + s.String(), Data: s}, nil
	}
	if err := h.record(ctx, r, oracle.Order{}, s.String()); err != nil {
		return Answer{}, err
	}
	return Answer{Changed: true, Message: "sealed: " + s.String()}, nil
}

// verifySeal recomputes a day's seal and names every record added,
// changed or missing since.
func (h *Handler) verifySeal(ctx context.Context, r Request) (Answer, error) {
	day, err := h.day(r)
	if err != nil {
		return Answer{}, err
	}
	rep, err := h.Seals.Verify(ctx, day)
	if err != nil {
		return Answer{}, refuse("%v", err)
	}
	ans := Answer{Text: rep.String(), Data: rep,
		Message: fmt.Sprintf("%s: the seal holds (%d records sealed, %d added since, written after it)", rep.Day, rep.Sealed, len(rep.Added))}
	if !rep.OK {
		// Answered as not ok, so that `make ops` fails too.
		return ans, refuse("%s: THE SEAL IS BROKEN: %d added and dated before it, %d changed, %d missing",
			rep.Day, countBackdated(rep), len(rep.Changed), len(rep.Missing))
	}
	return ans, nil
}

func countBackdated(rep auditseal.Report) int {
	n := 0
	for _, a := range rep.Added {
		if a.Arrival == auditseal.DatedBeforeSeal {
			n++
		}
	}
	return n
}
