package chat

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/toolresults"
)

// recordSink collects a turn's events, each as its wire JSON decoded into a map.
type recordSink struct{ events []map[string]any }

func (s *recordSink) Open(string) error { return nil }
func (s *recordSink) Send(ev StreamEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	s.events = append(s.events, m)
	return nil
}

// failingRunner fails every server run with err.
type failingRunner struct{ err error }

func (r failingRunner) RunTool(context.Context, *config.Community, config.Deployment, string, string, string, map[string][]byte) (toolresults.Result, map[string][]byte, error) {
	return toolresults.Result{}, nil, r.err
}

// stoppedError is a runner error that says the run started and was stopped (as the worker
// pool's WorkerLostError does).
type stoppedError struct{}

func (stoppedError) Error() string    { return "the run was stopped" }
func (stoppedError) RunStopped() bool { return true }

// fallbackCommunity runs execute_code on the server for callers that do not declare it.
func fallbackCommunity() *config.Community {
	return &config.Community{
		ID:         "nemar",
		Extensions: &config.Extensions{ClientTools: []config.ClientTool{{Name: "execute_code", Runtime: "python"}}},
		Runtime:    &config.Runtime{Python: &config.PythonRuntime{ServerFallback: true}},
	}
}

// TestServerRunFailureText: what the model reads when a server run fails says whether the code
// may have run: a run that was stopped part way is never described as not run.
func TestServerRunFailureText(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"stopped", stoppedError{}, msgRunStopped},
		{"wrapped stop", errors.Join(errors.New("pool"), stoppedError{}), msgRunStopped},
		{"busy", errors.New("the server's Python is busy"), "The server's Python could not run this code: the server's Python is busy. Nothing was run."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := store.NewMemory(store.Limits{}, nil, nil)
			e := &Engine{Store: st, Models: &Models{Getenv: func(string) string { return "" }, Default: DefaultScripted},
				Budget: &Budget{Store: st}, Runner: failingRunner{tc.err}}
			sink := &recordSink{}
			turn := Turn{Community: fallbackCommunity(), SessionID: "s1", OriginOK: true}
			if err := e.Chat(context.Background(), turn, "```python print(1) ```", sink); err != nil {
				t.Fatal(err)
			}
			var output string
			for _, ev := range sink.events {
				if ev["event"] == "tool_end" {
					output, _ = ev["output"].(string)
				}
			}
			if output != tc.want {
				t.Errorf("tool_end output = %q, want %q", output, tc.want)
			}
			raw, err := st.History(context.Background(), "nemar", "s1")
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, m := range raw {
				var msg Message
				if json.Unmarshal(m, &msg) == nil {
					for _, b := range msg.Content {
						if b.Type == BlockToolResult && len(b.Content) == 1 && b.Content[0].Text == tc.want && b.IsError {
							found = true
						}
					}
				}
			}
			if !found {
				t.Errorf("the stored tool result is not the failure text:\n%s", strings.Join(func() []string {
					var s []string
					for _, m := range raw {
						s = append(s, string(m))
					}
					return s
				}(), "\n"))
			}
		})
	}
}
