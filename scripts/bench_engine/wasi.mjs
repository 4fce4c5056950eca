// The engine's python.wasm under Node's WASI (V8 compiles it), for scripts/bench_engine.sh: the
// speed this build of CPython can reach as WebAssembly, beside the server's wazero.
//
//   node --no-concurrent-marking scripts/bench_engine/wasi.mjs ENGINE_DIR FILE
//
// The guest sees what the server gives it (sandbox/engine.go): the engine's lib/python3.X at
// /usr/lib/python3.X with PYTHONHOME=/usr, its tz database at /usr/share/zoneinfo, and a fresh
// scratch directory at /tmp (HOME and TMPDIR), which holds a copy of FILE run as
// `python /tmp/main.py`. Nothing else of the host is visible. Every import of the `osa` host
// module (osa.checkpoint, which only the server's snapshots call) is a no-op returning 0.
// Python's stdout and stderr are this process's; the exit code is the interpreter's.
//
// --no-concurrent-marking: with V8's concurrent marking on, Node v20.20.2 segfaults in JS right
// after some runs end (csv_group.py every time: after the program's last write, in the JS that
// follows _start, and gone when the run's large objects are deleted before exit); with it off
// the crash is gone and the programs' times are the same within noise. V8's GC marks the JS
// heap only: the guest's linear memory is not in it.
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WASI } from "node:wasi";

const [engine, file] = process.argv.slice(2);
if (!process.execArgv.includes("--no-concurrent-marking")) {
	process.stderr.write("wasi.mjs: run node with --no-concurrent-marking (see the comment at the top)\n");
}
if (!engine || !file) {
	process.stderr.write("usage: node wasi.mjs ENGINE_DIR FILE\n");
	process.exit(2);
}
const libs = readdirSync(join(engine, "lib")).filter((n) => /^python3\.\d+$/.test(n));
if (libs.length !== 1) {
	process.stderr.write(`wasi.mjs: want one lib/python3.* in ${engine}, found ${libs.length}\n`);
	process.exit(1);
}

const scratch = mkdtempSync(join(tmpdir(), "bench-engine-wasi-"));
let code = 1;
try {
	copyFileSync(file, join(scratch, "main.py"));
	const preopens = { [`/usr/lib/${libs[0]}`]: join(engine, "lib", libs[0]), "/tmp": scratch };
	if (existsSync(join(engine, "share", "zoneinfo"))) {
		preopens["/usr/share/zoneinfo"] = join(engine, "share", "zoneinfo");
	}
	const wasi = new WASI({
		version: "preview1",
		args: ["python", "/tmp/main.py"],
		env: {
			PYTHONHOME: "/usr",
			PYTHONDONTWRITEBYTECODE: "1",
			PYTHONUNBUFFERED: "1",
			PYTHONUTF8: "1",
			PYTHONSAFEPATH: "1",
			PYTHONNOUSERSITE: "1",
			HOME: "/tmp",
			TMPDIR: "/tmp",
			LANG: "C.UTF-8",
		},
		preopens,
		returnOnExit: true,
	});
	const module = await WebAssembly.compile(readFileSync(join(engine, "python.wasm")));
	const osa = {};
	for (const imp of WebAssembly.Module.imports(module)) {
		if (imp.module === "osa" && imp.kind === "function") osa[imp.name] = () => 0;
	}
	const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi.getImportObject().wasi_snapshot_preview1, osa });
	code = wasi.start(instance);
} finally {
	rmSync(scratch, { recursive: true, force: true });
}
process.exit(code);
