"""The runtime's only way out of the sandbox: fetches limited to the community's fetch_allow, and
files saved for the reader.

    await osa.fetch(url, method="GET", headers=None, body=None) -> osa.Response
    await osa.fetch_bytes(url, ...) -> bytes     (raises osa.FetchError unless 2xx)
    await osa.fetch_text(url, ..., encoding="utf-8") -> str
    osa.allowed(url) -> bool, osa.fetch_allow -> the allowed URL prefixes
    osa.save_script(name, text), osa.save_artifact(name, data) -> name

A refused URL raises osa.FetchRefused (a PermissionError) naming the reason: not_in_fetch_allow,
scheme_not_allowed, credentials_in_url, unparseable, redirect_refused, private_address,
too_large, method_not_allowed or too_many_fetches. Redirects are never followed. A refused save
raises osa.SaveRefused (a PermissionError): bad_name, too_large, too_many_files or
workspace_full. Each run may save at most 32 files, 10 MB each and 25 MB in all; names are
relative paths of letters, digits, ".", "_" and "-" separated by "/".

This is the server's runtime: the checks happen outside Python, in the server, and this module
only carries requests to it.
"""

import os as _os

_DEVICE = "/dev/osa/call"


def _read_list(path):
    try:
        with open(path, "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return ()
    return tuple(x for x in data.split("\0") if x)


#: The URL prefixes this runtime may fetch (the community's fetch_allow).
fetch_allow = _read_list("/opt/osa/fetch_allow")


class FetchRefused(PermissionError):
    """The runtime refused to fetch a URL; .reason says why."""

    def __init__(self, message, reason=""):
        super().__init__(message)
        self.reason = reason


class FetchError(OSError):
    """A fetch failed: the network, a timeout, or a status other than 2xx."""


class SaveRefused(PermissionError):
    """The runtime refused to save a file; .reason says why."""

    def __init__(self, message, reason=""):
        super().__init__(message)
        self.reason = reason


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


def _call(header, body=b""):
    """Send one request to the host through the osa device and return its answer."""
    import json

    request = json.dumps(header, separators=(",", ":")).encode("utf-8") + b"\n" + body
    fd = _os.open(_DEVICE, _os.O_RDWR)
    try:
        view = memoryview(request)
        while view:
            view = view[_os.write(fd, view) :]
        chunks = []
        while True:
            chunk = _os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        _os.close(fd)
    head, _, rest = b"".join(chunks).partition(b"\n")
    return json.loads(head), rest


async def fetch(url, *, method="GET", headers=None, body=None):
    """Fetch url if fetch_allow allows it. Redirects are refused; no credentials are sent."""
    if not isinstance(url, str):
        raise TypeError("url must be a str")
    pairs = [[str(k), str(v)] for k, v in dict(headers or {}).items()]
    if isinstance(body, str):
        body = body.encode("utf-8")
    elif body is not None:
        body = bytes(body)
    h, content = _call(
        {"op": "fetch", "url": url, "method": str(method).upper(), "headers": pairs, "body": body is not None},
        body or b"",
    )
    if h.get("refused"):
        raise FetchRefused(f"osa.fetch refused {url}: {h['refused']} ({h.get('detail', '')})", h["refused"])
    if h.get("error"):
        raise FetchError(f"osa.fetch of {url} failed: {h['error']}")
    return Response(int(h["status"]), str(h["url"]), dict(h.get("headers") or ()), content)


async def fetch_bytes(url, **kw):
    """Fetch url and return its body as bytes; raise FetchError unless the status is 2xx."""
    return (await fetch(url, **kw)).raise_for_status().content


async def fetch_text(url, *, encoding="utf-8", **kw):
    """Fetch url and return its body as text; raise FetchError unless the status is 2xx."""
    return (await fetch_bytes(url, **kw)).decode(encoding)


def allowed(url):
    """Whether osa.fetch may fetch url (no request is made)."""
    return bool(_call({"op": "check", "url": str(url)})[0].get("ok"))


def _save(func, kind, name, data):
    if not isinstance(name, str):
        raise TypeError(f"osa.{func}: name must be a str")
    h, _ = _call({"op": "save", "kind": kind, "name": name}, data)
    if h.get("refused"):
        raise SaveRefused(f"osa.{func} refused {name!r}: {h['refused']} ({h.get('detail', '')})", h["refused"])
    if h.get("error"):
        raise OSError(f"osa.{func} of {name!r} failed: {h['error']}")
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
