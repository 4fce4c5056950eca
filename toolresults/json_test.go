package toolresults

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/osc-assistant/assistant/strictjson"
)

// TestRepeatedKeys: every repeated key of a document, at any depth, is one item located at
// the key (cut as in any loc), in document order; a repeat's own value is not searched.
func TestRepeatedKeys(t *testing.T) {
	long := strings.Repeat("k", 100)
	doc := `{"a":1,"b":[{"c":1,"c":2}],"a":{"d":1,"d":2},"` + long + `":1,"` + long + `":[1]}`
	v, err := strictjson.Parse([]byte(doc), parseLimits)
	if err != nil {
		t.Fatal(err)
	}
	ve := RepeatedKeys(v, []any{"body"})
	if ve == nil {
		t.Fatal("no repeats found")
	}
	var locs [][]any
	for _, fe := range ve.Errors {
		if fe.Type != "value_error" || fe.Msg != "Value error, "+msgDuplicate {
			t.Errorf("item %+v", fe)
		}
		locs = append(locs, fe.Loc)
	}
	want := [][]any{{"body", "b", 0, "c"}, {"body", "a"}, {"body", ClipKey(long)}}
	if diff := cmp.Diff(want, locs); diff != "" {
		t.Errorf("locs (-want +got):\n%s", diff)
	}
	if v, _ := strictjson.Parse([]byte(`{"a":{"a":[{"a":1}]}}`), parseLimits); RepeatedKeys(v, nil) != nil {
		t.Error("repeats found in a document without any")
	}
}

// TestJSONInvalid: a syntax error is located by its code-point offset after at.
func TestJSONInvalid(t *testing.T) {
	data := []byte(`{"é":1}}`)
	_, err := strictjson.Parse(data, parseLimits)
	var se *strictjson.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Parse: %v", err)
	}
	got := JSONInvalid([]any{"body"}, data, se)
	want := FieldError{Type: "json_invalid", Loc: []any{"body", 7}, Msg: msgJSON, Input: map[string]any{}, Ctx: map[string]any{"error": "Extra data"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
