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
)

// The support inbox's records in the Ledger. A message is known by its key
// (a keyed hash of its Message-ID), a sender by the keyed hash of their
// address: no address, subject or body is ever written here. Each record
// expires, which bounds the state the way the old 500-entry seen list did.

// ErrMessageSeen means the message was already processed (or recorded as
// seen when the inbox was first read).
var ErrMessageSeen = errors.New("this message was already processed")

// ErrMessageInFlight means another invocation is processing the message.
var ErrMessageInFlight = errors.New("this message is being processed by another invocation")

func messageKey(key string) string     { return "inbox#message#" + key }
func cooldownKey(sender string) string { return "inbox#cooldown#" + sender }
func replyKey(key string) string       { return "inbox#reply#" + key }
func sentKey(messageID string) string  { return "sent#" + messageID }
func seededKey(source string) string   { return "inbox#seeded#" + source }

// BeginMessage takes the right to process the message whose key is key, for
// lease: once per message, however often it is delivered or listed (a
// redelivered event, overlapping polls). It returns a token, ErrMessageSeen
// once the message is done, or ErrMessageInFlight while another holder's
// lease lives. The record is kept for ttl.
func (l *Ledger) BeginMessage(ctx context.Context, key string, lease, ttl time.Duration) (string, error) {
	now := l.now().UTC()
	r, err := condwrite.UpdateLease(ctx, l.db, &dynamodb.UpdateItemInput{
		TableName:           aws.String(l.table),
		Key:                 map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: messageKey(key)}},
		UpdateExpression:    aws.String("SET lease_until = :until, lease = :wid, expires_at = :exp, created_at = if_not_exists(created_at, :now)"),
		ConditionExpression: aws.String("attribute_not_exists(done_at) AND (attribute_not_exists(lease_until) OR lease_until < :nowms)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":until": number(now.Add(lease).UnixMilli()),
			":nowms": number(now.UnixMilli()),
			":exp":   number(now.Add(ttl).Unix()),
			":now":   &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
		},
	}, "lease")
	if err != nil {
		return "", fmt.Errorf("begin inbox message: %w", err)
	}
	if r.Applied {
		return r.Token, nil
	}
	if _, done := r.Current["done_at"]; done {
		return "", ErrMessageSeen
	}
	return "", ErrMessageInFlight
}

// MessageDone closes the message's processing, by the holder of its lease
// only, with what was done (an outcome word such as "acknowledged" or the
// reason no reply was sent).
func (l *Ledger) MessageDone(ctx context.Context, key, token, outcome string) error {
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(l.table),
		Key:                 map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: messageKey(key)}},
		UpdateExpression:    aws.String("SET done_at = :now, outcome = :outcome REMOVE lease_until, lease"),
		ConditionExpression: aws.String("lease = :token"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":     &types.AttributeValueMemberS{Value: l.now().UTC().Format(time.RFC3339Nano)},
			":outcome": &types.AttributeValueMemberS{Value: outcome},
			":token":   &types.AttributeValueMemberS{Value: token},
		},
	})
	if condwrite.ConditionFailed(err) {
		return fmt.Errorf("close inbox message: %w", ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("close inbox message: %w", err)
	}
	return nil
}

// ReleaseMessage gives up the lease without closing the message, so that
// its next delivery processes it again.
func (l *Ledger) ReleaseMessage(ctx context.Context, key, token string) error {
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: messageKey(key)}},
		UpdateExpression:          aws.String("REMOVE lease_until, lease"),
		ConditionExpression:       aws.String("lease = :token"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":token": &types.AttributeValueMemberS{Value: token}},
	})
	if err != nil && !condwrite.ConditionFailed(err) {
		return fmt.Errorf("release inbox message: %w", err)
	}
	return nil
}

// MessageSeen reports whether the message whose key is key was processed
// (or seeded) and its record has not expired.
func (l *Ledger) MessageSeen(ctx context.Context, key string) (bool, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: messageKey(key)}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, fmt.Errorf("read inbox message: %w", err)
	}
	if _, done := out.Item["done_at"]; !done {
		return false, nil
	}
	return !expired(out.Item, l.now()), nil
}

// SeedMessage records the message as seen without processing it: the
// inbox's first read, which must not answer or announce what was already
// waiting there. A message already recorded is left as it is.
func (l *Ledger) SeedMessage(ctx context.Context, key string, ttl time.Duration) error {
	now := l.now().UTC()
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(l.table),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: messageKey(key)}},
		UpdateExpression: aws.String("SET done_at = if_not_exists(done_at, :now), outcome = if_not_exists(outcome, :seeded), " +
			"created_at = if_not_exists(created_at, :now), expires_at = :exp"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":    &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
			":seeded": &types.AttributeValueMemberS{Value: "seeded"},
			":exp":    number(now.Add(ttl).Unix()),
		},
	})
	if err != nil {
		return fmt.Errorf("seed inbox message: %w", err)
	}
	return nil
}

// Seeded reports whether the inbox of source was read once already.
func (l *Ledger) Seeded(ctx context.Context, source string) (bool, error) {
	return l.Seen(ctx, seededKey(source))
}

