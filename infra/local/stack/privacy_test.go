package stack_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/oracle"
)

// The suite's privacy sweep: once every end-to-end test has run, every
// DynamoDB item, every S3 object and every log line of every stack the
// suite started is searched for every email address and query text the
// suite used, and every order for the keyed hash of every address (an
// order holds the query, so nothing may tie it to the customer:
// PRODUCT_TIERS INV-5); and every function's log line for a whole order
// id (a session id or an agent order's id opens the result page: a line
// names an order by its name alone). What keeps a customer's words by
// design is left out, and named in the sweep's report: the order's own query and verdict
// (the page reads them there), and the one place in each of three buckets
// that keeps raw payloads (payloadPlaces); everything else in those
// buckets is searched like the rest.

// minSecret is the shortest query worth searching for: shorter ones ("q")
// are everywhere.
const minSecret = 12

// suiteData is what the suite used: the addresses and queries, the log of
// each stack, and the prefix of each stack's resources.
type suiteData struct {
	mu        sync.Mutex
	addresses []string
	queries   []string
	logs      []*testkit.Buffer
	prefixes  []string
	endpoint  string
}

var used suiteData

// address records an address the suite gave a customer.
func (d *suiteData) address(a string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addresses = append(d.addresses, a)
}

// query records a query the suite paid for.
func (d *suiteData) query(q string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(q) >= minSecret {
		d.queries = append(d.queries, q)
	}
}

// stack records a stack's prefix, log and moto server.
func (d *suiteData) stack(prefix, endpoint string, log *testkit.Buffer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prefixes = append(d.prefixes, prefix)
	d.logs = append(d.logs, log)
	d.endpoint = endpoint
}

// payloadPlaces are where a bucket keeps raw payloads by design: the
// bucket (by logical id, lower-cased as bucket names are) and the key
// prefix its writers use. The rest of each bucket is searched.
var payloadPlaces = []struct{ bucket, prefix, what string }{
	{"quarantinebucket", "quarantine/", "what the content filter stopped, for the operator's review"},
	{"inboxbucket", "inbound/", "the messages to the support address, as received"},
	{"evidencebucket", "disputes/", "each dispute's evidence bundle, for Stripe"},
}

// exemptAttributes of an order are where the service keeps the query.
var exemptAttributes = []string{"query", "verdict"}

// chatPlaces are where ChatTable keeps a person's words by design: one
// attribute of one kind of item (by its sort key, or the sort key's
// prefix when it ends in "#"), holding one kind of secret.
var chatPlaces = []struct{ sk, attr, what string }{
	{"account", "email", "each Sisters Chat account's address, its only copy (sign-in links, billing notices)"},
	{"msg#", "text", "each Sisters Chat message and reply, until its retention"},
}

// chatPlace is the attribute of a ChatTable item that keeps words by
// design, or "" for an item that keeps none.
func chatPlace(item map[string]ddbtypes.AttributeValue) string {
	sk, _ := item["sk"].(*ddbtypes.AttributeValueMemberS)
	if sk == nil {
		return ""
	}
	for _, p := range chatPlaces {
		if sk.Value == p.sk || strings.HasSuffix(p.sk, "#") && strings.HasPrefix(sk.Value, p.sk) {
			return p.attr
		}
	}
	return ""
}

// sessionCookie is the shape of a chat session cookie's value (the
// account, its issue time in milliseconds, and their HMAC): a bearer
// credential, which no item, object or log line may hold.
var sessionCookie = regexp.MustCompile(`hmac-sha256:[0-9a-f]{32}\.[0-9]+\.[A-Za-z0-9_-]{43}`)

// byDesign says what the sweep leaves out, for its report.
func byDesign() string {
	parts := []string{"each order's " + strings.Join(exemptAttributes, " and ")}
	for _, p := range payloadPlaces {
		parts = append(parts, fmt.Sprintf("%s/%s (%s)", p.bucket, p.prefix, p.what))
	}
	for _, p := range chatPlaces {
		parts = append(parts, fmt.Sprintf("chattable %s items' %s (%s)", p.sk, p.attr, p.what))
	}
	return strings.Join(parts, "; ")
}

