package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/oracle"
)

// ErrNotOwed means the order owes no generation to this caller: it has a
// verdict, another generator holds a live lease, or it is in a state that
// is not generated (dropped, refunded, ...). Order says which, as the
// refused write found it; Missing says there is no such order.
type ErrNotOwed struct {
	Order   oracle.Order
	Missing bool
}

func (e *ErrNotOwed) Error() string {
	return fmt.Sprintf("order %s owes no generation (status %s)", oracle.ShortID(e.Order.SessionID), e.Order.Status)
}

// StartGeneration leases a PAID order (or a GENERATING one whose lease has
// passed or was given up) to the caller for lease and counts the attempt.
// Its job is on the generate queue, since the caller received it: the
// write records that (job_enqueued_at, the first time) and frees the job
// lease, which the claim that sent the job leaves for it (fulfil).
// It returns the order and the lease token, or *ErrNotOwed holding the
// order as the refused condition found it (ALL_OLD), so that the caller
// needs no read of its own to tell why.
func (o *Orders) StartGeneration(ctx context.Context, sessionID string, lease time.Duration) (oracle.Order, string, error) {
	now := o.now().UTC()
	r, err := condwrite.UpdateLease(ctx, o.db, &dynamodb.UpdateItemInput{
		TableName: aws.String(o.table),
		Key:       key(sessionID),
		UpdateExpression: aws.String("SET #s = :generating, gen_lease_until = :until, gen_lease = :wid, attempts = if_not_exists(attempts, :zero) + :one, updated_at = :now, " +
			"job_enqueued_at = if_not_exists(job_enqueued_at, :now) REMOVE job_lease_until, job_lease"),
		ConditionExpression: aws.String("attribute_exists(session_id) AND attribute_not_exists(verdict) AND " +
			"(#s = :paid OR (#s = :generating AND (attribute_not_exists(gen_lease_until) OR gen_lease_until < :nowms)))"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":generating": &types.AttributeValueMemberS{Value: string(oracle.StatusGenerating)},
			":paid":       &types.AttributeValueMemberS{Value: string(oracle.StatusPaid)},
			":until":      &types.AttributeValueMemberN{Value: fmt.Sprint(now.Add(lease).UnixMilli())},
			":nowms":      &types.AttributeValueMemberN{Value: fmt.Sprint(now.UnixMilli())},
			":zero":       &types.AttributeValueMemberN{Value: "0"},
			":one":        &types.AttributeValueMemberN{Value: "1"},
			":now":        &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
		},
		ReturnValues: types.ReturnValueAllNew,
	}, "gen_lease")
	if err != nil {
		return oracle.Order{}, "", fmt.Errorf("start generation %s: %w", oracle.ShortID(sessionID), err)
	}
	if !r.Applied && r.Current == nil {
		return oracle.Order{}, "", &ErrNotOwed{Order: oracle.Order{SessionID: sessionID}, Missing: true}
	}
	// r.Current is the leased order when Applied (also when a retried
	// request's first attempt took the lease), else the order not owed.
	current, err := decode(r.Current)
	if err != nil {
		return oracle.Order{}, "", fmt.Errorf("start generation %s: %w", oracle.ShortID(sessionID), err)
	}
	if !r.Applied {
		return oracle.Order{}, "", &ErrNotOwed{Order: current}
	}
	return current, r.Token, nil
}

// StoredVerdict is what the generator stores with a verdict.
type StoredVerdict struct {
	Canonical     string // Analysis.CanonicalJSON
	Hash          string // keyed hash of Canonical
	PromptVersion string
	Model         string
	// Label is the top-level verdict, kept apart so a regeneration can keep
	// the first one's for the divergence check.
	Label oracle.Verdict
	// CoherenceScore is the crosscheck's score of the verdict.
	CoherenceScore float64
	// Divergence is set on a regenerated verdict: how far it moved from the
	// first one (oracle.Diverge).
	Divergence string
	// FilterVersion is the content filter's block list version that
	// passed (or cleaned) the verdict at gate 1.
	FilterVersion string
	// ExpiresAt restarts the order's retention from the verdict.
	ExpiresAt time.Time
	// Audit is what the generator's audit records of this generation need
	// beyond the order (oracle.Order.GenAudit), carried with the verdict
	// so that a redelivery after a crash writes any record the crash lost.
	Audit string
}

