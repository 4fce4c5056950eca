package toolresults

import (
	"unicode/utf8"

	"github.com/osc-assistant/assistant/strictjson"
)

// The documents are parsed by package strictjson, which keeps every object's members in input
// order, exactly as written, so the checker can refuse "Stdout" and repeated keys.

// node is one parsed JSON value.
type node = strictjson.Value

// parseLimits bound a posted document. A valid /chat/resume body needs four levels (body,
// result, images, image) and holds fewer than 100 values; without a bound on values, a body of
// "[0,0,0,…" would cost some 80 bytes of parse tree, and then of error list, per 2 bytes of
// input.
var parseLimits = strictjson.Limits{MaxDepth: 64, MaxValues: 1024}

// JSONInvalid is FastAPI's item for a body that is not JSON: type json_invalid, located by the
// code-point offset of the problem after at (["body", 17]), with Python's json message in
// ctx.error.
func JSONInvalid(at []any, data []byte, e *strictjson.SyntaxError) FieldError {
	pos := utf8.RuneCount(data[:min(e.Offset, len(data))])
	return FieldError{
		Type:  "json_invalid",
		Loc:   path(at).with(pos),
		Msg:   msgJSON,
		Input: map[string]any{},
		Ctx:   map[string]any{"error": e.Code.Msg()},
	}
}

// RepeatedKey is the item for a key that its object repeats (m.Dup), a member of the object at
// at: a value_error located at the key (cut as ClipKey cuts it), echoing the repeated value.
func RepeatedKey(at []any, m strictjson.Member) FieldError {
	return FieldError{Type: "value_error", Loc: path(at).with(ClipKey(m.Key)), Msg: "Value error, " + msgDuplicate,
		Input: echoAt(m.Value, m.Key), Ctx: map[string]any{"error": msgDuplicate}}
}

// RepeatedKeys finds every repeated key in the document v, located at at, and returns them as
// a *ValidationError in document order (the first limits.MaxErrorItems, and a count of the
// rest), or nil when no object repeats a key. It is for bodies whose own checks look at a
// decoded map, where a repeat would otherwise pass unseen.
func RepeatedKeys(v *strictjson.Value, at []any) *ValidationError {
	var c checker
	c.repeats(v, path(at))
	if c.found == 0 {
		return nil
	}
	return c.err()
}

func (c *checker) repeats(v *node, at path) {
	switch v.Kind {
	case strictjson.Array:
		for i, it := range v.Items {
			c.repeats(it, at.with(i))
		}
	case strictjson.Object:
		for _, m := range v.Members {
			if m.Dup {
				if c.room() {
					c.errs = append(c.errs, RepeatedKey(at, m))
				}
				continue
			}
			c.repeats(m.Value, at.with(ClipKey(m.Key)))
		}
	}
}
