package chat

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/condwrite"
)

// Spans is what the conversation needs of DynamoDB beyond Tables: reading
// an account's messages and writing or deleting them in batches (Client).
type Spans interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Client is a DynamoDB client with the operations that span an account's
// items, and only those, so that only they are linked (see awsenv.Tables).
type Client dynamodb.Client

// NewClient returns a DynamoDB client for cfg, its attempts
// awsenv.StoreRetryDelay apart.
func NewClient(cfg aws.Config, optFns ...func(*dynamodb.Options)) *Client {
	return (*Client)(dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){awsenv.StoreRetries}, optFns...)...))
}

// Query is dynamodb.Client.Query.
func (c *Client) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return (*dynamodb.Client)(c).Query(ctx, in, optFns...)
}

// BatchWriteItem is dynamodb.Client.BatchWriteItem.
func (c *Client) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return (*dynamodb.Client)(c).BatchWriteItem(ctx, in, optFns...)
}

// Who wrote a message.
const (
	RoleUser   = "user"
	RoleAether = "aether"
)

// Turn is one message of a conversation.
type Turn struct {
	Role string
	Text string
	At   time.Time
}

// Conversation keeps an account's messages, each an item of its own
// (msg#<unix nanos>#<u or a>) that expires Retention after it was written.
type Conversation struct {
	store     *Store
	spans     Spans
	retention time.Duration
}

// Conversation is s's conversations, read and deleted through spans,
// each message kept for retention.
func (s *Store) Conversation(spans Spans, retention time.Duration) *Conversation {
	return &Conversation{store: s, spans: spans, retention: retention}
}

const skMessage = "msg#"

func messageSK(at time.Time, role string) string {
	r := "u"
	if role == RoleAether {
		r = "a"
	}
	return fmt.Sprintf("%s%020d#%s", skMessage, at.UnixNano(), r)
}

// batchLimit is BatchWriteItem's most items per request.
const batchLimit = 25

// batchRounds bounds the retries of the items a batch left unprocessed
// (DynamoDB throttling part of it).
const batchRounds = 5

// Append stores one exchange: the person's message at at and the reply
// just after it, both kept for the retention. Each is a conditional put:
// a message never replaces another written at the same nanosecond (two
// tabs at once, a coarse clock), it moves on to the next free one.
func (c *Conversation) Append(ctx context.Context, account, message, reply string, at time.Time) error {
	expires := strconv.FormatInt(c.store.now().Add(c.retention).Unix(), 10)
	t := at
	for _, m := range []struct{ role, text string }{{RoleUser, message}, {RoleAether, reply}} {
		for tries := 0; ; tries++ {
			if tries == appendTries {
				return fmt.Errorf("store an exchange: no free time for its %s message after %d tries", m.role, tries)
			}
			// condwrite: a retried put that its first attempt applied is
			// not taken for a collision, which would store it twice.
			r, err := condwrite.Put(ctx, c.store.db, &dynamodb.PutItemInput{
				TableName: aws.String(c.store.table),
				Item: map[string]types.AttributeValue{
					"pk":         str(accountPK(account)),
					"sk":         str(messageSK(t, m.role)),
					"text":       str(m.text),
					"expires_at": &types.AttributeValueMemberN{Value: expires},
				},
				ConditionExpression: aws.String("attribute_not_exists(pk)"),
			})
			if err != nil {
				return fmt.Errorf("store an exchange: %w", err)
			}
			if !r.Applied {
				t = t.Add(time.Nanosecond)
				continue
			}
			// The reply sorts after its message even when both have
			// one time.
			t = t.Add(time.Nanosecond)
			break
		}
	}
	return nil
}

// appendTries bounds the search for a free nanosecond.
const appendTries = 16

// write sends reqs in batches, again for what a batch left unprocessed.
func (c *Conversation) write(ctx context.Context, reqs []types.WriteRequest) error {
	for len(reqs) > 0 {
		n := min(len(reqs), batchLimit)
		batch := reqs[:n]
		reqs = reqs[n:]
		for round := 0; len(batch) > 0; round++ {
			if round == batchRounds {
				return fmt.Errorf("%d items still unprocessed after %d rounds", len(batch), batchRounds)
			}
			out, err := c.spans.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{c.store.table: batch},
			})
			if err != nil {
				return err
			}
			batch = out.UnprocessedItems[c.store.table]
		}
	}
	return nil
}

