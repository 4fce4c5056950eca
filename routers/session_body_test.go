package routers

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/toolresults"
)

// TestSessionIDInBodies: a chat or resume body's session_id follows the path's rule too: an id
// holding a control character (CR, LF, NUL, DEL, a C1) is refused with a 422 item, so no
// session can be made that the file routes could not reach.
func TestSessionIDInBodies(t *testing.T) {
	fs := newFilesServer(t, store.NewMemory(store.Limits{}, nil, nil), smallUploads(), nil, RateLimits{})
	for _, id := range []string{"a\r\nb", "a\x00b", "\tx", "a\x7fb", "a\u0085b"} {
		for _, route := range []string{"/nemar/chat", "/nemar/chat/resume"} {
			body := map[string]any{"message": "hi", "session_id": id}
			if strings.HasSuffix(route, "resume") {
				body = map[string]any{"session_id": id, "result": map[string]any{"call_id": "c", "stdout": ""}}
			}
			b, _ := json.Marshal(body)
			resp, got := fs.send(t, http.MethodPost, route, "application/json", strings.NewReader(string(b)))
			if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(got), toolresults.MsgControlInID) ||
				!strings.Contains(string(got), `"session_id"`) {
				t.Errorf("%s with id %q: %d %s", route, id, resp.StatusCode, got)
			}
		}
	}
}
