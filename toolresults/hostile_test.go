package toolresults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/limits"
)

// TestHostileInputCost feeds 4 MiB bodies built to make a parser or checker amplify them, and
// checks that none costs more than twice its size in allocations (the one copy of its strings
// is the floor).
func TestHostileInputCost(t *testing.T) {
	const size = 4 << 20
	repeat := func(prefix, unit, suffix string) []byte {
		return []byte(prefix + strings.Repeat(unit, (size-len(prefix)-len(suffix))/len(unit)) + suffix)
	}
	cases := []struct {
		name string
		body []byte
	}{
		{"tiny_array_items", repeat(`{"call_id":"c","x":[`, `0,`, `0]}`)},
		{"many_unknown_keys", func() []byte {
			var b bytes.Buffer
			b.WriteString(`{"call_id":"c"`)
			for i := 0; b.Len() < size; i++ {
				b.WriteString(`,"k`)
				b.WriteString(strings.Repeat("x", i%7))
				b.WriteString(`":0`)
			}
			b.WriteString("}")
			return b.Bytes()
		}()},
		{"deep_nesting", repeat(`{"call_id":"c","x":`, `[`, ``)},
		{"escapes", repeat(`{"call_id":"c","stdout":"`, `\u00e9\n`, `"}`)},
		{"long_unknown_string", repeat(`{"call_id":"c","x":"`, `abcdefgh`, `"}`)},
		{"bad_base64", repeat(`{"call_id":"c","images":[{"mime":"image/png","width":1,"height":1,"data_base64":"`, `AAA-`, `"}]}`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Decode(tc.body)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("accepted")
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 2*uint64(len(tc.body)) {
				t.Errorf("a %d-byte body allocated %d bytes", len(tc.body), got)
			}
			if n := len(err.(*ValidationError).Errors); n > 2*parseLimits.MaxValues {
				t.Errorf("%d errors", n)
			}
		})
	}
}

// TestErrorListBounded feeds bodies built to make the error list amplify them: long keys
// echoed in loc and in every "missing" item that echoes its object, one item per unknown key,
// deep and wide values, characters JSON escapes to six bytes. The list must keep at most
// limits.MaxErrorItems items and count the rest, cut every key and echo, and encode (with a
// final OmittedErrors item, as the server sends it) to less than limits.MaxErrorBodyBytes.
func TestErrorListBounded(t *testing.T) {
	// object is {"<i><fill>": value, ...} with n keys.
	object := func(n int, fill string, value string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"%04d%s":%s`, i, fill, value)
		}
		b.WriteString("}")
		return b.String()
	}
	nested := object(10, strings.Repeat("k", 100), object(10, strings.Repeat("k", 100), object(9, strings.Repeat("k", 100), `"`+strings.Repeat("v", 300)+`"`)))
	cases := []struct {
		name    string
		resume  bool
		body    string
		omitted int // at least
	}{
		// The body of issue 10: some 8 MB of keys full of "<" in the image objects. Each
		// image has 4 missing fields (echoing the image) and 330 unknown keys.
		{"resume_long_keys_in_images", true, `{"session_id":"s","result":{"call_id":"c","images":[` +
			strings.Join([]string{object(330, strings.Repeat("<", 8600), "0"), object(330, strings.Repeat("<", 8600), "0"), object(330, strings.Repeat("<", 8600), "0")}, ",") +
			`]}}`, 3*334 - limits.MaxErrorItems},
		{"result_long_keys", false, `{"call_id":"c",` + object(1000, strings.Repeat("<", 4000), "0")[1:], 1000 - limits.MaxErrorItems},
		{"escaped_keys_and_values", true, `{"session_id":"s","result":` + object(500, strings.Repeat(`\u0001`, 1000), `"`+strings.Repeat(`\u0002`, 1000)+`"`) + `}`, 1},
		{"wide_deep_value", false, `{"call_id":"c","x":` + nested + `}`, 0},
		{"missing_echoes_wide_images", false, `{"images":[` + strings.Join([]string{
			object(16, strings.Repeat("é", 500), `"`+strings.Repeat("<", 500)+`"`),
			object(16, strings.Repeat("é", 500), `"`+strings.Repeat("<", 500)+`"`),
			object(16, strings.Repeat("é", 500), `"`+strings.Repeat("<", 500)+`"`)}, ",") + `]}`, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.resume {
				_, err = DecodeResume([]byte(tc.body))
			} else {
				_, err = Decode([]byte(tc.body))
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v", err)
			}
			if hasType(err, "json_invalid") {
				t.Fatalf("the case is not valid JSON: %v", err)
			}
			if len(ve.Errors) > limits.MaxErrorItems || ve.Omitted < tc.omitted {
				t.Errorf("%d items, %d omitted; want at most %d items and at least %d omitted", len(ve.Errors), ve.Omitted, limits.MaxErrorItems, tc.omitted)
			}
			items := append(ve.Errors, OmittedErrors([]any{"body"}, ve.Omitted))
			for _, fe := range ve.Errors {
				for _, p := range fe.Loc {
					if s, ok := p.(string); ok && utf8.RuneCountInString(s) > echoKeyChars+1 {
						t.Fatalf("loc key of %d code points", utf8.RuneCountInString(s))
					}
				}
				// The budget is of content; brackets, and the marks of a cut, come on top.
				if n := len(encodeNoHTML(t, fe.Input)); n > echoBudget*5/4 {
					t.Fatalf("an input echo of %d bytes: %s", n, encodeNoHTML(t, fe.Input))
				}
			}
			body := encodeNoHTML(t, map[string]any{"detail": items})
			if len(body) >= int(limits.MaxErrorBodyBytes) {
				t.Errorf("a %d-byte body gives a %d-byte 422", len(tc.body), len(body))
			}
			t.Logf("%d-byte body: %d items, %d omitted, %d-byte 422", len(tc.body), len(ve.Errors), ve.Omitted, len(body))
		})
	}
}

// TestEcho: values decoded by encoding/json are echoed with the bounds Decode's inputs get.
func TestEcho(t *testing.T) {
	long := strings.Repeat("<", 1000)
	many := make([]any, 20000)
	for i := range many {
		many[i] = "<<<<<<<<<<"
	}
	wide := map[string]any{}
	for i := range 100 {
		wide[fmt.Sprintf("%03d%s", i, long)] = long
	}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"short string", "abc", `"abc"`},
		{"long string", long, `"` + long[:echoStringChars] + `…"`},
		{"number", json.Number("12.5"), `12.5`},
		{"null", nil, `null`},
		{"bool", true, `true`},
		{"long list", many, `[` + strings.Repeat(`"<<<<<<<<<<",`, echoEntries) + `"…"]`},
		{"deep", map[string]any{"a": []any{map[string]any{"b": 1, "c": []any{}}}}, `{"a":[{"b":1,"c":"…"}]}`},
		{"escapes", strings.Repeat("\x01", 300), `"` + strings.Repeat(`\u0001`, (echoBudget-2)/6) + `…"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(encodeNoHTML(t, Echo(tc.in))); got != tc.want {
				t.Errorf("Echo =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	// A wide object is cut by the budget: its first keys in sorted order, each key and value
	// cut, then a count of the keys left out.
	got := string(encodeNoHTML(t, Echo(wide)))
	first := `{"000` + long[:echoKeyChars-3] + `…":"` + long[:echoStringChars] + `…","001`
	if !strings.HasPrefix(got, first) || !strings.HasSuffix(got, `…","…":"96 more"}`) || len(got) > echoBudget*5/4 {
		t.Errorf("Echo of a wide object = %s", got)
	}
}

func encodeNoHTML(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
