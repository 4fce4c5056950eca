package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// forgePhase is a program that tries to take the run back to its prelude through the device
// the driver announces phases on, prints the host's answer, then exits with the code the
// driver once used for a failed prelude.
const forgePhase = `import os, sys
fd = os.open("/dev/osa/call", os.O_RDWR)
os.write(fd, b'{"op":"phase","phase":"prelude"}\n')
print(os.read(fd, 4096).decode())
os.close(fd)
sys.exit(112)
`

// forgeReport reports a MemoryError as the driver would, then exits with the code the driver
// once used for one.
const forgeReport = `import os, sys
fd = os.open("/dev/osa/call", os.O_RDWR)
os.write(fd, b'{"op":"report"}\nMemoryError')
os.read(fd, 4096)
os.close(fd)
sys.exit(109)
`

// TestVerdictsAreTheHosts: how a run ended is judged from what the host saw (the allocator's
// refusals, the phase the driver announced), never from an exit code or anything else the
// program can choose; the exit code is reported as data. In-process (strict and fast) and in
// worker processes.
func TestVerdictsAreTheHosts(t *testing.T) {
	tests := []struct {
		name    string
		req     Request
		status  Status
		exit    int
		prelude bool   // PreludeFailed
		stdout  string // substring, when set
		exc     string // Exception, when set
	}{
		{name: "sys.exit(109)", req: Request{Source: "import sys\nsys.exit(109)\n"}, status: StatusError, exit: 109},
		{name: "sys.exit(112)", req: Request{Source: "import sys\nsys.exit(112)\n"}, status: StatusError, exit: 112},
		{name: "raise SystemExit(109)", req: Request{Source: "raise SystemExit(109)\n"}, status: StatusError, exit: 109},
		{name: "os._exit(109)", req: Request{Source: "import os\nos._exit(109)\n"}, status: StatusError, exit: 109},
		{name: "os._exit(112)", req: Request{Source: "import os\nos._exit(112)\n"}, status: StatusError, exit: 112},
		{name: "sys.exit(112) after a prelude", req: Request{Prelude: "X = 1\n", Source: "import sys\nsys.exit(112)\n"}, status: StatusError, exit: 112},
		{name: "os._exit(112) after a prelude", req: Request{Prelude: "X = 1\n", Source: "import os\nos._exit(112)\n"}, status: StatusError, exit: 112},
		{name: "a forged return to the prelude", req: Request{Prelude: "X = 1\n", Source: forgePhase}, status: StatusError, exit: 112, stdout: `"error"`},
		{name: "a forged MemoryError report", req: Request{Source: forgeReport}, status: StatusError, exit: 109, exc: "MemoryError"},
		{
			name:   "a MemoryError caught, then another exception",
			req:    Request{Source: "try:\n    b = bytearray(10**9)\nexcept MemoryError:\n    pass\nraise ValueError('later')\n", MemoryBytes: 128 << 20},
			status: StatusError, exit: 1, exc: "ValueError: later",
		},
		{name: "a real MemoryError", req: Request{Source: "b = bytearray(10**9)\n", MemoryBytes: 128 << 20}, status: StatusOOM, exit: 1, exc: "MemoryError"},
		// At the engine's own cap (1024 MiB in these tests): the grow reaches the allocator
		// rather than being refused by wazero unseen.
		{name: "a real MemoryError at the engine's cap", req: Request{Source: "b = bytearray(1500 << 20)\n"}, status: StatusOOM, exit: 1, exc: "MemoryError"},
		{name: "a real prelude failure", req: Request{Prelude: "1 / 0\n", Source: "print('ran')\n"}, status: StatusError, exit: 1, prelude: true, exc: "ZeroDivisionError: division by zero"},
		{name: "a prelude that exits 0", req: Request{Prelude: "import os\nos._exit(0)\n", Source: "print('ran')\n"}, status: StatusError, exit: 0, prelude: true},
		{name: "a prelude that runs out of memory", req: Request{Prelude: "b = bytearray(10**9)\n", Source: "print('ran')\n", MemoryBytes: 128 << 20}, status: StatusOOM, exit: 1, prelude: true},
		{name: "a prelude that holds every device slot", req: Request{Prelude: "import os\nFDS = [os.open('/dev/osa/call', os.O_RDWR) for _ in range(4)]\n", Source: "print('ran')\n"}, status: StatusError, exit: 1, prelude: true},
	}
	modes := []struct {
		name string
		run  func(t *testing.T) func(context.Context, Request) (Result, error)
	}{
		{"strict", func(t *testing.T) func(context.Context, Request) (Result, error) { return testEngine(t).Run }},
		{"fast", func(t *testing.T) func(context.Context, Request) (Result, error) { return fastEngine(t).Run }},
		{"worker", func(t *testing.T) func(context.Context, Request) (Result, error) {
			return newTestPool(t, PoolOptions{Workers: 1}).Run
		}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			run := m.run(t)
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					tc.req.Timeout = 30 * time.Second
					res, err := run(context.Background(), tc.req)
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
					if res.Status != tc.status || res.ExitCode != tc.exit || res.PreludeFailed != tc.prelude {
						t.Errorf("status %q exit %d prelude failed %v, want %q exit %d prelude failed %v\nstdout: %q\nstderr: %q",
							res.Status, res.ExitCode, res.PreludeFailed, tc.status, tc.exit, tc.prelude, res.Stdout, clip(res.Stderr))
					}
					if tc.stdout != "" && !strings.Contains(res.Stdout, tc.stdout) {
						t.Errorf("stdout %q lacks %q", res.Stdout, tc.stdout)
					}
					if tc.exc != "" && res.Exception != tc.exc {
						t.Errorf("Exception %q, want %q", res.Exception, tc.exc)
					}
					if tc.prelude && res.Stdout != "" {
						t.Errorf("the program ran after a failed prelude: stdout %q", res.Stdout)
					}
				})
			}
		})
	}
}
