package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const lockShippedRuntime = "../../communities/nemar/runtime"

// lockCopyRuntime copies NEMAR's runtime folder (overlay, depends.toml, wheels) into a temporary
// folder and returns the copy's overlay path.
func lockCopyRuntime(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "runtime")
	if err := os.CopyFS(dst, os.DirFS(lockShippedRuntime)); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "lock.json")
}

type lockResult struct {
	Code           int
	Stdout, Stderr string
}

func lockRun(args ...string) lockResult {
	var stdout, stderr bytes.Buffer
	code := runLock(context.Background(), args, &stdout, &stderr)
	return lockResult{code, stdout.String(), stderr.String()}
}

func lockReadOrEmpty(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func TestRunLockUsage(t *testing.T) {
	usageErr := func(msg string) lockResult {
		return lockResult{Code: 2, Stderr: lockUsage + "assistant lock: error: " + msg + "\n"}
	}
	for _, tc := range []struct {
		name string
		args []string
		want lockResult
	}{
		{"no arguments", nil, usageErr("the overlay file is required")},
		{"only --check", []string{"--check"}, usageErr("the overlay file is required")},
		{"two overlays", []string{"a.json", "b.json"}, usageErr("unrecognized arguments: b.json")},
		{"unknown flag", []string{"--write", "a.json"}, usageErr("unrecognized arguments: --write")},
		{"help", []string{"--check", "-h"}, lockResult{Code: 0, Stdout: lockUsage}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, lockRun(tc.args...)); diff != "" {
				t.Errorf("runLock (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunLock(t *testing.T) {
	shipped, err := os.ReadFile(filepath.Join(lockShippedRuntime, "lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	wheel := "wheels/nemar_tools-0.1.0-py3-none-any.whl"
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, overlay string)
		args  []string   // OVERLAY is replaced by the overlay path
		want  lockResult // $OVERLAY and $DIR stand for the overlay path and its folder
		after string     // the overlay's content afterwards; "=" means unchanged
	}{
		{
			name: "check current",
			args: []string{"--check", "OVERLAY"},
			want: lockResult{Code: 0, Stdout: "$OVERLAY is current\n"}, after: "=",
		},
		{
			name: "check accepts the flag after the file",
			args: []string{"OVERLAY", "--check"},
			want: lockResult{Code: 0, Stdout: "$OVERLAY is current\n"}, after: "=",
		},
		{
			name: "write when current rewrites the same bytes",
			args: []string{"OVERLAY"},
			want: lockResult{Code: 0, Stdout: "wrote $OVERLAY\n"}, after: string(shipped),
		},
		{
			name:  "write a missing overlay",
			setup: func(t *testing.T, overlay string) { lockMust(t, os.Remove(overlay)) },
			args:  []string{"OVERLAY"},
			want:  lockResult{Code: 0, Stdout: "wrote $OVERLAY\n"}, after: string(shipped),
		},
		{
			name:  "check a missing overlay",
			setup: func(t *testing.T, overlay string) { lockMust(t, os.Remove(overlay)) },
			args:  []string{"--check", "OVERLAY"},
			want:  lockResult{Code: 1, Stderr: "$OVERLAY is not what its wheels and depends.toml produce; regenerate it\n"}, after: "",
		},
		{
			name: "check a stale overlay",
			setup: func(t *testing.T, overlay string) {
				lockMust(t, os.WriteFile(overlay, bytes.Replace(shipped, []byte(`"depends": []`), []byte(`"depends": [ ]`), 1), 0o644))
			},
			args: []string{"--check", "OVERLAY"},
			want: lockResult{Code: 1, Stderr: "$OVERLAY is not what its wheels and depends.toml produce; regenerate it\n"}, after: "=",
		},
		{
			name: "write over a stale overlay",
			setup: func(t *testing.T, overlay string) {
				lockMust(t, os.WriteFile(overlay, bytes.Replace(shipped, []byte(`"depends": []`), []byte(`"depends": [ ]`), 1), 0o644))
			},
			args: []string{"OVERLAY"},
			want: lockResult{Code: 0, Stdout: "wrote $OVERLAY\n"}, after: string(shipped),
		},
		{
			name:  "check after one byte is appended to a committed wheel",
			setup: func(t *testing.T, overlay string) { lockAppendByte(t, filepath.Join(filepath.Dir(overlay), wheel)) },
			args:  []string{"--check", "OVERLAY"},
			want: lockResult{Code: 1, Stderr: "error: nemar_tools-0.1.0-py3-none-any.whl has new bytes under a name already in the overlay. " +
				"Served wheels are cached by name for a year, so build it as a new version instead.\n"},
			after: "=",
		},
		{
			name:  "write after one byte is appended to a committed wheel",
			setup: func(t *testing.T, overlay string) { lockAppendByte(t, filepath.Join(filepath.Dir(overlay), wheel)) },
			args:  []string{"OVERLAY"},
			want: lockResult{Code: 1, Stderr: "error: nemar_tools-0.1.0-py3-none-any.whl has new bytes under a name already in the overlay. " +
				"Served wheels are cached by name for a year, so build it as a new version instead.\n"},
			after: "=",
		},
		{
			name: "depends.toml missing",
			setup: func(t *testing.T, overlay string) {
				lockMust(t, os.Remove(filepath.Join(filepath.Dir(overlay), "depends.toml")))
			},
			args: []string{"OVERLAY"},
			want: lockResult{Code: 1, Stderr: "error: $DIR/depends.toml cannot be read: no such file or directory\n"}, after: "=",
		},
		{
			name: "several problems are all reported",
			setup: func(t *testing.T, overlay string) {
				dir := filepath.Dir(overlay)
				lockMust(t, os.WriteFile(filepath.Join(dir, "wheels/broken-1.0-py3-none-any.whl"), []byte("junk"), 0o644))
				lockMust(t, os.WriteFile(filepath.Join(dir, "wheels/zz_meta-1.0-py3-none-any.whl"), []byte("junk"), 0o644))
			},
			args: []string{"--check", "OVERLAY"},
			want: lockResult{Code: 1, Stderr: "error: broken-1.0-py3-none-any.whl is not a readable wheel: zip: not a valid zip file\n" +
				"error: zz_meta-1.0-py3-none-any.whl is not a readable wheel: zip: not a valid zip file\n"},
			after: "=",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			overlay := lockCopyRuntime(t)
			if tc.setup != nil {
				tc.setup(t, overlay)
			}
			before := lockReadOrEmpty(t, overlay)
			var args []string
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "OVERLAY", overlay))
			}
			got := lockRun(args...)
			replace := strings.NewReplacer(overlay, "$OVERLAY", filepath.Dir(overlay), "$DIR")
			got.Stdout, got.Stderr = replace.Replace(got.Stdout), replace.Replace(got.Stderr)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("runLock (-want +got):\n%s", diff)
			}
			want := tc.after
			if want == "=" {
				want = before
			}
			if diff := cmp.Diff(want, lockReadOrEmpty(t, overlay)); diff != "" {
				t.Errorf("overlay afterwards (-want +got):\n%s", diff)
			}
			// Atomic writes leave no temporary file behind.
			entries, err := os.ReadDir(filepath.Dir(overlay))
			lockMust(t, err)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Errorf("left behind %s", e.Name())
				}
			}
		})
	}
}

