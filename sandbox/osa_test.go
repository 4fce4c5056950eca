package sandbox

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	expsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/osc-assistant/assistant/web/osa"
)

// These run the real engine with a community policy: the prelude, overlay wheels, osa.fetch
// against a server on 127.0.0.1, saved files, and the import message.

// runOK runs req and fails the test unless the run completes with status ok.
func runOK(t *testing.T, e *Engine, req Request) Result {
	t.Helper()
	res, err := e.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != StatusOK {
		t.Fatalf("Run = %s (exit %d), want ok\nstdout: %s\nstderr: %s", res.Status, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res
}

func TestRunFetch(t *testing.T) {
	e := testEngine(t)
	srv := testServer(t)
	allow := []string{srv.URL + "/data", "http://10.0.0.1/", "http://private.test/", "http://metadata.test/"}
	src := `import osa
async def refused(url, **kw):
    try:
        await osa.fetch(url, **kw)
    except osa.FetchRefused as e:
        assert isinstance(e, PermissionError)
        return e.reason
    return "fetched"
r = await osa.fetch(BASE + "/data/hello.txt")
print(r.status, r.ok, r.headers["x-test"], r.text())
print(await osa.fetch_text(BASE + "/data/hello.txt"))
print(await osa.fetch_bytes(BASE + "/data/echo", method="POST", body=b"abc", headers={"X-Custom": "7", "Host": "evil", "Cookie": "c=1"}))
try:
    await osa.fetch_bytes(BASE + "/data/missing")
except osa.FetchError as e:
    print("FetchError", e)
print(osa.allowed(BASE + "/data/x"), osa.allowed(BASE + "/secret"), osa.fetch_allow[0] == BASE + "/data")
for url in [BASE + "/secret", BASE + "/data/../secret", "https://example.org/", "file:///etc/passwd",
            BASE.replace("//", "//u:p@") + "/data/x", BASE + "/data/redirect", BASE + "/data/big",
            "http://10.0.0.1/", "http://private.test/x", "http://metadata.test/latest/"]:
    print(url.replace(BASE, "BASE"), await refused(url))
`
	src = "BASE = " + pyQuote(srv.URL) + "\n" + src
	res := runOK(t, e, Request{Source: src, FetchAllow: allow, AllowLoopback: true, FetchMaxBytes: 1000})
	want := `200 True yes hello from GET /data/hello.txt
hello from GET /data/hello.txt
b'POST 7 host=false|cookie="" auth="" ua="` + fetchUserAgent + `"|abc'
FetchError ` + srv.URL + `/data/missing answered HTTP 404
True False True
BASE/secret not_in_fetch_allow
BASE/data/../secret not_in_fetch_allow
https://example.org/ not_in_fetch_allow
file:///etc/passwd scheme_not_allowed
http://u:p@127.0.0.1:` + strings.TrimPrefix(srv.URL, "http://127.0.0.1:") + `/data/x credentials_in_url
BASE/data/redirect redirect_refused
BASE/data/big too_large
http://10.0.0.1/ private_address
http://private.test/x private_address
http://metadata.test/latest/ private_address
`
	if res.Stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", res.Stdout, want)
	}

	// The message names the reason; without AllowLoopback the loopback server is refused too.
	res, err := e.Run(context.Background(), Request{Source: "import osa\nawait osa.fetch_text(" + pyQuote(srv.URL+"/data/hello.txt") + ")", FetchAllow: allow})
	if err != nil || res.Status != StatusError ||
		!strings.Contains(res.Stderr, "osa.FetchRefused: osa.fetch refused "+srv.URL+"/data/hello.txt: private_address (127.0.0.1 is a private, loopback, link-local or reserved address)") {
		t.Errorf("loopback without AllowLoopback: %v %s\n%s", err, res.Status, res.Stderr)
	}
	if !strings.HasPrefix(res.Exception, "osa.FetchRefused: osa.fetch refused") {
		t.Errorf("Exception = %q", res.Exception)
	}
}

// TestRunNetworkPaths checks that nothing but osa.fetch leaves the guest.
func TestRunNetworkPaths(t *testing.T) {
	e := testEngine(t)
	srv := testServer(t)
	src := `import urllib.request, socket
for f in [lambda: urllib.request.urlopen(URL, timeout=2), lambda: socket.create_connection(("127.0.0.1", PORT), timeout=2),
          lambda: socket.socket().connect(("127.0.0.1", PORT))]:
    try:
        f()
        print("connected")
    except Exception as e:
        print("refused", type(e).__name__)
`
	port := strings.TrimPrefix(srv.URL, "http://127.0.0.1:")
	res := runOK(t, e, Request{Source: "URL = " + pyQuote(srv.URL+"/data/hello.txt") + "\nPORT = " + port + "\n" + src,
		FetchAllow: []string{srv.URL}, AllowLoopback: true})
	if strings.Contains(res.Stdout, "connected") || strings.Count(res.Stdout, "refused") != 3 {
		t.Errorf("stdout: %s", res.Stdout)
	}
}

func TestRunPrelude(t *testing.T) {
	e := testEngine(t)
	// The prelude runs first, in the same namespace, with top-level await and no asyncio.
	prelude := "import sys\nasync def answer():\n    return 42\nX = await answer()\nprint('the prelude prints nothing visible')\nPRELUDE_ASYNCIO = 'asyncio' in sys.modules\n"
	res := runOK(t, e, Request{Prelude: prelude, Source: "print(X, PRELUDE_ASYNCIO)\n"})
	if res.Stdout != "42 False\n" || res.Stderr != "" {
		t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	// A prelude may use asyncio; the loop carries over to the code.
	res = runOK(t, e, Request{Prelude: "import asyncio\nawait asyncio.sleep(0.01)\nT = asyncio.ensure_future(asyncio.sleep(0.01, 'task'))\n",
		Source: "print(await T)\n"})
	if res.Stdout != "task\n" {
		t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	// A prelude that raises stops the run before the code, and says so.
	res, err := e.Run(context.Background(), Request{Prelude: "x = 1\nawait undefined_thing()\n", Source: "print('ran')\n"})
	if err != nil || res.Status != StatusError || !res.PreludeFailed || res.Stdout != "" {
		t.Fatalf("failing prelude: %v %+v", err, res)
	}
	for _, s := range []string{"[runtime] the code could not be run: the community's prelude failed.\n", `File "<prelude>", line 2, in <module>`, "NameError: name 'undefined_thing' is not defined"} {
		if !strings.Contains(res.Stderr, s) {
			t.Errorf("stderr %q lacks %q", res.Stderr, s)
		}
	}
	if res.Exception != "NameError: name 'undefined_thing' is not defined" {
		t.Errorf("Exception = %q", res.Exception)
	}
	// A prelude with a syntax error is reported the same way.
	res, err = e.Run(context.Background(), Request{Prelude: "def f(:\n", Source: "print('ran')\n"})
	if err != nil || !res.PreludeFailed || !strings.Contains(res.Stderr, `File "<prelude>", line 1`) {
		t.Errorf("prelude syntax error: %v %+v", err, res)
	}
}

func TestRunTopLevelAwait(t *testing.T) {
	e := testEngine(t)
	tests := []struct{ name, src, stdout string }{
		{"no asyncio needed", "import sys\nasync def f(x):\n    return x * 2\nprint(await f(21), 'asyncio' in sys.modules)\n", "42 False\n"},
		{"asyncio sleep and gather", "import asyncio, time\nt = time.monotonic()\nawait asyncio.sleep(0.05)\nprint(await asyncio.gather(asyncio.sleep(0.01, 'a'), asyncio.sleep(0.02, 'b')), time.monotonic() - t >= 0.05)\n", "['a', 'b'] True\n"},
		{"asyncio imported after the first await", "async def f():\n    return 1\nx = await f()\nimport asyncio\nawait asyncio.sleep(0)\nprint(x + await asyncio.wait_for(asyncio.sleep(0, 2), 1))\n", "3\n"},
		{"a task", "import asyncio\nasync def work():\n    await asyncio.sleep(0.01)\n    return 'done'\nt = asyncio.create_task(work())\nprint(await t)\n", "done\n"},
		{"async for and with", "class C:\n    async def __aenter__(self): return 1\n    async def __aexit__(self, *a): pass\nasync def gen():\n    yield 1\n    yield 2\nasync with C() as c:\n    print(c, [x async for x in gen()])\n", "1 [1, 2]\n"},
		{"asyncio.run without top-level await", "import asyncio\nasync def main():\n    await asyncio.sleep(0.01)\n    return 'ran'\nprint(asyncio.run(main()))\n", "ran\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runOK(t, e, Request{Source: tc.src})
			if res.Stdout != tc.stdout {
				t.Errorf("stdout %q, want %q; stderr %q", res.Stdout, tc.stdout, res.Stderr)
			}
		})
	}
	// An exception inside awaited code gives the program's traceback only.
	res, err := e.Run(context.Background(), Request{Source: "import asyncio\nasync def f():\n    await asyncio.sleep(0)\n    1 / 0\nawait f()\n"})
	if err != nil || res.Status != StatusError || res.Exception != "ZeroDivisionError: division by zero" ||
		!strings.HasPrefix(res.Stderr, "Traceback (most recent call last):\n  File \"<code>\", line 5, in <module>\n") {
		t.Errorf("error after await: %v %s %q\n%s", err, res.Status, res.Exception, res.Stderr)
	}
}

func nemarWheel(t testing.TB) Wheel {
	t.Helper()
	data, err := os.ReadFile("../communities/nemar/runtime/wheels/nemar_tools-0.1.0-py3-none-any.whl")
	if err != nil {
		t.Fatal(err)
	}
	return Wheel{Name: "nemar_tools-0.1.0-py3-none-any.whl", Data: data}
}

// makeWheel zips files into a wheel.
func makeWheel(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, text := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(text))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const nemarPrelude = `import osa
import nemar_tools
nemar_tools.configure(fetch=osa.fetch_text, zarr_base="https://zarr.nemar.org")
await nemar_tools.ready()
`

func TestRunWheels(t *testing.T) {
	e := testEngine(t)
	extra := Wheel{Name: "mypkg-1.0-py3-none-any.whl", Data: makeWheel(t, map[string]string{
		"mypkg/__init__.py": "from .sub import VALUE\n",
		"mypkg/sub.py":      "VALUE = 'from the wheel'\n",
		"mypkg/bad.py":      "def f(:\n",
	})}
	src := `import nemar_tools, mypkg, sys
print(nemar_tools.zarr_base(), nemar_tools.dataset_url("ds004504"))
print(nemar_tools.describe([1, 2, 3]))
print(mypkg.VALUE, nemar_tools.__file__)
try:
    open(nemar_tools.__file__.split(".whl")[0] + ".whl", "ab")
except OSError as e:
    print("read-only", type(e).__name__)
try:
    import mypkg.bad
except SyntaxError as e:
    print("SyntaxError", e.filename.rsplit("/", 2)[-2:], e.lineno)
`
	res := runOK(t, e, Request{Prelude: nemarPrelude, Source: src, Wheels: []Wheel{nemarWheel(t), extra},
		FetchAllow: []string{"https://zarr.nemar.org/"}, Available: []string{"nemar_tools", "mypkg"}})
	want := "https://zarr.nemar.org https://zarr.nemar.org/ds004504/zarr/\nn=3 mean=2 std=0.816497 min=1 median=2 max=3\n" +
		"from the wheel /opt/osa/wheels/nemar_tools-0.1.0-py3-none-any.whl/nemar_tools/__init__.pyc\nread-only OSError\nSyntaxError ['mypkg', 'bad.py'] 1\n"
	if res.Stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s\nstderr: %s", res.Stdout, want, res.Stderr)
	}
	// A traceback through a wheel shows the wheel's source lines, though it ran from bytecode.
	res, err := e.Run(context.Background(), Request{Source: "import nemar_tools\nnemar_tools.check_dataset_id('bad')\n", Wheels: []Wheel{nemarWheel(t)}})
	if err != nil || res.Status != StatusError ||
		!strings.Contains(res.Stderr, "File \"/opt/osa/wheels/nemar_tools-0.1.0-py3-none-any.whl/nemar_tools/datasets.py\", line ") ||
		!strings.Contains(res.Stderr, "    raise ValueError(\n") {
		t.Errorf("traceback through the wheel: %v %s\n%s", err, res.Status, res.Stderr)
	}
	// Wheels are a run's own: the next run without them cannot import them.
	res, err = e.Run(context.Background(), Request{Source: "import nemar_tools"})
	if err != nil || res.Status != StatusError {
		t.Errorf("import without the wheel: %v %s", err, res.Status)
	}
	if _, err := e.Run(context.Background(), Request{Source: "pass", Wheels: []Wheel{{Name: "../x.whl"}}}); err == nil {
		t.Error("a wheel named ../x.whl was accepted")
	}
}

func TestRunUnavailableImport(t *testing.T) {
	e := testEngine(t)
	res, err := e.Run(context.Background(), Request{Source: "import json\nimport numpy as np\n", Available: []string{"nemar_tools"}})
	if err != nil || res.Status != StatusError {
		t.Fatalf("import numpy: %v %+v", err, res)
	}
	// The engine's own packages (packages.json) and the overlay wheels, in name order.
	have := []string{"nemar_tools"}
	for _, p := range e.Packages() {
		have = append(have, p.Import+" "+p.Version)
	}
	slices.Sort(have)
	want := "ModuleNotFoundError: No module named 'numpy': numpy is not available in the server's Python, and nothing can be installed; " +
		"available: the standard library (without sockets, threads, subprocesses, ssl or ctypes), osa, " + strings.Join(have, ", ") +
		". numpy, pandas, scipy and matplotlib need the reader's browser.\n"
	if !strings.HasSuffix(res.Stderr, want) || !strings.HasPrefix(res.Stderr, "Traceback (most recent call last):\n  File \"<code>\", line 2, in <module>\n    import numpy as np\n") {
		t.Errorf("stderr:\n%s\nwant it to end with:\n%s", res.Stderr, want)
	}
	if strings.Contains(res.Stderr, "find_spec") {
		t.Errorf("the traceback shows the driver's finder:\n%s", res.Stderr)
	}
	// find_spec still answers None, catching ImportError works, and a submodule fails plainly.
	src := `import importlib.util
print(importlib.util.find_spec("numpy"))
try:
    import scipy.stats
except ImportError as e:
    print(type(e).__name__, e.name, "not available" in str(e))
try:
    import json.nothing
except ImportError as e:
    print(e)
`
	res = runOK(t, e, Request{Source: src})
	if res.Stdout != "None\nModuleNotFoundError scipy True\nNo module named 'json.nothing'\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
}

func TestRunSave(t *testing.T) {
	e := testEngine(t)
	src := `import osa
def refused(f, name, data):
    try:
        f(name, data)
        return "saved"
    except osa.SaveRefused as e:
        return e.reason
print(osa.save_script("analysis.py", "print(1)\n"))
print(osa.save_artifact("out/table.csv", b"a,b\n1,2\n"))
osa.save_artifact("out/table.csv", "a,b\n3,4\n")
for name in ["../x", "/abs", "a//b", "a/./b", "a b", "", "d/"]:
    print(repr(name), refused(osa.save_artifact, name, b""))
print(refused(osa.save_artifact, "big", b"x" * (10 * 1024 * 1024 + 1)))
for i in range(2):
    osa.save_artifact(f"nine{i}", b"x" * (9 * 1024 * 1024))
print(refused(osa.save_artifact, "too-much", b"x" * (8 * 1024 * 1024)))
for i in range(28):
    osa.save_artifact(f"small/{i}", b"s")
print(refused(osa.save_artifact, "small/28", b"s"))
try:
    osa.save_script("s.py", b"bytes")
except TypeError as e:
    print(e)
`
	res := runOK(t, e, Request{Source: src})
	want := `analysis.py
out/table.csv
'../x' bad_name
'/abs' bad_name
'a//b' bad_name
'a/./b' bad_name
'a b' bad_name
'' bad_name
'd/' bad_name
too_large
workspace_full
too_many_files
osa.save_script: text must be a str
`
	if res.Stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s\nstderr: %s", res.Stdout, want, res.Stderr)
	}
	if len(res.Artifacts) != MaxSavedFiles || res.Artifacts[0] != "analysis.py" || !strings.HasPrefix(res.Artifacts[1], "nine") {
		t.Errorf("Artifacts = %q", res.Artifacts)
	}
	if got := string(res.Files["out/table.csv"]); got != "a,b\n3,4\n" {
		t.Errorf("out/table.csv = %q", got)
	}
	if got := string(res.Files["analysis.py"]); got != "print(1)\n" {
		t.Errorf("analysis.py = %q", got)
	}
	// Files saved before a failure are kept.
	res, err := e.Run(context.Background(), Request{Source: "import osa\nosa.save_artifact('partial.txt', 'p')\n1/0\n"})
	if err != nil || res.Status != StatusError || len(res.Files) != 1 || string(res.Files["partial.txt"]) != "p" {
		t.Errorf("save then fail: %v %+v", err, res)
	}
}

