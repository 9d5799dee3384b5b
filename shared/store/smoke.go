package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/oracle"
)

// DeleteSmoke removes the smoke test's order, and only such an order: the
// delete is conditional on the smoke flag (which only a test-mode session
// can set), so no customer's order can ever be deleted through it. deleted
// is false when there was no order to delete.
func (o *Orders) DeleteSmoke(ctx context.Context, sessionID string) (bool, error) {
	out, err := o.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(o.table),
		Key:                       key(sessionID),
		ConditionExpression:       aws.String("attribute_not_exists(session_id) OR (smoke = :yes AND livemode = :no)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":yes": &types.AttributeValueMemberBOOL{Value: true}, ":no": &types.AttributeValueMemberBOOL{Value: false}},
		ReturnValues:              types.ReturnValueAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, fmt.Errorf("delete order %s: it is not a smoke order", oracle.ShortID(sessionID))
	}
	if err != nil {
		return false, fmt.Errorf("delete order %s: %w", oracle.ShortID(sessionID), err)
	}
	return len(out.Attributes) > 0, nil
}
