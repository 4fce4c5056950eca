#!/usr/bin/env bash
# Rebuild the project's own pure-Python wheel for NEMAR (nemar-tools) from
# communities/nemar/runtime/src into communities/nemar/runtime/wheels, then refresh the
# overlay (communities/nemar/runtime/lock.json) that records its sha256.
#
# The build is reproducible (fixed timestamps, modes and order; entries stored, not deflated),
# so rebuilding unchanged sources reports the wheel as current. A change to the sources needs a
# new version in src/pyproject.toml: the builder refuses new bytes under an existing wheel
# name, because served wheels are cached by name for a year. Remove the old wheel from wheels/
# when its version is replaced, or the overlay generator reports two wheels for one package.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -C "$root" -o "$tmp/assistant" ./cmd/assistant

runtime=$root/communities/nemar/runtime
"$tmp/assistant" build-wheel "$runtime/src" "$runtime/wheels"
"$tmp/assistant" lock "$runtime/lock.json"
