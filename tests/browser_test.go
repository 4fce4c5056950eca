package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBrowser runs the demo page's browser suite (tests/browser: Node's test runner driving
// Debian's Chromium with playwright-core) against the binary TestMain built. It is skipped only
// where Chromium is absent, and fails then under CI=true. Its dependencies come from
// scripts/browser_test.sh --deps.
func TestBrowser(t *testing.T) {
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		msg := "Chromium not found at " + chromium + " (apt-get install -y chromium, or set CHROMIUM)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("skipping the browser tests: " + msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("the browser tests need Node.js 20 or later (apt-get install -y nodejs npm)")
	}
	if _, err := os.Stat("browser/node_modules/playwright-core/package.json"); err != nil {
		t.Fatal("tests/browser has no node_modules: run scripts/browser_test.sh --deps")
	}
	if dir := pyodideDir(); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "0.29.5", "pyodide.asm.wasm")); err != nil {
			t.Fatalf("no copy of Pyodide 0.29.5 in %s: run scripts/install_pyodide.sh", dir)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-concurrency=1", "--test-reporter=spec")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "ASSISTANT_BIN="+binary, "CHROMIUM="+chromium, "FORCE_COLOR=0", "NO_COLOR=1")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the browser suite failed (%v) after %s; screenshots and logs are in tests/artifacts:\n%s", err, time.Since(start).Round(time.Second), out)
	}
	// The summary: the suites, the browser's tests and the counts.
	var summary []string
	for line := range strings.SplitSeq(string(out), "\n") {
		s := strings.TrimSpace(line)
		top := len(line)-len(strings.TrimLeft(line, " ")) <= 2
		if top && (strings.HasPrefix(s, "✔") || strings.HasPrefix(s, "﹣") || strings.HasPrefix(s, "ℹ")) {
			summary = append(summary, line)
		}
	}
	t.Logf("browser suite passed in %s:\n%s", time.Since(start).Round(time.Second), strings.Join(summary, "\n"))
}

// pyodideDir is where the server looks for Pyodide by default (routers/demo.go).
func pyodideDir() string {
	if d := os.Getenv("ASSISTANT_PYODIDE_DIR"); d != "" {
		return d
	}
	if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
		return filepath.Join(c, "assistant", "pyodide")
	}
	if h := os.Getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "assistant", "pyodide")
	}
	return ""
}
