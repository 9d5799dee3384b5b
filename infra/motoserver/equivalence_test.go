package motoserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// ddbCall is one DynamoDB request of the replayed table, and why it is there.
type ddbCall struct {
	name, action, body string
}

// equivalenceCalls are the requests both servers answer, in order: every
// ReturnValues and ReturnValuesOnConditionCheckFailure, conditions passing
// and failing, missing items, each kind of attribute value (binary ones
// included, which the direct serializer leaves to moto's), nested maps and
// lists, and requests moto refuses. Each expression is sent more than once,
// so that what serve.py keeps from a first request is used by a later one.
var equivalenceCalls = func() []ddbCall {
	const order = `"TableName":"eq","Key":{"id":{"S":"order-1"}}`
	const claim = `"UpdateExpression":"SET #s = :generating, gen_lease_until = :until, gen_lease = :wid, attempts = if_not_exists(attempts, :zero) + :one, updated_at = :now, job_enqueued_at = if_not_exists(job_enqueued_at, :now) REMOVE job_lease_until, job_lease",` +
		`"ConditionExpression":"attribute_exists(id) AND attribute_not_exists(verdict) AND (#s = :paid OR (#s = :generating AND (attribute_not_exists(gen_lease_until) OR gen_lease_until < :nowms)))",` +
		`"ExpressionAttributeNames":{"#s":"status"}`
	claimValues := func(wid string) string {
		return `"ExpressionAttributeValues":{":generating":{"S":"generating"},":paid":{"S":"paid"},":until":{"N":"1764669700000"},":nowms":{"N":"1764669600000"},":zero":{"N":"0"},":one":{"N":"1"},":now":{"S":"2026-12-02T10:15:00.123Z"},":wid":{"S":"` + wid + `"}}`
	}
	item := `{"id":{"S":"order-1"},"status":{"S":"paid"},"email_hash":{"S":"abc"},"amount":{"N":"1900"},"paid":{"BOOL":true},"gone":{"NULL":true},` +
		`"tags":{"SS":["a","b"]},"scores":{"NS":["1","2.5"]},"blob":{"B":"aGVsbG8="},"blobs":{"BS":["aGk=","eW8="]},` +
		`"meta":{"M":{"k":{"S":"v"},"n":{"N":"3"},"deep":{"M":{"l":{"L":[{"S":"x"},{"N":"1"},{"M":{"z":{"BOOL":false}}}]}}}}},` +
		`"list":{"L":[{"S":"one"},{"L":[{"N":"2"}]},{"NULL":true},{"SS":["s"]}]},"job_lease_until":{"N":"1764669500000"},"job_lease":{"S":"w0"}}`
	plain := `{"id":{"S":"order-2"},"status":{"S":"paid"},"note":{"S":"plain"},"n":{"N":"7"}}`
	var calls []ddbCall
	add := func(name, action, body string) { calls = append(calls, ddbCall{name, action, body}) }
	add("put an order of every kind of value", "PutItem", `{"TableName":"eq","Item":`+item+`}`)
	add("put a plain order", "PutItem", `{"TableName":"eq","Item":`+plain+`,"ReturnValues":"ALL_OLD","ReturnConsumedCapacity":"TOTAL"}`)
	add("put over it, ALL_OLD", "PutItem", `{"TableName":"eq","Item":`+plain+`,"ReturnValues":"ALL_OLD"}`)
	add("get every kind of value", "GetItem", `{`+order+`,"ConsistentRead":true}`)
	add("get with a projection", "GetItem", `{`+order+`,"ProjectionExpression":"meta.deep, #s, tags","ExpressionAttributeNames":{"#s":"status"},"ReturnConsumedCapacity":"TOTAL"}`)
	add("get a missing item", "GetItem", `{"TableName":"eq","Key":{"id":{"S":"nobody"}}}`)
	add("claim, ALL_NEW", "UpdateItem", `{`+order+`,`+claim+`,`+claimValues("w1")+`,"ReturnValues":"ALL_NEW"}`)
	add("claim again: condition fails, ALL_OLD on failure", "UpdateItem", `{`+order+`,`+claim+`,`+claimValues("w2")+`,"ReturnValues":"ALL_NEW","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`)
	add("claim again: condition fails, nothing returned", "UpdateItem", `{`+order+`,`+claim+`,`+claimValues("w3")+`,"ReturnValues":"ALL_NEW"}`)
	add("claim the plain order, ALL_NEW", "UpdateItem", `{"TableName":"eq","Key":{"id":{"S":"order-2"}},`+claim+`,`+claimValues("w4")+`,"ReturnValues":"ALL_NEW","ReturnConsumedCapacity":"TOTAL"}`)
	add("claim a missing order: condition fails", "UpdateItem", `{"TableName":"eq","Key":{"id":{"S":"nobody"}},`+claim+`,`+claimValues("w5")+`,"ReturnValues":"ALL_NEW","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`)
	for _, rv := range []string{"ALL_OLD", "UPDATED_NEW", "UPDATED_OLD", "NONE", "ALL_NEW"} {
		add("store, "+rv, "UpdateItem", `{`+order+`,"UpdateExpression":"SET verdict = :v, meta.k = :k, list[1] = :l, scores = :ns ADD attempts :one REMOVE gone","ConditionExpression":"gen_lease = :lease AND attribute_not_exists(verdict)",`+
			`"ExpressionAttributeValues":{":v":{"S":"yes"},":k":{"M":{"x":{"L":[{"S":"y"}]}}},":l":{"BOOL":true},":ns":{"NS":["4"]},":one":{"N":"1"},":lease":{"S":"w1"}},"ReturnValues":"`+rv+`"}`)
		add("unset the verdict, "+rv, "UpdateItem", `{`+order+`,"UpdateExpression":"REMOVE verdict SET blob = :b","ExpressionAttributeValues":{":b":{"B":"d29ybGQ="}},"ReturnValues":"`+rv+`"}`)
	}
	add("update a missing item: made, ALL_NEW", "UpdateItem", `{"TableName":"eq","Key":{"id":{"S":"order-3"}},"UpdateExpression":"SET #s = :s","ExpressionAttributeNames":{"#s":"status"},"ExpressionAttributeValues":{":s":{"S":"paid"}},"ReturnValues":"ALL_NEW"}`)
	add("update a missing item: made, ALL_OLD", "UpdateItem", `{"TableName":"eq","Key":{"id":{"S":"order-4"}},"UpdateExpression":"SET #s = :s","ExpressionAttributeNames":{"#s":"status"},"ExpressionAttributeValues":{":s":{"S":"paid"}},"ReturnValues":"ALL_OLD"}`)
	add("refused: two SET clauses", "UpdateItem", `{`+order+`,"UpdateExpression":"SET a = :x SET b = :x","ExpressionAttributeValues":{":x":{"S":"x"}}}`)
	add("refused: two SET clauses again", "UpdateItem", `{`+order+`,"UpdateExpression":"SET a = :x SET b = :x","ExpressionAttributeValues":{":x":{"S":"x"}}}`)
	add("refused: a path set twice", "UpdateItem", `{`+order+`,"UpdateExpression":"SET a = :x, a = :y","ExpressionAttributeValues":{":x":{"S":"x"},":y":{"S":"y"}}}`)
	add("refused: overlapping paths", "UpdateItem", `{`+order+`,"UpdateExpression":"SET meta = :x, meta.k = :y","ExpressionAttributeValues":{":x":{"S":"x"},":y":{"S":"y"}}}`)
	add("refused: a name set twice through placeholders", "UpdateItem", `{`+order+`,"UpdateExpression":"SET #a = :x, #b = :y","ExpressionAttributeNames":{"#a":"same","#b":"same"},"ExpressionAttributeValues":{":x":{"S":"x"},":y":{"S":"y"}}}`)
	add("accepted: two names through placeholders", "UpdateItem", `{`+order+`,"UpdateExpression":"SET #a = :x, #b = :y","ExpressionAttributeNames":{"#a":"one","#b":"two"},"ExpressionAttributeValues":{":x":{"S":"x"},":y":{"S":"y"}},"ReturnValues":"UPDATED_NEW"}`)
	add("refused: the same names again, after other names passed", "UpdateItem", `{`+order+`,"UpdateExpression":"SET #a = :x, #b = :y","ExpressionAttributeNames":{"#a":"same","#b":"same"},"ExpressionAttributeValues":{":x":{"S":"x"},":y":{"S":"y"}}}`)
	add("refused: a name placeholder not used", "UpdateItem", `{`+order+`,"UpdateExpression":"SET a = :x","ExpressionAttributeNames":{"#unused":"u"},"ExpressionAttributeValues":{":x":{"S":"x"}}}`)
	add("refused: a value placeholder missing", "UpdateItem", `{`+order+`,"UpdateExpression":"SET a = :missing","ExpressionAttributeValues":{":x":{"S":"x"}}}`)
	add("refused: a value placeholder missing from the condition", "UpdateItem", `{`+order+`,"UpdateExpression":"SET a = :x","ConditionExpression":"a = :nope","ExpressionAttributeValues":{":x":{"S":"x"}}}`)
	add("refused: the key updated", "UpdateItem", `{`+order+`,"UpdateExpression":"SET id = :x","ExpressionAttributeValues":{":x":{"S":"x"}}}`)
	add("refused: the expression does not parse", "UpdateItem", `{`+order+`,"UpdateExpression":"SET = :x","ExpressionAttributeValues":{":x":{"S":"x"}}}`)
	add("refused: the condition does not parse", "UpdateItem", `{`+order+`,"UpdateExpression":"SET a = :x","ConditionExpression":"a = = :x","ExpressionAttributeValues":{":x":{"S":"x"}}}`)
	add("refused: unknown ReturnValues", "UpdateItem", `{`+order+`,"UpdateExpression":"SET a = :x","ExpressionAttributeValues":{":x":{"S":"x"}},"ReturnValues":"SOME"}`)
	add("refused: adding to a string", "UpdateItem", `{`+order+`,"UpdateExpression":"ADD email_hash :one","ExpressionAttributeValues":{":one":{"N":"1"}}}`)
	add("refused: a missing table", "UpdateItem", `{"TableName":"nope","Key":{"id":{"S":"x"}},"UpdateExpression":"SET a = :x","ExpressionAttributeValues":{":x":{"S":"x"}}}`)
	add("refused: an action DynamoDB does not have", "DescribeNothing", `{"TableName":"eq"}`)
	add("query an order", "Query", `{"TableName":"eq","KeyConditionExpression":"id = :id","ExpressionAttributeValues":{":id":{"S":"order-1"}}}`)
	add("scan every order", "Scan", `{"TableName":"eq","ConsistentRead":true}`)
	add("delete an order, ALL_OLD", "DeleteItem", `{`+order+`,"ReturnValues":"ALL_OLD","ConditionExpression":"attribute_exists(id)"}`)
	add("delete it again: condition fails", "DeleteItem", `{`+order+`,"ReturnValues":"ALL_OLD","ConditionExpression":"attribute_exists(id)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`)
	return calls
}()

