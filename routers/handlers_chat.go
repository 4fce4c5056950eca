package routers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/toolresults"
)

// Body caps: a chat message is at most 10,000 characters; a result carries up to three
// images of 2,000,000 bytes each, base64-encoded.
const (
	maxChatBytes   = 256 << 10
	maxResumeBytes = 9 << 20
)

// ChatEngine runs chat turns (*chat.Engine implements it). Errors it returns before a stream
// opens are mapped to statuses by handleError; after that, a turn ends with its own event.
type ChatEngine interface {
	Chat(ctx context.Context, t chat.Turn, message string, sink chat.Sink) error
	Resume(ctx context.Context, t chat.Turn, res *toolresults.Result, sink chat.Sink) error
	// Ask answers a one-shot question (/ask): no session, no client tools.
	Ask(ctx context.Context, t chat.Turn, question string, sink chat.Sink) error
	// CheckModel returns the refusal of a turn whose model cannot be resolved at all.
	CheckModel(t chat.Turn) error
}

// chatRequest is a checked POST /{c}/chat body. Unknown fields are ignored, as the reference's
// model does (the widget may send cf_turnstile_response).
type chatRequest struct {
	message     string
	sessionID   string
	stream      bool
	model       string
	page        *chat.PageContext
	clientTools []string
}

func decodeChat(c echo.Context) (*chatRequest, error) {
	obj, err := readJSONObject(c, maxChatBytes)
	if err != nil {
		return nil, err
	}
	v := &bodyCheck{obj: obj}
	r := &chatRequest{stream: true}
	r.message = v.str("message", true, 1, 0)
	if id := v.optStr("session_id", int(limits.MaxSessionIDChars)); id != nil {
		r.sessionID = *id
		if store.HasControl(*id) {
			v.fail("string_pattern_mismatch", "session_id", toolresults.MsgControlInID, *id, nil)
		}
	}
	if b := v.optBool("stream"); b != nil {
		r.stream = *b
	}
	if m := v.optStr("model", int(limits.MaxModelChars)); m != nil {
		r.model = *m
	}
	r.page = v.pageContext("page_context")
	r.clientTools = v.strList("client_tools", limits.MaxDeclaredClientTools)
	if len(v.items) > 0 {
		return nil, &validationError{items: v.items}
	}
	if n := utf8.RuneCountInString(r.message); n > int(limits.MaxMessageChars) {
		return nil, &apiError{http.StatusBadRequest, fmt.Sprintf("Message too long (%d chars). Max: %d", n, limits.MaxMessageChars)}
	}
	return r, nil
}

// turn builds the parts of a chat turn that come from the request's headers and the community.
func (s *Server) turn(c echo.Context, cc *community, sessionID, model string, page *chat.PageContext, declared []string) chat.Turn {
	h := c.Request().Header
	return chat.Turn{
		Community:  cc.cfg,
		Deployment: s.deps.Settings.Deployment,
		SessionID:  sessionID,
		Model:      model,
		Page:       page,
		Declared:   declared,
		Keys:       chat.Keys{Anthropic: strings.TrimSpace(h.Get("X-Anthropic-API-Key")), OpenRouter: strings.TrimSpace(h.Get("X-OpenRouter-Key"))},
		OriginOK:   cc.origins.allows(h.Get("Origin")),
		ToolsOff:   s.toolsOff(cc.cfg.ID),
		RequestID:  requestID(c),
	}
}

// chatHandler is POST /{c}/chat: a streamed reply (SSE), or a JSON answer when stream is false.
func (s *Server) chatHandler(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok {
		return errNotFound
	}
	req, err := decodeChat(c)
	if err != nil {
		return err
	}
	if !req.stream {
		return s.chatJSON(c, cc, req)
	}
	t := s.turn(c, cc, req.sessionID, req.model, req.page, req.clientTools)
	sink := newSSE(c)
	defer sink.Close()
	return s.deps.Engine.Chat(c.Request().Context(), t, req.message, sink)
}

