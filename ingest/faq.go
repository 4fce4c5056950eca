package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
	"github.com/osc-assistant/assistant/strictjson"
)

// FAQ generation (knowledge.md §6.10): each mailing list's threads are scored by the
// evaluation agent's model, and those at or above the quality threshold summarised by the
// summary agent's into FAQ entries. Where every thread stands is kept in
// summarization_status, so a thread scored and skipped is never scored again.

// Usage is what one model call cost.
type Usage struct {
	InputTokens, OutputTokens int
	// CostUSD is the call's cost in US dollars, as the provider's pricing gives it.
	CostUSD float64
}

// Model completes one prompt with the model of a faq_generation agent (its model, provider,
// temperature and caching). system may be "" (the scoring stage sends one user message).
// cmd adapts the chat package's providers to it.
//
// An error wrapping ErrModelUnavailable (or a transport error, or ctx's deadline) says the
// model cannot be reached now rather than that the thread failed. A Model may also have a
// method Ready() error, called once before a run: its error (no API key) fails the run
// before any call.
type Model interface {
	Complete(ctx context.Context, agent config.Agent, system, prompt string, maxTokens int) (text string, usage Usage, err error)
}

// ErrModelUnavailable is wrapped by a Model's errors that say it cannot be reached now (the
// provider's outage or rate limit, a refused key): the thread is left for the next run, and
// a list stops after maxUnavailable such errors in a row.
var ErrModelUnavailable = errors.New("the model is unavailable")

// readyModel is a Model that can tell before a run that no call can succeed.
type readyModel interface {
	Ready() error
}

// unavailable reports whether a model call's error is the model's, not the thread's: a
// transport error, a timeout, or ErrModelUnavailable.
func unavailable(err error) bool {
	var ne net.Error
	return (errors.Is(err, ErrModelUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne))
}

// FAQOptions are the FAQ source's dependencies.
type FAQOptions struct {
	Store *knowledge.Store
	Model Model
	// Spend is told the usage of every model call, for cmd to record against the community's
	// budget, and is called with a zero Usage before a run's first call, to check it. An
	// error from it (the budget is spent) stops the run where it is: what was decided is
	// stored, the threads not reached wait for the next run.
	Spend  func(ctx context.Context, community string, u Usage) error
	Now    func() time.Time
	Logger *slog.Logger
}

// FAQ is the FAQ source.
type FAQ struct {
	store *knowledge.Store
	model Model
	spend func(ctx context.Context, community string, u Usage) error
	now   func() time.Time
	log   *slog.Logger

	// MaxThreads bounds the threads one run takes up per list (the most messages first), so
	// a first run over a long archive spreads its cost over several runs; 0 is no bound.
	MaxThreads int
	// CallTimeout bounds one model call, so a provider that stops answering fails the call
	// instead of holding the run (and its lease) for ever; 0 or less sets no bound of its own.
	CallTimeout time.Duration
}

// NewFAQ returns the FAQ source; MaxThreads is 500, CallTimeout 2 minutes.
func NewFAQ(o FAQOptions) *FAQ {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	spend := o.Spend
	if spend == nil {
		spend = func(context.Context, string, Usage) error { return nil }
	}
	return &FAQ{store: o.Store, model: o.Model, spend: spend, now: newClock(o.Now, nil).now, log: log, MaxThreads: 500,
		CallTimeout: 2 * time.Minute}
}

// Type is TypeFAQ.
func (f *FAQ) Type() string { return TypeFAQ }

// Has reports whether c has mailing lists and faq_generation.
func (f *FAQ) Has(c *config.Community) bool { return len(c.Mailman) > 0 && c.FAQGeneration != nil }

const (
	// faqFlushEvery is how many threads are decided between two commits (§6.10: every 10
	// entries; statuses go with them, so a stopped run loses no score it paid for).
	faqFlushEvery = 10
	// maxThreadText bounds the thread text a model is sent; the messages past it are named by
	// count only.
	maxThreadText = 60000
	// maxFAQReply bounds a reply that is parsed.
	maxFAQReply = 64 << 10
	scoreTokens = 16
	// summaryTokens leaves room for a 5,000-character answer.
	summaryTokens = 2000
	maxQuestion   = 2000
	maxTags       = 10
	maxTagChars   = 50
	// maxUnavailable is how many calls in a row may find the model unavailable before a
	// list stops (offline, every thread would fail the same way).
	maxUnavailable = 3
)

