package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chatreply"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/sosfilter"
)

// wired is what other pieces of Sisters Chat provide this function, as
// the interfaces of deps.go.
type wired struct {
	Replier       Replier
	Subscriptions Subscriptions
	Billing       Billing
}

// wire makes the production Replier (shared/chatreply on the Gemini
// client and the generator's circuit), Subscriptions (shared/subscription
// on the chat table) and Billing (shared/stripex's subscription Checkout
// and portal sessions).
func wire(ctx context.Context, fn *coldstart.Function, cfg settings, alerts *alert.Alerter) (wired, error) {
	var w wired
	r, err := replier(ctx, fn, cfg, alerts)
	if err != nil {
		return wired{}, err
	}
	w.Replier = r
	var missing []string
	if w.Subscriptions == nil {
		missing = append(missing, "the subscriptions (Subscriptions)")
	}
	if w.Billing == nil {
		missing = append(missing, "Stripe's Checkout and portal (Billing)")
	}
	if len(missing) > 0 {
		return wired{}, fmt.Errorf("not wired in wire.go: %s", strings.Join(missing, ", "))
	}
	return w, nil
}

// replier is chatreply's Replier on the model's primary client: the
// chat's passes ask for a Flash model's settings (no thinking), which a
// Pro fallback would refuse, so the chat has no fallback.
func replier(ctx context.Context, fn *coldstart.Function, cfg settings, alerts *alert.Alerter) (Replier, error) {
	client, err := gemini.New(ctx, gemini.Options{Key: cfg.GeminiKey, Model: cfg.GeminiModel, BaseURL: cfg.GeminiBase, Timeout: cfg.CallTimeout})
	if err != nil {
		return nil, fmt.Errorf("the model client: %w", err)
	}
	policy := chatreply.CallerPolicy(cfg.CallTimeout)
	policy.BackoffBase = cfg.BackoffBase
	filter, err := sosfilter.New()
	if err != nil {
		return nil, fmt.Errorf("the content filter's block list: %w", err)
	}
	return modelReplier{&chatreply.Replier{
		Model:   &gemini.Caller{Primary: client, Policy: policy, Rand: rand.Float64, Now: time.Now, Log: fn.Log},
		Circuit: circuit.New(awsenv.NewTables(fn.AWS), cfg.LedgerTable, "gemini", cfg.Circuit, time.Now),
		Filter:  filter,
		Alerts:  alerts,
		Log:     fn.Log,
		Now:     time.Now,
	}}, nil
}

// modelReplier adapts chatreply's Replier to the handler's.
type modelReplier struct{ r *chatreply.Replier }

func (m modelReplier) Reply(ctx context.Context, req ReplyRequest) (ReplyResult, error) {
	history := make([]chatreply.Turn, len(req.History))
	for i, t := range req.History {
		history[i] = chatreply.Turn{Role: t.Role, Text: t.Text}
	}
	res, err := m.r.Reply(ctx, chatreply.Request{History: history, Message: req.Message})
	if errors.Is(err, chatreply.ErrUnavailable) {
		return ReplyResult{}, fmt.Errorf("%w: %w", ErrModelUnavailable, err)
	}
	if err != nil {
		return ReplyResult{}, err
	}
	return ReplyResult{Text: res.Reply, Filter: Filter(res.Filter)}, nil
}
