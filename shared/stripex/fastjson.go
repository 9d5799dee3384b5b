package stripex

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/stripe/stripe-go/v76"
)

// scanner reads the JSON Stripe sends in one pass, into the few fields the
// webhook reads, without reflection: on its path, after a network wait,
// its code is cold, and encoding/json's decoding (a validity scan, then a
// reflective decoding) cost several times in the handler what it costs in
// a loop (docs/performance.md). It reads only the plain shape Stripe
// writes; anything else (a name in another case or written twice, a
// surrogate escape, invalid UTF-8, a number that is no int64, a value of
// another type than the field's) makes it give up (ok false), and the
// caller decodes with encoding/json, whose answer is then the one given.
// FuzzDecodeEnvelope and FuzzSessionModeFromJSON hold it to encoding/json.
type scanner struct {
	b     []byte
	i     int
	depth int
}

// maxDepth bounds the nesting the scanner follows, far below
// encoding/json's 10,000: deeper input is left to it.
const maxDepth = 64

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the next byte after white space, 0 at the end.
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// literal consumes lit (true, false, null) at the next byte.
func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// null consumes a null when one is next.
func (s *scanner) null() bool {
	return s.peek() == 'n' && s.literal("null")
}

// str reads a string, its bytes in the input when it has no escape (no
// copy), else unescaped into a new buffer; plain reports that it held
// only ASCII and no escape. Unless keep, an escaped string is only
// checked, and v is nil.
func (s *scanner) str(keep bool) (v []byte, plain, ok bool) {
	if s.peek() != '"' {
		return nil, false, false
	}
	s.i++
	start := s.i
	plain = true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], plain, true
		case c == '\\':
			return s.escaped(start, keep)
		case c < 0x20:
			return nil, false, false
		case c >= utf8.RuneSelf:
			plain = false
		}
		s.i++
	}
	return nil, false, false
}

// escaped finishes a string that has escapes, from its start. A string
// kept must be valid UTF-8 and have no surrogate escape: encoding/json
// replaces what is not, and the scanner leaves that to it.
func (s *scanner) escaped(start int, keep bool) ([]byte, bool, bool) {
	var out []byte
	if keep {
		out = append(make([]byte, 0, s.i-start+16), s.b[start:s.i]...)
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return out, false, !keep || utf8.Valid(out)
		case c < 0x20:
			return nil, false, false
		case c != '\\':
			if keep {
				out = append(out, c)
			}
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			return nil, false, false
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
		case 'b':
			e = '\b'
		case 'f':
			e = '\f'
		case 'n':
			e = '\n'
		case 'r':
			e = '\r'
		case 't':
			e = '\t'
		case 'u':
			if s.i+4 > len(s.b) {
				return nil, false, false
			}
			r, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 16)
			if err != nil || keep && r >= 0xd800 && r < 0xe000 {
				return nil, false, false
			}
			if keep {
				out = utf8.AppendRune(out, rune(r))
			}
			s.i += 4
			continue
		default:
			return nil, false, false
		}
		if keep {
			out = append(out, e)
		}
	}
	return nil, false, false
}

// text reads a string field's value: a string, or null (which leaves it).
func (s *scanner) text(v *string) bool {
	if s.null() {
		return true
	}
	t, plain, ok := s.str(true)
	if !ok || !plain && !utf8.Valid(t) {
		return false
	}
	*v = string(t)
	return true
}

// int reads an int64 field's value: an integer, or null.
func (s *scanner) int(v *int64) bool {
	if s.null() {
		return true
	}
	start := s.i
	if !s.number() {
		return false
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	*v = n
	return err == nil
}

// bool reads a bool field's value: true, false, or null.
func (s *scanner) bool(v *bool) bool {
	switch s.peek() {
	case 't':
		*v = true
		return s.literal("true")
	case 'f':
		*v = false
		return s.literal("false")
	}
	return s.null()
}

// number consumes a JSON number.
func (s *scanner) number() bool {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return s.i > start
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// skip consumes any value, checking that it is valid JSON.
func (s *scanner) skip() bool {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) bool { return s.skip() })
	case c == '[':
		return s.array(s.skip)
	case c == '"':
		_, _, ok := s.str(false)
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return false
}

