// Package obs provides the structured JSON logger and CloudWatch embedded
// metric format lines every function writes, with the privacy rules built in:
// session ids are shortened and email or query attributes are redacted.
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
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: l,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if redacted[strings.ToLower(a.Key)] {
				return slog.String(a.Key, "[redacted]")
			}
			return a
		},
	}))
}

// Session is the log attribute for a session: its 12-character prefix only.
func Session(id string) slog.Attr { return slog.String("session", oracle.ShortID(id)) }
