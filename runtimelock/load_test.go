package runtimelock

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// community writes a community folder holding runtime/lock.json for the given wheels, all
// recorded with their true sha256, and returns the folder.
func community(t *testing.T, wheels map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	rt := filepath.Join(dir, "runtime")
	if err := os.MkdirAll(filepath.Join(rt, "wheels"), 0o755); err != nil {
		t.Fatal(err)
	}
	var depends strings.Builder
	for name, data := range wheels {
		if err := os.WriteFile(filepath.Join(rt, "wheels", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		key := CanonicalName(strings.SplitN(name, "-", 2)[0])
		depends.WriteString(`"` + key + "\" = []\n")
	}
	if err := os.WriteFile(filepath.Join(rt, "depends.toml"), []byte(depends.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Generate(filepath.Join(rt, "lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rt, "lock.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadShipped(t *testing.T) {
	v, err := Load("../communities/nemar", "runtime/lock.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../communities/nemar/runtime/lock.json")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(v.JSON())); diff != "" {
		t.Errorf("JSON differs from the committed overlay (-file +JSON):\n%s", diff)
	}
	for _, p := range v.Overlay().Packages {
		data, sum, ok := v.Wheel(p.FileName)
		if !ok || sum != p.SHA256 || sha(data) != p.SHA256 {
			t.Errorf("Wheel(%q) = %d bytes, %q, %v; want the bytes of sha256 %s", p.FileName, len(data), sum, ok, p.SHA256)
		}
	}
}

func TestLoadLookupOnly(t *testing.T) {
	dir := community(t, map[string][]byte{"a-1.0-py3-none-any.whl": pureWheel(t, "a", "1.0", "a")})
	writeFile(t, filepath.Join(dir, "config.yaml"), []byte("id: x\n"))
	v, err := Load(dir, "runtime/lock.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := v.Wheel("a-1.0-py3-none-any.whl"); !ok {
		t.Error("the listed wheel is not served")
	}
	// Only names the overlay lists are served: anything else misses, whatever is on disk.
	for _, name := range []string{"", "config.yaml", "../config.yaml", "../../config.yaml", "lock.json", "../lock.json",
		"runtime/lock.json", "wheels/a-1.0-py3-none-any.whl", "./a-1.0-py3-none-any.whl", "A-1.0-py3-none-any.whl", "depends.toml"} {
		if data, _, ok := v.Wheel(name); ok || data != nil {
			t.Errorf("Wheel(%q) = %d bytes, %v; want a miss", name, len(data), ok)
		}
	}
	ov := v.Overlay()
	ov.Packages[0].Imports[0] = "changed"
	ov.Packages[0].FileName = "changed"
	if got := v.Overlay().Packages[0]; got.Imports[0] != "a" || got.FileName != "a-1.0-py3-none-any.whl" {
		t.Errorf("changing Overlay()'s copy changed the verified overlay: %+v", got)
	}
	j := v.JSON()
	j[0] = 'X'
	if v.JSON()[0] != '{' {
		t.Error("changing JSON()'s copy changed the verified overlay")
	}
	var nilV *Verified
	if _, _, ok := nilV.Wheel("a-1.0-py3-none-any.whl"); ok || nilV.JSON() != nil || nilV.Overlay() != nil {
		t.Error("a nil *Verified must serve nothing")
	}
}

// TestLoadErrors checks the exact config.md §7.3 messages, with the community folder as $DIR.
func TestLoadErrors(t *testing.T) {
	a := pureWheel(t, "a", "1.0", "a")
	b := pureWheel(t, "b", "1.0", "b")
	for _, tc := range []struct {
		name     string
		lockfile string
		setup    func(t *testing.T, dir string)
		want     string
		overlay  bool // a *Verified with the overlay comes back with the error
		decode   bool // the error wraps a *DecodeError
	}{
		{
			name: "tampered wheel", lockfile: "runtime/lock.json", overlay: true,
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "runtime/wheels/a-1.0-py3-none-any.whl"), append(bytes.Clone(a), 0))
			},
			want: "a: wheel $DIR/runtime/wheels/a-1.0-py3-none-any.whl has sha256 " + sha(append(bytes.Clone(a), 0)) +
				", not the " + sha(a) + " its entry records. A changed wheel needs a new version, because served wheels are cached by name for a year.",
		},
		{
			name: "missing wheel and tampered wheel", lockfile: "runtime/lock.json", overlay: true,
			setup: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "runtime/wheels/a-1.0-py3-none-any.whl")); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dir, "runtime/wheels/b-1.0-py3-none-any.whl"), a)
			},
			want: "a: wheel $DIR/runtime/wheels/a-1.0-py3-none-any.whl cannot be read: no such file or directory\n" +
				"b: wheel $DIR/runtime/wheels/b-1.0-py3-none-any.whl has sha256 " + sha(a) + ", not the " + sha(b) +
				" its entry records. A changed wheel needs a new version, because served wheels are cached by name for a year.",
		},
		{
			name: "overlay missing", lockfile: "runtime/other.json",
			want: "lock overlay $DIR/runtime/other.json cannot be read: no such file or directory",
		},
		{
			name: "overlay is a folder", lockfile: "runtime/wheels.json",
			setup: func(t *testing.T, dir string) {
				if err := os.Mkdir(filepath.Join(dir, "runtime/wheels.json"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			want: "lock overlay $DIR/runtime/wheels.json cannot be read: is a directory",
		},
		{
			name: "overlay invalid", lockfile: "runtime/lock.json", decode: true,
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "runtime/lock.json"), []byte(`{"packages": {}, "info": {}}`))
			},
			want: "lock overlay $DIR/runtime/lock.json is not a valid overlay: packages: a lock overlay with no packages adds nothing; remove the lockfile key; info: Extra inputs are not permitted",
		},
		{
			name: "overlay symlink escaping the community", lockfile: "runtime/lock.json",
			setup: func(t *testing.T, dir string) {
				outside := filepath.Join(t.TempDir(), "lock.json")
				data, err := os.ReadFile(filepath.Join(dir, "runtime/lock.json"))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, outside, data)
				symlink(t, outside, filepath.Join(dir, "runtime/lock.json"))
			},
			want: "lock overlay $DIR/runtime/lock.json cannot be read: path escapes from parent",
		},
		{
			name: "wheels folder symlink escaping the community", lockfile: "runtime/lock.json", overlay: true,
			setup: func(t *testing.T, dir string) {
				outside := t.TempDir()
				for _, n := range []string{"a-1.0-py3-none-any.whl", "b-1.0-py3-none-any.whl"} {
					data, err := os.ReadFile(filepath.Join(dir, "runtime/wheels", n))
					if err != nil {
						t.Fatal(err)
					}
					writeFile(t, filepath.Join(outside, n), data)
				}
				if err := os.RemoveAll(filepath.Join(dir, "runtime/wheels")); err != nil {
					t.Fatal(err)
				}
				symlink(t, outside, filepath.Join(dir, "runtime/wheels"))
			},
			want: "a: wheel $DIR/runtime/wheels/a-1.0-py3-none-any.whl cannot be read: path escapes from parent\n" +
				"b: wheel $DIR/runtime/wheels/b-1.0-py3-none-any.whl cannot be read: path escapes from parent",
		},
		{name: "absolute lockfile", lockfile: "/etc/lock.json", want: "lockfile '/etc/lock.json': it must be relative to the community's folder"},
		{name: "parent lockfile", lockfile: "../other/lock.json", want: "lockfile '../other/lock.json': it must be a plain relative path, with no empty, '.' or '..' segments"},
		{name: "inner parent", lockfile: "runtime/../../lock.json", want: "lockfile 'runtime/../../lock.json': it must be a plain relative path, with no empty, '.' or '..' segments"},
		{name: "dot lockfile", lockfile: "./lock.json", want: "lockfile './lock.json': it must be a plain relative path, with no empty, '.' or '..' segments"},
		{name: "empty lockfile", lockfile: "", want: "lockfile '': it must be a plain relative path, with no empty, '.' or '..' segments"},
		{name: "backslash lockfile", lockfile: `runtime\lock.json`, want: `lockfile 'runtime\\lock.json': use forward slashes`},
		{name: "yaml lockfile", lockfile: "runtime/lock.yaml", want: "lockfile 'runtime/lock.yaml': it must be a .json file"},
		{name: "dotfile lockfile", lockfile: "runtime/.json", want: "lockfile 'runtime/.json': it must be a .json file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := community(t, map[string][]byte{"a-1.0-py3-none-any.whl": a, "b-1.0-py3-none-any.whl": b})
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			v, err := Load(dir, tc.lockfile)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if got := strings.ReplaceAll(err.Error(), dir, "$DIR"); got != tc.want {
				t.Errorf("error:\n got %s\nwant %s", got, tc.want)
			}
			var de *DecodeError
			if errors.As(err, &de) != tc.decode {
				t.Errorf("errors.As(*DecodeError) = %v, want %v", !tc.decode, tc.decode)
			}
			if (v != nil) != tc.overlay {
				t.Fatalf("Load returned a *Verified = %v, want %v", v != nil, tc.overlay)
			}
			if v != nil {
				if len(v.Overlay().Packages) != 2 {
					t.Errorf("the overlay is not usable: %+v", v.Overlay())
				}
				// Failing closed: not even the wheel that did verify is served.
				for _, name := range []string{"a-1.0-py3-none-any.whl", "b-1.0-py3-none-any.whl"} {
					if _, _, ok := v.Wheel(name); ok {
						t.Errorf("Wheel(%q) served from an overlay that did not verify", name)
					}
				}
				if v.JSON() != nil {
					t.Error("JSON() of an overlay that did not verify is not nil")
				}
			}
		})
	}
}