// object reads an object, calling member with each name, positioned at
// its value, which member consumes.
func (s *scanner) object(member func(name []byte) bool) bool {
	if s.peek() != '{' || s.depth >= maxDepth {
		return false
	}
	s.depth++
	s.i++
	if s.peek() == '}' {
		s.i++
		s.depth--
		return true
	}
	for {
		name, _, ok := s.str(true)
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		if !member(name) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// array reads an array, calling elem at each element, which it consumes.
func (s *scanner) array(elem func() bool) bool {
	if s.peek() != '[' || s.depth >= maxDepth {
		return false
	}
	s.depth++
	s.i++
	if s.peek() == ']' {
		s.i++
		s.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	return s.peek() == 0 && s.i == len(s.b)
}

// fields matches an object's member names against the names its type
// reads, as encoding/json would without its leniencies: a name read twice,
// or one that only encoding/json's case folding (or an escape, or a
// letter outside ASCII) would match, gives up.
type fields struct {
	names []string
	seen  uint64
}

// match is the index of name among the names read, -1 for a name skipped;
// ok false gives up.
func (f *fields) match(name []byte) (index int, ok bool) {
	for i, n := range f.names {
		if string(name) == n {
			if f.seen&(1<<i) != 0 {
				return 0, false
			}
			f.seen |= 1 << i
			return i, true
		}
	}
	for j := 0; j < len(name); j++ {
		if name[j] >= utf8.RuneSelf {
			return 0, false
		}
	}
	for _, n := range f.names {
		if equalFoldASCII(name, n) {
			return 0, false
		}
	}
	return -1, true
}

func equalFoldASCII(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// envelope reads an event's envelope, its object kept as the bytes it was
// written in.
func (s *scanner) envelope(e *Envelope) bool {
	f := fields{names: []string{"id", "type", "livemode", "created", "api_version", "request", "data"}}
	return s.object(func(name []byte) bool {
		i, ok := f.match(name)
		switch {
		case !ok:
			return false
		case i < 0:
			return s.skip()
		}
		switch i {
		case 0:
			return s.text(&e.ID)
		case 1:
			return s.text((*string)(&e.Type))
		case 2:
			return s.bool(&e.Livemode)
		case 3:
			return s.int(&e.Created)
		case 4:
			return s.text(&e.APIVersion)
		case 5:
			if s.null() {
				return true
			}
			e.Request = &stripe.EventRequest{}
			r := fields{names: []string{"id", "idempotency_key"}}
			return s.object(func(name []byte) bool {
				switch i, ok := r.match(name); {
				case !ok:
					return false
				case i == 0:
					return s.text(&e.Request.ID)
				case i == 1:
					return s.text(&e.Request.IdempotencyKey)
				}
				return s.skip()
			})
		}
		if s.null() {
			return true
		}
		e.Data = &EventData{}
		d := fields{names: []string{"object"}}
		return s.object(func(name []byte) bool {
			switch i, ok := d.match(name); {
			case !ok:
				return false
			case i == 0:
				s.space()
				start := s.i
				if !s.skip() {
					return false
				}
				e.Data.Object = bytes.Clone(s.b[start:s.i])
				return true
			}
			return s.skip()
		})
	})
}

// session reads a Checkout Session object.
func (s *scanner) session(o *sessionObject) bool {
	f := fields{names: []string{"id", "mode", "payment_status", "metadata", "amount_total", "amount_subtotal", "currency",
		"livemode", "created", "customer_email", "client_reference_id", "payment_intent", "customer_details", "custom_fields"}}
	return s.object(func(name []byte) bool {
		i, ok := f.match(name)
		switch {
		case !ok:
			return false
		case i < 0:
			return s.skip()
		}
		switch i {
		case 0:
			return s.text(&o.ID)
		case 1:
			return s.text(&o.Mode)
		case 2:
			return s.text(&o.PaymentStatus)
		case 3:
			return s.metadata(&o.Metadata)
		case 4:
			return s.int(&o.AmountTotal)
		case 5:
			return s.int(&o.AmountSubtotal)
		case 6:
			return s.text(&o.Currency)
		case 7:
			return s.bool(&o.Livemode)
		case 8:
			return s.int(&o.Created)
		case 9:
			return s.text(&o.CustomerEmail)
		case 10:
			return s.text(&o.ClientReferenceID)
		case 11:
			return s.expandable(&o.PaymentIntent)
		case 12:
			if s.null() {
				return true
			}
			o.CustomerDetails = &customerDetails{}
			return s.only("email", &o.CustomerDetails.Email)
		}
		if s.null() {
			return true
		}
		o.CustomFields = []*customField{}
		return s.array(func() bool {
			if s.null() {
				o.CustomFields = append(o.CustomFields, nil)
				return true
			}
			c := &customField{}
			o.CustomFields = append(o.CustomFields, c)
			cf := fields{names: []string{"key", "text"}}
			return s.object(func(name []byte) bool {
				switch i, ok := cf.match(name); {
				case !ok:
					return false
				case i == 0:
					return s.text(&c.Key)
				case i == 1:
					if s.null() {
						return true
					}
					c.Text = &customText{}
					return s.only("value", &c.Text.Value)
				}
				return s.skip()
			})
		})
	})
}

// only reads an object of which one string member is read.
func (s *scanner) only(name string, v *string) bool {
	f := fields{names: []string{name}}
	return s.object(func(n []byte) bool {
		switch i, ok := f.match(n); {
		case !ok:
			return false
		case i == 0:
			return s.text(v)
		}
		return s.skip()
	})
}

// metadata reads a map of strings; a null among its values gives up.
func (s *scanner) metadata(m *map[string]string) bool {
	if s.null() {
		return true
	}
	*m = map[string]string{}
	return s.object(func(name []byte) bool {
		if !utf8.Valid(name) || s.peek() != '"' {
			return false
		}
		var v string
		if !s.text(&v) {
			return false
		}
		(*m)[string(name)] = v
		return true
	})
}

// expandable reads an expandable field's id: the id, the object, or null.
func (s *scanner) expandable(e *expandableID) bool {
	switch s.peek() {
	case '"':
		return s.text((*string)(e))
	case '{':
		return s.only("id", (*string)(e))
	}
	return s.null()
}
