package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/toolresults"
)

func TestRunUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x.py")
	if err := os.WriteFile(file, []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"run", file}, 2, "--community is required"},
		{[]string{"run", "--community", "nemar"}, 2, "want one FILE"},
		{[]string{"run", "--community", "nemar", file, file}, 2, "want one FILE"},
		{[]string{"run", "--community", "nemar", "--deployment", "staging", file}, 2, `--deployment "staging"`},
		{[]string{"run", "--community", "nemar", "--call-id", "", file}, 2, "--call-id"},
		{[]string{"run", "--community", "nemar", filepath.Join(t.TempDir(), "missing.py")}, 1, "no such file"},
		{[]string{"run", "--community", "nemar", file}, 1, "no Python engine"},
	} {
		code, stdout, stderr := runCmd(t, tc.args...)
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, stdout, stderr, tc.code, tc.stderr)
		}
	}
}

// TestRunNemar runs code under the shipped nemar community: its prelude imports the overlay
// wheel and configures it for the deployment, and the code uses it.
func TestRunNemar(t *testing.T) {
	dir := engineDir(t)
	env := map[string]string{"ASSISTANT_ENGINE_DIR": dir}
	tmp := t.TempDir()
	file := filepath.Join(tmp, "check.py")
	src := `import nemar_tools, osa
print(nemar_tools.zarr_base())
print(nemar_tools.describe([1, 2, 3, float("nan")]))
print(osa.fetch_allow)
osa.save_script("analysis/check.py", "print(1)\n")
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) *toolresults.Result {
		t.Helper()
		code, stdout, stderr := runCmdEnv(t, env, append([]string{"run", "--community", "nemar", "--communities", "../../communities"}, args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s", args, code, stderr)
		}
		r, err := toolresults.Decode([]byte(stdout))
		if err != nil {
			t.Fatalf("%q: the printed result does not decode: %v\n%s", args, err, stdout)
		}
		if !strings.HasPrefix(stdout, "{\n  \"call_id\": ") {
			t.Errorf("not indented JSON:\n%s", stdout)
		}
		return r
	}

	r := run("--artifacts", filepath.Join(tmp, "out"), file)
	want := "https://zarr.nemar.org\nn=3 mean=2 std=0.816497 min=1 median=2 max=3 (skipped 1 NaN)\n('https://zarr.nemar.org/',)\n"
	if r.Status != "ok" || r.Stdout != want || r.Stderr != "" || r.CallID != "run" {
		t.Errorf("production: %+v", r)
	}
	if len(r.Artifacts) != 1 || r.Artifacts[0] != "analysis/check.py" {
		t.Errorf("artifacts %q", r.Artifacts)
	}
	if b, err := os.ReadFile(filepath.Join(tmp, "out", "analysis", "check.py")); err != nil || string(b) != "print(1)\n" {
		t.Errorf("written artifact: %q %v", b, err)
	}
	if !strings.Contains(r.Summary, "Ran without an error.") {
		t.Errorf("summary %q", r.Summary)
	}

	r = run("--deployment", "develop", "--call-id", "toolu_1", file)
	if r.Status != "ok" || !strings.HasPrefix(r.Stdout, "https://zarr-test.nemar.org\n") || r.CallID != "toolu_1" {
		t.Errorf("develop: %+v", r)
	}

	// Code that fails still prints a result and exits 0; numpy is not in the server's Python.
	code, stdout, stderr := runCmdEnvStdin(t, env, "import numpy\n", "run", "--community", "nemar", "--communities", "../../communities", "-")
	if code != 0 {
		t.Fatalf("numpy: exit %d\n%s", code, stderr)
	}
	r, err := toolresults.Decode([]byte(stdout))
	if err != nil || r.Status != "error" || !strings.Contains(r.Stderr, "numpy is not available in the server's Python") ||
		!strings.Contains(r.Stderr, "nemar_tools") || !strings.HasSuffix(r.Stderr, "numpy, pandas, scipy and matplotlib need the reader's browser.\n") {
		t.Errorf("numpy: %v %+v", err, r)
	}

	code, _, stderr = runCmdEnv(t, env, "run", "--community", "bids", "--communities", "../../communities", file)
	if code != 1 || !strings.Contains(stderr, `community "bids" has no runtime.python`) {
		t.Errorf("bids: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCmdEnv(t, env, "run", "--community", "nope", "--communities", "../../communities", file)
	if code != 1 || !strings.Contains(stderr, `no community "nope"`) {
		t.Errorf("unknown community: exit %d: %s", code, stderr)
	}
}

func runCmdEnvStdin(t *testing.T, environ map[string]string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	code = run(t.Context(), append([]string{"assistant"}, args...), func(k string) string { return environ[k] }, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// TestRunDataPackages: assistant run imports the engine's data packages under nemar's policy
// (prelude, overlay wheel) and uses them.
func TestRunDataPackages(t *testing.T) {
	env := map[string]string{"ASSISTANT_ENGINE_DIR": engineDir(t)}
	src := "import sqlite3, zoneinfo, openpyxl, dateutil.parser, pytz\n" +
		"from datetime import datetime\n" +
		"print(sqlite3.connect(':memory:').execute('SELECT sum(value) FROM json_each(\\'[1,2,3]\\')').fetchone()[0])\n" +
		"print(datetime(2024, 7, 1, 12, tzinfo=zoneinfo.ZoneInfo('Europe/Berlin')).utcoffset())\n" +
		"print(openpyxl.__version__, pytz.timezone('Asia/Tokyo').zone, dateutil.parser.parse('2024-02-29').date())\n"
	code, stdout, stderr := runCmdEnvStdin(t, env, src, "run", "--community", "nemar", "--communities", "../../communities", "-")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	r, err := toolresults.Decode([]byte(stdout))
	if err != nil || r.Status != "ok" || r.Stdout != "6\n2:00:00\n3.0.9 Asia/Tokyo 2024-02-29\n" {
		t.Errorf("%v %+v", err, r)
	}
	if !strings.Contains(r.Summary, "It has sqlite3, zoneinfo") {
		t.Errorf("summary %q", r.Summary)
	}
}

// TestRunModes: assistant run runs the code as the server's workers do, in a sandbox-worker
// process in fast mode with the policy's memory, unless --strict runs it in this process;
// either way a loop inside C ends at the deadline (in fast mode by the worker's kill).
func TestRunModes(t *testing.T) {
	dir := engineDir(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	comms := filepath.Join(tmp, "communities")
	if err := os.MkdirAll(filepath.Join(comms, "lab"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "id: lab\nname: Lab\ndescription: d\nruntime:\n  python:\n    pyodide_version: \"0.29.5\"\n" +
		"    limits: {exec_seconds: 1, memory_mb: 256}\n"
	if err := os.WriteFile(filepath.Join(comms, "lab", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// A policy may ask for more memory than a worker takes: it gets the most there is.
	if err := os.MkdirAll(filepath.Join(comms, "big"), 0o755); err != nil {
		t.Fatal(err)
	}
	big := strings.NewReplacer("id: lab", "id: big", "memory_mb: 256", "memory_mb: 5000").Replace(cfg)
	if err := os.WriteFile(filepath.Join(comms, "big", "config.yaml"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ASSISTANT_ENGINE_DIR": dir}
	argsFile := filepath.Join(tmp, "sandbox-worker.args")
	for _, tc := range []struct {
		name   string
		flags  []string
		worker bool
	}{
		{"default", nil, true},
		{"strict", []string{"--strict"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(argsFile)
			for src, status := range map[string]string{"print(6 * 7)\n": "ok", "sum(range(10**13))\n": "timeout"} {
				code, stdout, stderr := runCmdEnvStdin(t, env, src, append(append([]string{"run", "--community", "lab", "--communities", comms}, tc.flags...), "-")...)
				r, err := toolresults.Decode([]byte(stdout))
				if code != 0 || err != nil || r.Status != status || (status == "ok" && r.Stdout != "42\n") {
					t.Errorf("%q: exit %d, %+v, %v\n%s", src, code, r, err, stderr)
				}
			}
			args, err := os.ReadFile(argsFile)
			if tc.worker && (err != nil || !strings.Contains(string(args), "--mode fast") || !strings.Contains(string(args), "--memory-mb 256")) {
				t.Errorf("the worker was started with %q, %v; want fast mode and the policy's 256 MiB", args, err)
			}
			if !tc.worker && err == nil {
				t.Errorf("--strict started a worker: %q", args)
			}
			code, stdout, stderr := runCmdEnvStdin(t, env, "print(1)\n", append(append([]string{"run", "--community", "big", "--communities", comms}, tc.flags...), "-")...)
			if r, err := toolresults.Decode([]byte(stdout)); code != 0 || err != nil || r.Status != "ok" {
				t.Errorf("memory_mb 5000: exit %d, %v\n%s", code, err, stderr)
			}
		})
	}
}
