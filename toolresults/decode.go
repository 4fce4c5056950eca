package toolresults

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/strictjson"
)

// noMax means a string has no length cap.
const noMax = -1

// pydantic's messages for the error types used here.
const (
	msgMissing       = "Field required"
	msgExtra         = "Extra inputs are not permitted"
	msgModelType     = "Input should be a valid dictionary or object to extract fields from"
	msgStringType    = "Input should be a valid string"
	msgListType      = "Input should be a valid list"
	msgStringUnicode = "Input should be a valid string, unable to parse raw data as a unicode string"
	msgIntType       = "Input should be a valid integer"
	msgIntFloat      = "Input should be a valid integer, got a number with a fractional part"
	msgFinite        = "Input should be a finite number"
	msgJSON          = "JSON decode error"
	msgDuplicate     = "duplicate key: a JSON object must not repeat a key"
	msgURLScheme     = "url must start with http:// or https://"
)

// MsgControlInID is the 422 message of a session_id holding a control character (ours: the
// reference takes any string; an id lands in log lines and headers).
const MsgControlInID = "String should not contain control characters (a session id is text such as a UUID)"

// statuses are the accepted values of status, in the order pydantic's Literal lists them.
var statuses = []string{StatusOK, StatusError, StatusDenied, StatusTimeout, StatusCancelled, StatusOOM}

const statusExpected = "'ok', 'error', 'denied', 'timeout', 'cancelled' or 'oom'"

// Declared fields of each object, in declaration order (the order errors are reported in).
var (
	resultFields = []string{"call_id", "status", "stdout", "stderr", "summary", "images", "artifacts", "elapsed_ms"}
	imageFields  = []string{"mime", "data_base64", "width", "height"}
	resumeFields = []string{"session_id", "result", "model", "page_context", "client_tools"}
	pageFields   = []string{"url", "title", "widget_instructions"}
)

// Decode parses and validates one ClientToolResult: the "result" object of a /chat/resume body
// (config.md §8.1, §8.2). Keys must match exactly; unknown keys, repeated keys, trailing data,
// wrong types and values over a cap are all refused. Beyond OSA, each image's bytes must
// really be of the declared media type with the declared width and height (only the header is
// read). On failure the error is a *ValidationError listing every problem, with loc paths
// relative to the result object (["stdout"], ["images", 0, "width"]); a JSON syntax error is
// located by its code-point offset ([17]).
//
// Numbers for integer fields must be integral: 1.0 is accepted, 1.5 is refused, and so are
// strings such as "1" and booleans, which pydantic's lax mode would accept.
func Decode(data []byte) (*Result, error) {
	root, err := strictjson.Parse(data, parseLimits)
	if err != nil {
		return nil, syntaxError(path{}, data, err)
	}
	var c checker
	r := c.result(root, path{})
	if c.found > 0 {
		return nil, c.err()
	}
	return r, nil
}

// DecodeResume parses and validates a whole POST /{community}/chat/resume body (config.md
// §8.3): session_id (1..256 code points), result (as Decode), model (null, or a string of at
// most limits.MaxModelChars code points, as on /chat), page_context (null, or an object of
// url, title and widget_instructions, each optional, string or null: url at most 2048 code
// points and starting with http:// or https://, title at most 500, widget_instructions at
// most 2000) and client_tools (at most
// limits.MaxDeclaredClientTools strings). Unknown keys are refused at every level. Errors are
// located as FastAPI locates them: ["body", "session_id"], ["body", "result", "stdout"],
// ["body", 17] for a syntax error, and ["body"] with type "missing" for an empty body.
func DecodeResume(data []byte) (*ResumeRequest, error) {
	at := path{"body"}
	if len(data) == 0 {
		return nil, &ValidationError{Errors: []FieldError{{Type: "missing", Loc: at, Msg: msgMissing}}}
	}
	root, err := strictjson.Parse(data, parseLimits)
	if err != nil {
		return nil, syntaxError(at, data, err)
	}
	var c checker
	req := c.resume(root, at)
	if c.found > 0 {
		return nil, c.err()
	}
	return req, nil
}

// syntaxError is the error of a document strictjson.Parse refused with err.
func syntaxError(at path, data []byte, err error) *ValidationError {
	var se *strictjson.SyntaxError
	if !errors.As(err, &se) {
		se = &strictjson.SyntaxError{Code: strictjson.ExpectingValue}
	}
	return &ValidationError{Errors: []FieldError{JSONInvalid(at, data, se)}}
}

