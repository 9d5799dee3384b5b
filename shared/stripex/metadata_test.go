package stripex

import (
	"strings"
	"testing"
	"unicode/utf8"

	"42sisters.ai/oracle/shared/oracle"
)

func TestChunkRoundTrip(t *testing.T) {
	// VC-3: lengths around the chunk boundaries, the maximum, and multi-byte
	// text crossing a boundary.
	cases := []struct {
		name   string
		query  string
		chunks int
	}{
		{"1 char", "a", 1},
		{"489 chars", strings.Repeat("a", 489), 1},
		{"490 chars", strings.Repeat("b", 490), 1},
		{"491 chars", strings.Repeat("c", 491), 2},
		{"980 chars", strings.Repeat("d", 980), 2},
		{"981 chars", strings.Repeat("e", 981), 3},
		{"maximum", strings.Repeat("f", oracle.MaxQueryUnits), MaxChunks},
		{"accent on the boundary", strings.Repeat("a", 489) + "é" + strings.Repeat("b", 10), 2},
		{"emoji straddling the boundary", strings.Repeat("a", 489) + "🚀" + "tail", 2},
		{"all emoji", strings.Repeat("🍁", 700), 3},
		{"combining marks and ZWJ", strings.Repeat("e\u0301👩‍👩‍👧 ", 200), 5}, // 11 UTF-16 units each
		{"CJK", strings.Repeat("創業", 300), 2},
		{"newlines and tabs", strings.Repeat("line\n\tnext ", 100), 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chunks := Chunk(c.query)
			if len(chunks) != c.chunks {
				t.Errorf("got %d chunks, want %d", len(chunks), c.chunks)
			}
			for i, ch := range chunks {
				if !utf8.ValidString(ch) {
					t.Errorf("chunk %d is not valid UTF-8", i)
				}
				if n := oracle.QueryUnits(ch); n > ChunkSize+1 || n == 0 || (n == ChunkSize+1 && oracle.UnitsOf(lastRune(ch)) != 2) {
					t.Errorf("chunk %d has %d UTF-16 units, want 1..%d (%d when it ends with a two-unit character)", i, n, ChunkSize, ChunkSize+1)
				}
			}
			meta := metaOf(t, c.query)
			if len(meta) > MaxMetadataKeys-len(reservedMetadataKeys)+1 {
				t.Errorf("metadata has %d keys", len(meta))
			}
			got, reason := ReassembleQuery(meta)
			if reason != oracle.DropNone {
				t.Fatalf("reassembly dropped: %s", reason)
			}
			if got != c.query {
				t.Errorf("round trip changed the query: got %d bytes, want %d", len(got), len(c.query))
			}
		})
	}
}

func TestMaxChunksComesFromStripeCaps(t *testing.T) {
	// 50 keys minus tier, qn, referral_code and smoke.
	if MaxChunks != 46 || oracle.MaxQueryUnits != 46*490 {
		t.Fatalf("MaxChunks=%d oracle.MaxQueryUnits=%d", MaxChunks, oracle.MaxQueryUnits)
	}
	if ChunkSize > MaxMetadataValue {
		t.Fatal("chunks exceed Stripe's value limit")
	}
}

