package ingest

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/text/unicode/norm"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
)

// PapersOptions are the papers source's dependencies. The URLs default to the real APIs; the
// keys are the environment's (cmd reads them, this package never does).
type PapersOptions struct {
	Store *knowledge.Store
	// Client reaches the API hosts (trusted endpoints: no address guard). Each request has its
	// own deadline (30 s, efetch 60 s, the live search 13 s), so the client needs none.
	Client *http.Client
	// OpenAlexURL, SemanticScholarURL, PubMedURL: ASSISTANT_OPENALEX_URL,
	// ASSISTANT_SEMANTIC_SCHOLAR_URL, ASSISTANT_PUBMED_URL; "" for the real API.
	OpenAlexURL, SemanticScholarURL, PubMedURL string
	// OpenAlexEmail (OPENALEX_EMAIL) is sent as mailto, OpenAlexKey (OPENALEX_API_KEY) as
	// api_key. Semantic Scholar (SEMANTIC_SCHOLAR_API_KEY, header x-api-key) and PubMed
	// (PUBMED_API_KEY, api_key) are searched only when their key is set.
	OpenAlexEmail, OpenAlexKey    string
	SemanticScholarKey, PubMedKey string
	// Now and Sleep are the clock (nil: the real one); tests pass their own, so a Retry-After
	// is waited on a test clock.
	Now    func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) error
	Logger *slog.Logger
}

// Papers is the papers source (knowledge.md §6.4–6.5): the works citing each of
// citations.dois (their versions in citations.aliases merged in) with their per-year counts,
// then per citations.queries entry the keyword hits of OpenAlex, Semantic Scholar and PubMed.
// It also serves the live search (§6.6, LiveSearch).
type Papers struct {
	store *knowledge.Store
	api   *apiClient
	log   *slog.Logger
	now   func() time.Time
	oa    *openAlex
	s2    *semanticScholar // nil without a key
	pm    *pubMed          // nil without a key

	// SemanticScholarPause is waited after each Semantic Scholar search (§6.4: 3 s), and
	// PubMedPause after each E-utilities request (0.4 s). Tests set them to 0.
	SemanticScholarPause time.Duration
	PubMedPause          time.Duration

	// citingCap and citingPages bound the citing works listed per DOI (§6.5: 2,000 works, 60
	// pages); tests lower them.
	citingCap, citingPages int
}