func TestRunLockKeepsMode(t *testing.T) {
	overlay := lockCopyRuntime(t)
	lockMust(t, os.Chmod(overlay, 0o664))
	if r := lockRun(overlay); r.Code != 0 {
		t.Fatalf("runLock: %+v", r)
	}
	fi, err := os.Stat(overlay)
	lockMust(t, err)
	if fi.Mode().Perm() != 0o664 {
		t.Errorf("mode %v after rewrite, want 0664", fi.Mode().Perm())
	}
}

func TestRunBuildWheel(t *testing.T) {
	run := func(args ...string) lockResult {
		var stdout, stderr bytes.Buffer
		code := runBuildWheel(context.Background(), args, &stdout, &stderr)
		return lockResult{code, stdout.String(), stderr.String()}
	}
	src := filepath.Join(t.TempDir(), "src")
	lockMust(t, os.CopyFS(src, os.DirFS(filepath.Join(lockShippedRuntime, "src"))))
	out := filepath.Join(t.TempDir(), "wheels")
	wheel := filepath.Join(out, "nemar_tools-0.1.0-py3-none-any.whl")

	if diff := cmp.Diff(lockResult{Code: 0, Stdout: "wrote " + wheel + "\n"}, run(src, out)); diff != "" {
		t.Errorf("first build (-want +got):\n%s", diff)
	}
	built, err := os.ReadFile(wheel)
	lockMust(t, err)
	shipped, err := os.ReadFile(filepath.Join(lockShippedRuntime, "wheels/nemar_tools-0.1.0-py3-none-any.whl"))
	lockMust(t, err)
	if !bytes.Equal(built, shipped) {
		t.Error("build-wheel output differs from the committed wheel")
	}
	if diff := cmp.Diff(lockResult{Code: 0, Stdout: wheel + " is current\n"}, run(src, out)); diff != "" {
		t.Errorf("rebuild (-want +got):\n%s", diff)
	}

	// Changed sources under the same version are refused, and the wheel is left alone.
	f := filepath.Join(src, "nemar_tools", "__init__.py")
	lockAppendByte(t, f)
	want := lockResult{Code: 1, Stderr: "error: " + wheel + " already exists with other bytes. Served wheels are cached by name for a year, so raise the version in " +
		filepath.Join(src, "pyproject.toml") + " instead.\n"}
	if diff := cmp.Diff(want, run(src, out)); diff != "" {
		t.Errorf("changed sources (-want +got):\n%s", diff)
	}
	after, err := os.ReadFile(wheel)
	lockMust(t, err)
	if !bytes.Equal(after, shipped) {
		t.Error("a refused build changed the wheel")
	}

	usage := lockResult{Code: 2, Stderr: buildWheelUsage + "assistant build-wheel: error: SRC_DIR and OUT_DIR are required\n"}
	if diff := cmp.Diff(usage, run(src)); diff != "" {
		t.Errorf("one argument (-want +got):\n%s", diff)
	}
}

func lockAppendByte(t *testing.T, p string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	lockMust(t, err)
	_, err = f.Write([]byte{0})
	lockMust(t, err)
	lockMust(t, f.Close())
}

func lockMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
