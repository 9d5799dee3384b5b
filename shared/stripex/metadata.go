package stripex

import (
	"strconv"
	"strings"

	"42sisters.ai/oracle/shared/oracle"
)

// Stripe's metadata: how a session carries its tier and query. The rest of
// the service sees only what Resolve makes of it (a tier, a query, or why
// the session must be dropped).

// Stripe metadata limits (https://docs.stripe.com/metadata): at most 50 keys,
// values of at most 500 characters. Stripe counts characters as JavaScript
// does, in UTF-16 code units, so chunks are measured the same way.
const (
	MaxMetadataKeys  = 50
	MaxMetadataValue = 500
)

// ChunkSize is the query chunk length in UTF-16 code units: 490, leaving
// headroom under Stripe's 500-character value limit. A chunk whose last
// character is a two-unit one straddling the boundary takes it whole and
// holds ChunkSize+1, so that every chunk but the last carries at least
// ChunkSize units and MaxChunks always carry oracle.MaxQueryUnits: the
// order form's counter is then the whole truth.
const ChunkSize = 490

// Metadata keys. Every key that is not a query chunk is reserved here, so the
// chunk budget below is derived from Stripe's cap rather than guessed.
const (
	MetaTier     = "tier"
	MetaChunks   = "qn" // number of chunks, q0..q{qn-1}
	MetaReferral = "referral_code"
	MetaSmoke    = "smoke" // set by the scheduled smoke test
)

// IdeaField is the Payment Link custom field that carries the query.
const IdeaField = "idea"

var reservedMetadataKeys = []string{MetaTier, MetaChunks, MetaReferral, MetaSmoke}

// MaxChunks is how many query chunks fit in a session's metadata; at
// ChunkSize each, they hold oracle.MaxQueryUnits.
var MaxChunks = MaxMetadataKeys - len(reservedMetadataKeys)

// ChunkKey is the metadata key of chunk i.
func ChunkKey(i int) string { return "q" + strconv.Itoa(i) }

// Chunk splits a query into chunks of ChunkSize UTF-16 code units (one
// more when a two-unit character straddles the boundary; the last may be
// shorter), never inside a code point, so every chunk is valid UTF-8 that
// Stripe accepts and the concatenation of the chunks is the query byte for
// byte. An empty query has no chunks.
func Chunk(query string) []string {
	var chunks []string
	start, units := 0, 0
	for i, r := range query {
		n := oracle.UnitsOf(r)
		if units >= ChunkSize || units+n > ChunkSize+1 {
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
// A query that needs more than MaxChunks chunks, which only one longer than
// oracle.MaxQueryUnits can, is refused with CodeTooLarge.
func QueryMetadata(query string) (map[string]string, error) {
	chunks := Chunk(query)
	if len(chunks) > MaxChunks {
		return nil, oracle.Errorf(oracle.CodeTooLarge, "query is too long: at most %d characters", oracle.MaxQueryUnits)
	}
	m := make(map[string]string, len(chunks)+1)
	for i, c := range chunks {
		m[ChunkKey(i)] = c
	}
	m[MetaChunks] = strconv.Itoa(len(chunks))
	return m, nil
}

// ReassembleQuery rebuilds a query from metadata chunks. With qn present,
// chunks q0..q{qn-1} must all exist (an empty chunk counts as missing: Chunk
// never produces one). Without qn, older sessions are read from q0 until the
// first absent key. It returns oracle.DropChunkMissing when the chunks are incomplete
// or qn is malformed, and oracle.DropQueryEmpty when there is no query at all.
func ReassembleQuery(meta map[string]string) (string, oracle.DropReason) {
	qn, counted := meta[MetaChunks]
	n := 0
	if counted {
		var err error
		if n, err = strconv.Atoi(qn); err != nil || n < 0 || n > MaxMetadataKeys {
			return "", oracle.DropChunkMissing
		}
	} else {
		for _, ok := meta[ChunkKey(n)]; ok; _, ok = meta[ChunkKey(n)] {
			n++
		}
		// A chunk key beyond the first gap means a chunk went missing.
		if chunkKeys(meta) != n {
			return "", oracle.DropChunkMissing
		}
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		c, ok := meta[ChunkKey(i)]
		if !ok || counted && c == "" {
			return "", oracle.DropChunkMissing
		}
		b.WriteString(c)
	}
	if oracle.Blank(b.String()) {
		return "", oracle.DropQueryEmpty
	}
	return b.String(), oracle.DropNone
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

// Resolve decides a paid session's tier and query: the query from the `idea`
// custom field first, the metadata chunks second; the tier from metadata.
// A non-empty DropReason means the session must be dropped, not fulfilled;
// the query is returned whenever it could be read, for the drop alert.
func Resolve(meta map[string]string, idea string) (oracle.Tier, string, oracle.DropReason) {
	query, reason := idea, oracle.DropNone
	if oracle.Blank(idea) {
		query, reason = ReassembleQuery(meta)
	}
	rawTier, ok := meta[MetaTier]
	if !ok || strings.TrimSpace(rawTier) == "" {
		return "", query, oracle.DropTierMissing
	}
	tier, err := oracle.ParseTier(rawTier)
	if err != nil {
		return "", query, oracle.DropTierInvalid
	}
	return tier, query, reason
}
