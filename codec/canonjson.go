package codec

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CanonicalJSON rewrites the JSON encoding/json.Marshal produced into the
// bytes that decoding it into a map[string]any (k8s.io/apimachinery's
// util/json: integers as int64, other numbers as float64) and encoding
// that again without HTML escaping give: members sorted by name at every
// level, <, > and & unescaped, numbers as int64 or float64 print them.
// Rewrite reports false for what it does not reproduce exactly (a
// duplicate member, an escape encoding/json would not write, very deep
// nesting); the caller then takes the long way.
type CanonicalJSON struct {
	in      []byte
	pos     int
	out     []byte
	tmp     []byte
	members [][]canonMember
	depth   int
}

// canonMember is one member of an object being rewritten: its bytes are
// out[start:end], its name (as written, quotes excluded) out[kstart:kend];
// the value of a name written with escapes is in unescaped.
type canonMember struct {
	start, end   int
	kstart, kend int
	escaped      bool
	unescaped    string
}

// compareNames orders a and b by name (as a map's keys are sorted), their
// written bytes read from buf, holding out[base:].
func compareNames(buf []byte, base int, a, b *canonMember) int {
	if !a.escaped && !b.escaped {
		return bytes.Compare(buf[a.kstart-base:a.kend-base], buf[b.kstart-base:b.kend-base])
	}
	an, bn := a.unescaped, b.unescaped
	if !a.escaped {
		an = string(buf[a.kstart-base : a.kend-base])
	}
	if !b.escaped {
		bn = string(buf[b.kstart-base : b.kend-base])
	}
	return strings.Compare(an, bn)
}

// canonMaxDepth bounds nesting; deeper documents take the long way.
const canonMaxDepth = 1000

func (c *CanonicalJSON) Rewrite(in []byte) ([]byte, bool) {
	c.in, c.pos, c.out, c.depth = in, 0, c.out[:0], 0
	if !c.value() {
		return nil, false
	}
	c.ws()
	if c.pos != len(c.in) {
		return nil, false
	}
	return c.out, true
}

func (c *CanonicalJSON) ws() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *CanonicalJSON) value() bool {
	c.ws()
	if c.pos >= len(c.in) {
		return false
	}
	switch ch := c.in[c.pos]; {
	case ch == '{':
		return c.object()
	case ch == '[':
		return c.array()
	case ch == '"':
		_, _, ok := c.str()
		return ok
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return c.number()
	}
	return false
}

func (c *CanonicalJSON) literal(s string) bool {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(s)) {
		return false
	}
	c.pos += len(s)
	c.out = append(c.out, s...)
	return true
}

func (c *CanonicalJSON) object() bool {
	if c.depth >= canonMaxDepth {
		return false
	}
	c.depth++
	ok := c.members1()
	c.depth--
	return ok
}

// members1 rewrites the object at c.pos, one level down (c.depth).
func (c *CanonicalJSON) members1() bool {
	c.pos++ // {
	c.out = append(c.out, '{')
	start := len(c.out)
	for len(c.members) < c.depth {
		c.members = append(c.members, nil)
	}
	ms := c.members[c.depth-1][:0]
	c.ws()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return true
	}
	for {
		c.ws()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return false
		}
		m := canonMember{start: len(c.out), kstart: len(c.out) + 1}
		unesc, escaped, ok := c.str()
		if !ok {
			return false
		}
		m.kend = len(c.out) - 1
		if escaped {
			m.escaped, m.unescaped = true, unesc
		}
		c.ws()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return false
		}
		c.pos++
		c.out = append(c.out, ':')
		if !c.value() {
			return false
		}
		m.end = len(c.out)
		ms = append(ms, m)
		c.ws()
		if c.pos >= len(c.in) {
			return false
		}
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		if c.in[c.pos] != ',' {
			return false
		}
		c.pos++
		c.out = append(c.out, ',')
	}
	// Keep the (grown) list for the next object at this level.
	c.members[c.depth-1] = ms[:0]
	ascending := true
	for i := 1; i < len(ms); i++ {
		if compareNames(c.out, 0, &ms[i-1], &ms[i]) >= 0 {
			ascending = false
			break
		}
	}
	if !ascending {
		c.tmp = append(c.tmp[:0], c.out[start:]...)
		tmp := c.tmp
		slices.SortFunc(ms, func(a, b canonMember) int { return compareNames(tmp, start, &a, &b) })
		for i := 1; i < len(ms); i++ {
			if compareNames(tmp, start, &ms[i-1], &ms[i]) == 0 {
				// A map keeps the last; leave that to the long way.
				return false
			}
		}
		c.out = c.out[:start]
		for i, m := range ms {
			if i > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, tmp[m.start-start:m.end-start]...)
		}
	}
	c.out = append(c.out, '}')
	return true
}

func (c *CanonicalJSON) array() bool {
	if c.depth >= canonMaxDepth {
		return false
	}
	c.depth++
	ok := c.elements()
	c.depth--
	return ok
}

// elements rewrites the array at c.pos.
func (c *CanonicalJSON) elements() bool {
	c.pos++ // [
	c.out = append(c.out, '[')
	c.ws()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return true
	}
	for {
		if !c.value() {
			return false
		}
		c.ws()
		if c.pos >= len(c.in) {
			return false
		}
		if c.in[c.pos] == ']' {
			c.pos++
			c.out = append(c.out, ']')
			return true
		}
		if c.in[c.pos] != ',' {
			return false
		}
		c.pos++
		c.out = append(c.out, ',')
	}
}

