package ingest

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/osc-assistant/assistant/knowledge"
)

// The live paper search (knowledge.md §4.3 search_{id}_papers_live, §6.6): OpenAlex asked
// now, newest first, for the chat's tool. It never reads or writes the database; SaveLive
// stores what it found, for the caller to run in the background.

const (
	// liveTimeout bounds a live search in all, liveRequestTimeout its one request (§6.6).
	liveTimeout        = 15 * time.Second
	liveRequestTimeout = 13 * time.Second
)

// LivePaper is one result of the live search.
type LivePaper struct {
	Source     string // "openalex"
	ExternalID string // "W…"
	Title      string
	Abstract   string // rebuilt from the inverted index, at most 2,000 characters
	URL        string // https://doi.org/… when the work has a DOI, else its OpenAlex id
	Year       int    // the publication year, 0 when unknown
	DOI        string // bare, "" when none
}

// Record is p as a papers row (created_at the year).
func (p LivePaper) Record() knowledge.Paper {
	r := knowledge.Paper{Source: p.Source, ExternalID: p.ExternalID, Title: p.Title, Abstract: p.Abstract, URL: p.URL}
	if p.Year > 0 {
		r.CreatedAt = strconv.Itoa(p.Year)
	}
	return r
}

// LiveSearch asks OpenAlex for the newest works matching query, at most limit (clamped to
// 1–20, §4.1), within 15 seconds (13 for the request; no retry). An empty query asks
// nothing. Any failure is an error; LiveText words every failure as "no results".
func (p *Papers) LiveSearch(ctx context.Context, query string, limit int) ([]LivePaper, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, liveTimeout)
	defer cancel()
	return p.oa.live(ctx, query, knowledge.ClampLimit(limit))
}

// SaveLive upserts a live search's papers into community id's working copy (§6.6: they
// become searchable after the next publish). It waits for the community's writer lock, so
// the caller runs it in the background, never before replying.
func (p *Papers) SaveLive(ctx context.Context, id string, papers []LivePaper) error {
	if len(papers) == 0 {
		return nil
	}
	recs := make([]knowledge.Paper, len(papers))
	for i, lp := range papers {
		recs[i] = lp.Record()
	}
	return p.store.Update(ctx, id, func(_ context.Context, tx *knowledge.Tx) error {
		_, err := tx.UpsertPapers(recs)
		return err
	})
}

// LiveText is search_{id}_papers_live's result for query (§4.3): the papers, or the spec's
// no-results text when there are none or the search failed (err, a timeout included).
func LiveText(query string, papers []LivePaper, err error) string {
	if err != nil || len(papers) == 0 {
		return "No recent papers found online for '" + query + "'. Try rephrasing, or use the local paper search."
	}
	lines := []string{"Most recent papers (live search):\n"}
	for _, lp := range papers {
		head := "- " + lp.Title
		if lp.Year > 0 {
			head += " (" + strconv.Itoa(lp.Year) + ")"
		}
		lines = append(lines, head+" ["+lp.Source+"]", "  [View Paper]("+lp.URL+")")
		if a := knowledge.Snip(lp.Abstract, 200); a != "" {
			lines = append(lines, "  Abstract: "+a)
		}
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// LiveDescription is search_{id}_papers_live's description (§4.3).
func LiveDescription(name, id string) string {
	return "Live, on-demand search of the latest external literature about " + name + ", newest first. " +
		"It is slower than the local search (queries the web on demand; up to ~15 seconds). Always try the local `search_" +
		id + "_papers` first. **Only call this tool after the user has explicitly confirmed they want a live literature " +
		"search** (or explicitly asked to search the web / for the very latest papers). Do NOT call it automatically as a " +
		"first step. When you call it, your message in that turn should first tell the user you are searching the latest " +
		"literature and it may take a few seconds. **This is for DISCOVERY, not answering** - present results as " +
		"references for further reading; do NOT use paper content to formulate answers."
}
