package chat

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/mailaddr"
)

// The free trial belongs to a person, not to an address: its count is kept
// on an item of its own, named by the keyed hash of the trial identity
// (mailaddr.TrialIdentity: no +tag, no Gmail dots), which every address of
// one person shares and no erasure removes. It holds no address.

// ErrTrialsPaused: the exchange would start a trial, and the trials started
// today service-wide have reached their cap (Policy.NewTrialsPerDay).
var ErrTrialsPaused = errors.New("chat: no new trials today")

const (
	skTrial = "trial"
	// legacyTrialUsed is where an account counted its trial before trials
	// had an item of their own: a trial's item starts from it.
	legacyTrialUsed = "trial_used"
)

// trialPK names the trial of the trial identity id.
func (s *Store) trialPK(id string) string { return "trial#" + s.hasher.Hash("trial "+id) }

// trialOf is the trial of an account's address ("" without one).
func (s *Store) trialOf(email string) string {
	if email == "" {
		return ""
	}
	return s.trialPK(mailaddr.TrialIdentity(mailaddr.Folded(email)))
}

// readTrial completes u with its trial's item, when it has one.
func (s *Store) readTrial(ctx context.Context, u *Usage) error {
	if u.Trial == "" {
		return nil
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            key(u.Trial, skTrial),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return fmt.Errorf("read trial: %w", err)
	}
	if out.Item == nil {
		return nil
	}
	u.TrialStarted = true
	u.TrialUsed = intOf(out.Item, "used")
	u.FreeLeft = max(TrialExchanges-u.TrialUsed, 0) + max(u.Granted, 0)
	return nil
}

// takeTrial spends one exchange of u's trial: one conditional update of
// the trial's item, which it makes when the trial starts, once today's
// new trials (newPerDay, service-wide) allow one more. It refuses with
// ErrTrialUsed or ErrTrialsPaused.
func (s *Store) takeTrial(ctx context.Context, u Usage, newPerDay int, sp Spent) (Spent, error) {
	sp.Plan, sp.Trial = PlanTrial, u.Trial
	cond := "attribute_exists(pk) AND used < :max AND NOT contains(pending, :tok)"
	if !u.TrialStarted {
		// A trial starts: counted against today's, however many
		// concurrent first messages race to make it.
		if newPerDay < 1 {
			return Spent{}, ErrTrialsPaused
		}
		ok, err := s.Allow(ctx, newTrialsName, Window{Limit: newPerDay, Per: 24 * time.Hour})
		if err != nil {
			return Spent{}, err
		}
		if !ok {
			return Spent{}, ErrTrialsPaused
		}
		cond = "attribute_not_exists(pk) OR (" + cond + ")"
	}
	r, err := condwrite.Update(ctx, s.db, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(u.Trial, skTrial),
		UpdateExpression:    aws.String("SET used = if_not_exists(used, :legacy) + :one, created_at = if_not_exists(created_at, :now), write_id = :wid ADD pending :toks"),
		ConditionExpression: aws.String(cond),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":legacy": num(min(u.TrialUsed, TrialExchanges-1)), ":one": num(1), ":max": num(TrialExchanges),
			":now":  str(s.now().UTC().Format(time.RFC3339Nano)),
			":tok":  str(sp.Token),
			":toks": &types.AttributeValueMemberSS{Value: []string{sp.Token}},
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	switch {
	case err != nil:
		return Spent{}, fmt.Errorf("take a trial exchange: %w", err)
	case r.Applied, holds(r.Current, "pending", sp.Token):
		sp.Left = max(TrialExchanges-intOf(r.Current, "used"), 0)
		return sp, nil
	default:
		return Spent{}, ErrTrialUsed
	}
}

// newTrialsName is the service-wide count of trials started, per UTC day.
const newTrialsName = "new-trials"
