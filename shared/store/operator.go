package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/oracle"
)

// The operator's transitions (the ops function). Each names the state it
// applies to, so the same request twice changes the order once.

// mailRemove is the REMOVE list that reopens the delivery of kind.
func mailRemove(kind oracle.MailKind) string {
	a := attrsOf(kind)
	return strings.Join([]string{a.sent, a.leaseUntil, a.lease, a.messageID, a.state, a.nextAttempt, a.nextAt, a.tries}, ", ")
}

// ReopenMail reopens the closed delivery of the mail of kind (sent, or
// given up on), so that its next job sends it again through every guard
// of a first send. It reports whether this call reopened it.
func (o *Orders) ReopenMail(ctx context.Context, sessionID string, kind oracle.MailKind) (bool, error) {
	a := attrsOf(kind)
	return o.transition(ctx, "reopen "+string(kind)+" mail", sessionID,
		"#s = #s REMOVE "+mailRemove(kind),
		"attribute_exists("+a.sent+")", map[string]types.AttributeValue{})
}

// Rerun turns a DROPPED order into a PAID one with the tier and query the
// operator agreed with the customer, against the payment already
// recorded. It reports whether this call changed it; the caller then
// sends the generation job.
func (o *Orders) Rerun(ctx context.Context, sessionID string, tier oracle.Tier, query string) (bool, error) {
	return o.transitionNamed(ctx, "rerun", sessionID,
		"#s = :paid, tier = :tier, tier_raw = :tier, #q = :q REMOVE drop_reason, job_enqueued_at, job_lease_until, job_lease",
		"#s = :dropped", map[string]string{"#q": "query"}, map[string]types.AttributeValue{
			":paid":    &types.AttributeValueMemberS{Value: string(oracle.StatusPaid)},
			":dropped": &types.AttributeValueMemberS{Value: string(oracle.StatusDropped)},
			":tier":    &types.AttributeValueMemberS{Value: string(tier)},
			":q":       &types.AttributeValueMemberS{Value: query},
		})
}

// Regenerate turns a HELD or QUARANTINED order back into a PAID one owed a
// new generation: whatever verdict it holds is dropped (a held one has
// none; a verdict stopped at gate 2 is never served again) and the
// verdict's email reopened. It reports whether this call changed it.
func (o *Orders) Regenerate(ctx context.Context, sessionID string) (bool, error) {
	return o.transition(ctx, "regenerate", sessionID,
		"#s = :paid REMOVE verdict, verdict_hash, verdict_label, generated_at, divergence, failure, "+
			"gen_lease_until, gen_lease, parked_since, job_due_at, "+mailRemove(oracle.MailVerdict),
		"#s = :held OR #s = :quarantined", map[string]types.AttributeValue{
			":paid":        &types.AttributeValueMemberS{Value: string(oracle.StatusPaid)},
			":held":        &types.AttributeValueMemberS{Value: string(oracle.StatusHeld)},
			":quarantined": &types.AttributeValueMemberS{Value: string(oracle.StatusQuarantined)},
		})
}

// DeliverCleaned stores the cleaned verdict of a QUARANTINED order as its
// one verdict and makes it READY, with the verdict's email reopened. It
// reports whether this call changed it; the caller then sends the mail job
// (gate 2 still runs on the email).
func (o *Orders) DeliverCleaned(ctx context.Context, sessionID string, v StoredVerdict) (bool, error) {
	return o.transition(ctx, "deliver cleaned", sessionID,
		"#s = :ready, verdict = :v, verdict_hash = :h, verdict_label = :label, coherence_score = :score, filter_version = :fv, "+
			"prompt_version = :pv, model = :m, generated_at = :now, expires_at = :exp REMOVE "+mailRemove(oracle.MailVerdict),
		"#s = :quarantined", map[string]types.AttributeValue{
			":ready":       &types.AttributeValueMemberS{Value: string(oracle.StatusReady)},
			":quarantined": &types.AttributeValueMemberS{Value: string(oracle.StatusQuarantined)},
			":v":           &types.AttributeValueMemberS{Value: v.Canonical},
			":h":           &types.AttributeValueMemberS{Value: v.Hash},
			":label":       &types.AttributeValueMemberS{Value: string(v.Label)},
			":score":       &types.AttributeValueMemberN{Value: strconv.FormatFloat(v.CoherenceScore, 'g', -1, 64)},
			":fv":          &types.AttributeValueMemberS{Value: v.FilterVersion},
			":pv":          &types.AttributeValueMemberS{Value: v.PromptVersion},
			":m":           &types.AttributeValueMemberS{Value: v.Model},
			":exp":         &types.AttributeValueMemberN{Value: fmt.Sprint(v.ExpiresAt.Unix())},
		})
}
