package routers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/strictjson"
	"github.com/osc-assistant/assistant/toolresults"
)

// maxFeedbackBytes caps a feedback body: a 5,000-character comment and a 2,048-character URL fit
// many times over.
const maxFeedbackBytes = 64 << 10

// feedbackRules are the bounds of POST /feedback (api.md §4.9), in code points.
const (
	maxFeedbackComment   = 5000
	maxFeedbackURL       = 2048
	maxFeedbackIDChars   = 128
	maxFeedbackCommunity = 64
)

// feedback is POST /feedback: checked as the reference checks it, then written to the log.
// Unknown fields are ignored, as the reference's model does.
func (s *Server) feedback(c echo.Context) error {
	obj, err := readJSONObject(c, maxFeedbackBytes)
	if err != nil {
		return err
	}
	v := &bodyCheck{obj: obj}
	community := v.str("community_id", true, 1, maxFeedbackCommunity)
	kind := v.str("feedback_type", false, 0, 0)
	if _, set := obj["feedback_type"]; !set {
		kind = "response"
	}
	if kind != "response" && kind != "general" {
		v.fail("literal_error", "feedback_type", "Input should be 'response' or 'general'", obj["feedback_type"], map[string]any{"expected": "'response' or 'general'"})
	}
	sentiment := v.optStr("sentiment", 0)
	comment := v.optStr("comment", maxFeedbackComment)
	chatRequestID := v.optStr("request_id", maxFeedbackIDChars)
	sessionID := v.optStr("session_id", maxFeedbackIDChars)
	pageURL := v.optStr("page_url", maxFeedbackURL)
	index := v.optInt("message_index")
	if comment != nil && strings.TrimSpace(*comment) == "" {
		comment = nil
	}
	if pageURL != nil && !strings.HasPrefix(*pageURL, "http://") && !strings.HasPrefix(*pageURL, "https://") {
		v.fail("value_error", "page_url", "Value error, page_url must be an http(s) URL", *pageURL, nil)
	}
	switch kind {
	case "response":
		if sentiment == nil || (*sentiment != "up" && *sentiment != "down") {
			v.fail("value_error", "sentiment", "Value error, response feedback needs sentiment 'up' or 'down'", obj["sentiment"], nil)
		}
	case "general":
		if comment == nil {
			v.fail("value_error", "comment", "Value error, general feedback needs a comment", obj["comment"], nil)
		}
		sentiment = nil
	}
	if len(v.items) > 0 {
		return &validationError{items: v.items}
	}
	if _, ok := s.cat.Load().byID[community]; !ok {
		return &apiError{http.StatusNotFound, "Unknown community: " + community}
	}
	id := uuid.NewString()
	attrs := []slog.Attr{
		slog.String("feedback_id", id), slog.String("community", community), slog.String("feedback_type", kind),
		slog.String("request_id", requestID(c)), slog.String("origin", c.Request().Header.Get("Origin")),
	}
	for _, f := range []struct {
		k string
		v *string
	}{{"sentiment", sentiment}, {"comment", comment}, {"chat_request_id", chatRequestID}, {"session_id", sessionID}, {"page_url", pageURL}} {
		if f.v != nil {
			attrs = append(attrs, slog.String(f.k, *f.v))
		}
	}
	if index != nil {
		attrs = append(attrs, slog.Int64("message_index", *index))
	}
	s.log.LogAttrs(c.Request().Context(), slog.LevelInfo, "feedback", attrs...)
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "feedback_id": id})
}

// bodyLimits bound the JSON bodies readJSONObject reads, which readBody has already capped in
// bytes: encoding/json's own nesting bound, and no bound on the number of values.
var bodyLimits = strictjson.Limits{MaxDepth: 10000}

// readJSONObject reads a JSON object body of at most limit bytes, strictly: a syntax error
// (trailing data included) becomes FastAPI's json_invalid item, a body that is not an object
// model_attributes_type, and a key repeated in any object of the body a value_error item at
// that key, rather than letting one of its values win unseen.
func readJSONObject(c echo.Context, limit int64) (map[string]any, error) {
	data, err := readBody(c, limit)
	if err != nil {
		return nil, err
	}
	root, err := strictjson.Parse(data, bodyLimits)
	if err != nil {
		se := &strictjson.SyntaxError{Code: strictjson.ExpectingValue}
		errors.As(err, &se)
		return nil, &validationError{items: []detailItem{toolresults.JSONInvalid([]any{"body"}, data, se)}}
	}
	if root.Kind != strictjson.Object {
		return nil, &validationError{items: []detailItem{{Type: "model_attributes_type", Loc: []any{"body"}, Msg: "Input should be a valid dictionary or object to extract fields from", Input: toolresults.Echo(root.Interface())}}}
	}
	if ve := toolresults.RepeatedKeys(root, []any{"body"}); ve != nil {
		return nil, ve
	}
	return root.Interface().(map[string]any), nil
}

