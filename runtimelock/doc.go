// Package runtimelock owns a community's Pyodide lock overlay (config.md §7): the JSON file,
// usually runtime/lock.json, that lists the extra pure-Python wheels the browser merges into
// the stock Pyodide lock, and the wheels themselves under wheels/ beside it.
//
// It does five things:
//
//   - Decode parses an overlay strictly: every field is required, unknown and duplicate keys
//     are refused at every level, and every problem is reported at once as a *DecodeError.
//   - Load reads an overlay and its wheels from inside a community folder (through an
//     os.Root, so no path or symlink reaches outside it), checks each wheel's sha256, and
//     keeps the verified bytes in memory. Wheels are then served by exact file name from that
//     map, never by joining a request path onto the file system.
//   - Cache remembers Load's outcome for the life of the process (see below).
//   - Distribution and Dist.Check hold the embedded stock lock of each Pyodide version we
//     support (pyodide/<version>/pyodide-lock.json, written by scripts/update_pyodide_lock.sh)
//     and check a community's preload, import_before_seal and overlay against it.
//   - Generate is the generator behind "assistant lock" (config.md §7.5): it rebuilds an
//     overlay from wheels/*.whl and depends.toml and renders it byte for byte like Python's
//     json.dumps(obj, indent=2). BuildWheel writes a reproducible pure-Python wheel for the
//     packages this project ships itself.
//
// It does not own the community YAML (package config validates runtime.python, including the
// §7.2 path rules for lockfile and the syntax of import_before_seal entries), the HTTP routes
// that serve /config and the wheels (package routers decides status codes and headers), or
// anything that runs Python on the server.
//
// # Caching
//
// Cache keys an outcome by the community folder's absolute path, the lockfile string and the
// sha256 of the overlay file's bytes, and it caches failures as well as successes. The overlay
// file is re-read (it is small) on every Cache.Load, but the wheels are read only when the
// overlay's bytes are new. So:
//
//   - a wheel changed on disk under a name the overlay already records is never re-read, and
//     the bytes served are always the bytes that were hashed;
//   - a refusal stays a refusal until the overlay itself changes, as in OSA (config.md §7.3);
//   - a newly committed overlay (a new wheel version) is verified anew on reload, which OSA's
//     per-(folder, lockfile) cache would not do.
//
// Only the newest outcome per (folder, lockfile) is kept, so the cache does not grow as an
// overlay is edited. An overlay that cannot be read at all is not cached: there is nothing to
// key it by, and reading it again costs nothing.
//
// # Failing closed
//
// Load returns the decoded overlay together with the error when only wheel verification
// failed, because config needs the package names to resolve preload. Such a *Verified serves
// no wheel and has no JSON: callers must treat the community's browser runtime as unavailable.
package runtimelock
