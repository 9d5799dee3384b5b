package sosfilter

import (
	"bytes"
	"fmt"
	"go/format"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/infra/tools"
	"42sisters.ai/oracle/shared/oracle"
)

// TestLookAlikesAreICUs: the committed table is what ICU says today, so it
// was generated, not edited, and a new ICU shows up as a diff to commit
// (with a new filter version).
func TestLookAlikesAreICUs(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import icu").Run(); err != nil {
		if os.Getenv(tools.RequireEnv) != "" {
			t.Fatalf("python3-icu is not installed (make tools installs it): %v", err)
		}
		t.Skip("python3-icu is not installed: run make tools (make test always does)")
	}
	out, err := exec.Command(py, "lookalikes.py").Output()
	if err != nil {
		t.Fatalf("lookalikes.py: %v", err)
	}
	want, err := format.Source(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("lookalikes.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("lookalikes.go is not what lookalikes.py writes with this machine's ICU: run go generate ./shared/sosfilter")
	}
}

func TestLookAlikeTable(t *testing.T) {
	for i := 1; i < len(lookAlikes); i++ {
		if lookAlikes[i-1].r >= lookAlikes[i].r {
			t.Fatalf("the table is not sorted at %U", lookAlikes[i].r)
		}
	}
	for _, tc := range []struct {
		r    rune
		want string
	}{
		{'ᴀ', "A"}, {'ɪ', "I"}, {'ᴏ', "O"}, {'ɴ', "N"}, {'ɢ', "G"}, {'ʟ', "L"}, // small capitals
		{'А', "A"}, {'І', "I"}, {'і', "i"}, {'о', "o"}, // Cyrillic
		{'Ꭺ', "A"}, {'ꭺ', "A"}, {'ꓮ', "A"}, {'ø', "o"}, {'ł', "l"}, // Cherokee, Lisu, Latin with a stroke
		{'Ʂ', "S"}, {'ꞩ', "s"}, {'Ɦ', "H"}, {'Ꞓ', "C"}, // Latin with a hook, stroke or bar the skeleton leaves alone
		{'Ф', "φ"}, {'ɸ', "φ"}, {'Ѱ', "ψ"}, {'∆', "δ"}, {'Г', "γ"}, {'п', "π"}, {'ß', "β"}, {'⨁', "⊕"}, {'►', "▶"}, // listed symbols' look-alikes
		{'Α', ""}, {'ο', ""}, {'a', ""}, {'⊤', ""}, // Greek stays Greek; ASCII and symbols are not in it
	} {
		if got := readsAs(tc.r); got != tc.want {
			t.Errorf("readsAs(%q) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

// Every character whose UTS #39 skeleton equals a listed symbol's reads as
// that symbol, from any script: each look-alike the table holds, put in
// place of the symbol in every listed term that has it, is caught at gate 1
// and gate 2, and each symbol with a skeleton other than Latin letters has
// its look-alikes in the table (checked against ICU by
// TestLookAlikesAreICUs).
func TestSymbolLookAlikesAreCaught(t *testing.T) {
	f := newFilter(t)
	var terms []string
	for _, e := range shippedList(t).Entries {
		if e.Category == CategorySymbol {
			terms = append(terms, e.Terms...)
		}
	}
	used := map[rune]bool{}
	for _, la := range lookAlikes {
		sym, _ := utf8.DecodeRuneInString(la.reads)
		if sym < utf8.RuneSelf {
			continue // reads as Latin letters: TestLetterDisguisesAreCaught
		}
		for _, term := range terms {
			var b strings.Builder
			hit := false
			for _, r := range term {
				if lowerFold(r) == sym {
					b.WriteRune(la.r)
					hit = true
				} else {
					b.WriteRune(r)
				}
			}
			if !hit {
				continue
			}
			used[la.r] = true
			text := "We looked at " + b.String() + " closely."
			if r := f.Text(text); r.Action != Quarantine {
				t.Errorf("%U %q for %q: %s %v", la.r, text, term, r.Action, r.Terms())
			}
			if rep := f.Mail("Your verdict", "See below.", "<p>"+text+"</p>", Own{}); rep.Action != Quarantine {
				t.Errorf("%U %q at gate 2: %s", la.r, text, rep.Action)
			}
		}
	}
	for _, la := range lookAlikes {
		if sym, _ := utf8.DecodeRuneInString(la.reads); sym >= utf8.RuneSelf && !used[la.r] {
			t.Errorf("%U reads %q, which no listed term holds", la.r, la.reads)
		}
	}
	if len(used) < 100 {
		t.Fatalf("only %d look-alikes of symbols", len(used))
	}
	for _, tc := range []struct{ text, id string }{
		{"The Ф factor matters.", "cat1.phi"},    // Cyrillic
		{"ɸ = 0.042 holds.", "cat3.phi-damping"}, // Latin phi
		{"Rising ∆Γ again.", "cat1.delta-gamma"}, // the increment sign and Greek
		{"ЃΓ", "cat1.greek-letter"},              // a Cyrillic letter that decomposes to one reading as gamma
		{"Status: Σ.► now.", "cat1.exec-run"},    // a pointer for the triangle
		{"Sealed ⨁ today.", "cat1.sealed"},       // the n-ary circled plus
		{"ЛС", "cat1.lambda-c"},                  // a Cyrillic word that is the symbol whole
	} {
		if r := f.Text(tc.text); r.Action != Quarantine || !slices.Contains(r.Terms(), tc.id) {
			t.Errorf("%q: %s %v, want %s", tc.text, r.Action, r.Terms(), tc.id)
		}
	}
}

// A Cyrillic letter that looks like a Greek one is a letter of its word in
// a Russian or Ukrainian sentence (issue 41: every such sentence was held
// for review), and still the symbol wherever else it stands.
func TestScriptsInTheirOwnWords(t *testing.T) {
	f := newFilter(t)
	for _, tc := range []struct {
		text string
		want string // "" passes; otherwise the entry that quarantines it
	}{
		{"Прочие расходы растут.", ""},                   // п, и inside Russian words
		{"Мы и они пошли к реке.", ""},                   // the conjunction и, the preposition к
		{"И вот результат.", ""},                         // at the sentence's start
		{"Фаза роста закончилась.", ""},                  // Ф opening a word
		{"Я п'ять разів казав, і й далі.", ""},           // Ukrainian: an apostrophe in a word, the conjunction й
		{"Поточний стан: єдиний ринок.", ""},             // є
		{"У місті вже є три кав'ярні.", ""},              // the Ukrainian verb є, alone
		{"Цена — пять рублей, и это много.", ""},         // punctuation around the conjunction
		{"The и factor.", "cat1.greek-letter"},           // alone in an English sentence
		{"и", "cat1.greek-letter"},                       // alone
		{"5 и 6", "cat1.greek-letter"},                   // between numbers, not words
		{"The Ф factor matters.", "cat1.phi"},            // a letter that is no word alone
		{"Прочие Ф", "cat1.phi"},                         // even in a Russian sentence
		{"kaп", "cat1.greek-letter"},                     // mixed into a Latin word
		{"ЛС", "cat1.lambda-c"},                          // a Cyrillic word that is the symbol whole
		{"Фζ", "cat1.phi-zeta"},                          // beside a Greek letter
		{"ɅC", "cat1.lambda-c"},                          // Latin look-alikes are never a word's own
		{"Καλημέρα σας", "cat1.greek-letter"},            // Greek letters are the symbols (GAP-C)
		{"Фаза Ф роста", "cat1.phi"},                     // one reading in its word, one alone
		{"Мы \u200bи\u200b они", ""},                     // what is not seen is no word
		{"Мы и\nGLOSS", "cat2.gloss"},                    // the Latin term is read as ever
		{"Сегодня GLОSS", "cat2.gloss"},                  // a Cyrillic О in a Latin word
		{strings.Repeat("п", 1000), "cat1.greek-letter"}, // no word is that long
	} {
		r := f.Text(tc.text)
		switch {
		case tc.want == "" && r.Action != Pass:
			t.Errorf("%q: %s %v, want it untouched", tc.text, r.Action, r.Terms())
		case tc.want != "" && (r.Action != Quarantine || !slices.Contains(r.Terms(), tc.want)):
			t.Errorf("%q: %s %v, want %s", tc.text, r.Action, r.Terms(), tc.want)
		}
		rep := f.Mail("Your verdict", tc.text, "<p>"+tc.text+"</p>", Own{})
		if (tc.want == "") != (rep.Action == Pass) {
			t.Errorf("%q at gate 2: %s %v", tc.text, rep.Action, rep.Terms())
		}
	}
}

// Latin letters with a hook, tail, stroke or bar read as their letters,
// alone or mixed with other scripts' look-alikes in one word.
func TestMarkedLatinLettersAreCaught(t *testing.T) {
	f := newFilter(t)
	for _, tc := range []struct {
		text string
		id   string
	}{
		{"GLOꞨꞨ reviewed it.", "cat2.gloss"},  // S with oblique stroke
		{"АIОꞤ reviewed it.", "cat2.aion"},    // Cyrillic A and O, N with oblique stroke
		{"ꞒꞨDM is the model.", "cat3.csdm"},   // C with bar, S with oblique stroke
		{"ƇꞪꞦОМА carried it.", "cat2.chroma"}, // C with hook, Cyrillic O, M, A
		{"ꝂILL BОX here.", "cat3.kill-box"},   // K with diagonal stroke, Cyrillic O
		{"MNEMOꞨ recalls.", "cat2.mnemos"},
	} {
		if r := f.Text(tc.text); r.Action == Pass || !slices.Contains(r.Terms(), tc.id) {
			t.Errorf("%q: %s %v, want %s", tc.text, r.Action, r.Terms(), tc.id)
		}
	}
}

// letterDisguises spell a term as a hostile writer would, generated for
// every term made of letters so that a new entry is covered too.
var letterDisguises = map[string]func(string) string{
	"spaced":       func(s string) string { return spell(s, " ") },
	"dotted":       func(s string) string { return spell(s, ".") },
	"slashed":      func(s string) string { return spell(s, "/") },
	"hyphenated":   func(s string) string { return spell(s, "-") },
	"starred":      func(s string) string { return spell(s, " * ") },
	"vertical":     func(s string) string { return spell(s, "\n") },
	"leet-one":     func(s string) string { return leetSpell(s, 1) },
	"leet-all":     func(s string) string { return leetSpell(s, -1) },
	"small-caps":   smallCaps,
	"other-script": otherScript,
	"reversed":     func(s string) string { return "\u202e" + reverse(s) + "\u202c" },
	"spaced-leet":  func(s string) string { return spell(leetSpell(s, -1), " ") },
	"caps-dotted":  func(s string) string { return spell(smallCaps(s), ". ") },
	// A one-letter word before the letters spelt apart joins their run.
	"spaced-after-a": func(s string) string { return "a " + spell(s, " ") },
	"parenthesized":  parenthesizedLetters,
	"symbols":        symbolLetters,
}

// symbolLetters writes the a, s, i and l inside each word of s (not its
// first or last letter) as "@", "$", "!" and "|".
func symbolLetters(s string) string {
	b := []byte(s)
	for i := 1; i+1 < len(b); i++ {
		if !isAlnumByte(b[i-1]) || !isAlnumByte(b[i+1]) {
			continue
		}
		switch b[i] {
		case 'a', 'A':
			b[i] = '@'
		case 's', 'S':
			b[i] = '$'
		case 'i', 'I':
			b[i] = '!'
		case 'l', 'L':
			b[i] = '|'
		}
	}
	return string(b)
}

// parenthesizedLetters writes each ASCII letter of s parenthesized, in its
// case: "⒦", "🄚".
func parenthesizedLetters(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return 0x249C + r - 'a'
		case 'A' <= r && r <= 'Z':
			return 0x1F110 + r - 'A'
		}
		return r
	}, s)
}

// spell writes each letter apart, with sep between them, the words of a
// phrase and the parts of an identifier too (which the disguise view reads
// as the phrase joined).
func spell(s, sep string) string {
	var b strings.Builder
	for i, r := range []rune(strings.NewReplacer(" ", "", "_", "").Replace(s)) {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteRune(r)
	}
	return b.String()
}

var leetDigits = map[rune]rune{'o': '0', 'i': '1', 'l': '1', 'z': '2', 'e': '3', 'a': '4', 's': '5', 't': '7', 'b': '8', 'g': '9'}

// leetSpell puts digits for up to n letters of each word (all for n < 0;
// the parts of an identifier are words too),
// keeping one letter in each so that it still reads as a word, not a
// number.
func leetSpell(s string, n int) string {
	words := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '_' })
	seps := strings.Map(func(r rune) rune {
		if r == ' ' || r == '_' {
			return r
		}
		return -1
	}, s)
	for w, word := range words {
		rs := []rune(word)
		letters := 0
		for _, r := range rs {
			if unicode.IsLetter(r) {
				letters++
			}
		}
		done := 0
		for i, r := range rs {
			d, ok := leetDigits[unicode.ToLower(r)]
			if !ok || (n >= 0 && done >= n) || done+1 >= letters {
				continue
			}
			rs[i] = d
			done++
		}
		words[w] = string(rs)
	}
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(seps[i-1])
		}
		b.WriteString(w)
	}
	return b.String()
}

