package runtimelock

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// BuildError lists why Generate produced no overlay. Each message is one line of the
// generator's output ("error: " is the command's prefix, not part of the message).
type BuildError struct {
	Msgs []string
}

func (e *BuildError) Error() string {
	return strings.Join(e.Msgs, "\n")
}

// Generate rebuilds the overlay at overlayPath from the wheels/*.whl files and the
// depends.toml beside it (config.md §7.5) and returns it rendered as Render does. It writes
// nothing. Failures are returned as a *BuildError.
//
// Problems are collected per phase, so one run reports every bad wheel: first depends.toml
// and the committed overlay, then each wheel in file-name order, then depends.toml lines no
// wheel uses, and last the check that the result would load.
func Generate(overlayPath string) ([]byte, error) {
	dir := filepath.Dir(overlayPath)

	depends, msgs := readDepends(filepath.Join(dir, "depends.toml"))
	// The committed overlay's file_name → sha256, so a wheel rebuilt under an old name is
	// caught here rather than by a browser holding the old bytes for a year.
	recorded := map[string]string{}
	if data, err := os.ReadFile(overlayPath); err == nil || !errors.Is(err, fs.ErrNotExist) {
		var ov *Overlay
		if err == nil {
			ov, err = Decode(data)
		} else {
			err = pathCause(err)
		}
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("the committed overlay %s does not load, so the wheels cannot be checked against it: %v", overlayPath, err))
		} else {
			for _, p := range ov.Packages {
				recorded[p.FileName] = p.SHA256
			}
		}
	}
	if len(msgs) > 0 {
		return nil, &BuildError{Msgs: msgs}
	}

	names, err := wheelFiles(filepath.Join(dir, "wheels"))
	if err != nil {
		return nil, &BuildError{Msgs: []string{err.Error()}}
	}
	ov := &Overlay{Packages: []Package{}}
	used := map[string]bool{}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, "wheels", name))
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("%s is not a readable wheel: %v", name, pathCause(err)))
			continue
		}
		info, msg := readWheel(name, data)
		if msg != "" {
			msgs = append(msgs, msg)
			continue
		}
		key := CanonicalName(info.name)
		if used[key] {
			msgs = append(msgs, "two wheels provide "+key)
			continue
		}
		used[key] = true
		deps, ok := depends[key]
		if !ok {
			msgs = append(msgs, fmt.Sprintf("%s: depends.toml has no line for %s", name, key))
			continue
		}
		sum := sha256.Sum256(data)
		sha := hex.EncodeToString(sum[:])
		if old, ok := recorded[name]; ok && old != sha {
			msgs = append(msgs, name+" has new bytes under a name already in the overlay. Served wheels are cached by name for a year, so build it as a new version instead.")
			continue
		}
		ov.Packages = append(ov.Packages, Package{
			Key: key, Name: info.name, Version: info.version, FileName: name,
			PackageType: "package", InstallDir: "site", SHA256: sha,
			Imports: info.imports, Depends: deps,
		})
	}
	if len(msgs) > 0 {
		return nil, &BuildError{Msgs: msgs}
	}

	var unused []string
	for _, k := range slices.Sorted(maps.Keys(depends)) {
		if !used[k] {
			unused = append(unused, k)
		}
	}
	if len(unused) > 0 {
		return nil, &BuildError{Msgs: []string{"depends.toml names packages with no wheel: " + strings.Join(unused, ", ")}}
	}

	// The result must pass the same strict decoding the server applies; this is what refuses
	// a platform wheel or an empty wheels/ folder.
	out := ov.Render()
	if _, err := Decode(out); err != nil {
		return nil, &BuildError{Msgs: []string{"the overlay would not load: " + err.Error()}}
	}
	return out, nil
}

// readDepends reads depends.toml: a table of canonical package name → sorted list of the lock
// entries it depends on.
func readDepends(p string) (map[string][]string, []string) {
	var raw map[string]any
	if _, err := toml.DecodeFile(p, &raw); err != nil {
		return nil, []string{fmt.Sprintf("%s cannot be read: %v", p, pathCause(err))}
	}
	out := make(map[string][]string, len(raw))
	var msgs []string
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		items, ok := raw[k].([]any)
		list := make([]string, 0, len(items))
		for _, it := range items {
			s, isStr := it.(string)
			ok = ok && isStr
			list = append(list, s)
		}
		if !ok {
			msgs = append(msgs, fmt.Sprintf("depends.toml: %s must be a list of package names", k))
			continue
		}
		slices.Sort(list)
		out[k] = list
	}
	return out, msgs
}

// wheelFiles lists wheels/*.whl sorted by name, as Python's sorted(glob("*.whl")) does: dot
// files do not match and a missing folder has no wheels.
func wheelFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %v", dir, pathCause(err))
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".whl") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}