// StoreVerdict stores the order's one authoritative verdict and marks it
// READY, only while the caller holds the generation lease and no verdict
// is stored. It returns ErrLeaseLost when either no longer holds.
func (o *Orders) StoreVerdict(ctx context.Context, sessionID, lease string, v StoredVerdict) (oracle.Order, error) {
	now := o.now().UTC()
	values := map[string]types.AttributeValue{
		":v":     &types.AttributeValueMemberS{Value: v.Canonical},
		":h":     &types.AttributeValueMemberS{Value: v.Hash},
		":pv":    &types.AttributeValueMemberS{Value: v.PromptVersion},
		":m":     &types.AttributeValueMemberS{Value: v.Model},
		":label": &types.AttributeValueMemberS{Value: string(v.Label)},
		":score": &types.AttributeValueMemberN{Value: strconv.FormatFloat(v.CoherenceScore, 'g', -1, 64)},
		":now":   &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
		":ready": &types.AttributeValueMemberS{Value: string(oracle.StatusReady)},
		":exp":   &types.AttributeValueMemberN{Value: fmt.Sprint(v.ExpiresAt.Unix())},
		":lease": &types.AttributeValueMemberS{Value: lease},
		":fv":    &types.AttributeValueMemberS{Value: v.FilterVersion},
	}
	divergence := ""
	if v.Divergence != "" {
		divergence, values[":div"] = ", divergence = :div", &types.AttributeValueMemberS{Value: v.Divergence}
	}
	// A verdict stored without records to carry leaves none of an earlier
	// generation's on the order.
	carried := " REMOVE gen_audit,"
	if v.Audit != "" {
		carried, values[":ga"] = ", gen_audit = :ga REMOVE", &types.AttributeValueMemberS{Value: v.Audit}
	}
	r, err := condwrite.Update(ctx, o.db, &dynamodb.UpdateItemInput{
		TableName: aws.String(o.table),
		Key:       key(sessionID),
		UpdateExpression: aws.String("SET verdict = :v, verdict_hash = :h, verdict_label = :label, coherence_score = :score, " +
			"prompt_version = :pv, model = :m, filter_version = :fv, generated_at = :now, #s = :ready, expires_at = :exp, updated_at = :now, write_id = :wid" + divergence +
			carried + " gen_lease_until, gen_lease, parked_since, job_due_at"),
		ConditionExpression:       aws.String("gen_lease = :lease AND attribute_not_exists(verdict)"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return oracle.Order{}, fmt.Errorf("store verdict %s: %w", oracle.ShortID(sessionID), err)
	}
	if !r.Applied {
		return oracle.Order{}, fmt.Errorf("store verdict %s: %w", oracle.ShortID(sessionID), ErrLeaseLost)
	}
	// The order as stored, by this request or by a retried one's first attempt.
	ord, err := decode(r.Current)
	if err != nil {
		return oracle.Order{}, fmt.Errorf("store verdict %s: %w", oracle.ShortID(sessionID), err)
	}
	return ord, nil
}

// AbandonGeneration gives up the caller's generation lease after a failed
// attempt, so the next attempt (the job's redelivery) may start at once.
// The order stays GENERATING without a verdict: nothing partial is stored.
func (o *Orders) AbandonGeneration(ctx context.Context, sessionID, lease string) error {
	_, err := o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(o.table),
		Key:                 key(sessionID),
		UpdateExpression:    aws.String("REMOVE gen_lease_until, gen_lease"),
		ConditionExpression: aws.String("gen_lease = :lease"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":lease": &types.AttributeValueMemberS{Value: lease},
		},
	})
	if err != nil && !condwrite.ConditionFailed(err) {
		return fmt.Errorf("abandon generation %s: %w", oracle.ShortID(sessionID), err)
	}
	return nil
}

// MarkFailed records that generation failed for good: the order becomes
// FAILED, only if it is still being generated and has no verdict. It
// reports whether this call made the change.
func (o *Orders) MarkFailed(ctx context.Context, sessionID, reason string) (bool, error) {
	return o.transition(ctx, "mark failed", sessionID,
		"#s = :failed, failure = :reason REMOVE gen_lease_until, gen_lease",
		"attribute_not_exists(verdict) AND (#s = :generating OR #s = :paid)",
		map[string]types.AttributeValue{
			":failed":     &types.AttributeValueMemberS{Value: string(oracle.StatusFailed)},
			":generating": &types.AttributeValueMemberS{Value: string(oracle.StatusGenerating)},
			":paid":       &types.AttributeValueMemberS{Value: string(oracle.StatusPaid)},
			":reason":     &types.AttributeValueMemberS{Value: reason},
		})
}

