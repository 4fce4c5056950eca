package config

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/tests/golden"
)

func errorText(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error is %T, want ErrorList: %v", err, err)
	}
	return list.Error() + "\n"
}

// TestBadFiles loads each testdata/bad/*.yaml on its own (phases 1 to 3) and compares every
// error with the .want file beside it.
func TestBadFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			_, err := LoadFile(file)
			if err == nil {
				t.Fatalf("%s loaded without error", file)
			}
			golden.Check(t, strings.TrimSuffix(file, ".yaml")+".want", []byte(errorText(t, err)))
		})
	}
}

// TestBadDirs loads each testdata/baddirs/<case>/ as a communities directory, for the rules that
// need folders and files (phase 4), and compares with <case>.want.
func TestBadDirs(t *testing.T) {
	dirs, err := filepath.Glob("testdata/baddirs/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range dirs {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			continue
		}
		n++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			_, err := Load(context.Background(), dir, Options{})
			if err == nil {
				t.Fatalf("%s loaded without error", dir)
			}
			golden.Check(t, dir+".want", []byte(errorText(t, err)))
		})
	}
	if n == 0 {
		t.Fatal("no baddirs cases")
	}
}

// TestGoodFiles loads each testdata/good/*.yaml and compares the decoded value, defaults filled,
// with the .json golden beside it.
func TestGoodFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/good/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no good cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			c, err := LoadFile(file)
			if err != nil {
				t.Fatalf("unexpected errors:\n%v", err)
			}
			got, err := json.MarshalIndent(c, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, strings.TrimSuffix(file, ".yaml")+".json", append(got, '\n'))
		})
	}
}

// TestShippedCommunities loads the real communities/ tree, so a broken shipped config fails
// go test before it reaches assistant validate.
func TestShippedCommunities(t *testing.T) {
	set, err := Load(context.Background(), "../communities", Options{})
	if err != nil {
		t.Fatalf("shipped communities do not load:\n%v", err)
	}
	if len(set.Communities) < 3 {
		t.Fatalf("got %d shipped communities, want at least 3", len(set.Communities))
	}
}

// TestFullConfigNotices: a config using every section, the reference's knowledge-sync sections
// included, loads, and validate's notice names every section this backend accepts but does not
// use.
func TestFullConfigNotices(t *testing.T) {
	c, err := LoadFile("testdata/good/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	notices := unusedSections("full.yaml", c)
	want := "accepted, not used by this backend yet: sync.beps, notebook, extensions.python_plugins"
	if len(notices) != 1 || notices[0].Msg != want {
		t.Fatalf("notices = %+v\nwant %q", notices, want)
	}
	if n := unusedSections("min.yaml", &Community{}); n != nil {
		t.Errorf("a community without those sections got notices %+v", n)
	}
}
