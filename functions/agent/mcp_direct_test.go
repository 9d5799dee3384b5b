package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stubTools are tools whose results the direct path and the SDK encode:
// echo says what it was handed (its name, its arguments as they came, its
// payment as a value), with HTML's characters, quotes and a line separator
// in its text and a settlement in its _meta; bare returns no content; fails
// returns an error; refuses is an error result.
func stubTools() map[string]mcp.ToolHandler {
	return map[string]mcp.ToolHandler{
		"echo": func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sent, err := sentPayment(req)
			if err != nil {
				return nil, err
			}
			var payment any
			if sent != nil {
				if err := json.Unmarshal(sent, &payment); err != nil {
					return nil, err
				}
			}
			seen := map[string]any{"name": req.Params.Name, "arguments": string(req.Params.Arguments), "payment": payment, "meta": len(req.Params.Meta)}
			b, _ := json.Marshal(seen)
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "<a & b> \"said\" \u2028 ✓ " + string(b)}},
				StructuredContent: seen,
				Meta:              mcp.Meta{metaPaymentResponse: map[string]any{"success": true, "transaction": "0x<&>"}},
			}, nil
		},
		"bare": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		},
		"fails": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("the tool failed <here>")
		},
		"refuses": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return toolError("Refused: \"no\" & <never>"), nil
		},
	}
}

// sdkAndDirect are the SDK's handler, made as mcpServer makes it, and the
// direct path, over the same tools.
func sdkAndDirect(tools map[string]mcp.ToolHandler) (http.Handler, directTools) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	server := mcp.NewServer(&mcp.Implementation{Name: "oracle", Version: mcpVersion}, &mcp.ServerOptions{Logger: log})
	direct := directTools{}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for name := range tools {
			if !yield(name) {
				return
			}
		}
	}) {
		server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, tools[name])
		direct[name] = tools[name]
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: log, MaxRequestBodyBytes: MaxBody}), direct
}

// mcpHeaders are a client's headers at version ("" sends none).
func mcpHeaders(version string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	if version != "" {
		h.Set("Mcp-Protocol-Version", version)
	}
	return h
}

// answerBoth asks the direct path, then, if it answered, the SDK, the same
// request, and fails t unless the two answers are one: status, headers and
// body, byte for byte. It reports whether the direct path answered.
func answerBoth(t testing.TB, sdk http.Handler, direct directTools, header http.Header, body string) bool {
	t.Helper()
	ask := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, "https://oracle.example"+mcpPath, strings.NewReader(body))
		r.Header = header.Clone()
		return r
	}
	mine := httptest.NewRecorder()
	if !direct.serve(mine, ask(), []byte(body)) {
		if mine.Body.Len() != 0 || len(mine.Header()) != 0 {
			t.Fatalf("the direct path declined %s but wrote %v %q", body, mine.Header(), mine.Body)
		}
		return false
	}
	theirs := httptest.NewRecorder()
	sdk.ServeHTTP(theirs, ask())
	if mine.Code != theirs.Code || !equalHeaders(mine.Header(), theirs.Header()) || !bytes.Equal(mine.Body.Bytes(), theirs.Body.Bytes()) {
		t.Fatalf("for %s %v\nthe direct path answered %d %v\n%s\nthe SDK %d %v\n%s", body, header, mine.Code, mine.Header(), mine.Body, theirs.Code, theirs.Header(), theirs.Body)
	}
	return true
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for name, values := range a {
		if !slices.Equal(values, b[name]) {
			return false
		}
	}
	return true
}

// A payment as a paid call's _meta carries it, escapes and all.
const stubPayment = `{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:84532","amount":"50000","extra":{"name":"USDC","version":"2"}},` +
	`"payload":{"signature":"0xab\u0063d","authorization":{"from":"0x01","value":"50000","validAfter":"0","nonce":"0x02"}},"extensions":{"payment-identifier":{"info":{"id":"pay_0123456789abcdef"}}}}`

