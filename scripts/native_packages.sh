#!/usr/bin/env bash
# Installs, when missing, the Debian packages the tests compare the server's Python against:
# Debian's own python3 with the same pure-Python packages the engine holds (the engine takes
# their .deb files, pinned in scripts/build_python_wasi.sh), so a program's output in the engine
# can be checked byte for byte against the native interpreter; and python3-nbformat, which checks
# the notebooks the workspace export writes. Quiet on success.
set -euo pipefail

readonly PKGS=(python3 python3-openpyxl python3-et-xmlfile python3-dateutil python3-tz python3-six
	python3-xlsxwriter python3-tabulate python3-nbformat)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
sudo=()
if [[ $(id -u) != 0 ]]; then
	command -v sudo >/dev/null || { echo "native_packages.sh: need root to install ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
	"${sudo[@]}" apt-get update -qq >/dev/null
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
