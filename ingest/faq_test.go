package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
)

// scriptedModel is a Model answering by the thread its prompt carries: each thread's first
// subject holds a marker, "[A]", and replies[marker] gives the stage's answer ("score" or
// "summary"); an answer of "ERROR" is a provider error.
type scriptedModel struct {
	mu      sync.Mutex
	replies map[string]map[string]string
	calls   []string // "score A", "summary A", …
	prompts map[string]string
}

func (m *scriptedModel) Complete(ctx context.Context, agent config.Agent, system, prompt string, maxTokens int) (string, Usage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	stage := "score"
	if system != "" {
		stage = "summary"
		if system != SummarySystemPrompt || !strings.HasPrefix(prompt, "Thread:\n") || agent.Model != "summary-model" {
			return "", Usage{}, fmt.Errorf("summary call with %q, %q", agent.Model, prompt[:min(len(prompt), 20)])
		}
	} else if agent.Model != "eval-model" || !strings.HasPrefix(prompt, "Rate the value of this mailing list thread") {
		return "", Usage{}, fmt.Errorf("scoring call with %q", agent.Model)
	}
	marker := ""
	if i := strings.Index(prompt, "Subject: ["); i >= 0 {
		marker = prompt[i+10 : i+11]
	}
	m.calls = append(m.calls, stage+" "+marker)
	if m.prompts == nil {
		m.prompts = map[string]string{}
	}
	m.prompts[stage+" "+marker] = prompt
	u := Usage{InputTokens: 100, OutputTokens: 10, CostUSD: 0.001}
	reply := m.replies[marker][stage]
	if reply == "ERROR" {
		return "", u, errors.New("provider: 502 Bad Gateway")
	}
	return reply, u, nil
}

func (m *scriptedModel) Calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.calls
	m.calls = nil
	return out
}

const listURL = "https://mail.example.org/pipermail/hed-list/2024/"

