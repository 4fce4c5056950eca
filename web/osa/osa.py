"""The runtime's only way out of the sandbox: fetches limited to the community's fetch_allow, and
files saved for the reader.

    await osa.fetch(url, method="GET", headers=None, body=None) -> osa.Response
    await osa.fetch_bytes(url, ...) -> bytes     (raises osa.FetchError unless 2xx)
    await osa.fetch_text(url, ..., encoding="utf-8") -> str
    osa.allowed(url) -> bool, osa.fetch_allow -> the allowed URL prefixes
    osa.save_script(name, text), osa.save_artifact(name, data) -> name

A refused URL raises osa.FetchRefused (a PermissionError) naming the reason: not_in_fetch_allow,
scheme_not_allowed, credentials_in_url or unparseable, and on the server also redirect_refused,
private_address, too_large, method_not_allowed or too_many_fetches. Redirects are never followed.
A refused save raises osa.SaveRefused (a PermissionError): bad_name, too_large, too_many_files
or workspace_full. Each run may save at most 32 files, 10 MiB each and 25 MiB in all; names are
relative paths of letters, digits, ".", "_" and "-" separated by "/". Saved files are offered to
the reader, and their names are the result's artifacts.
"""

# This one file is the osa module of both runtimes: the server's (CPython under wazero,
# sandbox/) and the browser's (Pyodide in a Web Worker, web/static/). Neither decides anything
# here. Each runtime installs a transport with _install before any code runs, and every check
# (fetch_allow, redirects, addresses, the save rules and caps) happens behind it, outside
# Python: the server's transport (sandbox/osa_device.py) writes to a device file that the host
# answers, the browser's (web/static/osa_runtime.py) calls the worker's guarded fetch and its
# workspace. A transport has:
#
#   fetch_allow                          the allowed URL prefixes, a sequence of str
#   fetch(url, method, headers, body)    headers a list of [name, value], body bytes or None;
#                                        returns a dict: {"status", "url", "headers" (pairs),
#                                        "content" (bytes)}, {"refused": reason, "detail": text}
#                                        or {"error": text}
#   check(url)                           whether fetch would be allowed to fetch url (a bool)
#   save(kind, name, data)               kind "script" or "artifact", data bytes; returns a dict:
#                                        {"ok": True}, {"refused": reason, "detail": text} or
#                                        {"error": text}

_transport = None

#: The URL prefixes this runtime may fetch (the community's fetch_allow).
fetch_allow = ()


def _install(transport):
    """Make transport this module's way out (the runtime calls it once, before code runs)."""
    global _transport, fetch_allow
    _transport = transport
    fetch_allow = tuple(str(x) for x in transport.fetch_allow)


def _way_out():
    if _transport is None:
        raise RuntimeError("osa: this runtime installed no transport")
    return _transport


class _Refused(PermissionError):
    def __init__(self, message, reason=""):
        super().__init__(message)
        self.reason = reason


class FetchRefused(_Refused):
    """The runtime refused to fetch a URL; .reason says why."""


class FetchError(OSError):
    """A fetch failed: the network, a timeout, a refused redirect or CORS request in the browser,
    or a status other than 2xx."""


class SaveRefused(_Refused):
    """The runtime refused to save a file; .reason says why."""


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


async def fetch(url, *, method="GET", headers=None, body=None):
    """Fetch url if fetch_allow allows it. Redirects are refused; no credentials are sent."""
    if not isinstance(url, str):
        raise TypeError("url must be a str")
    pairs = [[str(k), str(v)] for k, v in dict(headers or {}).items()]
    if isinstance(body, str):
        body = body.encode("utf-8")
    elif body is not None:
        body = bytes(body)
    a = await _way_out().fetch(url, str(method).upper(), pairs, body)
    if a.get("refused"):
        raise FetchRefused(f"osa.fetch refused {url}: {a['refused']} ({a.get('detail', '')})", str(a["refused"]))
    if a.get("error"):
        raise FetchError(f"osa.fetch of {url} failed: {a['error']}")
    return Response(int(a["status"]), str(a["url"]), dict(a.get("headers") or ()), bytes(a.get("content") or b""))


async def fetch_bytes(url, **kw):
    """Fetch url and return its body as bytes; raise FetchError unless the status is 2xx."""
    return (await fetch(url, **kw)).raise_for_status().content


async def fetch_text(url, *, encoding="utf-8", **kw):
    """Fetch url and return its body as text; raise FetchError unless the status is 2xx."""
    return (await fetch_bytes(url, **kw)).decode(encoding)


def allowed(url):
    """Whether osa.fetch may fetch url (no request is made)."""
    return bool(_way_out().check(str(url)))


def _save(func, kind, name, data):
    if not isinstance(name, str):
        raise TypeError(f"osa.{func}: name must be a str")
    a = _way_out().save(kind, name, data)
    if a.get("refused"):
        raise SaveRefused(f"osa.{func} refused {name!r}: {a['refused']} ({a.get('detail', '')})", str(a["refused"]))
    if a.get("error"):
        raise OSError(f"osa.{func} of {name!r} failed: {a['error']}")
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


__all__ = [
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
