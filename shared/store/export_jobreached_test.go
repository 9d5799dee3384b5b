package store

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// JobLease is the order's job lease as the table keeps it, for the tests
// that check a claim's lease was freed.
func JobLease(t testing.TB, o *Orders, sessionID string) string {
	t.Helper()
	out, err := o.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(o.table), Key: key(sessionID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	row, err := decodeStored(out.Item)
	if err != nil {
		t.Fatal(err)
	}
	return row.JobLease
}
