#!/usr/bin/env bash
# Runs every native fuzz target for FUZZTIME each (go test -fuzz takes one target at a time).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-20s}
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do
	pkg=./$(dirname "${file#./}")
	grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //' | while read -r target; do
		echo "== $pkg $target ($FUZZTIME)"
		go test "$pkg" -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME"
	done
done
