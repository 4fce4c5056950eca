package tests

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/store/storetest"
)

// msgRestarted is the line a run of a new interpreter starts its stderr with (sandbox).
const msgRestarted = "[runtime] The server's Python was restarted; names defined by earlier runs are gone."

// TestLiveSessionsAcrossReplicas (issue 22, item 4): two replicas on one real redis-server and
// no load-balancer affinity, each with its own worker pool. A session's runs alternate between
// them. A run that lands where the session's state is not says that the server's Python
// restarted, as a local restart does, so the model knows; that includes a replica that still
// holds an older interpreter of the session, whose names would otherwise reappear. A run where
// the state is goes on silently.
func TestLiveSessionsAcrossReplicas(t *testing.T) {
	redis := storetest.RedisURL(t)
	eng := engineDir(t)
	prefix := "replicas-e2e-" + rand.Text() + ":"
	off := "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0"
	a := serve(t, nil, "--communities", "testdata/uploads", "--engine-dir", eng, "--sandbox-workers", "1",
		"--redis-url", redis, "--redis-prefix", prefix, "--rate-limits", off)
	b := serve(t, nil, "--communities", "testdata/uploads", "--engine-dir", eng, "--sandbox-workers", "0",
		"--redis-url", redis, "--redis-prefix", prefix, "--rate-limits", off)
	sid := "replicas-" + strings.ToLower(rand.Text())[:16]
	steps := []struct {
		on        *process
		code      string
		want      string // in the run's output
		restarted bool
	}{
		{a, "x = 41; print('x' in globals())", "True", false},
		{a, "print(x + 1)", "42", false},
		{b, "print('x' in globals()); x = 1", "False", true}, // the state was a's
		{b, "print(x)", "1", false},
		// a still holds its interpreter with x = 41, but the session's state is b's.
		{a, "print('x' in globals())", "False", true},
		{a, "y = 2; print(y)", "2", false},
	}
	for i, st := range steps {
		out := serverRun(t, st.on, sid, st.code)
		if !strings.Contains(out, "status: ok") || !strings.Contains(out, "<stdout>\n"+st.want+"\n\n</stdout>") ||
			strings.Contains(out, msgRestarted) != st.restarted {
			t.Errorf("step %d (%q): want stdout %q, restarted %v; the model read:\n%s", i, st.code, st.want, st.restarted, out)
		}
	}
}

// serverRun sends the scripted model a message with code, which it runs on the server in the
// session's live interpreter, and returns the tool result the model read.
func serverRun(t *testing.T, p *process, sid, code string) string {
	t.Helper()
	return serverRunIn(t, p, "tables", sid, code)
}

// serverRunIn is serverRun in another community.
func serverRunIn(t *testing.T, p *process, community, sid, code string) string {
	t.Helper()
	msg, _ := json.Marshal(map[string]string{"message": "```python " + code + " ```", "session_id": sid})
	resp, err := http.Post(p.url+"/"+community+"/chat", "application/json", bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, stream)
	}
	return toolEnd(t, string(stream)).Output
}
