#!/usr/bin/env bash
# The server's Python runtime beside native CPython and Pyodide on Node.js, in one run: cold
# start (a new worker pool and its first run), warm runs through the pool (fast mode) and in
# process (strict mode), a fresh `python3 -c` per run, Pyodide in a fresh node process and in a
# warm one, for print(1), an import-heavy snippet and a CPU loop; then resident memory of a busy
# worker, of python3 and of node. Prints the Markdown tables of BENCHMARKS.md.
#
#   scripts/bench_python.sh                # about 3 minutes on 2 cores
#   BENCH_N=5 BENCH_N_CPU=3 scripts/bench_python.sh
#
# The measuring is sandbox/bench_compare_test.go (BenchmarkCompareRuntimes), which builds the
# assistant binary for the workers; Pyodide runs through scripts/bench_pyodide.mjs. Needs the
# engine (scripts/build_python_wasi.sh), node, and the npm pyodide package
# (scripts/install_pyodide.sh 0.29.5, run here when it is missing). Everything is local: no
# snippet touches the network, and every loop is bounded.
#
# BENCH_NATIVE lists the native interpreters (the first is the baseline). The default is the
# distribution's /usr/bin/python3, plus a CPython 3.13 when one is installed (the engine's and
# Pyodide's minor version), each resolved past pyenv-style shims to the real executable.
set -euo pipefail
cd "$(dirname "$0")/.."
PYODIDE_VERSION=0.29.5

command -v node >/dev/null || { echo "bench_python: node is needed (apt-get install nodejs)" >&2; exit 1; }
engine=$(scripts/build_python_wasi.sh --print-dir 2>/dev/null) || {
	echo "bench_python: the Python engine is not built (scripts/build_python_wasi.sh)" >&2
	exit 1
}
pyodide_dir="${ASSISTANT_PYODIDE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/assistant/pyodide}/$PYODIDE_VERSION"
if [ ! -f "$pyodide_dir/pyodide.mjs" ]; then
	scripts/install_pyodide.sh "$PYODIDE_VERSION" >&2
fi

# real prints the interpreter behind $1 (a pyenv shim is a shell script that costs ~40 ms a run).
real() { "$1" -c 'import sys; print(sys.executable)' 2>/dev/null; }
if [ -z "${BENCH_NATIVE:-}" ]; then
	natives=()
	if [ -x /usr/bin/python3 ]; then
		natives+=("$(real /usr/bin/python3)")
	else
		natives+=("$(real python3)")
	fi
	# python3.13 on PATH, else a pyenv 3.13 (its shim fails when 3.13 is not active).
	cand=""
	for p in "$(command -v python3.13 || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3.13; do
		if [ -n "$p" ] && [ -x "$p" ] && "$p" -c '' 2>/dev/null; then cand=$p; fi
		[ -n "$cand" ] && break
	done
	if [ -n "$cand" ] && [ "$(real "$cand")" != "${natives[0]}" ]; then
		natives+=("$(real "$cand")")
	fi
	BENCH_NATIVE="${natives[*]}"
fi

out=$(mktemp)
log=$(mktemp)
trap 'rm -f "$out" "$log"' EXIT
echo "bench_python: measuring (load average $(cut -d' ' -f1-3 /proc/loadavg)); natives: $BENCH_NATIVE" >&2
if ! ASSISTANT_BENCH_COMPARE="$out" ASSISTANT_ENGINE_DIR="$engine" BENCH_NATIVE="$BENCH_NATIVE" \
	BENCH_NODE="$(command -v node)" BENCH_PYODIDE_SCRIPT="$PWD/scripts/bench_pyodide.mjs" PYODIDE_DIR="$pyodide_dir" \
	go test ./sandbox -run '^$' -bench '^BenchmarkCompareRuntimes$' -benchtime 1x -count 1 -timeout 20m >"$log" 2>&1; then
	cat "$log" >&2
	exit 1
fi
if [ ! -s "$out" ]; then
	cat "$log" >&2
	echo "bench_python: the benchmark wrote nothing (did it skip?)" >&2
	exit 1
fi
printf '%s\n' "\`scripts/bench_python.sh\`"
echo
cat "$out"