// directCalls are the calls the direct path answers: every shape a client
// sends a tool's call in, at each version before 2026-07-28.
var directCalls = []struct{ name, version, body string }{
	{"a paid call", "2025-11-25", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"query":"Should I?"},"_meta":{"x402/payment":` + stubPayment + `}}}`},
	{"at 2025-06-18", "2025-06-18", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"query":"q"},"_meta":{"x402/payment":` + stubPayment + `}}}`},
	{"at 2025-03-26", "2025-03-26", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"query":"q"},"_meta":{"x402/payment":` + stubPayment + `}}}`},
	{"at 2024-11-05", "2024-11-05", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"query":"q"}}}`},
	{"with no version header", "", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"query":"q"},"_meta":{"x402/payment":` + stubPayment + `}}}`},
	{"a string id with escapes", "2025-11-25", `{"jsonrpc":"2.0","id":"a\u0041<&>\"\\é\u2028","method":"tools/call","params":{"name":"echo","arguments":{"query":"q"}}}`},
	{"an empty string id", "2025-11-25", `{"jsonrpc":"2.0","id":"","method":"tools/call","params":{"name":"echo"}}`},
	{"id 0", "2025-11-25", `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo"}}`},
	{"a negative id", "2025-11-25", `{"jsonrpc":"2.0","id":-42,"method":"tools/call","params":{"name":"echo"}}`},
	{"a 15-digit id", "2025-11-25", `{"jsonrpc":"2.0","id":999999999999999,"method":"tools/call","params":{"name":"echo"}}`},
	{"no arguments, no _meta (a probe)", "2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`},
	{"empty arguments and _meta", "2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{}}}`},
	{"arguments as they came", "2025-11-25", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{ \"query\" : \"line\\none \\u00e9 \\\"q\\\" <b>\",\n\t\"n\":[1,-2,{\"x\":null,\"y\":true}] }}}"},
	{"members in another order, spaced", "2025-11-25", "\n{ \"params\" : { \"_meta\" : { \"x402/payment\" : " + stubPayment + " } , \"arguments\" : { \"query\" : \"q\" } , \"name\" : \"echo\" } ,\r\n \"method\" : \"tools/call\" , \"id\" : 3 , \"jsonrpc\" : \"2.0\" }\n "},
	{"many arguments", "2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{` + manyKeys(40) + `}}}`},
	{"a lone surrogate in the query", "2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"query":"\ud800"}}}`},
	{"a result without content", "2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bare"}}`},
	{"a tool's error", "2025-11-25", `{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"fails","arguments":{}}}`},
	{"an error result", "2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"refuses"}}`},
}

// declinedCalls are bodies the direct path leaves to the SDK, at
// 2025-11-25.
var declinedCalls = map[string]string{
	"another method":              `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	"an unknown tool":             `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nothing"}}`,
	"a batch":                     `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}]`,
	"a notification":              `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}`,
	"a null id":                   `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}`,
	"a fractional id":             `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"echo"}}`,
	"an id with an exponent":      `{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{"name":"echo"}}`,
	"a 16-digit id":               `{"jsonrpc":"2.0","id":9999999999999999,"method":"tools/call","params":{"name":"echo"}}`,
	"an object id":                `{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"echo"}}`,
	"another version tag":         `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
	"no version tag":              `{"id":1,"method":"tools/call","params":{"name":"echo"}}`,
	"another member":              `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"x":1}`,
	"no params":                   `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
	"params not an object":        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["echo"]}`,
	"no name":                     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`,
	"another param":               `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","task":{"ttl":1}}}`,
	"a progress token":            `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1}}}`,
	"a version in _meta":          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
	"a payment not an object":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"x402/payment":"eyJ4In0="}}}`,
	"a null payment":              `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"x402/payment":null}}}`,
	"null arguments":              `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":null}}`,
	"arguments not an object":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":"q"}}`,
	"a repeated envelope key":     `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}`,
	"a repeated _meta":            `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{},"_meta":{"x402/payment":{}}}}`,
	"a repeated key in a payment": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"x402/payment":{"payload":{"a":1},"payload":{"b":2}}}}}`,
	"a repeated key in arguments": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"query":"a","query":"b"}}}`,
	"an escaped key":              `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"x402\/payment":{}}}}`,
	"a fractional number":         `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"n":0.5}}}`,
	"a huge number":               `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"x402/payment":{"x402Version":1e999}}}}`,
	"a deep value":                `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}}}`,
	"not JSON":                    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"`,
	"a second value":              `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}} {}`,
	"not UTF-8":                   "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"query\":\"\xff\"}}}",
	"empty":                       ``,
	"a method with another case":  `{"jsonrpc":"2.0","id":1,"method":"Tools/Call","params":{"name":"echo"}}`,
	"a member with another case":  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"echo"}}`,
	"a name not a string":         `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`,
	// Past directInlineKeys, an object's keys are kept in a set.
	"a repeat among many keys": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{` + manyKeys(20) + `,"k3":0}}}`,
}

// manyKeys is n members of an object, "k0":0 to "k<n-1>":0.
func manyKeys(n int) string {
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf(`"k%d":0`, i)
	}
	return strings.Join(members, ",")
}

// declinedHeaders are headers the direct path leaves to the SDK.
var declinedHeaders = map[string]func(http.Header){
	"the 2026-07-28 protocol":    func(h http.Header) { h.Set("Mcp-Protocol-Version", "2026-07-28") },
	"a version the SDK refuses":  func(h http.Header) { h.Set("Mcp-Protocol-Version", "2099-01-01") },
	"Accept: */*":                func(h http.Header) { h.Set("Accept", "*/*") },
	"Accept without SSE":         func(h http.Header) { h.Set("Accept", "application/json") },
	"no Accept":                  func(h http.Header) { h.Del("Accept") },
	"text/plain":                 func(h http.Header) { h.Set("Content-Type", "text/plain") },
	"no Content-Type":            func(h http.Header) { h.Del("Content-Type") },
	"an Mcp-Method header":       func(h http.Header) { h.Set("Mcp-Method", "tools/call") },
	"an Mcp-Name header":         func(h http.Header) { h.Set("Mcp-Name", "echo") },
	"a session id":               func(h http.Header) { h.Set("Mcp-Session-Id", "s") },
	"a Last-Event-ID":            func(h http.Header) { h.Set("Last-Event-ID", "1") },
	"a malformed Content-Type":   func(h http.Header) { h.Set("Content-Type", "application/json; charset") },
	"application/json+something": func(h http.Header) { h.Set("Content-Type", "application/json-seq") },
}

