package routers

import (
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/limits"
)

// askRequest is a checked POST /{c}/ask body (api.md §4.4). Unknown fields are ignored, so a
// client_tools key is dropped: /ask never binds client tools.
type askRequest struct {
	question string
	stream   bool
	model    string
	page     *chat.PageContext
}

func decodeAsk(c echo.Context) (*askRequest, error) {
	obj, err := readJSONObject(c, maxChatBytes)
	if err != nil {
		return nil, err
	}
	v := &bodyCheck{obj: obj}
	r := &askRequest{}
	r.question = v.str("question", true, 1, 0)
	if b := v.optBool("stream"); b != nil {
		r.stream = *b
	}
	if m := v.optStr("model", int(limits.MaxModelChars)); m != nil {
		r.model = *m
	}
	r.page = v.pageContext("page_context")
	if len(v.items) > 0 {
		return nil, &validationError{items: v.items}
	}
	if n := utf8.RuneCountInString(r.question); n > int(limits.MaxMessageChars) {
		return nil, &apiError{http.StatusBadRequest, fmt.Sprintf("Question too long (%d chars). Max: %d", n, limits.MaxMessageChars)}
	}
	return r, nil
}

// askHandler is POST /{c}/ask: a one-shot question, answered as JSON (the default) or as a
// stream with /chat's events but no session and no tool_request.
func (s *Server) askHandler(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok {
		return errNotFound
	}
	req, err := decodeAsk(c)
	if err != nil {
		return err
	}
	t := s.turn(c, cc, "", req.model, req.page, nil)
	if req.stream {
		sink := newSSE(c)
		defer sink.Close()
		return s.deps.Engine.Ask(c.Request().Context(), t, req.question, sink)
	}
	if err := s.deps.Engine.CheckModel(t); err != nil {
		return err
	}
	sink := newCollectSink()
	if err := s.deps.Engine.Ask(c.Request().Context(), t, req.question, sink); err != nil {
		return err
	}
	if err := sink.answered(); err != nil {
		return err
	}
	d := sink.done
	return c.JSON(http.StatusOK, map[string]any{
		"answer":     d.Content,
		"tool_calls": sink.toolCalls,
		"citations":  d.Citations,
		"request_id": requestID(c),
		"model":      d.Model,
		"warnings":   sink.warnings,
		"usage":      d.Usage,
	})
}
