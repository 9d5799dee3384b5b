package motoserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/infra/tools"
	"42sisters.ai/oracle/shared/awsenv"
)

// collectorReport is serve.py's GET /_oracle/gc.
type collectorReport struct {
	Threshold   int            `json:"threshold"`
	Young       int            `json:"young"`
	Frozen      int            `json:"frozen"`
	Collections map[string]int `json:"collections"`
}

func readCollector(t *testing.T, endpoint string) collectorReport {
	t.Helper()
	resp, err := http.Get(endpoint + gcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r collectorReport
	if err := json.NewDecoder(resp.Body).Decode(&r); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("%s: %d %v", gcPath, resp.StatusCode, err)
	}
	return r
}

// collectorServer is one serve.py with env, a table in it, and a client.
func collectorServer(t *testing.T, env ...string) (*Server, *dynamodb.Client) {
	t.Helper()
	tools.Find(t, "moto_server")
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := startProcess(context.Background(), port, env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	db := dynamodb.NewFromConfig(awsenv.ForEndpoint(s.Endpoint, "us-east-1"))
	if _, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String("collected"),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	return s, db
}

// write puts and reads back item i: garbage for the collector.
func write(t *testing.T, db *dynamodb.Client, i int) {
	t.Helper()
	key := map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint("item-", i%20)}}
	item := map[string]ddbtypes.AttributeValue{"id": key["id"], "n": &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(i)}}
	if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("collected"), Item: item}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("collected"), Key: key}); err != nil {
		t.Fatal(err)
	}
}

// Python's own collector, which would pause whichever request crossed its
// threshold, waits for far more garbage than a few requests leave; the
// server collects the young generations once it is quiet, and everything
// (then freezing what outlived startup) once it has been quiet a second.
func TestGarbageIsCollectedWhenTheServerIsQuiet(t *testing.T) {
	// A limit above what the requests below leave, whatever moto's
	// version allocates for each.
	s, db := collectorServer(t, "ORACLE_MOTO_GC_LIMIT=10000000")
	if r := readCollector(t, s.Endpoint); r.Threshold != 10_000_000 {
		t.Fatalf("Python's young threshold is %d, want ORACLE_MOTO_GC_LIMIT's 10,000,000: %+v", r.Threshold, r)
	}
	var r collectorReport
	// Polled: the collections come once the server has been quiet a while.
	collected := func() bool {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if r = readCollector(t, s.Endpoint); r.Collections["young"] > 0 && r.Collections["full"] > 0 && r.Young < 700 {
				return true
			}
		}
		return false
	}
	// A collector kept from running for a whole second on a busy machine
	// makes the full collection first, which leaves the young one nothing:
	// the requests are then sent again.
	for round := 1; ; round++ {
		for i := range 40 {
			write(t, db, i)
		}
		if collected() {
			break
		}
		if round == 3 {
			t.Fatalf("no quiet collection of the requests' garbage: %+v", r)
		}
	}
	if r.Frozen == 0 {
		t.Errorf("nothing frozen after the first full collection: %+v", r)
	}
	if r.Collections["by_python"] != 0 {
		t.Errorf("collections inside requests: %+v", r.Collections)
	}
}

// Load that never leaves the server quiet cannot grow its heap without
// end: past ORACLE_MOTO_GC_LIMIT young objects Python's collector runs as
// it always did.
func TestLoadWithoutPauseIsCollectedAtTheLimit(t *testing.T) {
	s, db := collectorServer(t, "ORACLE_MOTO_GC_IDLE=3600", "ORACLE_MOTO_GC_LIMIT=2000")
	var r collectorReport
	for i := 0; ; i++ {
		write(t, db, i)
		if r = readCollector(t, s.Endpoint); r.Collections["by_python"] > 0 {
			break
		}
		if i == 2000 {
			t.Fatalf("%d requests and no collection at the limit: %+v", i+1, r)
		}
	}
	if r.Collections["young"] != 0 || r.Collections["full"] != 0 {
		t.Errorf("quiet collections while never quiet: %+v", r.Collections)
	}
}
