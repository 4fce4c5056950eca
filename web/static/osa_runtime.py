"""The Python half of the demo page's runtime (worker.js runs it once per boot).

It is executed in a private namespace, not imported: worker.js keeps references to
make_osa, seal, run and run_prelude, and executed code never sees this namespace. The
`osa` module it builds is the only way out of the sandbox after the seal:

    await osa.fetch(url, method="GET", headers=None, body=None) -> osa.Response
    await osa.fetch_bytes(url, ...) -> bytes     (raises osa.FetchError unless 2xx)
    await osa.fetch_text(url, ..., encoding="utf-8") -> str
    osa.allowed(url) -> bool, osa.fetch_allow -> the allowed URL prefixes
    osa.save_script(name, text), osa.save_artifact(name, data) -> name

The same interface as the server's runtime (sandbox/osa_module.py). A refused URL raises
osa.FetchRefused (a PermissionError) whose .reason says why; a refused save raises
osa.SaveRefused: bad_name, too_large, too_many_files or workspace_full. Each run may save at
most 32 files, 10 MB each and 25 MB in all; names are relative paths of letters, digits, ".",
"_" and "-" separated by "/". Saved files are offered to the reader as downloads, and their
names are the result's artifacts.
"""

import base64
import builtins
import io
import re
import sys
import traceback
import types
from collections import deque
from contextlib import redirect_stderr, redirect_stdout

from pyodide.code import eval_code_async
from pyodide.ffi import JsException, to_js

# Modules the seal removes and refuses by name (config.md §4.1 SEALED_IMPORT_ROOTS, plus
# Pyodide's private _pyodide).
SEALED_ROOTS = frozenset({"micropip", "js", "pyodide", "pyodide_js", "pyodide_http", "ctypes", "_pyodide"})

# Captured output: the first and last characters of each stream, and the count.
CAPTURE_CHARS = 262144

# An image larger than this is not attached (api.md §6.4).
MAX_IMAGE_BYTES = 2_000_000

USER_GLOBALS = {"__name__": "__main__", "__builtins__": builtins}


class Capture(io.TextIOBase):
    """A text stream keeping the first and last CAPTURE_CHARS characters and the total."""

    def __init__(self):
        self.head = []
        self.head_len = 0
        self.tail = deque()
        self.tail_len = 0
        self.total = 0

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        n = len(s)
        self.total += n
        if self.head_len < CAPTURE_CHARS:
            take = s[: CAPTURE_CHARS - self.head_len]
            self.head.append(take)
            self.head_len += len(take)
            s = s[len(take) :]
        if s:
            self.tail.append(s)
            self.tail_len += len(s)
            while self.tail and self.tail_len - len(self.tail[0]) >= CAPTURE_CHARS:
                self.tail_len -= len(self.tail.popleft())
        return n

    def parts(self):
        tail = "".join(self.tail)
        if len(tail) > CAPTURE_CHARS:
            tail = tail[-CAPTURE_CHARS:]
        return {"head": "".join(self.head), "tail": tail, "total": self.total}


# ---- osa ----


class FetchRefused(PermissionError):
    """The runtime refused to fetch a URL; .reason says why."""

    def __init__(self, message, reason=""):
        super().__init__(message)
        self.reason = reason


class FetchError(OSError):
    """A fetch failed: the network, a refused redirect, CORS, or a non-2xx status."""


class SaveRefused(PermissionError):
    """The runtime refused to save a file; .reason says why."""

    def __init__(self, message, reason=""):
        super().__init__(message)
        self.reason = reason


# What one run may save (the same caps as the server's runtime).
MAX_FILES = 32
MAX_FILE_BYTES = 10_000_000
MAX_RUN_BYTES = 25_000_000
_NAME_RE = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")

# The files the current run saved: name -> (kind, bytes).
SAVED = {}


