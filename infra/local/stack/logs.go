package stack

import (
	"bufio"
	"encoding/json"
	"regexp"
	"strings"

	"42sisters.ai/oracle/shared/oracle"
)

// LogLine is one line a function wrote, as the stack captured it in
// Options.Log: prefixed by the runtime with "[LogicalId#N] ".
type LogLine struct {
	Function string         // the function's logical id, e.g. "GeneratorFunction"
	Fields   map[string]any // the JSON line; nil for a line that is not JSON
	Text     string         // the line without its prefix
	// Metric is set on an embedded metric format line (obs.Metrics: it
	// has "_aws"), which CloudWatch reads as metrics, not as a log line.
	Metric bool
}

// Missing returns the keys among keys the line has no non-empty string for.
func (l LogLine) Missing(keys ...string) []string {
	var out []string
	for _, k := range keys {
		if s, _ := l.Fields[k].(string); s == "" {
			out = append(out, k)
		}
	}
	return out
}

// functionLine is a function's line: the runtime's prefix, then the text.
var functionLine = regexp.MustCompile(`^\[([A-Za-z0-9]+)#[0-9]+\] (.*)$`)

// FunctionLogs reads the stack's captured output into the functions' lines,
// in order. The stack's own lines and the fakes' are left out, and so are
// the lines the local runtime writes itself about a function's process
// (started, exited, timed out), which do not start with "{"; a function
// line that does is parsed, and kept with nil Fields if it is not JSON.
func FunctionLogs(output string) []LogLine {
	var out []LogLine
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		m := functionLine.FindStringSubmatch(sc.Text())
		if m == nil || !strings.HasPrefix(m[2], "{") {
			continue
		}
		l := LogLine{Function: m[1], Text: m[2]}
		if err := json.Unmarshal([]byte(m[2]), &l.Fields); err != nil {
			l.Fields = nil
		}
		_, l.Metric = l.Fields["_aws"]
		out = append(out, l)
	}
	return out
}

// OrderLogs are the function lines that name the order (its whole id or
// its name): what the saved query one-order shows in AWS. The lines name it
// by its name (oracle.ShortID), never by the whole id.
func OrderLogs(output, order string) []LogLine {
	name := oracle.ShortID(order)
	var out []LogLine
	for _, l := range FunctionLogs(output) {
		if l.Fields["order"] == name {
			out = append(out, l)
		}
	}
	return out
}
