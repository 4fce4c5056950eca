#!/usr/bin/env bash
# Memory of assistant serve's upload and export paths under N (default 10) concurrent requests,
# for this tree and for a base commit, in one run: peak RSS (VmHWM, reset before each phase
# through /proc/PID/clear_refs) against the RSS before, the answers, the time per request and
# the server's CPU time. Prints a Markdown table with the ratios this tree / base.
#
#   scripts/bench_files.sh [BASE]      (default eaadede: main before issue 22's items 11-16)
#
# Both binaries run with the same flags and environment: the in-memory store, the default
# caps (--artifact-mb 256; this tree's --upload-buffer-mb 256 and --export-concurrency of one
# per CPU), one community taking uploads of up to 100 MB, rate limits off, and
# ASSISTANT_UPLOAD_CLIENT_MB=128 (this tree's share of one client; the base ignores it) so that
# one client may keep a 100 MB session. Uploads: N clients post a 100 MB CSV each at once (curl,
# which sends Expect: 100-continue). Exports: one session holds a 48 MB CSV and a 48 MB
# workbook of incompressible bytes; N clients GET its export.zip at once, then one alone. The
# exports are measured once more with this tree and ASSISTANT_EXPORT_CONCURRENCY=N, so that
# every one of the N is written: what streaming without copies costs, without the limit. Then
# the exports again with the session in Redis (a redis-server of the script's own, when
# redis-server is installed), whose every read is a copy: both binaries, and this tree with
# ASSISTANT_EXPORT_CONCURRENCY=N, where the upload buffer (256 MB, the session file bytes in
# memory) is what bounds the files the N exports hold at once. Everything runs on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:-eaadede}
N=${N:-10}
for tool in curl python3 git go; do
	command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done

work=$(mktemp -d)
pids=()
redis_url="" redis_pid=""
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "building this tree and $BASE ..." >&2
go build -o "$work/new" ./cmd/assistant
mkdir "$work/base-src"
git archive "$BASE" | tar -x -C "$work/base-src"
(cd "$work/base-src" && go build -o "$work/base" ./cmd/assistant)

mkdir -p "$work/communities/tables"
cat >"$work/communities/tables/config.yaml" <<'EOF'
id: tables
name: Tables
description: Takes the reader's tables.
extensions:
  client_tools:
    - name: execute_code
      runtime: python
      description: Runs Python and returns its output.
runtime:
  python:
    pyodide_version: "0.29.5"
    uploads:
      enabled: true
      max_file_mb: 100
      max_session_mb: 100
EOF