// payloadPlace reports whether key in bucket is a place that keeps raw
// payloads by design.
func payloadPlace(bucket, key string) bool {
	return slices.ContainsFunc(payloadPlaces, func(p struct{ bucket, prefix, what string }) bool {
		return strings.HasSuffix(bucket, p.bucket) && strings.HasPrefix(key, p.prefix)
	})
}

// sweep searches every table and bucket on endpoint whose name starts with
// one of prefixes, and every log, for every secret, and every order for
// every one of linked (the addresses' keyed hashes, which the Ledger and
// the audit log may hold but an order, beside its query, may not); it
// returns where each was found, and how many items, objects and lines it
// read.
func sweep(ctx context.Context, endpoint string, prefixes []string, logs []string, secrets, linked []string) (found []string, read int, err error) {
	cfg := awsenv.ForEndpoint(endpoint, provision.TestRegion)
	ours := func(name string) bool {
		return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(strings.ToLower(name), strings.ToLower(p)) })
	}
	find := func(where, text string, also ...string) {
		read++
		for _, s := range append(also, secrets...) {
			if strings.Contains(text, s) || strings.Contains(strings.ToLower(text), strings.ToLower(s)) {
				found = append(found, fmt.Sprintf("%s holds %.40q", where, s))
			}
		}
		if c := sessionCookie.FindString(text); c != "" {
			found = append(found, fmt.Sprintf("%s holds a chat session cookie (%.24s…)", where, c))
		}
	}
	db := dynamodb.NewFromConfig(cfg)
	tables := dynamodb.NewListTablesPaginator(db, &dynamodb.ListTablesInput{})
	for tables.HasMorePages() {
		page, err := tables.NextPage(ctx)
		if err != nil {
			return nil, read, fmt.Errorf("list tables: %w", err)
		}
		for _, table := range page.TableNames {
			if !ours(table) {
				continue
			}
			items := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table)})
			for items.HasMorePages() {
				p, err := items.NextPage(ctx)
				if err != nil {
					return nil, read, fmt.Errorf("scan %s: %w", table, err)
				}
				for _, item := range p.Items {
					if strings.HasSuffix(table, "OrdersTable") {
						find("an item of "+table, itemText(without(item, exemptAttributes)), linked...)
						continue
					}
					if strings.HasSuffix(table, "ChatTable") {
						// chatFinds checks what these places may hold.
						find("an item of "+table, itemText(without(item, []string{chatPlace(item)})))
						continue
					}
					find("an item of "+table, itemText(item))
				}
			}
		}
	}
	s3c := awsenv.S3(cfg)
	buckets, err := s3c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		return nil, read, fmt.Errorf("list buckets: %w", err)
	}
	for _, b := range buckets.Buckets {
		name := aws.ToString(b.Name)
		if !ours(name) {
			continue
		}
		objects := s3.NewListObjectsV2Paginator(s3c, &s3.ListObjectsV2Input{Bucket: b.Name})
		for objects.HasMorePages() {
			page, err := objects.NextPage(ctx)
			if err != nil {
				return nil, read, fmt.Errorf("list %s: %w", name, err)
			}
			for _, o := range page.Contents {
				if payloadPlace(name, aws.ToString(o.Key)) {
					continue
				}
				out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: b.Name, Key: o.Key})
				if err != nil {
					return nil, read, fmt.Errorf("read s3://%s/%s: %w", name, aws.ToString(o.Key), err)
				}
				body, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil {
					return nil, read, err
				}
				find("s3://"+name+"/"+aws.ToString(o.Key), string(body)+" "+aws.ToString(o.Key))
			}
		}
	}
	for i, log := range logs {
		for _, line := range strings.Split(log, "\n") {
			// The fake Stripe and the fake Gemini are the customer's bank
			// and Google: their lines are theirs, not the functions'.
			if strings.HasPrefix(line, "[stripe]") || strings.HasPrefix(line, "[gemini]") {
				continue
			}
			where := fmt.Sprintf("a line of stack log %d (%.80s)", i, oracle.NameIDs(line))
			find(where, line)
			if id := wholeOrderID(line); id != "" {
				found = append(found, fmt.Sprintf("%s holds the whole id of order %s", where, oracle.ShortID(id)))
			}
		}
	}
	return found, read, nil
}

