package main

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// directTools answers the one request a paid call is, a single tools/call,
// without the SDK's session: the tool's handler called on the request's
// own goroutine, its result encoded as the SDK encodes it. The go-sdk's
// stateless handler builds a session for every request, reads the body
// whole twice and its _meta three times (nine JSON decodes, each with a
// 32 KB buffer), which was most of the MCP path's own work and put it over its budget
// (1 % of a paid call's calls, docs/performance.md). Any request that is
// not plainly such a call goes to the SDK, which stays the reference:
// TestTheDirectPathAnswersAsTheSDKDoes and FuzzTheDirectPath compare the
// two answer for answer. The tools answered here use neither the session
// nor the request's extras beyond its header: a stateless call's session
// ends with its answer.
type directTools map[string]mcp.ToolHandler

// directMaxDepth bounds the nesting of a body the direct path takes: a
// paid call's is five deep, and the SDK refuses past 1000.
const directMaxDepth = 32

// newProtocol is the first protocol version whose requests carry their
// version in _meta and may go without initialize (SEP-2575): those the
// SDK reads in ways of its own, and the direct path leaves them to it.
const newProtocol = "2026-07-28"

// serve answers r, whose body is body, when it is a single tools/call of
// one of the tools, and reports whether it did. Nothing is written when it
// did not.
func (d directTools) serve(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if !directHeaders(r.Header) {
		return false
	}
	call, ok := d.parse(body)
	if !ok {
		return false
	}
	req := &mcp.CallToolRequest{Params: &call.params, Extra: &mcp.RequestExtra{Header: r.Header}}
	// A paid call's record may still be on the wire when its tool returns
	// (hold): the answer is encoded meanwhile, and leaves after it.
	held := func() {}
	defer func() { held() }()
	res, err := d[call.params.Name](context.WithValue(r.Context(), heldKey{}, &held), req)
	// As the SDK's callTool: a result's content is never null.
	if err == nil && res != nil && res.Content == nil {
		res2 := *res
		res2.Content = []mcp.Content{}
		res = &res2
	}
	resp := &jsonrpc.Response{ID: call.id, Error: err}
	if err == nil {
		if resp.Result, err = marshalResult(res); err != nil {
			resp.Error = err
		}
	}
	out, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		// A result the SDK could not encode either; the tools make none.
		http.Error(w, "encoding the result: "+err.Error(), http.StatusInternalServerError)
		return true
	}
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
	return true
}

// directHeaders reports whether a request's headers are ones the SDK's
// stateless handler takes a call with, read as it reads them, and say a
// protocol before newProtocol: JSON in, both answers' types accepted, no
// resumption, none of the MCP headers it checks against the body.
func directHeaders(h http.Header) bool {
	// The type every client sends is read as mime would read it, without
	// its parser's allocations.
	if ct := h.Get("Content-Type"); ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return false
		}
	}
	if !acceptsBoth(h.Values("Accept")) {
		return false
	}
	version := h.Get("Mcp-Protocol-Version")
	if version != "" && (version >= newProtocol || !slices.Contains(supportedVersions, version)) {
		return false
	}
	for name := range h {
		if (len(name) >= 4 && strings.EqualFold(name[:4], "mcp-") && !strings.EqualFold(name, "Mcp-Protocol-Version")) || strings.EqualFold(name, "Last-Event-Id") {
			return false
		}
	}
	return true
}

// supportedVersions are the SDK's protocol versions, which it copies on
// every call of mcp.SupportedProtocolVersions.
var supportedVersions = mcp.SupportedProtocolVersions()

// acceptsBoth reports whether Accept names application/json and
// text/event-stream themselves (the SDK's requirement; a wildcard, which
// it also takes, is left to it).
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json":
				jsonOK = true
			case "text/event-stream":
				streamOK = true
			}
		}
	}
	return jsonOK && streamOK
}

// directCall is a tools/call as the direct path read it.
type directCall struct {
	id     jsonrpc.ID
	params mcp.CallToolParamsRaw
}

// member is a place a direct call's member may have, by its path of keys;
// noMember is any other.
type member int

const (
	noMember       member = iota
	envelope              // the body's object
	jsonrpcVersion        // jsonrpc
	callID                // id
	callMethod            // method
	callParams            // params
	toolName              // params.name
	toolArguments         // params.arguments
	toolMeta              // params._meta
	metaX402              // params._meta["x402/payment"]
	members               // how many there are
)

// directShape is what each member a direct call may have sits in: the
// envelope's, params' and _meta's, by their keys; a member elsewhere in
// those three objects makes the request the SDK's.
func directShape(in member, key []byte) (m member, kept bool) {
	switch in {
	case envelope:
		switch string(key) {
		case "jsonrpc":
			return jsonrpcVersion, true
		case "id":
			return callID, true
		case "method":
			return callMethod, true
		case "params":
			return callParams, true
		}
	case callParams:
		switch string(key) {
		case "name":
			return toolName, true
		case "arguments":
			return toolArguments, true
		case "_meta":
			return toolMeta, true
		}
	case toolMeta:
		if string(key) == metaPayment {
			return metaX402, true
		}
	default:
		return noMember, true // not a kept object: any member
	}
	return noMember, false
}

