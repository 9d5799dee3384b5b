package motoserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/putonce"
)

// racers is how many writers race for each key, and contested how many keys
// are raced for at once: a server that checked a condition and wrote apart
// lets two writers through only when it switches threads between the two,
// so many races at once make that all but certain.
const (
	racers    = 16
	contested = 4
)

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// fixture is the template's tables and audit bucket in the moto server
// under test (ORACLE_MOTO_ENDPOINT, or one started from this serve.py).
type fixture struct {
	endpoint              string
	db                    *dynamodb.Client
	s3                    *s3.Client
	orders, ledger, audit string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := provision.ForTest(t, nil)
	return &fixture{
		endpoint: *f.AWS.BaseEndpoint,
		db:       dynamodb.NewFromConfig(f.AWS),
		s3:       awsenv.S3(f.AWS),
		orders:   f.Ref("OrdersTable"),
		ledger:   f.Ref("LedgerTable"),
		audit:    f.Ref("AuditBucket"),
	}
}

// stored reads an attribute of an item with a consistent read.
func (f *fixture) stored(t *testing.T, table, keyAttr, key, attr string) string {
	t.Helper()
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{keyAttr: str(key)}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := out.Item[attr].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

func (f *fixture) object(t *testing.T, key string) string {
	t.Helper()
	out, err := f.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(f.audit), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lost reports whether err is a conditional write's lost race, as
// DynamoDB and S3 answer it.
func lost(err error) bool {
	var cond *types.ConditionalCheckFailedException
	var txn *types.TransactionCanceledException
	return errors.As(err, &cond) || errors.As(err, &txn)
}

// race is one kind of conditional write raced on one key or on a key each.
type race struct {
	name string
	// prepare makes the keys' items before the race, where the write
	// claims one that exists.
	prepare func(t *testing.T, f *fixture, key string)
	// write makes racer me's write of key: won is false when another got
	// there first.
	write func(ctx context.Context, f *fixture, key, me string) (won bool, err error)
	// winner reads back whose write key holds (every item a write made
	// must name the same racer).
	winner func(t *testing.T, f *fixture, key string) string
}

var races = []race{
	{name: "PutItem attribute_not_exists",
		write: func(ctx context.Context, f *fixture, key, me string) (bool, error) {
			_, err := f.db.PutItem(ctx, &dynamodb.PutItemInput{
				TableName:           aws.String(f.ledger),
				Item:                map[string]types.AttributeValue{"pk": str(key), "by": str(me)},
				ConditionExpression: aws.String("attribute_not_exists(pk)"),
			})
			return err == nil, err
		},
		winner: func(t *testing.T, f *fixture, key string) string { return f.stored(t, f.ledger, "pk", key, "by") },
	},
	{name: "UpdateItem claims a paid order",
		prepare: func(t *testing.T, f *fixture, key string) {
			if _, err := f.db.PutItem(context.Background(), &dynamodb.PutItemInput{
				TableName: aws.String(f.orders), Item: map[string]types.AttributeValue{"session_id": str(key), "status": str("PAID")},
			}); err != nil {
				t.Fatal(err)
			}
		},
		write: func(ctx context.Context, f *fixture, key, me string) (bool, error) {
			_, err := f.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(f.orders),
				Key:                       map[string]types.AttributeValue{"session_id": str(key)},
				UpdateExpression:          aws.String("SET #s = :g, claimed_by = :me"),
				ConditionExpression:       aws.String("#s = :paid"),
				ExpressionAttributeNames:  map[string]string{"#s": "status"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":g": str("GENERATING"), ":paid": str("PAID"), ":me": str(me)},
				ReturnValues:              types.ReturnValueAllNew,
			})
			return err == nil, err
		},
		winner: func(t *testing.T, f *fixture, key string) string {
			return f.stored(t, f.orders, "session_id", key, "claimed_by")
		},
	},
	{name: "TransactWriteItems across the Orders table and the Ledger",
		write: func(ctx context.Context, f *fixture, key, me string) (bool, error) {
			_, err := f.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{
					TableName:           aws.String(f.ledger),
					Item:                map[string]types.AttributeValue{"pk": str(key), "by": str(me)},
					ConditionExpression: aws.String("attribute_not_exists(pk)"),
				}},
				{Put: &types.Put{
					TableName:           aws.String(f.orders),
					Item:                map[string]types.AttributeValue{"session_id": str(key), "by": str(me)},
					ConditionExpression: aws.String("attribute_not_exists(session_id)"),
				}},
			}})
			return err == nil, err
		},
		winner: func(t *testing.T, f *fixture, key string) string {
			ledger, order := f.stored(t, f.ledger, "pk", key, "by"), f.stored(t, f.orders, "session_id", key, "by")
			if ledger != order {
				t.Errorf("key %s: the Ledger's item is %q's, the order %q's: the transaction was not applied whole", key, ledger, order)
			}
			return ledger
		},
	},
	{name: "PutObject If-None-Match",
		write: func(ctx context.Context, f *fixture, key, me string) (bool, error) {
			return putonce.Put(ctx, f.s3, key, []byte(me), &s3.PutObjectInput{Bucket: aws.String(f.audit)})
		},
		winner: func(t *testing.T, f *fixture, key string) string { return f.object(t, key) },
	},
}