// The status reasons of §6.10.
const (
	reasonScoreFailed   = "Failed to score thread quality (LLM error)"
	reasonSummaryFailed = "Summarization failed"
)

// errSpend marks a stop asked for by Spend.
var errSpend = errors.New("FAQ generation stopped by the budget")

// Sync generates FAQ entries for each mailing list in turn. A model that cannot be called
// at all (Ready) or a budget already spent fails the run before any call.
func (f *FAQ) Sync(ctx context.Context, c *config.Community, _ RunOptions, progress func(Progress)) (Result, error) {
	if progress == nil {
		progress = func(Progress) {}
	}
	var res Result
	if !f.Has(c) {
		return res, nil
	}
	g := c.FAQGeneration
	rules, enabled := rulesOf(g)
	if !enabled {
		return res, nil
	}
	if g.EvaluationAgent == nil || g.SummaryAgent == nil {
		return res, errors.New("faq_generation needs an evaluation_agent and a summary_agent")
	}
	if f.model == nil {
		return res, errors.New("no model to generate FAQ entries with")
	}
	if r, ok := f.model.(readyModel); ok {
		if err := r.Ready(); err != nil {
			return res, err
		}
	}
	if err := f.spend(ctx, c.ID, Usage{}); err != nil {
		return res, fmt.Errorf("%w: %v", errSpend, err)
	}
	for _, m := range c.Mailman {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		n, err := f.syncList(ctx, c, m.ListName, rules, func(p Progress) { p.Source = m.ListName; progress(p) })
		res.Items += n
		progress(Progress{Source: m.ListName, Items: n, Done: true, Err: err})
		if err != nil {
			// The runner logs the run's failures, once.
			res.Failed = append(res.Failed, SourceError{Source: m.ListName, Err: err})
			if errors.Is(err, errSpend) {
				break
			}
		}
	}
	return res, nil
}

// faqRules are the candidate rules of one list.
type faqRules struct {
	minMessages, minParticipants int
	threshold                    float64
}

func rulesOf(g *config.FAQGeneration) (faqRules, bool) {
	r := faqRules{minMessages: 2, threshold: g.QualityThreshold}
	if s, ok := g.Sources["mailman"]; ok {
		if !s.Enabled {
			return r, false
		}
		r.minMessages = max(r.minMessages, s.MinMessages)
		r.minParticipants = s.MinParticipants
	}
	return r, true
}