// ResetForRegeneration turns a READY order whose verdict has expired back
// into a PAID order owed a new generation, keeping the original verdict's
// hash for the divergence check. It reports whether this call reset it.
func (o *Orders) ResetForRegeneration(ctx context.Context, sessionID string, hold time.Duration) (bool, error) {
	now := o.now().UTC()
	_, err := o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(o.table),
		Key:       key(sessionID),
		UpdateExpression: aws.String("SET #s = :paid, regen = :true, regen_reason = :reason, original_verdict_hash = verdict_hash, original_verdict = verdict_label, " +
			"expires_at = :hold, updated_at = :now REMOVE verdict, verdict_hash, verdict_label, generated_at, divergence"),
		ConditionExpression:      aws.String("#s = :ready AND attribute_exists(verdict) AND expires_at <= :nows"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":paid":   &types.AttributeValueMemberS{Value: string(oracle.StatusPaid)},
			":ready":  &types.AttributeValueMemberS{Value: string(oracle.StatusReady)},
			":true":   &types.AttributeValueMemberBOOL{Value: true},
			":reason": &types.AttributeValueMemberS{Value: oracle.RegenExpired},
			":hold":   &types.AttributeValueMemberN{Value: fmt.Sprint(now.Add(hold).Unix())},
			":nows":   &types.AttributeValueMemberN{Value: fmt.Sprint(now.Unix())},
			":now":    &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
		},
	})
	if condwrite.ConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reset %s for regeneration: %w", oracle.ShortID(sessionID), err)
	}
	return true, nil
}

