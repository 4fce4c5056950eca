package knowledge

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultRefresh is how often every document is fetched again (--docs-refresh).
const DefaultRefresh = time.Hour

// converterVersion changes when conversion or cleaning changes, so cached copies made by an
// older version are fetched again unconditionally rather than kept by a 304.
const converterVersion = 1

// Doc is one documentation entry of a community's config (spec §3.1), in the package's own
// plain form so that it does not depend on config.
type Doc struct {
	Title string
	// URL is shown to readers and the model, and is what retrieve looks documents up by.
	URL string
	// SourceURL is fetched instead of URL when set.
	SourceURL string
	Preload   bool
	// Category defaults to "general"; Type is html (the default), sphinx, mkdocs, markdown
	// or json.
	Category, Type, Description string
	// SourcePath, when set, names a Markdown file inside the community's folder that is read
	// instead of fetching anything.
	SourcePath string
}

// fetchURL is what is fetched: source_url, else url.
func (d Doc) fetchURL() string {
	if d.SourceURL != "" {
		return d.SourceURL
	}
	return d.URL
}

// key identifies a document's copy: its source_path, else the URL fetched.
func (d Doc) key() string {
	if d.SourcePath != "" {
		return "path:" + d.SourcePath
	}
	return d.fetchURL()
}

// Community is what the Library needs of one community.
type Community struct {
	ID, Name string
	// Folder is the community's folder; source_path names are read inside it only.
	Folder string
	Docs   []Doc
}

// Options configure a Library.
type Options struct {
	// DataDir holds knowledge/<id>.db and the document cache docs/<id>/.
	DataDir string
	// Refresh is how often documents are fetched again; 0 means DefaultRefresh.
	Refresh time.Duration
	// AllowLoopback lets fetches reach loopback addresses (tests only; never on by default).
	AllowLoopback bool
	// Resolve maps host names to "IP:PORT", reached over plain HTTP, as curl --resolve does
	// (tests only; never on by default).
	Resolve map[string]string
	Logger  *slog.Logger
}

// DocState is one document as the Library holds it.
type DocState struct {
	Doc
	// Content is the cleaned Markdown ("" when there is no good copy).
	Content    string
	HasContent bool
	// FetchedAt is when the copy was last fetched or confirmed (a 304); zero if never.
	FetchedAt time.Time
	// Bytes is the cleaned content's size; Sections the doc_sections rows indexed from it.
	Bytes, Sections int
	// LastError is the last fetch's error text (spec §3.3 step 5), "" after a success.
	LastError   string
	LastErrorAt time.Time
	// FailingSince is when the failures up to LastError began (the first failure since the
	// last success); zero after a success.
	FailingSince time.Time

	html     bool
	headings []Heading
	etag     string
	lastMod  string
	// sha is ContentSHA256(Content), compared with what is indexed before sectionizing.
	sha string
}

// Snapshot is one community's documents at a moment; it is never changed once returned.
type Snapshot struct {
	ID, Name string
	// Generation changes whenever any document's content changes (a new copy, or a first
	// one); a prompt built from the snapshot stays valid while it is the same.
	Generation uint64
	// Docs are in config order.
	Docs []DocState
	// LastRefresh is when the last round of fetches ended (zero before the first).
	LastRefresh time.Time
	// Fetches and FetchFailures count the community's document fetches (and source_path
	// reads) since it was applied, for metrics; a 304 is a fetch.
	Fetches, FetchFailures uint64
}

// Doc returns the state of the document whose url or source_url is exactly u.
func (s *Snapshot) Doc(u string) (DocState, bool) {
	for _, d := range s.Docs {
		if d.URL == u {
			return d, true
		}
	}
	for _, d := range s.Docs {
		if d.SourceURL != "" && d.SourceURL == u {
			return d, true
		}
	}
	return DocState{}, false
}

// Library fetches, caches, converts and indexes every community's documentation in the
// background, and answers searches, retrievals and page fetches. It is safe for concurrent
// use. Create it with New, give it the communities with Apply (again on every reload), and
// Close it at shutdown.
type Library struct {
	log     *slog.Logger
	dataDir string
	refresh time.Duration
	store   *Store
	docs    *fetcher
	pages   *pageFetcher
	gen     atomic.Uint64

	applyMu sync.Mutex // one Apply at a time
	mu      sync.Mutex
	comms   map[string]*community
	closed  bool
}