// Recent is the end of the conversation, oldest first: the latest turns
// whose texts hold at most maxChars characters together, starting with a
// message of the person's. A message past its retention that the table
// has not yet removed is not read.
func (c *Conversation) Recent(ctx context.Context, account string, maxChars int) ([]Turn, error) {
	now := strconv.FormatInt(c.store.now().Unix(), 10)
	var (
		out   []Turn
		chars int
		start map[string]types.AttributeValue
		limit int32 = firstPage
	)
	for {
		page, err := c.spans.Query(ctx, &dynamodb.QueryInput{
			TableName:              aws.String(c.store.table),
			KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :msg)"),
			FilterExpression:       aws.String("expires_at > :now"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": str(accountPK(account)), ":msg": str(skMessage),
				":now": &types.AttributeValueMemberN{Value: now},
			},
			ScanIndexForward:  aws.Bool(false),
			ConsistentRead:    aws.Bool(true),
			Limit:             aws.Int32(limit),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("read the conversation: %w", err)
		}
		for _, it := range page.Items {
			t, ok := turnOf(it)
			if !ok {
				continue
			}
			n := utf8.RuneCountInString(t.Text)
			if chars+n > maxChars {
				return oldestFirst(out), nil
			}
			chars += n
			out = append(out, t)
		}
		if page.LastEvaluatedKey == nil {
			return oldestFirst(out), nil
		}
		start = page.LastEvaluatedKey
		limit = nextPage(len(out), chars, maxChars)
	}
}

// firstPage is how many messages Recent reads first: a consistent read is
// paid for by the size of what it reads, and a page of 50 messages of up
// to 2,000 characters is about 100 KB for the 8,000 the model is given.
const firstPage = 8

// nextPage is how many messages to read next, having read n that hold
// chars characters of the maxChars wanted: as many as the rest should
// take at the length read so far, and one more to see the bound crossed.
func nextPage(n, chars, maxChars int) int32 {
	if n == 0 || chars == 0 {
		return maxPage
	}
	return int32(min((maxChars-chars)/max(chars/n, 1)+1, maxPage))
}

// maxPage bounds one page of the conversation.
const maxPage = 50

// oldestFirst turns the newest-first turns around, dropping a reply whose
// message did not fit.
func oldestFirst(turns []Turn) []Turn {
	slices.Reverse(turns)
	for len(turns) > 0 && turns[0].Role != RoleUser {
		turns = turns[1:]
	}
	return turns
}

func turnOf(it map[string]types.AttributeValue) (Turn, bool) {
	sk := stringOf(it, "sk")
	// msg#<20 digits>#<u or a>
	if len(sk) != len(skMessage)+20+2 {
		return Turn{}, false
	}
	nanos, err := strconv.ParseInt(sk[len(skMessage):len(skMessage)+20], 10, 64)
	if err != nil {
		return Turn{}, false
	}
	t := Turn{Text: stringOf(it, "text"), At: time.Unix(0, nanos).UTC()}
	switch sk[len(sk)-1] {
	case 'u':
		t.Role = RoleUser
	case 'a':
		t.Role = RoleAether
	default:
		return Turn{}, false
	}
	return t, true
}

// Forget deletes every message of account at once (DELETE /api/chat),
// returning how many there were. The account and its counts stay.
func (c *Conversation) Forget(ctx context.Context, account string) (int, error) {
	var reqs []types.WriteRequest
	err := c.eachMessage(ctx, account, "pk, sk", func(it map[string]types.AttributeValue) {
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key(stringOf(it, "pk"), stringOf(it, "sk"))}})
	})
	if err == nil {
		err = c.write(ctx, reqs)
	}
	if err != nil {
		return 0, fmt.Errorf("forget the conversation: %w", err)
	}
	return len(reqs), nil
}

// Stored is what an account's stored conversation holds, without a word
// of it: how many messages, and when the first and the last were written.
type Stored struct {
	Messages    int
	First, Last time.Time
}

// Stored counts the account's stored messages, reading their keys alone
// (the operator's view, which shows no text): those past their retention
// that the table has not yet removed count too, as they are still held.
func (c *Conversation) Stored(ctx context.Context, account string) (Stored, error) {
	var out Stored
	err := c.eachMessage(ctx, account, "sk", func(it map[string]types.AttributeValue) {
		t, ok := turnOf(it)
		if !ok {
			return
		}
		out.Messages++
		if out.First.IsZero() || t.At.Before(out.First) {
			out.First = t.At
		}
		if t.At.After(out.Last) {
			out.Last = t.At
		}
	})
	if err != nil {
		return Stored{}, fmt.Errorf("count the conversation: %w", err)
	}
	return out, nil
}

// eachMessage calls fn with every message item of account, read with
// projection, page after page.
func (c *Conversation) eachMessage(ctx context.Context, account, projection string, fn func(map[string]types.AttributeValue)) error {
	return c.each(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(c.store.table),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :msg)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(accountPK(account)), ":msg": str(skMessage),
		},
		ProjectionExpression: aws.String(projection),
		ConsistentRead:       aws.Bool(true),
	}, fn)
}

// each calls fn with every item the query in finds, page after page.
func (c *Conversation) each(ctx context.Context, in *dynamodb.QueryInput, fn func(map[string]types.AttributeValue)) error {
	for {
		page, err := c.spans.Query(ctx, in)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			fn(it)
		}
		if page.LastEvaluatedKey == nil {
			return nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
