"""The Python half of the demo page's runtime (worker.js runs it once per boot).

It is executed in a private namespace, not imported: worker.js keeps references to configure,
make_osa, seal, run and run_prelude, and executed code never sees this namespace. make_osa
builds the osa module from osa.py, the module the server's runtime runs too, and installs its
transport here: the worker's bridge (worker.js makeBridge), whose guarded fetch allows exactly
fetch_allow and whose workspace holds the files a run saves. After the seal, osa is the only
way out of the sandbox. Saved files are offered to the reader as downloads, and their names are
the result's artifacts.
"""

import base64
import builtins
import io
import json
import sys
import traceback
import types
from collections import deque
from contextlib import redirect_stderr, redirect_stdout

from pyodide.code import eval_code_async
from pyodide.ffi import JsException, to_js

# Set by configure from the page's limits (package limits, through the page's config JSON).
# SEALED_ROOTS: the modules the seal removes and refuses by name (limits.SealedImportRoots, plus
# Pyodide's private _pyodide). CAPTURE_CHARS: what a capture keeps of the start and of the end
# of each stream. MAX_IMAGE_BYTES: an image larger than this is not attached (api.md §6.4).
SEALED_ROOTS = frozenset()
CAPTURE_CHARS = 0
MAX_IMAGE_BYTES = 0

USER_GLOBALS = {"__name__": "__main__", "__builtins__": builtins}


def configure(limits_json):
    """Take the caps from the page's limits (a JSON text)."""
    global SEALED_ROOTS, CAPTURE_CHARS, MAX_IMAGE_BYTES
    caps = json.loads(limits_json)
    SEALED_ROOTS = frozenset(caps["sealed_import_roots"]) | {"_pyodide"}
    CAPTURE_CHARS = int(caps["captured_chars"])
    MAX_IMAGE_BYTES = int(caps["image_bytes"])


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


class _BridgeTransport:
    """The osa module's transport in the browser: the worker's bridge, which checks everything."""

    def __init__(self, bridge, fetch_allow):
        self._fetch, self._check, self._save = bridge.fetch, bridge.check, bridge.save
        self.fetch_allow = tuple(str(x) for x in fetch_allow)

    @staticmethod
    def _refusal(r):
        if r.refused:
            return {"refused": str(r.refused), "detail": str(r.detail)}
        if r.error:
            return {"error": str(r.error)}
        return None

    async def fetch(self, url, method, headers, body):
        r = await self._fetch(url, method, to_js(headers), to_js(body) if body is not None else None)
        return self._refusal(r) or {"status": int(r.status), "url": str(r.url), "headers": r.headers.to_py(), "content": r.body.to_bytes()}

    def check(self, url):
        return bool(self._check(url).ok)

    def save(self, kind, name, data):
        return self._refusal(self._save(kind, name, to_js(data))) or {"ok": True}


def make_osa(source, bridge, fetch_allow):
    """Build the osa module from its source (osa.py) around the worker's bridge."""
    mod = types.ModuleType("osa")
    mod.__file__ = "osa.py"
    exec(compile(source, "osa.py", "exec"), mod.__dict__)
    mod._install(_BridgeTransport(bridge, fetch_allow))
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


__all__ = ["configure", "make_osa", "seal", "run", "run_prelude", "set_from_entries", "JsException"]
