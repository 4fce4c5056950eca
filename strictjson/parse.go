package strictjson

import (
	"encoding/binary"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The parser is linear in the input, allocates one string per JSON string and one Value per
// value, and recurses once per open array or object, which Limits.MaxDepth bounds.

// smallObject is how many members an object may have before repeated keys are found with a
// map rather than by comparing each key with the ones before it.
const smallObject = 16

type parser struct {
	data      []byte
	pos       int
	values    int
	maxDepth  int
	maxValues int
	err       *SyntaxError
}

// Parse parses data as exactly one JSON value surrounded by optional white space. On failure
// the error is a *SyntaxError.
func Parse(data []byte, lim Limits) (*Value, error) {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return nil, &SyntaxError{Code: InvalidUTF8, Offset: off}
	}
	p := &parser{data: data, maxDepth: lim.MaxDepth, maxValues: lim.MaxValues}
	if p.maxDepth <= 0 {
		p.maxDepth = DefaultMaxDepth
	}
	p.skipSpace()
	v := p.value(0)
	if p.err != nil {
		return nil, p.err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, &SyntaxError{Code: ExtraData, Offset: p.pos}
	}
	return v, nil
}

func (p *parser) fail(off int, code Code) *Value {
	if p.err == nil {
		p.err = &SyntaxError{Code: code, Offset: off}
	}
	return nil
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses the value at p.pos, inside depth open arrays and objects.
func (p *parser) value(depth int) *Value {
	if p.pos >= len(p.data) {
		return p.fail(p.pos, ExpectingValue)
	}
	if p.values++; p.maxValues > 0 && p.values > p.maxValues {
		return p.fail(p.pos, TooManyValues)
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, lone, ok := p.string()
		if !ok {
			return nil
		}
		return &Value{Kind: String, Str: s, LoneSurrogate: lone}
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		for _, lit := range [...]struct {
			text string
			v    Value
		}{
			{"true", Value{Kind: Bool, Bool: true}},
			{"false", Value{Kind: Bool}},
			{"null", Value{Kind: Null}},
		} {
			if len(p.data)-p.pos >= len(lit.text) && string(p.data[p.pos:p.pos+len(lit.text)]) == lit.text {
				p.pos += len(lit.text)
				v := lit.v
				return &v
			}
		}
		// NaN, Infinity and -Infinity, which Python's json accepts, are refused too.
		return p.fail(p.pos, ExpectingValue)
	}
}

func (p *parser) object(depth int) *Value {
	n := &Value{Kind: Object}
	var seen map[string]struct{} // the keys so far, once there are more than smallObject
	for more := p.open(depth, '}'); more; more = p.next('}', ExpectingObjectComma) {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.fail(p.pos, ExpectingKey)
		}
		key, _, ok := p.string()
		if !ok {
			return nil
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.fail(p.pos, ExpectingColon)
		}
		p.pos++
		p.skipSpace()
		v := p.value(depth)
		if v == nil {
			return nil
		}
		n.Members = append(n.Members, Member{Key: key, Value: v, Dup: repeated(n.Members, key, &seen)})
	}
	if p.err != nil {
		return nil
	}
	return n
}

// repeated reports whether key is among the keys of members. Past smallObject members it
// looks them up in *seen, which it builds and keeps up to date.
func repeated(members []Member, key string, seen *map[string]struct{}) bool {
	if *seen == nil {
		if len(members) < smallObject {
			for _, m := range members {
				if m.Key == key {
					return true
				}
			}
			return false
		}
		*seen = make(map[string]struct{}, 2*smallObject)
		for _, m := range members {
			(*seen)[m.Key] = struct{}{}
		}
	}
	_, dup := (*seen)[key]
	(*seen)[key] = struct{}{}
	return dup
}

func (p *parser) array(depth int) *Value {
	n := &Value{Kind: Array}
	for more := p.open(depth, ']'); more; more = p.next(']', ExpectingArrayComma) {
		v := p.value(depth)
		if v == nil {
			return nil
		}
		n.Items = append(n.Items, v)
	}
	if p.err != nil {
		return nil
	}
	return n
}