// functionPrefix starts a line a function wrote, as the stack captures it.
var functionPrefix = regexp.MustCompile(`^\[[A-Za-z0-9]+Function#[0-9]+\] `)

// orderID is an order's whole id: its mode prefix and more random
// characters than its name (oracle.ShortID) keeps.
var orderID = regexp.MustCompile(`(?:cs_(?:live|test)_|x402_(?:live|test)_)[A-Za-z0-9]{17,}`)

// wholeOrderID is the whole order id a function's line holds, or "": a
// whole id opens the customer's result page, so the functions name an
// order by its name alone (issue 38, finding 10).
func wholeOrderID(line string) string {
	if !functionPrefix.MatchString(line) {
		return ""
	}
	return orderID.FindString(line)
}

// without is item less the attributes names.
func without(item map[string]ddbtypes.AttributeValue, names []string) map[string]ddbtypes.AttributeValue {
	out := make(map[string]ddbtypes.AttributeValue, len(item))
	for k, v := range item {
		if !slices.Contains(names, k) {
			out[k] = v
		}
	}
	return out
}

// itemText is an item as text, its string values decoded.
func itemText(item map[string]ddbtypes.AttributeValue) string {
	var m map[string]any
	if err := attributevalue.UnmarshalMap(item, &m); err != nil {
		return fmt.Sprintf("%#v", item)
	}
	b, _ := json.Marshal(m)
	// json.Marshal escapes <, > and &; the secrets hold none that matter.
	return string(b)
}

// sweepSuite is TestMain's last step: it reports every find and fails the
// suite when there is one.
func sweepSuite() int {
	used.mu.Lock()
	defer used.mu.Unlock()
	if used.endpoint == "" || len(used.prefixes) == 0 {
		return 0 // no stack was started (a -run that chose none)
	}
	var logs []string
	for _, b := range used.logs {
		logs = append(logs, b.String())
	}
	secrets := append(append([]string{}, used.addresses...), used.queries...)
	pepper := os.Getenv("ORACLE_HASH_PEPPER")
	if pepper == "" {
		pepper = stack.LocalHashPepper
	}
	h, err := audit.NewHasher(pepper)
	if err != nil {
		fmt.Fprintln(os.Stderr, "privacy sweep:", err)
		return 1
	}
	var linked []string
	for _, a := range used.addresses {
		linked = append(linked, h.Email(a))
	}
	found, read, err := sweep(context.Background(), used.endpoint, used.prefixes, logs, secrets, linked)
	if err != nil {
		fmt.Fprintln(os.Stderr, "privacy sweep:", err)
		return 1
	}
	if len(found) > 0 {
		fmt.Fprintf(os.Stderr, "privacy sweep: %d finds of customer data where none may be:\n  %s\n", len(found), strings.Join(found, "\n  "))
		return 1
	}
	fmt.Printf("privacy sweep: %d addresses (and their keyed hashes, in the orders) and %d queries searched in %d items, objects and log lines of %d stacks: none found outside their places, and no whole order id in a function's line; kept by design, not searched: %s\n",
		len(used.addresses), len(used.queries), read, len(used.prefixes), byDesign())
	return 0
}