// lookAlikeOf finds a letter of the table that reads as r, preferring a
// small capital (small) or a letter of another script than Latin.
func lookAlikeOf(r rune, small bool) rune {
	up := string(unicode.ToUpper(r))
	for _, la := range lookAlikes {
		if la.reads != up && la.reads != string(r) {
			continue
		}
		isSmall := la.r >= 0x1d00 && la.r <= 0x1d7f || la.r >= 0x0250 && la.r <= 0x02af
		if small == isSmall && (small || !unicode.In(la.r, unicode.Latin)) {
			return la.r
		}
	}
	return r
}

func smallCaps(s string) string {
	return strings.Map(func(r rune) rune { return lookAlikeOf(r, true) }, s)
}

func otherScript(s string) string {
	return strings.Map(func(r rune) rune { return lookAlikeOf(r, false) }, s)
}

func reverse(s string) string {
	rs := []rune(s)
	slices.Reverse(rs)
	return string(rs)
}

// letterTerms are the shipped list's terms made of letters, with their
// entries.
func letterTerms(t *testing.T) (out []struct {
	e    entryFile
	term string
}) {
	for _, e := range shippedList(t).Entries {
		for _, term := range e.Terms {
			if _, ok := letterTerm(foldString(strings.TrimSuffix(term, "."))); ok {
				out = append(out, struct {
					e    entryFile
					term string
				}{e, strings.ReplaceAll(term, ".", "")})
			}
		}
	}
	if len(out) < 40 {
		t.Fatalf("only %d letter terms: the list or letterTerm changed", len(out))
	}
	return out
}

