package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Meter stands between the functions and moto and counts the requests
// they make, by service and operation, as AWS bills them: what a verdict
// costs is read from these counts (infra/cost). It sees only the
// functions' own requests, not the stack's or the tests'.
type Meter struct {
	proxy *httputil.ReverseProxy

	mu  sync.Mutex
	ops map[string]*Requests
	// writes are the DynamoDB items written, by table and key, so that
	// their size can be read at the end (an update's cost is the whole
	// item's, which its request does not show).
	writes map[itemKey]int
	// puts are the write units of PutItem requests, sized from the item
	// the request carries.
	puts float64
}

// Requests are the requests of one operation.
type Requests struct {
	Count int64 `json:"count"`
	// RequestBytes and ResponseBytes are the bodies' sizes: SQS bills
	// each 64 KB of a request as one request.
	RequestBytes  int64 `json:"request_bytes"`
	ResponseBytes int64 `json:"response_bytes"`
	// Seconds is the time the requests took, all together: where a slow
	// run waits.
	Seconds float64 `json:"seconds"`
	// SQSChunks are the billed SQS requests: one per started 64 KB of
	// request body.
	SQSChunks int64 `json:"sqs_chunks,omitempty"`
	// ReadUnits are the DynamoDB read request units, estimated from the
	// response's size (1 per started 4 KB per item read; the JSON of the
	// wire overstates an item, so this is an upper bound).
	ReadUnits float64 `json:"read_units,omitempty"`
}

type itemKey struct{ table, key string }

// Usage is what the meter counted.
type Usage struct {
	// Operations by "service.Operation", e.g. "dynamodb.GetItem",
	// "sqs.SendMessage", "s3.PutObject", "sns.Publish".
	Operations map[string]Requests `json:"operations"`
	// WriteUnits are the DynamoDB write request units: each PutItem sized
	// from its item, each UpdateItem and DeleteItem from the size of its
	// item at the end of the run (1 KB units, at least 1), an upper bound
	// for an item that grew over its life.
	WriteUnits float64 `json:"write_units"`
}

// startMeter puts a meter in front of moto at endpoint.
func (s *Stack) startMeter(endpoint string) (string, error) {
	target, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("meter: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("meter: listen: %w", err)
	}
	m := &Meter{ops: map[string]*Requests{}, writes: map[itemKey]int{}}
	m.proxy = httputil.NewSingleHostReverseProxy(target)
	// Long polls and streamed objects pass through as they come.
	m.proxy.FlushInterval = -1
	s.meter = m
	s.serve(ln, m)
	return "http://" + ln.Addr().String(), nil
}

// Meter returns the stack's meter, nil unless Options.MeterAWS.
func (s *Stack) Meter() *Meter { return s.meter }

var credentialScope = regexp.MustCompile(`Credential=[^/]+/[0-9]+/[^/]+/([a-z0-9-]+)/aws4_request`)

func (m *Meter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	service := "unknown"
	if sc := credentialScope.FindStringSubmatch(r.Header.Get("Authorization")); sc != nil {
		service = sc[1]
	}
	var body []byte
	op := ""
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		op = target[strings.LastIndexByte(target, '.')+1:]
	}
	// The query protocol (SNS) names its action in the form, and DynamoDB
	// writes are sized from their bodies: read those bodies (small) and
	// hand them on.
	form := strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded")
	if service == "dynamodb" || form {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if form {
			if v, err := url.ParseQuery(string(body)); err == nil {
				op = v.Get("Action")
			}
		}
	}
	if service == "s3" {
		op = s3Operation(r)
	}
	if op == "" {
		op = r.Method
	}
	in := &countingReader{r: r.Body}
	r.Body = in
	cw := &countingWriter{ResponseWriter: w}
	start := time.Now()
	m.proxy.ServeHTTP(cw, r)
	m.record(service, op, in.n.Load(), cw.n, time.Since(start), body)
}

// s3Operation names an S3 REST request by its method and target.
func s3Operation(r *http.Request) string {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
	object := len(parts) == 2 && parts[1] != ""
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPut && object:
		return "PutObject"
	case r.Method == http.MethodGet && object:
		return "GetObject"
	case r.Method == http.MethodHead && object:
		return "HeadObject"
	case r.Method == http.MethodDelete && object:
		return "DeleteObject"
	case r.Method == http.MethodGet && q.Has("list-type"):
		return "ListObjectsV2"
	}
	return r.Method + "Bucket"
}

func (m *Meter) record(service, op string, in, out int64, took time.Duration, body []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := service + "." + op
	c := m.ops[name]
	if c == nil {
		c = &Requests{}
		m.ops[name] = c
	}
	c.Count++
	c.RequestBytes += in
	c.ResponseBytes += out
	c.Seconds += took.Seconds()
	if service == "sqs" {
		c.SQSChunks += sqsChunks(in)
	}
	if service != "dynamodb" {
		return
	}
	switch op {
	case "GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems":
		c.ReadUnits += readUnits(out)
	case "PutItem", "UpdateItem", "DeleteItem":
		var req struct {
			TableName string
			Key, Item map[string]json.RawMessage
		}
		if json.Unmarshal(body, &req) != nil {
			return
		}
		if op == "PutItem" {
			if item, err := wireItem(req.Item); err == nil {
				m.puts += writeUnits(itemSize(item))
			}
			return
		}
		k, _ := json.Marshal(req.Key)
		m.writes[itemKey{req.TableName, string(k)}]++
	}
}

