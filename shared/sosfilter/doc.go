// Package sosfilter is the outbound content filter of SPEC_ORACLE_SOS_FILTER:
// it stops internal vocabulary (LATTICE symbols, crew callsigns, internal
// terms, CB radio phrases) from reaching a customer, by passing, repairing
// or quarantining every customer-facing text.
//
// # Use
//
// New loads the block list embedded in the binary (blocklist.json) and
// fails if it is malformed or inconsistent; call it at cold start and do
// not serve without it. A Filter is read-only and safe for concurrent use;
// no call keeps anything (invariant 7).
//
//   - Text(text) filters one string (an error or fallback message).
//   - Analysis(a) is gate 1: every customer-visible field of a verdict of
//     any tier, decided as one payload.
//   - Mail(subject, text, html, own) is gate 2: the finished email. It
//     never edits; any hit quarantines (see Mail for why). own marks where
//     the email shows the customer's own submission back to them: that is
//     theirs, and the filter reads everything around it, never across it.
//
// The outcome is PASS (the input itself, same string, nothing allocated on
// this path), REPLACE (a repaired copy) or QUARANTINE (no text at all: the
// caller keeps the raw payload for the quarantine record). Hits name the
// block list entry (e.g. "cat3.tmm"), its category, what it called for
// and, for a verdict or email, the field ("breakdown.Stability.analysis");
// never the matched text.
//
// # The block list
//
// blocklist.json holds every entry of the spec's four categories with a
// stable id ("cat<category>.<name>"), its terms, where it matches (a whole
// word, a word start, or anywhere for symbols), its case rule, its context
// rule, its action (REPLACE with a substitute, or QUARANTINE), whether the
// spec or this package decided that action ("spec" or "GAP-D"), and the
// reason. Version is the list's version plus a digest of the file, so an
// edited list is always told apart in the stored verdicts and records.
// New refuses a list with an unknown field or value, a repeated id, a term
// listed twice or spelt like another entry's, a term too long for the
// scanner, a REPLACE without a substitute or a QUARANTINE with one, or no
// reason; and (GAP-E, invariant 6) a substitute that contains a blocked
// term, looked for in every form substitution writes and ignoring the case
// and context rules, so a substitute may not even use a blocked word in its
// English sense.
//
// ~/LATTICE.md, the canonical source of symbols and callsigns, is not
// available. The list therefore holds every symbol and name the spec itself
// shows, including those it only uses (Σ.✓, Σ.⊠, ⊤, ORPHIC, DR. LOGOS,
// the internal identifiers it names, the app name AETHER), and the row "42
// Sisters AI internal crew (any callsign from ~/LATTICE.md)" is met by
// those plus the Greek rule below; unknown callsigns wait for LATTICE.md
// (GAP-K), with a new list version.
//
// # Matching
//
// One pass over the text feeds a folded form of it, character by
// character, through an Aho-Corasick automaton of all terms (scan.go, which
// says why it is written here). Folding (fold.go) is what makes the terms
// hard to dodge:
//
//   - compatibility decomposition (the K of NFKC, golang.org/x/text) with
//     combining marks removed: full-width "ＡＩＯＮ", circled "ⒶⒾⓄⓃ",
//     accented "AIÓN", superscripts and ligatures read as plain letters;
//   - format and control characters and invisible fillers (U+200B,
//     U+200D, U+FEFF, soft hyphen, bidi controls, tag characters, variation
//     selectors) are removed, and count as a word boundary;
//   - every kind of space, every dash and the underscore is one separator,
//     and a run of them is one, so "coherence\u00a0score", "coherence-score"
//     and "coherence_score" are one phrase; a space after a full stop is
//     dropped ("Dr. Logos" = "Dr.Logos", "Σ. ▶" = "Σ.▶");
//   - case is folded, and the letters a reader takes for Latin ones read
//     as those: every letter of another script whose Unicode security
//     skeleton (UTS #39) is Latin ("АІОN" in Cyrillic, Cherokee "Ꭺ"), and
//     the small capitals ("ᴀɪᴏɴ" reads "AION", in capitals). The table,
//     lookalikes.go, is generated from ICU by lookalikes.py and is part of
//     Version; Greek is left out of it, since every Greek letter is
//     blocked as such;
//   - in HTML (Mail), a tag is invisible ("AI<b></b>ON" is "AION") and an
//     entity is its character ("AI&#79;N"); the source is read as well,
//     for attributes and comments.
//
// Three more readings catch what a hostile writer would try, and a term
// only they find quarantines (its letters cannot be replaced in place):
//
//   - the disguise view (disguise.go) reads runs of one-letter words as
//     one word ("A I O N", "G.L.O.S.S", "A/I/O/N", one letter a line) and
//     digits as letters inside words that have letters ("GL0SS", "A1ON",
//     "4 1 0 N"); it reads again only a text that has such a word;
//   - a right-to-left override (U+202E) is read as shown, reversed, and in
//     an HTML part the visible text is what it reverses;
//   - in HTML, tags and character references are read as the reader sees
//     them (above), in every view.
//
// Beyond the listed spellings, the parts of a phrase may also be joined
// ("killbox", "OracleToll", but never two numbers: "10-4" is not "104"),
// and spaces around a symbol may be left out ("Φ=0.042").
//
// A term made of letters or digits must stand alone: no letter or digit
// may touch it ("tmms", "astral" pass), and a number may not continue
// through a decimal point ("10.042", "0.0425", "97.40%" pass). Where terms
// overlap, the leftmost-longest wins ("Ω = 97.4%" is one hit; "Dr. Logos"
// is the phrase, not the name in it).
//
// Clean plain ASCII runs through a table look-up per byte; other
// characters are folded one at a time into a stack buffer. Nothing is
// allocated until a hit is found (tested with testing.AllocsPerRun and
// reported by the benchmarks, which compare the filter with a regular
// expression alternation over the same list).
//
// # Decisions on the spec's gaps
//
// GAP-B, the contamination threshold: a payload (all fields of a verdict
// together) is quarantined when it has more than MaxReplacements (3)
// replaceable terms, or from the second one on more than MaxDensity (2)
// per 100 words. One or two stray terms are prompt drift a substitute
// repairs; more means the model wrote in the internal register and the
// repaired verdict would read as nonsense. Quarantine-class terms
// quarantine anyway. (The workflow after a
// quarantine, records and alerts, belongs to the gates: shared/quarantine.)
//
// GAP-C, Greek letters: no exception, every Greek letter blocks, in any
// case and any form that normalises to one (µ micro sign, the ohm sign,
// mathematical Greek, accented Greek). A rule for "standard mathematical
// usage" would need to know which letters LATTICE uses, and LATTICE.md is
// not available; business verdicts do not need Greek, the house's own
// formula uses Φ, and a false alarm costs a person's review while a leak
// cannot be taken back. A genuine formula (or a verdict written in Greek)
// is quarantined and a person can deliver it.
//
// GAP-D, the substitution map: every entry has an action and a reason in
// blocklist.json. The spec's map is followed where it speaks, and an entry
// it does not name quarantines, as GAP-D says, until the spec's own design
// pass gives it a substitute: ANVIL, ORPHEUS, LOGOS, DR. LOGOS, MUSASHI,
// CHROMA and every CB phrase among them. The only substitutes the spec
// does not write itself are the plurals of its own entries ("coherence
// scores" become "our assessments", "manifolds" "the systems"): the same
// entry, inflected.
//
// GAP-I, false positives. Ordinary English passes through these rules:
//
//   - Case rule "common" (GLOSS, LOGOS, GAMMA, MANTIS, ANVIL, CHROMA,
//     SMOKEY, NOUS, CLOD, LATTICE, THE RING, LX, ORPHIC, AETHER): the term
//     is also an English word. All lowercase is the English word and passes
//     ("a high-gloss finish", "brand logos", "gamma rays"); ALL CAPITALS is
//     the crew's spelling and takes the entry's action; any other spelling
//     (Capitalised, mIxEd) may be either, so it is quarantined, never
//     replaced: a capitalised "Gamma" may be the presentation app and
//     "Chroma" a database, which a substitute would turn into nonsense. A
//     sentence-initial "Logos ..." is therefore quarantined too; that false
//     alarm is the price of not letting "Gamma recommends ..." through.
//   - Case rule "name" (ASTRA, ORPHEUS, MUSASHI): also real-world names.
//     ALL CAPITALS is replaced, any other spelling quarantined.
//   - Other terms match in any case.
//   - manifold: see manifoldRule. Adjective ("the options are manifold",
//     "manifold benefits") and engineering noun ("exhaust manifold") pass;
//     the noun after a determiner ("the manifold shows strain") is
//     replaced; a capitalised "Manifold" mid-sentence, "manifold
//     curvature" and anything unclear quarantine.
//   - "Copy that" is the radio reply only when it stands alone (sentence
//     start or after a comma, and before punctuation); "Hammer down" only
//     before punctuation. "Rivals can copy that feature" passes.
//   - 0.042 as money ("$0.042", "USD 0.042") or a percentage passes;
//     before a unit or in a range it quarantines, since a substitute would
//     be wrong there. 97.4% always quarantines: a bare 97.4% cannot be told
//     from the threshold; 97% and 97.5% pass.
//
// No exception for the customer's words (invariant 1): a term the
// customer's query holds is filtered in the verdict like any other, and
// the prompt asks the model to refer to such a word without writing it.
// What is the customer's is their submission itself, shown back to them
// in the email (Own) and on the result page, labelled as theirs.
//
// # Substitution
//
// Replacing keeps the English correct (substitute.go): a determiner before
// the term goes with it ("The TMM shows" is "Our analysis shows", never
// "The our analysis"); after a possessive or an article and a common
// adjective the substitute drops its own ("your analysis score", "the
// current analysis"); "a"/"an" agrees; a sentence or line start is
// capitalised; a word the substitute ends with is not doubled ("the AION
// team" is "our analysis team"); a list of terms with one substitute
// becomes one ("AION, ASTRA and NOUS agree" is "Our analysis team agree").
// The result is checked around each insertion and re-scanned in full
// (failure mode 5); if it does not read correctly or still holds a term,
// the payload is quarantined rather than delivered broken.
//
// # Limits
//
// Other languages' translations of a term, a term spelt out in words
// ("ay eye oh en"), the ASCII letters I and l taken for each other
// ("AlON": reading them as one would flag "IX" as "LX"), a word of digits
// alone ("10905" for LOGOS), and a lowercase callsign that is also an
// English word ("ask gamma", "a high-gl0ss finish") are not caught:
// catching them would flag ordinary text. The false-positive corpus
// (disguise_test.go: Debian's word list, licence prose, every template, a
// thousand generated verdicts) is what keeps the readings above honest.
// The block list grows with the ship's vocabulary (invariant 5): a new term
// is a new entry, and the coverage tests take it in from the data.
package sosfilter
