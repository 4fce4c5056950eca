// Command assistant serves community AI assistants and checks their configuration.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: assistant <command> [arguments]

commands:
  serve                   run the HTTP server (see "assistant serve -h")
  validate [DIR]          load and check every community config (default: communities)
  lock [--check] OVERLAY  regenerate (or check) a Pyodide lock overlay from the wheels beside it
  build-wheel SRC OUT     build a pure-Python wheel reproducibly from SRC/pyproject.toml into OUT
  run --community ID FILE run Python under a community's policy in the server's runtime; print the result
  sync [--community ID] [--full] TYPE  sync knowledge: github, papers, docstrings, discourse, mailman, faq, all; or init
  version                 print the version
`

// run is the whole program; main only supplies the process's streams, so tests can call it.
// It returns the process exit code: 0 success, 1 failure, 2 usage error.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[1], args[2:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "validate":
		return runValidate(ctx, rest, getenv, stdout, stderr)
	case "lock":
		return runLock(ctx, rest, stdout, stderr)
	case "build-wheel":
		return runBuildWheel(ctx, rest, stdout, stderr)
	case "run":
		return runRun(ctx, rest, getenv, stdin, stdout, stderr)
	case "sync":
		return runSync(ctx, rest, getenv, stdout, stderr)
	case "sandbox-worker": // started by the server's Python worker pool, speaking on stdin/stdout
		return runSandboxWorker(ctx, rest, getenv, stdin, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "assistant %s (%s)\n", version, commit)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "assistant: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

// version and commit are set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

// firstEnv returns the first of the named environment variables that is set (trimmed): our
// name first, then the reference's alias.
func firstEnv(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v
		}
	}
	return ""
}
