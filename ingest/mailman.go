package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
)

// The Mailman sync's bounds (knowledge.md §6.9).
const (
	// DefaultMailmanDelay is the polite pause after each page fetched from an archive.
	DefaultMailmanDelay    = time.Second
	mailmanMaxIndexBytes   = 4 << 20
	mailmanMaxThreadBytes  = 16 << 20
	mailmanMaxMessageBytes = 4 << 20
	// mailmanGrace is how long after a volume's period a message may still reach it (the
	// archive's clock is the list server's zone, and mail arrives late): a thread page fetched
	// later than that is final.
	mailmanGrace = 2 * 24 * time.Hour
	// mailmanBatch is how many messages one transaction writes.
	mailmanBatch = 100
)

// Sync metadata types of the Mailman sync (ours): mailman's name is the list's; a
// mailman_volume row ({list}:{volume}) records a volume read whole once it was final, so it
// is not read again (whatever start_year was when the list's last clean run skipped it).
const (
	metaMailman       = "mailman"
	metaMailmanVolume = "mailman_volume"
)

// MailmanOptions are a Mailman source's dependencies.
type MailmanOptions struct {
	Store *knowledge.Store
	// Client reaches the archives; their URLs come from community configs, so it must be
	// knowledge.NewGuardedClient's (nil makes one with the default options).
	Client *http.Client
	// CacheDir holds the archive pages fetched (required), e.g. <data dir>/mailman.
	CacheDir string
	Now      func() time.Time
	Sleep    func(ctx context.Context, d time.Duration) error
	Logger   *slog.Logger
}

// Mailman syncs the pipermail archives of a community's mailman lists into
// mailing_list_messages (knowledge.md §6.9): the archive index's volumes from start_year on,
// each volume's thread.html, and each message page, threads assembled from the thread page's
// subjects. Pages are kept in a disk cache: a message page is never fetched twice, a past
// volume's thread page once it is final, the current one on every run; a volume read whole
// once it was final is recorded (mailman_volume) and not read again at all. A full run (the
// first, or Full) reads every volume and stores every message again from the cache.
type Mailman struct {
	store  *knowledge.Store
	client *http.Client
	dir    string
	clk    clock
	log    *slog.Logger
	// Delay is waited after each page fetched (DefaultMailmanDelay; tests set 0).
	Delay time.Duration
}

// NewMailman returns a Mailman source caching pages under o.CacheDir.
func NewMailman(o MailmanOptions) (*Mailman, error) {
	if o.Store == nil || o.CacheDir == "" {
		return nil, errors.New("ingest: NewMailman needs a store and a cache directory")
	}
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("ingest: mailman cache: %w", err)
	}
	if o.Client == nil {
		o.Client = knowledge.NewGuardedClient(knowledge.GuardOptions{})
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Mailman{store: o.Store, client: o.Client, dir: o.CacheDir, clk: newClock(o.Now, o.Sleep), log: o.Logger, Delay: DefaultMailmanDelay}, nil
}

// Type is TypeMailman.
func (m *Mailman) Type() string { return TypeMailman }

// Has reports whether c names any mailing list.
func (m *Mailman) Has(c *config.Community) bool { return len(c.Mailman) > 0 }

// Sync syncs every list of c in turn; a list that fails is named in Result.Failed and the
// others still run, the error then saying how many failed.
func (m *Mailman) Sync(ctx context.Context, c *config.Community, opts RunOptions, progress func(Progress)) (Result, error) {
	var res Result
	if progress == nil {
		progress = func(Progress) {}
	}
	for _, l := range c.Mailman {
		st, err := m.syncList(ctx, c.ID, l, opts.Full, progress)
		res.Items += st.items
		progress(Progress{Source: l.ListName, Items: st.items, Pages: st.pages, Done: true, Err: err})
		if err != nil {
			res.Failed = append(res.Failed, SourceError{Source: l.ListName, Err: err})
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
		}
	}
	if len(res.Failed) > 0 {
		return res, fmt.Errorf("mailman: %d of %d lists failed: %s: %w", len(res.Failed), len(c.Mailman), res.Failed[0].Source, res.Failed[0].Err)
	}
	return res, nil
}

type mailmanRun struct{ items, pages, fetched, skipped int }