func TestResolve(t *testing.T) {
	q := strings.Repeat("z", 600)
	meta := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	full := metaOf(t, q)
	full["tier"] = "full"
	cases := []struct {
		name   string
		meta   map[string]string
		idea   string
		tier   oracle.Tier
		query  string
		reason oracle.DropReason
	}{
		{"metadata chunks", full, "", oracle.TierFull, q, oracle.DropNone},
		{"idea field first", meta("tier", "quick", "q0", "from metadata", "qn", "1"), "from the idea field", oracle.TierQuick, "from the idea field", oracle.DropNone},
		{"blank idea falls back to chunks", meta("tier", "quick", "q0", "from metadata", "qn", "1"), "  ", oracle.TierQuick, "from metadata", oracle.DropNone},
		{"legacy chunks without qn", meta("tier", "strategy", "q0", "ab", "q1", "cd"), "", oracle.TierStrategy, "abcd", oracle.DropNone},
		{"legacy chunks with a gap", meta("tier", "strategy", "q0", "ab", "q2", "ef"), "", oracle.TierStrategy, "", oracle.DropChunkMissing},
		{"tier missing", meta("q0", "x", "qn", "1"), "", "", "x", oracle.DropTierMissing},
		{"tier blank", meta("tier", " ", "q0", "x", "qn", "1"), "", "", "x", oracle.DropTierMissing},
		{"tier invalid", meta("tier", "premium", "q0", "x", "qn", "1"), "", "", "x", oracle.DropTierInvalid},
		{"tier wrong case", meta("tier", "Quick", "q0", "x", "qn", "1"), "", "", "x", oracle.DropTierInvalid},
		{"query empty", meta("tier", "quick"), "", oracle.TierQuick, "", oracle.DropQueryEmpty},
		{"invisible idea falls back to chunks", meta("tier", "quick", "q0", "from metadata", "qn", "1"), "\u200b\ufeff", oracle.TierQuick, "from metadata", oracle.DropNone},
		{"query of invisible characters only", meta("tier", "quick", "q0", "\u200b\u2060\u3164", "qn", "1"), "", oracle.TierQuick, "", oracle.DropQueryEmpty},
		{"qn zero", meta("tier", "quick", "qn", "0"), "", oracle.TierQuick, "", oracle.DropQueryEmpty},
		{"middle chunk missing", meta("tier", "quick", "q0", "a", "q2", "c", "qn", "3"), "", oracle.TierQuick, "", oracle.DropChunkMissing},
		{"last chunk missing", meta("tier", "quick", "q0", "a", "qn", "2"), "", oracle.TierQuick, "", oracle.DropChunkMissing},
		{"empty chunk", meta("tier", "quick", "q0", "a", "q1", "", "qn", "2"), "", oracle.TierQuick, "", oracle.DropChunkMissing},
		{"qn malformed", meta("tier", "quick", "q0", "a", "qn", "two"), "", oracle.TierQuick, "", oracle.DropChunkMissing},
		{"qn negative", meta("tier", "quick", "q0", "a", "qn", "-1"), "", oracle.TierQuick, "", oracle.DropChunkMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tier, query, reason := Resolve(c.meta, c.idea)
			if tier != c.tier || reason != c.reason {
				t.Fatalf("got tier %q reason %q, want %q %q", tier, reason, c.tier, c.reason)
			}
			if query != c.query {
				t.Fatalf("got query %q, want %q", query, c.query)
			}
		})
	}
}

func FuzzChunkRoundTrip(f *testing.F) {
	for _, s := range []string{"", "a", strings.Repeat("a", 489) + "🚀", strings.Repeat("é", 491), "e\u0301👩‍👩‍👧"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip()
		}
		chunks := Chunk(s)
		if strings.Join(chunks, "") != s {
			t.Fatalf("chunks do not reassemble to the input")
		}
		for _, c := range chunks {
			if !utf8.ValidString(c) || oracle.QueryUnits(c) > ChunkSize+1 || oracle.QueryUnits(c) > MaxMetadataValue || c == "" {
				t.Fatalf("bad chunk %q", c)
			}
		}
		for _, c := range chunks[:max(len(chunks)-1, 0)] {
			if oracle.QueryUnits(c) < ChunkSize {
				t.Fatalf("a chunk before the last holds %d units, under %d", oracle.QueryUnits(c), ChunkSize)
			}
		}
		if oracle.QueryUnits(s) <= oracle.MaxQueryUnits && len(chunks) > MaxChunks {
			t.Fatalf("a query of %d units needs %d chunks", oracle.QueryUnits(s), len(chunks))
		}
		if !oracle.Blank(s) {
			meta, err := QueryMetadata(s)
			if len(Chunk(s)) > MaxChunks {
				if oracle.ErrorCode(err) != oracle.CodeTooLarge {
					t.Fatalf("%d chunks accepted: %v", len(Chunk(s)), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, reason := ReassembleQuery(meta)
			if reason != oracle.DropNone || got != s {
				t.Fatalf("metadata round trip failed: %q", reason)
			}
		}
	})
}

// A query within oracle.MaxQueryUnits never needs one chunk too many, even
// when a two-unit character straddles every boundary: a chunk then takes it
// whole (491 units, under Stripe's 500), so the order form's counter, which
// counts units, never promises room the server would refuse.
func TestEveryQueryWithinTheLimitFitsTheMetadata(t *testing.T) {
	q := strings.Repeat("🚀"+strings.Repeat("a", 487), MaxChunks) + strings.Repeat("a", 46)
	odd := "a" + strings.Repeat("🚀", (oracle.MaxQueryUnits-1)/2)
	for _, q := range []string{q, odd} {
		if oracle.QueryUnits(q) > oracle.MaxQueryUnits {
			t.Fatalf("the query has %d units", oracle.QueryUnits(q))
		}
		meta, err := QueryMetadata(q)
		if err != nil || len(Chunk(q)) > MaxChunks {
			t.Fatalf("%d chunks: %v", len(Chunk(q)), err)
		}
		if got, reason := ReassembleQuery(meta); reason != oracle.DropNone || got != q {
			t.Fatalf("round trip: %q", reason)
		}
	}
	if _, err := QueryMetadata(q + strings.Repeat("🚀", 1000)); oracle.ErrorCode(err) != oracle.CodeTooLarge {
		t.Fatalf("a query over the limit: %v, want 413", err)
	}
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

func metaOf(t *testing.T, query string) map[string]string {
	t.Helper()
	m, err := QueryMetadata(query)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