// path is a loc under construction. with always copies, so stored locs never share memory.
type path []any

func (p path) with(k any) path {
	q := make(path, len(p), len(p)+1)
	copy(q, p)
	return append(q, k)
}

// checker collects FieldErrors while it walks the parsed document. It keeps the first
// limits.MaxErrorItems and only counts the rest, so a body of a thousand bad keys costs a
// bounded error list (and 422 body), not one item per key.
type checker struct {
	errs []FieldError
	// found counts every error, kept or not; a part of the document is valid when it did not
	// grow while the part was checked.
	found int
}

// room counts one more error and reports whether it is kept.
func (c *checker) room() bool {
	c.found++
	return len(c.errs) < limits.MaxErrorItems
}

func (c *checker) push(fe FieldError) {
	if c.room() {
		c.errs = append(c.errs, fe)
	}
}

func (c *checker) add(typ string, at path, msg string, input any, ctx map[string]any) {
	if at == nil {
		at = path{}
	}
	c.push(FieldError{Type: typ, Loc: at, Msg: msg, Input: input, Ctx: ctx})
}

func (c *checker) err() *ValidationError {
	return &ValidationError{Errors: c.errs, Omitted: c.found - len(c.errs)}
}

// valueError is how pydantic reports a custom validator's ValueError.
func (c *checker) valueError(at path, input any, msg string) {
	c.add("value_error", at, "Value error, "+msg, input, map[string]any{"error": msg})
}

func (c *checker) missing(at path, parent *node) {
	c.add("missing", at, msgMissing, echo(parent), nil)
}

// fields looks up the declared names in an object. A value that is not an object is reported
// and ok is false. Unknown and repeated keys come back as late members, which the caller
// reports (addLate) after its fields' own errors, as pydantic orders them; a repeated key's
// later value is not looked at.
func (c *checker) fields(n *node, at path, names []string) (vals []*node, late []strictjson.Member, ok bool) {
	if n.Kind != strictjson.Object {
		c.add("model_attributes_type", at, msgModelType, echo(n), nil)
		return nil, nil, false
	}
	vals = make([]*node, len(names))
	for _, m := range n.Members {
		switch idx := slices.Index(names, m.Key); {
		case m.Dup || idx < 0:
			late = append(late, m)
		default:
			vals[idx] = m.Value
		}
	}
	return vals, late, true
}

// addLate reports the late members of the object at at. Their items are built only while
// there is room for them; a key is cut in loc as it is in an echo.
func (c *checker) addLate(at path, late []strictjson.Member) {
	for _, m := range late {
		if !c.room() {
			continue
		}
		if m.Dup {
			c.errs = append(c.errs, RepeatedKey(at, m))
			continue
		}
		c.errs = append(c.errs, FieldError{Type: "extra_forbidden", Loc: at.with(ClipKey(m.Key)), Msg: msgExtra, Input: echoAt(m.Value, m.Key)})
	}
}

// str checks a string of minChars..maxChars code points (maxChars noMax: no cap).
func (c *checker) str(v *node, at path, minChars int, maxChars int) (string, bool) {
	if v.Kind != strictjson.String {
		c.add("string_type", at, msgStringType, echo(v), nil)
		return "", false
	}
	if v.LoneSurrogate {
		c.add("string_unicode", at, msgStringUnicode, echo(v), nil)
		return "", false
	}
	n := 0
	if minChars > 0 || maxChars != noMax {
		n = utf8.RuneCountInString(v.Str)
	}
	switch {
	case n < minChars:
		c.add("string_too_short", at, "String should have at least "+plural(minChars, "character"), echo(v),
			map[string]any{"min_length": minChars})
		return "", false
	case maxChars != noMax && n > maxChars:
		c.push(StringTooLong(at, v.Str, maxChars))
		return "", false
	}
	return v.Str, true
}

// optStr is str for a field that may be null.
func (c *checker) optStr(v *node, at path, maxChars int) (*string, bool) {
	if v.Kind == strictjson.Null {
		return nil, true
	}
	s, ok := c.str(v, at, 0, maxChars)
	if !ok {
		return nil, false
	}
	return &s, true
}

