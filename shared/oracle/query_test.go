package oracle

import (
	"strings"
	"testing"
	"unicode/utf8"
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
		{"maximum", strings.Repeat("f", MaxQueryUnits), MaxChunks},
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
				if n := QueryUnits(ch); n > ChunkSize || n == 0 {
					t.Errorf("chunk %d has %d UTF-16 units, want 1..%d", i, n, ChunkSize)
				}
			}
			meta := QueryMetadata(c.query)
			if len(meta) > StripeMaxMetadataKeys-len(reservedMetadataKeys)+1 {
				t.Errorf("metadata has %d keys", len(meta))
			}
			got, reason := ReassembleQuery(meta)
			if reason != DropNone {
				t.Fatalf("reassembly dropped: %s", reason)
			}
			if got != c.query {
				t.Errorf("round trip changed the query: got %d bytes, want %d", len(got), len(c.query))
			}
		})
	}
}

func TestValidateQuery(t *testing.T) {
	cases := []struct {
		name  string
		query string
		code  Code // "" means valid
	}{
		{"ordinary", "Should I open a bakery?", ""},
		{"empty", "", CodeInvalid},
		{"blank", " \n\t ", CodeInvalid},
		{"invalid UTF-8", "abc\xff", CodeInvalid},
		{"NUL", "a\x00b", CodeInvalid},
		{"maximum", strings.Repeat("x", MaxQueryUnits), ""},
		{"one past the maximum", strings.Repeat("x", MaxQueryUnits+1), CodeTooLarge},
		{"huge", strings.Repeat("x", 1<<20), CodeTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateQuery(c.query)
			if c.code == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if ErrorCode(err) != c.code {
				t.Fatalf("want %s, got %v", c.code, err)
			}
		})
	}
}

func TestMaxChunksComesFromStripeCaps(t *testing.T) {
	// 50 keys minus tier, qn, referral_code and smoke.
	if MaxChunks != 46 || MaxQueryUnits != 46*490 {
		t.Fatalf("MaxChunks=%d MaxQueryUnits=%d", MaxChunks, MaxQueryUnits)
	}
	if ChunkSize > StripeMaxMetadataValue {
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
	full := QueryMetadata(q)
	full["tier"] = "full"
	cases := []struct {
		name   string
		meta   map[string]string
		idea   string
		tier   Tier
		query  string
		reason DropReason
	}{
		{"metadata chunks", full, "", TierFull, q, DropNone},
		{"idea field first", meta("tier", "quick", "q0", "from metadata", "qn", "1"), "from the idea field", TierQuick, "from the idea field", DropNone},
		{"blank idea falls back to chunks", meta("tier", "quick", "q0", "from metadata", "qn", "1"), "  ", TierQuick, "from metadata", DropNone},
		{"legacy chunks without qn", meta("tier", "strategy", "q0", "ab", "q1", "cd"), "", TierStrategy, "abcd", DropNone},
		{"legacy chunks with a gap", meta("tier", "strategy", "q0", "ab", "q2", "ef"), "", TierStrategy, "", DropChunkMissing},
		{"tier missing", meta("q0", "x", "qn", "1"), "", "", "x", DropTierMissing},
		{"tier blank", meta("tier", " ", "q0", "x", "qn", "1"), "", "", "x", DropTierMissing},
		{"tier invalid", meta("tier", "premium", "q0", "x", "qn", "1"), "", "", "x", DropTierInvalid},
		{"tier wrong case", meta("tier", "Quick", "q0", "x", "qn", "1"), "", "", "x", DropTierInvalid},
		{"query empty", meta("tier", "quick"), "", TierQuick, "", DropQueryEmpty},
		{"qn zero", meta("tier", "quick", "qn", "0"), "", TierQuick, "", DropQueryEmpty},
		{"middle chunk missing", meta("tier", "quick", "q0", "a", "q2", "c", "qn", "3"), "", TierQuick, "", DropChunkMissing},
		{"last chunk missing", meta("tier", "quick", "q0", "a", "qn", "2"), "", TierQuick, "", DropChunkMissing},
		{"empty chunk", meta("tier", "quick", "q0", "a", "q1", "", "qn", "2"), "", TierQuick, "", DropChunkMissing},
		{"qn malformed", meta("tier", "quick", "q0", "a", "qn", "two"), "", TierQuick, "", DropChunkMissing},
		{"qn negative", meta("tier", "quick", "q0", "a", "qn", "-1"), "", TierQuick, "", DropChunkMissing},
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
			if !utf8.ValidString(c) || QueryUnits(c) > ChunkSize || c == "" {
				t.Fatalf("bad chunk %q", c)
			}
		}
		if s != "" && strings.TrimSpace(s) != "" {
			got, reason := ReassembleQuery(QueryMetadata(s))
			if reason != DropNone || got != s {
				t.Fatalf("metadata round trip failed: %q", reason)
			}
		}
	})
}