// TestTheDirectPathAnswersAsTheSDKDoes: every call the direct path takes
// it answers byte for byte as the SDK's stateless handler does (status,
// headers, JSON-RPC envelope, the result's encoding, a tool's error), with
// the tool handed the same name, arguments and payment; every other
// request it leaves to the SDK, having written nothing.
func TestTheDirectPathAnswersAsTheSDKDoes(t *testing.T) {
	sdk, direct := sdkAndDirect(stubTools())
	for _, c := range directCalls {
		t.Run(c.name, func(t *testing.T) {
			if !answerBoth(t, sdk, direct, mcpHeaders(c.version), c.body) {
				t.Fatal("the direct path left it to the SDK")
			}
		})
	}
	header := func(h http.Header) http.Header {
		h.Set("Content-Type", "Application/JSON; charset=utf-8")
		h.Set("Accept", "text/event-stream;q=0.9 , application/json")
		return h
	}(mcpHeaders("2025-11-25"))
	if !answerBoth(t, sdk, direct, header, directCalls[0].body) {
		t.Error("media types in other cases, with parameters, left to the SDK")
	}
	for name, body := range declinedCalls {
		t.Run(name, func(t *testing.T) {
			if answerBoth(t, sdk, direct, mcpHeaders("2025-11-25"), body) {
				t.Fatal("the direct path answered it")
			}
		})
	}
	for name, change := range declinedHeaders {
		t.Run(name, func(t *testing.T) {
			h := mcpHeaders("2025-11-25")
			change(h)
			if answerBoth(t, sdk, direct, h, directCalls[0].body) {
				t.Fatal("the direct path answered it")
			}
		})
	}
}

// FuzzTheDirectPath: whatever body the direct path answers, at whichever
// version, the SDK answers the same.
func FuzzTheDirectPath(f *testing.F) {
	for i, c := range directCalls {
		f.Add(c.body, uint8(i))
	}
	for _, body := range declinedCalls {
		f.Add(body, uint8(0))
	}
	versions := append([]string{""}, mcp.SupportedProtocolVersions()...)
	sdk, direct := sdkAndDirect(stubTools())
	f.Fuzz(func(t *testing.T, body string, version uint8) {
		answerBoth(t, sdk, direct, mcpHeaders(versions[int(version)%len(versions)]), body)
	})
}

// TestTheOfficialClientsCallsTakeTheDirectPath: the go-sdk client's tool
// calls at each version before 2026-07-28 (a paid one with its payment in
// _meta, an unpaid one, oracle_result) are answered by the direct path:
// the SDK's handler sees the handshake and the listing, never a
// tools/call. At 2026-07-28 the SDK answers them.
func TestTheOfficialClientsCallsTakeTheDirectPath(t *testing.T) {
	e := newEnv(t)
	srv := e.mcpGateway()
	server := e.h.mcpServer()
	var mu sync.Mutex
	var reached []string
	sdk := server.handler
	server.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct{ Method string }
		_ = json.Unmarshal(b, &m)
		mu.Lock()
		reached = append(reached, m.Method)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		sdk.ServeHTTP(w, r)
	})
	req := e.offer("/x402/query").Accepts[0]
	for _, v := range mcpVersions {
		t.Run(v, func(t *testing.T) {
			mu.Lock()
			reached = nil
			mu.Unlock()
			cs := e.mcpSession(srv, v)
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			paymentRequired(t, e.call(cs, "oracle_quick_take", bakery, nil))
			if res := e.call(cs, "oracle_quick_take", bakery, e.payload(wallet(t), req, nil)); res.IsError {
				t.Fatalf("the paid call: %s", mcpJSON(t, res))
			}
			if res := e.call(cs, ResultTool, map[string]any{"order_id": "x402_test_0123456789abcdefghijklmnopqrstuv"}, nil); !res.IsError {
				t.Fatalf("an unknown order: %s", mcpJSON(t, res))
			}
			mu.Lock()
			defer mu.Unlock()
			calls := slices.ContainsFunc(reached, func(m string) bool { return m == "tools/call" })
			if want := v >= newProtocol; calls != want {
				t.Fatalf("the SDK's handler saw %v", reached)
			}
			if !slices.Contains(reached, "tools/list") {
				t.Fatalf("the listing went past the SDK: it saw %v", reached)
			}
		})
	}
}
