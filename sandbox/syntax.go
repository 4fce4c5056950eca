package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
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

// syntaxDriver answers compile checks until its stdin ends: each request is a decimal byte
// count on a line and then that many bytes of UTF-8 source, compiled as module code with
// top-level await allowed (PyCF_ALLOW_TOP_LEVEL_AWAIT, 0x2000), as the browser runs a
// prelude; each answer is one JSON object on a line (written by hand: importing json pulls in
// re, which costs more than a compile). A compile failure that is not a SyntaxError (e.g. a
// RecursionError for absurdly nested source) is reported the same way, without a line. It only
// compiles, never runs, what it is given, so one interpreter can check any number of sources.
const syntaxDriver = `import sys
def q(s):
    return '"' + "".join(c if c >= " " and c not in '"\\' else "\\u%04x" % ord(c) for c in s) + '"'
rd, wr = sys.stdin.buffer, sys.stdout.buffer
while True:
    n = rd.readline()
    if not n:
        break
    src = rd.read(int(n)).decode("utf-8")
    try:
        compile(src, "<prelude>", "exec", flags=0x2000, dont_inherit=True)
        r = '{"ok": true}'
    except SyntaxError as e:
        r = '{"ok": false, "line": %d, "offset": %d, "msg": %s}' % (e.lineno or 0, e.offset or 0, q(str(e.msg)))
    except (ValueError, RecursionError, MemoryError, OverflowError) as e:
        r = '{"ok": false, "line": 0, "offset": 0, "msg": %s}' % q(type(e).__name__ + ": " + str(e))
    src = None
    wr.write(r.encode("utf-8", "backslashreplace") + b"\n")
    wr.flush()
`

// syntaxAnswer is one answer of syntaxDriver.
type syntaxAnswer struct {
	OK     bool   `json:"ok"`
	Line   int    `json:"line"`
	Offset int    `json:"offset"`
	Msg    string `json:"msg"`
}

// syntaxCacheSize bounds the remembered answers (by sha256 of the source): configs share
// preludes, and a reload checks the same ones again.
const syntaxCacheSize = 4096

// checkerMemoryCap: after a check whose compile left the interpreter's memory above this, the
// interpreter is replaced, so one large source does not keep its memory until shutdown.
const checkerMemoryCap = 64 << 20

// checker is the engine's long-lived compile-check interpreter: one instance that answers
// requests one at a time, started on first use and again after it failed, timed out or grew
// past checkerMemoryCap. Its answers are remembered, since compiling is a pure function of the
// source.
type checker struct {
	slot chan struct{} // one token: whoever holds it talks to the interpreter
	once sync.Once
	cur  *checkerInstance // guarded by the slot
	wg   sync.WaitGroup   // every instance's goroutine, for close

	mu     sync.Mutex // guards the cache and the counters
	cache  map[[32]byte]syntaxAnswer
	order  [][32]byte // insertion order, for eviction
	starts int        // instances started (tests count them)
	closed bool
}

type checkerInstance struct {
	in     *io.PipeWriter
	out    *bufio.Reader
	stderr *bytes.Buffer // written by the instance: read it only after done
	alloc  atomic.Pointer[allocator]
	cancel context.CancelFunc
	done   chan outcome
}

// CheckSyntax compile-checks source the way the browser will run a prelude: as module code,
// named "<prelude>", with top-level await allowed. It returns nil, nil when the source
// compiles, a *SyntaxError when Python refuses it, and an error when the check itself could not
// run. The checks of an engine share one interpreter, which only compiles (about a
// millisecond a check once started), and identical sources are answered from memory.
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
	r, err := e.syntax.check(ctx, e, source)
	if err != nil {
		return nil, err
	}
	if r.OK {
		return nil, nil
	}
	return &SyntaxError{Line: r.Line, Offset: r.Offset, Msg: r.Msg}, nil
}

