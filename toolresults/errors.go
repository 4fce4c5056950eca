package toolresults

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FieldError is one problem with a request, in the shape of one item of the 422 body FastAPI
// and pydantic v2 give ({"type", "loc", "msg", "input", "ctx"?}), so clients that know OSA read
// the same thing.
type FieldError struct {
	// Type is pydantic's error type, such as "missing", "extra_forbidden", "string_too_long" or
	// "value_error".
	Type string `json:"type"`
	// Loc is the path to the offending value: object keys (string) and list indexes (int).
	// Decode's paths are relative to the result object; DecodeResume's start with "body".
	Loc []any `json:"loc"`
	// Msg is pydantic's message, capitalised as pydantic writes it.
	Msg string `json:"msg"`
	// Input echoes the offending value (for "missing", the object the field is missing from).
	// It is bounded: strings are cut to 200 code points and data_base64 values to 64, lists
	// and objects to their first 16 entries and 3 levels, with "…" marking a cut.
	Input any `json:"input"`
	// Ctx carries the rule's parameters, such as {"max_length": 16384}, or nil.
	Ctx map[string]any `json:"ctx,omitempty"`
}

// Path renders Loc for logs, like body.result.images[0].data_base64.
func (e FieldError) Path() string {
	var b strings.Builder
	for _, p := range e.Loc {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}

// ValidationError is every problem Decode or DecodeResume found, in the order pydantic reports
// them: the declared fields in declaration order (each one's own problems in order), then
// unknown and repeated keys in input order. It is the error those functions return; callers
// use errors.As and answer 422 {"detail": Errors}.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	const shown = 5
	var b strings.Builder
	fmt.Fprintf(&b, "%d validation error", len(e.Errors))
	if len(e.Errors) != 1 {
		b.WriteByte('s')
	}
	for i, fe := range e.Errors {
		if i == shown {
			fmt.Fprintf(&b, "; and %d more", len(e.Errors)-shown)
			break
		}
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if p := fe.Path(); p != "" {
			b.WriteString(p)
			b.WriteString(": ")
		}
		b.WriteString(fe.Msg)
		if detail, ok := fe.Ctx["error"].(string); ok && fe.Type == "json_invalid" {
			b.WriteString(": ")
			b.WriteString(detail)
		}
	}
	return b.String()
}

// Echo bounds (see FieldError.Input).
const (
	echoStringChars = 200
	echoBase64Chars = 64
	echoEntries     = 16
	echoDepth       = 3
	cutMark         = "…"
)

// echo turns a parsed value into the bounded copy a FieldError carries as Input.
func echo(n *node) any {
	return echoAt(n, "", echoDepth)
}

func echoAt(n *node, key string, depth int) any {
	switch n.kind {
	case kindNull:
		return nil
	case kindBool:
		return n.boolean
	case kindNumber:
		return json.Number(n.str)
	case kindString:
		if key == "data_base64" {
			return cut(n.str, echoBase64Chars)
		}
		return cut(n.str, echoStringChars)
	case kindArray:
		if depth == 0 {
			return cutMark
		}
		out := make([]any, 0, min(len(n.items), echoEntries+1))
		for i, it := range n.items {
			if i == echoEntries {
				out = append(out, cutMark)
				break
			}
			out = append(out, echoAt(it, "", depth-1))
		}
		return out
	default:
		if depth == 0 {
			return cutMark
		}
		out := make(map[string]any, min(len(n.members), echoEntries+1))
		for i, m := range n.members {
			if i == echoEntries {
				out[cutMark] = strconv.Itoa(len(n.members)-echoEntries) + " more"
				break
			}
			if _, dup := out[m.key]; !dup {
				out[m.key] = echoAt(m.val, m.key, depth-1)
			}
		}
		return out
	}
}

// cut returns s, or its first n code points followed by "…" when it is longer.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n; k++ {
		if i >= len(s) {
			return s
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + cutMark
}

// pyRepr renders s as Python's repr() of a str does, for the messages OSA's validators build
// with {v!r}. Values longer than 200 code points are cut first.
func pyRepr(s string) string {
	s = cut(s, echoStringChars)
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return strconv.Itoa(n) + " " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