// resumeHandler is POST /{c}/chat/resume: the browser's result, then the reply continues.
func (s *Server) resumeHandler(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok {
		return errNotFound
	}
	data, err := readBody(c, maxResumeBytes)
	if err != nil {
		return err
	}
	req, err := toolresults.DecodeResume(data)
	if err != nil {
		return err
	}
	var page *chat.PageContext
	if p := req.PageContext; p != nil {
		page = &chat.PageContext{URL: deref(p.URL), Title: deref(p.Title), WidgetInstructions: deref(p.WidgetInstructions)}
	}
	t := s.turn(c, cc, req.SessionID, deref(req.Model), page, req.ClientTools)
	sink := newSSE(c)
	defer sink.Close()
	return s.deps.Engine.Resume(c.Request().Context(), t, &req.Result, sink)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// chatJSON answers a non-streamed chat: client tools are never bound, and a failure is a real
// HTTP error.
func (s *Server) chatJSON(c echo.Context, cc *community, req *chatRequest) error {
	t := s.turn(c, cc, req.sessionID, req.model, req.page, nil)
	t.NoClientTools = true
	if err := s.deps.Engine.CheckModel(t); err != nil {
		return err
	}
	sink := newCollectSink()
	if err := s.deps.Engine.Chat(c.Request().Context(), t, req.message, sink); err != nil {
		return err
	}
	if err := sink.answered(); err != nil {
		return err
	}
	d := sink.done
	return c.JSON(http.StatusOK, map[string]any{
		"session_id": sink.sessionID,
		"message":    map[string]any{"role": "assistant", "content": d.Content},
		"tool_calls": sink.toolCalls,
		"citations":  d.Citations,
		"request_id": requestID(c),
		"model":      d.Model,
		"warnings":   sink.warnings,
		"usage":      d.Usage,
	})
}

// collectSink gathers a turn's events for a JSON answer.
type collectSink struct {
	sessionID string
	done      *chat.DoneEvent
	failure   *chat.ErrorEvent
	warnings  []string
	toolCalls []toolCall
}

// toolCall is one tool the server ran for a JSON answer: its name and arguments.
type toolCall struct {
	Name string `json:"name"`
	Args any    `json:"args"`
}

func newCollectSink() *collectSink {
	return &collectSink{warnings: []string{}, toolCalls: []toolCall{}}
}

// answered is nil when the turn ended with an answer, and otherwise the HTTP error a JSON
// answer gives: the turn's own refusal, or a 502 for a reply with nothing in it.
func (k *collectSink) answered() error {
	if k.failure == nil && k.done != nil {
		return nil
	}
	msg := "The assistant finished without writing an answer. Try again, or rephrase your question."
	status := http.StatusBadGateway
	if f := k.failure; f != nil {
		msg = f.Message
		if f.Refusal != 0 {
			status = refusalStatus(f.Refusal)
		}
	}
	return &replyError{status, msg}
}

func (k *collectSink) Open(id string) error { k.sessionID = id; return nil }

func (k *collectSink) Send(ev chat.StreamEvent) error {
	switch ev := ev.(type) {
	case chat.DoneEvent:
		k.done = &ev
	case chat.ErrorEvent:
		k.failure = &ev
	case chat.WarningEvent:
		k.warnings = append(k.warnings, ev.Message)
	case chat.ToolStartEvent:
		k.toolCalls = append(k.toolCalls, toolCall{Name: ev.Name, Args: ev.Input})
	}
	return nil
}

// sse writes a turn's events as Server-Sent Events: one `data: {json}` line and a blank line
// per event, flushed at once (api.md §2). While nothing else is sent (a model thinking, a
// server-side run), a comment line goes out every heartbeat, so a widget that gives up on
// 60 s of silence does not; clients ignore lines that do not start with "data: ".
type sse struct {
	c    echo.Context
	rc   *http.ResponseController
	mu   sync.Mutex // one writer at a time: events and heartbeats
	stop chan struct{}
	done chan struct{}
}

// heartbeat is how often an idle stream gets a comment line.
var heartbeat = 15 * time.Second // a variable so a test can shorten it

// streamIdle bounds how long one event may take to write; every event pushes it forward, so a
// long reply is fine and a stalled reader is not.
const streamIdle = 60 * time.Second

func newSSE(c echo.Context) *sse {
	return &sse{c: c, rc: http.NewResponseController(c.Response().Writer)}
}

func (w *sse) Open(sessionID string) error {
	h := w.c.Response().Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	if sessionID != "" { // /ask has none
		h.Set("X-Session-ID", sessionID)
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(streamIdle))
	w.c.Response().WriteHeader(http.StatusOK)
	if err := w.rc.Flush(); err != nil {
		return err
	}
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go w.beat()
	return nil
}

func (w *sse) beat() {
	defer close(w.done)
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			if w.write([]byte(": ping\n\n")) != nil {
				return
			}
		}
	}
}

// Close stops the heartbeat; the handler calls it before returning, so nothing writes to the
// response afterwards.
func (w *sse) Close() {
	if w.stop != nil {
		close(w.stop)
		<-w.done
	}
}

func (w *sse) write(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.rc.SetWriteDeadline(time.Now().Add(streamIdle))
	if _, err := w.c.Response().Write(b); err != nil {
		return err
	}
	return w.rc.Flush()
}

func (w *sse) Send(ev chat.StreamEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	out := make([]byte, 0, len(b)+8)
	out = append(append(append(out, "data: "...), b...), "\n\n"...)
	return w.write(out)
}
