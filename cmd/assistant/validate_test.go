package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"assistant"}, args...), func(string) string { return "" }, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestValidateTenMistakes is the acceptance check: a directory holding a config with ten
// different mistakes prints all of them, each with its line, and exits 1.
func TestValidateTenMistakes(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../config/testdata/bad/ten_mistakes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The folder must be named like the id for phase 4; the id itself is one of the mistakes.
	if err := os.MkdirAll(filepath.Join(dir, "Ten_Mistakes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Ten_Mistakes", "config.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "validate", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want nothing", stdout)
	}
	wantLines := []string{":2:1: id:", ":5:1: status:", ":6:16: cors_origins[0]:", ":7:1: default_model:", ":9:3: widget.theme_color:",
		":10:3: widget.launcher_size:", ":14:5: runtime.python.lockfile:", ":15:5: runtime.python.preload_on:",
		":16:19: runtime.python.fetch_allow[0]:", ":18:7: runtime.python.limits.images:", ":21:7: extensions.client_tools[0].name:"}
	for _, w := range wantLines {
		if !strings.Contains(stderr, filepath.Join(dir, "Ten_Mistakes", "config.yaml")+w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if !strings.HasSuffix(stderr, "11 errors\n") {
		t.Errorf("stderr does not end with the count:\n%s", stderr)
	}
}

func TestValidateShipped(t *testing.T) {
	code, stdout, stderr := runCmd(t, "validate", "../../communities")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"bids: no client tools\n",
		"nemar: client tools execute_code; Pyodide 0.29.5, 4 preloaded; differs per deployment: runtime.python.fetch_allow, runtime.python.prelude, extensions.mcp_servers[0].url\n",
		"communities/nemar/config.yaml: notice: accepted, not used by this backend yet: notebook\n",
		"3 communities valid\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

func TestValidateUsage(t *testing.T) {
	if code, _, _ := runCmd(t, "validate", "a", "b"); code != 2 {
		t.Errorf("two directories: exit %d, want 2", code)
	}
	if code, _, stderr := runCmd(t, "validate", "/nonexistent-dir"); code != 1 || !strings.Contains(stderr, "cannot read the communities directory") {
		t.Errorf("missing dir: exit %d, stderr %q", code, stderr)
	}
}
