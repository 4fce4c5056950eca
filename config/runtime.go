package config

import (
	"strings"

	"github.com/osc-assistant/assistant/runtimelock"
)

// checkRuntime resolves runtime.python against the Pyodide distribution it names and its lock
// overlay (phase 4): the version must be one we know, the overlay must verify, and every
// preload name, overlay dependency and import_before_seal root must resolve.
//
// An overlay that does not verify is recorded on the community (Overlay stays nil) and reported
// as an error that FailsClosed: the server can still serve the community with its client tools
// off, as the reference does, while assistant validate counts it as an error.
func (k *checker) checkRuntime(c *Community, locks *runtimelock.Cache) {
	py := c.python()
	const p = "runtime.python."
	for _, pr := range runtimelock.CheckVersion(py.PyodideVersion) {
		k.add(p+pr.Path, "%s", pr.Msg)
	}
	var overlay *runtimelock.Overlay
	if py.Lockfile != nil && k.lockfileReadable {
		v, err := locks.Load(c.Dir, *py.Lockfile)
		if err != nil {
			c.OverlayErr = err
			at := k.lookup(p + "lockfile")
			for line := range strings.SplitSeq(err.Error(), "\n") {
				k.errs = append(k.errs, Error{File: k.file, Line: at.line, Column: at.col, Path: p + "lockfile", Msg: line, FailsClosed: true})
			}
		} else {
			c.Overlay = v
		}
		overlay = v.Overlay() // usable for name resolution even when a wheel failed
	}
	dist, ok := runtimelock.Distribution(py.PyodideVersion)
	if !ok {
		return
	}
	for _, pr := range dist.Check(overlay, py.Preload, py.ImportBeforeSeal) {
		k.add(p+pr.Path, "%s", pr.Msg)
	}
}
