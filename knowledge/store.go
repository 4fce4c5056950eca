package knowledge

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver with FTS5; only this package imports it
)

// idPattern is what a community id must look like before it goes into a path (spec §1).
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidID reports whether id may name a community's files.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// ErrNotInitialized is returned by reads of a community that has no published database yet, or
// whose database lacks the table asked for (spec §4.1 "not initialised" and "missing table").
var ErrNotInitialized = errors.New("knowledge database not initialised")

// ErrInvalidID is returned for a community id that does not match ^[A-Za-z0-9_-]+$.
var ErrInvalidID = errors.New("invalid community id")

// Store is the per-community SQLite databases under <data>/knowledge (spec §2.1): a published
// file per community that readers open read-only, and a working copy that one writer at a
// time changes and then publishes whole. It is safe for concurrent use.
type Store struct {
	dir string
	log *slog.Logger

	mu      sync.Mutex
	writers map[string]*sync.Mutex
	readers map[string]*reader
	work    map[string]*workDB // open working copies, used under their writer lock
}

// OpenStore returns the store under dataDir/knowledge, creating the directory.
func OpenStore(dataDir string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := filepath.Join(dataDir, "knowledge")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("knowledge store: %w", err)
	}
	return &Store{dir: dir, log: log, writers: map[string]*sync.Mutex{}, readers: map[string]*reader{},
		work: map[string]*workDB{}}, nil
}

// Path returns the published file of community id.
func (s *Store) Path(id string) string { return filepath.Join(s.dir, id+".db") }

func (s *Store) workPath(id string) string { return filepath.Join(s.dir, id+".work.db") }

// FileInfo is the published file's size and the time it was last published.
type FileInfo struct {
	Bytes       int64
	PublishedAt time.Time
}

// Info returns the published file's size and age; ok is false when there is none.
func (s *Store) Info(id string) (info FileInfo, ok bool) {
	if !ValidID(id) {
		return FileInfo{}, false
	}
	st, err := os.Stat(s.Path(id))
	if err != nil {
		return FileInfo{}, false
	}
	return FileInfo{Bytes: st.Size(), PublishedAt: st.ModTime()}, true
}

// dsn is an SQLite URI for path with the given query (the driver takes _pragma from it).
func dsn(path, query string) string {
	return (&url.URL{Scheme: "file", Path: path, RawQuery: query}).String()
}

// Write runs fn in one transaction on the community's working copy, then publishes the copy
// if fn reports that it changed anything (or when nothing is published yet). Writers of one
// community take turns; the working copy is created from the published file when it has
// none, so a reference file's data carries over, and the schema is ensured before fn runs.
func (s *Store) Write(ctx context.Context, id string, fn func(ctx context.Context, tx *sql.Tx) (changed bool, err error)) error {
	return s.withWriter(ctx, id, func(db *sql.DB) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("knowledge store: %w", err)
		}
		changed, err := fn(ctx, tx)
		if err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("knowledge store: %w", err)
		}
		if _, err := os.Stat(s.Path(id)); changed || err != nil {
			return s.publish(ctx, db, id)
		}
		return nil
	})
}

// withWriter runs fn with the community's writer lock held and its working copy open: the
// lock is a mutex for this process and an exclusive flock on knowledge/<id>.write.lock for
// others sharing the data directory (an `assistant sync` beside a server), so writers take
// turns however they were started.
func (s *Store) withWriter(ctx context.Context, id string, fn func(db *sql.DB) error) error {
	if !ValidID(id) {
		return ErrInvalidID
	}
	s.mu.Lock()
	w := s.writers[id]
	if w == nil {
		w = &sync.Mutex{}
		s.writers[id] = w
	}
	s.mu.Unlock()
	w.Lock()
	defer w.Unlock()
	unlock, err := lockFile(ctx, filepath.Join(s.dir, id+".write.lock"))
	if err != nil {
		return fmt.Errorf("knowledge store %s: writer lock: %w", id, err)
	}
	defer unlock()

	s.removeStaleTemps(id)
	// The working copy stays open between writes (a sync writes one transaction per page;
	// opening it and ensuring the schema each time cost more than the writes), and is opened
	// again when its file was replaced (another process recovered it) or a write failed.
	s.mu.Lock()
	cached := s.work[id]
	s.mu.Unlock()
	if cached != nil {
		if st, err := os.Stat(s.workPath(id)); err == nil && identOf(st).ino == cached.ino {
			err := fn(cached.db)
			if err != nil {
				s.dropWork(id)
			}
			return err
		}
		s.dropWork(id)
	}
	db, err := s.openWork(ctx, id)
	if err != nil && ctx.Err() == nil {
		// A working copy that cannot be opened (a crash, a full disk, a bad file) is only a
		// copy: start it again from the published file.
		s.log.Warn("knowledge store: working copy unusable, starting it again from the published file", "community", id, "error", err)
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(s.workPath(id) + suffix)
		}
		db, err = s.openWork(ctx, id)
	}
	if err != nil {
		return fmt.Errorf("knowledge store %s: %w", id, err)
	}
	st, err := os.Stat(s.workPath(id))
	if err != nil {
		db.Close()
		return fmt.Errorf("knowledge store %s: %w", id, err)
	}
	s.mu.Lock()
	s.work[id] = &workDB{db: db, ino: identOf(st).ino}
	s.mu.Unlock()
	if err := fn(db); err != nil {
		s.dropWork(id)
		return err
	}
	return nil
}

