#!/usr/bin/python3
"""Writes lookalikes.go: the characters a reader takes for Latin letters or
for a listed symbol.

The data comes from ICU (Debian's python3-icu over libicu) and from the
block list, never from a list kept by hand:

  * the Unicode security skeleton of UTS #39 (ICU's SpoofChecker, from
    confusables.txt): every letter of another script whose skeleton is made
    of Latin letters reads as those letters, e.g. Cyrillic "А", Cherokee
    "Ꭺ", Lisu "ꓮ" as "A";
  * the small capitals, which the skeleton leaves alone ("ᴀ", "ɪ", "ɴ" are
    not confusable with "a", "i", "n" in UTS #39's sense, yet read as the
    capitals they copy): every letter that Unicode names "... SMALL CAPITAL
    <letter>" reads as that capital letter;
  * the Latin letters with a hook, tail, stroke, bar or other mark drawn
    into them that the skeleton leaves alone ("Ꞩ", "Ʂ", "Ɦ"): every Latin
    letter Unicode names "LATIN CAPITAL|SMALL LETTER <letter> WITH ..." reads
    as that letter, in its case;
  * the look-alikes of the listed symbols (blocklist.json, category 1, and
    the other case of each listed letter): every character whose skeleton
    equals a listed symbol's reads as that symbol (Cyrillic "Ф" as "Φ", Latin
    "ɸ" as "φ", "∆" as "Δ", "ß" as "β"), unless that skeleton is made of
    Latin letters (Greek "ο" is "o": a Latin "o" cannot be blocked).

Characters that a compatibility decomposition already turns into something
else are left out (the filter decomposes first), and so is the Greek
script: every Greek letter is blocked as such, so a Greek look-alike must
stay Greek to be caught. A symbol's look-alike is written in the folded
(lower) case the filter matches.

The skeleton's prototypes are lowercase "l" for the letter I and "rn" for
m; a look-alike takes the case of the letter it copies, so an uppercase
look-alike of "l" reads "I".

Run `/usr/bin/python3 lookalikes.py | gofmt > lookalikes.go` (go generate does) and
commit the result; TestLookAlikesAreICUs checks that the committed table is
what this machine's ICU says.
"""

import json
import os
import re
import sys

import icu

SMALL_CAPITAL = re.compile(r"^LATIN (?:CAPITAL |SMALL )?(?:LETTER )?SMALL CAPITAL (?:LETTER )?([A-Z]{1,2})(?: WITH .*)?$")
MARKED_LATIN = re.compile(r"^LATIN (CAPITAL|SMALL) LETTER ([A-Z]) WITH ")