// TestRunDevice checks that code talking to the osa device or the policy mount directly gains
// nothing.
func TestRunDevice(t *testing.T) {
	e := testEngine(t)
	src := `import os
def call(data):
    fd = os.open("/dev/osa/call", os.O_RDWR)
    try:
        os.write(fd, data)
        return os.read(fd, 10000)
    finally:
        os.close(fd)
print(call(b"garbage"))
print(call(b'{"op":"nothing"}\n'))
print(call(b'{"op":"fetch","url":"http://127.0.0.1:1/"}\n'))
print(call(b'{"op":"save","name":"../../etc/x"}\n'))
print(sorted(os.listdir("/dev/osa")), sorted(os.listdir("/opt/osa")))
for path, mode in [("/dev/osa/other", "wb"), ("/opt/osa/python/osa.py", "ab"), ("/opt/osa/new", "wb"), ("/dev/osa/call", "rb")]:
    try:
        open(path, mode)
        print("opened", path)
    except OSError as e:
        print("refused", path, type(e).__name__)
`
	res := runOK(t, e, Request{Source: src})
	want := `b'{"error":"a request is one line of JSON, a newline, then the body"}\n'
b'{"error":"unknown operation \\"nothing\\""}\n'
b'{"detail":"this runtime may fetch nothing","refused":"not_in_fetch_allow"}\n'
b'{"detail":"the name has a . or .. path segment","refused":"bad_name"}\n'
['call'] ['available', 'driver.pyc', 'fetch_allow', 'python']
refused /dev/osa/other PermissionError
refused /opt/osa/python/osa.py OSError
refused /opt/osa/new OSError
refused /dev/osa/call PermissionError
`
	if res.Stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s\nstderr: %s", res.Stdout, want, res.Stderr)
	}
}