// The sweep finds a planted address, and a planted query, wherever it is
// put: a Ledger item, an audit object, an order's attribute that is not
// its query, an object of a payload bucket outside its payload place, the
// address's keyed hash on an order, a log line; and it leaves the order's
// own query, and each payload place, alone.
func TestPrivacySweepFindsWhatIsPlanted(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	endpoint := motoserver.ForTest(t)
	// Its own prefix: the suite's sweep, which reads the end-to-end stacks'
	// prefixes only, never sees what this test plants.
	prefix, _, _ := strings.Cut(f.Ref("OrdersTable"), "OrdersTable")
	const addr, query = "planted.customer@example.com", "Should I plant a secret orchard?"
	const hashed = "hmac-sha256:0123456789abcdef0123456789abcdef" // addr's keyed hash, as far as the sweep knows
	clean, secrets, linked := []string{prefix}, []string{addr, query}, []string{hashed}
	if found, _, err := sweep(ctx, endpoint, clean, nil, secrets, linked); err != nil || len(found) != 0 {
		t.Fatalf("a fresh stack: %v %v", found, err)
	}
	db := awsenv.NewTables(f.AWS)
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Ref("OrdersTable")), Item: map[string]ddbtypes.AttributeValue{
		"session_id": &ddbtypes.AttributeValueMemberS{Value: "cs_test_planted"},
		"query":      &ddbtypes.AttributeValueMemberS{Value: query},
	}}); err != nil {
		t.Fatal(err)
	}
	s3c := awsenv.S3(f.AWS)
	put := func(bucket, key, body string) error {
		_, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(f.Ref(bucket)), Key: aws.String(key),
			ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256, Body: strings.NewReader(body)})
		return err
	}
	// Each payload place keeps a payload, and the Ledger the keyed hash.
	for _, p := range []struct{ bucket, key string }{
		{"QuarantineBucket", "quarantine/cs_test_planted/generator-1.json"},
		{"InboxBucket", "inbound/planted"},
		{"EvidenceBucket", "disputes/cs_test_planted/dp_1.json"},
	} {
		if err := put(p.bucket, p.key, "From: "+addr+"\r\n\r\n"+query); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Ref("LedgerTable")), Item: map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: "suppress#" + hashed}}}); err != nil {
		t.Fatal(err)
	}
	if found, read, err := sweep(ctx, endpoint, clean, nil, secrets, linked); err != nil || len(found) != 0 || read == 0 {
		t.Fatalf("the order's own query, a payload place or the Ledger's hash was reported, or nothing read (%d): %v %v", read, found, err)
	}
	var err error
	plants := []func(){
		func() {
			_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Ref("LedgerTable")), Item: map[string]ddbtypes.AttributeValue{
				"pk": &ddbtypes.AttributeValueMemberS{Value: "suppress#" + addr}}})
		},
		func() { err = put("AuditBucket", "records/x.json", `{"detail":"`+strings.ToUpper(addr)+`"}`) },
		// A payload bucket outside its payload place is searched.
		func() { err = put("QuarantineBucket", "notes/x.txt", "about "+query) },
		func() { err = put("InboxBucket", "replies/x.json", `{"to":"`+addr+`"}`) },
		// The address's keyed hash beside an order's query.
		func() {
			_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Ref("OrdersTable")), Item: map[string]ddbtypes.AttributeValue{
				"session_id": &ddbtypes.AttributeValueMemberS{Value: "cs_test_planted3"},
				"query":      &ddbtypes.AttributeValueMemberS{Value: query},
				"email_hash": &ddbtypes.AttributeValueMemberS{Value: hashed},
			}})
		},
		func() {
			_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Ref("OrdersTable")), Item: map[string]ddbtypes.AttributeValue{
				"session_id": &ddbtypes.AttributeValueMemberS{Value: "cs_test_planted2"},
				"drop_note":  &ddbtypes.AttributeValueMemberS{Value: "about: " + query},
			}})
		},
	}
	for i, plant := range plants {
		plant()
		if err != nil {
			t.Fatal(err)
		}
		found, _, err := sweep(ctx, endpoint, clean, nil, secrets, linked)
		if err != nil || len(found) != i+1 {
			t.Fatalf("after plant %d: %d finds %v (%v), want %d", i, len(found), found, err, i+1)
		}
	}
	found, _, err := sweep(ctx, endpoint, clean, []string{`[MailerFunction#1] {"msg":"sent to ` + addr + `"}`, "[stripe] " + addr}, []string{addr}, nil)
	if err != nil || len(found) != 4 || !strings.Contains(strings.Join(found, "\n"), "stack log 0") {
		t.Fatalf("a planted log line: %v %v", found, err)
	}
	// A function's line with a whole order id, of either kind; a fake's
	// line and a line naming the order by its name are not reported.
	const card, agent = "cs_test_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6", "x402_test_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
	lines := []string{
		`[VerdictFunction#2] {"msg":"served","order":"` + oracle.ShortID(card) + `"}`,
		"[stripe] session " + card + " completed",
		`[GeneratorFunction#1] {"msg":"stored","error":"get order ` + card + `"}`,
		`[AgentFunction#1] {"msg":"paid","url":"https://x/result/` + agent + `"}`,
	}
	found, _, err = sweep(ctx, endpoint, clean, []string{strings.Join(lines, "\n")}, nil, nil)
	if err != nil || len(found) != 2 || strings.Contains(strings.Join(found, "\n"), card) || strings.Contains(strings.Join(found, "\n"), agent) {
		t.Fatalf("the planted whole order ids: %q %v, want the two function lines, each by the order's name", found, err)
	}
}