def listed_symbols():
    """The non-ASCII characters of the block list's symbol terms, each with
    the other case of a letter, in the list's order."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "blocklist.json")
    with open(path, encoding="utf-8") as f:
        entries = json.load(f)["entries"]
    out = []
    for e in entries:
        if e["category"] != "lattice_symbol":
            continue
        for term in e["terms"]:
            for ch in term:
                for v in (ch, ch.upper(), ch.lower()):
                    if len(v) == 1 and not v.isascii() and v not in out:
                        out.append(v)
    return out


def is_letter(cp):
    return icu.Char.isalpha(cp)


def is_upper(cp):
    return icu.Char.charType(cp) in (icu.UCharCategory.UPPERCASE_LETTER, icu.UCharCategory.TITLECASE_LETTER)


def main():
    spoof = icu.SpoofChecker()
    nfkd = icu.Normalizer2.getNFKDInstance()
    # The skeletons of the Latin letters themselves: "I" and "l" share one.
    latin = {}
    for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz":
        latin.setdefault(spoof.getSkeleton(0, c), []).append(c)

    letters = []
    for cp in range(0x80, 0x110000):
        if 0xD800 <= cp <= 0xDFFF or not is_letter(cp):
            continue
        c = chr(cp)
        if nfkd.normalize(c) != c:
            continue
        if icu.Script.getScript(cp).getShortName() == "Grek":
            continue
        letters.append(cp)

    small = {}
    for cp in letters:
        m = SMALL_CAPITAL.match(icu.Char.charName(cp) or "")
        if m:
            small[chr(cp)] = m.group(1)

    rows = []
    for cp in letters:
        c = chr(cp)
        name = icu.Char.charName(cp) or ""
        if c in small:
            rows.append((cp, small[c], name))
            continue
        # A skeleton may itself be a small capital (Cherokee "ꭺ" is "ᴀ").
        skeleton = "".join(small.get(ch, ch) for ch in spoof.getSkeleton(0, c)
                           if icu.Char.charType(ord(ch)) != icu.UCharCategory.NON_SPACING_MARK)
        if skeleton == c or not skeleton or not all(ch.isascii() and ch.isalpha() for ch in skeleton):
            continue
        if skeleton in latin:
            candidates = latin[skeleton]
            if len(candidates) > 1:
                upper = [x for x in candidates if x.isupper()]
                lower = [x for x in candidates if x.islower()]
                reads = (upper or candidates)[0] if is_upper(cp) else (lower or candidates)[0]
            else:
                reads = candidates[0]
                if is_upper(cp):
                    reads = reads.upper()
        else:
            reads = "".join("I" if ch == "l" and is_upper(cp) else ch for ch in skeleton)
        rows.append((cp, reads, name))

    # Latin letters with a mark drawn into them that the skeleton leaves
    # alone read as their letter.
    have = {cp for cp, _, _ in rows}
    for cp in letters:
        if cp in have or icu.Script.getScript(cp).getShortName() != "Latn":
            continue
        m = MARKED_LATIN.match(icu.Char.charName(cp) or "")
        if m:
            rows.append((cp, m.group(2) if m.group(1) == "CAPITAL" else m.group(2).lower(), icu.Char.charName(cp)))
            have.add(cp)

    # The look-alikes of the listed symbols, by skeleton.
    symbols = listed_symbols()
    by_skeleton = {}
    for sym in symbols:
        skeleton = spoof.getSkeleton(0, sym)
        if all(ch.isascii() and ch.isalpha() for ch in skeleton):
            continue
        by_skeleton.setdefault(skeleton, sym.upper().lower())
    for cp in range(0x80, 0x110000):
        if 0xD800 <= cp <= 0xDFFF or cp in have:
            continue
        c = chr(cp)
        if c in symbols or nfkd.normalize(c) != c or icu.Script.getScript(cp).getShortName() == "Grek":
            continue
        reads = by_skeleton.get(spoof.getSkeleton(0, c))
        if reads:
            rows.append((cp, reads, icu.Char.charName(cp) or "U+%04X" % cp))
            have.add(cp)
    rows.sort()

    out = sys.stdout
    out.write("// Code generated by lookalikes.py from ICU %s (Unicode %s); DO NOT EDIT.\n\n" % (icu.ICU_VERSION, icu.UNICODE_VERSION))
    out.write("package sosfilter\n\n")
    out.write("// lookAlikeSource names the data behind lookAlikes; it is part of the\n")
    out.write("// filter's Version, so a new table is a new version.\n")
    out.write('const lookAlikeSource = "ICU %s, Unicode %s: UTS #39 skeletons, small capitals, marked Latin letters, look-alikes of the listed symbols"\n\n' % (icu.ICU_VERSION, icu.UNICODE_VERSION))
    out.write("// lookAlikes maps each character that reads as Latin letters or as a\n")
    out.write("// listed symbol to them, sorted by code point.\n")
    out.write("var lookAlikes = [...]lookAlike{\n")
    for cp, reads, name in rows:
        out.write('\t{0x%04X, "%s"}, // %s\n' % (cp, reads, name))
    out.write("}\n")


if __name__ == "__main__":
    main()
