package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/awsenv"
)

// VerdictMessageIndex is the Orders table's index by the message id of the
// order's verdict email (keys only), which MailSent writes when the email
// leaves: a reply to it finds its order without a record of its own.
const VerdictMessageIndex = "by_verdict_message"

// verdictMessageAttr is the attribute VerdictMessageIndex is keyed by.
const verdictMessageAttr = "verdict_message_id"

// SentMessages finds the session an email was sent for by its message id:
// a verdict email's through the Orders table's index, any other in the
// Ledger (RecordSentMessage). Each is kept as long as its order.
type SentMessages struct {
	db     *awsenv.Queries
	table  string
	ledger *Ledger
}

// NewSentMessages reads table's index through db, then ledger.
func NewSentMessages(db *awsenv.Queries, table string, ledger *Ledger) *SentMessages {
	return &SentMessages{db: db, table: table, ledger: ledger}
}

// SentMessage returns the session whose email the transport accepted as
// messageID, if that is known. The index is eventually consistent: a
// reply comes long after the send.
func (s *SentMessages) SentMessage(ctx context.Context, messageID string) (string, bool, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(VerdictMessageIndex),
		KeyConditionExpression:    aws.String("#m = :m"),
		ExpressionAttributeNames:  map[string]string{"#m": verdictMessageAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":m": &types.AttributeValueMemberS{Value: messageID}},
		Limit:                     aws.Int32(2),
	})
	if err != nil {
		return "", false, fmt.Errorf("find the sent message: %w", err)
	}
	// A transport's ids are unique; two orders under one would name
	// neither for sure.
	if len(out.Items) == 1 {
		if id, ok := out.Items[0]["session_id"].(*types.AttributeValueMemberS); ok {
			return id.Value, true, nil
		}
	}
	return s.ledger.SentMessage(ctx, messageID)
}
