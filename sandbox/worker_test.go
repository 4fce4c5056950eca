package sandbox

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// workerConn drives ServeWorker in-process through pipes.
type workerConn struct {
	t    *testing.T
	in   *io.PipeWriter // to the worker
	out  *io.PipeReader // from the worker
	done chan error     // ServeWorker's result
}

func startWorker(t *testing.T, e *Engine) *workerConn {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &workerConn{t: t, in: inW, out: outR, done: make(chan error, 1)}
	go func() {
		c.done <- ServeWorker(context.Background(), e, inR, outW, nil, SessionsOptions{})
		_ = outW.Close()
	}()
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close() })
	return c
}

func (c *workerConn) send(f *frame) {
	c.t.Helper()
	if err := writeFrame(c.in, f); err != nil {
		c.t.Fatal(err)
	}
}

func (c *workerConn) recv() *frame {
	c.t.Helper()
	type r struct {
		f   *frame
		err error
	}
	ch := make(chan r, 1)
	go func() {
		f, err := readFrame(c.out)
		ch <- r{f, err}
	}()
	select {
	case x := <-ch:
		if x.err != nil {
			c.t.Fatal(x.err)
		}
		return x.f
	case <-time.After(30 * time.Second):
		c.t.Fatal("no frame from the worker within 30s")
	}
	return nil
}

func TestServeWorker(t *testing.T) {
	e := fastEngine(t)
	c := startWorker(t, e)
	if f := c.recv(); f.Type != frameReady || f.Hello == nil || f.Hello.SHA256 != e.SHA256() || f.Hello.Mode != "fast" {
		t.Fatalf("first frame %+v, want a hello", f)
	}

	// A run: started, then its result.
	c.send(&frame{Type: frameRun, ID: 1, Request: &Request{Source: "print(6*7)", Timeout: 10 * time.Second}})
	if f := c.recv(); f.Type != frameStart || f.ID != 1 {
		t.Fatalf("got %+v, want started 1", f)
	}
	if f := c.recv(); f.Type != frameResult || f.ID != 1 || f.Result.Stdout != "42\n" || f.Result.Status != StatusOK {
		t.Fatalf("got %+v, want the result of run 1", f)
	}

	// One run at a time; a cancel stops the current one.
	c.send(&frame{Type: frameRun, ID: 2, Request: &Request{Source: "while True: pass", Timeout: time.Minute}})
	if f := c.recv(); f.Type != frameStart || f.ID != 2 {
		t.Fatalf("got %+v, want started 2", f)
	}
	c.send(&frame{Type: frameRun, ID: 3, Request: &Request{Source: "print(1)"}})
	if f := c.recv(); f.Type != frameError || f.ID != 3 || f.Error != "busy" {
		t.Fatalf("got %+v, want busy for run 3", f)
	}
	c.send(&frame{Type: frameCancel, ID: 99}) // not the current run: ignored
	c.send(&frame{Type: frameCancel, ID: 2})
	if f := c.recv(); f.Type != frameError || f.ID != 2 || !strings.Contains(f.Error, "canceled") {
		t.Fatalf("got %+v, want run 2 cancelled", f)
	}

	// The end of stdin ends the worker at once, even in the middle of a run.
	c.send(&frame{Type: frameRun, ID: 4, Request: &Request{Source: "while True: pass", Timeout: time.Minute}})
	if f := c.recv(); f.Type != frameStart {
		t.Fatalf("got %+v, want started 4", f)
	}
	_ = c.in.Close()
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("ServeWorker after EOF: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeWorker did not return at the end of its input")
	}
}

func TestServeWorkerProtocolErrors(t *testing.T) {
	e := fastEngine(t)
	c := startWorker(t, e)
	c.recv() // hello
	c.send(&frame{Type: frameRun, ID: 1})
	if f := c.recv(); f.Type != frameError || !strings.Contains(f.Error, "without a request") {
		t.Fatalf("got %+v", f)
	}
	c.send(&frame{Type: "bogus"})
	select {
	case err := <-c.done:
		if err == nil || !strings.Contains(err.Error(), "bogus") {
			t.Fatalf("ServeWorker = %v, want an unexpected-frame error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeWorker did not stop at a bad frame")
	}
}