// Conditional writes raced from many goroutines at once, many on each key
// and one on each key: of the writes of one key exactly one wins and the
// item is the winner's; a write alone on its key wins. A transaction
// across two tables is applied whole or not at all.
func TestConditionalWritesRacedAtTheServer(t *testing.T) {
	f := newFixture(t)
	for _, r := range races {
		for _, shared := range []bool{true, false} {
			name := r.name + "/a key each"
			if shared {
				name = fmt.Sprintf("%s/%d writers a key", r.name, racers)
			}
			t.Run(name, func(t *testing.T) {
				writers := racers * contested
				keys := make([]string, writers)
				base := fmt.Sprintf("%s-%d", strings.ReplaceAll(t.Name(), " ", "_"), time.Now().UnixNano())
				for i := range keys {
					keys[i] = fmt.Sprintf("%s-%d", base, i)
					if shared {
						keys[i] = fmt.Sprintf("%s-%d", base, i%contested)
					}
				}
				if r.prepare != nil {
					for i := range keys {
						if i < contested || !shared {
							r.prepare(t, f, keys[i])
						}
					}
				}
				won := make([]bool, writers)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i := range writers {
					wg.Go(func() {
						<-start
						ok, err := r.write(context.Background(), f, keys[i], fmt.Sprintf("racer-%d", i))
						if err != nil && !lost(err) {
							t.Errorf("racer %d: %v", i, err)
						}
						won[i] = ok
					})
				}
				close(start)
				wg.Wait()

				winners := map[string][]string{}
				for i, ok := range won {
					if ok {
						winners[keys[i]] = append(winners[keys[i]], fmt.Sprintf("racer-%d", i))
					}
				}
				want := contested
				if !shared {
					want = writers
				}
				if len(winners) != want {
					t.Fatalf("%d keys have a winner, want %d: %v", len(winners), want, winners)
				}
				for key, who := range winners {
					if len(who) != 1 {
						t.Errorf("key %s: %d writes won (%v), want one", key, len(who), who)
						continue
					}
					if got := r.winner(t, f, key); got != who[0] {
						t.Errorf("key %s holds %q's write, but %s won", key, got, who[0])
					}
				}
			})
		}
	}
}

// locks is the server's GET /_oracle/locks: per table or bucket, the
// requests parked by a hold and those waiting for one of its locks.
type locks struct {
	Held    map[string]int `json:"held"`
	Waiting map[string]int `json:"waiting"`
}

func control(t *testing.T, endpoint, method, path string) locks {
	t.Helper()
	req, err := http.NewRequest(method, endpoint+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l locks
	switch resp.StatusCode {
	case http.StatusOK:
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	case http.StatusNoContent:
	default:
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %s %.200s (a moto server run by this serve.py?)", method, path, resp.Status, b)
	}
	return l
}

// hold parks the next request on scope (dynamodb/TABLE or s3/BUCKET) in
// the server once it holds its locks, until the returned release.
func hold(t *testing.T, endpoint, scope string) (release func()) {
	t.Helper()
	control(t, endpoint, http.MethodPost, "/_oracle/locks/hold?scope="+url.QueryEscape(scope))
	var once sync.Once
	release = func() {
		once.Do(func() { control(t, endpoint, http.MethodPost, "/_oracle/locks/release?scope="+url.QueryEscape(scope)) })
	}
	t.Cleanup(release)
	return release
}

// until waits for the server's locks to show what cond wants.
func until(t *testing.T, endpoint, what string, cond func(locks) bool) {
	t.Helper()
	var last locks
	if !testkit.Eventually(30*time.Second, 10*time.Millisecond, func() bool {
		last = control(t, endpoint, http.MethodGet, "/_oracle/locks")
		return cond(last)
	}) {
		t.Fatalf("%s: never seen; the server's locks: %+v", what, last)
	}
}

// pending runs call on a goroutine; its result arrives on the channel.
func pending(call func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- call() }()
	return done
}

// answered fails unless call answers while another request is held. A
// server that applied requests one at a time would never answer it: the
// deadline turns that into a failure instead of a hang.
func answered(t *testing.T, what string, call func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := call(ctx); err != nil {
		t.Fatalf("%s, while the held request holds its locks: %v", what, err)
	}
}

