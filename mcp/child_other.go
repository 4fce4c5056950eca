//go:build !unix

package mcp

import (
	"os"
	"os/exec"
	"time"
)

// ownGroup does nothing here: process groups are a unix notion (Windows would need a job
// object), so only the child itself is ended.
func ownGroup(*exec.Cmd) {}

func terminateGroup(p *os.Process) { _ = p.Kill() }

func killGroup(p *os.Process) { _ = p.Kill() }

func endGroup(*os.Process, time.Duration) {}
