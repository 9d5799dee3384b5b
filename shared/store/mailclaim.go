package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/oracle"
)

// ErrMailNotOwed means the order is not in the state its email of that
// kind tells of (MailOwed): nothing was claimed.
var ErrMailNotOwed = errors.New("the order is not owed this mail now")

// ErrNoOrder means there is no order for the session.
var ErrNoOrder = errors.New("no such order")

// owedWhen is, for each mail kind, the state an order must be in to be owed
// that email: its status one of statuses, a verdict stored when verdict is
// set, its divergence one of divergences when those are listed. A kind not
// listed is owed in any state (it is composed, and an unknown one fails
// loudly). The mailer decides from it (MailOwed), and ClaimOrderMail makes
// it the claim's condition, from the same lists.
var owedWhen = map[oracle.MailKind]struct {
	statuses    []oracle.Status
	verdict     bool
	divergences []string
}{
	oracle.MailVerdict:    {statuses: []oracle.Status{oracle.StatusReady}, verdict: true},
	oracle.MailSilentDrop: {statuses: []oracle.Status{oracle.StatusDropped}},
	oracle.MailFailed:     {statuses: []oracle.Status{oracle.StatusFailed}},
	oracle.MailReview:     {statuses: []oracle.Status{oracle.StatusHeld, oracle.StatusQuarantined}},
	oracle.MailDivergence: {statuses: []oracle.Status{oracle.StatusReady}, divergences: NotifiedDivergences},
	oracle.MailRefund:     {statuses: []oracle.Status{oracle.StatusRefunded}},
}

// NotifiedDivergences are the divergence levels the customer is told of
// (oracle.NotifyDivergence), as a list a condition can name.
var NotifiedDivergences = []string{oracle.DivergenceSignificant, oracle.DivergenceUnknown}

// MailOwed reports whether the order o is owed its email of kind now:
// whether it is in the state that email tells of.
func MailOwed(kind oracle.MailKind, o oracle.Order) bool {
	w, ok := owedWhen[kind]
	if !ok {
		return true
	}
	return slices.Contains(w.statuses, o.Status) && (!w.verdict || o.Verdict != "") &&
		(w.divergences == nil || slices.Contains(w.divergences, o.Divergence))
}

// owedCondition is MailOwed as a condition on the order's item, with the
// values it names ("" when every state is owed).
func owedCondition(kind oracle.MailKind) (string, map[string]types.AttributeValue) {
	w, ok := owedWhen[kind]
	if !ok {
		return "", nil
	}
	values := map[string]types.AttributeValue{}
	in := func(prefix string, vs []string) string {
		names := make([]string, len(vs))
		for i, v := range vs {
			names[i] = prefix + strconv.Itoa(i)
			values[names[i]] = &types.AttributeValueMemberS{Value: v}
		}
		return "(" + strings.Join(names, ", ") + ")"
	}
	statuses := make([]string, len(w.statuses))
	for i, s := range w.statuses {
		statuses[i] = string(s)
	}
	cond := "#status IN " + in(":owed", statuses)
	if w.verdict {
		cond += " AND attribute_exists(verdict) AND verdict <> :empty"
		values[":empty"] = &types.AttributeValueMemberS{Value: ""}
	}
	if w.divergences != nil {
		cond += " AND divergence IN " + in(":div", w.divergences)
	}
	return cond, values
}

// MailClaim is what ClaimOrderMail did, and the order it read doing it.
type MailClaim struct {
	// Token is the claim, when it was granted.
	Token string
	// Order is the order as the claim left it (granted), or as it found it
	// (refused; the zero Order when there is none).
	Order oracle.Order
	// Result is a closed delivery's message id, or why nothing left.
	Result string
	// Next is the lowest attempt of the email still to be made.
	Next int
}

// ClaimOrderMail is ClaimMail for an email the order is owed now
// (MailOwed), and reads the order in the same request: a granted claim
// returns the order as it left it (ALL_NEW), a refused one the order that
// refused it (ALL_OLD), with the reason: ErrNoOrder, ErrMailNotOwed (the
// order's state comes first, as it did when the order was read before
// its claim), ErrAlreadySent, ErrAttemptSpent or ErrMailInFlight.
func (o *Orders) ClaimOrderMail(ctx context.Context, sessionID string, kind oracle.MailKind, attempt int, lease time.Duration) (MailClaim, error) {
	d := o.delivery(sessionID, kind)
	cond, values := owedCondition(kind)
	names := map[string]string{}
	if cond != "" {
		names["#status"] = "status"
	}
	r, err := d.conditionalClaim(ctx, attempt, lease, true, cond, names, values)
	if err != nil {
		return MailClaim{}, err
	}
	if r.Current == nil {
		return MailClaim{}, fmt.Errorf("claim %s: %w", d.name, ErrNoOrder)
	}
	c := MailClaim{Next: d.next(r.Current)}
	if c.Order, err = decode(r.Current); err != nil {
		return MailClaim{}, fmt.Errorf("claim %s: %w", d.name, err)
	}
	if v, ok := r.Current[d.a.messageID].(*types.AttributeValueMemberS); ok {
		c.Result = v.Value
	}
	switch {
	case r.Applied:
		c.Token = r.Token
		return c, nil
	case !MailOwed(kind, c.Order):
		return c, ErrMailNotOwed
	}
	return c, d.refusal(r.Current, attempt)
}
