package oracle

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Stripe metadata limits (https://docs.stripe.com/metadata): at most 50 keys,
// values of at most 500 characters. Stripe counts characters as JavaScript
// does, in UTF-16 code units, so chunks are measured the same way.
const (
	StripeMaxMetadataKeys  = 50
	StripeMaxMetadataValue = 500
)

// ChunkSize is the query chunk length in UTF-16 code units: 490, leaving
// headroom under Stripe's 500-character value limit.
const ChunkSize = 490

// Metadata keys. Every key that is not a query chunk is reserved here, so the
// chunk budget below is derived from Stripe's cap rather than guessed.
const (
	MetaTier     = "tier"
	MetaChunks   = "qn" // number of chunks, q0..q{qn-1}
	MetaReferral = "referral_code"
	MetaSmoke    = "smoke" // set by the scheduled smoke test
)

var reservedMetadataKeys = []string{MetaTier, MetaChunks, MetaReferral, MetaSmoke}

// MaxChunks is how many query chunks fit in a session's metadata.
var MaxChunks = StripeMaxMetadataKeys - len(reservedMetadataKeys)

// MaxQueryUnits is the longest query, in UTF-16 code units, that always fits.
// A query whose chunking needs more than MaxChunks chunks is refused with 413.
var MaxQueryUnits = MaxChunks * ChunkSize

// ChunkKey is the metadata key of chunk i.
func ChunkKey(i int) string { return "q" + strconv.Itoa(i) }

// utf16Len is the length of r in UTF-16 code units.
func utf16Len(r rune) int {
	if utf16.RuneLen(r) == 2 {
		return 2
	}
	return 1
}

// Chunk splits a query into chunks of at most ChunkSize UTF-16 code units,
// never inside a code point, so every chunk is valid UTF-8 that Stripe
// accepts and the concatenation of the chunks is the query byte for byte.
// An empty query has no chunks.
func Chunk(query string) []string {
	var chunks []string
	start, units := 0, 0
	for i, r := range query {
		n := utf16Len(r)
		if units+n > ChunkSize {
			chunks = append(chunks, query[start:i])
			start, units = i, 0
		}
		units += n
	}
	if start < len(query) {
		chunks = append(chunks, query[start:])
	}
	return chunks
}

// QueryMetadata returns the metadata entries carrying query: q0..qN and qn.
func QueryMetadata(query string) map[string]string {
	chunks := Chunk(query)
	m := make(map[string]string, len(chunks)+1)
	for i, c := range chunks {
		m[ChunkKey(i)] = c
	}
	m[MetaChunks] = strconv.Itoa(len(chunks))
	return m
}

// ValidateQuery checks a customer's query before any payment is taken. The
// query itself is never altered: what the customer typed is what is judged.
func ValidateQuery(query string) error {
	if !utf8.ValidString(query) {
		return Errorf(CodeInvalid, "query must be valid UTF-8 text")
	}
	if strings.TrimSpace(query) == "" {
		return Errorf(CodeInvalid, "query is empty: describe your idea or question")
	}
	if strings.ContainsRune(query, 0) {
		return Errorf(CodeInvalid, "query contains a NUL character")
	}
	if n := len(Chunk(query)); n > MaxChunks {
		return Errorf(CodeTooLarge, "query is too long: at most %d characters", MaxQueryUnits)
	}
	return nil
}

// DropReason says why a paid session cannot be fulfilled. Empty means it can.
type DropReason string

// Reasons for a silent drop (SPEC_ORACLE_SILENT_DROP "Primary trigger").
const (
	DropNone         DropReason = ""
	DropTierMissing  DropReason = "tier_missing"
	DropTierInvalid  DropReason = "tier_invalid"
	DropQueryEmpty   DropReason = "query_empty"
	DropChunkMissing DropReason = "query_chunk_missing"
)

// ReassembleQuery rebuilds a query from metadata chunks. With qn present,
// chunks q0..q{qn-1} must all exist (an empty chunk counts as missing: Chunk
// never produces one). Without qn, older sessions are read from q0 until the
// first absent key. It returns DropChunkMissing when the chunks are incomplete
// or qn is malformed, and DropQueryEmpty when there is no query at all.
func ReassembleQuery(meta map[string]string) (string, DropReason) {
	qn, counted := meta[MetaChunks]
	n := 0
	if counted {
		var err error
		if n, err = strconv.Atoi(qn); err != nil || n < 0 || n > StripeMaxMetadataKeys {
			return "", DropChunkMissing
		}
	} else {
		for _, ok := meta[ChunkKey(n)]; ok; _, ok = meta[ChunkKey(n)] {
			n++
		}
		// A chunk key beyond the first gap means a chunk went missing.
		if chunkKeys(meta) != n {
			return "", DropChunkMissing
		}
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		c, ok := meta[ChunkKey(i)]
		if !ok || counted && c == "" {
			return "", DropChunkMissing
		}
		b.WriteString(c)
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", DropQueryEmpty
	}
	return b.String(), DropNone
}

// chunkKeys counts the metadata keys of the form q<digits>.
func chunkKeys(meta map[string]string) int {
	n := 0
	for k := range meta {
		if len(k) > 1 && k[0] == 'q' && strings.Trim(k[1:], "0123456789") == "" {
			n++
		}
	}
	return n
}

// IdeaFieldKey is the Payment Link custom field that carries the query.
const IdeaFieldKey = "idea"

// Resolve decides a paid session's tier and query: the query from the `idea`
// custom field first, the metadata chunks second; the tier from metadata.
// A non-empty DropReason means the session must be dropped, not fulfilled;
// the query is returned whenever it could be read, for the drop alert.
func Resolve(meta map[string]string, idea string) (Tier, string, DropReason) {
	query, reason := idea, DropNone
	if strings.TrimSpace(idea) == "" {
		query, reason = ReassembleQuery(meta)
	}
	rawTier, ok := meta[MetaTier]
	if !ok || strings.TrimSpace(rawTier) == "" {
		return "", query, DropTierMissing
	}
	tier, err := ParseTier(rawTier)
	if err != nil {
		return "", query, DropTierInvalid
	}
	return tier, query, reason
}

// QueryUnits is the query's length in UTF-16 code units, the "characters"
// that the order form and Stripe count.
func QueryUnits(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Len(r)
	}
	return n
}