// MarkSeeded records, for good, that the inbox of source was read once;
// first is false when another run recorded it already (and announced it).
func (l *Ledger) MarkSeeded(ctx context.Context, source string) (first bool, err error) {
	first, err = l.putOnce(ctx, seededKey(source), map[string]types.AttributeValue{
		"created_at": &types.AttributeValueMemberS{Value: l.now().UTC().Format(time.RFC3339Nano)},
	}, 0)
	if err != nil {
		return false, fmt.Errorf("record the inbox's first read: %w", err)
	}
	return first, nil
}

// TakeCooldown starts the sender's cooldown for ttl on behalf of the
// message whose key is key: at most one autoresponse per sender in that
// time. It reports whether the message holds the cooldown: true when this
// call started it, or the same message had (a retried processing).
func (l *Ledger) TakeCooldown(ctx context.Context, sender, key string, ttl time.Duration) (bool, error) {
	now := l.now()
	r, err := condwrite.Put(ctx, l.db, &dynamodb.PutItemInput{
		TableName: aws.String(l.table),
		Item: map[string]types.AttributeValue{
			"pk":         &types.AttributeValueMemberS{Value: cooldownKey(sender)},
			"message":    &types.AttributeValueMemberS{Value: key},
			"created_at": &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339Nano)},
			"expires_at": number(now.Add(ttl).Unix()),
		},
		ConditionExpression: aws.String("attribute_not_exists(pk) OR expires_at <= :now OR message = :key"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": number(now.Unix()),
			":key": &types.AttributeValueMemberS{Value: key},
		},
	})
	if err != nil {
		return false, fmt.Errorf("take the sender's cooldown: %w", err)
	}
	return r.Applied, nil
}

// ReleaseCooldown ends the sender's cooldown if the message whose key is
// key holds it: its autoresponse could not be queued after all.
func (l *Ledger) ReleaseCooldown(ctx context.Context, sender, key string) error {
	_, err := l.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(l.table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: cooldownKey(sender)}},
		ConditionExpression:       aws.String("message = :key"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":key": &types.AttributeValueMemberS{Value: key}},
	})
	if err != nil && !condwrite.ConditionFailed(err) {
		return fmt.Errorf("release the sender's cooldown: %w", err)
	}
	return nil
}

// RecordSentMessage remembers, for ttl, that the email the transport
// accepted as messageID was the session's, so that a reply to it (naming
// it in In-Reply-To or References) finds its order.
func (l *Ledger) RecordSentMessage(ctx context.Context, messageID, sessionID string, ttl time.Duration) error {
	now := l.now()
	_, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(l.table),
		Item: map[string]types.AttributeValue{
			"pk":         &types.AttributeValueMemberS{Value: sentKey(messageID)},
			"session_id": &types.AttributeValueMemberS{Value: sessionID},
			"created_at": &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339Nano)},
			"expires_at": number(now.Add(ttl).Unix()),
		},
	})
	if err != nil {
		return fmt.Errorf("record the sent message: %w", err)
	}
	return nil
}

// SentMessage returns the session whose email the transport accepted as
// messageID, if that is remembered.
func (l *Ledger) SentMessage(ctx context.Context, messageID string) (string, bool, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(l.table),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: sentKey(messageID)}},
	})
	if err != nil {
		return "", false, fmt.Errorf("read the sent message: %w", err)
	}
	s, ok := out.Item["session_id"].(*types.AttributeValueMemberS)
	if !ok || expired(out.Item, l.now()) {
		return "", false, nil
	}
	return s.Value, true, nil
}

// The autoresponse to the message whose key is key is delivered like any
// email (ClaimMail and its kin), on a Ledger record kept for ttl.

// ClaimReply is ClaimMail for the autoresponse to the message.
func (l *Ledger) ClaimReply(ctx context.Context, key string, attempt int, lease, ttl time.Duration) (string, error) {
	return l.reply(key, ttl).claim(ctx, attempt, lease)
}

// ReplySent is MailSent for the autoresponse to the message.
func (l *Ledger) ReplySent(ctx context.Context, key, token, result string) error {
	return l.reply(key, 0).sent(ctx, token, result, "")
}

// ReplyFailed is MailFailed for the autoresponse to the message.
func (l *Ledger) ReplyFailed(ctx context.Context, key, token string, try Try, nextAt time.Time) ([]Try, error) {
	return l.reply(key, 0).failed(ctx, token, try, nextAt)
}

// ReleaseReply is ReleaseMail for the autoresponse to the message.
func (l *Ledger) ReleaseReply(ctx context.Context, key, token string) error {
	return l.reply(key, 0).release(ctx, token)
}

func (l *Ledger) reply(key string, ttl time.Duration) delivery {
	return delivery{db: l.db, table: l.table, key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: replyKey(key)}},
		a: mailAttrs{"sent_at", "lease_until", "lease", "message_id", "state", "next_attempt", "next_at", "tries"}, ttl: ttl,
		name: "autoresponse", now: l.now}
}

// expired reports whether item's expires_at has passed (TTL deletes
// lazily); an item without one does not expire.
func expired(item map[string]types.AttributeValue, now time.Time) bool {
	exp, ok := item["expires_at"].(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	var sec int64
	if _, err := fmt.Sscan(exp.Value, &sec); err != nil {
		return false
	}
	return sec <= now.Unix()
}
