package store

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/oracle"
)

// ChatMail names one email owed to a chat account: its kind, the account
// (the address's keyed hash) and the nonce of what it answers (a sign-in
// request, a failed invoice). Its delivery is a Ledger record of its own,
// claimed, retried and closed like any email, so each is sent at most once.
type ChatMail struct {
	Kind    oracle.MailKind
	Account string
	Nonce   string
}

func chatMailKey(m ChatMail) string {
	return "chatmail#" + string(m.Kind) + "#" + m.Account + "#" + m.Nonce
}

// ClaimChatMail is ClaimMail for m, on a record its first claim creates
// and keeps for ttl; created is when that was, the same on every attempt.
func (l *Ledger) ClaimChatMail(ctx context.Context, m ChatMail, attempt int, lease, ttl time.Duration) (token string, created time.Time, err error) {
	return l.chatMail(m, ttl).claimSince(ctx, attempt, lease)
}

// ChatMailSent is MailSent for m.
func (l *Ledger) ChatMailSent(ctx context.Context, m ChatMail, token, result string) error {
	return l.chatMail(m, 0).sent(ctx, token, result, "")
}

// ChatMailFailed is MailFailed for m.
func (l *Ledger) ChatMailFailed(ctx context.Context, m ChatMail, token string, try Try, nextAt time.Time) ([]Try, error) {
	return l.chatMail(m, 0).failed(ctx, token, try, nextAt)
}

// ReleaseChatMail is ReleaseMail for m.
func (l *Ledger) ReleaseChatMail(ctx context.Context, m ChatMail, token string) error {
	return l.chatMail(m, 0).release(ctx, token)
}

func (l *Ledger) chatMail(m ChatMail, ttl time.Duration) delivery {
	return delivery{db: l.db, table: l.table, key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: chatMailKey(m)}},
		a: mailAttrs{"sent_at", "lease_until", "lease", "message_id", "state", "next_attempt", "next_at", "tries"}, ttl: ttl,
		name: "the " + string(m.Kind) + " email " + m.Nonce, now: l.now}
}
