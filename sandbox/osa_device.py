

# ---- the server's transport (sandbox/osa_device.py, appended to the module above) ----
#
# The server mounts web/osa/osa.py followed by this part as /opt/osa/python/osa.py. Each call
# opens /dev/osa/call, writes one line of JSON and the body, and reads the host's answer: one
# line of JSON, then the body. The host (sandbox/osa.go) checks everything; this only carries.


class _DeviceTransport:
    path = "/dev/osa/call"

    def __init__(self):
        try:
            with open("/opt/osa/fetch_allow", "rb") as f:
                data = f.read().decode("utf-8", "replace")
        except OSError:
            data = ""
        self.fetch_allow = tuple(x for x in data.split("\0") if x)

    def call(self, header, body=b""):
        import json
        import os

        request = json.dumps(header, separators=(",", ":")).encode("utf-8") + b"\n" + body
        fd = os.open(self.path, os.O_RDWR)
        try:
            view = memoryview(request)
            while view:
                view = view[os.write(fd, view) :]
            chunks = []
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(fd)
        head, _, rest = b"".join(chunks).partition(b"\n")
        answer = json.loads(head)
        answer["content"] = rest
        return answer

    async def fetch(self, url, method, headers, body):
        header = {"op": "fetch", "url": url, "method": method, "headers": headers, "body": body is not None}
        return self.call(header, body or b"")

    def check(self, url):
        return self.call({"op": "check", "url": url}).get("ok")

    def save(self, kind, name, data):
        return self.call({"op": "save", "kind": kind, "name": name}, data)


_install(_DeviceTransport())
del _DeviceTransport