// NewPapers returns the papers source.
func NewPapers(o PapersOptions) *Papers {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clk := newClock(o.Now, o.Sleep)
	api := newAPIClient(o.Client, clk, log)
	p := &Papers{store: o.Store, api: api, log: log, now: clk.now,
		oa:                   &openAlex{api: api, base: or(o.OpenAlexURL, DefaultOpenAlexURL), email: o.OpenAlexEmail, key: o.OpenAlexKey},
		SemanticScholarPause: 3 * time.Second, PubMedPause: 400 * time.Millisecond,
		citingCap: maxCitingPapers, citingPages: maxCitingPages}
	if o.SemanticScholarKey != "" {
		p.s2 = &semanticScholar{api: api, base: or(o.SemanticScholarURL, DefaultSemanticScholarURL), key: o.SemanticScholarKey}
	}
	if o.PubMedKey != "" {
		p.pm = &pubMed{api: api, base: or(o.PubMedURL, DefaultPubMedURL), key: o.PubMedKey}
	}
	return p
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Type is TypePapers.
func (p *Papers) Type() string { return TypePapers }

// Has reports whether c names queries or DOIs.
func (p *Papers) Has(c *config.Community) bool {
	return c.Citations != nil && (len(c.Citations.Queries) > 0 || len(c.Citations.DOIs) > 0)
}

// keywordResults is how many hits each source gives a query (§6.4).
const keywordResults = 100

// paperHit is one paper as a source gave it, before it is stored.
type paperHit struct {
	Source, ExternalID, Title, Abstract, URL, CreatedAt string
	// DOI (bare) and PMID, when the source gave them, tell the same paper from two sources.
	DOI, PMID string
	CitesDOI  string
}

func (h paperHit) record() knowledge.Paper {
	return knowledge.Paper{Source: h.Source, ExternalID: h.ExternalID, Title: h.Title, Abstract: h.Abstract,
		URL: h.URL, CreatedAt: h.CreatedAt, CitesDOI: h.CitesDOI}
}

// Sync runs every DOI's citing works, then every query's keyword search on each source in
// turn. A failing DOI or query-and-source fails the run; the others still run.
func (p *Papers) Sync(ctx context.Context, c *config.Community, _ RunOptions, progress func(Progress)) (Result, error) {
	if progress == nil {
		progress = func(Progress) {}
	}
	var res Result
	if !p.Has(c) {
		return res, nil
	}
	seen := newPaperSeen()
	fail := func(source string, err error) {
		res.Failed = append(res.Failed, SourceError{Source: source, Err: err})
		p.log.Warn("papers sync: source failed", "community", c.ID, "source", source, "error", err)
	}
	for _, doi := range c.Citations.DOIs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		name := "citing_" + doi
		n, err := p.syncCiting(ctx, c.ID, doi, c.Citations.Aliases[doi], seen, func(pr Progress) { pr.Source = name; progress(pr) })
		res.Items += n
		progress(Progress{Source: name, Items: n, Done: true, Err: err})
		if err != nil {
			fail(name, err)
		}
	}
	type searcher struct {
		source string
		search func(ctx context.Context, query string, max int, waiting func(time.Time)) ([]paperHit, error)
		pause  time.Duration
	}
	sources := []searcher{{source: "openalex", search: p.oa.search}}
	if p.s2 != nil {
		sources = append(sources, searcher{"semanticscholar", p.s2.search, p.SemanticScholarPause})
	}
	if p.pm != nil {
		pm := *p.pm // a copy: runs of other communities may be under way
		pm.pause = p.PubMedPause
		sources = append(sources, searcher{"pubmed", pm.search, 0})
	}
	for _, q := range c.Citations.Queries {
		for _, s := range sources {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			name := s.source + ":" + q
			start := p.now()
			waiting := func(until time.Time) { progress(Progress{Source: name, Waiting: until}) }
			hits, err := s.search(ctx, q, keywordResults, waiting)
			if err == nil && s.pause > 0 {
				err = p.api.clk.sleep(ctx, s.pause)
			}
			n := 0
			if err == nil {
				hits = seen.keep(hits)
				n, err = updateCounted(ctx, p.store, c.ID, func(tx *knowledge.Tx) (int, error) {
					n, err := tx.UpsertPapers(records(hits))
					if err != nil {
						return n, err
					}
					return n, tx.SetSyncMeta(knowledge.SyncMeta{SourceType: TypePapers, SourceName: name, LastSyncAt: start, Items: len(hits)})
				})
			}
			res.Items += n
			progress(Progress{Source: name, Items: n, Pages: 1, Done: true, Err: err})
			if err != nil {
				fail(name, err)
			}
		}
	}
	return res, nil
}

func records(hits []paperHit) []knowledge.Paper {
	out := make([]knowledge.Paper, len(hits))
	for i, h := range hits {
		out[i] = h.record()
	}
	return out
}

