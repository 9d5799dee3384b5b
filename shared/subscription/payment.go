package subscription

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/ascii"
)

// Payment is one paid invoice of a chat subscription, kept under its
// payment intent (pay#<payment intent>, payment): a refund, a dispute or a
// fraud warning names only the payment intent (or its charge), and this is
// how the webhook knows it for the chat's rather than an order's.
type Payment struct {
	PaymentIntent string
	Charge        string
	Invoice       string
	Subscription  string
	Account       string
	Amount        int64
	Currency      string
}

// PaymentRetention is how long a payment is kept: longer than the 120 days
// in which a cardholder may dispute it.
const PaymentRetention = 180 * 24 * time.Hour

const skPayment = "payment"

// validIntent reports a payment intent's id: pi_ and 1 to 250 of intentChars.
func validIntent(pi string) bool {
	id, ok := strings.CutPrefix(pi, "pi_")
	return ok && intentChars.Run(id, 1, 250)
}

var intentChars = ascii.NewSet("A-Za-z0-9_")

// RecordPayment keeps p, from paidAt for PaymentRetention. Recording it
// again (the invoice's event delivered twice) writes the same item.
func (s *Store) RecordPayment(ctx context.Context, p Payment, paidAt time.Time) error {
	if !validIntent(p.PaymentIntent) || !ValidID(p.Subscription) || !ValidAccount(p.Account) {
		return fmt.Errorf("record payment: invalid payment intent, subscription or account")
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			"pk": str("pay#" + p.PaymentIntent), "sk": str(skPayment),
			"charge": str(p.Charge), "invoice": str(p.Invoice), "subscription": str(p.Subscription),
			"account": str(p.Account), "amount": num(p.Amount), "currency": str(p.Currency),
			"expires_at": num(paidAt.Add(PaymentRetention).Unix()),
		},
	})
	if err != nil {
		return fmt.Errorf("record payment %s: %w", p.PaymentIntent, err)
	}
	return nil
}

// PaymentOf is the chat payment of payment intent pi; found is false when
// no chat invoice was paid by it.
func (s *Store) PaymentOf(ctx context.Context, pi string) (p Payment, found bool, err error) {
	if !validIntent(pi) {
		return Payment{}, false, nil
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            key("pay#"+pi, skPayment),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Payment{}, false, fmt.Errorf("read payment %s: %w", pi, err)
	}
	if out.Item == nil {
		return Payment{}, false, nil
	}
	p = Payment{PaymentIntent: pi, Charge: stringOf(out.Item, "charge"), Invoice: stringOf(out.Item, "invoice"),
		Subscription: stringOf(out.Item, "subscription"), Account: stringOf(out.Item, "account"), Currency: stringOf(out.Item, "currency")}
	if v, ok := out.Item["amount"].(*types.AttributeValueMemberN); ok {
		p.Amount, _ = strconv.ParseInt(v.Value, 10, 64)
	}
	return p, true, nil
}
