// Package web is the reference chat page the server serves at GET /{c}/demo/: plain modern
// JavaScript without a framework or a bundler, embedded in the binary.
//
// The page (index.html, app.js, style.css) reads the community's config from GET /{c},
// streams /chat and /chat/resume, shows the permission gate and sends ClientToolResults.
// The runtime (worker.js) runs Pyodide in a module Web Worker: it merges the community's lock
// overlay into the distribution's lock (add-only), loads the preload, imports
// import_before_seal, seals the worker (the native network APIs are replaced by one guarded
// osa.fetch that allows exactly fetch_allow) and runs the prelude. osa_runtime.py is the
// Python half of that runtime; lib.mjs holds the pure functions both halves share (the
// fetch_allow check and output clipping), which the browser tests also import directly.
package web