// TestLetterDisguisesAreCaught: every term made of letters, in every
// disguise, is stopped at gate 1 (Text) and quarantined at gate 2 (Mail),
// where it is also cut by markup and character references.
func TestLetterDisguisesAreCaught(t *testing.T) {
	f := newFilter(t)
	for _, lt := range letterTerms(t) {
		for name, disguise := range letterDisguises {
			if name == "spaced-after-a" && lt.e.Context == "utterance" {
				continue // a word before it makes it no radio reply ("a copy that")
			}
			text := frame(t, lt.e, disguise(lt.term))
			if r := f.Text(text); r.Action == Pass {
				t.Errorf("%s %s: %q passed", lt.e.ID, name, text)
			}
			html := "<p>" + strings.ReplaceAll(text, " ", "<b></b>&#32;") + "</p>"
			if rep := f.Mail("Your verdict", "See below.", html, Own{}); rep.Action != Quarantine {
				t.Errorf("%s %s in HTML: %q gave %s", lt.e.ID, name, html, rep.Action)
			}
			if rep := f.Mail("Your verdict", text, "<p>See above.</p>", Own{}); rep.Action != Quarantine {
				t.Errorf("%s %s in the text part: %q gave %s", lt.e.ID, name, text, rep.Action)
			}
		}
	}
}