// serve.py's shortcuts (the update expressions' trees kept, the attribute
// values serialized directly) answer every request of the table exactly as
// moto's own code does: the same status, error type and body, byte for
// byte. One server runs with the shortcuts, one without (ORACLE_MOTO_PLAIN),
// and both are sent the same requests in the same order.
func TestShortcutsAnswerAsMotoDoes(t *testing.T) {
	ctx := context.Background()
	servers := map[string]*Server{}
	// One hash seed for both: moto lists a projected string set in its
	// set's order, which the seed decides.
	for name, env := range map[string][]string{"patched": {"PYTHONHASHSEED=0"}, "plain": {"PYTHONHASHSEED=0", "ORACLE_MOTO_PLAIN=1"}} {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		s, err := startProcess(ctx, port, env...)
		if err != nil {
			t.Fatalf("start the %s server: %v", name, err)
		}
		t.Cleanup(s.Stop)
		servers[name] = s
	}
	create := `{"TableName":"eq","KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],"AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"}],"BillingMode":"PAY_PER_REQUEST"}`
	for name, s := range servers {
		if r := ddb(t, s.Endpoint, "CreateTable", create); r.status != http.StatusOK {
			t.Fatalf("create the table on the %s server: %d %s", name, r.status, r.body)
		}
	}
	refused := 0
	for i, c := range equivalenceCalls {
		got := ddb(t, servers["patched"].Endpoint, c.action, c.body)
		want := ddb(t, servers["plain"].Endpoint, c.action, c.body)
		if got.status != want.status || got.errorType != want.errorType || !bytes.Equal(got.body, want.body) {
			t.Errorf("%d %s (%s):\npatched: %d %s %s\nmoto:    %d %s %s", i, c.name, c.action, got.status, got.errorType, got.body, want.status, want.errorType, want.body)
		}
		if want.status != http.StatusOK {
			refused++
		}
		if strings.HasPrefix(c.name, "refused") && want.status == http.StatusOK {
			t.Errorf("%d %s: moto accepted it: %s", i, c.name, want.body)
		}
	}
	// The table exercises both sides of the conditions and the errors, not
	// only answers that pass.
	if refused < 15 {
		t.Errorf("moto refused %d requests of the table; it should refuse at least 15", refused)
	}
}

type ddbAnswer struct {
	status    int
	errorType string
	body      []byte
}

// ddb sends a DynamoDB request as the SDK does (moto reads the service and
// region from the signature's scope and does not check the signature).
func ddb(t *testing.T, endpoint, action, body string) ddbAnswer {
	t.Helper()
	if !json.Valid([]byte(body)) {
		t.Fatalf("%s: the test's body is not JSON: %s", action, body)
	}
	req, err := http.NewRequest(http.MethodPost, endpoint+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+action)
	req.Header.Set("X-Amz-Date", "20261202T101500Z")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20261202/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", action, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: read the answer: %v", action, err)
	}
	return ddbAnswer{status: resp.StatusCode, errorType: resp.Header.Get("X-Amzn-Errortype"), body: b}
}
