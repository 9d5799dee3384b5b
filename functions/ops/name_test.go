package main

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// countingCalls counts DynamoDB operations by name as they go to moto.
type countingCalls struct {
	mu  sync.Mutex
	ops map[string]int
}

func (c *countingCalls) RoundTrip(r *http.Request) (*http.Response, error) {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		c.mu.Lock()
		c.ops[t[strings.LastIndex(t, ".")+1:]]++
		c.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingCalls) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = map[string]int{}
	return ops
}

// TestShowFindsAnOrderByItsNameAlone: alerts and log lines name an order
// by its 24-character name (oracle.ShortID) alone, so `make ops
// ACTION=show SESSION=<name>` must find it by that name: a card order and
// an agent order through the name index (a query, never a scan of the
// orders), and an order written before orders had names through the scan
// of the status index.
func TestShowFindsAnOrderByItsNameAlone(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const (
		card  = "cs_test_nameA1B2C3D4E5F6G7H8I9J0K1L2M3N4O5P6Q7R8S9T0U1V2W3X4Y5Z6"
		agent = "x402_test_nameA1B2C3D4E5F6G7H8I9J0K1L2M3N4"
		older = "cs_test_olderA1B2C3D4E5F6G7H8I9J0K1L2M3N4O5P6Q7R8S9T0U1V2W3X4Y5Z"
	)
	e.claim(card, oracle.StatusFailed)
	e.claim(agent, oracle.StatusHeld)
	e.claim(older, oracle.StatusFailed)
	// The older order as the store wrote it before names: no name.
	if _, err := dynamodb.NewFromConfig(e.f.AWS).UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.f.Ref("OrdersTable")), UpdateExpression: aws.String("REMOVE #n"),
		Key:                      map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: older}},
		ExpressionAttributeNames: map[string]string{"#n": "name"},
	}); err != nil {
		t.Fatal(err)
	}
	calls := &countingCalls{ops: map[string]int{}}
	cfg := e.f.AWS.Copy()
	cfg.HTTPClient = &http.Client{Transport: calls}
	e.h.Index = store.NewOrderIndex(awsenv.NewQueries(cfg), e.f.Ref("OrdersTable"))
	for _, c := range []struct {
		what, id string
		want     oracle.Status
		scans    int
	}{
		{"a card order", card, oracle.StatusFailed, 0},
		{"an agent order", agent, oracle.StatusHeld, 0},
		{"an order written before names", older, oracle.StatusFailed, 1},
	} {
		t.Run(c.what, func(t *testing.T) {
			name := oracle.ShortID(c.id)
			ans := e.do(Request{Action: "show", Session: name})
			if !ans.OK || !strings.HasPrefix(ans.Message, name+" is "+string(c.want)) {
				t.Fatalf("show %s: %+v", name, ans)
			}
			if ops := calls.take(); ops["Scan"] != c.scans || ops["Query"] != 1 {
				t.Errorf("show %s made %v, want one query of the name index and %d scan(s)", name, ops, c.scans)
			}
		})
	}
}
