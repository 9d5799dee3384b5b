package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/oracle"
)

// StatusIndex is the Orders table's index by state (partition key status,
// sort key expires_at), which the health job reads instead of scanning the
// table: the states it watches hold few orders (they are transient, or wait
// for the operator), and READY orders are read only within a window of
// their expiry, which follows their generation.
const StatusIndex = "by_status"

// Indexed is what the status index keeps of an order: enough for the
// health job to tell whether it needs a closer look.
type Indexed struct {
	SessionID      string        `dynamodbav:"session_id"`
	Status         oracle.Status `dynamodbav:"status"`
	ExpiresAt      int64         `dynamodbav:"expires_at"`
	UpdatedAt      time.Time     `dynamodbav:"updated_at"`
	SessionCreated time.Time     `dynamodbav:"session_created"`
	JobDueAt       *time.Time    `dynamodbav:"job_due_at,omitempty"`
	GeneratedAt    *time.Time    `dynamodbav:"generated_at,omitempty"`
	QuarantinedAt  *time.Time    `dynamodbav:"quarantined_at,omitempty"`
	Regen          bool          `dynamodbav:"regen,omitempty"`
	// VerdictMailClosed is set once the verdict email's delivery is closed
	// (sent, or given up for good).
	VerdictMailClosed bool `dynamodbav:"-"`
}

// IndexedAttributes are the attributes the status index projects beyond
// its keys; template.yaml names the same list (a test keeps them equal).
func IndexedAttributes() []string {
	return []string{"updated_at", "session_created", "job_due_at", "generated_at", "quarantined_at", "regen", attrsOf(oracle.MailVerdict).sent}
}

// Expiring bounds the index's sort key: orders whose retention ends in
// [From, To) (epoch seconds; zero To: no upper bound).
type Expiring struct{ From, To int64 }

// OrderIndex reads across orders: the status index and batches of keys.
type OrderIndex struct {
	db    *awsenv.Queries
	table string
}

// NewOrderIndex reads table through db.
func NewOrderIndex(db *awsenv.Queries, table string) *OrderIndex {
	return &OrderIndex{db: db, table: table}
}