// syncList decides the list's candidate threads and returns the entries it created. The
// candidates are chosen by one query of the threads' sizes, and each thread's messages read
// just before it is decided, each in a short transaction of its own: the archive is never
// held in memory, nor the writer lock across it.
func (f *FAQ) syncList(ctx context.Context, c *config.Community, list string, rules faqRules, progress func(Progress)) (int, error) {
	g := c.FAQGeneration
	start := f.now()
	var cands []knowledge.ThreadSize
	if err := f.store.Update(ctx, c.ID, func(_ context.Context, tx *knowledge.Tx) error {
		var err error
		cands, err = tx.ThreadCandidates(list, rules.minMessages, rules.minParticipants, f.MaxThreads)
		return err
	}); err != nil {
		return 0, err
	}
	var entries []knowledge.FAQEntry
	var decided []knowledge.SummaryStatus
	// down counts the calls in a row that found the model unavailable, unreached the threads
	// it left undecided.
	created, done, modelErrs, down, unreached := 0, 0, 0, 0, 0
	var lastModelErr, lastDown error
	flush := func() error {
		if len(entries) == 0 && len(decided) == 0 {
			return nil
		}
		// The context may be ending: what was decided and paid for is stored regardless.
		wctx := context.WithoutCancel(ctx)
		n, err := updateCounted(wctx, f.store, c.ID, func(tx *knowledge.Tx) (int, error) {
			n, err := tx.UpsertFAQ(entries)
			if err != nil {
				return n, err
			}
			return n, tx.SetSummaryStatus(decided)
		})
		created += n
		entries, decided = entries[:0], decided[:0]
		return err
	}
	var stop error
	for _, cand := range cands {
		if err := ctx.Err(); err != nil {
			stop = err
			break
		}
		var ms []knowledge.Message
		if err := f.store.Update(ctx, c.ID, func(_ context.Context, tx *knowledge.Tx) error {
			var err error
			ms, err = tx.ThreadMessages(list, cand.ThreadID)
			return err
		}); err != nil {
			stop = err
			break
		}
		if len(ms) == 0 {
			continue // gone since the candidates were chosen
		}
		t := knowledge.Thread{List: list, ThreadID: cand.ThreadID, Messages: ms}
		e, st, failure, spent := f.decide(ctx, c.ID, g, rules, t, cand.Participants)
		isDown := failure != nil && unavailable(failure)
		if failure != nil && (ctx.Err() != nil || isDown) {
			// Not the thread's fault (the run was stopped, the model is down): left undecided.
			st.Status = ""
		}
		if st.Status != "" {
			decided = append(decided, st)
			done++
		}
		if e != nil {
			entries = append(entries, *e)
		}
		switch {
		case isDown:
			down++
			unreached++
			lastDown = failure
		case failure != nil:
			down = 0
			modelErrs++
			lastModelErr = failure
		default:
			down = 0
		}
		if spent != nil || ctx.Err() != nil {
			stop = cmp.Or(spent, ctx.Err())
			break
		}
		if down == maxUnavailable {
			stop = fmt.Errorf("the model could not be reached %d times in a row; the other threads wait for the next run: %w", down, failure)
			break
		}
		if st.Status != "" && done%faqFlushEvery == 0 {
			if err := flush(); err != nil {
				return created, err
			}
			progress(Progress{Items: created, Pages: done})
		}
	}
	if err := flush(); err != nil {
		return created, err
	}
	if stop != nil {
		return created, stop
	}
	if unreached > 0 {
		return created, fmt.Errorf("the model could not be reached for %d of %d threads; they wait for the next run: %w", unreached, len(cands), lastDown)
	}
	if done > 0 && modelErrs == done {
		return created, fmt.Errorf("the model failed on every thread: %w", lastModelErr)
	}
	err := f.store.Update(ctx, c.ID, func(_ context.Context, tx *knowledge.Tx) error {
		return tx.SetSyncMeta(knowledge.SyncMeta{SourceType: TypeFAQ, SourceName: list, LastSyncAt: start, Items: created})
	})
	return created, err
}

// decide scores one thread (of participants distinct authors) and, when it is good enough,
// summarises it. It returns the entry (nil unless summarized), the status (Status "" when
// the thread was left undecided), why the thread failed (a model's error or an unreadable
// reply), and stop, set when Spend asked the run to stop (what was paid for is still
// returned). A model found unavailable is not logged here: the list's stop says it once.
func (f *FAQ) decide(ctx context.Context, id string, g *config.FAQGeneration, r faqRules, t knowledge.Thread, participants int) (e *knowledge.FAQEntry, st knowledge.SummaryStatus, failure, stop error) {
	st = knowledge.SummaryStatus{List: t.List, ThreadID: t.ThreadID, AttemptedAt: f.now()}
	text := ThreadText(t.Messages)
	call := func(agent *config.Agent, system, prompt string, maxTokens int) (string, error) {
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if f.CallTimeout > 0 { // 0: no bound of its own (the run's context still ends it)
			cctx, cancel = context.WithTimeout(ctx, f.CallTimeout)
		}
		reply, u, err := f.model.Complete(cctx, *agent, system, prompt, maxTokens)
		if err != nil && cctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer from the model within %s: %w", f.CallTimeout, err)
		}
		cancel()
		st.Tokens += u.InputTokens + u.OutputTokens
		st.Cost += u.CostUSD
		// Recorded even when the run is being stopped: the call was paid for.
		if serr := f.spend(context.WithoutCancel(ctx), id, u); serr != nil && stop == nil {
			stop = fmt.Errorf("%w: %v", errSpend, serr)
		}
		return reply, err
	}
	reply, err := call(g.EvaluationAgent, "", ScoringPrompt(text), scoreTokens)
	score, ok := ParseScore(reply)
	switch {
	case err != nil || !ok:
		if err == nil {
			err = fmt.Errorf("no score in the reply %q", capChars(reply, 80))
		}
		st.Status, st.FailureReason = "failed", reasonScoreFailed
		if !unavailable(err) {
			f.log.Warn("faq generation: scoring failed", "community", id, "list", t.List, "thread", t.ThreadID, "error", err)
		}
		return nil, st, err, stop
	case score < r.threshold:
		st.Status, st.FailureReason = "skipped", fmt.Sprintf("Quality score %.2f below threshold", score)
		return nil, st, nil, stop
	case stop != nil:
		// Worth summarising, but not this run: left undecided, so the next run scores it again.
		st.Status = ""
		return nil, st, nil, stop
	}
	reply, err = call(g.SummaryAgent, SummarySystemPrompt, "Thread:\n"+text, summaryTokens)
	sum, perr := ParseSummary(reply)
	if err == nil && perr != nil {
		err = perr
	}
	if err != nil {
		st.Status, st.FailureReason = "failed", reasonSummaryFailed
		if !unavailable(err) {
			f.log.Warn("faq generation: summary failed", "community", id, "list", t.List, "thread", t.ThreadID, "error", err)
		}
		return nil, st, err, stop
	}
	first := t.Messages[0]
	e = &knowledge.FAQEntry{List: t.List, ThreadID: t.ThreadID, ThreadURL: threadURL(first.URL, t.ThreadID),
		Question: sum.Question, Answer: sum.Answer, Tags: sum.Tags, Category: sum.Category,
		MessageCount: len(t.Messages), ParticipantCount: participants, FirstMessageDate: first.Date,
		Quality: score, SummarizedAt: f.now(), Model: g.SummaryAgent.Model}
	st.Status = "summarized"
	return e, st, nil, stop
}