func TestLoadSymlinkInsideCommunity(t *testing.T) {
	dir := community(t, map[string][]byte{"a-1.0-py3-none-any.whl": pureWheel(t, "a", "1.0", "a")})
	if err := os.Rename(filepath.Join(dir, "runtime/wheels"), filepath.Join(dir, "store")); err != nil {
		t.Fatal(err)
	}
	symlink(t, "../store", filepath.Join(dir, "runtime/wheels"))
	if _, err := Load(dir, "runtime/lock.json"); err != nil {
		t.Errorf("a symlink that stays inside the community folder was refused: %v", err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
}

func TestCache(t *testing.T) {
	a := pureWheel(t, "a", "1.0", "a")
	wheelPath := func(dir string) string { return filepath.Join(dir, "runtime/wheels/a-1.0-py3-none-any.whl") }

	t.Run("success is cached and serves the hashed bytes", func(t *testing.T) {
		var c Cache
		dir := community(t, map[string][]byte{"a-1.0-py3-none-any.whl": a})
		v1, err := c.Load(dir, "runtime/lock.json")
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, wheelPath(dir), []byte("changed on disk"))
		v2, err := c.Load(dir, "runtime/lock.json")
		if err != nil || v2 != v1 {
			t.Fatalf("second Load = %p, %v; want the cached %p", v2, err, v1)
		}
		if data, _, _ := v2.Wheel("a-1.0-py3-none-any.whl"); !bytes.Equal(data, a) {
			t.Error("the cache serves bytes other than the ones it hashed")
		}
	})

	t.Run("failure is cached", func(t *testing.T) {
		var c Cache
		dir := community(t, map[string][]byte{"a-1.0-py3-none-any.whl": a})
		writeFile(t, wheelPath(dir), []byte("tampered"))
		_, err1 := c.Load(dir, "runtime/lock.json")
		if err1 == nil {
			t.Fatal("a tampered wheel verified")
		}
		writeFile(t, wheelPath(dir), a) // fixed on disk: still refused until the overlay changes
		v, err2 := c.Load(dir, "runtime/lock.json")
		if err2 != err1 {
			t.Errorf("second Load error = %v; want the cached %v", err2, err1)
		}
		if _, _, ok := v.Wheel("a-1.0-py3-none-any.whl"); ok {
			t.Error("a cached failure serves a wheel")
		}
		if _, err := Load(dir, "runtime/lock.json"); err != nil {
			t.Errorf("uncached Load of the fixed folder: %v", err)
		}
	})

	t.Run("a new overlay is verified anew", func(t *testing.T) {
		var c Cache
		dir := community(t, map[string][]byte{"a-1.0-py3-none-any.whl": a})
		v1, err := c.Load(dir, "runtime/lock.json")
		if err != nil {
			t.Fatal(err)
		}
		// A new version is committed: new wheel, regenerated overlay.
		a11 := pureWheel(t, "a", "1.1", "a")
		if err := os.Remove(wheelPath(dir)); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "runtime/wheels/a-1.1-py3-none-any.whl"), a11)
		out, err := Generate(filepath.Join(dir, "runtime/lock.json"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "runtime/lock.json"), out)
		v2, err := c.Load(dir, "runtime/lock.json")
		if err != nil {
			t.Fatal(err)
		}
		if v2 == v1 {
			t.Fatal("the cache returned the old overlay for new overlay bytes")
		}
		if data, _, ok := v2.Wheel("a-1.1-py3-none-any.whl"); !ok || !bytes.Equal(data, a11) {
			t.Error("the new wheel is not served")
		}
		if _, _, ok := v2.Wheel("a-1.0-py3-none-any.whl"); ok {
			t.Error("the old wheel is still served")
		}
	})

	t.Run("folders are cached separately", func(t *testing.T) {
		var c Cache
		good := community(t, map[string][]byte{"a-1.0-py3-none-any.whl": a})
		bad := community(t, map[string][]byte{"a-1.0-py3-none-any.whl": a})
		writeFile(t, wheelPath(bad), []byte("tampered"))
		if _, err := c.Load(bad, "runtime/lock.json"); err == nil {
			t.Fatal("a tampered wheel verified")
		}
		if _, err := c.Load(good, "runtime/lock.json"); err != nil {
			t.Errorf("same lockfile and overlay bytes in another folder: %v", err)
		}
	})

	t.Run("concurrent loads verify once", func(t *testing.T) {
		var c Cache
		dir := community(t, map[string][]byte{"a-1.0-py3-none-any.whl": a})
		var wg sync.WaitGroup
		got := make([]*Verified, 16)
		for i := range got {
			wg.Go(func() {
				v, err := c.Load(dir, "runtime/lock.json")
				if err != nil {
					t.Error(err)
				}
				got[i] = v
			})
		}
		wg.Wait()
		for _, v := range got[1:] {
			if v != got[0] {
				t.Fatal("concurrent loads of the same overlay returned different results")
			}
		}
	})

	t.Run("an unreadable overlay is not cached", func(t *testing.T) {
		var c Cache
		dir := community(t, map[string][]byte{"a-1.0-py3-none-any.whl": a})
		lock := filepath.Join(dir, "runtime/lock.json")
		data, err := os.ReadFile(lock)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(lock); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Load(dir, "runtime/lock.json"); err == nil {
			t.Fatal("a missing overlay loaded")
		}
		writeFile(t, lock, data)
		if _, err := c.Load(dir, "runtime/lock.json"); err != nil {
			t.Errorf("after the overlay appeared: %v", err)
		}
	})
}
