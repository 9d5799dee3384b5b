package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/oracle"
)

// ErrAlreadySent means the mail of that kind was sent for the session (or
// its delivery was otherwise closed: refused, dead-lettered, quarantined).
var ErrAlreadySent = errors.New("this mail was already sent")

// ErrMailInFlight means another attempt is sending that mail right now.
var ErrMailInFlight = errors.New("this mail is being sent by another attempt")

// ErrAttemptSpent means the job's attempt was already made and failed: a
// duplicate of a job the retry schedule has moved past.
var ErrAttemptSpent = errors.New("this attempt of the mail was already made")

// ErrMailNotRecorded means the transport's feedback came before the mailer
// recorded the send it is about: the delivery is still claimed, its
// message id not yet written. The feedback is to be applied again later.
var ErrMailNotRecorded = errors.New("the send this feedback is about is not recorded yet")

// mailAttrs names the order's delivery attributes for one mail kind:
// sent_at marks the delivery closed (whatever its outcome), lease_until and
// lease the claim of one attempt, message_id what the transport answered
// (or why nothing left), state how far the email got (oracle.MailState),
// next_attempt the lowest attempt number still to be made, next_at when it
// is due, and tries the failed attempts.
type mailAttrs struct {
	sent, leaseUntil, lease, messageID, state, nextAttempt, nextAt, tries string
}

func attrsOf(kind oracle.MailKind) mailAttrs {
	p := "mail_" + string(kind) + "_"
	return mailAttrs{p + "sent_at", p + "lease_until", p + "lease", p + "message_id", p + "state", p + "next_attempt", p + "next_at", p + "tries"}
}

// Try is one failed attempt of an email: when, its number (0 is the first)
// and its failure class and code, never the address or the message.
type Try struct {
	Attempt int       `dynamodbav:"attempt" json:"attempt"`
	At      time.Time `dynamodbav:"at" json:"at"`
	Class   string    `dynamodbav:"class" json:"class"`
	Code    string    `dynamodbav:"code,omitempty" json:"code,omitempty"`
}

// ClaimMail takes the right to make attempt (0 for the first) of the mail of
// kind for the session: at most one attempt in flight per session and kind,
// none after the delivery is closed, and none of an attempt already made
// and recorded as failed. It returns a token, or ErrAlreadySent,
// ErrAttemptSpent, or ErrMailInFlight while another attempt's lease lives.
func (o *Orders) ClaimMail(ctx context.Context, sessionID string, kind oracle.MailKind, attempt int, lease time.Duration) (string, error) {
	return o.delivery(sessionID, kind).claim(ctx, attempt, lease)
}

// MailSent closes the delivery, by the holder of the claim only: result is
// the transport's message id, or why nothing left; state is how far the
// email got ("" when it was never sent: no address, quarantined).
func (o *Orders) MailSent(ctx context.Context, sessionID string, kind oracle.MailKind, token, result string, state oracle.MailState) error {
	return o.delivery(sessionID, kind).sent(ctx, token, result, state)
}

// MailFailed records a failed attempt, by the holder of the claim only,
// and gives the claim up. With nextAt set, the schedule goes on: no claim
// of this attempt or an earlier one is granted again, and the next attempt
// is due at nextAt. With nextAt zero, the attempt was the last one (or the
// failure is permanent): the delivery is closed as undeliverable. It
// returns every failed attempt recorded so far, this one included.
func (o *Orders) MailFailed(ctx context.Context, sessionID string, kind oracle.MailKind, token string, try Try, nextAt time.Time) ([]Try, error) {
	return o.delivery(sessionID, kind).failed(ctx, token, try, nextAt)
}

// ReleaseMail gives up a claim without spending its attempt (the account
// could not send, or the send was never tried), so the same attempt may be
// made again.
func (o *Orders) ReleaseMail(ctx context.Context, sessionID string, kind oracle.MailKind, token string) error {
	return o.delivery(sessionID, kind).release(ctx, token)
}

