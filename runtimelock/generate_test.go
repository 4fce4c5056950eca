package runtimelock

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// zipOf builds a zip holding members (name, content pairs) in the given order. Entries are
// stored, not deflated, so the bytes (and the sha256 in golden files) cannot change with the
// Go release's compressor.
func zipOf(t testing.TB, members ...string) []byte {
	t.Helper()
	if len(members)%2 != 0 {
		t.Fatal("zipOf needs name, content pairs")
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i < len(members); i += 2 {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: members[i], Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(members[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pureWheel is a minimal wheel of one package: METADATA plus name/__init__.py for each module.
func pureWheel(t testing.TB, name, version string, modules ...string) []byte {
	t.Helper()
	distInfo := strings.ReplaceAll(CanonicalName(name), "-", "_") + "-" + version + ".dist-info"
	members := []string{distInfo + "/METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n\nDescription.\n"}
	for _, m := range modules {
		members = append(members, m+"/__init__.py", "# "+m+"\n")
	}
	return zipOf(t, members...)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// lockDir writes a runtime folder: wheels (file name → bytes; nil for none), depends.toml
// (absent when depends is "-") and lock.json (absent when empty). It returns the overlay path.
func lockDir(t *testing.T, wheels map[string][]byte, depends, committed string) string {
	t.Helper()
	dir := t.TempDir()
	if wheels != nil {
		if err := os.Mkdir(filepath.Join(dir, "wheels"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range wheels {
		if err := os.WriteFile(filepath.Join(dir, "wheels", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if depends != "-" {
		if err := os.WriteFile(filepath.Join(dir, "depends.toml"), []byte(depends), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	overlay := filepath.Join(dir, "lock.json")
	if committed != "" {
		if err := os.WriteFile(overlay, []byte(committed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return overlay
}

// TestGenerateGolden runs the generator on one runtime folder per rule of config.md §7.5. The
// golden file holds the overlay it renders, or its messages as "assistant lock" prints them,
// with the temporary folder shown as $DIR.
func TestGenerateGolden(t *testing.T) {
	alpha := pureWheel(t, "Alpha_Pkg", "1.0", "alpha")
	beta := pureWheel(t, "beta", "2.0b1", "beta")
	overlayFor := func(fileName, sha string) string {
		return fmt.Sprintf(`{"packages": {"alpha-pkg": {"name": "Alpha_Pkg", "version": "1.0", "file_name": %q,
			"package_type": "package", "install_dir": "site", "sha256": %q, "imports": ["alpha"], "depends": []}}}`, fileName, sha)
	}
	for _, tc := range []struct {
		name      string
		wheels    map[string][]byte
		depends   string
		committed string
	}{
		{
			name: "ok_two_wheels",
			wheels: map[string][]byte{
				"alpha_pkg-1.0-py3-none-any.whl": alpha,
				"beta-2.0b1-py3-none-any.whl":    beta,
			},
			depends: "alpha-pkg = []\nbeta = [\"numpy\", \"alpha-pkg\", \"matplotlib\"]\n",
		},
		{
			name: "ok_imports",
			wheels: map[string][]byte{"mixed-1.0-py3-none-any.whl": zipOf(t,
				"mixed-1.0.dist-info/METADATA", "name: mixed\r\nversion:   1.0  \r\nName: other\r\n\r\nBody: x\r\n",
				"mixed-1.0.dist-info/RECORD", "",
				"mixed-1.0.data/scripts/tool", "",
				"toplevel_mod.py", "",
				"README.txt", "",
				"pkg/sub/deep.py", "",
				"pkg/__init__.py", "",
				"_private/", "",
				"native.so", "",
			)},
			depends: "mixed = []\n",
		},
		{
			name:    "ok_non_ascii",
			wheels:  map[string][]byte{"cafe-1.0-py3-none-any.whl": pureWheel(t, "Café.𝔸", "1.0+<local>&", "cafe")},
			depends: "\"café-𝔸\" = [\"é\"]\n",
		},
		{
			name:      "ok_new_name_for_new_version",
			wheels:    map[string][]byte{"alpha_pkg-1.1-py3-none-any.whl": pureWheel(t, "Alpha_Pkg", "1.1", "alpha")},
			depends:   "alpha-pkg = []\n",
			committed: overlayFor("alpha_pkg-1.0-py3-none-any.whl", strings.Repeat("0", 64)),
		},
		{
			name:      "ok_same_bytes_same_name",
			wheels:    map[string][]byte{"alpha_pkg-1.0-py3-none-any.whl": alpha},
			depends:   "alpha-pkg = []\n",
			committed: overlayFor("alpha_pkg-1.0-py3-none-any.whl", sha(alpha)),
		},
		{
			name:    "wheel_without_metadata",
			wheels:  map[string][]byte{"x-1.0-py3-none-any.whl": zipOf(t, "x/__init__.py", "", "x-1.0.dist-info/RECORD", "")},
			depends: "x = []\n",
		},
		{
			name: "wheel_with_two_metadata",
			wheels: map[string][]byte{"x-1.0-py3-none-any.whl": zipOf(t,
				"x-1.0.dist-info/METADATA", "Name: x\nVersion: 1.0\n",
				"y-1.0.dist-info/METADATA", "Name: y\nVersion: 1.0\n",
				"nested/x-1.0.dist-info/METADATA", "not counted: two slashes\n")},
			depends: "x = []\n",
		},
		{
			name:    "metadata_not_utf8",
			wheels:  map[string][]byte{"x-1.0-py3-none-any.whl": zipOf(t, "x-1.0.dist-info/METADATA", "Name: x\xff\nVersion: 1.0\n")},
			depends: "x = []\n",
		},
		{
			name:    "metadata_without_version",
			wheels:  map[string][]byte{"x-1.0-py3-none-any.whl": zipOf(t, "x-1.0.dist-info/METADATA", "Name: x\n\nVersion: 1.0\n")},
			depends: "x = []\n",
		},
		{
			name:    "not_a_zip",
			wheels:  map[string][]byte{"x-1.0-py3-none-any.whl": []byte("PK but not really a zip")},
			depends: "x = []\n",
		},
		{
			name: "two_wheels_one_package",
			wheels: map[string][]byte{
				"alpha_pkg-1.0-py3-none-any.whl": alpha,
				"alpha_pkg-1.1-py3-none-any.whl": pureWheel(t, "alpha-pkg", "1.1", "alpha"),
			},
			depends: "alpha-pkg = []\n",
		},
		{
			name:    "depends_has_no_line",
			wheels:  map[string][]byte{"alpha_pkg-1.0-py3-none-any.whl": alpha, "beta-2.0b1-py3-none-any.whl": beta},
			depends: "beta = []\n",
		},
		{
			name:    "depends_names_package_without_wheel",
			wheels:  map[string][]byte{"alpha_pkg-1.0-py3-none-any.whl": alpha},
			depends: "alpha-pkg = []\nzeta = []\ngamma = [\"numpy\"]\n",
		},
		{
			name:    "depends_bad_toml",
			wheels:  map[string][]byte{"alpha_pkg-1.0-py3-none-any.whl": alpha},
			depends: "alpha-pkg = [\n",
		},
		{
			name:    "depends_missing",
			wheels:  map[string][]byte{"alpha_pkg-1.0-py3-none-any.whl": alpha},
			depends: "-",
		},
		{
			name:    "depends_not_lists",
			wheels:  map[string][]byte{"alpha_pkg-1.0-py3-none-any.whl": alpha},
			depends: "alpha-pkg = \"numpy\"\nbeta = [\"numpy\", 3]\n[gamma]\nx = []\n",
		},
		{
			name:    "non_pure_wheel",
			wheels:  map[string][]byte{"alpha_pkg-1.0-cp313-cp313-pyemscripten_2025_0_wasm32.whl": alpha},
			depends: "alpha-pkg = []\n",
		},
		{
			name:    "universal_wheel",
			wheels:  map[string][]byte{"alpha_pkg-1.0-py2.py3-none-any.whl": alpha},
			depends: "alpha-pkg = []\n",
		},
		{
			name:    "no_wheels",
			wheels:  map[string][]byte{},
			depends: "",
		},
		{
			name:    "no_wheels_folder",
			depends: "",
		},
		{
			name:      "new_bytes_under_old_name",
			wheels:    map[string][]byte{"alpha_pkg-1.0-py3-none-any.whl": alpha},
			depends:   "alpha-pkg = []\n",
			committed: overlayFor("alpha_pkg-1.0-py3-none-any.whl", strings.Repeat("0", 64)),
		},
		{
			name:      "committed_overlay_does_not_load",
			wheels:    map[string][]byte{"alpha_pkg-1.0-py3-none-any.whl": alpha},
			depends:   "alpha-pkg = []\n",
			committed: `{"packages": {"alpha-pkg": {"name": "Alpha_Pkg"}}}`,
		},
		{
			name: "every_bad_wheel_at_once",
			wheels: map[string][]byte{
				"a-1.0-py3-none-any.whl": []byte("junk"),
				"b-1.0-py3-none-any.whl": zipOf(t, "b/__init__.py", ""),
				"c-1.0-py3-none-any.whl": pureWheel(t, "c", "1.0", "c"),
				".hidden.whl":            []byte("dot files are not globbed"),
				"notes.txt":              []byte("not a wheel"),
			},
			depends: "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			overlay := lockDir(t, tc.wheels, tc.depends, tc.committed)
			before, _ := os.ReadFile(overlay)
			out, err := Generate(overlay)
			var got []byte
			if err != nil {
				var be *BuildError
				if !errors.As(err, &be) {
					t.Fatalf("error %T is not a *BuildError: %v", err, err)
				}
				var b strings.Builder
				for _, m := range be.Msgs {
					b.WriteString("error: " + m + "\n")
				}
				got = []byte(strings.ReplaceAll(b.String(), filepath.Dir(overlay), "$DIR"))
			} else {
				got = out
				if _, err := Decode(out); err != nil {
					t.Errorf("generated overlay does not decode: %v", err)
				}
			}
			if strings.HasPrefix(tc.name, "ok_") != (err == nil) {
				t.Errorf("error = %v", err)
			}
			if after, _ := os.ReadFile(overlay); !bytes.Equal(before, after) {
				t.Error("Generate changed the overlay file")
			}
			golden(t, "generate/"+tc.name+".golden", got)
		})
	}
}

// TestGenerateDeterministic builds the same folder twice, with the wheels written in opposite
// orders and with different modification times, and expects byte-identical output.
func TestGenerateDeterministic(t *testing.T) {
	wheels := map[string][]byte{
		"alpha_pkg-1.0-py3-none-any.whl": pureWheel(t, "Alpha_Pkg", "1.0", "alpha", "alpha_extra"),
		"beta-2.0-py3-none-any.whl":      pureWheel(t, "beta", "2.0", "beta"),
		"zed-0.1-py3-none-any.whl":       pureWheel(t, "Zed", "0.1", "zed"),
	}
	names := []string{"alpha_pkg-1.0-py3-none-any.whl", "beta-2.0-py3-none-any.whl", "zed-0.1-py3-none-any.whl"}
	depends := []string{"zed = [\"numpy\", \"beta\"]", "beta = []", "alpha-pkg = [\"zed\", \"beta\"]"}

	build := func(order []int, mtime time.Time, dependsOrder []int) []byte {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "wheels"), 0o755); err != nil {
			t.Fatal(err)
		}
		for i, j := range order {
			p := filepath.Join(dir, "wheels", names[j])
			if err := os.WriteFile(p, wheels[names[j]], 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, mtime, mtime.Add(time.Duration(i)*time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		var lines []string
		for _, j := range dependsOrder {
			lines = append(lines, depends[j])
		}
		if err := os.WriteFile(filepath.Join(dir, "depends.toml"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := Generate(filepath.Join(dir, "lock.json"))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a := build([]int{0, 1, 2}, time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC), []int{0, 1, 2})
	b := build([]int{2, 1, 0}, time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC), []int{2, 0, 1})
	if diff := cmp.Diff(string(a), string(b)); diff != "" {
		t.Errorf("outputs differ (-first +second):\n%s", diff)
	}
	golden(t, "generate/deterministic.golden", a)
}

// TestShippedOverlayIsCurrent is "assistant lock --check" on every community's overlay.
func TestShippedOverlayIsCurrent(t *testing.T) {
	overlays, err := filepath.Glob("../communities/*/runtime/lock.json")
	if err != nil || len(overlays) == 0 {
		t.Fatalf("no shipped overlay found: %v", err)
	}
	for _, p := range overlays {
		t.Run(p, func(t *testing.T) {
			want, err := Generate(p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s is not what its wheels and depends.toml produce; run scripts/build_runtime_lock %s (-want +got):\n%s", p, p, diff)
			}
		})
	}
}