// mailmanList is one list's run: where its pages are and are cached.
type mailmanList struct {
	name  string
	base  string // with a trailing /
	cache string // the list's cache directory
}

func (m *Mailman) syncList(ctx context.Context, id string, cfg config.Mailman, forceFull bool, progress func(Progress)) (mailmanRun, error) {
	var st mailmanRun
	base := cfg.BaseURL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return st, fmt.Errorf("archive URL %q: want an http or https URL", cfg.BaseURL)
	}
	sum := sha256.Sum256([]byte(base))
	l := mailmanList{name: cfg.ListName, base: base, cache: filepath.Join(m.dir, hex.EncodeToString(sum[:8]))}

	var have bool
	err := m.store.Update(ctx, id, func(ctx context.Context, tx *knowledge.Tx) error {
		var err error
		_, have, err = tx.SyncMeta(metaMailman, l.name)
		return err
	})
	if err != nil {
		return st, err
	}
	start := m.clk.now()
	full := forceFull || !have
	report := func(waiting time.Time) {
		progress(Progress{Source: l.name, Items: st.items, Pages: st.pages, Waiting: waiting})
	}

	index, err := m.fetch(ctx, l.base, mailmanMaxIndexBytes, report)
	if err != nil {
		return st, fmt.Errorf("archive index: %w", err)
	}
	st.pages++
	vols := parseMailmanIndex(index)
	if len(vols) == 0 {
		return st, fmt.Errorf("archive index %s lists no volumes", l.base)
	}
	var todo []mailmanVolume
	for _, v := range vols {
		if cfg.StartYear == nil || v.Year >= *cfg.StartYear {
			todo = append(todo, v)
		}
	}
	// Volumes read whole once final are not read again (a full run reads them all).
	done := map[string]bool{}
	if !full {
		err := m.store.Update(ctx, id, func(ctx context.Context, tx *knowledge.Tx) error {
			for _, v := range todo {
				_, ok, err := tx.SyncMeta(metaMailmanVolume, l.name+":"+v.Name)
				if err != nil {
					return err
				}
				done[v.Name] = ok
			}
			return nil
		})
		if err != nil {
			return st, err
		}
	}
	for _, v := range todo {
		if done[v.Name] {
			continue
		}
		final, n, err := m.syncVolume(ctx, id, l, v, full, &st, report)
		if err != nil {
			return st, fmt.Errorf("%s: %w", v.Name, err)
		}
		if final {
			err := m.store.Update(ctx, id, func(ctx context.Context, tx *knowledge.Tx) error {
				return tx.SetSyncMeta(knowledge.SyncMeta{SourceType: metaMailmanVolume, SourceName: l.name + ":" + v.Name,
					LastSyncAt: m.clk.now(), Items: n})
			})
			if err != nil {
				return st, err
			}
		}
	}
	if st.skipped > 0 {
		m.log.Warn("mailman sync: message pages gone from the archive", "community", id, "list", l.name, "skipped", st.skipped)
	}
	err = m.store.Update(ctx, id, func(ctx context.Context, tx *knowledge.Tx) error {
		return tx.SetSyncMeta(knowledge.SyncMeta{SourceType: metaMailman, SourceName: l.name, LastSyncAt: start, Items: st.items})
	})
	return st, err
}