// delivery is the order's delivery of the mail of kind.
func (o *Orders) delivery(sessionID string, kind oracle.MailKind) delivery {
	d := delivery{db: o.db, table: o.table, key: key(sessionID), mustExist: "session_id", a: attrsOf(kind),
		name: fmt.Sprintf("%s mail for %s", kind, oracle.ShortID(sessionID)), now: o.now}
	if kind == oracle.MailVerdict {
		d.indexed = verdictMessageAttr
	}
	return d
}

// mailMoves lists the states a feedback event may move an email from: a
// later event never undoes a worse one (a Delivery arriving after the
// Complaint leaves it complained).
var mailMoves = map[oracle.MailState][]oracle.MailState{
	oracle.MailDelivered:  {oracle.MailSent},
	oracle.MailBounced:    {oracle.MailSent, oracle.MailDelivered},
	oracle.MailComplained: {oracle.MailSent, oracle.MailDelivered},
	// SES rejected the message after accepting it (a virus), or could not
	// render it: it never left.
	oracle.MailUndeliverable: {oracle.MailSent},
}

// MailFeedback moves the email of kind, sent as messageID, to state, as
// the transport's feedback tells. It reports whether the state changed:
// false when the event is for another message (a stale or forged id), is a
// repeat, or would move the state backwards. While the delivery is still
// claimed and nothing recorded (the transport's event came faster than the
// mailer's record of the send), it returns ErrMailNotRecorded.
func (o *Orders) MailFeedback(ctx context.Context, sessionID string, kind oracle.MailKind, messageID string, state oracle.MailState) (bool, error) {
	from, ok := mailMoves[state]
	if !ok {
		return false, fmt.Errorf("feedback %s for %s mail: not a state feedback sets", state, kind)
	}
	a := attrsOf(kind)
	values := map[string]types.AttributeValue{
		":id":    &types.AttributeValueMemberS{Value: messageID},
		":state": &types.AttributeValueMemberS{Value: string(state)},
		":now":   &types.AttributeValueMemberS{Value: o.now().UTC().Format(time.RFC3339Nano)},
	}
	cond := "#msg = :id AND #state IN ("
	for i, s := range from {
		p := ":from" + strconv.Itoa(i)
		values[p] = &types.AttributeValueMemberS{Value: string(s)}
		if i > 0 {
			cond += ", "
		}
		cond += p
	}
	_, err := o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(o.table),
		Key:                                 key(sessionID),
		UpdateExpression:                    aws.String("SET #state = :state, updated_at = :now"),
		ConditionExpression:                 aws.String(cond + ")"),
		ExpressionAttributeNames:            map[string]string{"#msg": a.messageID, "#state": a.state},
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if item, failed := condwrite.Failed(err); failed {
		if sendUnrecorded(item, a, o.now()) {
			return false, ErrMailNotRecorded
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("feedback %s for %s mail of %s: %w", state, kind, oracle.ShortID(sessionID), err)
	}
	return true, nil
}

// sendUnrecorded reports whether item's delivery is claimed by a live
// attempt and not closed: the send may have happened, its record not yet
// written. A lapsed claim's attempt is over (a crash): its message, if it
// left, is not the one the delivery will record.
func sendUnrecorded(item map[string]types.AttributeValue, a mailAttrs, now time.Time) bool {
	if _, closed := item[a.sent]; closed {
		return false
	}
	until, ok := item[a.leaseUntil].(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	ms, err := strconv.ParseInt(until.Value, 10, 64)
	return err == nil && ms > now.UnixMilli()
}

// mailStates reads each kind's state from an order item.
func mailStates(item map[string]types.AttributeValue) map[oracle.MailKind]oracle.MailState {
	var out map[oracle.MailKind]oracle.MailState
	for _, kind := range oracle.MailKinds() {
		v, ok := item[attrsOf(kind).state].(*types.AttributeValueMemberS)
		if !ok {
			continue
		}
		if out == nil {
			out = map[oracle.MailKind]oracle.MailState{}
		}
		out[kind] = oracle.MailState(v.Value)
	}
	return out
}

func number(n int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
