package toolresults

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/osc-assistant/assistant/limits"
)

// FuzzResult feeds arbitrary bytes to Decode. It must never panic; a rejection must be a
// *ValidationError of at most limits.MaxErrorItems items whose every loc is non-empty (only a
// non-object input is located at the root) and, for valid JSON, names a value in the input
// (a long key cut to its start) or, for "missing", a key of an object in it; anything accepted must re-encode to JSON that Decode accepts as an equal Result, and
// must render. Wrapped in a /chat/resume body, the same input must give the same outcome with
// locs under ["body", "result"]. The seeds are testdata/decode/*.json.
func FuzzResult(f *testing.F) {
	files, _ := filepath.Glob("testdata/decode/*.json")
	for _, file := range files {
		if strings.HasSuffix(file, ".want.json") {
			continue
		}
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			if r != nil {
				t.Fatal("a result and an error")
			}
			checkRejection(t, data, err)
			return
		}
		if r == nil {
			t.Fatal("neither a result nor an error")
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded result %s refused: %v", again, err)
		}
		if diff := cmp.Diff(r, r2); diff != "" {
			t.Fatalf("round trip changed the result (-first +second):\n%s", diff)
		}
		text := r.Text()
		if n := utf8.RuneCountInString(text); n > int(limits.MaxToolResultLength)+utf8.RuneCountInString(truncatedMark) {
			t.Fatalf("Text() has %d code points", n)
		}
		if !strings.HasPrefix(r.StoredText(), text) || len(r.LiveBlocks(true)) != 1+len(r.Images) {
			t.Fatal("renderings disagree")
		}
		wrapped, werr := DecodeResume(wrap(data))
		if werr != nil {
			if !hasType(werr, "json_invalid") { // wrapping adds a level of nesting
				t.Fatalf("accepted alone, refused in a resume body: %v", werr)
			}
			return
		}
		if diff := cmp.Diff(*r, wrapped.Result); diff != "" {
			t.Fatalf("DecodeResume result differs (-Decode +DecodeResume):\n%s", diff)
		}
	})
}

func wrap(result []byte) []byte {
	return append(append([]byte(`{"session_id":"s","result":`), result...), '}')
}

func hasType(err error, typ string) bool {
	var ve *ValidationError
	if errors.As(err, &ve) {
		for _, fe := range ve.Errors {
			if fe.Type == typ {
				return true
			}
		}
	}
	return false
}

func checkRejection(t *testing.T, data []byte, err error) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Errors) == 0 {
		t.Fatalf("error %T %v is not a non-empty *ValidationError", err, err)
	}
	if len(ve.Errors) > limits.MaxErrorItems || (ve.Omitted != 0 && len(ve.Errors) != limits.MaxErrorItems) {
		t.Fatalf("%d items and %d omitted", len(ve.Errors), ve.Omitted)
	}
	for _, fe := range ve.Errors {
		if fe.Type == "" || fe.Msg == "" {
			t.Fatalf("item without type or msg: %+v", fe)
		}
		if len(fe.Loc) == 0 && !(fe.Type == "model_attributes_type" && len(ve.Errors) == 1) {
			t.Fatalf("empty loc: %+v", fe)
		}
	}
	if _, err := json.Marshal(ve.Errors); err != nil {
		t.Fatalf("the errors do not encode: %v", err)
	}
	syntax := hasType(err, "json_invalid")
	if syntax && len(ve.Errors) != 1 {
		t.Fatalf("a syntax error among others: %v", err)
	}
	if !utf8.Valid(data) {
		if !syntax {
			t.Fatalf("invalid UTF-8 not refused as json_invalid: %v", err)
		}
		return
	}
	// Cross-check the parser with encoding/json, which refuses exactly the same syntax except
	// that it allows deeper nesting and more values.
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	valid := dec.Decode(&doc) == nil && !dec.More() && json.Valid(data)
	if !valid {
		if !syntax {
			t.Fatalf("encoding/json refuses the input but Decode reports %v", err)
		}
		return
	}
	if syntax {
		if e := ve.Errors[0].Ctx["error"]; e != "Nesting too deep" && e != "Too many values" {
			t.Fatalf("encoding/json accepts the input but Decode reports %v", err)
		}
		return
	}
	for _, fe := range ve.Errors {
		if !locExists(doc, fe.Loc, fe.Type == "missing") {
			t.Fatalf("loc %v of %q is not in the input", fe.Loc, fe.Type)
		}
	}
	// The same input inside a resume body: the same problems, under ["body", "result"].
	_, werr := DecodeResume(wrap(data))
	if hasType(werr, "json_invalid") {
		return
	}
	var wve *ValidationError
	if !errors.As(werr, &wve) {
		t.Fatalf("refused alone (%v), accepted in a resume body", err)
	}
	want := make([]FieldError, len(ve.Errors))
	for i, fe := range ve.Errors {
		fe.Loc = append([]any{"body", "result"}, fe.Loc...)
		want[i] = fe
	}
	if diff := cmp.Diff(want, wve.Errors); diff != "" {
		t.Fatalf("DecodeResume errors differ (-Decode, prefixed +DecodeResume):\n%s", diff)
	}
	if wve.Omitted != ve.Omitted {
		t.Fatalf("omitted %d alone, %d in a resume body", ve.Omitted, wve.Omitted)
	}
}

// clippedKey finds the value of the key that ClipKey cut to p.
func clippedKey(m map[string]any, p string) (any, bool) {
	for k, v := range m {
		if k != p && ClipKey(k) == p {
			return v, true
		}
	}
	return nil, false
}

// locExists walks loc through doc, a document decoded by encoding/json. The last element may be
// absent when missing is true.
func locExists(doc any, loc []any, missing bool) bool {
	cur := doc
	for i, p := range loc {
		last := i == len(loc)-1
		switch p := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			v, ok := m[p]
			if !ok {
				if v, ok = clippedKey(m, p); !ok {
					return last && missing
				}
			}
			cur = v
		case int:
			a, ok := cur.([]any)
			if !ok || p < 0 || p >= len(a) {
				return false
			}
			cur = a[p]
		default:
			return false
		}
	}
	return true
}
