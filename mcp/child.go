package mcp

import (
	"context"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

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
// and when the server is stopped while the child starts (its context is cancelled). Each line
// the child writes is capped at MaxMessageBytes as it is read.
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
	return (&sdk.IOTransport{
		Reader: newCapReader(outR, MaxMessageBytes, ndjsonLines, t.server, nil),
		Writer: c,
	}).Connect(ctx)
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