// workDB is a community's open working copy and the inode it was opened on.
type workDB struct {
	db  *sql.DB
	ino uint64
}

// dropWork closes the community's cached working copy; the caller holds its writer lock.
func (s *Store) dropWork(id string) {
	s.mu.Lock()
	w := s.work[id]
	delete(s.work, id)
	s.mu.Unlock()
	if w != nil {
		w.db.Close()
	}
}

// staleTemp is the age past which a publish's temporary file is a crash's leftover: a
// younger one may be a publish under way in a process that does not take the lock (an
// older build), and removing it would make that publish rename an empty file.
const staleTemp = 10 * time.Minute

// removeStaleTemps removes the temporary files of publishes that crashed; they are never
// read.
func (s *Store) removeStaleTemps(id string) {
	old, _ := filepath.Glob(filepath.Join(s.dir, id+".db.tmp-*"))
	for _, p := range old {
		if st, err := os.Lstat(p); err == nil && time.Since(st.ModTime()) > staleTemp {
			os.Remove(p)
		}
	}
}

// lockPoll is how often a writer waiting for another process's flock tries again.
const lockPoll = 25 * time.Millisecond

// lockFile takes an exclusive flock on path, waiting as long as ctx allows.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	var tick *time.Ticker
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, err
		}
		if tick == nil {
			tick = time.NewTicker(lockPoll)
			defer tick.Stop()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// unpublishedPath marks a working copy holding changes not yet published: a file, so a
// process that stopped between an Update and its Publish still publishes them the next time.
func (s *Store) unpublishedPath(id string) string { return s.workPath(id) + ".unpublished" }

// openWork opens the community's working copy, making it from the published file when
// there is none, and ensures the schema.
func (s *Store) openWork(ctx context.Context, id string) (*sql.DB, error) {
	work := s.workPath(id)
	if _, err := os.Stat(work); errors.Is(err, fs.ErrNotExist) {
		if err := copyFile(s.Path(id), work); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("copying the published file: %w", err)
		}
	}
	db, err := sql.Open("sqlite", dsn(work, "_pragma=journal_mode(wal)&_pragma=busy_timeout(5000)&_pragma=synchronous(normal)"))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := ensureSchema(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// publish writes the working copy to a new file beside the published one and renames it
// over it (spec §2.1 "Publish"): VACUUM INTO, DELETE journal mode, quick_check, fsync of
// the file, rename, fsync of the directory. A reader sees the old file or the new one,
// never a part of either.
func (s *Store) publish(ctx context.Context, db *sql.DB, id string) error {
	var suffix [6]byte
	rand.Read(suffix[:])
	tmp := filepath.Join(s.dir, id+".db.tmp-"+hex.EncodeToString(suffix[:]))
	defer os.Remove(tmp) // gone after the rename; removed when anything failed
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return fmt.Errorf("knowledge store: publishing %s: %w", id, err)
	}
	if err := checkPublished(ctx, tmp); err != nil {
		return fmt.Errorf("knowledge store: publishing %s: %w", id, err)
	}
	if err := syncPath(tmp); err != nil {
		return fmt.Errorf("knowledge store: publishing %s: %w", id, err)
	}
	if err := os.Rename(tmp, s.Path(id)); err != nil {
		return fmt.Errorf("knowledge store: publishing %s: %w", id, err)
	}
	if err := syncPath(s.dir); err != nil {
		return fmt.Errorf("knowledge store: publishing %s: %w", id, err)
	}
	// Everything committed so far is in the published file now.
	if err := os.Remove(s.unpublishedPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("knowledge store: publishing %s: %w", id, err)
	}
	return nil
}

// checkPublished sets the new file to rollback-journal mode, so readers need no -wal or
// -shm file, and checks it: it must exist (mode=rw never creates it, so a file that went
// missing is not replaced by an empty one) and hold doc_sections, as every working copy does.
func checkPublished(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", dsn(path, "mode=rw"))
	if err != nil {
		return err
	}
	defer db.Close()
	if ok, err := hasTable(ctx, db, "doc_sections"); err != nil {
		return err
	} else if !ok {
		return errors.New("the new file has no doc_sections table")
	}
	var mode, check string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode=DELETE`).Scan(&mode); err != nil {
		return err
	}
	if mode != "delete" {
		return fmt.Errorf("journal mode is %q, not delete", mode)
	}
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&check); err != nil {
		return err
	}
	if check != "ok" {
		return fmt.Errorf("quick_check: %s", check)
	}
	return nil
}

func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(to)
		return err
	}
	return out.Close()
}

// fileIdent is what tells one published file from the next (spec §2.1: inode and mtime).
type fileIdent struct {
	ino   uint64
	mtime int64
	size  int64
}

func identOf(st os.FileInfo) fileIdent {
	id := fileIdent{mtime: st.ModTime().UnixNano(), size: st.Size()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.ino = sys.Ino
	}
	return id
}

// maxReaderConns bounds the connections open on one community's published file.
const maxReaderConns = 4

// reader is one published file opened read-only. Readers that started on it finish on it;
// the next read after a publish opens the new file, and the old one closes once its last
// read is done.
type reader struct {
	db      *sql.DB
	ident   fileIdent
	refs    int
	retired bool
}

// read runs fn against the community's published file, opening it (again) when it is new.
// It returns ErrNotInitialized when nothing is published.
func (s *Store) read(ctx context.Context, id string, fn func(ctx context.Context, db *sql.DB) error) error {
	if !ValidID(id) {
		return ErrInvalidID
	}
	r, err := s.acquire(id)
	if err != nil {
		return err
	}
	defer s.release(r)
	return fn(ctx, r.db)
}

func (s *Store) acquire(id string) (*reader, error) {
	path := s.Path(id)
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotInitialized
	}
	if err != nil {
		return nil, fmt.Errorf("knowledge store: %w", err)
	}
	ident := identOf(st)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.readers[id]
	if r != nil && r.ident == ident {
		r.refs++
		return r, nil
	}
	// immutable=1: a published file is never changed in place, only replaced.
	db, err := sql.Open("sqlite", dsn(path, "mode=ro&immutable=1"))
	if err != nil {
		return nil, fmt.Errorf("knowledge store: %w", err)
	}
	if r != nil {
		r.retired = true
		if r.refs == 0 {
			r.db.Close()
		}
	}
	// Each connection holds its own page cache: a few are enough for concurrent searches,
	// and more requests wait for one rather than each opening another.
	db.SetMaxOpenConns(maxReaderConns)
	db.SetMaxIdleConns(maxReaderConns)
	r = &reader{db: db, ident: ident, refs: 1}
	s.readers[id] = r
	return r, nil
}

func (s *Store) release(r *reader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.refs--
	if r.retired && r.refs == 0 {
		r.db.Close()
	}
}

// Close closes every open reader and working copy. Reads running at the time finish first;
// a write running at the time finishes before its working copy closes.
func (s *Store) Close() error {
	s.mu.Lock()
	for id, r := range s.readers {
		r.retired = true
		if r.refs == 0 {
			r.db.Close()
		}
		delete(s.readers, id)
	}
	var open []string
	for id := range s.work {
		open = append(open, id)
	}
	s.mu.Unlock()
	for _, id := range open {
		s.mu.Lock()
		w := s.writers[id]
		s.mu.Unlock()
		w.Lock()
		s.dropWork(id)
		w.Unlock()
	}
	return nil
}

// hasTable reports whether the database has a table of that name.
func hasTable(ctx context.Context, db *sql.DB, name string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?`, name).Scan(&n)
	return n > 0, err
}

// timestamp formats t as the reference does: ISO 8601 UTC with microseconds and +00:00.
func timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000") + "+00:00"
}
