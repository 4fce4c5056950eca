package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/osc-assistant/assistant/limits"
)

// countingChecker compiles nothing and records what it was asked to check.
type countingChecker struct {
	mu      sync.Mutex
	sources []string
}

func (c *countingChecker) CheckSyntax(_ context.Context, src string) (*SyntaxError, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources = append(c.sources, src)
	return nil, nil
}

// TestOverlongPreludeNotCompiled: a prelude over limits.MaxPreludeChars is an error and is not
// handed to the compile check, which would hold its memory for nothing. (The phases already
// stop before the compile checks when a file has errors; the check in crosscheck.go keeps the
// property should that change.)
func TestOverlongPreludeNotCompiled(t *testing.T) {
	src, err := os.ReadFile("../communities/nemar/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("        x = 1\n", int(limits.MaxPreludeChars)/6)
	cfg := strings.Replace(string(src), "      production: |\n        import osa\n", "      production: |\n"+long+"        import osa\n", 1)
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "nemar"), os.DirFS("../communities/nemar")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nemar", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	py := &countingChecker{}
	_, err = Load(context.Background(), dir, Options{Python: py})
	if err == nil || !strings.Contains(err.Error(), "runtime.python.prelude[production]: must be at most") {
		t.Fatalf("Load: %v", err)
	}
	for _, s := range py.sources {
		if len(s) > int(limits.MaxPreludeChars) {
			t.Errorf("a %d-byte prelude was compile-checked", len(s))
		}
	}
}
