#!/usr/bin/env bash
# The browser tests of the demo page (tests/browser), in one command: install their npm
# dependencies (playwright-core, from tests/browser/package-lock.json) and the Pyodide copy the
# server serves (scripts/install_pyodide.sh), build the server, and run the suite in Debian's
# Chromium with Node's test runner. Screenshots and logs go to tests/artifacts/.
#
#   scripts/browser_test.sh           # everything
#   scripts/browser_test.sh --deps    # only install what the tests need (make test runs this)
#
# Without Chromium (CHROMIUM, default /usr/bin/chromium) it skips with a message; under CI=true
# a missing Chromium is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

chromium="${CHROMIUM:-/usr/bin/chromium}"
deps_only=false
case "${1:-}" in
	"") ;;
	--deps) deps_only=true ;;
	*) echo "usage: $0 [--deps]" >&2; exit 2 ;;
esac

if [ ! -x "$chromium" ]; then
	msg="Chromium not found at $chromium (apt-get install -y chromium, or set CHROMIUM)"
	if [ "${CI:-}" = "true" ]; then
		echo "browser tests: $msg" >&2
		exit 1
	fi
	echo "browser tests: skipped: $msg"
	exit 0
fi
for tool in node npm go; do
	command -v "$tool" >/dev/null || { echo "browser tests: $tool is needed" >&2; exit 1; }
done

# npm ci only when node_modules is missing or older than the lockfile.
if [ ! -f tests/browser/node_modules/.package-lock.json ] ||
	[ tests/browser/package-lock.json -nt tests/browser/node_modules/.package-lock.json ]; then
	(cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
fi
scripts/install_pyodide.sh
$deps_only && exit 0

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
go build -o "$work/assistant" ./cmd/assistant
start=$(date +%s)
(cd tests/browser && ASSISTANT_BIN="$work/assistant" CHROMIUM="$chromium" node --test --test-concurrency=1 --test-reporter=spec)
echo "browser tests: finished in $(($(date +%s) - start)) s"