// parse reads body as a tools/call of one of d's tools, and reports false
// for anything it does not read exactly as the SDK would: a body that is
// not valid UTF-8 and JSON, that repeats or escapes a key anywhere, nests
// past directMaxDepth or holds a number other than a plain integer; an
// envelope with members other than jsonrpc "2.0", an id (a string or an
// integer), method "tools/call" and params; params with members other than
// name (one of d's tools), arguments (an object) and _meta, holding at
// most "x402/payment" (an object).
func (d directTools) parse(body []byte) (directCall, bool) {
	var call directCall
	// segmentio's Valid answers as encoding/json's, in a fraction of the
	// time; FuzzTheDirectPath holds the SDK to the same answers.
	if !utf8.Valid(body) || !segjson.Valid(body) {
		return call, false
	}
	m, ok := directMembers(body)
	if !ok || string(m[jsonrpcVersion]) != `"2.0"` || string(m[callMethod]) != `"tools/call"` || !isObject(m[callParams]) {
		return call, false
	}
	id := m[callID]
	var err error
	switch {
	case len(id) > 0 && id[0] == '"':
		var s string
		if json.Unmarshal(id, &s) != nil {
			return call, false
		}
		call.id, err = jsonrpc.MakeID(s)
	case isInteger(id):
		n, perr := strconv.ParseInt(string(id), 10, 64)
		if perr != nil {
			return call, false
		}
		// The SDK reads a number as float64 and keeps it as an int64.
		call.id, err = jsonrpc.MakeID(float64(n))
	default:
		return call, false
	}
	if err != nil {
		return call, false
	}
	// The name as it came: a tool's name has no character JSON escapes.
	name := m[toolName]
	if len(name) < 2 || name[0] != '"' {
		return call, false
	}
	call.params.Name = string(name[1 : len(name)-1])
	if _, ok := d[call.params.Name]; !ok {
		return call, false
	}
	if args := m[toolArguments]; args != nil {
		if !isObject(args) {
			return call, false
		}
		call.params.Arguments = args
	}
	if meta := m[toolMeta]; meta != nil {
		if !isObject(meta) {
			return call, false
		}
		call.params.Meta = mcp.Meta{}
		if payment := m[metaX402]; payment != nil {
			if !isObject(payment) {
				return call, false
			}
			call.params.Meta[metaPayment] = json.RawMessage(payment)
		}
	}
	return call, true
}

func isObject(b []byte) bool { return len(b) > 0 && b[0] == '{' }

// directMembers reads the valid JSON b in one pass, keeping each value
// directShape places (its bytes as they came; nil when absent) and
// reporting false when b is not an object, a member is out of
// directShape's place, or b is not plain: past directMaxDepth, a key
// escaped or repeated in its object, a number other than a plain integer
// a float64 holds exactly. It allocates next to nothing: an object's keys
// are compared where they lie in b, and only an object of more than
// directInlineKeys keys has a set of them.
func directMembers(b []byte) (m [members][]byte, ok bool) {
	type open struct {
		at    member // where it sits; noMember when not kept
		start int
		keys  int // where its keys begin in keys; -1 for an array
		set   map[string]struct{}
	}
	var (
		stackBuf [directMaxDepth]open
		keysBuf  [4 * directInlineKeys][]byte
	)
	stack, keys := stackBuf[:0], keysBuf[:0]
	pending := envelope // the place of the value a key has just named
	t := segjson.NewTokenizer(b)
	for t.Next() {
		end := len(b) - t.Remaining()
		switch {
		case t.Delim == '{' || t.Delim == '[':
			if len(stack) == directMaxDepth || (len(stack) == 0 && t.Delim != '{') {
				return m, false
			}
			o := open{at: pending, start: end - 1, keys: -1}
			if t.Delim == '{' {
				o.keys = len(keys)
			}
			stack = append(stack, o)
			pending = noMember
		case t.Delim == '}' || t.Delim == ']':
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if o.keys >= 0 {
				keys = keys[:o.keys]
			}
			if o.at != noMember {
				m[o.at] = b[o.start:end]
			}
			pending = noMember
		case t.Delim != 0: // ':' and ','
		case t.IsKey:
			o := &stack[len(stack)-1]
			key := t.Value[1 : len(t.Value)-1]
			if bytes.IndexByte(key, '\\') >= 0 || !newKey(o.keys, &keys, &o.set, key) {
				return m, false
			}
			var kept bool
			if pending, kept = directShape(o.at, key); !kept {
				return m, false
			}
		default:
			if c := t.Value[0]; c != '"' && c != 't' && c != 'f' && c != 'n' && !isInteger(t.Value) {
				return m, false
			}
			if pending != noMember {
				m[pending] = t.Value
			}
			pending = noMember
		}
	}
	return m, t.Err == nil && isObject(m[envelope])
}

// directInlineKeys is how many keys an object's repeats are looked for
// among one by one; past it, in a set, so that no body costs the square
// of its keys.
const directInlineKeys = 16

// newKey notes key among its object's, which begin at from in keys (or are
// in set, once there are more than directInlineKeys), and reports whether
// it is new there.
func newKey(from int, keys *[][]byte, set *map[string]struct{}, key []byte) bool {
	if *set != nil {
		if _, seen := (*set)[string(key)]; seen {
			return false
		}
		(*set)[string(key)] = struct{}{}
		return true
	}
	for _, k := range (*keys)[from:] {
		if bytes.Equal(k, key) {
			return false
		}
	}
	*keys = append(*keys, key)
	if len(*keys)-from > directInlineKeys {
		*set = make(map[string]struct{}, 2*directInlineKeys)
		for _, k := range (*keys)[from:] {
			(*set)[string(k)] = struct{}{}
		}
		*keys = (*keys)[:from]
	}
	return true
}

// isInteger reports whether b is a JSON integer of at most 15 digits,
// which a float64 holds exactly.
func isInteger(b []byte) bool {
	digits := bytes.TrimPrefix(b, []byte("-"))
	if len(digits) == 0 || len(digits) > 15 || digits[0] == '0' && len(digits) > 1 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// marshalResult encodes a tool's result as the SDK's JSON-RPC layer does:
// without HTML's escapes.
func marshalResult(res *mcp.CallToolResult) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