// chatPrivacySweep checks a stack a Sisters Chat test ran on, at once, and
// adds addrs and messages to the suite's sweep (sweepSuite), which then
// searches every stack for them. Its contract:
//
//   - addrs are the addresses the test signed in with; messages the texts
//     it sent (those shorter than minSecret are not searched: they are
//     everywhere). The sign-in links are read from the stack's mailbox (every
//     email to one of addrs), so the test passes no token.
//   - An address may be only in an account item's `email` attribute in
//     ChatTable, and a message only in a message item's `text` (chatPlaces):
//     nowhere else in any table, in no S3 object (the audit log included),
//     in no log line of any function. The local mailbox is not searched, and
//     the fakes' own lines ([stripe], [gemini]) are theirs, as in sweep.
//   - No sign-in token is anywhere, those two places included: each is
//     stored as its SHA-256 only (`signin#<64 hex>`, which must be there),
//     and no item, object or line holds a session cookie's value.
//
// Call it once the test's requests are done (the stack still running, or
// closed: it reads moto and the log); it reports each find with t.Errorf.
func chatPrivacySweep(t *testing.T, s *stack.Stack, o stack.Options, addrs, messages []string) {
	t.Helper()
	for _, a := range addrs {
		used.address(a)
	}
	for _, m := range messages {
		used.query(m)
	}
	ctx := context.Background()
	tokens, err := signInTokens(ctx, o.MotoEndpoint, addrs)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := o.Log.(*testkit.Buffer)
	if log == nil {
		t.Fatal("the stack's log is not kept (options gives a testkit.Buffer)")
	}
	found, read, err := chatFinds(ctx, o.MotoEndpoint, o.Prefix, log.String(), addrs, messages, tokens)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("chat privacy sweep: %s", f)
	}
	testkit.AuditRecords(t, awsenv.S3(s.AWS), s.Resources.Ref("AuditBucket")) // fails on any address
	t.Logf("chat privacy sweep: %d addresses, %d messages and %d sign-in tokens searched in %d items, objects and log lines", len(addrs), len(messages), len(tokens), read)
}

// signInTokenOf finds a sign-in link's token in an email.
var signInTokenOf = regexp.MustCompile(`/chat/signin\?token=([A-Za-z0-9_-]{20,})`)

// signInTokens are the tokens of every sign-in link emailed to addrs
// through the moto server at endpoint.
func signInTokens(ctx context.Context, endpoint string, addrs []string) ([]string, error) {
	sent, err := motoserver.Mailbox{}.Sent(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("read the mailbox: %w", err)
	}
	var tokens []string
	for _, m := range sent {
		if !slices.ContainsFunc(m.To, func(to string) bool {
			return slices.ContainsFunc(addrs, func(a string) bool { return strings.EqualFold(a, to) })
		}) {
			continue
		}
		for _, l := range signInTokenOf.FindAllStringSubmatch(m.Text+"\n"+m.HTML, -1) {
			if !slices.Contains(tokens, l[1]) {
				tokens = append(tokens, l[1])
			}
		}
	}
	return tokens, nil
}

// signInItem is how ChatTable names a sign-in token: by its SHA-256.
var signInItem = regexp.MustCompile(`^signin#[0-9a-f]{64}$`)