func (c *checker) check(ctx context.Context, e *Engine, source string) (syntaxAnswer, error) {
	key := sha256.Sum256([]byte(source))
	c.mu.Lock()
	r, ok := c.cache[key]
	closed := c.closed
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	if closed {
		return syntaxAnswer{}, errors.New("sandbox: syntax check: the engine is closed")
	}
	c.once.Do(func() { c.slot = make(chan struct{}, 1); c.slot <- struct{}{} })
	select { // wait for the interpreter, as long as the caller waits
	case <-c.slot:
	case <-ctx.Done():
		return syntaxAnswer{}, fmt.Errorf("sandbox: syntax check: %w", ctx.Err())
	}
	defer func() { c.slot <- struct{}{} }()
	if c.cur == nil {
		c.cur = c.start(e)
	}
	r, err := c.ask(ctx, source)
	if err != nil {
		c.stop() // a failed or stuck instance is not asked again
		return syntaxAnswer{}, err
	}
	if a := c.cur.alloc.Load(); a != nil && a.peak() > checkerMemoryCap {
		c.stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache == nil {
		c.cache = make(map[[32]byte]syntaxAnswer)
	}
	if len(c.order) >= syntaxCacheSize {
		delete(c.cache, c.order[0])
		c.order = c.order[1:]
	}
	c.cache[key] = r
	c.order = append(c.order, key)
	return r, nil
}

// start runs a checker instance in the background; it ends when its stdin is closed or its
// context is cancelled. The caller holds the slot.
func (c *checker) start(e *Engine) *checkerInstance {
	c.mu.Lock()
	c.starts++
	c.mu.Unlock()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	ci := &checkerInstance{in: inW, out: bufio.NewReader(outR), stderr: &bytes.Buffer{}, cancel: cancel, done: make(chan outcome, 1)}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		o := e.run(ctx, instance{
			args:     []string{"python", "-S", "-c", syntaxDriver},
			stdinR:   inR,
			stdout:   outW,
			stderr:   &limitedBuffer{buf: ci.stderr, max: 64 << 10},
			memLimit: syntaxMemory,
			onAlloc:  func(a *allocator) { ci.alloc.Store(a) },
		})
		_ = outW.CloseWithError(io.ErrUnexpectedEOF)
		_ = inR.Close()
		ci.done <- o
	}()
	return ci
}

// ask sends one source and waits for its answer, at most syntaxTimeout. The caller holds the
// slot.
func (c *checker) ask(ctx context.Context, source string) (syntaxAnswer, error) {
	ci := c.cur
	type reply struct {
		line []byte
		err  error
	}
	got := make(chan reply, 1)
	go func() {
		if _, err := fmt.Fprintf(ci.in, "%d\n%s", len(source), source); err != nil {
			got <- reply{err: err}
			return
		}
		line, err := ci.out.ReadBytes('\n')
		got <- reply{line, err}
	}()
	timer := time.NewTimer(syntaxTimeout)
	defer timer.Stop()
	select {
	case r := <-got:
		if r.err != nil {
			c.stop()
			o := <-ci.done
			return syntaxAnswer{}, fmt.Errorf("sandbox: syntax check failed (exit %d): %s", o.exitCode, firstLines(ci.stderr.String(), o.err))
		}
		var a syntaxAnswer
		if err := json.Unmarshal(r.line, &a); err != nil {
			c.stop()
			o := <-ci.done // stderr is the instance's until it ended
			return syntaxAnswer{}, fmt.Errorf("sandbox: syntax check gave no answer (%v): %s", err, firstLines(ci.stderr.String(), o.err))
		}
		return a, nil
	case <-timer.C:
		return syntaxAnswer{}, fmt.Errorf("sandbox: syntax check: %w", context.DeadlineExceeded)
	case <-ctx.Done():
		return syntaxAnswer{}, fmt.Errorf("sandbox: syntax check: %w", ctx.Err())
	}
}

// stop ends the current instance, if any. The caller holds the slot.
func (c *checker) stop() {
	if c.cur == nil {
		return
	}
	c.cur.cancel()
	_ = c.cur.in.Close()
	c.cur = nil
}

// close ends the checker's instances and waits for every one of them, so Engine.Close does not
// pull the runtime from under one; checks after it fail.
func (c *checker) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.once.Do(func() { c.slot = make(chan struct{}, 1); c.slot <- struct{}{} })
	<-c.slot
	c.stop()
	c.slot <- struct{}{}
	c.wg.Wait()
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
