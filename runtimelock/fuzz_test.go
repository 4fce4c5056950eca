package runtimelock

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzOverlay: Decode never panics; it returns either an overlay or a *DecodeError with at
// least one problem; and anything it accepts renders to JSON that decodes to the same overlay
// (packages sorted by key, as Render writes them) and renders to the same bytes again.
func FuzzOverlay(f *testing.F) {
	files, _ := filepath.Glob("testdata/overlay/*.json")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"packages": {"a": {"name": "A", "version": "", "file_name": "a-1-py3-none-any.whl", "package_type": "package", "install_dir": "site", "sha256": "` + strings.Repeat("f", 64) + `", "imports": [], "depends": ["\u0000"]}}}`))
	f.Add([]byte(`{"packages": {"\ud800": {}}}`))
	f.Add([]byte(`{"packages": {"a": {"name": "a", "name": "a"}}}`))
	f.Add([]byte("\xef\xbb\xbf{}"))

	f.Fuzz(func(t *testing.T, data []byte) {
		ov, err := Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || len(de.Problems) == 0 || ov != nil {
				t.Fatalf("Decode = %v, %v (%T)", ov, err, err)
			}
			return
		}
		if len(ov.Packages) == 0 {
			t.Fatal("accepted an overlay with no packages")
		}
		out := ov.Render()
		again, err := Decode(out)
		if err != nil {
			t.Fatalf("rendered overlay does not decode: %v\n%s", err, out)
		}
		want := ov.Clone()
		slices.SortStableFunc(want.Packages, func(a, b Package) int { return strings.Compare(a.Key, b.Key) })
		if diff := cmp.Diff(want, again); diff != "" {
			t.Fatalf("round trip changed the overlay (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(string(out), string(again.Render())); diff != "" {
			t.Fatalf("second rendering differs (-first +second):\n%s", diff)
		}
	})
}
