#!/usr/bin/env bash
# Load test on loopback: GET /{c}, the wheel route and GET /communities (at 1,000 extra
# communities) of assistant serve, each beside the very same bytes served by nginx in the same
# run, with wrk. Prints a Markdown table with the ratios of requests/s and of p99 latency.
#
#   scripts/bench_http.sh [DURATION] [CONNECTIONS...]     (defaults: 5s 16 64)
#
# Needs nginx and wrk (Debian: apt-get install nginx-light wrk). Every request goes to
# 127.0.0.1 only, and each wrk run stops after DURATION. ASSISTANT_BIN runs a prebuilt binary
# (for a "before" measurement) instead of building this tree. nginx runs one worker per core
# (worker_processes auto), serves the gzip rows from the .gz our server sent (gzip_static) and
# logs nothing; ours runs with --access-log off when the binary has that flag. Each row is
# the median of RUNS runs (default 3) in which the two servers take turns.
#
# ASSISTANT_FLAGS adds flags to assistant serve (--fast-path off measures net/http alone).
# PIN=1 gives wrk the last CPU and the servers the others (taskset), so the load generator
# does not take the servers' cores; nginx still starts one worker per core it is given and Go
# one P per core it may use.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-5s}
RUNS=${RUNS:-3}
shift || true
CONNS=("$@")
[ ${#CONNS[@]} -gt 0 ] || CONNS=(16 64)
pin_srv=() pin_wrk=()
if [ -n "${PIN:-}" ]; then
	ncpu=$(nproc)
	[ "$ncpu" -ge 2 ] || { echo "PIN needs 2 CPUs or more" >&2; exit 1; }
	wrkcpu=$((ncpu - 1)) srvcpus=0-$((ncpu - 2))
	pin_srv=(taskset -c "$srvcpus") pin_wrk=(taskset -c "$wrkcpu")
fi
for tool in nginx wrk curl bc; do
	command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install nginx-light wrk curl bc)" >&2; exit 1; }
done

work=$(mktemp -d)
chmod 755 "$work" # nginx workers may run as another user
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

bin=${ASSISTANT_BIN:-}
if [ -z "$bin" ]; then
	go build -o "$work/assistant" ./cmd/assistant
	bin=$work/assistant
fi
# The shipped communities plus 1,000 copies of hed's config (links, widget, questions), so
# GET /communities lists 1,002 (about 1.3 MB).
mkdir -p "$work/communities"
cp -r communities/. "$work/communities/"
for i in $(seq -w 0 999); do
	mkdir "$work/communities/c$i"
	# Without hed's MCP server: it cannot be reached from here, and a thousand clients retrying
	# it would measure their DNS failures and garbage, not these routes.
	sed -e "s/^id: hed\$/id: c$i/" -e "/^  mcp_servers:/,+2d" communities/hed/config.yaml >"$work/communities/c$i/config.yaml"
done
ASSISTANT_PORT=18181
NGINX_PORT=18182
logflag=()
if "$bin" serve -h 2>&1 | grep -- '-access-log' >/dev/null; then logflag=(--access-log off); fi
"${pin_srv[@]}" "$bin" serve --addr "127.0.0.1:$ASSISTANT_PORT" --communities "$work/communities" --log-format json "${logflag[@]}" ${ASSISTANT_FLAGS:-} >/dev/null 2>/dev/null &
pids+=($!)
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$ASSISTANT_PORT/health" >/dev/null && break; sleep 0.1; done

base=http://127.0.0.1:$ASSISTANT_PORT
wheel=$(curl -fs "$base/nemar" | sed -n 's/.*"file_name":"\([^"]*\)".*/\1/p')
mkdir -p "$work/www/nemar/runtime"
curl -fs "$base/nemar" -o "$work/www/nemar.json"
curl -fs "$base/communities" -o "$work/www/communities.json"
curl -fs "$base/nemar/runtime/$wheel" -o "$work/www/nemar/runtime/$wheel"
# The gzip nginx sends is the gzip ours sends, when ours sends one (else gzip -6 of the same).
for f in nemar communities; do
	curl -fs -H 'Accept-Encoding: gzip' -D "$work/$f.h" "$base/$f" -o "$work/www/$f.json.gz"
	grep -qi '^content-encoding: gzip' "$work/$f.h" || gzip -6 -c "$work/www/$f.json" >"$work/www/$f.json.gz"
done

cat >"$work/nginx.conf" <<CONF
worker_processes auto;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	etag on;
	gzip_static on;
	gzip_vary on;
	open_file_cache max=100;
	server {
		listen 127.0.0.1:$NGINX_PORT;
		root $work/www;
		location = /nemar { default_type application/json; add_header Cache-Control no-cache; try_files /nemar.json =404; }
		location = /communities { default_type application/json; try_files /communities.json =404; }
		location /nemar/runtime/ { default_type application/octet-stream; add_header Cache-Control "public, max-age=31536000, immutable"; }
	}
}
CONF
"${pin_srv[@]}" nginx -c "$work/nginx.conf" -p "$work" &
pids+=($!)
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$NGINX_PORT/nemar" >/dev/null && break; sleep 0.1; done