// seedThreads stores the list's messages: threads A to G, each message numbered in archive
// order, the root's subject holding the thread's marker.
func seedThreads(t *testing.T, st *knowledge.Store) {
	t.Helper()
	n := 100
	var ms []knowledge.Message
	add := func(thread string, authors ...string) {
		root := ""
		for i, a := range authors {
			n++
			id := fmt.Sprintf("%06d", n)
			if i == 0 {
				root = id
			}
			subj := "[" + thread + "] Question " + thread
			if i > 0 {
				subj = "Re: " + subj
			}
			ms = append(ms, knowledge.Message{List: "hed-list", MessageID: id, ThreadID: root, Subject: subj, Author: a,
				AuthorEmail: strings.ToLower(a) + "@example.org", Date: fmt.Sprintf("Mon Feb %d 10:00:00 CET 2024", n-100),
				Body: fmt.Sprintf("Body of %s from %s.", id, a), URL: listURL + id + ".html", Year: 2024})
		}
	}
	add("A", "Alice", "Bob", "Alice")
	add("B", "Carol", "Dan")
	add("C", "Frank")
	add("D", "Eve", "eve")
	add("E", "Gina", "Hal")
	add("F", "Ivan", "Judy")
	add("G", "Kim", "Lee", "Mo", "Ned")
	if err := st.Update(context.Background(), "hed", func(_ context.Context, tx *knowledge.Tx) error {
		_, err := tx.UpsertMessages(ms)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func faqCommunity() *config.Community {
	return &config.Community{ID: "hed", Name: "HED",
		Mailman: []config.Mailman{{ListName: "hed-list", BaseURL: "https://mail.example.org/pipermail/hed-list/"}},
		FAQGeneration: &config.FAQGeneration{
			EvaluationAgent:  &config.Agent{Model: "eval-model"},
			SummaryAgent:     &config.Agent{Model: "summary-model"},
			QualityThreshold: 0.7,
			Sources:          map[string]config.FAQSource{"mailman": {Enabled: true, MinMessages: 2, MinParticipants: 2}},
		}}
}

const summaryA = "```json\n{\"question\": \"How do I tag a stimulus?\", \"answer\": \"Use Sensory-event with the stimulus's tags.\",\n" +
	" \"tags\": [\"Event Tagging\", \"hed_schema\", \"event-tagging\", 7], \"category\": \"How-To\",}\n```"

func TestFAQSync(t *testing.T) {
	st := paperStore(t)
	seedThreads(t, st)
	model := &scriptedModel{replies: map[string]map[string]string{
		"A": {"score": "0.92", "summary": summaryA},
		"B": {"score": "Score: 0.3 — mostly social."},
		"E": {"score": "I cannot rate this thread."},
		"F": {"score": "0.8", "summary": "Here is the entry: {\"question\": \"Q?\"}"},
		"G": {"score": "ERROR"},
	}}
	var spent []Usage
	f := NewFAQ(FAQOptions{Store: st, Model: model, Spend: func(_ context.Context, id string, u Usage) error {
		if id != "hed" {
			t.Errorf("spend for %q", id)
		}
		spent = append(spent, u)
		return nil
	}})
	c := faqCommunity()
	res, err := f.Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil || len(res.Failed) != 0 || res.Items != 1 {
		t.Fatal(err, res)
	}
	// Most messages first; C has one message, D one participant.
	if d := cmp.Diff([]string{"score G", "score A", "summary A", "score B", "score E", "score F", "summary F"}, model.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	// The budget is checked (a zero usage) before the first call, then told every call's.
	if len(spent) != 8 || spent[0] != (Usage{}) || spent[1].CostUSD == 0 {
		t.Errorf("spend told %v, want a zero check then the 7 calls", spent)
	}
	entries := published(t, st, "hed", `SELECT thread_id, thread_url, question, answer, tags, category, message_count, participant_count,
		first_message_date, quality_score, summary_model FROM faq_entries`)
	want := [][]string{{"000101", listURL + "thread.html#000101", "How do I tag a stimulus?", "Use Sensory-event with the stimulus's tags.",
		`["event-tagging","hed-schema"]`, "how-to", "3", "2", "Mon Feb 1 10:00:00 CET 2024", "0.92", "summary-model"}}
	if d := cmp.Diff(want, entries); d != "" {
		t.Errorf("faq_entries (-want +got):\n%s", d)
	}
	statuses := published(t, st, "hed", `SELECT s.thread_id, s.status, COALESCE(s.failure_reason, ''), s.token_count, s.cost_estimate
		FROM summarization_status s ORDER BY s.thread_id`)
	wantStatus := [][]string{
		{"000101", "summarized", "", "220", "0.002"},
		{"000104", "skipped", "Quality score 0.30 below threshold", "110", "0.001"},
		{"000109", "failed", "Failed to score thread quality (LLM error)", "110", "0.001"},
		{"000111", "failed", "Summarization failed", "220", "0.002"},
		{"000113", "failed", "Failed to score thread quality (LLM error)", "110", "0.001"},
	}
	if d := cmp.Diff(wantStatus, statuses); d != "" {
		t.Errorf("summarization_status (-want +got):\n%s", d)
	}
	meta := published(t, st, "hed", `SELECT source_type, source_name, items_synced FROM sync_metadata`)
	if d := cmp.Diff([][]string{{"faq", "hed-list", "1"}}, meta); d != "" {
		t.Errorf("sync_metadata (-want +got):\n%s", d)
	}

	// The thread text, exactly (§6.10).
	wantText := "--- Message 1 ---\nFrom: Alice\nDate: Mon Feb 1 10:00:00 CET 2024\nSubject: [A] Question A\n\nBody of 000101 from Alice.\n\n" +
		"--- Message 2 ---\nFrom: Bob\nDate: Mon Feb 2 10:00:00 CET 2024\nSubject: Re: [A] Question A\n\nBody of 000102 from Bob.\n\n" +
		"--- Message 3 ---\nFrom: Alice\nDate: Mon Feb 3 10:00:00 CET 2024\nSubject: Re: [A] Question A\n\nBody of 000103 from Alice.\n"
	if got := model.prompts["summary A"]; got != "Thread:\n"+wantText {
		t.Errorf("summary prompt:\n%q\nwant\n%q", got, "Thread:\n"+wantText)
	}
	if got := model.prompts["score A"]; !strings.Contains(got, "Thread:\n"+wantText+"\n\nRespond with ONLY a number between 0.0 and 1.0 (e.g., \"0.75\"):") {
		t.Errorf("scoring prompt %q", got)
	}

	// The next run scores only what failed: B was scored and skipped, A is summarized.
	model.replies = map[string]map[string]string{
		"E": {"score": "0.71", "summary": `{"question": "E?", "answer": "E.", "category": "rants"}`},
		"F": {"score": "0.9", "summary": `{"question": "F?", "answer": "F.", "tags": "not-a-list"}`},
		"G": {"score": "1.7", "summary": `{"question": "G?", "answer": "G.", "category": "bug-report", "tags": []}`},
	}
	res, err = f.Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil || len(res.Failed) != 0 || res.Items != 3 {
		t.Fatal(err, res)
	}
	if d := cmp.Diff([]string{"score G", "summary G", "score E", "summary E", "score F", "summary F"}, model.Calls()); d != "" {
		t.Errorf("second run's calls (-want +got):\n%s", d)
	}
	entries = published(t, st, "hed", `SELECT thread_id, tags, category, quality_score FROM faq_entries ORDER BY thread_id`)
	want = [][]string{{"000101", `["event-tagging","hed-schema"]`, "how-to", "0.92"}, {"000109", "[]", "discussion", "0.71"},
		{"000111", "[]", "discussion", "0.9"}, {"000113", "[]", "bug-report", "1"}}
	if d := cmp.Diff(want, entries); d != "" {
		t.Errorf("second run's entries (-want +got):\n%s", d)
	}
	// A third run has nothing to do.
	if res, err := f.Sync(context.Background(), c, RunOptions{}, nil); err != nil || res.Items != 0 || len(model.Calls()) != 0 {
		t.Errorf("third run: %v %+v", err, res)
	}
}

func TestFAQRules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources map[string]config.FAQSource
		want    []string
	}{
		{"no sources section: two messages, any participants", nil, []string{"score G", "score A", "score B", "score D", "score E", "score F"}},
		{"min_messages 3", map[string]config.FAQSource{"mailman": {Enabled: true, MinMessages: 3, MinParticipants: 1}}, []string{"score G", "score A"}},
		{"min_participants 3", map[string]config.FAQSource{"mailman": {Enabled: true, MinMessages: 2, MinParticipants: 3}}, []string{"score G"}},
		{"disabled", map[string]config.FAQSource{"mailman": {Enabled: false, MinMessages: 2, MinParticipants: 2}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := paperStore(t)
			seedThreads(t, st)
			model := &scriptedModel{replies: map[string]map[string]string{}}
			c := faqCommunity()
			c.FAQGeneration.Sources = tc.sources
			if _, err := NewFAQ(FAQOptions{Store: st, Model: model}).Sync(context.Background(), c, RunOptions{}, nil); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, model.Calls()); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

func TestFAQBudgetStops(t *testing.T) {
	st := paperStore(t)
	seedThreads(t, st)
	model := &scriptedModel{replies: map[string]map[string]string{
		"G": {"score": "0.2"}, "A": {"score": "0.9", "summary": summaryA}, "B": {"score": "0.1"},
	}}
	calls := 0
	f := NewFAQ(FAQOptions{Store: st, Model: model, Spend: func(_ context.Context, _ string, u Usage) error {
		if u == (Usage{}) {
			return nil // the check before the first call
		}
		calls++
		if calls >= 3 {
			return errors.New("monthly budget of $5.00 reached")
		}
		return nil
	}})
	// The third call (A's summary) is paid when the budget says stop: A is stored, nothing
	// after it is scored, the list fails saying why, and no sync_metadata row is written.
	res, err := f.Sync(context.Background(), faqCommunity(), RunOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || !strings.Contains(res.Failed[0].Err.Error(), "monthly budget of $5.00 reached") || res.Items != 1 {
		t.Fatalf("result %+v", res)
	}
	if d := cmp.Diff([]string{"score G", "score A", "summary A"}, model.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	got := published(t, st, "hed", `SELECT thread_id, status FROM summarization_status ORDER BY thread_id`)
	if d := cmp.Diff([][]string{{"000101", "summarized"}, {"000113", "skipped"}}, got); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
	if got := published(t, st, "hed", `SELECT count(*) FROM sync_metadata`); got[0][0] != "0" {
		t.Errorf("sync_metadata written by a stopped run")
	}
}

// TestFAQBudgetSpentAtStart: a run that starts with the budget spent makes no model call
// (not even one scoring call) and fails saying why.
func TestFAQBudgetSpentAtStart(t *testing.T) {
	st := paperStore(t)
	seedThreads(t, st)
	model := &scriptedModel{replies: map[string]map[string]string{"G": {"score": "0.2"}}}
	var told []Usage
	f := NewFAQ(FAQOptions{Store: st, Model: model, Spend: func(_ context.Context, _ string, u Usage) error {
		told = append(told, u)
		return errors.New("daily budget of $1.00 reached")
	}})
	_, err := f.Sync(context.Background(), faqCommunity(), RunOptions{}, nil)
	if !errors.Is(err, errSpend) || !strings.Contains(err.Error(), "daily budget of $1.00 reached") {
		t.Errorf("a run with the budget spent: %v", err)
	}
	if calls := model.Calls(); len(calls) != 0 {
		t.Errorf("model calls %q with the budget spent, want none", calls)
	}
	if len(told) != 1 || told[0] != (Usage{}) {
		t.Errorf("spend told %v, want one zero check", told)
	}
}

func TestFAQModelDown(t *testing.T) {
	st := paperStore(t)
	seedThreads(t, st)
	model := &scriptedModel{replies: map[string]map[string]string{"A": {"score": "ERROR"}, "B": {"score": "ERROR"},
		"E": {"score": "ERROR"}, "F": {"score": "ERROR"}, "G": {"score": "ERROR"}}}
	res, err := NewFAQ(FAQOptions{Store: st, Model: model}).Sync(context.Background(), faqCommunity(), RunOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || !strings.Contains(res.Failed[0].Err.Error(), "the model failed on every thread: provider: 502 Bad Gateway") {
		t.Errorf("failed %v", res.Failed)
	}
}

func TestThreadTextBounds(t *testing.T) {
	long := strings.Repeat("é", 2500)
	ms := []knowledge.Message{{Subject: "S", Date: "D", Body: long}}
	got := ThreadText(ms)
	want := "--- Message 1 ---\nFrom: Unknown\nDate: D\nSubject: S\n\n" + strings.Repeat("é", 2000) + "\n[... truncated ...]\n"
	if got != want {
		t.Errorf("got %q", got[:80])
	}
	for range 200 {
		ms = append(ms, knowledge.Message{Author: "A", Subject: "S", Date: "D", Body: long})
	}
	got = ThreadText(ms)
	if len(got) > maxThreadText+100 || !strings.HasSuffix(got, " more messages ...]") {
		t.Errorf("thread text of %d bytes ending %q", len(got), got[len(got)-40:])
	}
}

func TestParseScore(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  float64
		ok    bool
	}{
		{"0.75", 0.75, true}, {"Score: 0.3 (low)", 0.3, true}, {".9", 0.9, true}, {"1.7", 1, true}, {"-0.5", 0, true},
		{"7/10", 1, true}, {"no number", 0, false}, {"", 0, false},
	} {
		if got, ok := ParseScore(tc.reply); got != tc.want || ok != tc.ok {
			t.Errorf("ParseScore(%q) = %v, %v; want %v, %v", tc.reply, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseSummary(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		want        Summary
		ok          bool
	}{
		{"fenced, trailing commas", summaryA, Summary{"How do I tag a stimulus?", "Use Sensory-event with the stimulus's tags.",
			[]string{"event-tagging", "hed-schema"}, "how-to"}, true},
		{"a fence without json", "```\n{\"question\":\"Q\",\"answer\":\"A\",\"tags\":[\"x\",],}\n```", Summary{"Q", "A", []string{"x"}, "discussion"}, true},
		{"prose around it", "Sure! {\"question\": \"Q\", \"answer\": \"A, with a comma,}\"} Hope it helps.", Summary{"Q", "A, with a comma,}", []string{}, "discussion"}, true},
		{"no answer", `{"question": "Q"}`, Summary{}, false},
		{"an empty question", `{"question": "  ", "answer": "A"}`, Summary{}, false},
		{"answer not a string", `{"question": "Q", "answer": ["A"]}`, Summary{}, false},
		{"a repeated key", `{"question": "Q", "answer": "A", "answer": "B"}`, Summary{}, false},
		{"not JSON", "I could not summarise this thread.", Summary{}, false},
		{"too deep", `{"question": "Q", "answer": "A", "tags": [[["x"]]]}`, Summary{}, false},
		{"the object inside an array", `[{"question": "Q", "answer": "A"}]`, Summary{"Q", "A", []string{}, "discussion"}, true},
		{"two objects", `{"question": "Q", "answer": "A"} {"question": "R", "answer": "B"}`, Summary{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSummary(tc.reply)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok %v", err, tc.ok)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func FuzzParseSummary(f *testing.F) {
	f.Add(summaryA)
	f.Add(`{"question":"Q","answer":"A","tags":["a b","C_D",""],"category":"reference"}`)
	f.Add("```json\n{\"question\":\"\\u00e9\",\"answer\":\"\\ud800\",}\n```")
	f.Add(`{"question":"Q","answer":"A",,}`)
	f.Fuzz(func(t *testing.T, reply string) {
		s, err := ParseSummary(reply)
		if err != nil {
			return
		}
		if s.Question == "" || s.Answer == "" || !utf8.ValidString(s.Question) || !utf8.ValidString(s.Answer) {
			t.Errorf("summary %+v", s)
		}
		if !slices.Contains(faqCategories, s.Category) || len(s.Tags) > maxTags {
			t.Errorf("category %q, %d tags", s.Category, len(s.Tags))
		}
		for _, tag := range s.Tags {
			if tag == "" || tag != strings.ToLower(tag) || strings.ContainsAny(tag, " _\"") || utf8.RuneCountInString(tag) > maxTagChars {
				t.Errorf("tag %q", tag)
			}
		}
	})
}

// downModel is a Model whose calls all fail with err, or, when err is nil, wait for their
// context to end; ready is Ready's error.
type downModel struct {
	err   error
	ready error
	calls atomic.Int32
}

func (m *downModel) Complete(ctx context.Context, _ config.Agent, _, _ string, _ int) (string, Usage, error) {
	m.calls.Add(1)
	if m.err != nil {
		return "", Usage{}, m.err
	}
	<-ctx.Done()
	return "", Usage{}, ctx.Err()
}

func (m *downModel) Ready() error { return m.ready }

// TestFAQModelUnavailable: offline, a stalled provider or its outage, a list stops after
// three calls in a row that found the model unavailable, with one error and no warning per
// thread, and the threads are not marked failed: the next run decides them.
func TestFAQModelUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"connection refused", fmt.Errorf("Post \"https://openrouter.ai/api/v1/chat/completions\": %w", refused), "dial tcp: connection refused"},
		{"the provider's outage", fmt.Errorf("%w: openai API error: 503", ErrModelUnavailable), "openai API error: 503"},
		{"no answer", nil, "no answer from the model within 1ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := paperStore(t)
			seedThreads(t, st)
			logs := &runLog{}
			model := &downModel{err: tc.err}
			f := NewFAQ(FAQOptions{Store: st, Model: model, Logger: slog.New(logs)})
			f.CallTimeout = time.Millisecond
			res, err := f.Sync(context.Background(), faqCommunity(), RunOptions{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := model.calls.Load(); n != maxUnavailable {
				t.Errorf("%d model calls, want %d", n, maxUnavailable)
			}
			if len(res.Failed) != 1 || !strings.Contains(res.Failed[0].Err.Error(), "the model could not be reached 3 times in a row") ||
				!strings.Contains(res.Failed[0].Err.Error(), tc.want) {
				t.Errorf("failed %v", res.Failed)
			}
			if warns := logs.messages(slog.LevelWarn); len(warns) != 0 {
				t.Errorf("warnings %q, want none (the runner logs the run's failure once)", warns)
			}
			if got := published(t, st, "hed", `SELECT count(*) FROM summarization_status`); got[0][0] != "0" {
				t.Errorf("%s threads marked although the model was unavailable", got[0][0])
			}
			good := &scriptedModel{replies: map[string]map[string]string{"G": {"score": "0.1"}, "A": {"score": "0.1"}, "B": {"score": "0.1"},
				"E": {"score": "0.1"}, "F": {"score": "0.1"}}}
			if res, err := NewFAQ(FAQOptions{Store: st, Model: good}).Sync(context.Background(), faqCommunity(), RunOptions{}, nil); err != nil || len(res.Failed) != 0 {
				t.Fatal(err, res)
			}
			if calls := good.Calls(); len(calls) != 5 {
				t.Errorf("the next run scored %q, want the 5 threads", calls)
			}
		})
	}
}

// TestFAQModelUnavailableNowAndThen: calls that find the model unavailable between ones
// that work do not stop the list, but the run says how many threads wait.
func TestFAQModelUnavailableNowAndThen(t *testing.T) {
	st := paperStore(t)
	seedThreads(t, st)
	model := &scriptedModel{replies: map[string]map[string]string{"G": {"score": "0.1"}, "A": {"score": "0.1"}, "E": {"score": "0.1"}}}
	flaky := &flakyModel{Model: model, fail: map[string]bool{"B": true, "F": true}}
	res, err := NewFAQ(FAQOptions{Store: st, Model: flaky}).Sync(context.Background(), faqCommunity(), RunOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || !strings.Contains(res.Failed[0].Err.Error(), "the model could not be reached for 2 of 5 threads") {
		t.Errorf("failed %v", res.Failed)
	}
	got := published(t, st, "hed", `SELECT thread_id, status FROM summarization_status ORDER BY thread_id`)
	if d := cmp.Diff([][]string{{"000101", "skipped"}, {"000109", "skipped"}, {"000113", "skipped"}}, got); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
}

// flakyModel finds the model unavailable for the threads whose marker fail names.
type flakyModel struct {
	Model
	fail map[string]bool
}

func (m *flakyModel) Complete(ctx context.Context, agent config.Agent, system, prompt string, maxTokens int) (string, Usage, error) {
	if i := strings.Index(prompt, "Subject: ["); i >= 0 && m.fail[prompt[i+10:i+11]] {
		return "", Usage{}, fmt.Errorf("%w: openai API error: 502", ErrModelUnavailable)
	}
	return m.Model.Complete(ctx, agent, system, prompt, maxTokens)
}

// TestFAQModelNotReady: a model that cannot be called at all (no API key) fails the run at
// once, with its error, before any call.
func TestFAQModelNotReady(t *testing.T) {
	st := paperStore(t)
	seedThreads(t, st)
	logs := &runLog{}
	model := &downModel{ready: errors.New("FAQ generation needs the platform's OpenRouter key (OPENROUTER_API_KEY)")}
	res, err := NewFAQ(FAQOptions{Store: st, Model: model, Logger: slog.New(logs)}).Sync(context.Background(), faqCommunity(), RunOptions{}, nil)
	if err == nil || err.Error() != model.ready.Error() || len(res.Failed) != 0 {
		t.Errorf("Sync = %+v, %v; want the key's error alone", res, err)
	}
	if n := model.calls.Load(); n != 0 {
		t.Errorf("%d model calls without a key", n)
	}
	if warns := logs.messages(slog.LevelWarn); len(warns) != 0 {
		t.Errorf("warnings %q", warns)
	}
}

// TestFAQReadsOnlyItsThreads: a run chooses its threads by their sizes and reads the messages
// of the ones it takes up only, not the archive: over an archive of about 6 MB of bodies, a
// run of two threads allocates well under that.
func TestFAQReadsOnlyItsThreads(t *testing.T) {
	st := paperStore(t)
	body := strings.Repeat("word ", 2000) // 10,000 characters, the cap
	var ms []knowledge.Message
	for i := range 300 {
		root := fmt.Sprintf("%06d", 2*i+1)
		for j, a := range []string{"Alice", "Bob"} {
			id := fmt.Sprintf("%06d", 2*i+1+j)
			ms = append(ms, knowledge.Message{List: "hed-list", MessageID: id, ThreadID: root, Subject: fmt.Sprintf("[%c] Thread %d", 'A'+i%26, i),
				Author: a, Date: "Mon Feb 1 10:00:00 CET 2024", Body: body, URL: listURL + id + ".html", Year: 2024})
		}
	}
	if err := st.Update(context.Background(), "hed", func(_ context.Context, tx *knowledge.Tx) error {
		_, err := tx.UpsertMessages(ms)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	model := &downModel{err: errors.New("provider: 400 Bad Request")}
	f := NewFAQ(FAQOptions{Store: st, Model: model})
	f.MaxThreads = 2
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := f.Sync(context.Background(), faqCommunity(), RunOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if n := model.calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
	const archive = 300 * 2 * 10000
	if got := after.TotalAlloc - before.TotalAlloc; got > archive/3 {
		t.Errorf("a run of 2 threads allocated %d bytes over an archive of %d bytes of bodies", got, archive)
	}
}

// ctxModel scores every thread 0.1, failing with its context's error when that has ended.
type ctxModel struct{ calls atomic.Int32 }

func (m *ctxModel) Complete(ctx context.Context, _ config.Agent, _, _ string, _ int) (string, Usage, error) {
	m.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return "", Usage{}, err
	}
	return "0.1", Usage{InputTokens: 10}, nil
}

// TestFAQNoCallTimeout: a CallTimeout of 0 sets no bound of its own, rather than one that has
// already passed.
func TestFAQNoCallTimeout(t *testing.T) {
	st := paperStore(t)
	seedThreads(t, st)
	model := &ctxModel{}
	f := NewFAQ(FAQOptions{Store: st, Model: model})
	f.CallTimeout = 0
	res, err := f.Sync(context.Background(), faqCommunity(), RunOptions{}, nil)
	if err != nil || len(res.Failed) != 0 || model.calls.Load() != 5 {
		t.Errorf("Sync = %+v, %v after %d calls; want the 5 threads scored", res, err, model.calls.Load())
	}
}
