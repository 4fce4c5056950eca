package ingest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/osc-assistant/assistant/knowledge"
)

// What a clean docstrings run of one repository and branch leaves for the next, so an
// unchanged repository costs one conditional tree request (a 304, which GitHub does not count
// against the rate limit) and a changed one downloads only the files whose blob changed.
//
// The cache is trusted only as far as the database agrees with it: it records the start of
// the run that wrote it, which is the last_sync_at of the (docstrings, {repo}:{language})
// rows that run wrote; when any of them is missing or different (the database was replaced,
// another replica synced since, a run failed after writing), or a language the cache has
// symbols of has no rows (the repository was dropped from the config, which deleted its rows
// but not these), the cache is not used.

// docCache is one repository and branch's cache file.
type docCache struct {
	Repo      string   `json:"repo"`
	Branch    string   `json:"branch"`
	Languages []string `json:"languages"`
	// ETag is the tree listing's, for If-None-Match.
	ETag string `json:"etag"`
	// SyncedAt is the run's start, the sync_metadata rows' last_sync_at.
	SyncedAt time.Time `json:"synced_at"`
	// Truncated is the listing's truncated flag, for a 304's tree.
	Truncated bool `json:"truncated"`
	// Files are the tree's files of the cached languages and what became of each.
	Files map[string]docCacheFile `json:"files"`
}

// docCacheFile is one file of the tree and its outcome.
type docCacheFile struct {
	SHA  string `json:"sha"`
	Size int64  `json:"size"`
	// OK: downloaded and parsed, with Symbols symbols stored; a file that failed is tried
	// again whatever its SHA.
	OK      bool `json:"ok"`
	Symbols int  `json:"symbols"`
}

// maxDocCacheBytes bounds a cache file read back (20,000 files of two languages fit).
const maxDocCacheBytes = 16 << 20

func (d *Docstrings) cachePath(id, repo, branch string) string {
	sum := sha256.Sum256([]byte(repo + "\x00" + branch))
	return filepath.Join(d.cacheDir, id, hex.EncodeToString(sum[:8])+".json")
}

// loadCache returns the cache of a repository and branch when the database agrees with it,
// else nil.
func (d *Docstrings) loadCache(ctx context.Context, id, repo, branch string, langs []string) *docCache {
	if d.cacheDir == "" {
		return nil
	}
	f, err := os.Open(d.cachePath(id, repo, branch))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("docstrings sync: cache unreadable", "community", id, "repo", repo, "error", err)
		}
		return nil
	}
	defer f.Close()
	b, err := readCapped(f, maxDocCacheBytes, f.Name())
	var c docCache
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Repo != repo || c.Branch != branch || !slices.Equal(sortedCopy(c.Languages), sortedCopy(langs)) {
		return nil
	}
	agree := true
	if err := d.store.Update(ctx, id, func(_ context.Context, tx *knowledge.Tx) error {
		for _, l := range langs {
			m, ok, err := tx.SyncMeta(TypeDocstrings, repo+":"+l)
			if err != nil {
				return err
			}
			agree = agree && ok && m.LastSyncAt.Equal(c.SyncedAt)
		}
		return nil
	}); err != nil || !agree {
		return nil
	}
	if !d.rowsAgree(ctx, id, &c, langs) {
		return nil
	}
	return &c
}

// rowsAgree reports whether the database holds rows of every language the cache says has
// symbols. A repository dropped from the config loses its rows but keeps its sync_metadata
// and cache; named again, a cache trusted then would answer every file as stored (its tree a
// 304) and the repository would come back empty.
func (d *Docstrings) rowsAgree(ctx context.Context, id string, c *docCache, langs []string) bool {
	if _, ok := d.store.Info(id); !ok {
		return false // nothing published: Write would publish, and there is nothing to agree with
	}
	var want []string
	for _, l := range langs {
		for p, f := range c.Files {
			if f.Symbols > 0 && strings.HasSuffix(p, docLanguages[l]) {
				want = append(want, l)
				break
			}
		}
	}
	if len(want) == 0 {
		return true
	}
	agree := true
	// Tx has no such read; Write's transaction does, and changes nothing here (no publish).
	err := d.store.Write(ctx, id, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		for _, l := range want {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM docstrings WHERE repo = ? AND language = ?)`, c.Repo, l).Scan(&n); err != nil {
				return false, err
			}
			agree = agree && n == 1
		}
		return false, nil
	})
	if err != nil {
		d.log.Warn("docstrings sync: the cache could not be checked against the database", "community", id, "repo", c.Repo, "error", err)
		return false
	}
	return agree
}

// saveCache writes c atomically; a failure only costs the next run its shortcut.
func (d *Docstrings) saveCache(id string, c *docCache) {
	if d.cacheDir == "" {
		return
	}
	path := d.cachePath(id, c.Repo, c.Branch)
	b, err := json.Marshal(c)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	if err == nil {
		tmp := path + ".tmp"
		if err = os.WriteFile(tmp, b, 0o644); err == nil {
			err = os.Rename(tmp, path)
		}
	}
	if err != nil {
		d.log.Warn("docstrings sync: cache not written", "community", id, "repo", c.Repo, "error", err)
	}
}

// dropCache removes a cache that no longer describes the database.
func (d *Docstrings) dropCache(id, repo, branch string) {
	if d.cacheDir != "" {
		os.Remove(d.cachePath(id, repo, branch))
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
