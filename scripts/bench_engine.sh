#!/usr/bin/env bash
# The server's Python against the same python.wasm under V8 (issue 25): a fixed set of programs
# (scripts/bench_engine/*.py) run in every runtime, interleaved (round r runs every program in
# every runtime, then round r+1 starts), and a Markdown table of the median seconds per program
# and runtime, each with its ratio to the Node-WASI column (the ceiling for this python.wasm).
#
#   scripts/bench_engine.sh                          # ROUNDS=3: about 7 minutes on 2 busy cores
#   ROUNDS=1 PROGRAMS="cpu csv_write" RUNTIMES="fast node-wasi native" scripts/bench_engine.sh
#   ENGINE_DIR=/path/to/an/experimental/engine scripts/bench_engine.sh
#
# Each program times its own work with time.perf_counter() (interpreter start-up, imports and
# input made beforehand are not counted) and prints a CHECK line, then `ELAPSED <seconds>` last;
# the CHECK lines are compared across runtimes and rounds, so a run that did less is caught.
# A program whose module is missing in a runtime (sqlite3, openpyxl in Pyodide) prints SKIP: "—".
#
# Runtimes (RUNTIMES, space-separated; default all, in this order):
#   fast       $TMP/assistant run --community nemar --deployment production FILE (the binary is
#              built once from this tree): a sandbox-worker process in fast mode, as the
#              server's workers run code; the program's stdout is the "stdout" field of
#              the printed tool result
#   strict     the same with --strict (in process, every loop checks the deadline)
#   node-wasi  node --no-concurrent-marking scripts/bench_engine/wasi.mjs ENGINE FILE: the
#              engine's python.wasm under node:wasi (V8), mounted as the server mounts it
#   pyodide    node scripts/bench_pyodide.mjs once "$(cat FILE)" (Pyodide 0.29.5, where
#              scripts/install_pyodide.sh put it; never installed from here)
#   native     Debian's /usr/bin/python3 (else python3 on PATH), PYTHONSAFEPATH=1 FILE
# PROGRAMS (space-separated; default all): cpu csv_write csv_group sqlite json_roundtrip regex
# openpyxl_write. ROUNDS (default 3): runs per cell; the median is shown. ENGINE_DIR: the engine
# (default: scripts/build_python_wasi.sh --print-dir), also the ASSISTANT_ENGINE_DIR of fast and
# strict, so an experimental build can be measured.
#
# A failed run shows "err" in its cell, and its stderr goes to a log file named under the table.
# Exits 2 on a usage error, 1 when nothing could run, else 0. Everything is local.
set -euo pipefail
cd "$(dirname "$0")/.."
PYODIDE_VERSION=0.29.5
RUN_TIMEOUT=600 # seconds, per run (the server's own limit for nemar is 60 s)

ALL_PROGRAMS=(cpu csv_write csv_group sqlite json_roundtrip regex openpyxl_write)
ALL_RUNTIMES=(fast strict node-wasi pyodide native)
# shellcheck disable=SC2016 # Markdown's backticks, not command substitution
declare -A DESC=(
	[cpu]='`sum(i*i for i in range(10**7))`'
	[csv_write]='write 200k CSV rows with `csv`'
	[csv_group]='`csv.DictReader` + group means of those rows'
	[sqlite]='sqlite3 in memory: 200k rows `executemany`, a GROUP BY and a window query'
	[json_roundtrip]='`json` dumps + loads of a 10 MB document'
	[regex]='`re` findall/finditer/sub over 2.9 MB of text'
	[openpyxl_write]='openpyxl: a 10,000-row workbook to a `BytesIO`'
)

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
	exit 0
}
usage_error() {
	echo "bench_engine: $*" >&2
	exit 2
}
in_list() {
	local x=$1
	shift
	local y
	for y in "$@"; do [ "$x" = "$y" ] && return 0; done
	return 1
}

