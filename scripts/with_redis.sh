#!/usr/bin/env bash
# Runs CMD with ASSISTANT_TEST_REDIS_ADDR pointing at a test redis-server and exits with CMD's
# status: scripts/with_redis.sh go test -race ./...
#
# An address already in the environment is used as it is. Otherwise a server already started
# by scripts/redis.sh is reused (and left running); else one is started for CMD and stopped
# when this script exits.
set -euo pipefail

[[ $# -gt 0 ]] || { echo "usage: $0 CMD [ARG...]" >&2; exit 2; }
if [[ -n ${ASSISTANT_TEST_REDIS_ADDR:-} ]]; then
	exec "$@"
fi

redis=$(cd "$(dirname "$0")" && pwd)/redis.sh
if ! "$redis" addr >/dev/null 2>&1; then
	trap '"$redis" stop' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	"$redis" start
fi
ASSISTANT_TEST_REDIS_ADDR=$("$redis" addr)
export ASSISTANT_TEST_REDIS_ADDR

status=0
"$@" || status=$?
exit "$status"