// ByStatus calls each for every order in status whose expiry is within
// exp, page by page, in order of expiry. The index is eventually
// consistent: read the order itself before acting on it.
func (o *OrderIndex) ByStatus(ctx context.Context, status oracle.Status, exp Expiring, each func(Indexed) error) error {
	in := o.statusQuery(status, exp)
	p := dynamodb.NewQueryPaginator(o.db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("read %s orders: %w", status, err)
		}
		for _, item := range page.Items {
			var x Indexed
			if err := attributevalue.UnmarshalMap(item, &x); err != nil {
				return fmt.Errorf("read %s orders: %w", status, err)
			}
			_, x.VerdictMailClosed = item[attrsOf(oracle.MailVerdict).sent]
			if err := each(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// CountByStatus counts the orders in status whose expiry is within exp.
func (o *OrderIndex) CountByStatus(ctx context.Context, status oracle.Status, exp Expiring) (int64, error) {
	in := o.statusQuery(status, exp)
	in.Select = types.SelectCount
	var n int64
	p := dynamodb.NewQueryPaginator(o.db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, fmt.Errorf("count %s orders: %w", status, err)
		}
		n += int64(page.Count)
	}
	return n, nil
}

// Sample returns up to n session ids of orders in status expiring from
// from on (epoch seconds): a random from makes a random sample.
func (o *OrderIndex) Sample(ctx context.Context, status oracle.Status, from int64, n int) ([]string, error) {
	in := o.statusQuery(status, Expiring{From: from})
	in.Limit = aws.Int32(int32(n))
	out, err := o.db.Query(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("sample %s orders: %w", status, err)
	}
	ids := make([]string, 0, len(out.Items))
	for _, item := range out.Items {
		if s, ok := item["session_id"].(*types.AttributeValueMemberS); ok {
			ids = append(ids, s.Value)
		}
	}
	return ids, nil
}

func (o *OrderIndex) statusQuery(status oracle.Status, exp Expiring) *dynamodb.QueryInput {
	cond := "#s = :s AND expires_at >= :from"
	values := map[string]types.AttributeValue{
		":s":    &types.AttributeValueMemberS{Value: string(status)},
		":from": number(exp.From),
	}
	if exp.To > 0 {
		cond = "#s = :s AND expires_at BETWEEN :from AND :to"
		values[":to"] = number(exp.To - 1)
	}
	return &dynamodb.QueryInput{
		TableName:                 aws.String(o.table),
		IndexName:                 aws.String(StatusIndex),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: values,
	}
}

// Existing reports which of ids have an order, reading only their keys
// (BatchGetItem, 100 at a time).
func (o *OrderIndex) Existing(ctx context.Context, ids []string) (map[string]bool, error) {
	found := make(map[string]bool, len(ids))
	for start := 0; start < len(ids); start += 100 {
		keys := make([]map[string]types.AttributeValue, 0, 100)
		for _, id := range ids[start:min(start+100, len(ids))] {
			keys = append(keys, key(id))
		}
		req := map[string]types.KeysAndAttributes{o.table: {Keys: keys, ProjectionExpression: aws.String("session_id"), ConsistentRead: aws.Bool(true)}}
		for tries := 0; len(req) > 0; tries++ {
			if tries == 5 {
				return nil, fmt.Errorf("look up orders: DynamoDB left keys unprocessed five times")
			}
			out, err := o.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, fmt.Errorf("look up orders: %w", err)
			}
			for _, item := range out.Responses[o.table] {
				if s, ok := item["session_id"].(*types.AttributeValueMemberS); ok {
					found[s.Value] = true
				}
			}
			req = out.UnprocessedKeys
		}
	}
	return found, nil
}

// MailProgress is how far one mail kind of an order got, as the health job
// needs it to tell an email in progress from one whose job was lost.
type MailProgress struct {
	Closed bool
	// NextAttempt is the attempt still to be made (0: the first); NextAt
	// when it is due (zero: at once, when the mail job was sent).
	NextAttempt int
	NextAt      time.Time
	// LeaseUntil is when the current attempt's claim lapses (zero: none).
	LeaseUntil time.Time
}

// Mail reads the order and the progress of its mail of kind.
func (o *Orders) Mail(ctx context.Context, sessionID string, kind oracle.MailKind) (oracle.Order, MailProgress, bool, error) {
	out, err := o.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(o.table),
		Key:            key(sessionID),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return oracle.Order{}, MailProgress{}, false, fmt.Errorf("get order %s: %w", oracle.ShortID(sessionID), err)
	}
	if out.Item == nil {
		return oracle.Order{}, MailProgress{}, false, nil
	}
	ord, err := decode(out.Item)
	if err != nil {
		return oracle.Order{}, MailProgress{}, false, fmt.Errorf("get order %s: %w", oracle.ShortID(sessionID), err)
	}
	a := attrsOf(kind)
	var p MailProgress
	_, p.Closed = out.Item[a.sent]
	if n, ok := out.Item[a.nextAttempt].(*types.AttributeValueMemberN); ok {
		p.NextAttempt, _ = strconv.Atoi(n.Value)
	}
	if s, ok := out.Item[a.nextAt].(*types.AttributeValueMemberS); ok {
		p.NextAt, _ = time.Parse(time.RFC3339Nano, s.Value)
	}
	if n, ok := out.Item[a.leaseUntil].(*types.AttributeValueMemberN); ok {
		if ms, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
			p.LeaseUntil = time.UnixMilli(ms).UTC()
		}
	}
	return ord, p, true, nil
}