// mixedLetters are the letters an adversary mixes into a listed word, by
// the Latin letter a reader takes each for: Cherokee, Armenian, Cyrillic
// and Latin letters with a hook, each drawn differently from the letter it
// copies. The palochka, "Լ" and "ʋ" read as their letter only through
// readings.go.
var mixedLetters = map[rune][]rune{
	'A': {'Ꭺ', 'А'}, 'B': {'Ᏼ', 'В'}, 'C': {'Ꮯ', 'С'}, 'D': {'Ꭰ'}, 'E': {'Ꭼ', 'Е'}, 'G': {'Ꮐ'}, 'H': {'Ꮋ', 'Н'},
	'J': {'Ꭻ'}, 'K': {'Ꮶ', 'К'}, 'L': {'Ꮮ', 'Լ'}, 'M': {'Ꮇ', 'М'}, 'O': {'Օ', 'О'}, 'P': {'Ꮲ', 'Р'},
	'R': {'Ꮢ'}, 'S': {'Ꮪ', 'Տ'}, 'T': {'Ꭲ', 'Т'}, 'U': {'Ս'}, 'V': {'Ꮩ'}, 'W': {'Ꮃ'}, 'X': {'Х'}, 'Y': {'У'}, 'Z': {'Ꮓ'},
	'a': {'а'}, 'b': {'ɓ'}, 'c': {'с', 'ƈ'}, 'd': {'ԁ', 'ɗ'}, 'e': {'е'}, 'f': {'ƒ'}, 'g': {'ց', 'ɠ'},
	'h': {'հ', 'һ', 'ɦ'}, 'i': {'і', 'Ꭵ', 'ӏ'}, 'j': {'ј'}, 'k': {'ƙ'}, 'l': {'ӏ', 'ꞁ', 'լ'}, 'm': {'ɱ'},
	'n': {'ո', 'ɲ'}, 'o': {'օ', 'о'}, 'p': {'р', 'ƥ'}, 'q': {'զ', 'ԛ', 'ʠ'}, 'r': {'ɽ'}, 's': {'ѕ', 'ʂ'},
	't': {'ƭ'}, 'u': {'ս', 'ʋ'}, 'v': {'ʋ'}, 'w': {'ԝ'}, 'x': {'х'}, 'y': {'у', 'ƴ'}, 'z': {'ȥ'},
}

