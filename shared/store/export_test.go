package store

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// GenLease is the order's generation lease as the table keeps it, for the
// tests that check a lease was taken or released.
func GenLease(t testing.TB, o *Orders, sessionID string) string {
	t.Helper()
	return storedItem(t, o, sessionID).GenLease
}

// JobLease is the order's job lease as the table keeps it, for the tests
// that check a claim's lease was freed.
func JobLease(t testing.TB, o *Orders, sessionID string) string {
	t.Helper()
	return storedItem(t, o, sessionID).JobLease
}

// storedItem is the order's item as the table keeps it.
func storedItem(t testing.TB, o *Orders, sessionID string) stored {
	t.Helper()
	out, err := o.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(o.table), Key: key(sessionID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	row, err := decodeStored(out.Item)
	if err != nil {
		t.Fatal(err)
	}
	return row
}
