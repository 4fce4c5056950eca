#!/usr/bin/env bash
# Load test on loopback: GET /{c} and the wheel route of assistant serve, each beside the same
# bytes served by nginx in the same run, with wrk. Prints a Markdown table with the ratio.
#
#   scripts/bench_http.sh [DURATION] [CONNECTIONS]     (defaults: 10s 16)
#
# Needs nginx and wrk (Debian: apt-get install nginx-light wrk). Every request goes to
# 127.0.0.1 only, and each wrk run stops after DURATION.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10s}
CONNS=${2:-16}
for tool in nginx wrk curl; do
	command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install nginx-light wrk curl)" >&2; exit 1; }
done

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/assistant" ./cmd/assistant
ASSISTANT_PORT=18181
NGINX_PORT=18182
"$work/assistant" serve --addr "127.0.0.1:$ASSISTANT_PORT" --log-format json >/dev/null 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$ASSISTANT_PORT/health" >/dev/null && break; sleep 0.1; done

wheel=$(curl -fs "http://127.0.0.1:$ASSISTANT_PORT/nemar" | sed -n 's/.*"file_name":"\([^"]*\)".*/\1/p')
mkdir -p "$work/www/nemar/runtime"
curl -fs "http://127.0.0.1:$ASSISTANT_PORT/nemar" -o "$work/www/nemar.json"
curl -fs "http://127.0.0.1:$ASSISTANT_PORT/nemar/runtime/$wheel" -o "$work/www/nemar/runtime/$wheel"

cat >"$work/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
	access_log /dev/null;
	sendfile on;
	etag on;
	server {
		listen 127.0.0.1:$NGINX_PORT;
		root $work/www;
		location = /nemar { default_type application/json; try_files /nemar.json =404; }
		location /nemar/runtime/ { default_type application/octet-stream; add_header Cache-Control "public, max-age=31536000, immutable"; }
	}
}
CONF
nginx -c "$work/nginx.conf" -p "$work" &
pids+=($!)
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$NGINX_PORT/nemar" >/dev/null && break; sleep 0.1; done

rps() { wrk -t1 -c"$CONNS" -d"$DURATION" "$1" | awk '/Requests\/sec/ {print $2}'; }

echo "| route | assistant req/s | nginx req/s | assistant / nginx |"
echo "|---|---|---|---|"
for path in "/nemar" "/nemar/runtime/$wheel"; do
	a=$(rps "http://127.0.0.1:$ASSISTANT_PORT$path")
	n=$(rps "http://127.0.0.1:$NGINX_PORT$path")
	printf '| `GET %s` | %.0f | %.0f | %.2f |\n' "$path" "$a" "$n" "$(echo "$a / $n" | bc -l)"
done
echo
echo "wrk -t1 -c$CONNS -d$DURATION, both servers on 127.0.0.1 of $(nproc) cores; nginx $(nginx -v 2>&1 | sed 's/.*\///'), 1 worker, access log off; assistant logs JSON to /dev/null."
