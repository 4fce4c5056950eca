#!/usr/bin/env bash
# Builds the server's Python engine: CPython 3.13 for wasm32-wasi (python.wasm) plus a trimmed
# standard library with precompiled .pyc files, from Debian's python3.13 and zlib source
# packages, with Debian's clang-19 and wasi-libc. The recipe and its measurements are in
# shared/spec/python-engine.md ("The recipe" and "CPython 3.13").
#
# Usage:
#   scripts/build_python_wasi.sh              build if needed; the last line of stdout is the
#                                             engine directory (progress goes to stderr)
#   scripts/build_python_wasi.sh --print-dir  print the engine directory without building;
#                                             exit 1 if it has not been built
#
# Output: $ASSISTANT_ENGINE_CACHE (default ~/.cache/assistant-engine)/<key>/ holding
#   python.wasm            the stripped, wasm-opt'ed interpreter
#   lib/python3.13/        the trimmed stdlib, .py plus unchecked-hash .pyc; mount it in the
#                          guest at /usr/lib/python3.13 with PYTHONHOME=/usr
#   SHA256SUMS             sha256 of every file above (sha256sum format, sorted)
#   BUILDINFO              the pinned sources and toolchain versions that went in
# <key> is a hash of this script (which pins the source tarballs by sha256) and the installed
# toolchain package versions, so a change to either builds a new engine beside the old one.
# The directory appears atomically and only when complete (.complete marker), so a second run
# is instant. Source tarballs are cached in <cache>/downloads; the build itself runs in
# /tmp/assistant-engine-build/<key> (a fixed path, so builds are reproducible) and resumes
# from the last finished phase after a failure (it is removed after a success). The native
# python3.13 that serves as the build Python is keyed separately (its own inputs only), so
# editing this script does not rebuild it.
#
# Needs root (or passwordless apt) only when packages or source entries are missing: it then
# adds deb-src entries for bookworm and trixie (trixie is source-only: bookworm has no
# python3.13) in /etc/apt/sources.list.d/assistant-engine-src.sources and installs the
# toolchain with apt-get.
set -euo pipefail