// signInIndex is the partition that lists an account's tokens, each item's
// sort key a token item's key (signInItem).
var signInIndex = regexp.MustCompile(`^signin#acct#hmac-sha256:[0-9a-f]{32}$`)

// chatFinds is chatPrivacySweep's search of the stack whose resources
// start with prefix on the moto server at endpoint, and of its log: sweep,
// for addrs, messages and tokens everywhere but chatPlaces, then each
// chat place for what it may not hold, and the sign-in items' names.
func chatFinds(ctx context.Context, endpoint, prefix, log string, addrs, messages, tokens []string) (found []string, read int, err error) {
	messages = slices.DeleteFunc(slices.Clone(messages), func(m string) bool { return len(m) < minSecret })
	secrets := slices.Concat(addrs, messages, tokens)
	found, read, err = sweep(ctx, endpoint, []string{prefix}, []string{log}, secrets, nil)
	if err != nil {
		return nil, read, err
	}
	// What each place may not hold: an account's address no message, a
	// message no address; neither a token.
	notIn := map[string][]string{"email": slices.Concat(messages, tokens), "text": slices.Concat(addrs, tokens)}
	db := dynamodb.NewFromConfig(awsenv.ForEndpoint(endpoint, provision.TestRegion))
	// The suite's moto holds every stack's tables: more than one page.
	var names []string
	tables := dynamodb.NewListTablesPaginator(db, &dynamodb.ListTablesInput{})
	for tables.HasMorePages() {
		page, err := tables.NextPage(ctx)
		if err != nil {
			return nil, read, fmt.Errorf("list tables: %w", err)
		}
		names = append(names, page.TableNames...)
	}
	stored := map[string]bool{}
	for _, table := range names {
		if !strings.HasPrefix(strings.ToLower(table), strings.ToLower(prefix)) || !strings.HasSuffix(table, "ChatTable") {
			continue
		}
		items := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table)})
		for items.HasMorePages() {
			page, err := items.NextPage(ctx)
			if err != nil {
				return nil, read, fmt.Errorf("scan %s: %w", table, err)
			}
			for _, item := range page.Items {
				pk, _ := item["pk"].(*ddbtypes.AttributeValueMemberS)
				sk, _ := item["sk"].(*ddbtypes.AttributeValueMemberS)
				switch {
				case pk != nil && sk != nil && signInIndex.MatchString(pk.Value):
					if !signInItem.MatchString(sk.Value) {
						found = append(found, fmt.Sprintf("a sign-in index item of %s does not name a token by its SHA-256: %.60q", table, sk.Value))
					}
				case pk != nil && strings.HasPrefix(pk.Value, "signin#"):
					stored[pk.Value] = true
					if !signInItem.MatchString(pk.Value) {
						found = append(found, fmt.Sprintf("a sign-in item of %s is not named by a token's SHA-256: %.60q", table, pk.Value))
					}
				}
				place := chatPlace(item)
				v, _ := item[place].(*ddbtypes.AttributeValueMemberS)
				if v == nil {
					continue
				}
				for _, secret := range notIn[place] {
					if strings.Contains(strings.ToLower(v.Value), strings.ToLower(secret)) {
						found = append(found, fmt.Sprintf("the %s of an item of %s holds %.40q", place, table, secret))
					}
				}
			}
		}
	}
	for _, token := range tokens {
		sum := sha256.Sum256([]byte(token))
		if !stored["signin#"+hex.EncodeToString(sum[:])] {
			found = append(found, fmt.Sprintf("an emailed sign-in token (%.6s…) has no item named by its SHA-256", token))
		}
	}
	return found, read, nil
}