# run URL [HEADER] prints "requests/s p99-in-ms".
run() {
	local args=(-t1 -c"$conns" -d"$DURATION" --latency)
	[ -n "${2:-}" ] && args+=(-H "$2")
	"${pin_wrk[@]}" wrk "${args[@]}" "$1" | awk '
		/Requests\/sec/ {rps=$2}
		$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; p99=v}
		END {print rps, p99}'
}

# The bodies each side sends, to stderr: they must be the same size.
for f in nemar communities; do
	for enc in identity gzip; do
		a=$(curl -fs -H "Accept-Encoding: $enc" "http://127.0.0.1:$ASSISTANT_PORT/$f" | wc -c)
		n=$(curl -fs -H "Accept-Encoding: $enc" "http://127.0.0.1:$NGINX_PORT/$f" | wc -c)
		echo "/$f ($enc): assistant $a bytes, nginx $n bytes" >&2
	done
done
echo "| route | conns | assistant req/s | nginx req/s | req/s ratio (each run) | assistant p99 | nginx p99 | p99 ratio |"
echo "|---|---|---|---|---|---|---|---|"
rows=(
	"/nemar|identity|"
	"/nemar|gzip|Accept-Encoding: gzip"
	"/nemar/runtime/$wheel|identity|"
	"/communities|gzip|Accept-Encoding: gzip"
	"/communities|identity|"
)
# median prints the median of its arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

for conns in "${CONNS[@]}"; do
	for row in "${rows[@]}"; do
		IFS='|' read -r path enc hdr <<<"$row"
		ars=() aps=() nrs=() nps=() ratios=()
		# The two servers take turns, RUNS times, so a noisy moment hits both.
		for _ in $(seq "$RUNS"); do
			read -r ar ap < <(run "http://127.0.0.1:$ASSISTANT_PORT$path" "$hdr")
			read -r nr np < <(run "http://127.0.0.1:$NGINX_PORT$path" "$hdr")
			ars+=("$ar") aps+=("$ap") nrs+=("$nr") nps+=("$np")
			ratios+=("$(printf '%.2f' "$(echo "$ar / $nr" | bc -l)")")
		done
		ar=$(median "${ars[@]}") ap=$(median "${aps[@]}") nr=$(median "${nrs[@]}") np=$(median "${nps[@]}")
		printf '| `GET %s` (%s) | %s | %.0f | %.0f | %.2f (%s) | %.2f ms | %.2f ms | %.2f |\n' \
			"$path" "$enc" "$conns" "$ar" "$nr" "$(echo "$ar / $nr" | bc -l)" "${ratios[*]}" "$ap" "$np" "$(echo "$ap / $np" | bc -l)"
	done
done
echo
echo "medians of $RUNS runs each, taking turns; wrk -t1 -d$DURATION --latency${PIN:+ on CPU $wrkcpu, the servers on CPUs $srvcpus}, both servers on 127.0.0.1 of $(nproc) cores; nginx $(nginx -v 2>&1 | sed 's/.*\///'), worker_processes auto, access log off; assistant ${logflag[*]:-logging JSON to /dev/null} ${ASSISTANT_FLAGS:-}; $(ls "$work/communities" | wc -l) communities."
