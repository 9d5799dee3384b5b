package main

import (
	"context"
	"fmt"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// DeadLetters lists the Ledger's dead letters (store.DeadLetters).
type DeadLetters interface {
	MailDeadLetters(ctx context.Context) ([]store.MailDeadLetter, error)
	DeadJobs(ctx context.Context, queue string) ([]store.DeadJob, error)
}

// Releaser deletes a Ledger record (store.Ledger).
type Releaser interface {
	Release(ctx context.Context, key string) error
}

// DeadQueue is what a redrive sends back: the jobs recorded from the
// dead-letter queue of that name which Takes accepts, to their source
// queue. One dead-letter queue serves every source, so each redrive takes
// its own kind of job (a nil Takes takes every job).
type DeadQueue struct {
	Name   string
	Source Sender
	Takes  func(queue.Job) bool
}

// generateJob and mailJob tell the two kinds of job apart: a generate job
// has no mail kind, every mail job has one.
func generateJob(j queue.Job) bool { return j.Kind == "" }
func mailJob(j queue.Job) bool     { return j.Kind != "" }

// redriveMail names the mail dead letters in a redrive request.
const redriveMail = "mail"

// redrive sends again what was given up on: the emails of the mail dead
// letters (each delivery reopened, so it goes through every guard of a
// first send), or the jobs recorded from a dead-letter queue. Each record
// is removed once its message is sent again, so a second redrive finds
// nothing more to do.
func (h *Handler) redrive(ctx context.Context, r Request) (Answer, error) {
	if r.Queue == redriveMail {
		return h.redriveMail(ctx, r)
	}
	dq, ok := h.DeadQueues[r.Queue]
	if !ok {
		names := []string{redriveMail}
		for n := range h.DeadQueues {
			names = append(names, n)
		}
		return Answer{}, refuse("redrive needs a queue: one of %v", names)
	}
	jobs, err := h.Dead.DeadJobs(ctx, dq.Name)
	if err != nil {
		return Answer{}, err
	}
	sent, unreadable := 0, 0
	for _, d := range jobs {
		if d.Job == "" {
			unreadable++ // only its hash was kept: nothing to send
			continue
		}
		j, err := queue.Parse(d.Job)
		if err != nil {
			unreadable++
			continue
		}
		if dq.Takes != nil && !dq.Takes(j) {
			continue // another source's job, for its own redrive
		}
		j.NotBefore = nil
		if err := dq.Source.Send(ctx, j); err != nil {
			return Answer{}, fmt.Errorf("send %s again: %w", jobName(j), err)
		}
		if err := h.Ledger.Release(ctx, d.Key); err != nil {
			return Answer{}, err
		}
		sent++
	}
	outcome := fmt.Sprintf("%d jobs of %s sent again", sent, dq.Name)
	if sent > 0 {
		if err := h.record(ctx, r, oracle.Order{}, outcome); err != nil {
			return Answer{}, err
		}
	}
	if unreadable > 0 {
		outcome += fmt.Sprintf("; %d messages were no job and stay recorded", unreadable)
	}
	return Answer{Changed: sent > 0, Message: outcome + "; their consumers act only on orders still owing them"}, nil
}

// jobName names a job in an error: by its session (oracle.ShortID), or,
// for the mail jobs that name none, by what they answer.
func jobName(j queue.Job) string {
	switch {
	case oracle.ChatMail(j.Kind):
		return "the " + string(j.Kind) + " job " + j.Nonce
	case j.Kind == oracle.MailAutoresponse:
		return "the autoresponse job of " + j.Inbox
	}
	return oracle.ShortID(j.SessionID) + "'s job"
}

func (h *Handler) redriveMail(ctx context.Context, r Request) (Answer, error) {
	dead, err := h.Dead.MailDeadLetters(ctx)
	if err != nil {
		return Answer{}, err
	}
	sent := 0
	for _, d := range dead {
		o, found, err := h.Orders.Get(ctx, d.SessionID)
		if err != nil {
			return Answer{}, err
		}
		if found {
			if _, err := h.Orders.ReopenMail(ctx, d.SessionID, d.Kind); err != nil {
				return Answer{}, err
			}
			if err := h.Mail.Send(ctx, queue.Job{SessionID: d.SessionID, Kind: d.Kind}); err != nil {
				return Answer{}, fmt.Errorf("send %s's %s email again: %w", oracle.ShortID(d.SessionID), d.Kind, err)
			}
			if err := h.record(ctx, r, o, fmt.Sprintf("the %s email redriven", d.Kind)); err != nil {
				return Answer{}, err
			}
			sent++
		}
		if err := h.Ledger.Release(ctx, store.MailDeadLetterKey(d.SessionID, d.Kind)); err != nil {
			return Answer{}, err
		}
	}
	return Answer{Changed: sent > 0, Message: fmt.Sprintf("%d emails given up on are sent again", sent)}, nil
}
