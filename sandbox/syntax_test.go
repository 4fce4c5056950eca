package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCheckSyntaxOneInterpreter: an engine's compile checks share one long-lived interpreter,
// answer concurrent callers correctly, survive a source that defeats the compiler, and a new
// interpreter replaces one that ended.
func TestCheckSyntaxOneInterpreter(t *testing.T) {
	testEngine(t) // skips without an engine
	dir, _ := engineDir()
	e, err := New(context.Background(), Options{Dir: dir, CacheDir: testCacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	ctx := context.Background()
	src := func(i int) (string, int) { // the source, and the line of its error (0: it compiles)
		if i%2 == 0 {
			return fmt.Sprintf("x%d = %d\nawait f()\n", i, i), 0
		}
		line := i%5 + 1
		return strings.Repeat("pass\n", line-1) + fmt.Sprintf("def f%d(:\n", i), line
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 80; i += 8 {
				s, line := src(i)
				got, err := e.CheckSyntax(ctx, s)
				switch {
				case err != nil:
					t.Errorf("source %d: %v", i, err)
				case line == 0 && got != nil:
					t.Errorf("source %d: %+v, want it to compile", i, *got)
				case line != 0 && (got == nil || got.Line != line):
					t.Errorf("source %d: %+v, want an error on line %d", i, got, line)
				}
			}
		})
	}
	wg.Wait()
	if e.syntax.starts != 1 {
		t.Errorf("%d interpreters started for 80 checks, want 1", e.syntax.starts)
	}

	// While the interpreter is taken (as by a check in progress), an answer from memory does not
	// wait for it, and a new source gives up at its caller's deadline.
	<-e.syntax.slot
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	remembered, rerr := e.CheckSyntax(short, "x0 = 0\nawait f()\n")
	_, nerr := e.CheckSyntax(short, "fresh = 1\n")
	cancel()
	e.syntax.slot <- struct{}{}
	if remembered != nil || rerr != nil {
		t.Errorf("a remembered answer while the interpreter is taken: %+v, %v", remembered, rerr)
	}
	if !errors.Is(nerr, context.DeadlineExceeded) {
		t.Errorf("a new source while the interpreter is taken: %v, want the caller's deadline", nerr)
	}

	// A source the compiler cannot take is an answer, and the next check works.
	got, err := e.CheckSyntax(ctx, strings.Repeat("(", 100000)+"1"+strings.Repeat(")", 100000))
	if err != nil || got == nil || got.Line != 0 || !strings.Contains(got.Msg, "too complex to parse") {
		t.Errorf("deep nesting: %+v, %v", got, err)
	}
	if got, err := e.CheckSyntax(ctx, "y = 2\n"); err != nil || got != nil {
		t.Errorf("after deep nesting: %+v, %v", got, err)
	}
	before := e.syntax.starts

	// An interpreter that ended is replaced at the next check.
	<-e.syntax.slot
	e.syntax.stop()
	e.syntax.slot <- struct{}{}
	if got, err := e.CheckSyntax(ctx, "z = 3\nif z\n"); err != nil || got == nil || got.Line != 2 || e.syntax.starts != before+1 {
		t.Errorf("after a stop: %+v, %v, %d starts", got, err, e.syntax.starts)
	}
}