// Reclaim takes the job lease of an order whose job was lost: one the
// health job found PAID, GENERATING or DROPPED without progress, as it
// read it (the same updated_at), with no live lease. The holder sends the
// job again and records it as a claim's holder does (JobEnqueued), so one
// health run at a time resends it. ok is false when the order moved on or
// another run took it first.
func (o *Orders) Reclaim(ctx context.Context, seen oracle.Order, lease time.Duration) (oracle.Claim, bool, error) {
	now := o.now().UTC()
	r, err := condwrite.UpdateLease(ctx, o.db, &dynamodb.UpdateItemInput{
		TableName:        aws.String(o.table),
		Key:              key(seen.SessionID),
		UpdateExpression: aws.String("SET job_lease_until = :until, job_lease = :wid, updated_at = :now REMOVE job_enqueued_at, job_due_at"),
		ConditionExpression: aws.String("#s = :status AND updated_at = :seen AND attribute_not_exists(verdict) AND " +
			"(attribute_not_exists(job_lease_until) OR job_lease_until < :nowms)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":until":  number(now.Add(lease).UnixMilli()),
			":nowms":  number(now.UnixMilli()),
			":now":    &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
			":seen":   &types.AttributeValueMemberS{Value: seen.UpdatedAt.UTC().Format(time.RFC3339Nano)},
			":status": &types.AttributeValueMemberS{Value: string(seen.Status)},
		},
		ReturnValues: types.ReturnValueAllNew,
	}, "job_lease")
	if err != nil {
		return oracle.Claim{}, false, fmt.Errorf("reclaim %s: %w", oracle.ShortID(seen.SessionID), err)
	}
	if !r.Applied {
		return oracle.Claim{}, false, nil
	}
	current, err := decode(r.Current)
	if err != nil {
		return oracle.Claim{}, false, fmt.Errorf("reclaim %s: %w", oracle.ShortID(seen.SessionID), err)
	}
	return oracle.Claim{Outcome: oracle.Resumed, Order: current, Lease: r.Token}, true, nil
}

// TableSize is the item count DynamoDB last published for the table
// (about every six hours).
func (o *OrderIndex) TableSize(ctx context.Context) (int64, error) {
	out, err := o.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(o.table)})
	if err != nil {
		return 0, fmt.Errorf("describe the orders table: %w", err)
	}
	return aws.ToInt64(out.Table.ItemCount), nil
}

// NameIndex is the Orders table's index by name (keys only): alerts and log
// lines name an order by its name (oracle.ShortID) alone, and the operator
// finds it through this index with that name.
const NameIndex = "by_name"

// WithName returns the session ids of the orders named name, at most limit
// of them, sorted: one, unless two orders share their first 16 random
// characters. An order written before names were (and so without one) is
// not in the index: WithPrefix finds it. Eventually consistent, as the
// index is: read the order itself before acting on it.
func (o *OrderIndex) WithName(ctx context.Context, name string, limit int) ([]string, error) {
	out, err := o.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(o.table),
		IndexName:                 aws.String(NameIndex),
		KeyConditionExpression:    aws.String("#n = :n"),
		ExpressionAttributeNames:  map[string]string{"#n": "name"}, // a reserved word
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberS{Value: name}},
		Limit:                     aws.Int32(int32(limit)),
	})
	if err != nil {
		return nil, fmt.Errorf("find the order named %s: %w", oracle.ShortID(name), err)
	}
	var ids []string
	for _, item := range out.Items {
		if s, ok := item["session_id"].(*types.AttributeValueMemberS); ok {
			ids = append(ids, s.Value)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// WithPrefix returns the session ids that start with prefix, at most
// limit of them, sorted. DynamoDB cannot query a partition key by its
// start, so this scans the status index (which projects every order, and
// is far smaller than the table), keeping only the ids that match, and
// stops as soon as it has limit of them. Eventually consistent, as the
// index is: read the order itself before acting on it.
func (o *OrderIndex) WithPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	p := dynamodb.NewScanPaginator(o.db, &dynamodb.ScanInput{
		TableName:                 aws.String(o.table),
		IndexName:                 aws.String(StatusIndex),
		FilterExpression:          aws.String("begins_with(session_id, :p)"),
		ProjectionExpression:      aws.String("session_id"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: prefix}},
	})
	var ids []string
	for p.HasMorePages() && len(ids) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("find the orders starting %s: %w", oracle.ShortID(prefix), err)
		}
		for _, item := range page.Items {
			if s, ok := item["session_id"].(*types.AttributeValueMemberS); ok && len(ids) < limit {
				ids = append(ids, s.Value)
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}
