package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/tests/golden"
)

// docsKnowledge is a community's documentation with a search that always finds the same
// sections: the Knowledge a test engine is given.
type docsKnowledge struct {
	passages []Passage
	queries  []string
}

func (k *docsKnowledge) Docs(string) (KnowledgeDocs, bool) {
	return KnowledgeDocs{RetrieveDescription: "Retrieve a HED document.", Generation: 1}, true
}

func (k *docsKnowledge) Retrieve(context.Context, string, string) KnowledgeResult {
	return KnowledgeResult{Text: "not used", IsError: true}
}

func (k *docsKnowledge) Search(_ context.Context, _, query string, _ int) KnowledgeResult {
	k.queries = append(k.queries, query)
	var text []string
	for _, p := range k.passages {
		text = append(text, p.Title+"\n"+p.Source+"\n"+p.Text)
	}
	return KnowledgeResult{Text: strings.Join(text, "\n\n"), Passages: k.passages}
}

func (k *docsKnowledge) FetchPage(context.Context, string, string) KnowledgeResult {
	return KnowledgeResult{Text: "not used", IsError: true}
}

func (k *docsKnowledge) Tools(string) []SourceTool { return nil }

// TestOfflineAnswerCites: with no key anywhere, the offline model answers a question from the
// community's documentation (issue 23 item 7): it searches, the search's passages reach it as
// search_result blocks, and it quotes them cited, so the reader gets markers, citation events
// and done.citations, and the history keeps the markers (testdata/flows/offline.golden).
func TestOfflineAnswerCites(t *testing.T) {
	k := &docsKnowledge{passages: flowPassages}
	e := testEngine(store.NewMemory(store.Limits{}, nil, nil), nil)
	e.Knowledge = k
	c := &config.Community{ID: "hed", Name: "HED"}
	sink := &eventSink{}
	if err := e.Chat(t.Context(), Turn{Community: c, SessionID: "s1", RequestID: "req-1"}, "Where do annotations go?", sink); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(k.queries) != "[Where do annotations go?]" {
		t.Errorf("searches %q", k.queries)
	}
	var wire strings.Builder
	for _, ev := range sink.events {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&wire, "data: %s\n\n", b)
	}
	golden.Check(t, "testdata/flows/offline.golden", []byte(wire.String()))
	done, ok := sink.last().(DoneEvent)
	if !ok || len(done.Citations) != 3 || !strings.Contains(done.Content, "[1]") {
		t.Fatalf("the reply ended with %s: %+v", sink.names(), sink.last())
	}
	h := storedHistory(t, e.Store, "hed", "s1")
	if got := blocksText(h[len(h)-1].Content); got != done.Content {
		t.Errorf("the history keeps %q, done.content is %q", got, done.Content)
	}
}
