// Package obs provides the structured JSON logger and CloudWatch embedded
// metric format lines every function writes, with the privacy rules built in
// (email or query attributes are redacted, an order's whole id is cut to its
// name) and the ids of the context on every line (context.go).
package obs

import (
	"io"
	"log/slog"
	"strings"

	"42sisters.ai/oracle/shared/oracle"
)

// redacted are attribute keys whose values must never reach a log line.
var redacted = map[string]bool{"email": true, "customer_email": true, "query": true, "idea": true}

// NewLogger returns a JSON logger at the named level (DEBUG, INFO, WARN,
// ERROR; INFO when empty or unknown).
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(WithContext(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: l,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if redacted[strings.ToLower(a.Key)] {
				return slog.String(a.Key, "[redacted]")
			}
			// A whole order id opens the customer's result page: whatever
			// text carries one (an error, a URL) names the order instead.
			var v string
			switch a.Value.Kind() {
			case slog.KindString:
				v = a.Value.String()
			case slog.KindAny:
				err, ok := a.Value.Any().(error)
				if !ok {
					return a
				}
				v = err.Error()
			default:
				return a
			}
			if named := oracle.NameIDs(v); named != v || a.Value.Kind() == slog.KindAny {
				return slog.String(a.Key, named)
			}
			return a
		},
	})))
}