// open enters the array or object at p.pos, which is depth levels deep, and reports whether a
// member or an item follows: not when it is empty (it is then closed by end) or too deep
// (p.err is set).
func (p *parser) open(depth int, end byte) bool {
	if depth > p.maxDepth {
		p.fail(p.pos, TooDeep)
		return false
	}
	p.pos++ // [ or {
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == end {
		p.pos++
		return false
	}
	return true
}

// next reads what follows a member or an item of the array or object closed by end, and
// reports whether another one follows: yes after ',', no after end; anything else is the
// error code (p.err is set).
func (p *parser) next(end byte, code Code) bool {
	p.skipSpace()
	if p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
			return true
		case end:
			p.pos++
			return false
		}
	}
	p.fail(p.pos, code)
	return false
}

// number scans the JSON number grammar -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and keeps
// the literal; the caller decides what the number means.
func (p *parser) number() *Value {
	start := p.pos
	d := p.data
	i := p.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case !digits():
		return p.fail(start, ExpectingValue)
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return p.fail(start, ExpectingValue)
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return p.fail(start, ExpectingValue)
		}
	}
	p.pos = i
	return &Value{Kind: Number, Str: string(d[start:i])}
}

// string scans a string starting at the opening quote and returns its unescaped text. A lone
// UTF-16 surrogate escape becomes U+FFFD (a Go string cannot hold a surrogate) and lone is set.
func (p *parser) string() (s string, lone bool, ok bool) {
	start := p.pos
	d := p.data
	i := p.pos + 1
	// Fast path: skip eight bytes at a time while none is special, then go byte by byte.
	for i+8 <= len(d) && !special8(binary.LittleEndian.Uint64(d[i:])) {
		i += 8
	}
	for i < len(d) {
		c := d[i]
		if c == '"' {
			p.pos = i + 1
			return string(d[start+1 : i]), false, true
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.fail(i, ControlCharacter)
			return "", false, false
		}
		i++
	}
	if i >= len(d) {
		p.fail(start, UnterminatedString)
		return "", false, false
	}
	// Slow path. The unescaped text is never longer than the raw text up to the closing quote
	// (or the end of the input), so one allocation of that size holds it.
	end := i
	for end < len(d) && d[end] != '"' {
		if d[end] == '\\' {
			end++
		}
		end++
	}
	var buf strings.Builder
	buf.Grow(min(end, len(d)) - start)
	buf.Write(d[start+1 : i])
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return buf.String(), lone, true
		case c < 0x20:
			p.fail(i, ControlCharacter)
			return "", false, false
		case c != '\\':
			buf.WriteByte(c)
			i++
			continue
		}
		// An escape.
		if i+1 >= len(d) {
			p.fail(start, UnterminatedString)
			return "", false, false
		}
		esc := d[i+1]
		switch esc {
		case '"', '\\', '/':
			buf.WriteByte(esc)
		case 'b':
			buf.WriteByte('\b')
		case 'f':
			buf.WriteByte('\f')
		case 'n':
			buf.WriteByte('\n')
		case 'r':
			buf.WriteByte('\r')
		case 't':
			buf.WriteByte('\t')
		case 'u':
			r, ok := hex4(d, i+2)
			if !ok {
				p.fail(i, InvalidUnicodeEscape)
				return "", false, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r < 0xDC00 && i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
					if r2, ok := hex4(d, i+2); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
						r = utf16.DecodeRune(r, r2)
						i += 6
					} else {
						r, lone = utf8.RuneError, true
					}
				} else {
					r, lone = utf8.RuneError, true
				}
			}
			buf.WriteRune(r)
			continue
		default:
			p.fail(i, InvalidEscape)
			return "", false, false
		}
		i += 2
	}
	p.fail(start, UnterminatedString)
	return "", false, false
}

func hex4(d []byte, at int) (rune, bool) {
	if at+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// special8 reports whether any of the eight bytes in w is a quote, a backslash or a control
// character, the bytes that end the fast scan of a string. It uses the exact "has a byte less
// than n" and "has a zero byte" word tricks: (x - n*0x01…) & ^x & 0x80… is non-zero exactly
// when some byte of x is below n (n <= 0x80).
func special8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	control := (w - ones*0x20) & ^w & highs
	q := w ^ ones*'"'
	quote := (q - ones) & ^q & highs
	b := w ^ ones*'\\'
	backslash := (b - ones) & ^b & highs
	return control|quote|backslash != 0
}