// threadURL is the thread's place in its month's thread index: the first message's URL up
// to its last "/", then /thread.html#{thread id}.
func threadURL(first, threadID string) string {
	base := first
	if i := strings.LastIndexByte(first, '/'); i >= 0 {
		base = first[:i]
	}
	return base + "/thread.html#" + threadID
}

// ThreadText is a thread as the models read it (§6.10): each message's number, author, date,
// subject and body (cut at 2,000 characters), in archive order; past 60,000 characters the
// remaining messages are only counted.
func ThreadText(ms []knowledge.Message) string {
	var b strings.Builder
	for i, m := range ms {
		author := m.Author
		if strings.TrimSpace(author) == "" {
			author = "Unknown"
		}
		body := m.Body
		if utf8.RuneCountInString(body) > 2000 {
			body = capChars(body, 2000) + "\n[... truncated ...]"
		}
		part := strings.Join([]string{"--- Message " + strconv.Itoa(i+1) + " ---", "From: " + author, "Date: " + m.Date,
			"Subject: " + m.Subject, "", body, ""}, "\n")
		if b.Len() > 0 && b.Len()+len(part) > maxThreadText {
			fmt.Fprintf(&b, "\n[... %d more messages ...]", len(ms)-i)
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(part)
	}
	return b.String()
}

// ScoringPrompt is the evaluation agent's one user message for a thread's text.
func ScoringPrompt(text string) string {
	return "Rate the value of this mailing list thread as a FAQ entry on a scale of 0.0 to 1.0.\n\n" +
		"Consider:\n" +
		"- Does it contain a clear technical question that can be answered?\n" +
		"- Are the replies helpful and authoritative?\n" +
		"- Is it substantive (not social chat or spam)?\n" +
		"- Would it be useful to future users with the same question?\n\n" +
		"Thread:\n" + text + "\n\n" +
		`Respond with ONLY a number between 0.0 and 1.0 (e.g., "0.75"):`
}

// SummarySystemPrompt makes the summary agent's model an FAQ writer (§6.10).
const SummarySystemPrompt = `You are an expert at creating FAQ entries from mailing list threads. From the thread you are given, extract:
1. The core question being asked.
2. The best answer, synthesized from the replies.
3. 3-5 relevant tags: lower-case, hyphenated (e.g. "data-import").
4. One category: troubleshooting, how-to, bug-report, feature-request, discussion or reference.

Format your response as JSON:
{"question": "...", "answer": "...", "tags": ["tag1", "tag2", ...], "category": "..."}`

var scoreRE = regexp.MustCompile(`[-+]?(?:\d+(?:\.\d+)?|\.\d+)`)

// ParseScore reads the first number of a scoring reply, clamped to 0–1.
func ParseScore(reply string) (float64, bool) {
	if len(reply) > maxFAQReply {
		reply = reply[:maxFAQReply]
	}
	m := scoreRE.FindString(reply)
	if m == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(m, 64)
	if err != nil {
		return 0, false
	}
	return min(max(v, 0), 1), true
}

// Summary is a summary agent's reply, read.
type Summary struct {
	Question, Answer string
	Tags             []string
	Category         string
}

// faqCategories are the categories an entry may have; any other is discussion.
var faqCategories = []string{"troubleshooting", "how-to", "bug-report", "feature-request", "discussion", "reference"}

// errSummary is wrapped by every reason a summary reply is refused.
var errSummary = errors.New("not an FAQ summary")

// ParseSummary reads a summary reply strictly: one JSON object (a code fence around it, with
// or without "json", and trailing commas are tolerated; a repeated key is not) with string
// question and answer (required, non-empty), tags (an array of strings; lower-cased and
// hyphenated, at most 10; else none) and category (one of the six; else discussion).
func ParseSummary(reply string) (Summary, error) {
	if len(reply) > maxFAQReply {
		return Summary{}, fmt.Errorf("%w: a reply of %d bytes", errSummary, len(reply))
	}
	doc := []byte(dropTrailingCommas(unfence(reply)))
	v, err := strictjson.Parse(doc, strictjson.Limits{MaxDepth: 3, MaxValues: 512})
	if err != nil {
		return Summary{}, fmt.Errorf("%w: %v", errSummary, err)
	}
	if v.Kind != strictjson.Object {
		return Summary{}, fmt.Errorf("%w: not an object", errSummary)
	}
	s := Summary{Tags: []string{}, Category: "discussion"}
	for _, m := range v.Members {
		if m.Dup {
			return Summary{}, fmt.Errorf("%w: %q twice", errSummary, m.Key)
		}
		switch m.Key {
		case "question":
			if m.Value.Kind == strictjson.String {
				s.Question = capChars(strings.TrimSpace(m.Value.Str), maxQuestion)
			}
		case "answer":
			if m.Value.Kind == strictjson.String {
				s.Answer = strings.TrimSpace(m.Value.Str)
			}
		case "category":
			if c := strings.ToLower(strings.TrimSpace(m.Value.Str)); m.Value.Kind == strictjson.String && slices.Contains(faqCategories, c) {
				s.Category = c
			}
		case "tags":
			if m.Value.Kind == strictjson.Array {
				s.Tags = cleanTags(m.Value.Items)
			}
		}
	}
	if s.Question == "" || s.Answer == "" {
		return Summary{}, fmt.Errorf("%w: no question or no answer", errSummary)
	}
	return s, nil
}

var tagJunk = regexp.MustCompile(`[^\p{Ll}\p{Lo}\p{N}-]+`)

// cleanTags keeps string tags, lower-cased, spaces and underscores as hyphens, other
// characters dropped, each at most 50 characters, no repeats, at most 10.
func cleanTags(items []*strictjson.Value) []string {
	tags := []string{}
	for _, it := range items {
		if it.Kind != strictjson.String || len(tags) == maxTags {
			continue
		}
		t := strings.ToLower(strings.TrimSpace(it.Str))
		t = strings.NewReplacer(" ", "-", "_", "-").Replace(t)
		t = strings.Trim(tagJunk.ReplaceAllString(t, ""), "-")
		t = capChars(t, maxTagChars)
		if t != "" && !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags
}

// unfence returns the JSON of a reply: the inside of a ``` fence (```json too) when there is
// one, else the text from the first "{" to the last "}" (models write a sentence around it).
func unfence(s string) string {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		} else {
			rest = strings.TrimPrefix(rest, "json")
		}
		if end := strings.LastIndex(rest, "```"); end >= 0 {
			rest = rest[:end]
		}
		return strings.TrimSpace(rest)
	}
	if i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}'); i >= 0 && j > i {
		return s[i : j+1]
	}
	return s
}

// dropTrailingCommas removes each comma that only white space separates from a closing "}"
// or "]", outside strings.
func dropTrailingCommas(s string) string {
	var b strings.Builder
	inStr, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			b.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
		}
		if c == ',' {
			j := i + 1
			for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}