readonly PY_MINOR=3.13
readonly PY_TARBALL=python3.13_3.13.5.orig.tar.xz
readonly PY_TARBALL_SHA256=93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640
readonly PY_SRCPKG=python3.13 # from trixie (deb-src)
readonly ZLIB_TARBALL=zlib_1.2.13.dfsg.orig.tar.bz2
readonly ZLIB_TARBALL_SHA256=71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1
readonly ZLIB_SRCPKG=zlib/bookworm
# SQLite 3.46 (trixie): the first Debian release whose os_unix.c builds for WASI (SQLITE_WASI).
readonly SQLITE_TARBALL=sqlite3_3.46.1.orig.tar.xz
readonly SQLITE_TARBALL_SHA256=d0cdd2ece271b29e7ce18095745d892517ee26d0f270065b3a25c2e9eb11639c
readonly SQLITE_SRCPKG=sqlite3/trixie
readonly BZIP2_TARBALL=bzip2_1.0.8.orig.tar.gz
readonly BZIP2_TARBALL_SHA256=ab5a03176ee106d3f0fa90e381da478ddae405918153cca248e682cd0c4a2269
readonly BZIP2_SRCPKG=bzip2/bookworm
readonly XZ_TARBALL=xz-utils_5.4.1.orig.tar.xz
readonly XZ_TARBALL_SHA256=5d9827aa1875b21c288f78864bb26d2650b436ea8d2cad364e4921eb6266a5a5
readonly XZ_SRCPKG=xz-utils/bookworm
# Debian binary packages whose files go into the engine as they are (each from bookworm/main,
# which keeps a version until the next point release; security updates replace theirs at once):
# pure-Python libraries
# (into lib/python3.13/site-packages, byte-compiled like the stdlib) and the tz database (into
# share/zoneinfo, which the sandbox mounts read-only at /usr/share/zoneinfo, where zoneinfo and
# Debian's pytz both read it). "name version sha256" of each .deb.
readonly DEBS=(
	"python3-openpyxl 3.0.9-1 468490fc3f43f338efc03af25987956ca541b866378d8482a33d63d988e58ce9"
	"python3-et-xmlfile 1.0.1-2.1 a80d31fe47b34f693ea31ba08c1c9783e073c562258a47bf22cc51c05ed666ec"
	"python3-dateutil 2.8.2-2 59d696282ffeaf54395452e012715410dc414c6baaa54d4cdae56ac7c217eb31"
	"python3-tz 2022.7.1-4 b165d30ef171f9426c496900449b85d290d4c6d2de50e1c3f4adc2b55b6fd534"
	"python3-six 1.16.0-4 fd189e9cecbcf17a1fc20aec30055c8afa9c1eec00cd6e7ab385087a2ab3b0d3"
	"python3-xlsxwriter 3.0.2-2 08f682b576f661785ee1fb1c551046e55c195c2e45b36548184282885b2f9a3d"
	"python3-tabulate 0.8.9-1 80715ccbff14c93a11de864a7d6a219492ac3a5fb35d7c165540e22a91774a20"
	"tzdata 2026b-0+deb12u1 0edb49f4dffe0d5608069f7e4ba4d69544d3b9e86fc314dd8b75e9958d8e5e98"
)
# SQLite for a single-threaded guest with no shared memory: no locking (one process reads and
# writes its files), no WAL (it needs mmap'ed shared memory), no extensions, temp tables in
# memory (counted toward the run's memory cap, not its scratch). Otherwise it behaves as
# Debian's libsqlite3 (its debian/rules): the SQL a program can use is the same, so code that
# works in native Python and Pyodide works here. Double-quoted strings are allowed (SQLite's
# default; group_concat(x, ",")), FTS3/4 (with parentheses), FTS5, R*Tree, JSON (built in),
# the math functions, soundex, the dbstat and sqlite_stmt tables, DELETE/UPDATE ... LIMIT
# (SQLITE_UPDATE_LIMIT: the parser is generated with it), LIKE never matching blobs,
# secure_delete on, 250,000 bound parameters, and "file:" names read as URIs. Left out on
# purpose: the two-argument fts3_tokenizer() (it takes a C pointer from SQL), the session and
# pre-update hook APIs and column metadata (C APIs Python's sqlite3 does not use), and threads.
readonly SQLITE_CFLAGS="-DSQLITE_WASI -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_OMIT_WAL \
-DSQLITE_MAX_MMAP_SIZE=0 -DSQLITE_DEFAULT_UNIX_VFS=\"unix-none\" -DSQLITE_TEMP_STORE=3 -DSQLITE_OMIT_SHARED_CACHE \
-DSQLITE_ENABLE_MATH_FUNCTIONS -DSQLITE_ENABLE_FTS3 -DSQLITE_ENABLE_FTS3_PARENTHESIS -DSQLITE_ENABLE_FTS4 \
-DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_RTREE=1 -DSQLITE_SOUNDEX=1 -DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_ENABLE_STMTVTAB \
-DSQLITE_ENABLE_UPDATE_DELETE_LIMIT=1 -DSQLITE_LIKE_DOESNT_MATCH_BLOBS -DSQLITE_SECURE_DELETE \
-DSQLITE_MAX_VARIABLE_NUMBER=250000 -DSQLITE_MAX_SCHEMA_RETRY=25 -DSQLITE_USE_URI=1"
# Options that shape the generated amalgamation itself (its parser and keyword table).
readonly SQLITE_CONFIGURE=(--disable-tcl --enable-update-limit)
# 2025-06-11T00:00:00Z, the CPython 3.13.5 release date: the build date in sys.version and
# every output file's mtime.
readonly SOURCE_DATE_EPOCH=1749600000
export SOURCE_DATE_EPOCH
# Eval-breaker checks between two host yields in the patched eval loop (patch_yield); the
# sandbox's fast mode checks its deadline at each yield. Recorded in BUILDINFO.
readonly PERIODIC_YIELD="${ASSISTANT_ENGINE_YIELD:-10000}"
# Build knobs (issue 25, BENCHMARKS.md "Engine speed"); the defaults are the shipped build.
# Each shapes python.wasm, so each is in the cache key and in BUILDINFO:
#   ASSISTANT_ENGINE_YIELD=N        the periodic-yield interval above
#   ASSISTANT_ENGINE_LTO=1          -flto=thin for CPython and the C libraries it links (default
#                                   on: wazero inlines nothing, so LLVM's inlining across files
#                                   is the inlining it gets; 0 builds without)
#   ASSISTANT_ENGINE_DEPS_OPT=-O3   the C libraries' clang level (CPython's own is configure's -O3)
#   ASSISTANT_ENGINE_WASM_OPT=...   wasm-opt's optimisation flags (-O3, -O4 and
#                                   --inlining-optimizing measured no faster than -O2)
# ASSISTANT_ENGINE_KEEP_UNOPT=1 (not in the key) also keeps the linked python.wasm before
# wasm-opt, with its function names, as $CACHE_ROOT/<key>.unopt.wasm, to try wasm-opt flags
# without a rebuild and to profile with names (scripts/engine_variant.sh).
readonly ENGINE_LTO="${ASSISTANT_ENGINE_LTO:-1}"
readonly DEPS_OPT="${ASSISTANT_ENGINE_DEPS_OPT:--O3}"
readonly WASM_OPT_FLAGS="${ASSISTANT_ENGINE_WASM_OPT:--O2}"

# Packages whose versions go into the cache key (they shape python.wasm).
readonly TOOLCHAIN_PKGS=(clang-19 lld-19 llvm-19 libclang-rt-19-dev-wasm32 wasi-libc binaryen)
# Packages needed for the build but not part of the key.
readonly OTHER_PKGS=(gcc libc6-dev make pkg-config xz-utils bzip2 coreutils util-linux tcl)

# Stdlib directories and files left out of the engine (spec: "Package the stdlib").
readonly STDLIB_EXCLUDE=(test idlelib tkinter turtle.py turtledemo ensurepip lib2to3 venv
	distutils pydoc_data curses sqlite3/test ctypes dbm multiprocessing)

readonly CACHE_ROOT="${ASSISTANT_ENGINE_CACHE:-${HOME:-/root}/.cache/assistant-engine}"
readonly BUILD_ROOT=/tmp/assistant-engine-build
SCRIPT_PATH="$(readlink -f "${BASH_SOURCE[0]}")"
readonly SCRIPT_PATH
readonly JOBS="${ASSISTANT_ENGINE_JOBS:-$(nproc)}"
START=$SECONDS