// mixedSpelling writes term with each letter, at chance p, one of its
// look-alikes from mixedLetters; anyCase lets a lowercase letter take an
// uppercase one's too ("kiԼl"), for an entry caught in any case.
func mixedSpelling(r *rand.Rand, term string, p float64, anyCase bool) string {
	var b strings.Builder
	for _, c := range term {
		opts := mixedLetters[c]
		if anyCase && unicode.IsLower(c) {
			opts = append(slices.Clip(opts), mixedLetters[unicode.ToUpper(c)]...)
		}
		if len(opts) > 0 && r.Float64() < p {
			b.WriteRune(opts[r.IntN(len(opts))])
		} else {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// TestMixedScriptSpellingsAreCaught writes every term made of letters as
// an adversary would, a few of its letters or all of them taken from
// Cherokee, Armenian, Cyrillic and hooked Latin, drawn from a seeded
// source: none reaches a customer.
func TestMixedScriptSpellingsAreCaught(t *testing.T) {
	f := newFilter(t)
	r := rand.New(rand.NewPCG(41, 2026))
	tried := 0
	for _, lt := range letterTerms(t) {
		for _, p := range []float64{0.25, 0.5, 1} {
			for range 40 {
				disguised := mixedSpelling(r, lt.term, p, lt.e.Case == "any")
				if disguised == lt.term {
					continue
				}
				tried++
				if text := frame(t, lt.e, disguised); f.Text(text).Action == Pass {
					t.Errorf("%s: %q passed", lt.e.ID, text)
				}
			}
		}
	}
	if tried < 5000 {
		t.Fatalf("only %d spellings tried", tried)
	}
}

// TestNamedDisguises: the spellings found when the filter was attacked, and
// how each is decided.
func TestNamedDisguises(t *testing.T) {
	f := newFilter(t)
	for _, tc := range []struct {
		text string
		want Action
		id   string
	}{
		{"ᴀɪᴏɴ reviewed it.", Replace, "cat2.aion"}, // small capitals read as capitals: the crew's spelling
		{"A ɢʟᴏss finish.", Quarantine, "cat2.gloss"},
		{"A I O N reviewed it.", Quarantine, "cat2.aion"},
		{"Ǳ A I O N reviewed it.", Quarantine, "cat2.aion"}, // a digraph is a word of two letters, not a run's first
		{"ǲ, A 1 0 N.", Quarantine, "cat2.aion"},
		{"G.L.O.S.S reviewed it.", Quarantine, "cat2.gloss"},
		{"A/I/O/N reviewed it.", Quarantine, "cat2.aion"},
		{"A\nI\nO\nN reviewed it.", Quarantine, "cat2.aion"},
		{"GL0SS reviewed it.", Quarantine, "cat2.gloss"},
		{"A1ON reviewed it.", Quarantine, "cat2.aion"},
		{"G1OSS reviewed it.", Quarantine, "cat2.gloss"},
		{"D R L 0 G 0 S reviewed it.", Quarantine, "cat2.dr-logos"},
		{"DR. L0G0S reviewed it.", Quarantine, "cat2.dr-logos"},
		{"Ask the 4ION team.", Quarantine, "cat2.aion"},
		{"k i l l b o x", Quarantine, "cat3.kill-box"},
		// Letters that read two ways, and one the skeleton leaves alone
		// (readings.go), among other scripts' look-alikes.
		{"Note: kiԼl Ᏼox here.", Quarantine, "cat3.kill-box"},
		{"Note: kiӏl box here.", Quarantine, "cat3.kill-box"},
		{"Note: kiꞁl box here.", Quarantine, "cat3.kill-box"},
		{"Note: ѕinai biᏞӏiаrd here.", Quarantine, "cat3.sinai-billiard"},
		{"Note: yᎥeӏd mᎪɲdatЕ here.", Quarantine, "cat3.yield-mandate"},
		{"Note: ᎠR. ԼOGOS here.", Quarantine, "cat2.dr-logos"},
		{"The maniƒoӏds show strain.", Quarantine, "cat3.manifolds"},
		{"Note: ʋerdiсtCacɦe here.", Quarantine, "cat3.verdict-cache"},
		{"Note: оɽacle_tоӏl here.", Quarantine, "cat3.oracle-toll"},
		{"ОʋЕr Аnd ouТ.", Quarantine, "cat4.over-and-out"},
		{"kiIl box", Pass, ""},                                 // ASCII I for l: a limit (doc.go)
		{"We saw a k i l l box.", Quarantine, "cat3.kill-box"}, // "a" joins the run
		{"Note: a A I O N here.", Quarantine, "cat2.aion"},
		{"Note: ⒦⒤⒧⒧ ⒝⒪⒳ here.", Quarantine, "cat3.kill-box"},
		{"Note: 🄐🄘🄞🄝 here.", Replace, "cat2.aion"}, // read as written, as small capitals are
		{"Note: k!ll box here.", Quarantine, "cat3.kill-box"},
		{"C!L 0 D reviewed it.", Quarantine, "cat2.clod"}, // "!" parting letters spelt apart
		{"C!1 0 D reviewed it.", Quarantine, "cat2.clod"},
		{"The m@nifolds show strain.", Quarantine, "cat3.manifolds"},
		{"Note: $inai billiard here.", Quarantine, "cat3.sinai-billiard"},
		{"Note: yi3ld m@ndat3 here.", Quarantine, "cat3.yield-mandate"},
		{"Write to help@42sisters.ai, buy $AAPL at $5, run a|b tests. Wow!", Pass, ""},
		{"The T.M.M. said so.", Replace, "cat3.tmm"}, // an abbreviation as listed, not a disguise
		// Ordinary English and business shorthand pass.
		{"A high-gl0ss finish.", Pass, ""}, // lowercase: the English word, however spelt
		{"A c10d of earth.", Pass, ""},     // as "clod", though C.L.O.D. matches in any case
		{"C10D reviewed it.", Quarantine, "cat2.clod"},
		{"Use A/B tests in Q4 with B2B leads, 10x growth, 24h support and a 3rd hire.", Pass, ""},
		{"It's a plan: I/O, Q&A, R&D, P&L and U.S. sales at 5 p.m. on a 4 x 4 grid.", Pass, ""},
		{"Plan A I\n\nO N", Pass, ""}, // an empty line parts them
		{"Louis IX and Chapter XL.", Pass, ""},
	} {
		r := f.Text(tc.text)
		if r.Action != tc.want || (tc.id != "" && !slices.Contains(r.Terms(), tc.id)) {
			t.Errorf("%q: %s %v, want %s %s", tc.text, r.Action, r.Terms(), tc.want, tc.id)
		}
	}
}

// TestOrdinaryEnglishIsNotTouched is the false-positive corpus: every word
// of Debian's American English word list (wamerican), alone and in lines,
// the English prose of the licence texts every Debian system ships
// (base-files), every customer-facing template, and a thousand verdicts as
// the model writes them. Nothing is replaced or quarantined, except a word
// that is itself a blocked term as listed.
func TestOrdinaryEnglishIsNotTouched(t *testing.T) {
	f := newFilter(t)
	words := readCorpus(t, "/usr/share/dict/american-english", "wamerican")
	lines := strings.Split(strings.TrimSpace(words), "\n")
	if len(lines) < 90000 {
		t.Fatalf("the word list has %d words", len(lines))
	}
	// A word may be hit only when it is a term as listed ("Gamma" is the
	// crew's name in a spelling the case rule cannot call safe).
	termWord := map[string]bool{}
	for _, e := range shippedList(t).Entries {
		for _, term := range e.Terms {
			termWord[foldString(term)] = true
		}
	}
	isTerm := func(w string) bool {
		w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "s")
		return termWord[foldString(w)] || termWord[foldString(w+"s")]
	}
	allowed := map[string]bool{}
	for _, w := range lines {
		if r := f.Text(w); r.Action != Pass {
			if !isTerm(w) {
				t.Errorf("the word %q: %s %v", w, r.Action, r.Terms())
			}
			allowed[w] = true
		}
	}
	// In lines of twelve, where one-letter words sit side by side ("B",
	// "B's", "Ba") and the disguise view reads across words.
	for i := 0; i < len(lines); i += 12 {
		chunk := lines[i:min(i+12, len(lines))]
		if slices.ContainsFunc(chunk, func(w string) bool { return allowed[w] }) {
			continue
		}
		// Commas, so that two words cannot form a listed phrase ("breaker
		// breaker's") while the disguise view still reads across them.
		if r := f.Text(strings.Join(chunk, ", ")); r.Action != Pass {
			t.Errorf("the words %q: %s %v", chunk, r.Action, r.Terms())
		}
	}

	prose := 0
	for _, name := range []string{"GPL-3", "GPL-2", "LGPL-3", "LGPL-2.1", "Apache-2.0", "MPL-2.0", "MPL-1.1", "GFDL-1.3", "GFDL-1.2", "Artistic", "CC0-1.0"} {
		text := readCorpus(t, "/usr/share/common-licenses/"+name, "base-files")
		for _, para := range strings.Split(text, "\n\n") {
			prose += len(strings.Fields(para))
			if r := f.Text(para); r.Action != Pass {
				t.Errorf("%s: %q: %s %v", name, para, r.Action, r.Terms())
			}
		}
	}
	if prose < 20000 {
		t.Fatalf("only %d words of prose", prose)
	}

	templates, err := filepath.Glob("../../functions/*/*/templates/*")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../../functions/*/templates/*")
	templates = append(templates, more...)
	// This package's neighbours in the repository's shared/: the chat's
	// apology, the pages' frame.
	neighbours, _ := filepath.Glob("../*/templates/*")
	templates = append(templates, neighbours...)
	frame, _ := filepath.Glob("../webpage/*.html")
	templates = append(templates, frame...)
	if len(templates) < 20 {
		t.Fatalf("found %d templates", len(templates))
	}
	for _, p := range templates {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// The templates' own comments are for us, not for the customer.
		text := templateComment.ReplaceAllString(string(b), "")
		html := strings.HasSuffix(p, ".html")
		if rep := f.Mail("", "", text, Own{}); html && rep.Action != Pass {
			t.Errorf("%s: %s %v", p, rep.Action, rep.Terms())
		}
		if r := f.Text(text); !html && r.Action != Pass {
			t.Errorf("%s: %s %v", p, r.Action, r.Terms())
		}
	}

	for i := range 1000 {
		tier := []oracle.Tier{oracle.TierQuick, oracle.TierFull, oracle.TierStrategy}[i%3]
		a := fakegemini.Verdict(fmt.Sprintf("Should I open business number %d?", i), tier)
		if _, rep := f.Analysis(a); rep.Action != Pass {
			t.Errorf("generated verdict %d (%s): %s %v", i, tier, rep.Action, rep.Terms())
		}
	}
}

var templateComment = regexp.MustCompile(`(?s)\{\{-?\s*/\*.*?\*/\s*-?\}\}`)

// readCorpus reads a file from a Debian package that make tools installs.
func readCorpus(t *testing.T, path, pkg string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv(tools.RequireEnv) != "" {
			t.Fatalf("%s (Debian's %s) is missing: run make tools", path, pkg)
		}
		t.Skipf("%s (Debian's %s) is missing: run make tools (make test always does)", path, pkg)
	}
	return string(b)
}

// A listed term written mostly in digits, whose remaining letters and
// their place identify it: a listed number with letters for some digits,
// and a word of digits alone that continues a phrase spelt in digits.
func TestMostlyDigitsAreCaught(t *testing.T) {
	f := newFilter(t)
	for _, tc := range []struct {
		text string
		want Action
		id   string
	}{
		{"1O-4, we go.", Quarantine, "cat4.ten-four"},
		{"The constant is O.O42 here.", Quarantine, "cat3.damping-constant"},
		{"Φ = 0.O42 again.", Quarantine, "cat3.phi-damping"},
		{"A 97.A% threshold.", Quarantine, "cat3.threshold-value"},
		{"It ran on 0R4C13_7011 overnight.", Quarantine, "cat3.oracle-toll"},
		{"Ask 51M0N5_4C7U470R.", Quarantine, "cat3.simons-actuator"},
		// Ordinary shorthand reads as it is.
		{"B2B sales in Q4 2025 grew 10x; A4 sheets and a Z80 chip.", Pass, ""},
		{"Plan for 2O26 and T1 lines.", Pass, ""},
		{"It costs $O.O42 per call.", Pass, ""}, // money, as 0.042 is
	} {
		r := f.Text(tc.text)
		if r.Action != tc.want || (tc.id != "" && !slices.Contains(r.Terms(), tc.id)) {
			t.Errorf("%q: %s %v, want %s %s", tc.text, r.Action, r.Terms(), tc.want, tc.id)
		}
		if tc.want == Quarantine {
			if rep := f.Mail("Your verdict", tc.text, "<p>Fine.</p>", Own{}); rep.Action != Quarantine {
				t.Errorf("%q at gate 2: %s", tc.text, rep.Action)
			}
		}
	}
}