// Usage returns the counts; the write units of updates and deletes are
// read from the items as they are now (aws reaches moto directly).
func (m *Meter) Usage(ctx context.Context, cfg aws.Config) (Usage, error) {
	m.mu.Lock()
	u := Usage{Operations: make(map[string]Requests, len(m.ops)), WriteUnits: m.puts}
	for k, v := range m.ops {
		u.Operations[k] = *v
	}
	writes := make(map[itemKey]int, len(m.writes))
	for k, v := range m.writes {
		writes[k] = v
	}
	m.mu.Unlock()
	keys := make([]itemKey, 0, len(writes))
	for k := range writes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].table+keys[i].key < keys[j].table+keys[j].key })
	db := dynamodb.NewFromConfig(cfg)
	for _, k := range keys {
		key, err := wireKey(k.key)
		if err != nil {
			return u, fmt.Errorf("meter: key %s: %w", k.key, err)
		}
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(k.table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return u, fmt.Errorf("meter: read %s: %w", k.table, err)
		}
		size := 0
		if out.Item != nil {
			size = itemSize(out.Item)
		}
		u.WriteUnits += float64(writes[k]) * writeUnits(size)
	}
	return u, nil
}

// Reset forgets everything counted so far, so a run can meter one phase.
func (m *Meter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops, m.writes, m.puts = map[string]*Requests{}, map[itemKey]int{}, 0
}

// sqsChunks is the billed requests of an SQS request of n bytes: one per
// started 64 KB.
func sqsChunks(n int64) int64 { return max(1, (n+65535)/65536) }

// readUnits is a strongly consistent read's units for n bytes read.
func readUnits(n int64) float64 { return float64(max(1, (n+4095)/4096)) }

// writeUnits is a write's units for an item of n bytes.
func writeUnits(n int) float64 { return float64(max(1, (n+1023)/1024)) }

// wireKey reads a key as the proxy kept it, in DynamoDB's JSON wire format.
func wireKey(s string) (map[string]ddbtypes.AttributeValue, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, err
	}
	return wireItem(raw)
}

// wireItem reads an item or a key in DynamoDB's JSON wire format
// ({"pk":{"S":"x"}}) into the SDK's attribute values, so that one size rule
// serves what the functions wrote and what the meter reads back.
func wireItem(item map[string]json.RawMessage) (map[string]ddbtypes.AttributeValue, error) {
	out := make(map[string]ddbtypes.AttributeValue, len(item))
	for name, raw := range item {
		v, err := wireValue(raw)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

func wireValue(raw json.RawMessage) (ddbtypes.AttributeValue, error) {
	var v struct {
		S, N       *string
		B          []byte // base64 on the wire, as encoding/json reads []byte
		BOOL, NULL *bool
		M          map[string]json.RawMessage
		L          []json.RawMessage
		SS, NS     []string
		BS         [][]byte
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	switch {
	case v.S != nil:
		return &ddbtypes.AttributeValueMemberS{Value: *v.S}, nil
	case v.N != nil:
		return &ddbtypes.AttributeValueMemberN{Value: *v.N}, nil
	case v.B != nil:
		return &ddbtypes.AttributeValueMemberB{Value: v.B}, nil
	case v.BOOL != nil:
		return &ddbtypes.AttributeValueMemberBOOL{Value: *v.BOOL}, nil
	case v.NULL != nil:
		return &ddbtypes.AttributeValueMemberNULL{Value: *v.NULL}, nil
	case v.M != nil:
		m, err := wireItem(v.M)
		return &ddbtypes.AttributeValueMemberM{Value: m}, err
	case v.L != nil:
		l := make([]ddbtypes.AttributeValue, len(v.L))
		for i, e := range v.L {
			var err error
			if l[i], err = wireValue(e); err != nil {
				return nil, err
			}
		}
		return &ddbtypes.AttributeValueMemberL{Value: l}, nil
	case v.SS != nil:
		return &ddbtypes.AttributeValueMemberSS{Value: v.SS}, nil
	case v.NS != nil:
		return &ddbtypes.AttributeValueMemberNS{Value: v.NS}, nil
	case v.BS != nil:
		return &ddbtypes.AttributeValueMemberBS{Value: v.BS}, nil
	}
	return nil, fmt.Errorf("no attribute type in %.40s", raw)
}

// itemSize is an item's size by DynamoDB's rules: each attribute's name and
// value.
func itemSize(item map[string]ddbtypes.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + attributeValueSize(v)
	}
	return n
}

func attributeValueSize(v ddbtypes.AttributeValue) int {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return len(v.Value)
	case *ddbtypes.AttributeValueMemberN:
		return numberSize(v.Value)
	case *ddbtypes.AttributeValueMemberB:
		return len(v.Value)
	case *ddbtypes.AttributeValueMemberM:
		return 3 + itemSize(v.Value)
	case *ddbtypes.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + attributeValueSize(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberNS:
		n := 0
		for _, e := range v.Value {
			n += numberSize(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberBS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	}
	return 1 // BOOL, NULL
}

// numberSize is a number's size: about one byte per two significant
// digits, plus one.
func numberSize(s string) int {
	digits := strings.TrimLeft(strings.NewReplacer("-", "", ".", "").Replace(s), "0")
	return (len(digits)+1)/2 + 1
}

// countingReader counts a request body as the proxy's transport reads it,
// on a goroutine of its own.
type countingReader struct {
	r io.ReadCloser
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// Flush passes flushes on, so long polls are not held back.
func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