// The chat sweep leaves the chat's own places alone (an account, its
// sign-in token's item, its conversation, all written by shared/chat) and
// finds each thing planted where it may not be: a message in an account's
// address, an address in a message, a token in the Ledger, a sign-in item
// named by its token, a message in an audit object, an address or a
// session cookie in a function's log line; a fake's line is the fake's.
func TestChatPrivacySweepFindsWhatIsPlanted(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	endpoint := motoserver.ForTest(t)
	// Its own prefix, as in TestPrivacySweepFindsWhatIsPlanted.
	prefix, _, _ := strings.Cut(f.Ref("OrdersTable"), "OrdersTable")
	h, err := audit.NewHasher(stack.LocalHashPepper)
	if err != nil {
		t.Fatal(err)
	}
	db := awsenv.NewTables(f.AWS)
	table := f.Ref("ChatTable")
	store := chat.NewStore(db, table, h, time.Now)
	const addr, message = "planted.chatter@example.com", "Is my planted orchard a sound idea?"
	account, _, err := store.SignUp(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := store.IssueSignIn(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Conversation(chat.NewClient(f.AWS), time.Hour).Append(ctx, account, message, "It may be: "+message, time.Now()); err != nil {
		t.Fatal(err)
	}
	addrs, messages, tokens := []string{addr}, []string{message, "hi"}, []string{token}
	clean := `[ChatFunction#1] {"msg":"exchange","account":"` + account + `"}` + "\n[gemini] prompt: " + message
	if found, read, err := chatFinds(ctx, endpoint, prefix, clean, addrs, messages, tokens); err != nil || len(found) != 0 || read == 0 {
		t.Fatalf("the chat's own places were reported, or nothing read (%d): %v %v", read, found, err)
	}
	cookie := account + ".1795000000000." + strings.Repeat("A", 43)
	item := func(pk, sk string, attrs ...string) func() error {
		return func() error {
			it := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "sk": &ddbtypes.AttributeValueMemberS{Value: sk}}
			for i := 0; i+1 < len(attrs); i += 2 {
				it[attrs[i]] = &ddbtypes.AttributeValueMemberS{Value: attrs[i+1]}
			}
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
			return err
		}
	}
	s3c := awsenv.S3(f.AWS)
	for _, c := range []struct {
		name  string
		plant func() error
		log   string
		says  string
	}{
		{"a message in an account's address", item("acct#other", "account", "email", message), "", "the email of an item"},
		{"an address in a message", item("acct#other", "msg#00000000000000000001#u", "text", "write to "+addr), "", "the text of an item"},
		{"the address beside an account", item("acct#other2", "account", "email", "other@example.com", "note", addr), "", addr},
		{"a token in the Ledger", func() error {
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.Ref("LedgerTable")), Item: map[string]ddbtypes.AttributeValue{
				"pk": &ddbtypes.AttributeValueMemberS{Value: "chatmail#" + token}}})
			return err
		}, "", token[:6]},
		{"a sign-in item named by its token", item("signin#"+token, "signin"), "", "not named by a token's SHA-256"},
		{"an account's sign-in index naming a token", item("signin#acct#"+account, "signin#"+token), "", "does not name a token by its SHA-256"},
		{"a message in an audit object", func() error {
			_, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(f.Ref("AuditBucket")), Key: aws.String("records/chat.json"),
				ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256, Body: strings.NewReader(`{"detail":"` + message + `"}`)})
			return err
		}, "", "s3://"},
		{"an address in a function's log line", nil, `[ChatFunction#1] {"msg":"signed in ` + addr + `"}`, "stack log"},
		{"a session cookie in a log line", nil, `[gateway] cookie oracle_chat=` + cookie, "session cookie"},
	} {
		before, _, err := chatFinds(ctx, endpoint, prefix, clean, addrs, messages, tokens)
		if err != nil {
			t.Fatal(err)
		}
		if c.plant != nil {
			if err := c.plant(); err != nil {
				t.Fatal(err)
			}
		}
		found, _, err := chatFinds(ctx, endpoint, prefix, clean+"\n"+c.log, addrs, messages, tokens)
		if err != nil {
			t.Fatal(err)
		}
		if news := slices.DeleteFunc(found, func(f string) bool { return slices.Contains(before, f) }); len(news) == 0 || !strings.Contains(strings.Join(news, "\n"), c.says) {
			t.Errorf("%s: found %q, want a find saying %q", c.name, news, c.says)
		}
	}
}