log() { printf '[%s +%4ds] %s\n' "$(date -u +%H:%M:%S)" $((SECONDS - START)) "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# pkg_versions PKG... prints "PKG VERSION" for each PKG, VERSION "none" when not installed,
# with one dpkg-query call (this runs on every cached invocation).
pkg_versions() {
	local p status version installed
	installed=$(dpkg-query -W -f='${Package} ${db:Status-Status} ${Version}\n' "$@" 2>/dev/null || true)
	for p in "$@"; do
		status='' version=''
		read -r _ status version < <(awk -v p="$p" '$1 == p' <<<"$installed") || true
		[[ ${status:-} == installed ]] || version=none
		echo "$p $version"
	done
}

# engine_key prints the cache key: script + toolchain versions.
engine_key() {
	{
		sha256sum <"$SCRIPT_PATH" | cut -d' ' -f1
		pkg_versions "${TOOLCHAIN_PKGS[@]}" | tr ' ' '='
		echo "yield=$PERIODIC_YIELD lto=$ENGINE_LTO deps_opt=$DEPS_OPT wasm_opt=$WASM_OPT_FLAGS"
	} | sha256sum | cut -c1-16
}

# as_root runs a command as root (directly, or through sudo when available).
as_root() {
	if [[ $(id -u) == 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		die "need root to run: $*"
	fi
}

ensure_packages() {
	local missing=() p v
	while read -r p v; do
		[[ $v != none ]] || missing+=("$p")
	done < <(pkg_versions "${TOOLCHAIN_PKGS[@]}" "${OTHER_PKGS[@]}")
	((${#missing[@]} == 0)) && return 0
	log "installing: ${missing[*]}"
	as_root apt-get update -qq >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >&2
}

# ensure_deb_src makes sure deb-src indexes for bookworm main and trixie main are configured
# and downloaded, adding them in a file of our own when missing.
readonly SRC_LIST=/etc/apt/sources.list.d/assistant-engine-src.sources
ensure_deb_src() {
	local have mirror want=() suite changed=0
	# shellcheck disable=SC2016 # $(...) here is apt's format syntax, not the shell's
	have=$(apt-get indextargets --no-release-info 'Created-By: Sources' \
		--format '$(RELEASE)/$(COMPONENT)' 2>/dev/null || true)
	for suite in bookworm trixie; do
		grep -qx "$suite/main" <<<"$have" || want+=("$suite")
	done
	if ((${#want[@]} > 0)); then
		# The mirror the machine already uses for bookworm, else Debian's CDN.
		# shellcheck disable=SC2016
		mirror=$(apt-get indextargets 'Created-By: Packages' 'Release: bookworm' \
			--format '$(REPO_URI)' 2>/dev/null | head -n1)
		mirror=${mirror:-http://deb.debian.org/debian/}
		log "adding deb-src entries for ${want[*]} ($mirror) in $SRC_LIST"
		{
			echo "# Added by assistant scripts/build_python_wasi.sh: source packages only."
			echo "Types: deb-src"
			echo "URIs: $mirror"
			echo "Suites: ${want[*]}"
			echo "Components: main"
			echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
		} | as_root tee "$SRC_LIST.new" >/dev/null
		if [[ -f $SRC_LIST ]]; then
			# Keep the suites we added earlier, as a stanza of their own.
			as_root sh -c "printf '\n' >>'$SRC_LIST.new' && cat '$SRC_LIST' >>'$SRC_LIST.new'"
		fi
		as_root mv "$SRC_LIST.new" "$SRC_LIST"
		changed=1
	fi
	if ((changed)) || ! apt-cache showsrc "$PY_SRCPKG" 2>/dev/null | grep -q '^Package:'; then
		log "apt-get update (source indexes)"
		as_root apt-get update -qq >&2
	fi
}

# cached FILE SHA256 succeeds when the download cache holds FILE with that sha256.
cached() { [[ -f $CACHE_ROOT/downloads/$1 ]] && echo "$2  $CACHE_ROOT/downloads/$1" | sha256sum -c --status; }

# download URI FILE SHA256 fetches URI into the download cache as FILE with apt's own
# downloader, which checks the sha256.
download() {
	local uri=$1 file=$2 sha=$3 dest="$CACHE_ROOT/downloads/$2" tmp
	log "downloading $file"
	# A directory apt's downloader can write to after it drops root (the cache, under $HOME,
	# may not be reachable for its _apt user).
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/assistant-engine-dl.XXXXXX")
	chmod 0755 "$tmp"
	if [[ $(id -u) == 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$tmp"; fi
	/usr/lib/apt/apt-helper download-file "$uri" "$tmp/$file" "SHA256:$sha" >&2
	mv "$tmp/$file" "$dest.tmp"
	mv "$dest.tmp" "$dest"
	rm -rf "$tmp"
}

# fetch_orig SRCPKG FILE SHA256 puts FILE (a source package's orig tarball, pinned by sha256)
# into the download cache, fetching only that file.
fetch_orig() {
	local srcpkg=$1 file=$2 sha=$3 uri
	cached "$file" "$sha" && return 0
	ensure_deb_src
	uri=$(cd "$CACHE_ROOT/downloads" && apt-get source --print-uris -qq "$srcpkg" 2>/dev/null |
		awk -v f="$file" '$2 == f { gsub("\047", "", $1); print $1 }')
	[[ -n $uri ]] || die "apt-get source $srcpkg no longer offers $file; update the pins in $SCRIPT_PATH"
	download "$uri" "$file" "$sha"
}

# fetch_deb NAME VERSION SHA256 puts a Debian binary package (pinned by version and sha256) into
# the download cache.
fetch_deb() {
	local name=$1 version=$2 sha=$3 file uri
	file="${name}_${version//:/%3a}_all.deb"
	cached "$file" "$sha" && return 0
	uri=$(apt-get download --print-uris -qq "$name=$version" 2>/dev/null | awk '{ gsub("\047", "", $1); print $1 }' | head -n1)
	if [[ -z $uri ]]; then
		as_root apt-get update -qq >&2
		uri=$(apt-get download --print-uris -qq "$name=$version" 2>/dev/null | awk '{ gsub("\047", "", $1); print $1 }' | head -n1)
	fi
	[[ -n $uri ]] || die "apt no longer offers $name $version; update the pins in $SCRIPT_PATH"
	download "$uri" "$file" "$sha"
}

# phase NAME FUNC runs FUNC in a subshell with its output in $WORK/logs/NAME.log, once: a
# finished phase leaves $WORK/.done-NAME and is skipped when the build resumes. (The subshell
# runs in the background and is waited for, so that set -e holds inside it.)
phase() {
	local name=$1 fn=$2 t0=$SECONDS pid
	if [[ -f $WORK/.done-$name ]]; then
		log "phase $name: already done"
		return 0
	fi
	log "phase $name ..."
	mkdir -p "$WORK/logs"
	(
		set -euo pipefail
		"$fn"
	) >"$WORK/logs/$name.log" 2>&1 &
	pid=$!
	if ! wait "$pid"; then
		tail -n 40 "$WORK/logs/$name.log" >&2
		die "phase $name failed after $((SECONDS - t0))s; full log: $WORK/logs/$name.log"
	fi
	touch "$WORK/.done-$name"
	log "phase $name: done in $((SECONDS - t0))s"
}

# --- phases ---------------------------------------------------------------------------------

native_build() { # the build Python: a plain native python3.13 from the same tarball
	rm -rf "${NATIVE:?}/src"
	mkdir -p "$NATIVE/src"
	tar -xf "$CACHE_ROOT/downloads/$PY_TARBALL" -C "$NATIVE/src" --strip-components=1
	cd "$NATIVE/src"
	./configure --disable-test-modules --without-ensurepip
	make -j"$JOBS"
	./python -c 'import sys; assert sys.version_info[:2] == (3, 13), sys.version'
}

toolchain() { # the sysroot and wrappers (spec recipe steps 3-4)
	rm -rf "${WORK:?}/sysroot" "${WORK:?}/bin"
	mkdir -p "$WORK/sysroot/include" "$WORK/sysroot/lib" "$WORK/bin"
	ln -s /usr/include/wasm32-wasi "$WORK/sysroot/include/wasm32-wasi"
	ln -s /usr/lib/wasm32-wasi "$WORK/sysroot/lib/wasm32-wasi"
	cat >"$WORK/bin/clang" <<-EOF
		#!/bin/sh
		exec clang-19 --target=wasm32-wasi --sysroot=$WORK/sysroot "\$@"
	EOF
	chmod +x "$WORK/bin/clang"
	ln -s "$(command -v llvm-ar-19)" "$WORK/bin/llvm-ar"
	ln -s "$(command -v llvm-ranlib-19)" "$WORK/bin/llvm-ranlib"
	ln -s "$(command -v wasm-ld-19)" "$WORK/bin/wasm-ld"
	echo 'int main(void){return 0;}' >"$WORK/t.c"
	"$WORK/bin/clang" "$WORK/t.c" -o "$WORK/t.wasm"
	rm -f "$WORK/t.c" "$WORK/t.wasm"
}

unpack() {
	rm -rf "${WORK:?}/src"
	mkdir -p "$WORK/src/python" "$WORK/src/zlib" "$WORK/src/sqlite" "$WORK/src/bzip2" "$WORK/src/xz" "$WORK/src/debs"
	tar -xf "$CACHE_ROOT/downloads/$PY_TARBALL" -C "$WORK/src/python" --strip-components=1
	tar -xf "$CACHE_ROOT/downloads/$ZLIB_TARBALL" -C "$WORK/src/zlib" --strip-components=1
	tar -xf "$CACHE_ROOT/downloads/$SQLITE_TARBALL" -C "$WORK/src/sqlite" --strip-components=1
	tar -xf "$CACHE_ROOT/downloads/$BZIP2_TARBALL" -C "$WORK/src/bzip2" --strip-components=1
	tar -xf "$CACHE_ROOT/downloads/$XZ_TARBALL" -C "$WORK/src/xz" --strip-components=1
	local d name version sha
	for d in "${DEBS[@]}"; do
		read -r name version sha <<<"$d"
		dpkg-deb -x "$CACHE_ROOT/downloads/${name}_${version//:/%3a}_all.deb" "$WORK/src/debs"
	done
}

# patch_yield adds the eval-loop periodic yield (spec: "How mode B works" and the 3.13 notes):
# with -DPy_WASI_PERIODIC_YIELD=N, every Nth eval-breaker check (each backward jump and each
# Python call) calls sched_yield(), which is WASI's sched_yield, which wazero routes to the
# host's ModuleConfig.WithOsyield. The sandbox's fast mode checks the run's deadline there and
# ends the instance, so pure-Python loops stop without wazero's close-on-context-done checks
# (3.5-4.5x slower). Loops inside C never reach it; the worker pool kills those. Without the
# define the header is unchanged. The anchors are checked, so a new CPython fails loudly.
patch_yield() {
	"$NATIVE/src/python" -I - "$WORK/src/python" <<-'PY'
		import pathlib, sys
		src = pathlib.Path(sys.argv[1])
		def insert_after(rel, anchor, text):
		    p = src / rel
		    s = p.read_text()
		    if s.count(anchor) != 1:
		        sys.exit(f"patch_yield: anchor {anchor!r} found {s.count(anchor)} times in {rel}")
		    p.write_text(s.replace(anchor, anchor + text))
		insert_after("Include/internal/pycore_emscripten_signal.h",
		             "extern int _Py_emscripten_signal_clock;\n", """
		#elif defined(__wasi__) && defined(Py_WASI_PERIODIC_YIELD)

		/* assistant: yield to the host every Py_WASI_PERIODIC_YIELD eval-breaker checks. */
		#include <sched.h>

		extern int _Py_wasi_yield_clock;

		#define _Py_CHECK_EMSCRIPTEN_SIGNALS()

		#define _Py_CHECK_EMSCRIPTEN_SIGNALS_PERIODICALLY() \\
		    do { \\
		        if (--_Py_wasi_yield_clock <= 0) { \\
		            _Py_wasi_yield_clock = Py_WASI_PERIODIC_YIELD; \\
		            (void)sched_yield(); \\
		        } \\
		    } while (0)
		""")
		insert_after("Python/ceval.c", "#include <stdbool.h>              // bool\n", """
		#if defined(__wasi__) && defined(Py_WASI_PERIODIC_YIELD)
		int _Py_wasi_yield_clock = Py_WASI_PERIODIC_YIELD; /* assistant: see pycore_emscripten_signal.h */
		#endif
		""")
	PY
	grep -q '_Py_wasi_yield_clock' "$WORK/src/python/Python/ceval.c"
}

# patch_snapshot lets the sandbox start interpreters from a snapshot (sandbox/snapshot.go):
# `python --osa-snapshot -c CODE` initialises CPython as Py_BytesMain would, runs CODE in
# __main__, flushes stdio and calls the host import osa.checkpoint with no Python frame active;
# the host copies the linear memory and ends the instance. An instance made from that memory
# never runs _start: the host calls the export osa_resume, which runs _osa_resume() (defined by
# CODE) on a fresh C stack. The only mutable global is __stack_pointer, whose initial value is
# the right one for a fresh stack, so the memory is the whole image. Without --osa-snapshot
# main is Py_BytesMain, as before. The anchor is checked, so a new CPython fails loudly.
patch_snapshot() {
	"$NATIVE/src/python" -I - "$WORK/src/python/Programs/python.c" <<-'PY'
		import pathlib, sys
		p = pathlib.Path(sys.argv[1])
		s = p.read_text()
		if "osa_resume" in s:
		    sys.exit(0)  # patched by an earlier try of this phase
		anchor = "int\nmain(int argc, char **argv)\n{\n    return Py_BytesMain(argc, argv);\n}\n"
		if s.count(anchor) != 1:
		    sys.exit(f"patch_snapshot: anchor found {s.count(anchor)} times in {p}")
		p.write_text(s.replace(anchor, """#ifdef __wasi__
		#include <stdio.h>
		#include <string.h>

		/* assistant: see patch_snapshot in scripts/build_python_wasi.sh. */
		__attribute__((import_module("osa"), import_name("checkpoint")))
		extern void _osa_checkpoint(void);

		__attribute__((export_name("osa_resume")))
		int
		osa_resume(void)
		{
    return PyRun_SimpleString("_osa_resume()") == 0 ? 0 : 1;
		}

		static int
		osa_snapshot(int argc, char **argv)
		{
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    argv[1] = argv[0]; /* the command line without --osa-snapshot */
    PyStatus st = PyConfig_SetBytesArgv(&config, argc - 1, argv + 1);
    if (!PyStatus_Exception(st)) {
        st = PyConfig_Read(&config);
    }
    if (!PyStatus_Exception(st) && config.run_command == NULL) {
        st = PyStatus_Error("--osa-snapshot needs -c CODE");
    }
    if (!PyStatus_Exception(st)) {
        st = Py_InitializeFromConfig(&config);
    }
    if (PyStatus_Exception(st)) {
        PyConfig_Clear(&config);
        Py_ExitStatusException(st);
    }
    PyObject *code = PyUnicode_FromWideChar(config.run_command, -1);
    PyConfig_Clear(&config);
    const char *text = code == NULL ? NULL : PyUnicode_AsUTF8(code);
    if (text == NULL || PyRun_SimpleString(text) != 0) {
        return 1;
    }
    Py_DECREF(code);
    fflush(stdout);
    fflush(stderr);
    _osa_checkpoint();
    return 1; /* not reached: the host ends the instance */
		}
		#endif

		""" + anchor.replace("{\n    return", "{\n#ifdef __wasi__\n    if (argc > 1 && strcmp(argv[1], \"--osa-snapshot\") == 0) {\n        return osa_snapshot(argc, argv);\n    }\n#endif\n    return")))
	PY
	grep -q 'osa_resume' "$WORK/src/python/Programs/python.c"
}

zlib() { # static libz for wasm32 (spec recipe step 5)
	rm -rf "${WORK:?}/deps"
	cd "$WORK/src/zlib"
	make distclean >/dev/null 2>&1 || true
	CHOST=wasm32 CC="$WORK/bin/clang" AR="$WORK/bin/llvm-ar" RANLIB="$WORK/bin/llvm-ranlib" \
		CFLAGS="$DEPS_OPT $WASM_CFLAGS" ./configure --static --prefix="$WORK/deps"
	make -j"$JOBS" libz.a
	make install
	test -f "$WORK/deps/lib/pkgconfig/zlib.pc"
}

# pcfile NAME VERSION LIBS writes a pkg-config file for a static wasm32 library in deps, so
# CPython's configure finds it as it finds zlib.
pcfile() {
	mkdir -p "$WORK/deps/lib/pkgconfig"
	cat >"$WORK/deps/lib/pkgconfig/$1.pc" <<-EOF
		prefix=$WORK/deps
		Name: $1
		Description: $1 for wasm32-wasi (assistant engine)
		Version: $2
		Cflags: -I\${prefix}/include
		Libs: -L\${prefix}/lib $3
	EOF
}

build_sqlite() { # static libsqlite3 for wasm32: the amalgamation made natively, compiled for WASI
	mkdir -p "$WORK/sqlite-native" "$WORK/deps/include" "$WORK/deps/lib"
	cd "$WORK/sqlite-native"
	"$WORK/src/sqlite/configure" "${SQLITE_CONFIGURE[@]}" >/dev/null
	make sqlite3.c >/dev/null
	# shellcheck disable=SC2086 # the flags are words
	"$WORK/bin/clang" $DEPS_OPT $WASM_CFLAGS $SQLITE_CFLAGS -c sqlite3.c -o sqlite3.o
	"$WORK/bin/llvm-ar" rcs "$WORK/deps/lib/libsqlite3.a" sqlite3.o
	cp sqlite3.h sqlite3ext.h "$WORK/deps/include/"
	pcfile sqlite3 "$(cat "$WORK/src/sqlite/VERSION")" -lsqlite3
}

build_bzip2() { # static libbz2 for wasm32
	cd "$WORK/src/bzip2"
	local f objs=()
	for f in blocksort huffman crctable randtable compress decompress bzlib; do
		"$WORK/bin/clang" $DEPS_OPT $WASM_CFLAGS -D_FILE_OFFSET_BITS=64 -c "$f.c" -o "$f.o"
		objs+=("$f.o")
	done
	"$WORK/bin/llvm-ar" rcs "$WORK/deps/lib/libbz2.a" "${objs[@]}"
	cp bzlib.h "$WORK/deps/include/"
	pcfile bzip2 1.0.8 -lbz2
}

build_xz() { # static liblzma for wasm32, without threads or the command-line tools
	# WASI has no signal masks; only the command-line tools use this helper. The anchor is
	# checked, so a new xz fails loudly.
	"$NATIVE/src/python" -I - "$WORK/src/xz/src/common/mythread.h" <<-'PY'
		import pathlib, sys
		p = pathlib.Path(sys.argv[1])
		s = p.read_text()
		anchor = "#if !(defined(_WIN32) && !defined(__CYGWIN__))\n// Use sigprocmask()"
		if "!defined(__wasi__)\n// Use sigprocmask()" in s:
		    sys.exit(0)  # patched by an earlier try of this phase
		if s.count(anchor) != 1:
		    sys.exit(f"build_xz: anchor found {s.count(anchor)} times in {p}")
		p.write_text(s.replace(anchor, anchor.replace("))\n", ")) && !defined(__wasi__)\n")))
	PY
	mkdir -p "$WORK/xz-build"
	cd "$WORK/xz-build"
	CC="$WORK/bin/clang" AR="$WORK/bin/llvm-ar" RANLIB="$WORK/bin/llvm-ranlib" CFLAGS="$DEPS_OPT $WASM_CFLAGS" \
		"$WORK/src/xz/configure" --host=wasm32-unknown-wasi --prefix="$WORK/deps" --enable-static --disable-shared \
		--disable-threads --disable-xz --disable-xzdec --disable-lzmadec --disable-lzmainfo --disable-scripts \
		--disable-doc --disable-nls --disable-rpath --disable-lzma-links --disable-symbol-versions
	make -j"$JOBS" -C src/liblzma
	make -C src/liblzma install
	test -f "$WORK/deps/lib/pkgconfig/liblzma.pc"
}

cross_configure() { # spec recipe step 6, plus the 3.13 config.site lines
	mkdir -p "$WORK/cross"
	{
		cat "$WORK/src/python/Tools/wasm/config.site-wasm32-wasi"
		echo '# Added by build_python_wasi.sh: time.sleep on wazero needs plain nanosleep.'
		echo 'ac_cv_func_clock_nanosleep=no'
		echo 'ac_cv_lib_rt_clock_nanosleep=no'
		echo "# bookworm's wasi-libc has no <pthread.h>; CPython 3.13 brings its own stubs."
		echo 'ac_cv_have_pthread_t=yes'
		echo 'ac_cv_sizeof_pthread_t=4'
		echo 'ac_cv_sizeof_pthread_key_t=4'
	} >"$WORK/config.site"
	cd "$WORK/cross"
	CONFIG_SITE="$WORK/config.site" \
		CC="$WORK/bin/clang" AR="$WORK/bin/llvm-ar" RANLIB="$WORK/bin/llvm-ranlib" \
		CFLAGS="$WASM_CFLAGS" LDFLAGS="$WASM_LDFLAGS" \
		PKG_CONFIG_LIBDIR="$WORK/deps/lib/pkgconfig" PKG_CONFIG_PATH='' \
		LIBSQLITE3_CFLAGS="-I$WORK/deps/include" LIBSQLITE3_LIBS="-L$WORK/deps/lib -lsqlite3" \
		BZIP2_CFLAGS="-I$WORK/deps/include" BZIP2_LIBS="-L$WORK/deps/lib -lbz2" \
		"$WORK/src/python/configure" -C \
		--host=wasm32-unknown-wasi \
		--build="$("$WORK/src/python/config.guess")" \
		--with-build-python="$NATIVE/src/python" \
		--prefix=/usr \
		--disable-test-modules \
		--without-ensurepip
	grep -q '^#define HAVE_ZLIB_COPY 1' pyconfig.h || grep -q 'MODULE_ZLIB_STATE=yes' Makefile
	local m
	for m in _SQLITE3 _BZ2 _LZMA; do
		grep -q "^MODULE_${m}_STATE=yes" Makefile || die "configure did not enable ${m,,}: $(grep "^MODULE_${m}_STATE" Makefile)"
	done
}

cross_make() {
	cd "$WORK/cross"
	make -j"$JOBS"
	test -f python.wasm
}

optimize() { # spec recipe step 8
	llvm-strip-19 -o "$WORK/python.stripped.wasm" "$WORK/cross/python.wasm"
	if [[ ${ASSISTANT_ENGINE_KEEP_UNOPT:-0} == 1 ]]; then
		# Without DWARF but with the function names, for a profile (scripts/engine_variant.sh).
		wasm-opt --strip-dwarf "$WORK/cross/python.wasm" -o "$CACHE_ROOT/$KEY.unopt.wasm"
	fi
	# shellcheck disable=SC2086 # the flags are words
	wasm-opt $WASM_OPT_FLAGS --strip-debug --strip-producers \
		"$WORK/python.stripped.wasm" -o "$WORK/python.wasm"
	rm -f "$WORK/python.stripped.wasm"
}

stdlib() { # spec recipe step 9: trimmed stdlib, unchecked-hash .pyc, fixed timestamps
	local lib="$WORK/stage/lib/python$PY_MINOR" x pybuilddir
	rm -rf "${WORK:?}/stage"
	mkdir -p "$lib"
	# What `make install` would put in LIBDEST, without its three-level compileall.
	cp -a "$WORK/src/python/Lib/." "$lib/"
	for x in "${STDLIB_EXCLUDE[@]}"; do
		rm -rf "${lib:?}/$x"
	done
	find "$lib" -name '__pycache__' -prune -exec rm -rf {} +
	find "$lib" -name '*.orig' -delete
	pybuilddir=$(cat "$WORK/cross/pybuilddir.txt")
	cp "$WORK/cross/$pybuilddir"/_sysconfigdata_*_wasi_*.py "$lib/"
	cp "$WORK/src/python/LICENSE" "$lib/LICENSE.txt"
	# The Debian packages' files as they are: Python packages into site-packages (which site
	# puts on sys.path), the tz database (without the leap-second "right/" variants, the
	# "posix/" link to itself and "localtime", a link to the build host's /etc/localtime; links
	# resolved) into share/zoneinfo.
	mkdir -p "$lib/site-packages" "$WORK/stage/share/zoneinfo"
	cp -a "$WORK/src/debs/usr/lib/python3/dist-packages/." "$lib/site-packages/"
	find "$lib/site-packages" -name '__pycache__' -prune -exec rm -rf {} +
	(cd "$WORK/src/debs/usr/share/zoneinfo" && find -L . \( -path ./right -o -path ./posix -o -path ./localtime \) -prune -o -type f -print0 |
		xargs -0 cp -L --parents -t "$WORK/stage/share/zoneinfo")
	test -f "$WORK/stage/share/zoneinfo/Europe/Berlin" && test -f "$WORK/stage/share/zoneinfo/tzdata.zi"
	# workers=1: 3.13's compileall pool re-imports __main__ through a forkserver (spec).
	"$NATIVE/src/python" -I -m compileall -q -j 1 -f \
		--invalidation-mode unchecked-hash -d "/usr/lib/python$PY_MINOR" "$lib" >/dev/null
	cp "$WORK/python.wasm" "$WORK/stage/python.wasm"
	find "$WORK/stage" -type d -exec chmod 0755 {} +
	find "$WORK/stage" -type f -exec chmod 0644 {} +
	find "$WORK/stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
}

# manifest writes packages.json: what the engine holds beyond the bare standard library, which
# the server logs and tells the model about. "import" is the module a program imports.
manifest() {
	local py=$NATIVE/src/python
	"$py" -I - "$WORK/stage/packages.json" "$(cat "$WORK/src/sqlite/VERSION")" "${DEBS[@]}" <<-'PY'
		import json, sys
		out, sqlite_version, debs = sys.argv[1], sys.argv[2], sys.argv[3:]
		deb = {d.split()[0]: d.split()[1] for d in debs}
		def upstream(v):
		    return v.split("-")[0].split("+")[0]
		pkgs = [
		    {"name": "sqlite3", "import": "sqlite3", "version": sqlite_version, "debian": "sqlite3 3.46.1 (source)"},
		    {"name": "zoneinfo", "import": "zoneinfo", "version": upstream(deb["tzdata"]), "debian": "tzdata " + deb["tzdata"]},
		    {"name": "bz2", "import": "bz2", "version": "1.0.8", "debian": "bzip2 1.0.8 (source)"},
		    {"name": "lzma", "import": "lzma", "version": "5.4.1", "debian": "xz-utils 5.4.1 (source)"},
		]
		for name, imp in [("openpyxl", "openpyxl"), ("et_xmlfile", "et_xmlfile"), ("python-dateutil", "dateutil"),
		                  ("pytz", "pytz"), ("six", "six"), ("xlsxwriter", "xlsxwriter"), ("tabulate", "tabulate")]:
		    d = {"python-dateutil": "python3-dateutil", "pytz": "python3-tz", "et_xmlfile": "python3-et-xmlfile"}.get(name, "python3-" + name)
		    pkgs.append({"name": name, "import": imp, "version": upstream(deb[d]), "debian": d + " " + deb[d]})
		with open(out, "w") as f:
		    json.dump({"packages": pkgs}, f, indent=2)
		    f.write("\n")
	PY
	chmod 0644 "$WORK/stage/packages.json"
	touch -d "@$SOURCE_DATE_EPOCH" "$WORK/stage/packages.json"
}

package() {
	manifest
	cd "$WORK/stage"
	# shellcheck disable=SC2094 # SHA256SUMS itself is excluded from the listing
	find . -type f ! -name SHA256SUMS ! -name BUILDINFO -printf '%P\n' | LC_ALL=C sort |
		xargs -d '\n' sha256sum >SHA256SUMS
	{
		echo "engine_key=$KEY"
		echo "python=$("$NATIVE/src/python" -c 'import platform; print(platform.python_version())')"
		echo "python_source=$PY_TARBALL sha256:$PY_TARBALL_SHA256"
		echo "zlib_source=$ZLIB_TARBALL sha256:$ZLIB_TARBALL_SHA256"
		echo "sqlite_source=$SQLITE_TARBALL sha256:$SQLITE_TARBALL_SHA256"
		echo "sqlite_cflags=$SQLITE_CFLAGS"
		echo "sqlite_configure=${SQLITE_CONFIGURE[*]}"
		echo "bzip2_source=$BZIP2_TARBALL sha256:$BZIP2_TARBALL_SHA256"
		echo "xz_source=$XZ_TARBALL sha256:$XZ_TARBALL_SHA256"
		local d name version sha
		for d in "${DEBS[@]}"; do
			read -r name version sha <<<"$d"
			echo "deb_$name=$version sha256:$sha"
		done
		echo "source_date_epoch=$SOURCE_DATE_EPOCH"
		echo "cflags=$WASM_CFLAGS"
		echo "periodic_yield=$PERIODIC_YIELD"
		echo "lto=$ENGINE_LTO"
		echo "deps_opt=$DEPS_OPT"
		echo "wasm_opt=$WASM_OPT_FLAGS"
		pkg_versions "${TOOLCHAIN_PKGS[@]}" | sed 's/^\([^ ]*\) /toolchain_\1=/'
		echo "python_wasm_sha256=$(sha256sum python.wasm | cut -d' ' -f1)"
	} >BUILDINFO
	touch -d "@$SOURCE_DATE_EPOCH" SHA256SUMS BUILDINFO
	sha256sum python.wasm | cut -d' ' -f1 >.complete
}

# --- main -----------------------------------------------------------------------------------

main() {
	case "${1:-}" in
	--print-dir)
		local dir
		dir="$CACHE_ROOT/$(engine_key)"
		[[ -f $dir/.complete ]] || {
			echo "engine not built (expected $dir); run $SCRIPT_PATH" >&2
			exit 1
		}
		echo "$dir"
		return 0
		;;
	"") ;;
	*)
		echo "usage: $0 [--print-dir]" >&2
		exit 2
		;;
	esac

	ensure_packages
	KEY=$(engine_key)
	OUT="$CACHE_ROOT/$KEY"
	if [[ -f $OUT/.complete ]]; then
		echo "$OUT"
		return 0
	fi

	mkdir -p "$CACHE_ROOT/downloads" "$BUILD_ROOT"
	exec 9>"$CACHE_ROOT/.lock"
	if ! flock -n 9; then
		log "another build holds $CACHE_ROOT/.lock; waiting"
		flock 9
	fi
	if [[ -f $OUT/.complete ]]; then # built by the run we waited for
		echo "$OUT"
		return 0
	fi

	log "building the CPython $PY_MINOR wasm32-wasi engine $KEY (about 9 min on 2 cores, 6.5 min if the native build Python is cached)"
	fetch_orig "$PY_SRCPKG" "$PY_TARBALL" "$PY_TARBALL_SHA256"
	fetch_orig "$ZLIB_SRCPKG" "$ZLIB_TARBALL" "$ZLIB_TARBALL_SHA256"
	fetch_orig "$SQLITE_SRCPKG" "$SQLITE_TARBALL" "$SQLITE_TARBALL_SHA256"
	fetch_orig "$BZIP2_SRCPKG" "$BZIP2_TARBALL" "$BZIP2_TARBALL_SHA256"
	fetch_orig "$XZ_SRCPKG" "$XZ_TARBALL" "$XZ_TARBALL_SHA256"
	local d name version sha
	for d in "${DEBS[@]}"; do
		read -r name version sha <<<"$d"
		fetch_deb "$name" "$version" "$sha"
	done

	local native_key
	native_key=$({
		echo "$PY_TARBALL_SHA256"
		declare -f native_build
		gcc --version | head -n1
	} | sha256sum | cut -c1-16)
	NATIVE="$BUILD_ROOT/native-$native_key"
	WORK="$BUILD_ROOT/$KEY"
	WASM_CFLAGS="-mbulk-memory -mnontrapping-fptoint -ffile-prefix-map=$WORK/=/build/"
	WASM_CFLAGS+=" -Wno-error=int-conversion -Wno-error=incompatible-function-pointer-types"
	WASM_CFLAGS+=" -DPy_WASI_PERIODIC_YIELD=$PERIODIC_YIELD" # the patch_yield interval (zlib ignores it)
	WASM_LDFLAGS=""
	if [[ $ENGINE_LTO == 1 ]]; then
		WASM_CFLAGS+=" -flto=thin"
		WASM_LDFLAGS="-flto=thin"
	fi
	mkdir -p "$WORK" "$NATIVE"

	WORK=$NATIVE phase native-python native_build # bash restores WORK after the call
	phase toolchain toolchain
	phase unpack unpack
	phase patch-yield patch_yield
	phase patch-snapshot patch_snapshot
	phase zlib zlib
	phase sqlite build_sqlite
	phase bzip2 build_bzip2
	phase xz build_xz
	phase cross-configure cross_configure
	phase cross-make cross_make
	phase optimize optimize
	phase stdlib stdlib
	phase package package

	rm -rf "$OUT.partial" "$OUT" # $OUT, if there, is a leftover without .complete
	cp -a "$WORK/stage" "$OUT.partial"
	mv "$OUT.partial" "$OUT"
	# The work tree is only useful to resume this key's build; keep the native build Python,
	# which other keys reuse, and drop everything else (we hold the lock, so nothing is running).
	find "$BUILD_ROOT" -mindepth 1 -maxdepth 1 ! -path "$NATIVE" -exec rm -rf {} +
	log "python.wasm $(stat -c %s "$OUT/python.wasm") bytes, sha256 $(cut -c1-16 "$OUT/.complete")…;" \
		"stdlib $(du -sb "$OUT/lib" | cut -f1) bytes in $(find "$OUT/lib" -type f | wc -l) files"
	log "done in $((SECONDS - START))s"
	echo "$OUT"
}

main "$@"