// TestRunPolicyJSON checks that a Request and a Result survive JSON, as the worker pool sends
// them.
func TestRunPolicyJSON(t *testing.T) {
	req := Request{Source: "x", Prelude: "p", FetchAllow: []string{"https://h/"}, Wheels: []Wheel{{Name: "a.whl", Data: []byte{0, 1}}},
		Available: []string{"a"}, FetchTimeout: time.Second}
	var back Request
	roundTrip(t, req, &back)
	if back.Prelude != "p" || back.Wheels[0].Name != "a.whl" || !bytes.Equal(back.Wheels[0].Data, []byte{0, 1}) || back.FetchTimeout != time.Second {
		t.Errorf("Request after JSON: %+v", back)
	}
	res := Result{Artifacts: []string{"a"}, Files: map[string][]byte{"a": []byte("data")}, Exception: "E: x", PreludeFailed: true}
	var resBack Result
	roundTrip(t, res, &resBack)
	if string(resBack.Files["a"]) != "data" || !resBack.PreludeFailed || resBack.Exception != "E: x" {
		t.Errorf("Result after JSON: %+v", resBack)
	}
}

func pyQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// BenchmarkRunNemarPolicy measures a run under the nemar policy (the prelude, the wheel
// imported, osa) against the bare BenchmarkRunPrint.
func BenchmarkRunNemarPolicy(b *testing.B) {
	e := testEngine(b)
	data, err := os.ReadFile("../communities/nemar/runtime/wheels/nemar_tools-0.1.0-py3-none-any.whl")
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Prelude: nemarPrelude, Source: "print(1)", Wheels: []Wheel{{Name: "nemar_tools-0.1.0-py3-none-any.whl", Data: data}},
		FetchAllow: []string{"https://zarr.nemar.org/"}, Available: []string{"nemar_tools"}}
	for b.Loop() {
		res, err := e.Run(context.Background(), req)
		if err != nil || res.Status != StatusOK {
			b.Fatal(res, err)
		}
	}
}

