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

const buildWheelUsage = `usage: assistant build-wheel SRC_DIR OUT_DIR

Build a reproducible pure-Python (py3-none-any) wheel from SRC_DIR, whose pyproject.toml
gives the name, version, description and requires-python, into OUT_DIR.
`

// runBuildWheel is "assistant build-wheel": exit 0 when the wheel was written or already held
// the same bytes, 1 on any problem, 2 on a usage error. It never replaces a wheel with
// different bytes under the same name, because served wheels are cached by name for a year.
func runBuildWheel(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var pos []string
	for _, a := range args {
		switch {
		case a == "-h" || a == "--help" || a == "-help":
			fmt.Fprint(stdout, buildWheelUsage)
			return 0
		case strings.HasPrefix(a, "-") && a != "-":
			fmt.Fprintf(stderr, "%sassistant build-wheel: error: unrecognized arguments: %s\n", buildWheelUsage, a)
			return 2
		}
		pos = append(pos, a)
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "%sassistant build-wheel: error: SRC_DIR and OUT_DIR are required\n", buildWheelUsage)
		return 2
	}
	src, outDir := pos[0], pos[1]

	spec, err := runtimelock.ReadWheelSpec(src)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	name, data, err := runtimelock.BuildWheel(src, spec)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	out := filepath.Join(outDir, name)
	old, err := os.ReadFile(out)
	switch {
	case err == nil && bytes.Equal(old, data):
		fmt.Fprintf(stdout, "%s is current\n", out)
		return 0
	case err == nil:
		fmt.Fprintf(stderr, "error: %s already exists with other bytes. Served wheels are cached by name for a year, so raise the version in %s instead.\n",
			out, filepath.Join(src, "pyproject.toml"))
		return 1
	case !errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if err := ctx.Err(); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if err := writeFileAtomic(out, data); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", out)
	return 0
}
