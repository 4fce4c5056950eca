package routers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/chat"
)

// lockedRecorder lets the test read the body while the heartbeat writes it.
type lockedRecorder struct {
	mu sync.Mutex
	*httptest.ResponseRecorder
}

func (r *lockedRecorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ResponseRecorder.Write(b)
}

func (r *lockedRecorder) body() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ResponseRecorder.Body.String()
}

// TestSSEHeartbeat: an idle stream gets comment lines, events are one data line each, and
// nothing is written after Close.
func TestSSEHeartbeat(t *testing.T) {
	old := heartbeat
	heartbeat = 5 * time.Millisecond
	t.Cleanup(func() { heartbeat = old })
	rec := &lockedRecorder{ResponseRecorder: httptest.NewRecorder()}
	c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/x/chat", nil), rec)
	w := newSSE(c)
	if err := w.Open("s1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(rec.body(), ": ping\n\n") {
		if time.Now().After(deadline) {
			t.Fatal("no heartbeat on an idle stream")
		}
		time.Sleep(time.Millisecond)
	}
	if err := w.Send(chat.ContentEvent{Content: "a\nb"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	after := rec.body()
	if !strings.Contains(after, "data: {\"content\":\"a\\nb\",\"event\":\"content\"}\n\n") {
		t.Errorf("event framing:\n%q", after)
	}
	if rec.Header().Get("X-Session-ID") != "s1" || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		t.Errorf("headers %v", rec.Header())
	}
	time.Sleep(20 * time.Millisecond) // four heartbeats' worth: none may come after Close
	if rec.body() != after {
		t.Error("the heartbeat wrote after Close")
	}
}