// readBody reads at most limit bytes of the request body.
func readBody(c echo.Context, limit int64) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errBodyTooLarge
		}
		return nil, &apiError{http.StatusBadRequest, "could not read the request body"}
	}
	return data, nil
}

// bodyCheck collects FastAPI-shaped problems for a decoded JSON object.
type bodyCheck struct {
	obj   map[string]any
	items []detailItem
}

// fail adds an item for field. Its input is echoed bounded (strings cut, lists and objects
// summarised), as the result decoder echoes, so an error body never grows with the request.
func (v *bodyCheck) fail(typ, field, msg string, input any, ctx map[string]any) {
	v.items = append(v.items, detailItem{Type: typ, Loc: []any{"body", field}, Msg: msg, Input: toolresults.Echo(input), Ctx: ctx})
}

func (v *bodyCheck) str(field string, required bool, minLen, maxLen int) string {
	raw, set := v.obj[field]
	if !set || raw == nil {
		if required {
			v.fail("missing", field, "Field required", nil, nil)
		}
		return ""
	}
	s, ok := raw.(string)
	if !ok {
		v.fail("string_type", field, "Input should be a valid string", raw, nil)
		return ""
	}
	n := utf8.RuneCountInString(s)
	if n < minLen {
		v.fail("string_too_short", field, fmt.Sprintf("String should have at least %d character", minLen), s, map[string]any{"min_length": minLen})
	}
	if maxLen > 0 && n > maxLen {
		v.items = append(v.items, toolresults.StringTooLong([]any{"body", field}, s, maxLen))
	}
	return s
}

func (v *bodyCheck) optStr(field string, maxLen int) *string {
	if raw, set := v.obj[field]; !set || raw == nil {
		return nil
	}
	before := len(v.items)
	s := v.str(field, false, 0, maxLen)
	if len(v.items) > before {
		return nil
	}
	return &s
}

func (v *bodyCheck) optInt(field string) *int64 {
	raw, set := v.obj[field]
	if !set || raw == nil {
		return nil
	}
	n, ok := raw.(json.Number)
	if !ok {
		v.fail("int_type", field, "Input should be a valid integer", raw, nil)
		return nil
	}
	i, err := n.Int64()
	if err != nil {
		v.fail("int_parsing", field, "Input should be a valid integer", raw, nil)
		return nil
	}
	if i < 0 {
		v.fail("greater_than_equal", field, "Input should be greater than or equal to 0", i, map[string]any{"ge": 0})
		return nil
	}
	return &i
}

func (v *bodyCheck) optBool(field string) *bool {
	raw, set := v.obj[field]
	if !set || raw == nil {
		return nil
	}
	b, ok := raw.(bool)
	if !ok {
		v.fail("bool_type", field, "Input should be a valid boolean", raw, nil)
		return nil
	}
	return &b
}

// strList reads an optional list of strings of at most maxItems.
func (v *bodyCheck) strList(field string, maxItems int) []string {
	raw, set := v.obj[field]
	if !set || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		v.fail("list_type", field, "Input should be a valid list", raw, nil)
		return nil
	}
	if len(list) > maxItems {
		v.fail("too_long", field, fmt.Sprintf("List should have at most %d items after validation, not %d", maxItems, len(list)), nil, map[string]any{"field_type": "List", "max_length": maxItems, "actual_length": len(list)})
		return nil
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			v.items = append(v.items, detailItem{Type: "string_type", Loc: []any{"body", field, i}, Msg: "Input should be a valid string", Input: toolresults.Echo(item)})
			continue
		}
		out = append(out, s)
	}
	return out
}

// pageContext reads the optional page_context object (api.md §4.2).
func (v *bodyCheck) pageContext(field string) *chat.PageContext {
	raw, set := v.obj[field]
	if !set || raw == nil {
		return nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		v.fail("model_type", field, "Input should be a valid dictionary or instance of PageContext", raw, nil)
		return nil
	}
	inner := &bodyCheck{obj: obj}
	var p chat.PageContext
	if u := inner.optStr("url", int(limits.MaxPageURLChars)); u != nil {
		if !strings.HasPrefix(*u, "http://") && !strings.HasPrefix(*u, "https://") {
			inner.fail("value_error", "url", "Value error, url must start with http:// or https://", *u, nil)
		}
		p.URL = *u
	}
	if t := inner.optStr("title", int(limits.MaxPageTitleChars)); t != nil {
		p.Title = *t
	}
	if w := inner.optStr("widget_instructions", int(limits.MaxWidgetInstructionChars)); w != nil {
		p.WidgetInstructions = *w
	}
	for _, it := range inner.items {
		it.Loc = append([]any{"body", field}, it.Loc[1:]...)
		v.items = append(v.items, it)
	}
	return &p
}