// New returns a Library over opts.DataDir. Nothing is fetched until Apply.
func New(opts Options) (*Library, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.DataDir == "" {
		return nil, errors.New("knowledge: no data directory")
	}
	g, err := newGuard(opts.AllowLoopback, opts.Resolve)
	if err != nil {
		return nil, err
	}
	st, err := OpenStore(opts.DataDir, opts.Logger)
	if err != nil {
		return nil, err
	}
	return &Library{log: opts.Logger, dataDir: opts.DataDir, refresh: opts.Refresh, store: st,
		docs: newFetcher(g), pages: newPageFetcher(g), comms: map[string]*community{}}, nil
}

// community is one community's worker and state.
type community struct {
	cfg    Community
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan chan struct{}
	ready  chan struct{} // closed after the first round

	// dirty is signalled when a document's content changed: the worker indexes it then,
	// not only at the end of its round.
	dirty chan struct{}
	// indexed is each doc_url's rows in the database (content hash and count) as the worker
	// last read or wrote them; nil before its first index. Only the worker uses it.
	indexed map[string]indexedDoc

	mu     sync.Mutex
	states map[string]*DocState // by Doc.key
	snap   atomic.Pointer[Snapshot]
	last   time.Time
	// fetches and failures count outcomes (under mu).
	fetches, failures uint64
	locks             map[string]chan struct{} // one fetch of a document at a time
}

// indexedDoc is what the database holds of one document: its content's hash and rows.
type indexedDoc struct {
	sha      string
	sections int
}

func newCommunity(cfg Community) *community {
	return &community{cfg: cfg, done: make(chan struct{}), kick: make(chan chan struct{}, 16),
		ready: make(chan struct{}), dirty: make(chan struct{}, 1), states: map[string]*DocState{},
		locks: map[string]chan struct{}{}}
}

// markDirty asks the worker to index the community's changed copies.
func (c *community) markDirty() {
	select {
	case c.dirty <- struct{}{}:
	default: // already asked
	}
}

// Apply makes the Library serve exactly these communities: new ones start at once (their
// cached copies are served at once, and a round of fetches starts in the background), changed
// ones start again, and those no longer given stop (their files stay). It returns an error
// naming any community it could not take (an invalid id); the others are applied. Snapshot
// and the other reads never wait for it, and a community given before and after is served
// throughout: by its old worker's state until the new one, its cache already read, takes its
// place in one step.
func (l *Library) Apply(comms []Community) error {
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	var errs []error
	want := map[string]Community{}
	for _, c := range comms {
		if !ValidID(c.ID) {
			errs = append(errs, fmt.Errorf("knowledge: community id %q: %w", c.ID, ErrInvalidID))
			continue
		}
		want[c.ID] = c
	}
	// Close takes applyMu too, so the library stays open until this Apply returns.
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errors.New("knowledge: library closed")
	}
	var starting []Community
	for id, cfg := range want {
		if c, ok := l.comms[id]; !ok || !sameCommunity(cfg, c.cfg) {
			starting = append(starting, cfg)
		}
	}
	l.mu.Unlock()

	// New and changed communities are built, their caches read, before any is listed, so
	// a listed community always has a snapshot and a changed one is never missing.
	var fresh []*community
	for _, cfg := range starting {
		c := newCommunity(cfg)
		l.loadCache(c)
		fresh = append(fresh, c)
	}
	l.mu.Lock()
	var stopping []*community
	for id, c := range l.comms {
		if _, ok := want[id]; !ok {
			stopping = append(stopping, c)
			delete(l.comms, id)
		}
	}
	for _, c := range fresh {
		if old := l.comms[c.cfg.ID]; old != nil {
			stopping = append(stopping, old)
		}
		l.comms[c.cfg.ID] = c
	}
	l.mu.Unlock()

	// Stopped outside the lock: a worker may be indexing, or wait for a document a request
	// is fetching; nothing that reads waits for it.
	for _, c := range stopping {
		c.stop()
	}
	// A new worker starts once the old one has stopped, so that two never index one
	// community at once (the old one would delete the rows of documents it does not know).
	// Only Apply and Close, one at a time, stop a worker, so none is stopped before this.
	for _, c := range fresh {
		ctx, cancel := context.WithCancel(context.Background())
		c.cancel = cancel
		go l.run(ctx, c)
	}
	return errors.Join(errs...)
}

