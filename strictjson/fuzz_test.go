package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"
)

// fuzzLimits are small, so the fuzzer reaches both bounds.
var fuzzLimits = Limits{MaxDepth: 8, MaxValues: 64}

// FuzzParse: Parse never panics; it returns a tree or a *SyntaxError inside the input; a tree
// keeps the bounds; it re-encodes to JSON that encoding/json accepts with the same values
// (Interface), and that Parse reads back to the same tree; and Parse accepts exactly what
// encoding/json accepts, but for invalid UTF-8 and the bounds, with the same values when no key
// repeats.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"call_id":"c","status":"ok","images":[{"mime":"image/png","width":1,"height":1}]}`,
		`{"a":1,"a":2,"A":[true,false,null,-0.5e-3,"\u00e9\ud83d\ude00\ud800\\\/\b\f\n\r\t"]}`,
		`{"a":1}}`, `{"a":1} x`, `[[[[[[[[[]]]]]]]]]`, `[1,2,3,4,5,6,7,8,9,10]`, "\xef\xbb\xbf{}", `{"a":NaN}`, ` "x" `, `01`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data, fuzzLimits)
		var doc any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		stdOK := dec.Decode(&doc) == nil && json.Valid(data)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || v != nil || se.Offset < 0 || se.Offset > len(data) {
				t.Fatalf("Parse = %v, %v", v, err)
			}
			bound := se.Code == TooDeep || se.Code == TooManyValues
			if stdOK && !bound && utf8.Valid(data) {
				t.Fatalf("encoding/json accepts %q, Parse refuses it: %v", data, err)
			}
			return
		}
		if !stdOK {
			t.Fatalf("Parse accepts %q, encoding/json refuses it", data)
		}
		depth, values, dup := measure(v)
		if depth > fuzzLimits.MaxDepth || values > fuzzLimits.MaxValues {
			t.Fatalf("a tree %d deep of %d values passed the bounds", depth, values)
		}
		if !dup && !reflect.DeepEqual(doc, v.Interface()) {
			t.Fatalf("encoding/json reads %#v, Parse %#v", doc, v.Interface())
		}
		out := encode(nil, v)
		var again any
		dec = json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&again); err != nil || !reflect.DeepEqual(again, v.Interface()) {
			t.Fatalf("the re-encoding %s reads as %#v (%v), want %#v", out, again, err, v.Interface())
		}
		w, err := Parse(out, fuzzLimits)
		if err != nil || !reflect.DeepEqual(w, withoutRepeats(v)) {
			t.Fatalf("the re-encoding %s parses to another tree (%v)", out, err)
		}
	})
}

// measure returns how many arrays and objects v nests, how many values it holds, and whether
// any key repeats.
func measure(v *Value) (depth, values int, dup bool) {
	values = 1
	var kids []*Value
	for _, m := range v.Members {
		dup = dup || m.Dup
		kids = append(kids, m.Value)
	}
	kids = append(kids, v.Items...)
	for _, k := range kids {
		d, n, dp := measure(k)
		depth, values, dup = max(depth, d), values+n, dup || dp
	}
	if v.Kind == Array || v.Kind == Object {
		depth++
	}
	return depth, values, dup
}

// encode appends v as JSON, members in order, leaving repeated keys out.
func encode(b []byte, v *Value) []byte {
	switch v.Kind {
	case Null:
		return append(b, "null"...)
	case Bool:
		return strconv.AppendBool(b, v.Bool)
	case Number:
		return append(b, v.Str...)
	case String:
		s, _ := json.Marshal(v.Str)
		return append(b, s...)
	case Array:
		b = append(b, '[')
		for i, it := range v.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = encode(b, it)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		first := true
		for _, m := range v.Members {
			if m.Dup {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			k, _ := json.Marshal(m.Key)
			b = encode(append(append(b, k...), ':'), m.Value)
		}
		return append(b, '}')
	}
}

// withoutRepeats is v as encode writes it: no repeated keys, and no lone surrogates (their
// U+FFFD is written as itself).
func withoutRepeats(v *Value) *Value {
	c := &Value{Kind: v.Kind, Str: v.Str, Bool: v.Bool}
	for _, it := range v.Items {
		c.Items = append(c.Items, withoutRepeats(it))
	}
	for _, m := range v.Members {
		if !m.Dup {
			c.Members = append(c.Members, Member{Key: m.Key, Value: withoutRepeats(m.Value)})
		}
	}
	return c
}