def _save(func, kind, name, data):
    if not isinstance(name, str):
        raise TypeError(f"osa.{func}: name must be a str")
    if len(name) > 512 or _NAME_RE.fullmatch(name) is None or any(p in (".", "..") for p in name.split("/")):
        raise SaveRefused(f"osa.{func} refused {name!r}: bad_name (a relative path of letters, digits, '.', '_' and '-')", "bad_name")
    if len(data) > MAX_FILE_BYTES:
        raise SaveRefused(f"osa.{func} refused {name!r}: too_large ({len(data)} bytes; at most {MAX_FILE_BYTES})", "too_large")
    if name not in SAVED and len(SAVED) >= MAX_FILES:
        raise SaveRefused(f"osa.{func} refused {name!r}: too_many_files (at most {MAX_FILES} per run)", "too_many_files")
    used = sum(len(d) for n, (_, d) in SAVED.items() if n != name)
    if used + len(data) > MAX_RUN_BYTES:
        raise SaveRefused(f"osa.{func} refused {name!r}: workspace_full (at most {MAX_RUN_BYTES} bytes per run)", "workspace_full")
    SAVED[name] = (kind, data)
    return name


def save_script(name, text):
    """Save text (a str) as the file name for the reader; return name."""
    if not isinstance(text, str):
        raise TypeError("osa.save_script: text must be a str")
    return _save("save_script", "script", name, text.encode("utf-8"))


def save_artifact(name, data):
    """Save data (bytes, or a str written as UTF-8) as the file name for the reader; return name."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    elif not isinstance(data, bytes):
        data = bytes(data)
    return _save("save_artifact", "artifact", name, data)


class Response:
    """What osa.fetch returns."""

    def __init__(self, status, url, headers, content):
        self.status = status
        self.ok = 200 <= status < 300
        self.url = url
        self.headers = headers
        self.content = content

    def __repr__(self):
        return f"<osa.Response {self.status} {self.url}>"

    def text(self, encoding="utf-8"):
        return self.content.decode(encoding)

    def json(self):
        import json

        return json.loads(self.content)

    def raise_for_status(self):
        if not self.ok:
            raise FetchError(f"{self.url} answered HTTP {self.status}")
        return self


def make_osa(bridge, fetch_allow):
    """Build the osa module around the worker's guarded fetch."""
    guarded = bridge.fetch
    check = bridge.check
    allow = tuple(str(x) for x in fetch_allow)

    async def fetch(url, *, method="GET", headers=None, body=None):
        """Fetch url if fetch_allow allows it. Redirects are refused; no credentials are sent."""
        if not isinstance(url, str):
            raise TypeError("url must be a str")
        pairs = [[str(k), str(v)] for k, v in dict(headers or {}).items()]
        if isinstance(body, str):
            body = body.encode("utf-8")
        js_body = to_js(bytes(body)) if body is not None else None
        r = await guarded(url, str(method).upper(), to_js(pairs), js_body)
        if r.refused:
            raise FetchRefused(f"osa.fetch refused {url}: {r.refused} (this runtime may fetch only {', '.join(allow) or 'nothing'})", str(r.refused))
        if r.error:
            raise FetchError(f"osa.fetch of {url} failed: {r.error}")
        return Response(int(r.status), str(r.url), dict(r.headers.to_py()), r.body.to_bytes())

    async def fetch_bytes(url, **kw):
        """Fetch url and return its body as bytes; raise FetchError unless the status is 2xx."""
        return (await fetch(url, **kw)).raise_for_status().content

    async def fetch_text(url, *, encoding="utf-8", **kw):
        """Fetch url and return its body as text; raise FetchError unless the status is 2xx."""
        return (await fetch_bytes(url, **kw)).decode(encoding)

    def allowed(url):
        """Whether osa.fetch may fetch url."""
        return bool(check(str(url)).ok)

    mod = types.ModuleType("osa", "The browser runtime's only network access: fetches limited to fetch_allow.")
    mod.fetch, mod.fetch_bytes, mod.fetch_text, mod.allowed = fetch, fetch_bytes, fetch_text, allowed
    mod.save_script, mod.save_artifact = save_script, save_artifact
    mod.fetch_allow = allow
    mod.Response, mod.FetchRefused, mod.FetchError, mod.SaveRefused = Response, FetchRefused, FetchError, SaveRefused
    mod.__all__ = [
        "fetch",
        "fetch_bytes",
        "fetch_text",
        "allowed",
        "fetch_allow",
        "save_script",
        "save_artifact",
        "Response",
        "FetchRefused",
        "FetchError",
        "SaveRefused",
    ]
    sys.modules["osa"] = mod
    return mod