// list checks a list of at most maxItems items. Like pydantic, a list over its cap gets that
// one error and its items are not reported on.
func (c *checker) list(v *node, at path, maxItems int) ([]*node, bool) {
	if v.Kind != strictjson.Array {
		c.add("list_type", at, msgListType, echo(v), nil)
		return nil, false
	}
	if len(v.Items) > maxItems {
		c.add("too_long", at,
			fmt.Sprintf("List should have at most %s after validation, not %d", plural(maxItems, "item"), len(v.Items)),
			echo(v), map[string]any{"field_type": "List", "max_length": maxItems, "actual_length": len(v.Items)})
		return nil, false
	}
	return v.Items, true
}

// integer checks an integral number in ge..le.
func (c *checker) integer(v *node, at path, ge, le int64) (int64, bool) {
	if v.Kind != strictjson.Number {
		c.add("int_type", at, msgIntType, echo(v), nil)
		return 0, false
	}
	x, class := parseInteger(v.Str)
	switch {
	case class == intFraction:
		c.add("int_from_float", at, msgIntFloat, echo(v), nil)
	case class == intInfinite:
		c.add("finite_number", at, msgFinite, echo(v), nil)
	case class == intBelow || x < ge:
		c.add("greater_than_equal", at, "Input should be greater than or equal to "+strconv.FormatInt(ge, 10), echo(v),
			map[string]any{"ge": ge})
	case class == intAbove || x > le:
		c.add("less_than_equal", at, "Input should be less than or equal to "+strconv.FormatInt(le, 10), echo(v),
			map[string]any{"le": le})
	default:
		return x, true
	}
	return 0, false
}

type intClass int

const (
	intOK intClass = iota
	intFraction
	intInfinite
	intBelow // below math.MinInt64
	intAbove // above math.MaxInt64
)

