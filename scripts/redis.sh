#!/usr/bin/env bash
# Runs a throwaway redis-server for tests: loopback only, no persistence, its own directory.
#
#   scripts/redis.sh start   install Debian's redis-server if missing, then start one instance
#                            (a no-op when it already runs)
#   scripts/redis.sh addr    print 127.0.0.1:PORT of the running instance (exit 1 if none)
#   scripts/redis.sh stop    stop it and remove its directory (a no-op when none runs)
#
# The port is $ASSISTANT_TEST_REDIS_PORT when set (it must be free), else 6391 or the next free
# one. State lives in ${TMPDIR:-/tmp}/assistant-redis/ (override with ASSISTANT_REDIS_DIR).
# Quiet on success, except that addr prints the address.
set -euo pipefail

dir=${ASSISTANT_REDIS_DIR:-${TMPDIR:-/tmp}/assistant-redis}
pidfile=$dir/redis.pid
portfile=$dir/port
logfile=$dir/redis.log

die() { echo "redis.sh: $*" >&2; exit 1; }

# running succeeds when the recorded pid is a live redis-server; it sets pid and port.
running() {
	[[ -s $pidfile && -s $portfile ]] || return 1
	pid=$(<"$pidfile")
	port=$(<"$portfile")
	[[ $pid =~ ^[0-9]+$ && $port =~ ^[0-9]+$ ]] || return 1
	[[ -r /proc/$pid/comm ]] || return 1
	[[ $(<"/proc/$pid/comm") == redis-server* ]]
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

install() {
	command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return 0
	local sudo=()
	if [[ $(id -u) != 0 ]]; then
		command -v sudo >/dev/null || die "redis-server is not installed and sudo is missing"
		sudo=(sudo)
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! "${sudo[@]}" apt-get install -y -qq redis-server >/dev/null 2>&1; then
		"${sudo[@]}" apt-get update -qq >/dev/null
		"${sudo[@]}" apt-get install -y -qq redis-server >/dev/null
	fi
	command -v redis-server >/dev/null || die "installing redis-server failed"
}

pick_port() {
	if [[ -n ${ASSISTANT_TEST_REDIS_PORT:-} ]]; then
		port_in_use "$ASSISTANT_TEST_REDIS_PORT" && die "port $ASSISTANT_TEST_REDIS_PORT (ASSISTANT_TEST_REDIS_PORT) is in use"
		echo "$ASSISTANT_TEST_REDIS_PORT"
		return
	fi
	local p
	for ((p = 6391; p < 6491; p++)); do
		port_in_use "$p" || { echo "$p"; return; }
	done
	die "no free port in 6391..6490"
}

start() {
	running && return 0
	install
	rm -rf "$dir"
	mkdir -p "$dir/data"
	port=$(pick_port)
	echo "$port" >"$portfile"
	redis-server --bind 127.0.0.1 --port "$port" --protected-mode yes \
		--save "" --appendonly no --dir "$dir/data" \
		--daemonize yes --pidfile "$pidfile" --logfile "$logfile" --loglevel warning
	local i
	for ((i = 0; i < 100; i++)); do
		if running && [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; then
			return 0
		fi
		sleep 0.05
	done
	cat "$logfile" >&2 2>/dev/null || true
	die "redis-server did not answer on 127.0.0.1:$port"
}

stop() {
	if ! running; then
		rm -rf "$dir"
		return 0
	fi
	kill "$pid"
	local i
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$pid" 2>/dev/null && die "redis-server (pid $pid) did not stop"
	rm -rf "$dir"
}

case ${1:-} in
start) start ;;
stop) stop ;;
addr)
	running || die "no test redis-server is running (scripts/redis.sh start)"
	echo "127.0.0.1:$port"
	;;
*)
	echo "usage: $0 start|stop|addr" >&2
	exit 2
	;;
esac
