package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// SyntaxError is where and why Python refused a source.
type SyntaxError struct {
	// Line is 1-based within the source; 0 when Python gave no line.
	Line int
	// Offset is the 1-based column Python points at; 0 when it gave none.
	Offset int
	// Msg is the exception's message without its location, e.g. "expected ':'"; Python prints
	// it as "expected ':' (<prelude>, line 2)".
	Msg string
}

// Error implements error, in the form Python prints.
func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s (<prelude>, line %d)", e.Msg, e.Line)
	}
	return e.Msg
}

// syntaxTimeout bounds one check: a few hundred milliseconds is normal, so this only stops a
// pathological source.
const syntaxTimeout = 30 * time.Second

// syntaxMemory caps the memory of one check.
const syntaxMemory = 256 << 20

// syntaxDriver compiles the source on stdin as module code with top-level await allowed
// (PyCF_ALLOW_TOP_LEVEL_AWAIT, 0x2000), as the browser runs a prelude, and answers with one
// JSON object on stdout (written by hand: importing json pulls in re, which costs more than
// the compile). A compile failure that is not a SyntaxError (e.g. a RecursionError
// for absurdly nested source) is reported the same way, without a line.
const syntaxDriver = `import sys
def q(s):
    return '"' + "".join(c if c >= " " and c not in '"\\' else "\\u%04x" % ord(c) for c in s) + '"'
src = sys.stdin.buffer.read().decode("utf-8")
try:
    compile(src, "<prelude>", "exec", flags=0x2000, dont_inherit=True)
    r = '{"ok": true}'
except SyntaxError as e:
    r = '{"ok": false, "line": %d, "offset": %d, "msg": %s}' % (e.lineno or 0, e.offset or 0, q(str(e.msg)))
except (ValueError, RecursionError, MemoryError, OverflowError) as e:
    r = '{"ok": false, "line": 0, "offset": 0, "msg": %s}' % q(type(e).__name__ + ": " + str(e))
sys.stdout.buffer.write(r.encode("utf-8", "backslashreplace"))
`

// CheckSyntax compile-checks source the way the browser will run a prelude: as module code,
// named "<prelude>", with top-level await allowed. It returns nil, nil when the source
// compiles, a *SyntaxError when Python refuses it, and an error when the check itself could not
// run. Each call uses a fresh instance (about 0.1 s).
func (e *Engine) CheckSyntax(ctx context.Context, source string) (*SyntaxError, error) {
	if !utf8.ValidString(source) {
		// Python would refuse the bytes the same way; report where the first bad byte is.
		bad := 0
		for bad < len(source) {
			r, size := utf8.DecodeRuneInString(source[bad:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			bad += size
		}
		return &SyntaxError{Line: strings.Count(source[:bad], "\n") + 1, Msg: "source is not valid UTF-8"}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, syntaxTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	o := e.run(ctx, instance{
		args:     []string{"python", "-S", "-c", syntaxDriver},
		stdin:    []byte(source),
		stdout:   &limitedBuffer{buf: &stdout, max: 64 << 10},
		stderr:   &limitedBuffer{buf: &stderr, max: 64 << 10},
		memLimit: syntaxMemory,
	})
	if o.err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sandbox: syntax check: %w", ctx.Err())
		}
		return nil, fmt.Errorf("sandbox: syntax check failed (exit %d): %s", o.exitCode, firstLines(stderr.String(), o.err))
	}
	var r struct {
		OK     bool   `json:"ok"`
		Line   int    `json:"line"`
		Offset int    `json:"offset"`
		Msg    string `json:"msg"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("sandbox: syntax check gave no answer (%v): %s", err, firstLines(stderr.String(), nil))
	}
	if r.OK {
		return nil, nil
	}
	return &SyntaxError{Line: r.Line, Offset: r.Offset, Msg: r.Msg}, nil
}

// limitedBuffer keeps the first max bytes written and drops the rest.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// firstLines summarises a failure for an error message: the last lines of stderr, else the
// first line of the wazero error (whose wasm stack traces run to thousands of lines).
func firstLines(stderr string, err error) string {
	if s := strings.TrimSpace(stderr); s != "" {
		lines := strings.Split(s, "\n")
		return strings.Join(lines[max(0, len(lines)-5):], "\n")
	}
	if err != nil {
		s, _, _ := strings.Cut(err.Error(), "\n")
		return s
	}
	return "no output"
}
