package auditfigures

import (
	"regexp"
	"strings"
)

// normalisers turn an error_detail into its pattern, in order: keyed
// hashes, Stripe's ids (sessions, events, payment intents, charges,
// customers, requests), UUIDs (request and message ids), any other long
// token, then every number. Each expression means the same to Go's RE2 and
// to Athena's regexp_replace, and holds no "?", which Athena would take
// for a query parameter; the template's top-error-patterns query applies
// the same list (sqlNormalise, kept equal by a test).
var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`hmac-sha256:[0-9a-f]+`), "<hash>"},
	{regexp.MustCompile(`\b(cs|evt|pi|ch|cus|req)_[A-Za-z0-9_]+`), "<id>"},
	{regexp.MustCompile(`[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}`), "<id>"},
	{regexp.MustCompile(`[A-Za-z0-9]{20,}`), "<id>"},
	{regexp.MustCompile(`[0-9]+`), "#"},
}

// normalise is the pattern of an error detail: what stays when the ids and
// numbers that make each occurrence unique are replaced, so that "SES
// answered 503 for message 0100018c…" and its next occurrence count as one.
func normalise(detail string) string {
	for _, n := range normalisers {
		detail = n.re.ReplaceAllLiteralString(detail, n.with)
	}
	return detail
}

// sqlNormalise is normalise as an Athena expression over column.
func sqlNormalise(column string) string {
	expr := column
	for _, n := range normalisers {
		expr = "regexp_replace(" + expr + ", '" + strings.ReplaceAll(n.re.String(), "'", "''") + "', '" + n.with + "')"
	}
	return expr
}
