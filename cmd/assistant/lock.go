package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/osc-assistant/assistant/runtimelock"
)

const lockUsage = `usage: assistant lock [--check] OVERLAY.json

Regenerate a Pyodide lock overlay from the wheels/*.whl files and depends.toml beside it.
With --check, write nothing and fail if the file is not what they produce.
`

// runLock is "assistant lock" (config.md §7.5, OSA's scripts/build_runtime_lock.py): exit 0
// when the overlay was written or is current, 1 on any problem, 2 on a usage error.
func runLock(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var check, help bool
	var overlay []string
	var bad []string
	dashdash := false
	for _, a := range args {
		switch {
		case dashdash || a == "-" || !strings.HasPrefix(a, "-"):
			overlay = append(overlay, a)
		case a == "--":
			dashdash = true
		case a == "--check" || a == "-check":
			check = true
		case a == "-h" || a == "--help" || a == "-help":
			help = true
		default:
			bad = append(bad, a)
		}
	}
	switch {
	case help:
		fmt.Fprint(stdout, lockUsage)
		return 0
	case len(bad) > 0:
		return lockUsageError(stderr, "unrecognized arguments: "+strings.Join(bad, " "))
	case len(overlay) == 0:
		return lockUsageError(stderr, "the overlay file is required")
	case len(overlay) > 1:
		return lockUsageError(stderr, "unrecognized arguments: "+strings.Join(overlay[1:], " "))
	}
	path := overlay[0]

	out, err := runtimelock.Generate(path)
	if err != nil {
		var be *runtimelock.BuildError
		if errors.As(err, &be) {
			for _, m := range be.Msgs {
				fmt.Fprintf(stderr, "error: %s\n", m)
			}
		} else {
			fmt.Fprintf(stderr, "error: %v\n", err)
		}
		return 1
	}

	if check {
		cur, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		if !bytes.Equal(cur, out) {
			fmt.Fprintf(stderr, "%s is not what its wheels and depends.toml produce; regenerate it\n", path)
			return 1
		}
		fmt.Fprintf(stdout, "%s is current\n", path)
		return 0
	}
	if err := ctx.Err(); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if err := writeFileAtomic(path, out); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", path)
	return 0
}

func lockUsageError(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "%sassistant lock: error: %s\n", lockUsage, msg)
	return 2
}

// writeFileAtomic replaces path with data through a temporary file in the same folder and a
// rename, so a reader (or a failed run) never sees half a file. An existing file keeps its
// permissions; a new one gets 0644.
func writeFileAtomic(path string, data []byte) (err error) {
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
