package toolresults

import (
	"encoding/binary"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a small strict JSON parser. encoding/json is not used for the shape because it
// matches object keys case-insensitively and lets a repeated key overwrite the first one; here
// every object keeps its members in input order, exactly as written, so the checker can refuse
// "Stdout" and duplicates. The parser is linear in the input, allocates one string per JSON
// string, and bounds nesting so hostile input cannot exhaust the stack.

// maxDepth bounds how deeply arrays and objects may nest. A valid /chat/resume body needs four
// levels (body, result, images, image).
const maxDepth = 64

// maxValues bounds how many values (scalars, arrays and objects) a document may hold. A valid
// /chat/resume body holds fewer than 100; without a bound, a body of "[0,0,0,…" would cost
// some 40 bytes of parse tree, and then of error list, per 2 bytes of input.
const maxValues = 1024

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// node is one parsed JSON value.
type node struct {
	kind kind
	// str is the unescaped text of a string, or the literal of a number.
	str     string
	boolean bool
	// loneSurrogate marks a string that had an unpaired UTF-16 surrogate escape, which pydantic
	// refuses (string_unicode); str holds U+FFFD in its place.
	loneSurrogate bool
	items         []*node
	members       []member
}

type member struct {
	key string
	val *node
}

// syntaxError is a JSON syntax problem at a byte offset. Its messages are those of Python's
// json module, which is what FastAPI reports in ctx.error.
type syntaxError struct {
	off int
	msg string
}

type parser struct {
	data   []byte
	pos    int
	values int
	err    *syntaxError
}

// parseJSON parses data as exactly one JSON value surrounded by optional whitespace.
func parseJSON(data []byte) (*node, *syntaxError) {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return nil, &syntaxError{off: off, msg: "Invalid UTF-8"}
	}
	p := &parser{data: data}
	p.skipSpace()
	v := p.value(0)
	if p.err != nil {
		return nil, p.err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, &syntaxError{off: p.pos, msg: "Extra data"}
	}
	return v, nil
}

func (p *parser) fail(off int, msg string) *node {
	if p.err == nil {
		p.err = &syntaxError{off: off, msg: msg}
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

func (p *parser) value(depth int) *node {
	if p.pos >= len(p.data) {
		return p.fail(p.pos, "Expecting value")
	}
	if p.values++; p.values > maxValues {
		return p.fail(p.pos, "Too many values")
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
		return &node{kind: kindString, str: s, loneSurrogate: lone}
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		for _, lit := range [...]struct {
			text string
			n    node
		}{
			{"true", node{kind: kindBool, boolean: true}},
			{"false", node{kind: kindBool}},
			{"null", node{kind: kindNull}},
		} {
			if len(p.data)-p.pos >= len(lit.text) && string(p.data[p.pos:p.pos+len(lit.text)]) == lit.text {
				p.pos += len(lit.text)
				n := lit.n
				return &n
			}
		}
		// NaN, Infinity and -Infinity, which Python's json accepts, are refused here too.
		return p.fail(p.pos, "Expecting value")
	}
}

func (p *parser) object(depth int) *node {
	if depth > maxDepth {
		return p.fail(p.pos, "Nesting too deep")
	}
	p.pos++ // {
	n := &node{kind: kindObject}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return n
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.fail(p.pos, "Expecting property name enclosed in double quotes")
		}
		key, _, ok := p.string()
		if !ok {
			return nil
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.fail(p.pos, "Expecting ':' delimiter")
		}
		p.pos++
		p.skipSpace()
		v := p.value(depth)
		if v == nil {
			return nil
		}
		n.members = append(n.members, member{key: key, val: v})
		p.skipSpace()
		if p.pos < len(p.data) {
			switch p.data[p.pos] {
			case ',':
				p.pos++
				p.skipSpace()
				continue
			case '}':
				p.pos++
				return n
			}
		}
		return p.fail(p.pos, "Expecting ',' delimiter")
	}
}

func (p *parser) array(depth int) *node {
	if depth > maxDepth {
		return p.fail(p.pos, "Nesting too deep")
	}
	p.pos++ // [
	n := &node{kind: kindArray}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return n
	}
	for {
		v := p.value(depth)
		if v == nil {
			return nil
		}
		n.items = append(n.items, v)
		p.skipSpace()
		if p.pos < len(p.data) {
			switch p.data[p.pos] {
			case ',':
				p.pos++
				p.skipSpace()
				continue
			case ']':
				p.pos++
				return n
			}
		}
		return p.fail(p.pos, "Expecting ',' delimiter")
	}
}

// number scans the JSON number grammar -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and keeps
// the literal; the checker decides what the number means for its field.
func (p *parser) number() *node {
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
		return p.fail(start, "Expecting value")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return p.fail(start, "Expecting value")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return p.fail(start, "Expecting value")
		}
	}
	p.pos = i
	return &node{kind: kindNumber, str: string(d[start:i])}
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
			p.fail(i, "Invalid control character at")
			return "", false, false
		}
		i++
	}
	if i >= len(d) {
		p.fail(start, "Unterminated string starting at")
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
			p.fail(i, "Invalid control character at")
			return "", false, false
		case c != '\\':
			buf.WriteByte(c)
			i++
			continue
		}
		// An escape.
		if i+1 >= len(d) {
			p.fail(start, "Unterminated string starting at")
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
				p.fail(i, "Invalid \\uXXXX escape")
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
			p.fail(i, "Invalid \\escape")
			return "", false, false
		}
		i += 2
	}
	p.fail(start, "Unterminated string starting at")
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
