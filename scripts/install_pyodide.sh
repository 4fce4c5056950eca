#!/usr/bin/env bash
# Install the npm `pyodide` package (the Pyodide core: pyodide.mjs, pyodide.asm.wasm,
# python_stdlib.zip, pyodide-lock.json, ...) for each version the shipped communities run, into
# the folder the server serves GET /pyodide/v{version}/{file} from:
#
#   ${ASSISTANT_PYODIDE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/assistant/pyodide}/<version>/
#
# Nothing is written into the repository. The tarball is checked against the integrity pinned
# below (npm's sha512), so a registry answering other bytes stops the install.
#
#   scripts/install_pyodide.sh              # every pyodide_version in communities/*/config.yaml
#   scripts/install_pyodide.sh 0.29.5 ...   # these versions
#
# An installed version is left alone; remove its folder to install it again.
set -euo pipefail
cd "$(dirname "$0")/.."

# npm's dist.integrity of each version we install (npm view pyodide@<v> dist.integrity).
declare -A INTEGRITY=(
	[0.29.5]="sha512-TkYrUv9m8QmfImADKRmpwZulL48E0uUaBSO+dvRQKyAJc0qh9gu7jn8btyHPh3NZm1r2IH2YrJhIr7Q2B9urAw=="
)

dest="${ASSISTANT_PYODIDE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/assistant/pyodide}"

versions=("$@")
if [ ${#versions[@]} -eq 0 ]; then
	mapfile -t versions < <(sed -n 's/^[[:space:]]*pyodide_version:[[:space:]]*["'\'']\{0,1\}\([0-9][0-9A-Za-z.]*\)["'\'']\{0,1\}[[:space:]]*$/\1/p' communities/*/config.yaml | sort -u)
fi
if [ ${#versions[@]} -eq 0 ]; then
	echo "install_pyodide: no pyodide_version found in communities/*/config.yaml" >&2
	exit 1
fi

command -v npm >/dev/null || { echo "install_pyodide: npm is needed (apt-get install -y npm)" >&2; exit 1; }
mkdir -p "$dest"

for v in "${versions[@]}"; do
	if [[ ! "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.]*$ ]]; then
		echo "install_pyodide: $v is not a Pyodide version" >&2
		exit 1
	fi
	if [ -f "$dest/$v/pyodide.asm.wasm" ] && [ -f "$dest/$v/.installed" ]; then
		echo "install_pyodide: Pyodide $v is already in $dest/$v"
		continue
	fi
	want="${INTEGRITY[$v]:-}"
	if [ -z "$want" ]; then
		echo "install_pyodide: no pinned integrity for Pyodide $v; add npm's dist.integrity to INTEGRITY in $0" >&2
		exit 1
	fi
	work="$(mktemp -d)"
	trap 'rm -rf "$work"' EXIT
	echo "install_pyodide: fetching pyodide@$v from npm"
	(cd "$work" && npm pack --silent "pyodide@$v" >/dev/null)
	tarball="$work/pyodide-$v.tgz"
	got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
	if [ "$got" != "$want" ]; then
		echo "install_pyodide: pyodide-$v.tgz has integrity $got, want $want" >&2
		exit 1
	fi
	mkdir "$work/x"
	tar -xzf "$tarball" -C "$work/x" --no-same-owner
	rm -rf "$dest/$v.tmp"
	mv "$work/x/package" "$dest/$v.tmp"
	touch "$dest/$v.tmp/.installed"
	rm -rf "$dest/$v"
	mv "$dest/$v.tmp" "$dest/$v"
	rm -rf "$work"
	trap - EXIT
	echo "install_pyodide: Pyodide $v installed in $dest/$v"
done
