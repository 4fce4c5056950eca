#!/usr/bin/env bash
# Makes an engine directory that differs from the built engine only in python.wasm's wasm-opt
# flags, for the experiments of BENCHMARKS.md "Engine speed" (scripts/bench_engine.sh measures
# it with ENGINE_DIR=...):
#
#   ASSISTANT_ENGINE_KEEP_UNOPT=1 scripts/build_python_wasi.sh   # once: keeps <key>.unopt.wasm
#   (a built engine is not built again: to get its .unopt.wasm, remove its directory first)
#   scripts/engine_variant.sh O3 -O3                              # prints the variant's directory
#   scripts/engine_variant.sh O3-inline -O3 --inlining-optimizing
#
# The variant lives in $TMPDIR/assistant-engine-variants/LABEL: python.wasm optimised with the
# given flags (then stripped as the build strips it), SHA256SUMS and BUILDINFO rewritten for it,
# the rest copied from the built engine. An experiment, never shipped: the build's own flags are
# ASSISTANT_ENGINE_WASM_OPT.
set -euo pipefail

[[ $# -ge 2 ]] || { echo "usage: $0 LABEL WASM-OPT-FLAG..." >&2; exit 2; }
label=$1
shift
[[ $label =~ ^[A-Za-z0-9._-]+$ ]] || { echo "$0: LABEL must be letters, digits, . _ -" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
# BASE_ENGINE: the built engine to start from (default: the one this tree's build script makes).
base=${BASE_ENGINE:-$("$here/build_python_wasi.sh" --print-dir)}
key=$(basename "$base")
unopt="$(dirname "$base")/$key.unopt.wasm"
[[ -f $unopt ]] || { echo "$0: no $unopt; remove $base and build it again with ASSISTANT_ENGINE_KEEP_UNOPT=1" >&2; exit 1; }

out="${TMPDIR:-/tmp}/assistant-engine-variants/$label"
rm -rf "$out"
mkdir -p "$out"
for f in "$base"/*; do
	case $(basename "$f") in
	python.wasm | SHA256SUMS | BUILDINFO) ;;
	*) cp -a "$f" "$out/" ;;
	esac
done
start=$SECONDS
# NAMES=1 keeps the function names (for a profile: perf shows them through wazero's perfmap);
# otherwise the names go as the build drops them.
strip=(--strip-debug --strip-producers)
[[ ${NAMES:-0} == 1 ]] && strip=(--strip-producers)
wasm-opt "$@" "${strip[@]}" "$unopt" -o "$out/python.wasm"
sum=$(sha256sum "$out/python.wasm" | cut -d' ' -f1)
awk -v s="$sum" '$2 == "python.wasm" { print s "  python.wasm"; next } { print }' "$base/SHA256SUMS" >"$out/SHA256SUMS"
sed -e "s|^wasm_opt=.*|wasm_opt=$*|" -e "s|^python_wasm_sha256=.*|python_wasm_sha256=$sum|" \
	-e "s|^engine_key=.*|engine_key=$key+$label|" "$base/BUILDINFO" >"$out/BUILDINFO"
echo "wasm-opt $* took $((SECONDS - start)) s; python.wasm $(stat -c %s "$out/python.wasm") bytes" >&2
echo "$out"