func sameCommunity(a, b Community) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Folder == b.Folder && slices.Equal(a.Docs, b.Docs)
}

func (c *community) stop() {
	c.cancel()
	<-c.done
}

// Close stops every worker (fetches under way are cancelled) and closes the store.
func (l *Library) Close() error {
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	l.mu.Lock()
	l.closed = true
	comms := l.comms
	l.comms = map[string]*community{}
	l.mu.Unlock()
	for _, c := range comms {
		c.stop()
	}
	l.docs.close()
	l.pages.close()
	return l.store.Close()
}

func (l *Library) community(id string) *community {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.comms[id]
}

// Snapshot returns the community's current documents, or nil for a community not applied.
func (l *Library) Snapshot(id string) *Snapshot {
	c := l.community(id)
	if c == nil {
		return nil
	}
	return c.snap.Load()
}

// Ready waits until the community's first round of fetches and indexing has ended (or ctx
// ends). The server never needs to: cached copies are served before it.
func (l *Library) Ready(ctx context.Context, id string) error {
	c := l.community(id)
	if c == nil {
		return fmt.Errorf("knowledge: unknown community %q", id)
	}
	select {
	case <-c.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Refresh starts a round of fetches and indexing for the community now and waits for it to
// end (or for ctx to end).
func (l *Library) Refresh(ctx context.Context, id string) error {
	c := l.community(id)
	if c == nil {
		return fmt.Errorf("knowledge: unknown community %q", id)
	}
	reply := make(chan struct{})
	select {
	case c.kick <- reply:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StoreInfo is the published database's size and age, for /health; ok is false before the
// first publish.
func (l *Library) StoreInfo(id string) (FileInfo, bool) { return l.store.Info(id) }

// Store returns the knowledge store, for the readers and writers of synced sources.
func (l *Library) Store() *Store { return l.store }

// run is a community's worker: a round at once, then one every refresh interval or when
// asked, until stopped.
func (l *Library) run(ctx context.Context, c *community) {
	defer close(c.done)
	var replies []chan struct{}
	timer := time.NewTimer(0)
	defer timer.Stop()
	first := true
	for {
		select {
		case <-ctx.Done():
			for _, r := range replies {
				close(r)
			}
			return
		case r := <-c.kick:
			replies = append(replies, r)
		case <-c.dirty: // a copy a request fetched between rounds
			l.indexNow(ctx, c)
			continue
		case <-timer.C:
		}
		// Requests that arrived meanwhile are answered by this round too.
		for more := true; more; {
			select {
			case r := <-c.kick:
				replies = append(replies, r)
			default:
				more = false
			}
		}
		l.round(ctx, c)
		if first {
			close(c.ready)
			first = false
		}
		for _, r := range replies {
			close(r)
		}
		replies = replies[:0]
		timer.Reset(l.refresh)
	}
}

// round fetches every document (bounded by the fetcher's slots), preloads first since the
// prompt waits for them, and indexes the copies as they arrive (the cached ones at once), so
// a local guide is searchable while a remote page is still coming; each index publishes when
// it changed anything.
func (l *Library) round(ctx context.Context, c *community) {
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		for _, preload := range []bool{true, false} {
			var wg sync.WaitGroup
			for _, d := range c.cfg.Docs {
				if d.Preload == preload {
					wg.Go(func() { l.fetchDoc(ctx, c, d) })
				}
			}
			wg.Wait()
		}
	}()
	for waiting := true; waiting; {
		select {
		case <-c.dirty:
			l.indexNow(ctx, c)
		case <-fetched:
			waiting = false
		}
	}
	if ctx.Err() != nil {
		return
	}
	select {
	case <-c.dirty: // answered by the index below
	default:
	}
	// The last copies, and the rows of documents no longer configured.
	l.indexNow(ctx, c)
	c.mu.Lock()
	c.last = time.Now()
	c.mu.Unlock()
	l.publishSnapshot(c)
}

// indexNow indexes the community's copies and publishes its snapshot with their section
// counts; a failure is logged (and tried again at the next change or round).
func (l *Library) indexNow(ctx context.Context, c *community) {
	if err := l.index(ctx, c); err != nil && ctx.Err() == nil {
		l.log.Error("knowledge: indexing documentation", "community", c.cfg.ID, "error", err)
	}
	l.publishSnapshot(c)
}

// lock takes the document's fetch lock, waiting as long as ctx allows (a worker being
// stopped never waits for a request's fetch); it returns the unlock, or ctx's error.
func (c *community) lock(ctx context.Context, key string) (func(), error) {
	c.mu.Lock()
	m := c.locks[key]
	if m == nil {
		m = make(chan struct{}, 1)
		c.locks[key] = m
	}
	c.mu.Unlock()
	select {
	case m <- struct{}{}:
		return func() { <-m }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *community) state(d Doc) DocState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.states[d.key()]; s != nil {
		return *s
	}
	return DocState{Doc: d}
}

// fetchDoc fetches (or reads) one document and records the outcome; a failure keeps the
// last good copy.
func (l *Library) fetchDoc(ctx context.Context, c *community, d Doc) {
	unlock, err := c.lock(ctx, d.key())
	if err != nil {
		return
	}
	defer unlock()
	l.fetchLocked(ctx, c, d)
}

func (l *Library) fetchLocked(ctx context.Context, c *community, d Doc) {
	prev := c.state(d)
	next := prev
	next.Doc = d
	now := time.Now()
	var body []byte
	var contentType, base string
	var err error
	if d.SourcePath != "" {
		body, err = readSourcePath(c.cfg.Folder, d.SourcePath)
		base = d.URL
	} else {
		etag, lm := prev.etag, prev.lastMod
		if !prev.HasContent {
			etag, lm = "", "" // nothing to keep on a 304
		}
		var f *fetched
		f, err = l.docs.fetch(ctx, d.fetchURL(), etag, lm)
		if err == nil && f.NotModified {
			next.FetchedAt, next.LastError, next.LastErrorAt, next.FailingSince = now, "", time.Time{}, time.Time{}
			if f.ETag != "" {
				next.etag = f.ETag
			}
			if f.LastModified != "" {
				next.lastMod = f.LastModified
			}
			l.saveState(c, &next)
			return
		}
		if err == nil {
			body, contentType, base = f.Body, f.ContentType, f.FinalURL
			next.etag, next.lastMod = f.ETag, f.LastModified
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return // stopping: not a failure of the source
		}
		msg := err.Error()
		var fe *FetchError
		if !errors.As(err, &fe) {
			msg = "Request failed: " + msg
		}
		if msg != prev.LastError {
			l.log.Warn("knowledge: document fetch failed", "community", c.cfg.ID, "url", d.fetchURL(), "error", msg, "has_copy", prev.HasContent)
		}
		next.LastError, next.LastErrorAt = msg, now
		if prev.LastError == "" || prev.FailingSince.IsZero() {
			next.FailingSince = now
		}
		l.saveState(c, &next)
		return
	}
	typ := d.Type
	if d.SourcePath != "" && typ == "" {
		typ = "markdown"
	}
	conv := ConvertContext(ctx, body, contentType, typ, base)
	if ctx.Err() != nil {
		return // stopping: the conversion may have stopped part way
	}
	content := Clean(conv.Markdown)
	if prev.LastError != "" {
		l.log.Info("knowledge: document fetched again", "community", c.cfg.ID, "url", d.fetchURL())
	}
	next.Content, next.HasContent, next.Bytes = content, true, len(content)
	next.sha = ContentSHA256(content)
	next.html, next.headings = conv.HTML, conv.Headings
	next.FetchedAt, next.LastError, next.LastErrorAt, next.FailingSince = now, "", time.Time{}, time.Time{}
	changed := content != prev.Content || !prev.HasContent
	if changed {
		l.gen.Add(1)
	}
	l.saveState(c, &next)
	if changed {
		c.markDirty()
	}
}

// saveState records a document's new state and, for fetched documents, writes its cache.
func (l *Library) saveState(c *community, s *DocState) {
	c.mu.Lock()
	c.states[s.key()] = s
	c.fetches++
	if s.LastError != "" {
		c.failures++
	}
	c.mu.Unlock()
	if s.SourcePath == "" {
		if err := l.writeCache(c.cfg.ID, s); err != nil {
			l.log.Warn("knowledge: writing the document cache", "community", c.cfg.ID, "url", s.fetchURL(), "error", err)
		}
	}
	l.publishSnapshot(c)
}

// publishSnapshot builds the community's snapshot from its states.
func (l *Library) publishSnapshot(c *community) {
	c.mu.Lock()
	defer c.mu.Unlock()
	snap := &Snapshot{ID: c.cfg.ID, Name: c.cfg.Name, Generation: l.gen.Load(), LastRefresh: c.last,
		Fetches: c.fetches, FetchFailures: c.failures}
	for _, d := range c.cfg.Docs {
		if s := c.states[d.key()]; s != nil {
			st := *s
			st.Doc = d
			snap.Docs = append(snap.Docs, st)
		} else {
			snap.Docs = append(snap.Docs, DocState{Doc: d})
		}
	}
	// The generation moves only when content did: keep the old number otherwise, so a prompt
	// cache keyed by it survives rounds that changed nothing.
	if old := c.snap.Load(); old != nil && sameContent(old, snap) {
		snap.Generation = old.Generation
	}
	c.snap.Store(snap)
}

func sameContent(a, b *Snapshot) bool {
	if len(a.Docs) != len(b.Docs) {
		return false
	}
	for i := range a.Docs {
		if a.Docs[i].Doc != b.Docs[i].Doc || a.Docs[i].Content != b.Docs[i].Content || a.Docs[i].HasContent != b.Docs[i].HasContent {
			return false
		}
	}
	return true
}

// index rebuilds the doc_sections rows of every document whose content is not the one
// indexed (by its hash, compared before anything is sectionized, and sectionized outside
// the community's lock), deletes the rows of documents no longer configured, and publishes
// when it wrote anything. Only the community's worker calls it.
func (l *Library) index(ctx context.Context, c *community) error {
	if c.indexed == nil {
		known, err := l.indexedDocs(ctx, c.cfg.ID)
		if err != nil {
			return err
		}
		c.indexed = known
	}
	type docRows struct {
		url, sha string
		secs     []Section
	}
	var todo []DocState
	configured := map[string]bool{}
	c.mu.Lock()
	for _, d := range c.cfg.Docs {
		if configured[d.URL] {
			continue // a second entry with the same url: the first one's rows stand
		}
		configured[d.URL] = true
		s := c.states[d.key()]
		if s == nil || !s.HasContent {
			continue
		}
		if ix, ok := c.indexed[d.URL]; !ok || s.sha == "" || ix.sha != s.sha {
			st := *s // the content is shared, not copied
			st.Doc = d
			todo = append(todo, st)
		}
	}
	c.mu.Unlock()
	var docs []docRows
	for _, s := range todo {
		sha := s.sha
		if sha == "" {
			sha = ContentSHA256(s.Content)
		}
		if ix, ok := c.indexed[s.URL]; ok && ix.sha == sha {
			continue
		}
		docs = append(docs, docRows{s.URL, sha, Sectionize(s.URL, s.Title, s.Content, s.html, s.headings)})
	}
	dropped := false // rows of a document no longer configured
	for u := range c.indexed {
		dropped = dropped || !configured[u]
	}
	if _, published := l.store.Info(c.cfg.ID); published && len(docs) == 0 && !dropped {
		l.setSections(c)
		return nil
	}
	err := l.store.Write(ctx, c.cfg.ID, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		changed := false
		now := timestamp(time.Now())
		for _, d := range docs {
			var n int
			var sha sql.NullString
			if err := tx.QueryRowContext(ctx, `SELECT count(*), max(content_sha256) FROM doc_sections WHERE doc_url = ?`, d.url).Scan(&n, &sha); err != nil {
				return false, err
			}
			if n == len(d.secs) && (n == 0 || sha.String == d.sha) {
				// The working copy holds it, the published file does not (docs are what
				// differs from it): a crash came between a commit and its publish.
				changed = changed || n > 0
				continue
			}
			changed = true
			if _, err := tx.ExecContext(ctx, `DELETE FROM doc_sections WHERE doc_url = ?`, d.url); err != nil {
				return false, err
			}
			if err := insertSections(ctx, tx, d.secs, d.sha, now); err != nil {
				return false, err
			}
		}
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT doc_url FROM doc_sections`)
		if err != nil {
			return false, err
		}
		var gone []string
		for rows.Next() {
			var u string
			if err := rows.Scan(&u); err != nil {
				rows.Close()
				return false, err
			}
			if !configured[u] {
				gone = append(gone, u)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, err
		}
		for _, u := range gone {
			changed = true
			if _, err := tx.ExecContext(ctx, `DELETE FROM doc_sections WHERE doc_url = ?`, u); err != nil {
				return false, err
			}
		}
		if changed {
			if _, err := tx.ExecContext(ctx, `INSERT INTO sync_metadata (source_type, source_name, last_sync_at, items_synced)
				VALUES ('docs', 'sections', ?, (SELECT count(*) FROM doc_sections))
				ON CONFLICT(source_type, source_name) DO UPDATE SET last_sync_at = excluded.last_sync_at, items_synced = excluded.items_synced`, now); err != nil {
				return false, err
			}
		}
		return changed, nil
	})
	if err != nil {
		return err
	}
	for _, d := range docs {
		c.indexed[d.url] = indexedDoc{d.sha, len(d.secs)}
	}
	for u := range c.indexed {
		if !configured[u] {
			delete(c.indexed, u)
		}
	}
	l.setSections(c)
	return nil
}

// setSections sets each document's section count from what is indexed of its content.
func (l *Library) setSections(c *community) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.cfg.Docs {
		s := c.states[d.key()]
		if s == nil {
			continue
		}
		n := 0
		if ix, ok := c.indexed[d.URL]; ok && s.HasContent {
			if ix.sha != s.sha {
				continue // a newer copy, indexed next
			}
			n = ix.sections
		}
		if s.Sections != n {
			s2 := *s
			s2.Sections = n
			c.states[d.key()] = &s2
		}
	}
}

// indexedDocs reads what the published database holds of each document: nothing when there
// is no database or no doc_sections yet.
func (l *Library) indexedDocs(ctx context.Context, id string) (map[string]indexedDoc, error) {
	known := map[string]indexedDoc{}
	err := l.store.read(ctx, id, func(ctx context.Context, db *sql.DB) error {
		if ok, err := hasTable(ctx, db, "doc_sections"); err != nil || !ok {
			return err
		}
		rows, err := db.QueryContext(ctx, `SELECT doc_url, max(content_sha256), count(*) FROM doc_sections GROUP BY doc_url`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var u string
			var ix indexedDoc
			if err := rows.Scan(&u, &ix.sha, &ix.sections); err != nil {
				return err
			}
			known[u] = ix
		}
		return rows.Err()
	})
	if errors.Is(err, ErrNotInitialized) {
		return known, nil
	}
	return known, err
}

// insertSections writes a document's rows in one statement: FTS5 flushes its pending index
// at the end of every statement, so one statement per row cost 60% of indexing.
func insertSections(ctx context.Context, tx *sql.Tx, secs []Section, sha, now string) error {
	if len(secs) == 0 {
		return nil
	}
	type row struct {
		URL      string `json:"u"`
		DocTitle string `json:"d"`
		Anchor   string `json:"a"`
		Path     string `json:"h"`
		Title    string `json:"t"`
		Text     string `json:"x"`
		Position int    `json:"p"`
	}
	rows := make([]row, len(secs))
	for i, s := range secs {
		rows[i] = row{s.DocURL, s.DocTitle, s.Anchor, s.HeadingPath, s.Title, s.Text, s.Position}
	}
	js, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO doc_sections (doc_url, doc_title, anchor, heading_path, title, text, position, content_sha256, synced_at)
		SELECT value->>'u', value->>'d', value->>'a', value->>'h', value->>'t', value->>'x', value->>'p', ?, ? FROM json_each(?) ORDER BY key`, sha, now, string(js))
	return err
}

// cacheMeta is a cached document's .json (spec §3.2 "Disk cache"), with what the Library
// needs besides: the converter's version, whether the source was HTML and its headings.
type cacheMeta struct {
	SourceURL    string    `json:"source_url"`
	FetchedAt    string    `json:"fetched_at"`
	ETag         string    `json:"etag"`
	LastModified string    `json:"last_modified"`
	LastError    string    `json:"last_error"`
	LastErrorAt  string    `json:"last_error_at"`
	FailingSince string    `json:"failing_since,omitempty"`
	Converter    int       `json:"converter"`
	HTML         bool      `json:"html"`
	Headings     []Heading `json:"headings,omitempty"`
}

func (l *Library) cachePath(id, sourceURL string) string {
	sum := sha256.Sum256([]byte(sourceURL))
	return filepath.Join(l.dataDir, "docs", id, hex.EncodeToString(sum[:])[:16])
}

func (l *Library) writeCache(id string, s *DocState) error {
	p := l.cachePath(id, s.fetchURL())
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	meta := cacheMeta{SourceURL: s.fetchURL(), ETag: s.etag, LastModified: s.lastMod, LastError: s.LastError,
		Converter: converterVersion, HTML: s.html, Headings: s.headings}
	if !s.FetchedAt.IsZero() {
		meta.FetchedAt = timestamp(s.FetchedAt)
	}
	if !s.FailingSince.IsZero() {
		meta.FailingSince = timestamp(s.FailingSince)
	}
	if !s.LastErrorAt.IsZero() {
		meta.LastErrorAt = timestamp(s.LastErrorAt)
	}
	if s.HasContent {
		if err := writeAtomic(p+".md", []byte(s.Content)); err != nil {
			return err
		}
	}
	js, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(p+".json", js)
}

// loadCache fills a new community's states from the disk cache, so the last good copies
// serve at once after a restart; source_path documents are read at once too.
func (l *Library) loadCache(c *community) {
	for _, d := range c.cfg.Docs {
		if d.SourcePath != "" {
			l.fetchLocked(context.Background(), c, d)
			continue
		}
		p := l.cachePath(c.cfg.ID, d.fetchURL())
		js, err := os.ReadFile(p + ".json")
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				l.log.Warn("knowledge: reading the document cache", "community", c.cfg.ID, "url", d.fetchURL(), "error", err)
			}
			continue
		}
		var meta cacheMeta
		if err := json.Unmarshal(js, &meta); err != nil || meta.SourceURL != d.fetchURL() {
			continue
		}
		s := &DocState{Doc: d, LastError: meta.LastError, html: meta.HTML, headings: meta.Headings}
		s.FetchedAt, _ = parseTime(meta.FetchedAt)
		s.LastErrorAt, _ = parseTime(meta.LastErrorAt)
		s.FailingSince, _ = parseTime(meta.FailingSince)
		if meta.Converter == converterVersion {
			s.etag, s.lastMod = meta.ETag, meta.LastModified
		}
		if md, err := readFileBounded(p + ".md"); err == nil {
			s.Content, s.HasContent, s.Bytes = string(md), true, len(md)
			s.sha = ContentSHA256(s.Content)
		}
		c.states[d.key()] = s
	}
	if len(c.states) > 0 {
		l.gen.Add(1)
		c.markDirty() // indexed as soon as the worker starts, before any fetch ends
	}
	l.publishSnapshot(c)
}

// readFileBounded reads a cached copy; a file over the cap (not one we wrote) is refused.
func readFileBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// A cleaned copy can be a little longer than its 4 MiB source (escapes, json indent).
	if st.Size() > 2*MaxDocumentBytes {
		return nil, errTooLarge
	}
	return readAll(f, st.Size())
}

func readAll(f *os.File, size int64) ([]byte, error) {
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if int64(n) == size {
		return buf, nil
	}
	return nil, err
}

func writeAtomic(path string, data []byte) error {
	tmp := fmt.Sprintf("%s.tmp-%d", path, time.Now().UnixNano())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// parseTime reads our timestamps, and also Z and offset-less ones (as UTC).
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("bad time %q", s)
}
