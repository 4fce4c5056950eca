// Package golden compares test output with golden files, and rewrites them when the tests run
// with -update. It is the one copy of that helper for every package's tests.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files instead of comparing with them")

// Update reports whether the tests run with -update.
func Update() bool { return *update }

// Check compares got with the file at path (relative to the test's package directory), or
// under -update writes got there, creating its directory.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	p := filepath.FromSlash(path)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run the package's tests with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", p, diff)
	}
}
