"""Reading files under one base URL through a fetch function."""

import inspect
import json
from urllib.parse import urlsplit


class Fetcher:
    """Read files under one base URL with a fetch function.

    fetch is called with one absolute URL and returns the body as bytes or str, either
    directly or as an awaitable (the browser runtime's fetch is asynchronous), so the
    methods here are coroutines:

        store = Fetcher(osa.fetch, nemar_tools.dataset_url("ds004504"))
        index = await store.json("index.json")

    Paths are relative to the base. Absolute URLs, "..", "." and empty segments are
    refused, so a Fetcher only ever reads below its base, whatever path it is given.
    """

    def __init__(self, fetch, base):
        if not callable(fetch):
            raise TypeError("fetch must be callable")
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"base {base!r} is not an absolute http(s) URL")
        if parts.query or parts.fragment:
            raise ValueError(f"base {base!r} must not have a query or fragment")
        self._fetch = fetch
        self.base = base if base.endswith("/") else base + "/"

    def __repr__(self):
        return f"Fetcher(base={self.base!r})"

    def url(self, path):
        """Return the absolute URL of path below the base."""
        if not isinstance(path, str) or path == "":
            raise ValueError("path must be a non-empty string")
        if "://" in path or path.startswith("/") or "\\" in path:
            raise ValueError(f"path {path!r} must be relative to {self.base}")
        name, _, query = path.partition("?")
        segments = name.split("/")
        # A trailing "/" (an empty last segment) names a folder and is fine.
        for seg in segments[:-1] if segments[-1] == "" else segments:
            if seg in ("", ".", ".."):
                raise ValueError(f"path {path!r} has an empty, '.' or '..' segment")
        return self.base + path

    async def bytes(self, path):
        """Return the body of path as bytes."""
        body = self._fetch(self.url(path))
        if inspect.isawaitable(body):
            body = await body
        if isinstance(body, str):
            return body.encode("utf-8")
        return bytes(body)

    async def text(self, path, encoding="utf-8"):
        """Return the body of path decoded as text."""
        return (await self.bytes(path)).decode(encoding)

    async def json(self, path):
        """Return the body of path parsed as JSON."""
        return json.loads(await self.bytes(path))
