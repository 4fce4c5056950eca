package runtimelock

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Verified is an overlay whose wheels were all read and matched their recorded sha256. It is
// immutable and safe for concurrent use.
type Verified struct {
	overlay *Overlay
	wheels  map[string]wheel // by exact file name; empty unless every wheel verified
	json    []byte           // nil unless every wheel verified
}

type wheel struct {
	data   []byte
	sha256 string
}

// Overlay returns a deep copy of the decoded overlay, packages in file order.
func (v *Verified) Overlay() *Overlay {
	if v == nil {
		return nil
	}
	return v.overlay.Clone()
}

// Wheel returns the verified bytes of the wheel the overlay lists under exactly fileName, and
// their sha256 in hex. It is a map lookup and never touches the file system. It reports
// false for a name the overlay does not list, and for every name when verification failed.
// The returned slice is shared: callers must not modify it.
func (v *Verified) Wheel(fileName string) (data []byte, sha256hex string, ok bool) {
	if v == nil {
		return nil, "", false
	}
	w, ok := v.wheels[fileName]
	return w.data, w.sha256, ok
}

// JSON returns the overlay rendered as Render does, which is the runtime_lock value of the
// /config response. It is nil when verification failed.
func (v *Verified) JSON() []byte {
	if v == nil {
		return nil
	}
	return slices.Clone(v.json)
}

// Load reads the overlay at lockfile (a slash-separated path relative to communityDir) and
// every wheel it lists from wheels/ beside it, and checks each wheel's sha256. Files are
// opened through an os.Root on communityDir, so neither the path nor a symlink can reach
// outside the community's folder.
//
// When the overlay decodes but a wheel is missing or differs, Load returns both a non-nil
// *Verified, whose Overlay is usable for resolving names but which serves no wheel and has no
// JSON, and an error listing every failing wheel. Any other failure returns a nil *Verified.
// An overlay that does not decode is reported with a wrapped *DecodeError.
func Load(communityDir, lockfile string) (*Verified, error) {
	root, data, err := openOverlay(communityDir, lockfile)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return verify(root, communityDir, lockfile, data)
}

// openOverlay checks lockfile, opens the community folder as a root and reads the overlay.
// The caller closes the root.
func openOverlay(communityDir, lockfile string) (*os.Root, []byte, error) {
	// config checks the path before it gets here (config.md §7.2); checking again keeps this
	// package safe on its own.
	if p := PathProblem(lockfile, ".json"); p != "" {
		return nil, nil, fmt.Errorf("lockfile %s: %s", pyRepr(lockfile), p)
	}
	display := filepath.Join(communityDir, filepath.FromSlash(lockfile))
	root, err := os.OpenRoot(communityDir)
	if err != nil {
		return nil, nil, fmt.Errorf("lock overlay %s cannot be read: %v", display, pathCause(err))
	}
	data, err := root.ReadFile(lockfile)
	if err != nil {
		root.Close()
		return nil, nil, fmt.Errorf("lock overlay %s cannot be read: %v", display, pathCause(err))
	}
	return root, data, nil
}

func verify(root *os.Root, communityDir, lockfile string, data []byte) (*Verified, error) {
	display := filepath.Join(communityDir, filepath.FromSlash(lockfile))
	ov, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("lock overlay %s is not a valid overlay: %w", display, err)
	}
	wheelDir := path.Join(path.Dir(lockfile), "wheels")
	wheels := make(map[string]wheel, len(ov.Packages))
	var errs []error
	for _, p := range ov.Packages {
		// FileName matched the bare-wheel-name pattern in Decode, so it has no "/" and the
		// join stays inside wheels/.
		name := path.Join(wheelDir, p.FileName)
		shown := filepath.Join(communityDir, filepath.FromSlash(name))
		b, err := root.ReadFile(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: wheel %s cannot be read: %v", p.Key, shown, pathCause(err)))
			continue
		}
		sum := sha256.Sum256(b)
		actual := hex.EncodeToString(sum[:])
		if actual != p.SHA256 {
			//lint:ignore ST1005 OSA's exact two sentences, full stop included
			errs = append(errs, fmt.Errorf("%s: wheel %s has sha256 %s, not the %s its entry records. A changed wheel needs a new version, because served wheels are cached by name for a year.", p.Key, shown, actual, p.SHA256))
			continue
		}
		wheels[p.FileName] = wheel{data: b, sha256: actual}
	}
	if len(errs) > 0 {
		return &Verified{overlay: ov}, errors.Join(errs...)
	}
	return &Verified{overlay: ov, wheels: wheels, json: ov.Render()}, nil
}

// pathCause drops the path from an *fs.PathError, because our messages name the file already.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// PathProblem applies config.md §7.2 to a community-relative path and returns what is wrong
// with it, or "".
func PathProblem(p, suffix string) string {
	switch {
	case strings.Contains(p, `\`):
		return "use forward slashes"
	case strings.HasPrefix(p, "/"):
		return "it must be relative to the community's folder"
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "it must be a plain relative path, with no empty, '.' or '..' segments"
		}
	}
	if pySuffix(path.Base(p)) != suffix {
		return "it must be a " + suffix + " file"
	}
	return ""
}

// pySuffix is PurePosixPath(name).suffix: the last "."-part, except that a leading dot does
// not start a suffix and a name ending in "." has none.
func pySuffix(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || i == len(name)-1 {
		return ""
	}
	return name[i:]
}

// Cache remembers the outcome of Load, success or failure, keyed by the community folder's
// absolute path, the lockfile and the sha256 of the overlay's bytes; see the package
// documentation for why. The zero value is ready to use, and a Cache is safe for concurrent
// use. A Cache must not be copied after first use.
type Cache struct {
	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
}

type cacheKey struct {
	dir, lockfile string
}

type cacheEntry struct {
	sum  [sha256.Size]byte
	done chan struct{} // closed once v and err are set
	v    *Verified
	err  error
}

// Load is Load with the outcome cached. The overlay file is read on every call, to key the
// cache by its content; its wheels are read only the first time those overlay bytes are seen.
func (c *Cache) Load(communityDir, lockfile string) (*Verified, error) {
	abs, err := filepath.Abs(communityDir)
	if err != nil {
		return nil, fmt.Errorf("lock overlay %s cannot be read: %v", filepath.Join(communityDir, filepath.FromSlash(lockfile)), err)
	}
	root, data, err := openOverlay(communityDir, lockfile)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	sum := sha256.Sum256(data)
	key := cacheKey{dir: abs, lockfile: lockfile}

	c.mu.Lock()
	if e := c.entries[key]; e != nil && e.sum == sum {
		c.mu.Unlock()
		<-e.done
		return e.v, e.err
	}
	e := &cacheEntry{sum: sum, done: make(chan struct{})}
	if c.entries == nil {
		c.entries = make(map[cacheKey]*cacheEntry)
	}
	c.entries[key] = e
	c.mu.Unlock()

	e.v, e.err = verify(root, communityDir, lockfile, data)
	close(e.done)
	return e.v, e.err
}
