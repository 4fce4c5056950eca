package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTree(t *testing.T) {
	v, err := Parse([]byte(` {"b": [1, -2.5e3, "x\u00e9\ud83d\ude00"], "a": {"A": null, "a": true, "a": false}, "\ud800": "\udc00"} `), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := &Value{Kind: Object, Members: []Member{
		{Key: "b", Value: &Value{Kind: Array, Items: []*Value{
			{Kind: Number, Str: "1"}, {Kind: Number, Str: "-2.5e3"}, {Kind: String, Str: "xé😀"},
		}}},
		{Key: "a", Value: &Value{Kind: Object, Members: []Member{
			{Key: "A", Value: &Value{Kind: Null}},
			{Key: "a", Value: &Value{Kind: Bool, Bool: true}},
			{Key: "a", Value: &Value{Kind: Bool}, Dup: true},
		}}},
		{Key: "\ufffd", Value: &Value{Kind: String, Str: "\ufffd", LoneSurrogate: true}},
	}}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	got := v.Interface()
	wantAny := map[string]any{"b": []any{json.Number("1"), json.Number("-2.5e3"), "xé😀"}, "a": map[string]any{"A": nil, "a": true}, "\ufffd": "\ufffd"}
	if diff := cmp.Diff(wantAny, got); diff != "" {
		t.Errorf("Interface (-want +got):\n%s", diff)
	}
}

// TestDuplicatesInLargeObjects: past smallObject members a map finds repeats, with the keys
// before the switch counted.
func TestDuplicatesInLargeObjects(t *testing.T) {
	for _, n := range []int{smallObject - 1, smallObject, smallObject + 1, 3 * smallObject} {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			b.WriteString(`"k` + strings.Repeat("x", i) + `":0,`)
		}
		b.WriteString(`"k":1,"k` + strings.Repeat("x", n-1) + `":2,"new":3}`)
		v, err := Parse([]byte(b.String()), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var dups []string
		for _, m := range v.Members {
			if m.Dup {
				dups = append(dups, m.Key)
			}
		}
		if want := []string{"k", "k" + strings.Repeat("x", n-1)}; !cmp.Equal(dups, want) {
			t.Errorf("%d members: repeats %q, want %q", n, dups, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("[", 5) + strings.Repeat("]", 5)
	cases := []struct {
		in   string
		lim  Limits
		code Code
		off  int
	}{
		{"", Limits{}, ExpectingValue, 0},
		{"  ", Limits{}, ExpectingValue, 2},
		{`{"a":1}}`, Limits{}, ExtraData, 7},
		{`{"a":1} x`, Limits{}, ExtraData, 8},
		{`{"a":1}]`, Limits{}, ExtraData, 7},
		{`{} {}`, Limits{}, ExtraData, 3},
		{"{\"a\":\"\xff\"}", Limits{}, InvalidUTF8, 6},
		{`{"a" 1}`, Limits{}, ExpectingColon, 5},
		{`{"a":1,}`, Limits{}, ExpectingKey, 7},
		{`{'a':1}`, Limits{}, ExpectingKey, 1},
		{`{"a":1 "b":2}`, Limits{}, ExpectingObjectComma, 7},
		{`[1 2]`, Limits{}, ExpectingArrayComma, 3},
		{`[1,]`, Limits{}, ExpectingValue, 3},
		{`[NaN]`, Limits{}, ExpectingValue, 1},
		{`[-Infinity]`, Limits{}, ExpectingValue, 1},
		{`[01]`, Limits{}, ExpectingArrayComma, 2},
		{`[1.]`, Limits{}, ExpectingValue, 1},
		{`[tru]`, Limits{}, ExpectingValue, 1},
		{"[\"a\tb\"]", Limits{}, ControlCharacter, 3},
		{`["a\x"]`, Limits{}, InvalidEscape, 3},
		{`["a\u12g4"]`, Limits{}, InvalidUnicodeEscape, 3},
		{`["abc`, Limits{}, UnterminatedString, 1},
		{`["abc\`, Limits{}, UnterminatedString, 1},
		{`{"a":1}`, Limits{}, 0, 0},
		{deep, Limits{MaxDepth: 5}, 0, 0},
		{deep, Limits{MaxDepth: 4}, TooDeep, 4},
		{`{"a":[{}]}`, Limits{MaxDepth: 2}, TooDeep, 6},
		{strings.Repeat("[", DefaultMaxDepth+1), Limits{}, TooDeep, DefaultMaxDepth},
		{`[1,2,3]`, Limits{MaxValues: 4}, 0, 0},
		{`[1,2,3,4]`, Limits{MaxValues: 4}, TooManyValues, 7},
	}
	for _, tc := range cases {
		v, err := Parse([]byte(tc.in), tc.lim)
		if tc.code == 0 {
			if err != nil || v == nil {
				t.Errorf("Parse(%q) = %v, %v", tc.in, v, err)
			}
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) || v != nil || se.Code != tc.code || se.Offset != tc.off {
			t.Errorf("Parse(%q) = %v, %v; want %s at %d", tc.in, v, err, tc.code.Msg(), tc.off)
		}
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("{\n  \"é\": x\n}")
	for _, tc := range []struct{ off, line, col int }{{0, 1, 1}, {1, 1, 2}, {2, 2, 1}, {10, 2, 8}, {-5, 1, 1}, {99, 3, 2}} {
		if l, c := LineCol(data, tc.off); l != tc.line || c != tc.col {
			t.Errorf("LineCol(%d) = %d:%d, want %d:%d", tc.off, l, c, tc.line, tc.col)
		}
	}
}
