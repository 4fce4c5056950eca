// Package web is the reference chat page the server serves at GET /{c}/demo/: plain modern
// JavaScript without a framework or a bundler, embedded in the binary.
//
// The page (index.html, app.js, style.css) reads the community's config from GET /{c},
// streams /chat and /chat/resume, shows the permission gate and sends ClientToolResults.
// The runtime (worker.js) runs Pyodide in a module Web Worker: it merges the community's lock
// overlay into the distribution's lock (add-only), loads the preload, imports
// import_before_seal, seals the worker (the native network APIs are replaced by one guarded
// osa.fetch that allows exactly fetch_allow) and runs the prelude. osa_runtime.py is the
// Python half of that runtime; it builds the osa module from osa.py (package web/osa), the same
// file the server's runtime runs, around the worker's bridge. lib.mjs holds the pure functions
// the page and the worker share (the fetch_allow check, the workspace's rules, output clipping),
// which the browser tests also import directly; web/testdata holds the cases of those rules that
// both the server's Go tests and the browser's tests run. Every cap the page and the runtime
// apply comes from package limits, in the "limits" object of the page's config (PageLimits).
package web
