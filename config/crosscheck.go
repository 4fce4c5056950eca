package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/osc-assistant/assistant/limits"
)

// crossCheck is phase 4: the rules that need several files, the disk, or Python.
func crossCheck(ctx context.Context, files []loaded, opts Options) ErrorList {
	var errs ErrorList
	byID := map[string]string{}
	for _, f := range files {
		k := &checker{file: f.file, index: f.index, blocks: f.blocks}
		c := f.community
		c.Dir, c.File = f.dir, f.file
		if folder := filepath.Base(f.dir); folder != c.ID {
			k.add("id", "id is %q but its folder is named %q; they must be equal, because the id is the URL the widget calls", c.ID, folder)
		}
		if other, dup := byID[c.ID]; dup {
			k.add("id", "id %q is also used by %s", c.ID, other)
		}
		byID[c.ID] = f.file
		for i, d := range c.Documentation {
			if d.SourcePath != nil && relPathProblem(*d.SourcePath, ".md") == "" {
				k.checkSourcePath(f.dir, fmt.Sprintf("documentation[%d].source_path", i), *d.SourcePath)
			}
		}
		if py := c.python(); py != nil {
			if py.Lockfile != nil {
				k.lockfileReadable = k.checkLockfileExists(f.dir, *py.Lockfile)
			}
			k.checkRuntime(c, opts.locks())
			if opts.Python != nil && py.Prelude != nil {
				k.checkPreludeCompiles(ctx, opts.Python, py.Prelude)
			}
		}
		errs = append(errs, k.errs...)
	}
	return errs
}

// checkLockfileExists makes sure the lockfile is a regular file inside the community folder;
// os.Root refuses a symlink that leads out of it.
func (k *checker) checkLockfileExists(dir, lockfile string) bool {
	const p = "runtime.python.lockfile"
	root, err := os.OpenRoot(dir)
	if err != nil {
		k.add(p, "cannot open the community folder: %v", err)
		return false
	}
	defer root.Close()
	info, err := root.Stat(lockfile)
	switch {
	case err != nil:
		k.add(p, "lockfile %q cannot be read inside the community folder: %v", lockfile, trimPathError(err))
	case !info.Mode().IsRegular():
		k.add(p, "lockfile %q is not a regular file", lockfile)
	default:
		return true
	}
	return false
}

// checkSourcePath makes sure a documentation entry's source_path is a regular file inside the
// community folder (os.Root refuses a symlink that leads out of it), no larger than a fetched
// document may be.
func (k *checker) checkSourcePath(dir, p, name string) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		k.add(p, "cannot open the community folder: %v", err)
		return
	}
	defer root.Close()
	info, err := root.Stat(name)
	switch {
	case err != nil:
		k.add(p, "source_path %q cannot be read inside the community folder: %v", name, trimPathError(err))
	case !info.Mode().IsRegular():
		k.add(p, "source_path %q is not a regular file", name)
	case info.Size() > int64(limits.MaxDocumentBytes):
		k.add(p, "source_path %q is %d bytes, over the %d MiB a document may have", name, info.Size(), limits.MaxDocumentBytes>>20)
	}
}

// trimPathError drops the operation and path that os errors repeat, keeping the reason.
func trimPathError(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// checkPreludeCompiles compile-checks each deployment's prelude and reports a SyntaxError at the
// YAML line of the offending prelude line.
func (k *checker) checkPreludeCompiles(ctx context.Context, py SyntaxChecker, prelude *PerDeployment[string]) {
	prelude.Each(func(suffix string, dep Deployment, src string) {
		p := "runtime.python.prelude" + suffix
		if chars(src) > int(limits.MaxPreludeChars) {
			return // already an error (rules.go); compiling a source of any length costs memory
		}
		se, err := py.CheckSyntax(ctx, src)
		if err != nil {
			k.add(p, "prelude could not be compile-checked: %v", err)
			return
		}
		if se == nil {
			return
		}
		what := "prelude"
		if dep != "" {
			what = "prelude for " + string(dep)
		}
		at := k.lookup(p)
		e := Error{File: k.file, Line: at.line, Column: at.col, Path: p, Msg: fmt.Sprintf("%s does not compile: %s (prelude line %d)", what, se.Msg, se.Line)}
		if b, ok := k.blocks[p]; ok && se.Line > 0 {
			// In a literal or folded block the source starts on the line after the indicator.
			e.Line, e.Column, e.Msg = b.line+se.Line, b.indent+1, fmt.Sprintf("%s does not compile: %s", what, se.Msg)
		}
		k.errs = append(k.errs, e)
	})
}