// parseInteger reads a JSON number literal as an int64. Like pydantic, a literal with a
// fraction or exponent is read as a float first and accepted when it is integral.
func parseInteger(lit string) (int64, intClass) {
	if !strings.ContainsAny(lit, ".eE") {
		x, err := strconv.ParseInt(lit, 10, 64)
		switch {
		case err == nil:
			return x, intOK
		case strings.HasPrefix(lit, "-"):
			return 0, intBelow
		default:
			return 0, intAbove
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	switch {
	case err != nil || math.IsInf(f, 0):
		return 0, intInfinite
	case f != math.Trunc(f):
		return 0, intFraction
	case f >= math.MaxInt64: // 2^63 exactly, as a float64
		return 0, intAbove
	case f < math.MinInt64:
		return 0, intBelow
	}
	return int64(f), intOK
}

func (c *checker) result(n *node, at path) *Result {
	start := c.found
	vals, late, ok := c.fields(n, at, resultFields)
	if !ok {
		return nil
	}
	r := &Result{Status: StatusOK}
	if v := vals[0]; v == nil {
		c.missing(at.with("call_id"), n)
	} else {
		r.CallID, _ = c.str(v, at.with("call_id"), 1, int(limits.MaxCallIDChars))
	}
	if v := vals[1]; v != nil {
		if v.Kind != strictjson.String || !slices.Contains(statuses, v.Str) {
			c.add("literal_error", at.with("status"), "Input should be "+statusExpected, echo(v),
				map[string]any{"expected": statusExpected})
		} else {
			r.Status = v.Str
		}
	}
	for i, f := range []struct {
		dst *string
		max limits.CodePoints
	}{
		{&r.Stdout, limits.MaxStdoutChars},
		{&r.Stderr, limits.MaxStderrChars},
		{&r.Summary, limits.MaxSummaryChars},
	} {
		if v := vals[2+i]; v != nil {
			*f.dst, _ = c.str(v, at.with(resultFields[2+i]), 0, int(f.max))
		}
	}
	if v := vals[5]; v != nil {
		at := at.with("images")
		items, _ := c.list(v, at, limits.MaxImages)
		for i, it := range items {
			if im, ok := c.image(it, at.with(i)); ok {
				r.Images = append(r.Images, im)
			}
		}
	}
	if v := vals[6]; v != nil {
		at := at.with("artifacts")
		items, _ := c.list(v, at, limits.MaxArtifacts)
		for i, it := range items {
			if s, ok := c.str(it, at.with(i), 0, int(limits.MaxArtifactNameChars)); ok {
				r.Artifacts = append(r.Artifacts, s)
			}
		}
	}
	if v := vals[7]; v != nil {
		r.ElapsedMS, _ = c.integer(v, at.with("elapsed_ms"), 0, math.MaxInt64)
	}
	c.addLate(at, late)
	if c.found > start {
		return nil
	}
	return r
}

func (c *checker) image(n *node, at path) (Image, bool) {
	start := c.found
	vals, late, ok := c.fields(n, at, imageFields)
	if !ok {
		return Image{}, false
	}
	var im Image
	decoded := 0
	if v := vals[0]; v == nil {
		c.missing(at.with("mime"), n)
	} else if s, ok := c.str(v, at.with("mime"), 0, noMax); ok {
		if imageFormats[s] == "" {
			c.valueError(at.with("mime"), echo(v), "unsupported image media type: "+pyRepr(s))
		}
		im.MIME = s
	}
	if v := vals[1]; v == nil {
		c.missing(at.with("data_base64"), n)
	} else if s, ok := c.str(v, at.with("data_base64"), 0, noMax); ok {
		at, input := at.with("data_base64"), echoAt(v, "data_base64")
		// The decoded size comes from the length alone, so an oversized image is refused
		// without decoding or allocating anything.
		n, valid := base64Len(s)
		switch {
		case !valid:
			c.valueError(at, input, "data_base64 is not valid base64")
		case n == 0:
			c.valueError(at, input, "data_base64 decodes to no bytes")
		case n > int(limits.MaxImageBytes):
			c.valueError(at, input, fmt.Sprintf("image is %d bytes, over the %d-byte cap", n, limits.MaxImageBytes))
		}
		im.DataBase64, decoded = s, n
	}
	for i, dst := range []*int{&im.Width, &im.Height} {
		name := imageFields[2+i]
		if v := vals[2+i]; v == nil {
			c.missing(at.with(name), n)
		} else if x, ok := c.integer(v, at.with(name), 1, int64(limits.MaxImageEdgePx)); ok {
			*dst = int(x)
		}
	}
	c.addLate(at, late)
	if c.found > start {
		return Image{}, false
	}
	// Like a pydantic model validator, the header check runs only on an otherwise valid image.
	if err := checkImageHeader(im.MIME, im.DataBase64, decoded, im.Width, im.Height); err != nil {
		c.valueError(at, echo(n), err.Error())
		return Image{}, false
	}
	return im, true
}

func (c *checker) resume(n *node, at path) *ResumeRequest {
	start := c.found
	vals, late, ok := c.fields(n, at, resumeFields)
	if !ok {
		return nil
	}
	req := &ResumeRequest{}
	if v := vals[0]; v == nil {
		c.missing(at.with("session_id"), n)
	} else {
		var ok bool
		if req.SessionID, ok = c.str(v, at.with("session_id"), 1, int(limits.MaxSessionIDChars)); ok && store.HasControl(req.SessionID) {
			c.add("string_pattern_mismatch", at.with("session_id"), MsgControlInID, echo(v), nil)
		}
	}
	if v := vals[1]; v == nil {
		c.missing(at.with("result"), n)
	} else if r := c.result(v, at.with("result")); r != nil {
		req.Result = *r
	}
	if v := vals[2]; v != nil {
		req.Model, _ = c.optStr(v, at.with("model"), int(limits.MaxModelChars))
	}
	if v := vals[3]; v != nil && v.Kind != strictjson.Null {
		req.PageContext = c.pageContext(v, at.with("page_context"))
	}
	if v := vals[4]; v != nil {
		at := at.with("client_tools")
		items, _ := c.list(v, at, limits.MaxDeclaredClientTools)
		for i, it := range items {
			if s, ok := c.str(it, at.with(i), 0, noMax); ok {
				req.ClientTools = append(req.ClientTools, s)
			}
		}
	}
	c.addLate(at, late)
	if c.found > start {
		return nil
	}
	return req
}

func (c *checker) pageContext(n *node, at path) *PageContext {
	vals, late, ok := c.fields(n, at, pageFields)
	if !ok {
		return nil
	}
	pc := &PageContext{}
	if v := vals[0]; v != nil {
		if u, ok := c.optStr(v, at.with("url"), int(limits.MaxPageURLChars)); ok && u != nil {
			if !strings.HasPrefix(*u, "http://") && !strings.HasPrefix(*u, "https://") {
				c.valueError(at.with("url"), echo(v), msgURLScheme)
			}
			pc.URL = u
		}
	}
	if v := vals[1]; v != nil {
		pc.Title, _ = c.optStr(v, at.with("title"), int(limits.MaxPageTitleChars))
	}
	if v := vals[2]; v != nil {
		pc.WidgetInstructions, _ = c.optStr(v, at.with("widget_instructions"), int(limits.MaxWidgetInstructionChars))
	}
	c.addLate(at, late)
	return pc
}
