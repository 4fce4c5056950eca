package toolresults

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/limits"
	goldenfile "github.com/osc-assistant/assistant/tests/golden"
)

// golden compares got with testdata/<name>, or rewrites the file under -update (tests/golden).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", filepath.FromSlash(name)), got)
}

// marshalGolden renders v as indented JSON without HTML escaping, as the golden files hold it.
func marshalGolden(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// outcome is what a golden file records: the decoded value, or the 422 detail list and how
// many errors were left out of it.
type outcome struct {
	Result  any          `json:"result,omitempty"`
	Detail  []FieldError `json:"detail,omitempty"`
	Omitted int          `json:"omitted,omitempty"`
}

// detailOf checks that err is a *ValidationError that is well formed (every item has a type, a
// non-nil loc and a message, and there are at most limits.MaxErrorItems) and returns it.
func detailOf(t *testing.T, err error) *ValidationError {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T is not a *ValidationError: %v", err, err)
	}
	if len(ve.Errors) == 0 {
		t.Fatal("a *ValidationError with no items")
	}
	for _, fe := range ve.Errors {
		if fe.Type == "" || fe.Loc == nil || fe.Msg == "" {
			t.Errorf("malformed item %+v", fe)
		}
	}
	if len(ve.Errors) > limits.MaxErrorItems || ve.Omitted < 0 || (ve.Omitted > 0 && len(ve.Errors) != limits.MaxErrorItems) {
		t.Errorf("%d items and %d omitted", len(ve.Errors), ve.Omitted)
	}
	return ve
}

// TestDecodeGolden decodes every testdata/decode/*.json with Decode and every
// testdata/resume/*.json with DecodeResume and compares the outcome with <name>.want.json. A
// case named ok_* must be accepted and bad_* refused.
func TestDecodeGolden(t *testing.T) {
	for _, dir := range []string{"decode", "resume"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range files {
			if strings.HasSuffix(f, ".want.json") {
				continue
			}
			n++
			name := strings.TrimSuffix(filepath.Base(f), ".json")
			t.Run(dir+"/"+name, func(t *testing.T) {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				var got outcome
				var v any
				if dir == "decode" {
					r, e := Decode(data)
					v, err = r, e
					if (r == nil) == (e == nil) {
						t.Fatalf("Decode returned %v and %v", r, e)
					}
				} else {
					r, e := DecodeResume(data)
					v, err = r, e
					if (r == nil) == (e == nil) {
						t.Fatalf("DecodeResume returned %v and %v", r, e)
					}
				}
				if err != nil {
					ve := detailOf(t, err)
					got.Detail, got.Omitted = ve.Errors, ve.Omitted
				} else {
					got.Result = v
				}
				if strings.HasPrefix(name, "ok_") != (err == nil) {
					t.Errorf("case %s: error = %v", name, err)
				}
				golden(t, dir+"/"+name+".want.json", marshalGolden(t, got))
			})
		}
		if n < 10 {
			t.Fatalf("only %d cases in testdata/%s", n, dir)
		}
	}
}

// summarize replaces every string longer than 256 code points in a JSON value with its length
// and a hash, so that golden files of generated cases stay small and readable.
func summarize(v any) any {
	switch v := v.(type) {
	case string:
		if n := utf8.RuneCountInString(v); n > 256 {
			return fmt.Sprintf("<%d code points, %d bytes, sha256 %x>", n, len(v), sha256.Sum256([]byte(v)))
		}
		return v
	case []any:
		for i := range v {
			v[i] = summarize(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = summarize(v[k])
		}
	}
	return v
}

// TestDecodeGenerated covers the caps with inputs too large to commit: each case is built in
// code and its outcome compared with testdata/generated/<name>.want.json, in which every string
// over 256 code points is summarized as its length and hash.
func TestDecodeGenerated(t *testing.T) {
	for _, tc := range generatedCases() {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if tc.resume {
				var r *ResumeRequest
				r, err = DecodeResume(data)
				if r != nil {
					v = r
				}
			} else {
				var r *Result
				r, err = Decode(data)
				if r != nil {
					v = r
				}
			}
			var got outcome
			if err != nil {
				ve := detailOf(t, err)
				got.Detail, got.Omitted = ve.Errors, ve.Omitted
			} else {
				got.Result = v
			}
			if tc.ok != (err == nil) {
				t.Errorf("ok = %v, want %v; error = %v", err == nil, tc.ok, err)
			}
			// Round-trip through any so that the summary also reaches inside Result.
			var generic any
			dec := json.NewDecoder(bytes.NewReader(marshalGolden(t, got)))
			dec.UseNumber()
			if err := dec.Decode(&generic); err != nil {
				t.Fatal(err)
			}
			golden(t, "generated/"+tc.name+".want.json", marshalGolden(t, summarize(generic)))
		})
	}
}
