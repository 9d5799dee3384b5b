package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/oracle"
)

// ErrAlreadySent means the mail of that kind was sent for the session.
var ErrAlreadySent = errors.New("this mail was already sent")

// ErrMailInFlight means another attempt is sending that mail right now.
var ErrMailInFlight = errors.New("this mail is being sent by another attempt")

// mailAttrs are the order's delivery attributes for one mail kind.
func mailAttrs(kind oracle.MailKind) (sent, leaseUntil, lease, messageID string) {
	p := "mail_" + string(kind) + "_"
	return p + "sent_at", p + "lease_until", p + "lease", p + "message_id"
}

// ClaimMail takes the right to send the mail of kind for the session: at
// most one send per session and kind. It returns a token, or
// ErrAlreadySent, or ErrMailInFlight while another attempt's lease lives.
func (o *Orders) ClaimMail(ctx context.Context, sessionID string, kind oracle.MailKind, lease time.Duration) (string, error) {
	sent, until, tok, _ := mailAttrs(kind)
	now := o.now().UTC()
	// The token is the claim's lease, so a retried request whose first
	// attempt took the claim still gets it.
	r, err := condwrite.UpdateLease(ctx, o.db, &dynamodb.UpdateItemInput{
		TableName:        aws.String(o.table),
		Key:              key(sessionID),
		UpdateExpression: aws.String("SET #until = :until, #tok = :wid"),
		ConditionExpression: aws.String("attribute_exists(session_id) AND attribute_not_exists(#sent) AND " +
			"(attribute_not_exists(#until) OR #until < :nowms)"),
		ExpressionAttributeNames: map[string]string{"#sent": sent, "#until": until, "#tok": tok},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":until": &types.AttributeValueMemberN{Value: fmt.Sprint(now.Add(lease).UnixMilli())},
			":nowms": &types.AttributeValueMemberN{Value: fmt.Sprint(now.UnixMilli())},
		},
	}, tok)
	if err != nil {
		return "", fmt.Errorf("claim %s mail for %s: %w", kind, oracle.ShortID(sessionID), err)
	}
	if r.Applied {
		return r.Token, nil
	}
	if _, done := r.Current[sent]; done {
		return "", ErrAlreadySent
	}
	if r.Current == nil {
		return "", fmt.Errorf("claim %s mail for %s: no such order", kind, oracle.ShortID(sessionID))
	}
	return "", ErrMailInFlight
}

// MailSent records the send, by the holder of the claim only.
func (o *Orders) MailSent(ctx context.Context, sessionID string, kind oracle.MailKind, token, messageID string) error {
	sent, until, tok, msg := mailAttrs(kind)
	now := o.now().UTC()
	_, err := o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(o.table),
		Key:                      key(sessionID),
		UpdateExpression:         aws.String("SET #sent = :now, #msg = :msg, updated_at = :now REMOVE #until, #tok"),
		ConditionExpression:      aws.String("#tok = :token"),
		ExpressionAttributeNames: map[string]string{"#sent": sent, "#until": until, "#tok": tok, "#msg": msg},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":   &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
			":msg":   &types.AttributeValueMemberS{Value: messageID},
			":token": &types.AttributeValueMemberS{Value: token},
		},
	})
	if condwrite.ConditionFailed(err) {
		return fmt.Errorf("record %s mail for %s: %w", kind, oracle.ShortID(sessionID), ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("record %s mail for %s: %w", kind, oracle.ShortID(sessionID), err)
	}
	return nil
}

// ReleaseMail gives up a claim after a failed send, so the retry may send.
func (o *Orders) ReleaseMail(ctx context.Context, sessionID string, kind oracle.MailKind, token string) error {
	_, until, tok, _ := mailAttrs(kind)
	_, err := o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(o.table),
		Key:                      key(sessionID),
		UpdateExpression:         aws.String("REMOVE #until, #tok"),
		ConditionExpression:      aws.String("#tok = :token"),
		ExpressionAttributeNames: map[string]string{"#until": until, "#tok": tok},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":token": &types.AttributeValueMemberS{Value: token},
		},
	})
	if err != nil && !condwrite.ConditionFailed(err) {
		return fmt.Errorf("release %s mail for %s: %w", kind, oracle.ShortID(sessionID), err)
	}
	return nil
}
