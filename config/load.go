package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/osc-assistant/assistant/runtimelock"
)

// maxFileBytes bounds a config file; real ones are a few kilobytes.
const maxFileBytes = 1 << 20

// A SyntaxChecker compile-checks Python source as module code with top-level await allowed,
// as the browser will run a prelude. It returns nil when the source compiles.
type SyntaxChecker interface {
	CheckSyntax(ctx context.Context, source string) (*SyntaxError, error)
}

// SyntaxError is where and why Python refused a source. Line is 1-based within the source.
type SyntaxError struct {
	Line int
	Msg  string
}

// Options tunes Load.
type Options struct {
	// Python compile-checks every prelude. When nil, preludes are not compile-checked and the
	// Set says so.
	Python SyntaxChecker
	// Locks caches lock-overlay verification across loads, so a reload never re-reads a wheel
	// it already verified. When nil, Load uses a fresh cache.
	Locks *runtimelock.Cache
}

func (o Options) locks() *runtimelock.Cache {
	if o.Locks == nil {
		return &runtimelock.Cache{}
	}
	return o.Locks
}

// Set is every community found in one directory, in id order.
type Set struct {
	Communities []*Community
	// PreludesChecked is false when no SyntaxChecker was given.
	PreludesChecked bool
	// Notices are facts for maintainers that are not errors (sections accepted but unused).
	Notices []Notice
}

// Notice is one informational line about a community.
type Notice struct {
	File string
	Msg  string
}

// Get returns the community with id, or nil.
func (s *Set) Get(id string) *Community {
	i, ok := slices.BinarySearchFunc(s.Communities, id, func(c *Community, id string) int { return strings.Compare(c.ID, id) })
	if !ok {
		return nil
	}
	return s.Communities[i]
}

// loaded is one file after phases 1 to 3.
type loaded struct {
	file      string
	dir       string
	community *Community
	index     map[string]pos
	blocks    map[string]block
}

// Load reads dir/*/config.yaml and returns the communities, or an ErrorList holding every
// problem found (with a partial Set, so callers can still report notices).
func Load(ctx context.Context, dir string, opts Options) (*Set, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, ErrorList{{File: dir, Msg: fmt.Sprintf("cannot read the communities directory: %v", err)}}
	}
	var errs ErrorList
	var files []loaded
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := filepath.Join(dir, e.Name(), "config.yaml")
		if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
			continue // a folder without a config is not a community (shared assets, for example)
		}
		l, ferrs := loadFile(file)
		errs = append(errs, ferrs...)
		if l != nil {
			l.dir = filepath.Join(dir, e.Name())
			files = append(files, *l)
		}
	}
	if len(files) == 0 && len(errs) == 0 {
		errs = append(errs, Error{File: dir, Msg: "no community found: expected <id>/config.yaml folders"})
	}
	// Phase 4 runs only on files that passed phases 1 to 3: its checks assume a sound shape.
	errs = append(errs, crossCheck(ctx, files, opts)...)
	set := &Set{PreludesChecked: opts.Python != nil}
	for _, f := range files {
		set.Communities = append(set.Communities, f.community)
		set.Notices = append(set.Notices, unusedSections(f.file, f.community)...)
		set.Notices = append(set.Notices, preloadBudget(f.file, f.community)...)
		set.Notices = append(set.Notices, docsPlaceholders(f.file, f.community)...)
	}
	slices.SortFunc(set.Communities, func(a, b *Community) int { return strings.Compare(a.ID, b.ID) })
	return set, errs.errOrNil()
}

// LoadFile runs phases 1 to 3 on one config file. It does not apply the rules that need the
// community's folder (folder name, lockfile, overlay).
func LoadFile(file string) (*Community, error) {
	l, errs := loadFile(file)
	if len(errs) > 0 {
		return nil, errs.errOrNil()
	}
	return l.community, nil
}

func loadFile(file string) (*loaded, ErrorList) {
	data, err := readCapped(file)
	if err != nil {
		return nil, ErrorList{{File: file, Msg: err.Error()}}
	}
	return decodeBytes(file, data)
}

func readCapped(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %v", err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("file is larger than %d bytes", maxFileBytes)
	}
	return data, nil
}

// decodeBytes runs phases 1 to 3 on one file's bytes.
func decodeBytes(file string, data []byte) (*loaded, ErrorList) {
	// Phase 1: syntax. yaml.v3 stops at the first syntax error, so there is at most one.
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrorList{{File: file, Line: 1, Column: 1, Msg: "the file is empty; a community needs at least id, name and description"}}
		}
		return nil, ErrorList{syntaxError(file, data, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, ErrorList{{File: file, Line: extra.Line, Column: extra.Column, Msg: "the file holds more than one YAML document; a community config is exactly one"}}
	} else if !errors.Is(err, io.EOF) {
		return nil, ErrorList{syntaxError(file, data, err)}
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	// Phase 2: shape.
	d := newDecoder(file, data)
	c := &Community{}
	d.index[""] = pos{doc.Line, doc.Column}
	if isNull(doc) {
		d.failAt(doc, "", "the file is empty; a community needs at least id, name and description")
	} else {
		d.decode(doc, reflectValue(c), "", false)
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	// Phase 3: per-file meaning.
	k := &checker{file: file, index: d.index, blocks: d.blocks}
	normalize(c)
	k.validateStruct(sharedValidator(), c)
	k.checkCommunity(c)
	if len(k.errs) > 0 {
		return nil, k.errs
	}
	return &loaded{file: file, community: c, index: d.index, blocks: d.blocks}, nil
}

// syntaxError turns a yaml.v3 parse error ("yaml: line 3: did not find expected key") into a
// located Error. yaml.v3 reports no column, so the column is 1.
func syntaxError(file string, data []byte, err error) Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	// Errors found at the end of the input carry no line; they are at the last one.
	line := max(1, bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n"))+1)
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if _, scanErr := fmt.Sscanf(n, "%d", &line); scanErr == nil {
				msg = after
			}
		}
	}
	return Error{File: file, Line: line, Column: 1, Msg: "YAML syntax error: " + msg}
}
