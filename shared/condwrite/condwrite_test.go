package condwrite_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/condwrite"
)

var ctx = context.Background()

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": s(id)}
}

// writer makes one kind of conditional write on the Ledger item id; the
// write's token ends up in attr.
type writer struct {
	name  string
	op    string // the DynamoDB operation, for testkit.Lossy
	attr  string
	write func(db *dynamodb.Client, table, id string) (condwrite.Result, error)
}

var writers = []writer{
	{"update", "UpdateItem", "write_id", func(db *dynamodb.Client, table, id string) (condwrite.Result, error) {
		return condwrite.Update(ctx, db, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(table),
			Key:                       key(id),
			UpdateExpression:          aws.String("SET n = :n, write_id = :wid"),
			ConditionExpression:       aws.String("attribute_not_exists(pk)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "1"}},
			ReturnValues:              types.ReturnValueAllNew,
		})
	}},
	{"lease", "UpdateItem", "lease", func(db *dynamodb.Client, table, id string) (condwrite.Result, error) {
		return condwrite.UpdateLease(ctx, db, &dynamodb.UpdateItemInput{
			TableName:                aws.String(table),
			Key:                      key(id),
			UpdateExpression:         aws.String("SET #l = :wid"),
			ConditionExpression:      aws.String("attribute_not_exists(#l)"),
			ExpressionAttributeNames: map[string]string{"#l": "lease"},
			ReturnValues:             types.ReturnValueAllNew,
		}, "lease")
	}},
	{"put", "PutItem", "write_id", func(db *dynamodb.Client, table, id string) (condwrite.Result, error) {
		return condwrite.Put(ctx, db, &dynamodb.PutItemInput{
			TableName:           aws.String(table),
			Item:                map[string]types.AttributeValue{"pk": s(id), "n": &types.AttributeValueMemberN{Value: "1"}},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		})
	}},
}

func TestWrites(t *testing.T) {
	f := provision.ForTest(t, nil)
	lossy := &testkit.Lossy{}
	db := dynamodb.NewFromConfig(f.AWS, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: lossy} })
	table := f.Ref("LedgerTable")
	cases := []struct {
		name    string
		taken   bool // another write got there first: the condition fails
		lose    bool // the first attempt's answer is lost and the SDK retries
		applied bool
	}{
		{"applied", false, false, true},
		{"condition failed", true, false, false},
		{"lost answer retried", false, true, true},
	}
	for _, w := range writers {
		for _, c := range cases {
			t.Run(w.name+"/"+c.name, func(t *testing.T) {
				id := strings.ReplaceAll(t.Name(), " ", "_")
				if c.taken {
					if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{
						TableName: aws.String(table),
						Item:      map[string]types.AttributeValue{"pk": s(id), w.attr: s("another write")},
					}); err != nil {
						t.Fatal(err)
					}
				}
				if c.lose {
					lossy.Arm(w.op)
				}
				r, err := w.write(db, table, id)
				if err != nil {
					t.Fatal(err)
				}
				if c.lose && lossy.Armed() {
					lossy.Arm("")
					t.Fatal("no answer was lost: the test proves nothing")
				}
				if r.Applied != c.applied {
					t.Fatalf("applied %v, want %v", r.Applied, c.applied)
				}
				stored := attr(t, db, table, id, w.attr)
				if !c.applied {
					if r.Token != "" || attrOf(r.Current, w.attr) != "another write" {
						t.Fatalf("not applied: token %q, current %v", r.Token, r.Current)
					}
					return
				}
				if len(r.Token) != 32 || stored != r.Token || attrOf(r.Current, w.attr) != r.Token {
					t.Fatalf("token %q, stored %q, current %v", r.Token, stored, r.Current)
				}
			})
		}
	}
}

// attr reads the item's string attribute name.
func attr(t *testing.T, db *dynamodb.Client, table, id, name string) string {
	t.Helper()
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return attrOf(out.Item, name)
}

func attrOf(item map[string]types.AttributeValue, name string) string {
	v, _ := item[name].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

func TestConditionFailed(t *testing.T) {
	ccf := &types.ConditionalCheckFailedException{Item: key("x")}
	for _, c := range []struct {
		name string
		err  error
		item map[string]types.AttributeValue
		ok   bool
	}{
		{"failed check", ccf, ccf.Item, true},
		{"wrapped", errors.Join(errors.New("context"), ccf), ccf.Item, true},
		{"without item", &types.ConditionalCheckFailedException{}, nil, true},
		{"other error", errors.New("throttled"), nil, false},
		{"no error", nil, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			item, ok := condwrite.Failed(c.err)
			if ok != c.ok || ok != condwrite.ConditionFailed(c.err) || attrOf(item, "pk") != attrOf(c.item, "pk") {
				t.Fatalf("Failed: %v %v; ConditionFailed: %v", item, ok, condwrite.ConditionFailed(c.err))
			}
		})
	}
}

// Errors other than a failed check come back as they are.
func TestOtherErrorsPassThrough(t *testing.T) {
	db := dynamodb.NewFromConfig(awsenv.ForEndpoint(motoserver.ForTest(t), provision.TestRegion))
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			r, err := w.write(db, "no-such-table", "x")
			var nf *types.ResourceNotFoundException
			if !errors.As(err, &nf) || r.Applied || r.Current != nil {
				t.Fatalf("got %+v, %v", r, err)
			}
		})
	}
}

// noDB fails the test when a write reaches it.
type noDB struct{ t *testing.T }

func (d noDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	d.t.Error("the write was sent")
	return &dynamodb.UpdateItemOutput{}, nil
}

func (d noDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	d.t.Error("the write was sent")
	return &dynamodb.PutItemOutput{}, nil
}

// A write that would not store its token is a programming error, refused
// before it is sent.
func TestMisuse(t *testing.T) {
	update := func(expr string, values map[string]types.AttributeValue) func(noDB) (condwrite.Result, error) {
		return func(db noDB) (condwrite.Result, error) {
			return condwrite.Update(ctx, db, &dynamodb.UpdateItemInput{
				TableName: aws.String("t"), Key: key("x"),
				UpdateExpression: aws.String(expr), ExpressionAttributeValues: values,
			})
		}
	}
	for _, c := range []struct {
		name  string
		write func(noDB) (condwrite.Result, error)
	}{
		{"update without :wid", update("SET n = :n", map[string]types.AttributeValue{":n": s("1")})},
		{"update with another name", update("SET write_id = :widget", map[string]types.AttributeValue{":widget": s("1")})},
		{"update with :wid already set", update("SET write_id = :wid", map[string]types.AttributeValue{":wid": s("mine")})},
		{"lease without :wid", func(db noDB) (condwrite.Result, error) {
			return condwrite.UpdateLease(ctx, db, &dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET lease = :token")}, "lease")
		}},
		{"put with write_id already set", func(db noDB) (condwrite.Result, error) {
			return condwrite.Put(ctx, db, &dynamodb.PutItemInput{Item: map[string]types.AttributeValue{"pk": s("x"), "write_id": s("mine")}})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r, err := c.write(noDB{t}); err == nil || r.Applied {
				t.Fatalf("got %+v, %v; want an error", r, err)
			}
		})
	}
}