case "${1:-}" in
-h | --help) usage ;;
"") ;;
*) usage_error "no arguments are taken (set ROUNDS, PROGRAMS, RUNTIMES, ENGINE_DIR); see --help" ;;
esac
ROUNDS=${ROUNDS:-3}
[[ $ROUNDS =~ ^[1-9][0-9]{0,2}$ ]] || usage_error "ROUNDS must be a whole number from 1 to 999, not '$ROUNDS'"
read -r -a programs <<<"${PROGRAMS:-${ALL_PROGRAMS[*]}}"
read -r -a runtimes <<<"${RUNTIMES:-${ALL_RUNTIMES[*]}}"
[ ${#programs[@]} -gt 0 ] || usage_error "PROGRAMS is empty"
[ ${#runtimes[@]} -gt 0 ] || usage_error "RUNTIMES is empty"
for p in "${programs[@]}"; do
	in_list "$p" "${ALL_PROGRAMS[@]}" || usage_error "unknown program '$p' (want some of: ${ALL_PROGRAMS[*]})"
done
for rt in "${runtimes[@]}"; do
	in_list "$rt" "${ALL_RUNTIMES[@]}" || usage_error "unknown runtime '$rt' (want some of: ${ALL_RUNTIMES[*]})"
done

tmp=$(mktemp -d)
log=$(mktemp "${TMPDIR:-/tmp}/bench_engine.XXXXXX.log")
failed=0
cleanup() {
	rm -rf "$tmp"
	[ "$failed" -gt 0 ] || rm -f "$log"
}
trap cleanup EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# What each runtime needs; a runtime that cannot be set up shows "—" and says why.
declare -A UNAVAILABLE=()
unavailable() { UNAVAILABLE[$1]=$2; }

native=""
if [ -x /usr/bin/python3 ]; then
	native=/usr/bin/python3
elif command -v python3 >/dev/null; then
	# past a pyenv-style shim, to the interpreter itself
	native=$(python3 -c 'import sys; print(sys.executable)')
fi
native_version=""
if [ -n "$native" ]; then
	native_version=$("$native" -c 'import platform; print(platform.python_implementation(), platform.python_version())')
else
	unavailable native "no python3"
	for rt in fast strict; do unavailable "$rt" "no python3 to read the tool result's JSON"; done
fi

engine=${ENGINE_DIR:-}
if [ -z "$engine" ] && ! engine=$(scripts/build_python_wasi.sh --print-dir 2>>"$log"); then
	engine=""
	failed=1
	for rt in fast strict node-wasi; do unavailable "$rt" "the engine is not built (scripts/build_python_wasi.sh, or set ENGINE_DIR)"; done
elif [ ! -f "$engine/python.wasm" ]; then
	for rt in fast strict node-wasi; do unavailable "$rt" "no python.wasm in $engine"; done
fi
buildinfo() {
	local v
	v=$(sed -n "s/^$1=//p" "$engine/BUILDINFO" 2>/dev/null | head -1)
	echo "${v:-?}"
}

node=$(command -v node || true)
node_version=""
if [ -z "$node" ]; then
	for rt in node-wasi pyodide; do unavailable "$rt" "no node"; done
else
	node_version=$("$node" --version)
	major=${node_version#v}
	major=${major%%.*}
	if [ "$major" -lt 20 ]; then
		unavailable node-wasi "node:wasi's preview1 needs Node 20 or later (found $node_version)"
	fi
fi
pyodide_dir="${ASSISTANT_PYODIDE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/assistant/pyodide}/$PYODIDE_VERSION"
if [ ! -f "$pyodide_dir/pyodide.mjs" ]; then
	unavailable pyodide "Pyodide $PYODIDE_VERSION is not installed in $pyodide_dir (scripts/install_pyodide.sh $PYODIDE_VERSION fetches it from the npm registry)"
fi

go=$(command -v go || echo /usr/local/go/bin/go)
go_version=$("$go" env GOVERSION 2>/dev/null || echo "no go")
wazero=$("$go" list -m -f '{{.Version}}' github.com/tetratelabs/wazero 2>/dev/null || true)
bin=$tmp/assistant
if in_list fast "${runtimes[@]}" || in_list strict "${runtimes[@]}"; then
	if [ -z "${UNAVAILABLE[fast]:-}" ]; then
		echo "bench_engine: building the assistant binary" >&2
		if ! "$go" build -o "$bin" ./cmd/assistant 2>>"$log"; then
			failed=1
			for rt in fast strict; do unavailable "$rt" "go build ./cmd/assistant failed (see $log)"; done
		fi
	fi
fi

# run_once RT PROG ROUND: one run; records its seconds, SKIP, or err (stderr to the log), and
# its CHECK line.
run_once() {
	local rt=$1 prog=$2 round=$3 file=scripts/bench_engine/$2.py rc=0
	local out=$tmp/out err=$tmp/err cell=$tmp/cell.$2.$1
	: >"$out"
	: >"$err"
	case $rt in
	fast | strict)
		local flags=()
		[ "$rt" = strict ] && flags=(--strict)
		ASSISTANT_ENGINE_DIR=$engine timeout "$RUN_TIMEOUT" "$bin" run "${flags[@]}" --community nemar --deployment production "$file" >"$tmp/json" 2>"$err" || rc=$?
		if [ "$rc" -eq 0 ]; then
			"$native" -c '
import json, sys
r = json.load(sys.stdin)
sys.stdout.write(r.get("stdout") or "")
if r.get("status") != "ok":
    sys.stderr.write("status %s: %s\n" % (r.get("status"), r.get("stderr") or ""))
    sys.exit(1)
' <"$tmp/json" >"$out" 2>>"$err" || rc=$?
		fi
		;;
	node-wasi)
		timeout "$RUN_TIMEOUT" "$node" --no-warnings --no-concurrent-marking scripts/bench_engine/wasi.mjs "$engine" "$file" >"$out" 2>"$err" || rc=$?
		;;
	pyodide)
		PYODIDE_DIR=$pyodide_dir timeout "$RUN_TIMEOUT" "$node" scripts/bench_pyodide.mjs once "$(cat "$file")" >"$out" 2>"$err" || rc=$?
		;;
	native)
		PYTHONSAFEPATH=1 timeout "$RUN_TIMEOUT" "$native" "$file" >"$out" 2>"$err" || rc=$?
		;;
	esac
	local last elapsed=""
	last=$(grep -v '^[[:space:]]*$' "$out" | tail -n 1 || true)
	if [ "$rc" -eq 0 ] && grep -q '^SKIP' "$out"; then
		echo skip >>"$cell"
		echo "round $round: $prog $rt: skipped ($(grep -m1 '^SKIP' "$out"))" >&2
		return
	fi
	if [[ $rc -eq 0 && $last =~ ^ELAPSED\ ([0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?)$ ]]; then
		elapsed=${BASH_REMATCH[1]}
	fi
	if [ -z "$elapsed" ]; then
		failed=$((failed + 1))
		echo err >>"$cell"
		{
			echo "== $prog in $rt, round $round: exit $rc"
			[ "$rc" -eq 0 ] && echo "(the last line of stdout is not ELAPSED <seconds>)"
			echo "-- stderr"
			tail -c 20000 "$err"
			echo "-- stdout"
			tail -c 2000 "$out"
			echo
		} >>"$log"
		echo "round $round: $prog $rt: err (exit $rc; see $log)" >&2
		return
	fi
	echo "$elapsed" >>"$cell"
	grep -m1 '^CHECK' "$out" >>"$tmp/check.$prog.$rt" || echo "CHECK (none)" >>"$tmp/check.$prog.$rt"
	echo "round $round: $prog $rt: $elapsed s" >&2
}

echo "bench_engine: $ROUNDS round(s) of ${programs[*]} in ${runtimes[*]} (load average $load_start)" >&2
for ((r = 1; r <= ROUNDS; r++)); do
	for prog in "${programs[@]}"; do
		for rt in "${runtimes[@]}"; do
			[ -n "${UNAVAILABLE[$rt]:-}" ] && continue
			run_once "$rt" "$prog" "$r"
		done
	done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# median FILE: the median of the numbers in FILE, or err if any round failed, or skip.
median() {
	local f=$1
	if [ ! -s "$f" ]; then
		echo none
	elif grep -qx err "$f"; then
		echo err
	elif grep -qx skip "$f"; then
		echo skip
	else
		sort -g "$f" | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
	fi
}
fmt_s() { awk -v v="$1" 'BEGIN {if (v < 1) printf "%.3f s", v; else if (v < 10) printf "%.2f s", v; else printf "%.1f s", v}'; }

# The check a program's runs should all print: the one most runtimes printed (runtimes, not runs;
# a tie goes to the earlier column).
declare -A MISMATCH=()
notes=()
for prog in "${programs[@]}"; do
	best="" best_n=0
	declare -A seen=()
	for rt in "${runtimes[@]}"; do
		f=$tmp/check.$prog.$rt
		[ -s "$f" ] || continue
		if [ "$(sort -u "$f" | wc -l)" -gt 1 ]; then
			MISMATCH[$prog.$rt]=1
			notes+=("check mismatch: \`$prog\` in $rt printed different checks across rounds: $(sort -u "$f" | paste -sd '|')")
			continue
		fi
		c=$(head -1 "$f")
		seen[$c]=$((${seen[$c]:-0} + 1))
		if [ "${seen[$c]}" -gt "$best_n" ]; then best=$c best_n=${seen[$c]}; fi
	done
	for rt in "${runtimes[@]}"; do
		f=$tmp/check.$prog.$rt
		if [ ! -s "$f" ] || [ -n "${MISMATCH[$prog.$rt]:-}" ]; then continue; fi
		c=$(head -1 "$f")
		if [ "$c" != "$best" ]; then
			MISMATCH[$prog.$rt]=1
			notes+=("check mismatch: \`$prog\` in $rt printed \`$c\`, the others \`$best\`")
		fi
	done
	unset seen
done

# shellcheck disable=SC2016 # Markdown's backticks
declare -A HEAD=(
	[fast]='fast: `assistant run`'
	[strict]='strict: `assistant run --strict`'
	[node-wasi]="python.wasm under Node ${node_version:-?} WASI (V8)"
	[pyodide]="Pyodide $PYODIDE_VERSION on Node ${node_version:-?}"
	[native]="native \`$native\` (${native_version:-?})"
)
ok=0
table=()
row="| program |"
sep="|---|"
for rt in "${runtimes[@]}"; do
	row+=" ${HEAD[$rt]} |"
	sep+="---|"
done
table+=("$row" "$sep")
for prog in "${programs[@]}"; do
	base=none
	in_list node-wasi "${runtimes[@]}" && base=$(median "$tmp/cell.$prog.node-wasi")
	row="| \`$prog\`: ${DESC[$prog]} |"
	for rt in "${runtimes[@]}"; do
		m=$(median "$tmp/cell.$prog.$rt")
		case $m in
		none | skip) cell="—" ;;
		err) cell="err" ;;
		*)
			ok=$((ok + 1))
			cell=$(fmt_s "$m")
			if [[ $base =~ ^[0-9] && $rt != node-wasi ]]; then
				cell+=$(awk -v a="$m" -v b="$base" 'BEGIN {if (b > 0) printf " (%.2f×)", a / b}')
			fi
			[ -n "${MISMATCH[$prog.$rt]:-}" ] && cell+=" ≠check"
			;;
		esac
		row+=" $cell |"
	done
	table+=("$row")