# ---- the seal ----


class _Refuse:
    """A meta path finder that refuses the sealed modules by name."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in SEALED_ROOTS:
            raise ModuleNotFoundError(f"import of {name!r} is blocked in this runtime: executed code may use osa.fetch, nothing else of the browser", name=name)
        return None


def seal():
    """Remove the sealed modules and refuse them from now on."""
    for name in list(sys.modules):
        if name.partition(".")[0] in SEALED_ROOTS:
            del sys.modules[name]
    # Pyodide's finder for JavaScript modules goes: nothing is importable from the page.
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__module__.partition(".")[0] not in SEALED_ROOTS]
    sys.meta_path.insert(0, _Refuse())
    importlib_invalidate()


def importlib_invalidate():
    import importlib

    importlib.invalidate_caches()


# ---- running code ----


def _format_traceback(exc):
    """The traceback from the first frame of the reader's code on."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename not in ("<exec>", "<prelude>"):
        tb = tb.tb_next
    lines = traceback.format_exception(type(exc), exc, tb)
    return "".join(lines)


def _png_size(data):
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _figures(max_images, image_px):
    """Every open matplotlib figure as a PNG whose longer edge is at most image_px."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return [], 0, 0
    nums = plt.get_fignums()
    images, too_big = [], 0
    for num in nums[:max_images]:
        fig = plt.figure(num)
        w_in, h_in = fig.get_size_inches()
        dpi = min(float(fig.dpi), (image_px - 1) / max(w_in, h_in, 0.01))
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
        data = buf.getvalue()
        w, h = _png_size(data)
        if len(data) > MAX_IMAGE_BYTES or w > image_px or h > image_px or w < 1 or h < 1:
            too_big += 1
            continue
        images.append({"mime": "image/png", "data_base64": base64.b64encode(data).decode("ascii"), "width": w, "height": h})
    plt.close("all")
    return images, len(nums), too_big


async def _execute(code, filename):
    SAVED.clear()
    out, err = Capture(), Capture()
    status, error, tb = "ok", "", ""
    with redirect_stdout(out), redirect_stderr(err):
        try:
            await eval_code_async(code, USER_GLOBALS, return_mode="none", filename=filename)
        except (Exception, SystemExit, KeyboardInterrupt) as exc:
            status = "error"
            error = f"{type(exc).__name__}: {exc}"
            tb = _format_traceback(exc)
            err.write(tb)
    return status, error, tb, out, err


async def run(code, max_images, image_px):
    """Run the reader's code in the session's namespace."""
    status, error, tb, out, err = await _execute(code, "<exec>")
    try:
        images, drawn, too_big = _figures(int(max_images), int(image_px))
    except Exception as exc:  # a broken figure must not lose the run's output
        images, drawn, too_big = [], 0, 0
        err.write(f"\n[runtime] the figures could not be rendered: {type(exc).__name__}: {exc}\n")
    return to_js(
        {
            "status": status,
            "error": error[:500],
            "traceback": tb,
            "stdout": out.parts(),
            "stderr": err.parts(),
            "images": images,
            "figures_drawn": drawn,
            "figures_too_big": too_big,
            "files": [
                {"name": n, "kind": k, "data_base64": base64.b64encode(d).decode("ascii")} for n, (k, d) in sorted(SAVED.items())
            ],
        },
        dict_converter=_object,
        depth=-1,
    )


async def run_prelude(code):
    """Run the community's prelude once, after the seal; raise if it fails."""
    status, error, tb, out, err = await _execute(code, "<prelude>")
    if status != "ok":
        raise RuntimeError(tb or error)


def _object(pairs):
    # to_js turns dicts into JavaScript objects through this; it is set by worker.js, which
    # passes Object.fromEntries (the js module is not used: it is sealed).
    return _from_entries(pairs)


_from_entries = None


def set_from_entries(fn):
    global _from_entries
    _from_entries = fn


__all__ = ["make_osa", "seal", "run", "run_prelude", "set_from_entries", "JsException"]