// syncCiting is §6.5 for one primary DOI: resolve it and its aliases, replace its per-year
// counts, store the works citing them (newest first, at most 2,000), then its
// (citations, citing_{doi}) row. A DOI OpenAlex has none of is skipped, and so is an empty
// histogram (a transient gap: the stored counts stay).
func (p *Papers) syncCiting(ctx context.Context, id, primary string, aliases []string, seen *paperSeen, progress func(Progress)) (int, error) {
	start := p.now()
	waiting := func(until time.Time) { progress(Progress{Waiting: until}) }
	var ids []string
	earliest := 0
	for _, d := range append([]string{primary}, aliases...) {
		w, year, err := p.oa.resolve(ctx, d, waiting)
		if errors.Is(err, errNotFound) {
			p.log.Warn("papers sync: OpenAlex has no work for this DOI; skipped", "community", id, "doi", d)
			continue
		}
		if err != nil {
			return 0, err
		}
		if !slices.Contains(ids, w) {
			ids = append(ids, w)
		}
		if year > 0 && (earliest == 0 || year < earliest) {
			earliest = year
		}
	}
	if len(ids) == 0 {
		p.log.Warn("papers sync: none of the DOI's versions is in OpenAlex; skipped", "community", id, "doi", primary)
		return 0, nil
	}
	counts, err := p.oa.citationCounts(ctx, ids, earliest, waiting)
	if err != nil {
		return 0, err
	}
	if len(counts) == 0 {
		p.log.Warn("papers sync: OpenAlex counted no citing works; the stored counts are kept", "community", id, "doi", primary)
		return 0, nil
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if err := p.store.Update(ctx, id, func(_ context.Context, tx *knowledge.Tx) error {
		return tx.ReplaceCitationCounts(primary, counts)
	}); err != nil {
		return 0, err
	}
	items, fetched, cursor := 0, 0, "*"
	for page := 1; page <= p.citingPages && fetched < p.citingCap; page++ {
		pg, err := p.oa.citing(ctx, ids, min(openAlexPerPage, p.citingCap-fetched), cursor, waiting)
		if err != nil {
			return items, err
		}
		if pg.works == 0 {
			break
		}
		fetched += pg.works
		for i := range pg.hits {
			pg.hits[i].CitesDOI = primary
		}
		hits := seen.keep(pg.hits)
		n, err := updateCounted(ctx, p.store, id, func(tx *knowledge.Tx) (int, error) { return tx.UpsertPapers(records(hits)) })
		items += n
		if err != nil {
			return items, err
		}
		progress(Progress{Items: items, Pages: page})
		if pg.next == "" {
			break
		}
		cursor = pg.next
	}
	err = p.store.Update(ctx, id, func(_ context.Context, tx *knowledge.Tx) error {
		return tx.SetSyncMeta(knowledge.SyncMeta{SourceType: "citations", SourceName: "citing_" + primary, LastSyncAt: start, Items: total})
	})
	return items, err
}

// updateCounted runs fn in one Update of community id and returns its count: the rows it
// wrote, or 0 when the transaction was rolled back.
func updateCounted(ctx context.Context, s *knowledge.Store, id string, fn func(tx *knowledge.Tx) (int, error)) (int, error) {
	n := 0
	err := s.Update(ctx, id, func(_ context.Context, tx *knowledge.Tx) error {
		var err error
		n, err = fn(tx)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// paperSeen de-duplicates one run's papers across sources: a paper is kept from the first
// source that gives it, in the order OpenAlex, Semantic Scholar, PubMed (the newer reference's
// preference, §6.4), known by its DOI, its PMID, or its title (NFKC, lower-cased, words of
// letters and digits, when it has four words or more). Hits of one source are never dropped
// for each other: they are one row already, (source, external_id) being the table's key.
// The search tool drops near-duplicate titles again when it lists them (§4.3).
type paperSeen struct {
	owner map[string]string // key → source that gave it first
}

func newPaperSeen() *paperSeen { return &paperSeen{owner: map[string]string{}} }

func (s *paperSeen) keep(hits []paperHit) []paperHit {
	out := hits[:0:0]
	for _, h := range hits {
		keys := paperKeys(h)
		dup := false
		for _, k := range keys {
			if src, ok := s.owner[k]; ok && src != h.Source {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		for _, k := range keys {
			if _, ok := s.owner[k]; !ok {
				s.owner[k] = h.Source
			}
		}
		out = append(out, h)
	}
	return out
}

func paperKeys(h paperHit) []string {
	var keys []string
	if h.DOI != "" {
		keys = append(keys, "doi:"+strings.ToLower(h.DOI))
	}
	if h.PMID != "" {
		keys = append(keys, "pmid:"+h.PMID)
	}
	if t := titleKey(h.Title); t != "" {
		keys = append(keys, "title:"+t)
	}
	return keys
}

// titleKey is a title's words (NFKC, lower-cased, runs of letters and digits) joined by
// spaces, or "" when it has fewer than four, too few to tell two papers apart.
func titleKey(t string) string {
	words := strings.FieldsFunc(strings.ToLower(norm.NFKC.String(t)), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(words) < 4 {
		return ""
	}
	return strings.Join(words, " ")
}

// stripMarkup is s with HTML tags dropped and entities decoded (OpenAlex titles carry <i>
// and <sub>; abstracts <p> and <jats:p>), white space collapsed.
func stripMarkup(s string) string {
	if strings.ContainsAny(s, "<&") {
		var b strings.Builder
		z := html.NewTokenizer(strings.NewReader(s))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				break
			}
			switch tt {
			case html.TextToken:
				b.Write(z.Text())
			case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
				b.WriteByte(' ')
			}
		}
		s = b.String()
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
}

// cleanTitle is a title as stored: markup stripped, at most 1,000 characters.
func cleanTitle(s string) string {
	s = stripMarkup(s)
	if r := []rune(s); len(r) > 1000 {
		s = string(r[:1000])
	}
	return s
}

// plainText is an abstract as stored: markup stripped (the table cuts it at 2,000).
func plainText(s string) string { return stripMarkup(s) }