done

# The build's optimisation settings, where its BUILDINFO records them (issue 25's experiments).
knobs=""
for k in wasm_opt deps_opt lto; do
	v=$(buildinfo "$k")
	[ "$v" = "?" ] || knobs+=" $k $v,"
done
cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1)
echo "\`ROUNDS=$ROUNDS scripts/bench_engine.sh\`, $(date -u +%Y-%m-%d)"
echo
echo "Machine: $(nproc) cores (${cpu:-unknown CPU}); $go_version; wazero ${wazero:-?}; node ${node_version:-none};" \
	"native ${native:-none} (${native_version:-?}); engine ${engine:-none} (engine_key $(buildinfo engine_key), CPython $(buildinfo python)," \
	"periodic_yield $(buildinfo periodic_yield),$knobs python.wasm sha256 $(buildinfo python_wasm_sha256 | cut -c1-12)); load average $load_start at the start, $load_end at the end."
echo
echo "Median of $ROUNDS interleaved run(s) of the program's own timed work (start-up not counted), and in brackets the ratio to the Node-WASI column."
echo
printf '%s\n' "${table[@]}"
for rt in "${runtimes[@]}"; do
	[ -n "${UNAVAILABLE[$rt]:-}" ] && notes+=("$rt: not run: ${UNAVAILABLE[$rt]}")
done
[ "$failed" -gt 0 ] && notes+=("failed runs' stderr: $log")
if [ ${#notes[@]} -gt 0 ]; then
	echo
	printf -- '- %s\n' "${notes[@]}"
fi
if [ "$ok" -eq 0 ]; then
	echo "bench_engine: nothing could run" >&2
	exit 1
fi
