package strictjson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Kind is the kind of a JSON value.
type Kind uint8

// The kinds of JSON values.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// Value is one parsed JSON value.
type Value struct {
	Kind Kind
	// Str is the unescaped text of a String, or the literal of a Number as written.
	Str string
	// Bool is the value of a Bool.
	Bool bool
	// LoneSurrogate marks a String that held an unpaired UTF-16 surrogate escape (such as
	// "\ud800"), which a Go string cannot hold: Str has U+FFFD in its place, as encoding/json
	// would write, and a caller that must refuse it (pydantic does) can.
	LoneSurrogate bool
	// Items are an Array's values.
	Items []*Value
	// Members are an Object's members, in input order, repeated keys included.
	Members []Member
}

// Member is one member of an object.
type Member struct {
	// Key is the unescaped key, exactly as written.
	Key   string
	Value *Value
	// Dup marks a key that an earlier member of the same object already has (compared byte
	// for byte after unescaping).
	Dup bool
}

// Interface returns v as encoding/json decodes into an any with UseNumber: nil, bool,
// json.Number, string, []any and map[string]any. Of a repeated key, the first value is kept.
func (v *Value) Interface() any {
	switch v.Kind {
	case Null:
		return nil
	case Bool:
		return v.Bool
	case Number:
		return json.Number(v.Str)
	case String:
		return v.Str
	case Array:
		out := make([]any, len(v.Items))
		for i, it := range v.Items {
			out[i] = it.Interface()
		}
		return out
	default:
		out := make(map[string]any, len(v.Members))
		for _, m := range v.Members {
			if !m.Dup {
				out[m.Key] = m.Value.Interface()
			}
		}
		return out
	}
}

// Limits bound a document. A /chat/resume body needs four levels and fewer than 100 values.
type Limits struct {
	// MaxDepth is how many arrays and objects may be open at once (a lone scalar is depth 0,
	// {"a":[1]} depth 2). It bounds the parser's recursion; 0 means DefaultMaxDepth.
	MaxDepth int
	// MaxValues is how many values (scalars, arrays and objects) the document may hold, or 0
	// for no bound beyond the input's size. Without one, each 2 bytes of "[0,0,0,…" cost some
	// 80 bytes of tree.
	MaxValues int
}

// DefaultMaxDepth is the MaxDepth of a zero Limits.
const DefaultMaxDepth = 64

// Code says what is wrong with a document.
type Code uint8

// The syntax problems Parse reports. Each one's Msg is Python's json module's wording.
const (
	InvalidUTF8          Code = iota + 1 // the input is not UTF-8; at the first bad byte
	ExpectingValue                       // no value, or a malformed one; at its first byte
	ExpectingKey                         // an object key is not a string; at the byte found
	ExpectingColon                       // a key is not followed by ':'
	ExpectingObjectComma                 // a member is followed by neither ',' nor '}'
	ExpectingArrayComma                  // an item is followed by neither ',' nor ']'
	ControlCharacter                     // a raw control character in a string; at it
	InvalidEscape                        // an unknown \ escape; at the backslash
	InvalidUnicodeEscape                 // a \u not followed by four hex digits; at the backslash
	UnterminatedString                   // no closing quote; at the opening one
	ExtraData                            // anything but white space after the value; at it
	TooDeep                              // more than MaxDepth levels; at the '[' or '{' too many
	TooManyValues                        // more than MaxValues values; at the first one too many
)

var codeMsgs = [...]string{
	InvalidUTF8:          "Invalid UTF-8",
	ExpectingValue:       "Expecting value",
	ExpectingKey:         "Expecting property name enclosed in double quotes",
	ExpectingColon:       "Expecting ':' delimiter",
	ExpectingObjectComma: "Expecting ',' delimiter",
	ExpectingArrayComma:  "Expecting ',' delimiter",
	ControlCharacter:     "Invalid control character at",
	InvalidEscape:        "Invalid \\escape",
	InvalidUnicodeEscape: "Invalid \\uXXXX escape",
	UnterminatedString:   "Unterminated string starting at",
	ExtraData:            "Extra data",
	TooDeep:              "Nesting too deep",
	TooManyValues:        "Too many values",
}

// Msg is the problem in the words of Python's json module (what FastAPI puts in ctx.error),
// with "Nesting too deep", "Too many values" and "Invalid UTF-8" for the problems Python's
// json has no words for.
func (c Code) Msg() string {
	if int(c) < len(codeMsgs) && codeMsgs[c] != "" {
		return codeMsgs[c]
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// SyntaxError is a document Parse refused.
type SyntaxError struct {
	Code Code
	// Offset is the byte offset of the problem in the input (see Code), len(input) when the
	// input ended too soon.
	Offset int
}

func (e *SyntaxError) Error() string {
	return "invalid JSON at byte " + strconv.Itoa(e.Offset) + ": " + e.Code.Msg()
}

// LineCol returns the 1-based line and column of a byte offset in data, the column counted in
// code points. An offset outside data is moved to its nearer end.
func LineCol(data []byte, offset int) (line, col int) {
	offset = min(max(offset, 0), len(data))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return line, col
}
