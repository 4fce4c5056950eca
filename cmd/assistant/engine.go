package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/sandbox"
)

// openEngine compiles the server's Python engine from dir (built by scripts/build_python_wasi.sh),
// with wazero's on-disk compilation cache, so a restart does not recompile. An empty dir means
// no engine: preludes are then not compile-checked.
// memoryMB caps one run's memory (0: the engine's default); it matters for runs in this process.
func openEngine(ctx context.Context, dir, cacheDir string, memoryMB int, log *slog.Logger) (*sandbox.Engine, error) {
	if dir == "" {
		return nil, nil
	}
	if cacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		cacheDir = filepath.Join(base, "assistant", "wazero")
	}
	opts := sandbox.Options{Dir: dir, CacheDir: cacheDir, Logger: log}
	if memoryMB > 0 {
		opts.MemoryLimitPages = uint32(memoryMB) << 20 / sandbox.PageSize
	}
	eng, err := sandbox.New(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("python engine in %s: %w", dir, err)
	}
	return eng, nil
}

// pythonChecker lets config compile-check preludes with the engine.
type pythonChecker struct{ eng *sandbox.Engine }

func (p pythonChecker) CheckSyntax(ctx context.Context, source string) (*config.SyntaxError, error) {
	se, err := p.eng.CheckSyntax(ctx, source)
	if se == nil || err != nil {
		return nil, err
	}
	return &config.SyntaxError{Line: se.Line, Msg: se.Msg}, nil
}

// loadOptions are the config load options for an engine that may be nil.
func loadOptions(eng *sandbox.Engine) config.Options {
	if eng == nil {
		return config.Options{}
	}
	return config.Options{Python: pythonChecker{eng}}
}