echo "making the files ..." >&2
python3 - "$work" <<'EOF'
import os, random, sys, zipfile
work = sys.argv[1]
# A table of measurements: 4 MB of random rows, repeated (further apart than deflate's 32 KB
# window, so it compresses as the rows do, about 2.5 to 1).
rnd = random.Random(22)
rows = "".join(f"sub-{rnd.randrange(10**5):05d},ses-{rnd.randrange(1, 9)},{rnd.choice('ABCD')},{rnd.uniform(0, 10):.4f},{rnd.gauss(50, 12):.3f},{rnd.randrange(10**6)}\n" for _ in range(80000)).encode()
for name, size in (("big.csv", 100 << 20), ("half.csv", 48 << 20)):
    with open(os.path.join(work, name), "wb") as f:
        f.write((rows * (size // len(rows) + 1))[:size].rsplit(b"\n", 1)[0] + b"\n")
with zipfile.ZipFile(os.path.join(work, "half.xlsx"), "w") as z:
    z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
    z.writestr(zipfile.ZipInfo("xl/media/image1.bin"), os.urandom(48 << 20), compress_type=zipfile.ZIP_STORED)
EOF

export ASSISTANT_UPLOAD_CLIENT_MB=128

# start BIN [ARG...]: runs it with the common flags and ARGs, sets url and pid.
start() {
	local out=$work/out.$RANDOM bin=$1
	shift
	"$bin" serve --addr 127.0.0.1:0 --communities "$work/communities" --rate-limits chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0 \
		--trusted-proxies 127.0.0.1/32 --log-format json --access-log off "$@" >"$out" 2>"$out.err" &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 100); do
		url=$(grep -o 'http://[^ "]*' "$out" 2>/dev/null | head -1 || true)
		[ -n "$url" ] && break
		sleep 0.1
	done
	[ -n "$url" ] || { cat "$out.err" >&2; exit 1; }
	url=${url%/}
}

stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }

kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
cpu() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat"; } # utime + stime, in ticks of 10 ms
mb() { echo $(($1 / 1024)); }

# summary FILE: "200 ×2, 503 ×8" and the median time of the 200 answers in FILE (lines of
# "code seconds").
summary() {
	local codes median
	codes=$(cut -d' ' -f1 "$1" | sort | uniq -c | awk '{ printf "%s%s ×%s", sep, $2, $1; sep = ", " }')
	median=$(awk '$1 == 200 { print $2 }' "$1" | sort -n | awk '{ a[NR] = $1 } END { if (NR) printf "%.2f", a[int((NR + 1) / 2)] }')
	echo "$codes|$median"
}

rows=()
measure() { # measure NAME BIN [exports]: both phases, or only the exports
	local name=$1 bin=$2 before peak c0 c1 s
	[ "${3:-}" = exports ] || measure_uploads "$name" "$bin"
	measure_exports "$name" "$bin"
}

measure_uploads() {
	local name=$1 bin=$2 before peak c0 c1 s
	start "$bin"
	curl -sf -o /dev/null -F file=@"$work/half.csv" "$url/tables/sessions/warm/files"
	echo 5 >"/proc/$pid/clear_refs" # VmHWM := VmRSS
	before=$(kb "$pid" VmRSS) c0=$(cpu "$pid")
	: >"$work/up.$name"
	for i in $(seq "$N"); do
		curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "X-Forwarded-For: 198.51.100.$i" \
			-F file=@"$work/big.csv" "$url/tables/sessions/up-$i/files" >>"$work/up.$name" &
	done
	wait $(jobs -p | grep -v -e "^$pid\$" -e "^${redis_pid:-none}\$") 2>/dev/null || true
	peak=$(kb "$pid" VmHWM) c1=$(cpu "$pid")
	s=$(summary "$work/up.$name")
	rows+=("uploads|$name|${s%|*}|$(mb "$before") → $(mb "$peak")|$(mb $((peak - before)))|${s#*|}|$(echo "$c1 - $c0" | bc)")
	stop
}

# measure_exports NAME BIN [ARG...]: the exports' phases, the binary started with ARGs.
measure_exports() {
	local name=$1 bin=$2 before peak c0 c1 s phase="$N exports at once"
	shift 2
	[[ " $* " == *" --redis-url "* ]] && phase="$N exports at once, Redis"
	start "$bin" "$@"
	curl -sf -o /dev/null -H "X-Forwarded-For: 203.0.113.1" -F file=@"$work/half.csv" -F file=@"$work/half.xlsx" "$url/tables/sessions/exp/files"
	echo 5 >"/proc/$pid/clear_refs"
	before=$(kb "$pid" VmRSS) c0=$(cpu "$pid")
	: >"$work/ex.$name"
	for i in $(seq "$N"); do # each a client of its own: this tree writes one export per client
		curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "X-Forwarded-For: 198.51.100.$i" \
			"$url/tables/sessions/exp/export.zip" >>"$work/ex.$name" &
	done
	wait $(jobs -p | grep -v -e "^$pid\$" -e "^${redis_pid:-none}\$") 2>/dev/null || true
	peak=$(kb "$pid" VmHWM) c1=$(cpu "$pid")
	s=$(summary "$work/ex.$name")
	rows+=("$phase|$name|${s%|*}|$(mb "$before") → $(mb "$peak")|$(mb $((peak - before)))|${s#*|}|$(echo "$c1 - $c0" | bc)")
	[[ $phase == *Redis ]] && { stop; return; }
	c0=$(cpu "$pid")
	curl -s -o "$work/one.zip" -w '%{http_code} %{time_total}\n' "$url/tables/sessions/exp/export.zip" >"$work/one.$name"
	c1=$(cpu "$pid")
	s=$(summary "$work/one.$name")
	rows+=("1 export alone|$name|${s%|*}, $(($(stat -c %s "$work/one.zip") >> 20)) MB zip|||${s#*|}|$(echo "$c1 - $c0" | bc)")
	stop
}

echo "measuring $BASE ..." >&2
measure base "$work/base"
echo "measuring this tree ..." >&2
measure new "$work/new"
# The exports once more with a place for each, to see their streaming without the limit.
echo "measuring this tree's exports with ASSISTANT_EXPORT_CONCURRENCY=$N ..." >&2
ASSISTANT_EXPORT_CONCURRENCY=$N measure unlimited "$work/new" exports

# The exports from Redis: a server of the script's own, empty, on a free port.
if command -v redis-server >/dev/null; then
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
	redis_pid=$!
	pids+=("$redis_pid")
	for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
	redis_url="redis://127.0.0.1:$port/0"
	echo "measuring the exports from Redis ..." >&2
	measure_exports base "$work/base" --redis-url "$redis_url" --redis-prefix base:
	measure_exports new "$work/new" --redis-url "$redis_url" --redis-prefix new:
	ASSISTANT_EXPORT_CONCURRENCY=$N measure_exports unlimited "$work/new" --redis-url "$redis_url" --redis-prefix unlimited:
else
	echo "redis-server is not installed: no Redis rows" >&2
fi

echo
echo "| phase | binary | answers | RSS before → peak (MB) | peak growth (MB) | median s of a 200 | server CPU s |"
echo "|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do
	IFS='|' read -r phase bin answers rss growth secs cpus <<<"$r"
	case $bin in
	base) bin="base ($BASE)" ;;
	new) bin="this tree (working tree at $(git rev-parse --short HEAD))" ;;
	unlimited) bin="this tree, --export-concurrency $N" ;;
	esac
	echo "| $phase | $bin | $answers | $rss | $growth | $secs | $cpus |"
done
echo
# Ratios of this tree to the base, by phase (growth of the peak, server CPU).
for phase in "uploads" "$N exports at once" "1 export alone" "$N exports at once, Redis"; do
	b=$(printf '%s\n' "${rows[@]}" | awk -F'|' -v p="$phase" '$1 == p && $2 == "base"')
	n=$(printf '%s\n' "${rows[@]}" | awk -F'|' -v p="$phase" '$1 == p && $2 == "new"')
	bg=$(cut -d'|' -f5 <<<"$b") ng=$(cut -d'|' -f5 <<<"$n") bc_=$(cut -d'|' -f7 <<<"$b") nc=$(cut -d'|' -f7 <<<"$n")
	ratio_g=n/a ratio_c=n/a
	[ -n "$bg" ] && [ "$bg" != 0 ] && ratio_g=$(echo "scale=2; $ng / $bg" | bc)
	[ -n "$bc_" ] && [ "$(echo "$bc_ > 0" | bc)" = 1 ] && ratio_c=$(echo "scale=2; $nc / $bc_" | bc)
	echo "- $phase: peak growth ${ratio_g}×, server CPU ${ratio_c}× (this tree / base)"
done
