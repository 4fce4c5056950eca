package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/osc-assistant/assistant/limits"
)

// FuzzLoad feeds arbitrary bytes to the loader: it must never panic, and every error must name
// the file and, except for the "… and N more" line, a line number.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.yaml")
	shipped, _ := filepath.Glob("../communities/*/config.yaml")
	for _, file := range append(seeds, shipped...) {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, errs := decodeBytes("f.yaml", data)
		if l == nil && len(errs) == 0 {
			t.Fatal("no community and no error")
		}
		for _, e := range errs {
			if e.File != "f.yaml" {
				t.Fatalf("error without the file: %+v", e)
			}
			if e.Line < 1 && !strings.HasPrefix(e.Msg, "… and ") {
				t.Fatalf("error without a line: %+v", e)
			}
		}
		if l != nil {
			if py := l.community.python(); py != nil {
				checkUploadsAccepted(t, py.Uploads)
			}
		}
	})
}

// checkUploadsAccepted fails when a config that loaded has a runtime.python.uploads block the
// server could not honour: the upload routes rely on these bounds without checking them again.
func checkUploadsAccepted(t *testing.T, u Uploads) {
	t.Helper()
	b := limits.Uploads
	in := func(v int, r limits.Bound) bool { return v >= r.Min && v <= r.Max }
	if !in(u.MaxFileMB, b.MaxFileMB) || !in(u.MaxSessionMB, b.MaxSessionMB) || !in(u.MaxFiles, b.MaxFiles) || u.MaxSessionMB < u.MaxFileMB {
		t.Fatalf("accepted uploads out of bounds: %+v", u)
	}
	if len(u.Types) == 0 {
		t.Fatalf("accepted uploads with no types: %+v", u)
	}
	for i, typ := range u.Types {
		if !slices.Contains(limits.UploadTypes, typ) || slices.Contains(u.Types[:i], typ) {
			t.Fatalf("accepted uploads type %q: %+v", typ, u)
		}
	}
}

// TestValidatorTagsHaveMessages walks every validate tag of the config types and fails when a
// rule has no entry in validatorMessages, so an author never sees validator's own wording.
func TestValidatorTagsHaveMessages(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(tp reflect.Type) {
		for tp.Kind() == reflect.Pointer || tp.Kind() == reflect.Slice || tp.Kind() == reflect.Map {
			tp = tp.Elem()
		}
		if tp.Kind() != reflect.Struct || seen[tp] {
			return
		}
		seen[tp] = true
		for i := range tp.NumField() {
			f := tp.Field(i)
			for rule := range strings.SplitSeq(f.Tag.Get("validate"), ",") {
				name, _, _ := strings.Cut(rule, "=")
				switch name {
				case "", "-", "omitempty", "dive", "required":
					continue
				}
				if validatorMessages[name] == nil {
					t.Errorf("%s.%s: validate rule %q has no message", tp.Name(), f.Name, name)
				}
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Community{}))
	if len(seen) < 20 {
		t.Fatalf("walked only %d types; the walk is broken", len(seen))
	}
}

func TestErrorListSortAndCap(t *testing.T) {
	var l ErrorList
	for i := 60; i > 0; i-- {
		l = append(l, Error{File: "b.yaml", Line: i, Column: 1, Path: "x", Msg: "m"})
	}
	l = append(l, Error{File: "a.yaml", Line: 3, Column: 2, Msg: "first"}, Error{File: "a.yaml", Line: 3, Column: 2, Msg: "first"})
	got := l.sorted()
	if got[0].File != "a.yaml" || got[1].File != "b.yaml" || got[1].Line != 1 {
		t.Fatalf("not sorted by file then line: %v, %v", got[0], got[1])
	}
	if n := len(got); n != 1+maxErrorsPerFile+1 {
		t.Fatalf("got %d entries, want duplicates removed and b.yaml capped at %d plus a summary", n, maxErrorsPerFile)
	}
	if last := got[len(got)-1].Error(); last != "b.yaml: … and 10 more" {
		t.Fatalf("summary line = %q", last)
	}
	if s := got[0].Error(); s != "a.yaml:3:2: first" {
		t.Fatalf("rendering = %q", s)
	}
}

// FuzzPathIndex: every path the shape phase records points inside the document, so every
// error located through the index names a real line and column.
func FuzzPathIndex(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/good/*.yaml")
	for _, file := range seeds {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := newDecoder("f.yaml", data)
		var root yaml.Node
		if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
			return
		}
		d.decode(root.Content[0], reflectValue(&Community{}), "", false)
		lines := strings.Split(string(data), "\n")
		for p, at := range d.index {
			if at.line < 1 || at.line > len(lines) || at.col < 1 || at.col > len(lines[at.line-1])+1 {
				t.Fatalf("path %q at %d:%d is outside the document (%d lines)", p, at.line, at.col, len(lines))
			}
		}
	})
}
