package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets this test binary be the worker that assistant run and serve start (they start
// os.Executable() as `sandbox-worker`): started so, it is that command, and it first records
// its arguments in $TMPDIR/sandbox-worker.args (TMPDIR is one of the variables a worker keeps),
// so a test can tell how it was started.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sandbox-worker" {
		_ = os.WriteFile(filepath.Join(os.TempDir(), "sandbox-worker.args"), []byte(strings.Join(os.Args[1:], " ")), 0o644)
		os.Exit(run(context.Background(), append([]string{"assistant"}, os.Args[1:]...), os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
