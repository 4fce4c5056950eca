package mcp

import (
	"context"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// exitWait is how long a child may take to exit after its stdin is closed, and again after
	// SIGTERM, before the next step.
	exitWait = 2 * time.Second
	// groupWait is how long what is left of a child's process group has between SIGTERM and
	// SIGKILL once the child itself has ended.
	groupWait = time.Second
)

// commandTransport runs a command server's child in a process group of its own and speaks MCP
// with it over its stdin and stdout. The SDK's CommandTransport ends only the child: whatever
// the child started (a wrapper's real server, "yes >&2 &") was left running. Here the group
// ends with the child: when it exits, when the connection closes (close, reload, reconnect),
// and when the server is stopped while the child starts (its context is cancelled). Each message
// the child writes (a JSON value, over however many lines) is capped at MaxMessageBytes as it is
// read, and one past the cap is told to the call it answers (stdioConn).
type commandTransport struct {
	cmd    *exec.Cmd
	server string
}

// child is one started process and its group.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File
	exited chan struct{} // closed when cmd.Wait returned
	ended  chan struct{} // closed when the group was ended after that
	once   sync.Once
}

// Connect starts the command and connects to it.
func (t *commandTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_, _ = inR.Close(), inW.Close()
		return nil, err
	}
	// Plain files, not exec's pipes: Wait then closes nothing the connection still reads, and
	// starts no copying goroutines.
	t.cmd.Stdin, t.cmd.Stdout = inR, outW
	ownGroup(t.cmd)
	err = t.cmd.Start()
	_, _ = inR.Close(), outW.Close()
	if err != nil {
		_, _ = inW.Close(), outR.Close()
		return nil, err
	}
	c := &child{cmd: t.cmd, stdin: inW, exited: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		_ = c.cmd.Wait()
		close(c.exited)
		endGroup(c.cmd.Process, groupWait)
		close(c.ended)
	}()
	sc := &stdioConn{pending: map[jsonrpc.ID]*callWatch{}}
	// The SDK's own cap (IOTransport.MaxLineLength) is left at its default, far above ours: its
	// error is not exported, so it could not be told from another, and it counts what the
	// decoder reads ahead into the next message as this one's.
	conn, err := (&sdk.IOTransport{
		Reader: newCapReader(outR, MaxMessageBytes, jsonValues, t.server, sc.tooLarge),
		Writer: c,
	}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc.Connection = conn
	return sc, nil
}

// stdioConn is the SDK's connection to a child, which also knows which call an answer too large
// to read was for. The connection ends with such an answer, and every call under way on it with
// the same error; only the watch of the call it answered is marked, so that the others are told
// the connection was reset (capError), and may be made again.
type stdioConn struct {
	sdk.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]*callWatch // calls written with a watch, until their context ends
}

// Write notes the watch of a call before it is sent.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		if w := watchOf(ctx); w != nil {
			c.mu.Lock()
			c.pending[req.ID] = w
			c.mu.Unlock()
			context.AfterFunc(ctx, func() {
				c.mu.Lock()
				delete(c.pending, req.ID)
				c.mu.Unlock()
			})
		}
	}
	return c.Connection.Write(ctx, msg)
}

// tooLarge marks the call whose answer begins with head as too large: the one its id names or,
// when head ends before the id (a TypeScript server writes it last), every call under way, as
// any of them may be the one. A message that answers none of them marks none.
func (c *stdioConn) tooLarge(head []byte) {
	id, kind := answerOf(head)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch kind {
	case answerTo:
		if w := c.pending[id]; w != nil {
			w.tooLarge.Store(true)
		}
	case unknownAnswer:
		for _, w := range c.pending {
			w.tooLarge.Store(true)
		}
	}
}

// Write writes to the child's stdin.
func (c *child) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// Close ends the child as the MCP spec asks (stdin closed, then SIGTERM, then SIGKILL, each
// after a wait), then its group, and returns when both are gone.
func (c *child) Close() error {
	c.once.Do(func() {
		_ = c.stdin.Close()
		if !c.waitExit(exitWait) {
			terminateGroup(c.cmd.Process)
			if !c.waitExit(exitWait) {
				killGroup(c.cmd.Process)
			}
		}
		<-c.exited
		<-c.ended
	})
	return nil
}

// waitExit reports whether the child exits within d.
func (c *child) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

var _ io.WriteCloser = (*child)(nil)
