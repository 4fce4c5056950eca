#!/usr/bin/env bash
# Fetch the stock pyodide-lock.json of one Pyodide release from npm and store it, unchanged,
# as runtimelock/pyodide/<version>/pyodide-lock.json, which the runtimelock package embeds.
#
#   scripts/update_pyodide_lock.sh 0.29.5
#
# The file is kept byte for byte as the pyodide npm package ships it (about 120 KB), so a
# reviewer can compare it with the release; it is not trimmed.
set -euo pipefail

if [[ $# -ne 1 || ! $1 =~ ^[0-9]+\.[0-9]+\.[0-9]+([a-z0-9.]*)$ ]]; then
	echo "usage: $0 VERSION   (a Pyodide release such as 0.29.5)" >&2
	exit 2
fi
version=$1

cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tarball=$(cd "$tmp" && npm pack --silent "pyodide@${version}")
tar -xzf "$tmp/$tarball" -C "$tmp" package/pyodide-lock.json

# Refuse anything that is not a lock for exactly this version.
node -e '
const lock = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
if (!lock.info || typeof lock.packages !== "object" || Object.keys(lock.packages).length === 0) {
  console.error("pyodide-lock.json has no info or no packages");
  process.exit(1);
}
' "$tmp/package/pyodide-lock.json"

out=runtimelock/pyodide/$version
mkdir -p "$out"
cp "$tmp/package/pyodide-lock.json" "$out/pyodide-lock.json.tmp"
mv "$out/pyodide-lock.json.tmp" "$out/pyodide-lock.json"
echo "wrote $out/pyodide-lock.json"
