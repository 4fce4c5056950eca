// Pyodide on Node.js, the server-side Python runtime others deploy, as the comparison for the
// server's own runtime in scripts/bench_python.sh (which drives this script from
// sandbox/bench_compare_test.go; it is not meant to be run by hand, though it can be).
//
//   node scripts/bench_pyodide.mjs once CODE   # a fresh process: load Pyodide, run CODE, exit
//   node scripts/bench_pyodide.mjs serve       # load once, then run requests from stdin
//
// The npm `pyodide` package is found in $PYODIDE_DIR (default: the copy scripts/install_pyodide.sh
// puts in ~/.cache/assistant/pyodide/0.29.5). Nothing is fetched: the benchmark snippets use the
// standard library only, which is in the package's python_stdlib.zip.
//
// once: Python's stdout goes to this process's stdout; a Python exception exits 1.
//
// serve: after loadPyodide, one JSON line on stdout:
//   {"ready":true,"load_ms":…,"rss":…,"pyodide":"0.29.5","python":"3.13.2","node":"v20…"}
// then for every JSON line {"code":"…"} on stdin, one JSON line {"stdout":"…","error":"…","ms":…}
// (error empty when the code raised nothing). Each request runs in a fresh globals dict (modules
// already imported stay imported: that is one interpreter, as a warm Pyodide server keeps it).
// The process exits when stdin ends.
import { createInterface } from "node:readline";
import { homedir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.env.PYODIDE_DIR || join(homedir(), ".cache", "assistant", "pyodide", "0.29.5");
const [mode, code] = process.argv.slice(2);
if (mode !== "serve" && !(mode === "once" && typeof code === "string")) {
	process.stderr.write("usage: node bench_pyodide.mjs once CODE | serve\n");
	process.exit(2);
}

const t0 = performance.now();
const { loadPyodide } = await import(pathToFileURL(join(dir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: dir + "/" });
const loadMs = performance.now() - t0;

// Capture Python's stdout exactly (the write handler sees the bytes, newlines included).
const decoder = new TextDecoder();
let captured = [];
pyodide.setStdout({
	write(buf) {
		captured.push(decoder.decode(buf, { stream: true }));
		return buf.length;
	},
});
const freshGlobals = () => pyodide.globals.get("dict")();

if (mode === "once") {
	try {
		pyodide.runPython(code, { globals: freshGlobals() });
	} catch (err) {
		process.stdout.write(captured.join(""));
		process.stderr.write(String(err) + "\n");
		process.exit(1);
	}
	process.stdout.write(captured.join(""));
	process.exit(0);
}

const python = pyodide.runPython("import platform; platform.python_version()");
process.stdout.write(JSON.stringify({
	ready: true,
	load_ms: loadMs,
	rss: process.memoryUsage().rss,
	pyodide: pyodide.version,
	python,
	node: process.version,
}) + "\n");

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
	if (!line.trim()) continue;
	const req = JSON.parse(line);
	captured = [];
	let error = "";
	const start = performance.now();
	try {
		const g = freshGlobals();
		pyodide.runPython(req.code, { globals: g });
		g.clear(); // drop what the snippet bound (a 100 MB bytearray), as a finished run would
		g.destroy();
	} catch (err) {
		error = String(err);
	}
	const ms = performance.now() - start;
	process.stdout.write(JSON.stringify({ stdout: captured.join(""), error, ms }) + "\n");
}
process.exit(0);
