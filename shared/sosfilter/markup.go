package sosfilter

import (
	"html"
	"strings"

	"42sisters.ai/oracle/shared/oracle"
)

// The model writes plain text, yet it may write markup: a tag or a
// character reference between a term's letters ("AI<b></b>ON",
// "AI&#79;N") reads as the term once rendered, and as junk when it is not.
// Unmarked takes the markup out of the model's text before gate 1 reads
// it, so the filter reads, and the reader sees, the same text: the tags
// gone, the references their characters.

// Unmarked returns s without markup: each HTML tag or comment removed, each
// character reference ("&#79;", "&#x4F;", "&amp;") replaced by its
// character, until none is left (a reference may spell a tag:
// "AI&lt;b&gt;ON"). A '<' that opens no tag ("a <5% margin") and an '&'
// that starts no complete reference ("R&D", "AT&T") are text and stay.
// Text without markup is returned as it is.
func Unmarked(s string) string {
	for range maxUnmark {
		out := unmarkOnce(s)
		if out == s {
			break
		}
		s = out
	}
	return s
}

// maxUnmark bounds the passes of Unmarked: markup escaped more deeply than
// this is left as text, which gate 2 reads as the reader does.
const maxUnmark = 8

func unmarkOnce(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			if n := markupTag(s, i); n > 0 {
				i += n
				changed = true
				continue
			}
		case '&':
			if n := reference(s, i); n > 0 {
				b.WriteString(html.UnescapeString(s[i : i+n]))
				i += n
				changed = true
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	if !changed {
		return s
	}
	return b.String()
}

// maxTag bounds a tag's length: a '<' whose '>' is further away, or on
// another line, is text.
const maxTag = 256

// markupTag is the length of the tag or comment at s[i] ('<'), or 0: a
// comment "<!-- ... -->", or '<', an optional '/', '!' or '?', a letter,
// then anything but '<', '>' and a line break up to the closing '>'.
func markupTag(s string, i int) int {
	if strings.HasPrefix(s[i:], "<!--") {
		if j := strings.Index(s[i+4:], "-->"); j >= 0 {
			return 4 + j + 3
		}
		return 0
	}
	j := i + 1
	if j < len(s) && (s[j] == '/' || s[j] == '!' || s[j] == '?') {
		j++
	}
	if j >= len(s) || !(('a' <= s[j] && s[j] <= 'z') || ('A' <= s[j] && s[j] <= 'Z')) {
		return 0
	}
	for ; j < len(s) && j-i < maxTag; j++ {
		switch s[j] {
		case '>':
			return j + 1 - i
		case '<', '\n', '\r':
			return 0
		}
	}
	return 0
}

// reference is the length of the complete character reference at s[i]
// ('&'), its semicolon included, or 0: "&#" and digits, "&#x" and hex
// digits, or '&' and a name that HTML defines.
func reference(s string, i int) int {
	j := i + 1
	switch {
	case j < len(s) && s[j] == '#':
		j++
		hex := j < len(s) && (s[j] == 'x' || s[j] == 'X')
		if hex {
			j++
		}
		start := j
		for j < len(s) && j-start < 8 && digitVal(s[j], hex) >= 0 {
			j++
		}
		if j == start || j >= len(s) || s[j] != ';' {
			return 0
		}
	default:
		start := j
		for j < len(s) && j-start < 32 && isAlnumByte(s[j]) {
			j++
		}
		if j == start || j >= len(s) || s[j] != ';' {
			return 0
		}
		if html.UnescapeString(s[i:j+1]) == s[i:j+1] {
			return 0 // not a name HTML defines
		}
	}
	return j + 1 - i
}

// UnmarkedAnalysis is a with Unmarked applied to every text the customer
// reads: the summary, each dimension's analysis, and the strategy. A text
// made of nothing but markup keeps it, so that no required text is left
// blank; the filter still reads its attributes. a is not modified.
func UnmarkedAnalysis(a oracle.Analysis) oracle.Analysis {
	fields := analysisFields(a)
	changed := false
	for i := range fields {
		fields[i].out = Unmarked(fields[i].text)
		if strings.TrimSpace(fields[i].out) == "" {
			fields[i].out = fields[i].text
		}
		changed = changed || fields[i].out != fields[i].text
	}
	if !changed {
		return a
	}
	return rebuild(a, fields)
}
