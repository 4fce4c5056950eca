package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/tests/golden"
)

// engineDir finds the Python engine, or skips; under CI a missing engine fails.
func engineDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("ASSISTANT_ENGINE_DIR")
	if dir == "" {
		if out, err := exec.Command("../../scripts/build_python_wasi.sh", "--print-dir").Output(); err == nil {
			dir = strings.TrimSpace(string(out))
		}
	}
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("the Python engine is not built under CI; run make engine")
		}
		t.Skip("the Python engine is not built; run make engine")
	}
	return dir
}

// TestPreludeCompileChecks runs validate with the real engine: every deployment's prelude is
// compiled with top-level await allowed, and a SyntaxError is reported at its YAML line.
func TestPreludeCompileChecks(t *testing.T) {
	dir := engineDir(t)
	t.Setenv("ASSISTANT_ENGINE_DIR", dir)
	run := func(communities string) (int, string, string) {
		t.Helper()
		return runCmdEnv(t, map[string]string{"ASSISTANT_ENGINE_DIR": dir}, "validate", communities)
	}
	code, stdout, stderr := run("testdata/preludes/good")
	if code != 0 || strings.Contains(stdout, "not compile-checked") {
		t.Fatalf("good: exit %d\n%s%s", code, stdout, stderr)
	}
	code, _, stderr = run("testdata/preludes/bad")
	if code != 1 {
		t.Fatalf("bad: exit %d\n%s", code, stderr)
	}
	golden.Check(t, "testdata/preludes/bad.want", []byte(stderr))
}

func runCmdEnv(t *testing.T, environ map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	code = run(t.Context(), append([]string{"assistant"}, args...), func(k string) string { return environ[k] }, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}
