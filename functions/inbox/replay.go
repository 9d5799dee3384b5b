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

// replay processes again the messages of the invocations that failed past
// Lambda's retries (their records, kept by the deadletter function from
// the on-failure destination), or the messages named. A message already
// processed changes nothing; a record is removed once every message it
// names is processed (or gone), so a second replay finds nothing more. A
// replay reads each message as SES found it clean.
func (h *Handler) replay(ctx context.Context, r replay) error {
	records, err := h.Failures.DeadJobs(ctx, h.FailureQueue)
	if err != nil {
		return fmt.Errorf("list the failed invocations: %w", err)
	}
	var objects []string
	for _, id := range r.IDs {
		object, ok := inbox.Object(id)
		if !ok {
			return fmt.Errorf("replay: %q is no stored message's id", id)
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
	processed, gone := 0, 0
	for _, object := range objects {
		raw, at, err := h.Messages.Get(ctx, object)
		switch {
		case errors.Is(err, inbox.ErrGone):
			h.Log.Warn("replay: the stored message is gone (past the inbox bucket's retention)", "object", object)
			gone++
			done[object] = true
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", object, err))
			continue
		}
		if err := h.Core.Process(ctx, Received{Object: object, Raw: raw, At: at}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", object, err))
			continue
		}
		processed++
		done[object] = true
	}
	released := 0
	for _, rec := range records {
		names := strings.Fields(rec.Inbox)
		if len(names) == 0 || !all(names, done) {
			continue
		}
		if err := h.Releaser.Release(ctx, rec.Key); err != nil {
			errs = append(errs, fmt.Errorf("remove the record %s: %w", rec.Key, err))
			continue
		}
		released++
	}
	h.Log.Info("replay", "messages", len(objects), "processed", processed, "gone", gone, "failed", len(errs), "records_removed", released)
	return errors.Join(errs...)
}

func all(names []string, done map[string]bool) bool {
	for _, n := range names {
		if !done[n] {
			return false
		}
	}
	return true
}