// Park records that the order's job waits for the model to come back
// until due, without touching its attempts: parked_since is set the first
// time only, so the parking budget runs from the first park, and job_due_at
// tells the health job when progress is next expected. It returns the
// first park's time, or *ErrNotOwed when the order is no longer waiting for
// a verdict.
func (o *Orders) Park(ctx context.Context, sessionID string, due time.Time) (time.Time, error) {
	now := o.now().UTC()
	out, err := o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(o.table),
		Key:                      key(sessionID),
		UpdateExpression:         aws.String("SET parked_since = if_not_exists(parked_since, :now), job_due_at = :due, updated_at = :now"),
		ConditionExpression:      aws.String("attribute_not_exists(verdict) AND (#s = :paid OR #s = :generating)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":paid":       &types.AttributeValueMemberS{Value: string(oracle.StatusPaid)},
			":generating": &types.AttributeValueMemberS{Value: string(oracle.StatusGenerating)},
			":now":        &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
			":due":        &types.AttributeValueMemberS{Value: due.UTC().Format(time.RFC3339Nano)},
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if item, failed := condwrite.Failed(err); failed {
		current, _ := decode(item)
		current.SessionID = sessionID
		return time.Time{}, &ErrNotOwed{Order: current}
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("park %s: %w", oracle.ShortID(sessionID), err)
	}
	ord, err := decode(out.Attributes)
	if err != nil || ord.ParkedSince == nil {
		return time.Time{}, fmt.Errorf("park %s: the parked time was not returned (%v)", oracle.ShortID(sessionID), err)
	}
	return *ord.ParkedSince, nil
}

// ParkLeased gives back the generation lease that StartGeneration gave
// the caller with leased, on an attempt that never asked the model (the
// circuit is open, the key refused), and parks the order until due, in one
// write: the attempt is uncounted, an order that had no attempt before is
// PAID again, and parked_since is set the first time only, as Park does.
// It returns the first park's time, or *ErrNotOwed when the lease is no
// longer the caller's or a verdict is stored.
func (o *Orders) ParkLeased(ctx context.Context, leased oracle.Order, lease string, due time.Time) (time.Time, error) {
	now := o.now().UTC()
	sessionID := leased.SessionID
	status := oracle.StatusGenerating
	if leased.Attempts <= 1 {
		status = oracle.StatusPaid
	}
	r, err := condwrite.Update(ctx, o.db, &dynamodb.UpdateItemInput{
		TableName: aws.String(o.table),
		Key:       key(sessionID),
		UpdateExpression: aws.String("SET parked_since = if_not_exists(parked_since, :now), job_due_at = :due, updated_at = :now, " +
			"#s = :status, attempts = attempts - :one, write_id = :wid REMOVE gen_lease_until, gen_lease"),
		ConditionExpression:      aws.String("gen_lease = :lease AND attribute_not_exists(verdict)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":lease":  &types.AttributeValueMemberS{Value: lease},
			":status": &types.AttributeValueMemberS{Value: string(status)},
			":one":    &types.AttributeValueMemberN{Value: "1"},
			":now":    &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
			":due":    &types.AttributeValueMemberS{Value: due.UTC().Format(time.RFC3339Nano)},
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("park %s: %w", oracle.ShortID(sessionID), err)
	}
	current, derr := decode(r.Current)
	if !r.Applied {
		current.SessionID = sessionID
		return time.Time{}, &ErrNotOwed{Order: current, Missing: r.Current == nil}
	}
	if derr != nil || current.ParkedSince == nil {
		return time.Time{}, fmt.Errorf("park %s: the parked time was not returned (%v)", oracle.ShortID(sessionID), derr)
	}
	return *current.ParkedSince, nil
}

// Hold sets aside an order whose verdict failed the crosscheck twice: it
// becomes HELD, only while the caller holds the generation lease and no
// verdict is stored, and reports whether this call held it.
func (o *Orders) Hold(ctx context.Context, sessionID, lease, reason string) (bool, error) {
	return o.transition(ctx, "hold", sessionID,
		"#s = :held, failure = :reason REMOVE gen_lease_until, gen_lease, parked_since, job_due_at",
		"gen_lease = :lease AND attribute_not_exists(verdict)",
		map[string]types.AttributeValue{
			":held":   &types.AttributeValueMemberS{Value: string(oracle.StatusHeld)},
			":reason": &types.AttributeValueMemberS{Value: reason},
			":lease":  &types.AttributeValueMemberS{Value: lease},
		})
}

// Quarantine is why an order was set aside by the content filter: the gate
// that stopped it, the block list entries it found (ids, never the text),
// and where the raw payload is kept for review.
type Quarantine struct {
	Gate          string
	Terms         []string
	Record        string // the quarantine record's key
	FilterVersion string
}

// QuarantineGeneration sets aside an order whose new verdict the filter
// stopped at gate 1: it becomes QUARANTINED without the verdict ever being
// stored, only while the caller holds the generation lease. It reports
// whether this call quarantined it.
func (o *Orders) QuarantineGeneration(ctx context.Context, sessionID, lease string, q Quarantine) (bool, error) {
	values := q.values()
	values[":lease"] = &types.AttributeValueMemberS{Value: lease}
	return o.transition(ctx, "quarantine", sessionID, quarantineSet+" REMOVE gen_lease_until, gen_lease, parked_since, job_due_at",
		"gen_lease = :lease AND attribute_not_exists(verdict)", values)
}

// QuarantineReady sets aside a READY order whose email the filter stopped
// at gate 2: the stored verdict stays for review but is no longer served.
// It reports whether this call quarantined it.
func (o *Orders) QuarantineReady(ctx context.Context, sessionID string, q Quarantine) (bool, error) {
	values := q.values()
	values[":ready"] = &types.AttributeValueMemberS{Value: string(oracle.StatusReady)}
	return o.transition(ctx, "quarantine", sessionID, quarantineSet, "#s = :ready", values)
}

// quarantineSet records a quarantine from the values of Quarantine.values.
const quarantineSet = "#s = :q, quarantine_gate = :gate, quarantine_terms = :terms, quarantine_record = :rec, " +
	"filter_version = :fv, quarantined_at = :now"

func (q Quarantine) values() map[string]types.AttributeValue {
	terms := make([]types.AttributeValue, 0, len(q.Terms))
	for _, t := range q.Terms {
		terms = append(terms, &types.AttributeValueMemberS{Value: t})
	}
	return map[string]types.AttributeValue{
		":q":     &types.AttributeValueMemberS{Value: string(oracle.StatusQuarantined)},
		":gate":  &types.AttributeValueMemberS{Value: q.Gate},
		":terms": &types.AttributeValueMemberL{Value: terms},
		":rec":   &types.AttributeValueMemberS{Value: q.Record},
		":fv":    &types.AttributeValueMemberS{Value: q.FilterVersion},
	}
}

// transition applies update (the assignments of a SET clause, optionally
// followed by a REMOVE clause) to the order under cond, and reports whether
// this call made the change. It also sets updated_at (:now, which update may
// use too) and write_id, so that a request the SDK retried after its answer
// was lost recognises its own first attempt instead of a lost race. "#s"
// names the status attribute.
func (o *Orders) transition(ctx context.Context, op, sessionID, update, cond string, values map[string]types.AttributeValue) (bool, error) {
	return o.transitionNamed(ctx, op, sessionID, update, cond, nil, values)
}

// transitionNamed is transition with attribute names beyond "#s" (for
// attributes whose names DynamoDB reserves, such as query).
func (o *Orders) transitionNamed(ctx context.Context, op, sessionID, update, cond string, names map[string]string, values map[string]types.AttributeValue) (bool, error) {
	all := map[string]string{"#s": "status"}
	for k, v := range names {
		all[k] = v
	}
	values[":now"] = &types.AttributeValueMemberS{Value: o.now().UTC().Format(time.RFC3339Nano)}
	r, err := condwrite.Update(ctx, o.db, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(o.table),
		Key:                       key(sessionID),
		UpdateExpression:          aws.String("SET updated_at = :now, write_id = :wid, " + update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  all,
		ExpressionAttributeValues: values,
	})
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", op, oracle.ShortID(sessionID), err)
	}
	return r.Applied, nil
}

// SetAsideMode is what becomes of an order whose stored verdict was found
// corrupt.
type SetAsideMode int

const (
	// SetAsideRegenerate: the verdict was emailed, so the order is owed a
	// regeneration compared with it (its label and hash are kept as the
	// original, unless an earlier regeneration kept one already).
	SetAsideRegenerate SetAsideMode = iota
	// SetAsideGenerate: the verdict never left by email, so the order is
	// owed a first generation again, emailed as any first verdict.
	SetAsideGenerate
	// SetAsideHold: the order cannot be repaired by itself; it is HELD for
	// the operator (oracle.HoldVerdictCorrupt).
	SetAsideHold
)

func (m SetAsideMode) String() string {
	switch m {
	case SetAsideRegenerate:
		return "regenerate"
	case SetAsideGenerate:
		return "generate"
	case SetAsideHold:
		return "hold"
	}
	return fmt.Sprintf("SetAsideMode(%d)", int(m))
}

// SetAside takes the corrupt verdict off seen, a READY order as the caller
// read it, keeping its text in set_aside_verdict, and makes the order what
// mode says (a READY order without a verdict is set aside alike). The condition names the verdict the caller read, so of
// concurrent readers that met it exactly one sets it aside (and alerts);
// it reports whether this call did.
func (o *Orders) SetAside(ctx context.Context, seen oracle.Order, mode SetAsideMode) (bool, error) {
	values := map[string]types.AttributeValue{
		":ready": &types.AttributeValueMemberS{Value: string(oracle.StatusReady)},
		":seen":  &types.AttributeValueMemberS{Value: seen.Verdict},
	}
	var set []string
	switch mode {
	case SetAsideRegenerate, SetAsideGenerate:
		set = append(set, "#s = :paid")
		values[":paid"] = &types.AttributeValueMemberS{Value: string(oracle.StatusPaid)}
	case SetAsideHold:
		set = append(set, "#s = :held", "failure = :failure")
		values[":held"] = &types.AttributeValueMemberS{Value: string(oracle.StatusHeld)}
		values[":failure"] = &types.AttributeValueMemberS{Value: oracle.HoldVerdictCorrupt}
	}
	if mode == SetAsideRegenerate {
		set = append(set, "regen = :true", "regen_reason = :reason")
		values[":true"] = &types.AttributeValueMemberBOOL{Value: true}
		values[":reason"] = &types.AttributeValueMemberS{Value: oracle.RegenCorrupt}
		// An earlier regeneration kept the emailed verdict already.
		if seen.VerdictLabel != "" {
			set = append(set, "original_verdict = if_not_exists(original_verdict, :label)")
			values[":label"] = &types.AttributeValueMemberS{Value: string(seen.VerdictLabel)}
		}
		if seen.VerdictHash != "" {
			set = append(set, "original_verdict_hash = if_not_exists(original_verdict_hash, :hash)")
			values[":hash"] = &types.AttributeValueMemberS{Value: seen.VerdictHash}
		}
	}
	set = append(set, "set_aside_at = :now")
	cond := "#s = :ready AND attribute_not_exists(verdict)"
	if seen.Verdict != "" {
		set, cond = append(set, "set_aside_verdict = :seen"), "#s = :ready AND verdict = :seen"
	} else {
		delete(values, ":seen")
	}
	return o.transition(ctx, "set aside the verdict of", seen.SessionID,
		strings.Join(set, ", ")+" REMOVE verdict, verdict_hash, verdict_label, generated_at, divergence, gen_lease_until, gen_lease, parked_since, job_due_at",
		cond, values)
}