func roundTrip(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

// TestRunWheelsConcurrent starts runs that need the same new wheel at once: its bytecode is
// compiled once and every run imports it.
func TestRunWheelsConcurrent(t *testing.T) {
	e := testEngine(t)
	w := Wheel{Name: "conc-1.0-py3-none-any.whl", Data: makeWheel(t, map[string]string{
		"conc/__init__.py": "STAMP = " + pyQuote(time.Now().String()) + "\nVALUE = 7\n",
	})}
	errs := make(chan string, 4)
	for range 4 {
		go func() {
			res, err := e.Run(context.Background(), Request{Source: "import conc\nprint(conc.VALUE, conc.__file__.endswith('.pyc'))", Wheels: []Wheel{w}})
			switch {
			case err != nil:
				errs <- err.Error()
			case res.Stdout != "7 True\n":
				errs <- string(res.Status) + " " + res.Stdout + res.Stderr
			default:
				errs <- ""
			}
		}()
	}
	for range 4 {
		if msg := <-errs; msg != "" {
			t.Error(msg)
		}
	}
}

// TestOsaDeviceCaps drives the device directly: request size, open calls and the buffer budget.
func TestOsaDeviceCaps(t *testing.T) {
	h := &osaHost{ctx: context.Background(), egress: newEgress(nil, false, time.Second, 1000)}
	hp := new(atomic.Pointer[osaHost])
	hp.Store(h)
	d := &osaDevice{hp: hp}
	open := func() *osaCall {
		f, errno := d.OpenFile("call", expsys.O_RDWR, 0)
		if errno != 0 {
			t.Fatalf("open: %v", errno)
		}
		return f.(*osaCall)
	}
	read := func(c *osaCall) string {
		buf := make([]byte, 1<<16)
		n, errno := c.Read(buf)
		if errno != 0 {
			t.Fatalf("read: %v", errno)
		}
		return string(buf[:n])
	}
	if _, errno := d.OpenFile("call", expsys.O_RDONLY, 0); errno != expsys.EACCES {
		t.Errorf("read-only open: %v", errno)
	}
	if _, errno := d.OpenFile("other", expsys.O_RDWR|expsys.O_CREAT, 0); errno != expsys.EPERM {
		t.Errorf("create: %v", errno)
	}
	// One request over the cap is answered with too_large, and holds nothing.
	c := open()
	chunk := make([]byte, 1<<20)
	for range 12 {
		if n, errno := c.Write(chunk); n != len(chunk) || errno != 0 {
			t.Fatalf("write: %d %v", n, errno)
		}
	}
	if got := read(c); !strings.HasPrefix(got, `{"detail":"a request may carry at most`) || !strings.Contains(got, `"refused":"too_large"`) {
		t.Errorf("oversized request: %s", got)
	}
	if n, errno := c.Write([]byte("x")); n != 0 || errno != expsys.EBADF {
		t.Errorf("write after the answer: %d %v", n, errno)
	}
	c.Close()
	// Open calls are capped, and their buffered requests together.
	var calls []*osaCall
	for range maxOpenCalls {
		calls = append(calls, open())
	}
	if _, errno := d.OpenFile("call", expsys.O_RDWR, 0); errno != expsys.EAGAIN {
		t.Errorf("one call too many: %v", errno)
	}
	for _, c := range calls[:2] {
		for range 6 {
			c.Write(chunk)
		}
	}
	if !calls[1].overflow || calls[0].overflow {
		t.Errorf("buffer budget: overflow %v %v", calls[0].overflow, calls[1].overflow)
	}
	for _, c := range calls {
		c.Close()
	}
	if n := h.buffered.Load(); n != 0 {
		t.Errorf("%d bytes still counted after every call closed", n)
	}
	c = open()
	c.Write([]byte(`{"op":"check","url":"https://h/"}` + "\n"))
	if got := read(c); got != `{"ok":false,"reason":"not_in_fetch_allow"}`+"\n" {
		t.Errorf("check: %s", got)
	}
	c.Close()
}

// The guest's osa module is the one the browser's runtime runs too (web/osa), then this
// runtime's transport, which installs itself.
func TestOsaModuleIsTheSharedOne(t *testing.T) {
	if !bytes.HasPrefix(osaModule, osa.Module) || !bytes.HasSuffix(osaModule, osaDeviceTransport) ||
		len(osaModule) != len(osa.Module)+len(osaDeviceTransport) {
		t.Error("osaModule is not web/osa's module followed by osa_device.py")
	}
	if !bytes.Contains(osaDeviceTransport, []byte("\n_install(_DeviceTransport())\n")) {
		t.Error("osa_device.py does not install its transport")
	}
}
