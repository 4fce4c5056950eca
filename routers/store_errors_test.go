package routers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/store"
)

// failingStore is a memory store whose session calls fail with err, as Redis does when it is
// down (every error wraps store.ErrUnavailable) or the memory store when it is full.
type failingStore struct {
	store.Store
	err error
}

func (f failingStore) EnsureSession(context.Context, string, string) (store.Session, bool, error) {
	return store.Session{}, false, f.err
}

func (f failingStore) Session(context.Context, string, string) (store.Session, error) {
	return store.Session{}, f.err
}

// TestStoreFailuresAre503: a store that cannot answer makes /chat and /chat/resume answer 503
// with Retry-After, never 500, and a full memory store says so.
func TestStoreFailuresAre503(t *testing.T) {
	set, err := config.Load(context.Background(), "../communities", config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, retry, detail string
		err                 error
	}{
		{"unavailable", "2", errStoreUnavailable.detail, fmt.Errorf("store: redis ensure session: %w (%w)", store.ErrUnavailable, io.ErrUnexpectedEOF)},
		{"full", "5", errTooManySessions.detail, store.ErrFull},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := failingStore{Store: store.NewMemory(store.Limits{}, nil, nil), err: tc.err}
			models := &chat.Models{Getenv: func(string) string { return "" }, Default: chat.DefaultScripted}
			s, err := New(Deps{Settings: Settings{Deployment: config.Production, DefaultModel: chat.DefaultScripted},
				Getenv: func(string) string { return "" }, Communities: set,
				Engine: &chat.Engine{Store: st, Models: models, Budget: &chat.Budget{Store: st}}})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(s)
			defer ts.Close()
			for _, req := range []struct{ path, body string }{
				{"/bids/chat", `{"message":"hi"}`},
				{"/bids/chat/resume", `{"session_id":"s","result":{"call_id":"c","status":"ok","stdout":"","stderr":"","summary":"","elapsed_ms":1}}`},
			} {
				resp, err := http.Post(ts.URL+req.path, "application/json", strings.NewReader(req.body))
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var got struct{ Detail string }
				_ = json.Unmarshal(body, &got)
				if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != tc.retry || got.Detail != tc.detail {
					t.Errorf("%s: %d, Retry-After %q, %s; want 503, %s, %q", req.path, resp.StatusCode, resp.Header.Get("Retry-After"), body, tc.retry, tc.detail)
				}
			}
		})
	}
}
