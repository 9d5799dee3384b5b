package sosfilter

// The numeric view. A listed number written mostly in digits, with a
// letter or two in place of digits ("1O-4", "O.O42", "97.A%"), is no term
// as written, yet its digits, its remaining letters and their places say
// which number it is. The numeric view reads every token of the text (a
// run of ASCII letters, digits and the marks a number holds: . , % -)
// that has a digit, no letter that cannot stand for a digit, and no more
// such letters than digits, with each letter read as the digit it stands
// for: O and o 0; I, i and l 1; Z and z 2; A 4; T 7; B 8; g and q 9. A
// listed number this view reads where the text as written holds none is a
// disguise, and quarantines. Letters are replaced one byte for one byte,
// so the view's offsets are the text's.

// digitFor is the digit a letter stands for in a number, or 0.
var digitFor = func() (t [256]byte) {
	for _, p := range []string{"O0", "o0", "I1", "i1", "l1", "Z2", "z2", "A4", "T7", "B8", "g9", "q9"} {
		t[p[0]] = p[1]
	}
	return
}()

// inNumber reports the bytes a numeric token is made of.
func inNumber(b byte) bool {
	return ('0' <= b && b <= '9') || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') || b == '.' || b == ',' || b == '%' || b == '-'
}

// numberToken reports whether s[i:j] is a token the numeric view reads.
func numberToken(s string, i, j int) bool {
	digits, letters := 0, 0
	for k := i; k < j; k++ {
		switch c := s[k]; {
		case '0' <= c && c <= '9':
			digits++
		case ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z'):
			if digitFor[c] == 0 {
				return false
			}
			letters++
		}
	}
	return letters > 0 && digits >= letters
}

// mayNumber reports whether the numeric view of s differs from s.
func mayNumber(s string) bool {
	for i := 0; i < len(s); {
		if !inNumber(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && inNumber(s[j]) {
			j++
		}
		if numberToken(s, i, j) {
			return true
		}
		i = j
	}
	return false
}

// numberedInto appends the numeric view of s to dst.
func numberedInto(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		if !inNumber(s[i]) {
			dst = append(dst, s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && inNumber(s[j]) {
			j++
		}
		read := numberToken(s, i, j)
		for k := i; k < j; k++ {
			if d := digitFor[s[k]]; read && d != 0 {
				dst = append(dst, d)
			} else {
				dst = append(dst, s[k])
			}
		}
		i = j
	}
	return dst
}
