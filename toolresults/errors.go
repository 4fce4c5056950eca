package toolresults

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/strictjson"
)

// FieldError is one problem with a request, in the shape of one item of the 422 body FastAPI
// and pydantic v2 give ({"type", "loc", "msg", "input", "ctx"?}), so clients that know OSA read
// the same thing.
type FieldError struct {
	// Type is pydantic's error type, such as "missing", "extra_forbidden", "string_too_long" or
	// "value_error".
	Type string `json:"type"`
	// Loc is the path to the offending value: object keys (string) and list indexes (int).
	// Decode's paths are relative to the result object; DecodeResume's start with "body". A key
	// longer than 64 code points is cut, with "…" marking the cut, so a body of long unknown
	// keys is not echoed back in full.
	Loc []any `json:"loc"`
	// Msg is pydantic's message, capitalised as pydantic writes it.
	Msg string `json:"msg"`
	// Input echoes the offending value (for "missing", the object the field is missing from).
	// It is bounded (see Echo): strings are cut to 200 code points and data_base64 values to
	// 64, object keys to 64, lists and objects to their first 16 entries and 3 levels, and the
	// whole echo to about 1 KiB of JSON, with "…" marking a cut.
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

// StringTooLong is pydantic's item for a string over maxChars code points. Every route's
// checks build it here, so a capped field (such as model on /chat and /chat/resume) reads the
// same everywhere.
func StringTooLong(at []any, s string, maxChars int) FieldError {
	return FieldError{Type: "string_too_long", Loc: at, Msg: "String should have at most " + plural(maxChars, "character"),
		Input: Echo(s), Ctx: map[string]any{"max_length": maxChars}}
}

// TypeTooManyErrors is the type of the item that ends a 422 list cut at limits.MaxErrorItems.
const TypeTooManyErrors = "too_many_errors"

// OmittedErrors is the final item of a 422 list that had n more errors than it shows, in the
// shape of the others so a client that reads the list reads it too.
func OmittedErrors(at []any, n int) FieldError {
	msg := plural(n, "more error") + " omitted"
	return FieldError{Type: TypeTooManyErrors, Loc: at, Msg: msg, Input: nil, Ctx: map[string]any{"omitted": n}}
}

// ValidationError is every problem Decode or DecodeResume found, in the order pydantic reports
// them: the declared fields in declaration order (each one's own problems in order), then
// unknown and repeated keys in input order. It is the error those functions return; callers
// use errors.As and answer 422 {"detail": Errors}, followed by OmittedErrors when Omitted > 0.
type ValidationError struct {
	// Errors holds the first limits.MaxErrorItems problems.
	Errors []FieldError
	// Omitted counts the problems found past those.
	Omitted int
}

func (e *ValidationError) Error() string {
	const shown = 5
	total := len(e.Errors) + e.Omitted
	var b strings.Builder
	fmt.Fprintf(&b, "%d validation error", total)
	if total != 1 {
		b.WriteByte('s')
	}
	for i, fe := range e.Errors {
		if i == shown {
			fmt.Fprintf(&b, "; and %d more", total-shown)
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

// Echo bounds (see FieldError.Input and FieldError.Loc). Together with limits.MaxErrorItems
// they keep a 422 body to a few tens of kilobytes whatever the request.
const (
	echoStringChars = 200
	echoBase64Chars = 64
	echoKeyChars    = 64
	echoKeyBytes    = 4 * echoKeyChars
	echoEntries     = 16
	echoDepth       = 3
	// echoBudget is about how many bytes of JSON one echoed input may take; past it, the
	// remaining entries of a list or object are cut. The longest single string echo (200
	// four-byte code points) fits in it.
	echoBudget = 1024
	cutMark    = "…"
)

// echo turns a parsed value into the bounded copy a FieldError carries as Input.
func echo(n *node) any {
	return echoAt(n, "")
}

// echoAt is echo for the value of key: a data_base64 string is cut shorter.
func echoAt(n *node, key string) any {
	e := echoer{left: echoBudget}
	return e.node(n, key, echoDepth)
}

// Echo is the bounded copy of a value decoded by encoding/json (strings, json.Number,
// float64, bool, nil, []any, map[string]any), with the same bounds as the inputs Decode
// echoes, for validators of other request bodies. An object's keys are taken in sorted order,
// the order encoding/json writes them in. Other values are returned as they are.
func Echo(v any) any {
	e := echoer{left: echoBudget}
	return e.value(v, echoDepth)
}

// ClipKey cuts an object key for a loc to 64 code points (and 256 bytes of JSON, which only
// escaped characters reach), marking a cut with "…".
func ClipKey(k string) string {
	s, _ := clip(k, echoKeyChars, echoKeyBytes)
	return s
}

// echoer builds one echo, spending a budget of JSON bytes.
type echoer struct{ left int }

func (e *echoer) str(s, key string) string {
	n := echoStringChars
	if key == "data_base64" {
		n = echoBase64Chars
	}
	out, cost := clip(s, n, e.left)
	e.left -= cost
	return out
}

// key returns an object key cut for echoing and spends its cost.
func (e *echoer) key(k string) string {
	out, cost := clip(k, echoKeyChars, echoKeyBytes)
	e.left -= cost + 2 // the colon and the comma
	return out
}

func (e *echoer) node(n *node, key string, depth int) any {
	switch n.Kind {
	case strictjson.Null:
		e.left -= 4
		return nil
	case strictjson.Bool:
		e.left -= 5
		return n.Bool
	case strictjson.Number:
		e.left -= len(n.Str)
		return json.Number(n.Str)
	case strictjson.String:
		return e.str(n.Str, key)
	case strictjson.Array:
		if depth == 0 {
			return cutMark
		}
		out := make([]any, 0, min(len(n.Items), echoEntries+1))
		for i, it := range n.Items {
			if i == echoEntries || e.left <= 0 {
				out = append(out, cutMark)
				break
			}
			e.left-- // the comma
			out = append(out, e.node(it, "", depth-1))
		}
		return out
	default:
		if depth == 0 {
			return cutMark
		}
		out := make(map[string]any, min(len(n.Members), echoEntries+1))
		for i, m := range n.Members {
			if i == echoEntries || e.left <= 0 {
				out[cutMark] = strconv.Itoa(len(n.Members)-i) + " more"
				break
			}
			if k := e.key(m.Key); !has(out, k) {
				out[k] = e.node(m.Value, m.Key, depth-1)
			}
		}
		return out
	}
}

func (e *echoer) value(v any, depth int) any {
	switch v := v.(type) {
	case nil:
		e.left -= 4
		return nil
	case string:
		return e.str(v, "")
	case json.Number:
		e.left -= len(v)
		return v
	case []any:
		if depth == 0 {
			return cutMark
		}
		out := make([]any, 0, min(len(v), echoEntries+1))
		for i, it := range v {
			if i == echoEntries || e.left <= 0 {
				out = append(out, cutMark)
				break
			}
			e.left--
			out = append(out, e.value(it, depth-1))
		}
		return out
	case map[string]any:
		if depth == 0 {
			return cutMark
		}
		keys := slices.Sorted(maps.Keys(v))
		out := make(map[string]any, min(len(v), echoEntries+1))
		for i, k := range keys {
			if i == echoEntries || e.left <= 0 {
				out[cutMark] = strconv.Itoa(len(keys)-i) + " more"
				break
			}
			if ck := e.key(k); !has(out, ck) {
				out[ck] = e.value(v[k], depth-1)
			}
		}
		return out
	default:
		e.left -= 8 // a bool or a number
		return v
	}
}

func has(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// cut returns s, or its first n code points followed by "…" when it is longer.
func cut(s string, n int) string {
	out, _ := clip(s, n, math.MaxInt)
	return out
}

// clip cuts s to at most n code points and to at most budget bytes of JSON (quotes included;
// a cut string may go over by the mark), marking a cut with "…". It also returns what the
// result costs as JSON, as encoding/json writes it without HTML escaping.
func clip(s string, n, budget int) (string, int) {
	cost := 2
	for i, k := 0, 0; i < len(s); k++ {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := jsonLen(r, size)
		if k == n || cost+c > budget {
			return s[:i] + cutMark, cost + len(cutMark)
		}
		cost += c
		i += size
	}
	return s, cost
}

// jsonLen is how many bytes encoding/json writes for one decoded rune of a string.
func jsonLen(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
		return 6
	case r == '"', r == '\\', r == '\n', r == '\r', r == '\t':
		return 2
	case r < 0x20:
		return 6
	}
	return size
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