// number writes an integer that fits int64 as is (as int64 prints it)
// and any other number as float64 prints it. It reads JSON's number
// grammar exactly: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (c *CanonicalJSON) number() bool {
	start := c.pos
	isInt := true
	digits := func() int {
		n := 0
		for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
			c.pos++
			n++
		}
		return n
	}
	if c.in[c.pos] == '-' {
		c.pos++
	}
	if c.pos < len(c.in) && c.in[c.pos] == '0' {
		c.pos++
	} else if digits() == 0 {
		return false
	}
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		isInt = false
		if digits() == 0 {
			return false
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		isInt = false
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if digits() == 0 {
			return false
		}
	}
	lit := c.in[start:c.pos]
	if isInt && canonicalInt(lit) {
		// As strconv.AppendInt(ParseInt(lit)) would write it.
		c.out = append(c.out, lit...)
		return true
	}
	if isInt {
		if n, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
			c.out = strconv.AppendInt(c.out, n, 10)
			return true
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return false
	}
	b, err := json.Marshal(f)
	if err != nil {
		return false
	}
	c.out = append(c.out, b...)
	return true
}

// canonicalInt reports whether lit is an integer written as int64 prints
// it: an optional minus, then 1 to 18 digits without a leading zero (or
// "0" alone); 18 digits always fit.
func canonicalInt(lit []byte) bool {
	d := lit
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
		if len(d) == 1 && d[0] == '0' {
			return false // -0 prints 0
		}
	}
	if len(d) == 0 || len(d) > 18 || d[0] == '0' && len(d) > 1 {
		return false
	}
	for _, ch := range d {
		if ch < '0' || ch > '9' {
			return false
		}
	}
	return true
}

// str writes the string at c.pos as encoding/json writes it without HTML
// escaping. When it holds an escape, escaped is true and value is its
// value (otherwise value is "": the bytes written are the value).
func (c *CanonicalJSON) str() (value string, escaped, ok bool) {
	c.pos++ // "
	start := len(c.out)
	c.out = append(c.out, '"')
	for c.pos < len(c.in) {
		ch := c.in[c.pos]
		switch {
		case ch == '"':
			c.pos++
			c.out = append(c.out, '"')
			if !escaped {
				return "", false, true
			}
			value, ok = unescapeCanon(c.out[start+1 : len(c.out)-1])
			return value, true, ok
		case ch == '\\':
			if c.pos+1 >= len(c.in) {
				return "", false, false
			}
			switch e := c.in[c.pos+1]; e {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				c.out = append(c.out, '\\', e)
				c.pos += 2
				escaped = true
			case 'u':
				if c.pos+6 > len(c.in) {
					return "", false, false
				}
				h := c.in[c.pos+2 : c.pos+6]
				switch {
				case string(h) == "003c":
					c.out = append(c.out, '<')
				case string(h) == "003e":
					c.out = append(c.out, '>')
				case string(h) == "0026":
					c.out = append(c.out, '&')
				case string(h) == "2028", string(h) == "2029":
					c.out = append(c.out, c.in[c.pos:c.pos+6]...)
					escaped = true
				case h[0] == '0' && h[1] == '0' && (h[2] == '0' || h[2] == '1') && isLowerHex(h[3]):
					v := (h[2]-'0')<<4 | hexVal(h[3])
					if v == '\b' || v == '\f' || v == '\n' || v == '\r' || v == '\t' {
						return "", false, false // encoding/json writes these short
					}
					c.out = append(c.out, c.in[c.pos:c.pos+6]...)
					escaped = true
				default:
					return "", false, false
				}
				c.pos += 6
			default:
				return "", false, false
			}
		case ch < 0x20:
			return "", false, false
		case ch < utf8.RuneSelf:
			// A run of plain characters at once.
			i := c.pos + 1
			for i < len(c.in) {
				b := c.in[i]
				if b < 0x20 || b >= utf8.RuneSelf || b == '"' || b == '\\' {
					break
				}
				i++
			}
			c.out = append(c.out, c.in[c.pos:i]...)
			c.pos = i
		default:
			r, size := utf8.DecodeRune(c.in[c.pos:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return "", false, false
			}
			c.out = append(c.out, c.in[c.pos:c.pos+size]...)
			c.pos += size
		}
	}
	return "", false, false
}

func isLowerHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' }

func hexVal(b byte) byte {
	if b <= '9' {
		return b - '0'
	}
	return b - 'a' + 10
}

// unescapeCanon returns the value of a string body str wrote.
func unescapeCanon(b []byte) (string, bool) {
	var s []byte
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			s = append(s, b[i])
			continue
		}
		i++
		switch b[i] {
		case '"', '\\':
			s = append(s, b[i])
		case 'b':
			s = append(s, '\b')
		case 'f':
			s = append(s, '\f')
		case 'n':
			s = append(s, '\n')
		case 'r':
			s = append(s, '\r')
		case 't':
			s = append(s, '\t')
		case 'u':
			v, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 32)
			if err != nil {
				return "", false
			}
			s = utf8.AppendRune(s, rune(v))
			i += 4
		default:
			return "", false
		}
	}
	return string(s), true
}
