package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxContentChars is the most characters of one document in retrieve_{id}_docs and in the
// prompt (spec §3.2 "Caps everywhere"); past it the content is cut and TruncatedSuffix added.
const MaxContentChars = 50000

// TruncatedSuffix ends a document cut at MaxContentChars.
const TruncatedSuffix = "\n\n... [truncated for length]"

// ErrNotListed is Retrieve's answer for a URL that is neither an entry's url nor its
// source_url.
var ErrNotListed = errors.New("document not found in the registry")

// Retrieved is a registry document as retrieve_{id}_docs returns it.
type Retrieved struct {
	Title string
	// URL is the entry's url (also when it was asked for by its source_url).
	URL string
	// Content is the cleaned document, cut at MaxContentChars with TruncatedSuffix.
	Content string
}

// CapContent cuts content at MaxContentChars and appends TruncatedSuffix when it was cut.
func CapContent(content string) string {
	if utf8.RuneCountInString(content) <= MaxContentChars {
		return content
	}
	return string([]rune(content)[:MaxContentChars]) + TruncatedSuffix
}

// Retrieve returns a registry document of the community by its exact url or source_url. A
// document that was never fetched (the background round has not reached it) is fetched now,
// within ctx; one whose fetches failed and that has no good copy returns its *FetchError.
func (l *Library) Retrieve(ctx context.Context, id, u string) (Retrieved, error) {
	c := l.community(id)
	if c == nil {
		return Retrieved{}, ErrNotListed
	}
	d, ok := c.snap.Load().Doc(u)
	if !ok {
		return Retrieved{}, ErrNotListed
	}
	if !d.HasContent && d.LastError == "" {
		unlock, err := c.lock(ctx, d.key())
		if err == nil {
			if s := c.state(d.Doc); !s.HasContent && s.LastError == "" {
				l.fetchLocked(ctx, c, d.Doc)
			}
			unlock()
		}
		if err := ctx.Err(); err != nil {
			return Retrieved{}, &FetchError{"Request failed: " + failureDetail(ctx, err)}
		}
		d = c.state(d.Doc)
	}
	if !d.HasContent {
		return Retrieved{}, &FetchError{d.LastError}
	}
	return Retrieved{Title: d.Title, URL: d.URL, Content: CapContent(d.Content)}, nil
}

// RetrieveText is retrieve_{id}_docs's result text (spec §4.3) for what Retrieve returned
// when asked for requested.
func RetrieveText(name, requested string, r Retrieved, err error) string {
	switch {
	case errors.Is(err, ErrNotListed):
		return fmt.Sprintf("Document not found in %s registry: %s", name, requested)
	case err != nil:
		return fmt.Sprintf("Error retrieving %s: %s", requested, err.Error())
	}
	return "# " + r.Title + "\n\nSource: " + r.URL + "\n\n" + r.Content
}

// Search returns the community's documentation sections best matching query (spec §4.2),
// at most limit (clamped to 1–20). It returns ErrNotInitialized when the community has no
// index yet, and an error wrapping ErrUnreadable (which it logs) for any other database
// failure. A query without terms finds nothing.
func (l *Library) Search(ctx context.Context, id, query string, limit int) ([]Section, error) {
	var secs []Section
	err := l.store.read(ctx, id, func(ctx context.Context, db *sql.DB) error {
		var err error
		secs, err = searchSections(ctx, db, query, limit)
		return err
	})
	if err != nil && !errors.Is(err, ErrNotInitialized) {
		if !errors.Is(err, ErrUnreadable) {
			err = fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		l.log.Error("knowledge: searching documentation", "community", id, "error", err)
	}
	return secs, err
}

// trimLines trims every line and drops blank ones (fetch_current_page's layout).
func trimLines(s string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if t := strings.TrimSpace(line); t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n")
}
