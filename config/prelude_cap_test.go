package config

import (
	"context"
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

// TestOverlongPreludeNotCompiled: a prelude over limits.MaxPreludeChars is not handed to the
// compile check, which would hold its memory for nothing (the length rule reports it), while one
// within the cap is.
func TestOverlongPreludeNotCompiled(t *testing.T) {
	long := strings.Repeat("x = 1\n", int(limits.MaxPreludeChars)/6+1)
	py := &countingChecker{}
	k := &checker{}
	for _, src := range []string{long, "x = 1\n"} {
		p := Single(src)
		k.checkPreludeCompiles(context.Background(), py, &p)
	}
	if len(py.sources) != 1 || py.sources[0] != "x = 1\n" {
		t.Errorf("compile-checked %d sources, want only the short one", len(py.sources))
	}
}