// A request that the server holds inside its locks (a PutItem on one
// Ledger item, a PutObject of one audit key) keeps waiting only the
// requests that meet it: the same item or key, and a Scan that walks the
// table. Another item of the same table, another table and another bucket
// answer meanwhile, as in AWS; nothing is timed: the held request provably
// has not finished (the test has not released it) while they answer, and
// the server reports the ones it keeps waiting.
func TestAHeldRequestWaitsOnlyWhatItMeets(t *testing.T) {
	f := newFixture(t)
	stamp := fmt.Sprint(time.Now().UnixNano())
	putLedger := func(ctx context.Context, key, me string) error {
		_, err := f.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:           aws.String(f.ledger),
			Item:                map[string]types.AttributeValue{"pk": str(key), "by": str(me)},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		})
		return err
	}
	putAudit := func(ctx context.Context, key, me string) (bool, error) {
		return putonce.Put(ctx, f.s3, key, []byte(me), &s3.PutObjectInput{Bucket: aws.String(f.audit)})
	}

	t.Run("a DynamoDB item", func(t *testing.T) {
		scope := "dynamodb/" + f.ledger
		held, other := "held-"+stamp, "other-"+stamp
		release := hold(t, f.endpoint, scope)
		first := pending(func() error { return putLedger(context.Background(), held, "first") })
		until(t, f.endpoint, "the first PutItem held", func(l locks) bool { return l.Held[scope] == 1 })

		answered(t, "a PutItem of another item of the table", func(ctx context.Context) error { return putLedger(ctx, other, "other") })
		answered(t, "a PutItem to another table", func(ctx context.Context) error {
			_, err := f.db.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(f.orders), Item: map[string]types.AttributeValue{"session_id": str(held), "status": str("PAID")},
			})
			return err
		})
		answered(t, "a PutObject to the audit bucket", func(ctx context.Context) error {
			_, err := putAudit(ctx, "held-table-"+stamp, "other")
			return err
		})

		second := pending(func() error { return putLedger(context.Background(), held, "second") })
		until(t, f.endpoint, "a PutItem of the held item waiting", func(l locks) bool { return l.Waiting[scope] == 1 })
		scan := pending(func() error {
			out, err := f.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(f.ledger), ConsistentRead: aws.Bool(true)})
			if err == nil && len(out.Items) < 2 {
				err = fmt.Errorf("the scan found %d items, want the two written before it", len(out.Items))
			}
			return err
		})
		until(t, f.endpoint, "a Scan of the table waiting too", func(l locks) bool { return l.Waiting[scope] == 2 })
		select {
		case err := <-first:
			t.Fatalf("the held PutItem answered before its release: %v", err)
		default:
		}

		release()
		if err := <-first; err != nil {
			t.Fatalf("the held PutItem: %v", err)
		}
		if err := <-second; !lost(err) {
			t.Fatalf("the second PutItem of the held item: %v, want its condition failed", err)
		}
		if err := <-scan; err != nil {
			t.Fatal(err)
		}
		if by := f.stored(t, f.ledger, "pk", held, "by"); by != "first" {
			t.Fatalf("the held item is %q's, want the first's", by)
		}
	})

	t.Run("an S3 key", func(t *testing.T) {
		scope := "s3/" + f.audit
		held := "held-" + stamp
		release := hold(t, f.endpoint, scope)
		first := pending(func() error {
			written, err := putAudit(context.Background(), held, "first")
			if err == nil && !written {
				err = errors.New("not written")
			}
			return err
		})
		until(t, f.endpoint, "the first PutObject held", func(l locks) bool { return l.Held[scope] == 1 })

		answered(t, "a PutObject of another key of the bucket", func(ctx context.Context) error {
			_, err := putAudit(ctx, "other-"+stamp, "other")
			return err
		})
		answered(t, "a PutItem to the Ledger", func(ctx context.Context) error { return putLedger(ctx, "held-bucket-"+stamp, "other") })

		second := pending(func() error {
			written, err := putAudit(context.Background(), held, "second")
			if err == nil && written {
				err = errors.New("written over the first")
			}
			return err
		})
		until(t, f.endpoint, "a PutObject of the held key waiting", func(l locks) bool { return l.Waiting[scope] == 1 })
		select {
		case err := <-first:
			t.Fatalf("the held PutObject answered before its release: %v", err)
		default:
		}

		release()
		if err := <-first; err != nil {
			t.Fatalf("the held PutObject: %v", err)
		}
		if err := <-second; err != nil {
			t.Fatalf("the second PutObject of the held key: %v", err)
		}
		if got := f.object(t, held); got != "first" {
			t.Fatalf("the held key holds %q, want the first's", got)
		}
	})
}
