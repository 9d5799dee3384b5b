package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/store"
)

// FailureRecords lists the records of a dead-letter queue
// (store.DeadLetters).
type FailureRecords interface {
	DeadJobs(ctx context.Context, queue string) ([]store.DeadJob, error)
}

// Releaser removes a Ledger record (store.Ledger).
type Releaser interface {
	Release(ctx context.Context, key string) error
}

// replay is `make inbox-replay`'s request: the stored messages to process
// again (their ids), or none for every failed invocation recorded.
type replay struct {
	IDs []string `json:"ids"`
}

// replayAnswer is what a replay did, for the operator: `make inbox-replay`
// prints it as `make ops` prints the ops function's answer
// (infra/opsverb/ops.py): Message in a sentence, Text a line per message,
// and exits 1 unless OK.
type replayAnswer struct {
	Action  string `json:"action"`
	OK      bool   `json:"ok"`
	Changed bool   `json:"changed"`
	Message string `json:"message"`
	Text    string `json:"text,omitempty"`
}

// replay processes again the messages of the invocations that failed past
// Lambda's retries (their records, kept by the deadletter function from
// the on-failure destination), or the messages named. A message already
// processed changes nothing; a record is removed once every message it
// names is processed (or gone), so a second replay finds nothing more. A
// replay reads each message as SES found it clean. A message that fails
// again is in the answer (not OK), and its record stays for the next
// replay; only a request it cannot act on at all is an error.
func (h *Handler) replay(ctx context.Context, r replay) (*replayAnswer, error) {
	records, err := h.Failures.DeadJobs(ctx, h.FailureQueue)
	if err != nil {
		return nil, fmt.Errorf("list the failed invocations: %w", err)
	}
	var objects []string
	for _, id := range r.IDs {
		object, ok := inbox.Object(id)
		if !ok {
			return nil, fmt.Errorf("replay: %q is no stored message's id", id)
		}
		objects = append(objects, object)
	}
	named := len(objects) > 0
	for _, rec := range records {
		for _, object := range strings.Fields(rec.Inbox) {
			if !named && !slices.Contains(objects, object) {
				objects = append(objects, object)
			}
		}
	}
	done := map[string]bool{}
	var errs []error
	var lines []string
	processed, gone := 0, 0
	for _, object := range objects {
		raw, at, err := h.Messages.Get(ctx, object)
		switch {
		case errors.Is(err, inbox.ErrGone):
			h.Log.WarnContext(ctx, "replay: the stored message is gone (past the inbox bucket's retention)", "object", object)
			lines = append(lines, "gone       "+object+" (past the inbox bucket's retention: nothing to process)")
			gone++
			done[object] = true
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", object, err))
			lines = append(lines, "failed     "+object+": "+err.Error())
			continue
		}
		if err := h.Core.Process(ctx, Received{Object: object, Raw: raw, At: at}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", object, err))
			lines = append(lines, "failed     "+object+": "+err.Error())
			continue
		}
		processed++
		done[object] = true
		lines = append(lines, "processed  "+object)
	}
	released := 0
	for _, rec := range records {
		names := strings.Fields(rec.Inbox)
		if len(names) == 0 || !all(names, done) {
			continue
		}
		if err := h.Releaser.Release(ctx, rec.Key); err != nil {
			errs = append(errs, fmt.Errorf("remove the record %s: %w", rec.Key, err))
			lines = append(lines, "failed     to remove the record "+rec.Key+": "+err.Error())
			continue
		}
		released++
	}
	h.Log.InfoContext(ctx, "replay", "messages", len(objects), "processed", processed, "gone", gone, "failed", len(errs), "records_removed", released)
	if err := errors.Join(errs...); err != nil {
		h.Log.ErrorContext(ctx, "replay: not everything was processed", "error", err.Error())
	}
	a := &replayAnswer{Action: "inbox-replay", OK: len(errs) == 0, Changed: processed+released > 0, Text: strings.Join(lines, "\n")}
	switch {
	case len(objects) == 0:
		a.Message = "no failed invocation is recorded: nothing to replay"
	default:
		a.Message = fmt.Sprintf("%d message(s) replayed: %d processed, %d gone, %d failed; %d of %d record(s) removed",
			len(objects), processed, gone, len(errs), released, len(records))
		if len(errs) > 0 {
			a.Message += "; fix the cause (the inbox function's log) and run make inbox-replay again"
		}
	}
	return a, nil
}
func all(names []string, done map[string]bool) bool {
	for _, n := range names {
		if !done[n] {
			return false
		}
	}
	return true
}