// syncVolume reads one volume's thread page and stores its messages: all of them on a full
// run, else those its cached copy (the last one stored whole) did not list. The thread page
// is cached only once its messages are stored, so an interrupted run is taken up again. It
// reports whether the volume is now stored whole and final (its page fetched after the
// volume's end and grace), and how many messages its page lists.
func (m *Mailman) syncVolume(ctx context.Context, id string, l mailmanList, v mailmanVolume, full bool, st *mailmanRun, report func(time.Time)) (bool, int, error) {
	threadPath := filepath.Join(l.cache, v.Name, "thread.html")
	cached, cachedAt, err := mailmanReadCache(threadPath, mailmanMaxThreadBytes)
	if err != nil {
		return false, 0, err
	}
	page := cached
	fetchedAt := cachedAt
	if cached == nil || cachedAt.Before(v.End.Add(mailmanGrace)) {
		fetchedAt = m.clk.now()
		if page, err = m.fetch(ctx, l.base+v.Name+"/thread.html", mailmanMaxThreadBytes, report); err != nil {
			return false, 0, err
		}
		st.pages++
	}
	final := !fetchedAt.Before(v.End.Add(mailmanGrace))
	if !full && cached != nil && bytes.Equal(page, cached) {
		n := len(parseMailmanThreads(page))
		if fetchedAt.Equal(cachedAt) {
			return final, n, nil
		}
		// Unchanged, but fetched now: once that is after the volume's end, it is final.
		return final, n, mailmanWriteCache(threadPath, page, fetchedAt)
	}
	entries := parseMailmanThreads(page)
	threads := mailmanThreadIDs(entries)
	known := map[string]bool{}
	if !full && cached != nil {
		for _, e := range parseMailmanThreads(cached) {
			known[e.ID] = true
		}
	}
	var batch []knowledge.Message
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := m.store.Update(ctx, id, func(ctx context.Context, tx *knowledge.Tx) error {
			n, err := tx.UpsertMessages(batch)
			st.items += n
			return err
		})
		batch = batch[:0]
		report(time.Time{})
		return err
	}
	for _, e := range entries {
		if known[e.ID] {
			continue
		}
		msgURL := l.base + v.Name + "/" + e.ID + ".html"
		body, err := m.message(ctx, filepath.Join(l.cache, v.Name, e.ID+".html"), msgURL, st, report)
		var se *HTTPStatusError
		if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusGone) {
			st.skipped++ // removed from the archive since the thread page was written
			continue
		}
		if err != nil {
			return false, 0, err
		}
		p := parseMailmanMessage(body)
		batch = append(batch, knowledge.Message{
			List: l.name, MessageID: e.ID, ThreadID: threads[e.ID], Subject: p.Subject, Author: p.Author,
			AuthorEmail: p.Email, Date: p.Date, Body: p.Body, URL: msgURL, Year: v.Year,
		})
		if len(batch) >= mailmanBatch {
			if err := flush(); err != nil {
				return false, 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return false, 0, err
	}
	return final, len(entries), mailmanWriteCache(threadPath, page, fetchedAt)
}

// message returns a message page from the cache, else fetches and caches it (a message page
// never changes).
func (m *Mailman) message(ctx context.Context, path, u string, st *mailmanRun, report func(time.Time)) ([]byte, error) {
	body, _, err := mailmanReadCache(path, mailmanMaxMessageBytes)
	if err != nil || body != nil {
		return body, err
	}
	body, err = m.fetch(ctx, u, mailmanMaxMessageBytes, report)
	if err != nil {
		return nil, err
	}
	st.pages++
	st.fetched++
	return body, mailmanWriteCache(path, body, m.clk.now())
}

// fetch GETs an archive page under a cap as UTF-8, waits out a 429 or 503, and pauses.
func (m *Mailman) fetch(ctx context.Context, u string, limit int64, report func(time.Time)) ([]byte, error) {
	resp, err := getRetrying(ctx, m.client, m.clk, u, map[string]string{"Accept": "text/html"}, 0, report)
	var body []byte
	if err == nil {
		body, err = readCapped(resp.Body, limit, u)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, err = nil, &HTTPStatusError{URL: u, Status: resp.StatusCode}
		} else if err == nil {
			body = mailmanUTF8(body, resp.Header.Get("Content-Type"))
		}
	}
	if m.Delay > 0 {
		if perr := m.clk.sleep(ctx, m.Delay); perr != nil && err == nil {
			err = perr
		}
	}
	return body, err
}

// mailmanReadCache returns a cached page and when it was fetched (its modification time), or nil
// when it is not cached.
func mailmanReadCache(path string, limit int64) ([]byte, time.Time, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("mailman cache: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("mailman cache: %w", err)
	}
	body, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("mailman cache: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, time.Time{}, nil // not a page this source wrote: fetch it again
	}
	return body, info.ModTime(), nil
}

// mailmanWriteCache writes a page atomically, its modification time set to when it was fetched.
func mailmanWriteCache(path string, body []byte, at time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("mailman cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("mailman cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(body); err != nil {
		tmp.Close()
		return fmt.Errorf("mailman cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("mailman cache: %w", err)
	}
	if err := os.Chtimes(tmp.Name(), at, at); err != nil {
		return fmt.Errorf("mailman cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("mailman cache: %w", err)
	}
	return nil
}

var _ Source = (*Mailman)(nil)
