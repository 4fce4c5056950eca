//go:build unix

package mcp

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ownGroup makes the command start a process group of its own (its pid is the group's id), and
// makes the cancellation of its context end that group, not the child alone.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		terminateGroup(cmd.Process)
		return nil
	}
}

func terminateGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

// endGroup ends what is left of the group of p, which has exited: SIGTERM, up to wait for the
// group to be gone, then SIGKILL. The group's id cannot be taken by another process while any
// member lives, so the signals reach only what p started.
func endGroup(p *os.Process, wait time.Duration) {
	pgid := p.Pid
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return // nothing is left
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if syscall.Kill(-pgid, 0) != nil {
				return
			}
		case <-deadline.C:
			// A member that ended but was never reaped (its new parent does not wait) still
			// counts; SIGKILL is harmless to it.
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
	}
}
