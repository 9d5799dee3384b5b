package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/awsenv"
)

// DeadLetters lists the Ledger's dead letters for the operator: the
// emails given up on and the jobs that reached a dead-letter queue. The
// Ledger has no index by kind of item, so this reads it whole: a small
// table whose items expire, read on demand by the ops function alone.
type DeadLetters struct {
	db    *awsenv.Queries
	table string
}

// NewDeadLetters reads the Ledger table through db.
func NewDeadLetters(db *awsenv.Queries, table string) *DeadLetters {
	return &DeadLetters{db: db, table: table}
}

// MailDeadLetters returns every email given up on.
func (d *DeadLetters) MailDeadLetters(ctx context.Context) ([]MailDeadLetter, error) {
	var out []MailDeadLetter
	err := d.scan(ctx, "maildead#", func(item map[string]types.AttributeValue) error {
		var m MailDeadLetter
		if err := attributevalue.UnmarshalMap(item, &m); err != nil {
			return fmt.Errorf("decode mail dead letter: %w", err)
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// DeadJob is a job that reached a dead-letter queue, with its Ledger key.
type DeadJob struct {
	Key       string    `dynamodbav:"pk"`
	Queue     string    `dynamodbav:"queue"`
	MessageID string    `dynamodbav:"message_id"`
	SessionID string    `dynamodbav:"session_id"`
	Job       string    `dynamodbav:"job"`
	DeadAt    time.Time `dynamodbav:"dead_at"`
	// BodySHA256 is set instead of Job for a body that was no job.
	BodySHA256 string `dynamodbav:"body_sha256"`
	// Inbox names the stored messages of a failed inbox invocation.
	Inbox string `dynamodbav:"inbox"`
}

// DeadJobs returns the dead letters of the dead-letter queue named queue.
func (d *DeadLetters) DeadJobs(ctx context.Context, queue string) ([]DeadJob, error) {
	var out []DeadJob
	err := d.scan(ctx, DeadLetterKey(queue, ""), func(item map[string]types.AttributeValue) error {
		var j DeadJob
		if err := attributevalue.UnmarshalMap(item, &j); err != nil {
			return fmt.Errorf("decode dead letter: %w", err)
		}
		out = append(out, j)
		return nil
	})
	return out, err
}

func (d *DeadLetters) scan(ctx context.Context, prefix string, each func(map[string]types.AttributeValue) error) error {
	p := dynamodb.NewScanPaginator(d.db, &dynamodb.ScanInput{
		TableName:                 aws.String(d.table),
		FilterExpression:          aws.String("begins_with(pk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: prefix}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list the Ledger's %s records: %w", prefix, err)
		}
		for _, item := range page.Items {
			if err := each(item); err != nil {
				return err
			}
		}
	}
	return nil
}
