package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nativePython is Debian's python3 with the same Debian packages the engine holds (make test
// installs them with scripts/native_packages.sh). Without them the test is skipped, or fails
// under CI=true.
func nativePython(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	err := exec.Command(py, "-I", "-c", "import openpyxl, et_xmlfile, dateutil, pytz, six, xlsxwriter, tabulate, sqlite3, bz2, lzma").Run()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Debian's python3 with its packages is needed under CI=true (scripts/native_packages.sh): %v", err)
		}
		t.Skipf("Debian's python3 with python3-openpyxl etc. is not installed (scripts/native_packages.sh): %v", err)
	}
	return py
}

// TestPackagesMatchNative runs each program of testdata/programs in the engine and under
// Debian's native python3 with the same Debian packages and the same tz database, and compares
// their output byte for byte: the packages work, not just import.
func TestPackagesMatchNative(t *testing.T) {
	e := testEngine(t)
	if len(e.Packages()) == 0 {
		t.Fatal("the engine has no packages.json; rebuild it with scripts/build_python_wasi.sh")
	}
	py := nativePython(t)
	dir, _ := engineDir()
	tz := filepath.Join(dir, "share", "zoneinfo")
	programs, err := filepath.Glob("testdata/programs/*.py")
	if err != nil || len(programs) < 20 {
		t.Fatalf("%d programs (%v), want at least 20", len(programs), err)
	}
	for _, p := range programs {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".py"), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(context.Background(), Request{Source: string(src), Timeout: 60 * time.Second})
			if err != nil || res.Status != StatusOK {
				t.Fatalf("engine: %v %s\n%s", err, res.Status, res.Stderr)
			}
			cmd := exec.Command(py, "-I", p)
			cmd.Env = []string{"PYTHONTZPATH=" + tz, "PYTZ_TZDATADIR=" + tz, "LANG=C.UTF-8", "PYTHONHASHSEED=0", "TMPDIR=" + t.TempDir()}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			want, err := cmd.Output()
			if err != nil {
				t.Fatalf("native python3: %v\n%s", err, stderr.String())
			}
			if res.Stdout != string(want) {
				t.Errorf("engine and native python3 differ.\nengine:\n%s\nnative:\n%s", res.Stdout, want)
			}
		})
	}
}

// TestPackagesManifest: the engine's packages.json names every package it holds, and a run's
// summary and a failed import tell the model what there is and what needs the browser.
func TestPackagesManifest(t *testing.T) {
	e := testEngine(t)
	got := map[string]bool{}
	for _, p := range e.Packages() {
		got[p.Import] = p.Version != "" && strings.Contains(p.Debian, " ")
	}
	for _, want := range []string{"sqlite3", "zoneinfo", "openpyxl", "et_xmlfile", "dateutil", "pytz", "six", "xlsxwriter", "tabulate", "bz2", "lzma"} {
		if !got[want] {
			t.Errorf("packages.json lacks %s (or its version and Debian package): %+v", want, e.Packages())
		}
	}
	res, err := e.Run(context.Background(), Request{Source: "import sqlite3, zoneinfo, openpyxl, dateutil, pytz\nimport pandas\n"})
	if err != nil || res.Status != StatusError {
		t.Fatalf("%v %+v", err, res)
	}
	for _, want := range []string{"No module named 'pandas'", "openpyxl 3.0.9", "sqlite3 3.46.1", "numpy, pandas, scipy and matplotlib need the reader's browser"} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("the import error lacks %q:\n%s", want, res.Stderr)
		}
	}
	sum := summary(res, "120", 100, 100)
	if !strings.Contains(sum, "It has sqlite3, zoneinfo, bz2, lzma, openpyxl") || !strings.Contains(sum, "need the browser") {
		t.Errorf("summary: %s", sum)
	}
	if note := PackagesNote(e.Packages()); !strings.Contains(note, "openpyxl 3.0.9") || !strings.HasSuffix(note, "need the reader's browser, and nothing can be installed.") {
		t.Errorf("note: %s", note)
	}
}
