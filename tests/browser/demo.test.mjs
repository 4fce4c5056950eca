// End-to-end tests of the demo page in a real browser: Debian's Chromium driven by
// playwright-core, against the real server binary with the offline scripted model and the
// test communities of tests/browser/communities: browser-test (its overlay holds the project's
// own wheel) and browser-uploads (readers attach files, which runs read at /data).
//
// Environment:
//   ASSISTANT_BIN   the assistant binary (default: built here with go build)
//   CHROMIUM        the browser (default /usr/bin/chromium); absent → skipped, or failed
//                   when CI=true
//   ASSISTANT_PYODIDE_DIR  the local Pyodide copies (default as scripts/install_pyodide.sh)
//   ARTIFACTS       where screenshots and logs go (default tests/artifacts)

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const artifacts = path.resolve(process.env.ARTIFACTS || path.join(repo, "tests/artifacts"));
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const CI = process.env.CI === "true";
const COMMUNITY = "browser-test";
const UPLOADS = "browser-uploads"; // runtime.python.uploads enabled
const BASE_PATH = "/osa"; // the page must work under a mount prefix
const PLACEHOLDER_ORIGIN = "http://127.0.0.1:47001";
const EXEC_SECONDS = 3; // the test community's limits.exec_seconds
const STEP_MS = 60_000;

// The test community's overlay is a copy of NEMAR's, the project's own wheel: keep them equal.
test("the test community's overlay is communities/nemar/runtime's", () => {
  const from = path.join(repo, "communities/nemar/runtime");
  const to = path.join(here, "communities", COMMUNITY, "runtime");
  const files = (dir) => ["lock.json", ...fs.readdirSync(path.join(dir, "wheels")).map((f) => `wheels/${f}`)].sort();
  assert.deepEqual(files(to), files(from), `copy ${from}/{lock.json,wheels} to ${to}`);
  for (const f of files(from)) {
    assert.ok(fs.readFileSync(path.join(from, f)).equals(fs.readFileSync(path.join(to, f))), `${f} differs: copy it from ${from}`);
  }
});

const chromiumMissing = !fs.existsSync(chromiumPath);
if (chromiumMissing) {
  const why = `Chromium not found at ${chromiumPath} (apt-get install -y chromium, or set CHROMIUM)`;
  if (CI) {
    test("Chromium is installed (CI=true)", () => assert.fail(why));
  } else {
    console.log(`# skipping the browser tests: ${why}`);
  }
}

describe("the demo page in Chromium", { skip: chromiumMissing ? "Chromium is absent" : false }, () => {
  let tmp;
  let allowed; // the loopback server fetch_allow names
  let other; // a loopback server on another origin
  let server; // {proc, url, log}
  let browser;
  let page;
  const hits = []; // paths the loopback servers were asked for, "<name> <path>"
  const requests = []; // {url, body} of every /chat and /chat/resume the page posted
  const consoleLog = [];

  before(async () => {
    fs.mkdirSync(artifacts, { recursive: true });
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "assistant-browser-"));
    allowed = await loopback("allowed", hits);
    other = await loopback("other", hits);
    const communities = templateCommunities(path.join(tmp, "communities"), allowed.origin);
    const bin = process.env.ASSISTANT_BIN || buildBinary(tmp);
    server = await startServer(bin, communities);
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    page = await context.newPage();
    page.setDefaultTimeout(STEP_MS);
    page.on("console", (m) => consoleLog.push(`[${m.type()}] ${m.text()}`));
    page.on("pageerror", (e) => consoleLog.push(`[pageerror] ${e.message}`));
    page.on("request", (r) => {
      if (r.method() === "POST" && /\/chat(\/resume)?$/.test(r.url())) requests.push({ url: r.url(), body: JSON.parse(r.postData()) });
    });
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) {
      server.proc.kill("SIGTERM");
      fs.writeFileSync(path.join(artifacts, "demo-server.log"), server.log.join(""));
    }
    fs.writeFileSync(path.join(artifacts, "demo-console.log"), consoleLog.join("\n") + "\n");
    for (const s of [allowed, other]) if (s) s.server.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  // ask sends a message and waits for the whole reply. decision is the gate button to press
  // ("run" or "deny"), or null when no gate is expected. It returns the reply's text and the
  // last /chat/resume body.
  async function ask(message, decision = "run") {
    const before = await page.locator(".msg.assistant").count();
    const sent = requests.length;
    await page.fill("#input", message);
    await page.click("#send");
    const reply = page.locator(".msg.assistant").nth(before);
    if (decision) await reply.locator(`button[data-action="${decision}"]`).click();
    await page.waitForFunction(() => !document.getElementById("send").disabled);
    const mine = requests.slice(sent);
    return {
      reply,
      text: await reply.innerText(),
      chat: mine.find((r) => r.url.endsWith("/chat")),
      resume: mine.filter((r) => r.url.endsWith("/chat/resume")).at(-1),
    };
  }

  const fence = (code) => "Please run this:\n```python\n" + code + "\n```";

  test("GET /{c}/demo answers 308 to the page, which boots Python step by step", async () => {
    const resp = await page.goto(`${server.url}${COMMUNITY}/demo?from=test`);
    assert.equal(new URL(page.url()).pathname, `${BASE_PATH}/${COMMUNITY}/demo/`);
    assert.equal(new URL(page.url()).search, "?from=test");
    const csp = resp.headers()["content-security-policy"];
    assert.match(csp, /script-src 'self' 'wasm-unsafe-eval'/);
    assert.match(csp, /worker-src 'self' blob:/);
    assert.ok(csp.includes(`connect-src 'self' ${allowed.origin}`), csp);
    await page.waitForSelector('#runtime[data-state="ready"], #runtime[data-state="failed"]');
    const status = await page.textContent("#runtime-status");
    assert.equal(await page.getAttribute("#runtime", "data-state"), "ready", status);
    const phases = await page.$$eval("#boot-steps li", (lis) => lis.map((li) => li.dataset.phase));
    assert.deepEqual(phases, ["loading_runtime", "runtime_loaded", "loading_package", "importing", "sealing", "prelude"]);
    assert.match(status, /nemar-tools/);
  });

  test("round trip: the reply quotes the code's stdout; the overlay wheel imports; the prelude ran", async () => {
    const code = [
      "import asyncio, nemar_tools",
      "await asyncio.sleep(0.05)",
      "print(PRELUDE_MARKER)",
      "print('mean', nemar_tools.describe([1, 2, 3, 4]).mean)",
      "print('answer', 6 * 7)",
    ].join("\n");
    const { reply, text, chat, resume } = await ask(fence(code));
    assert.match(text, /The code finished with status ok\./);
    assert.match(text, /prelude ran with nemar_tools 0\.1\.0/);
    assert.match(text, /mean 2\.5/);
    assert.match(text, /answer 42/);
    // What the page sent: the tools once ready, and exactly the ClientToolResult shape.
    assert.deepEqual(chat.body.client_tools, ["execute_code", "get_full_output"]);
    assert.deepEqual(Object.keys(resume.body).sort(), ["client_tools", "result", "session_id"]);
    assert.deepEqual(Object.keys(resume.body.result), ["call_id", "status", "stdout", "stderr", "summary", "images", "artifacts", "elapsed_ms"]);
    assert.equal(resume.body.result.status, "ok");
    assert.equal(resume.body.result.stdout, "prelude ran with nemar_tools 0.1.0\nmean 2.5\nanswer 42\n");
    assert.ok(typeof resume.body.session_id === "string" && resume.body.session_id !== "");
    assert.match(resume.body.result.summary, /^Ran without an error\./);
    assert.equal(await reply.locator('[data-role="tool"]').getAttribute("data-status"), "ok");
    await page.screenshot({ path: path.join(artifacts, "demo-round-trip.png"), fullPage: true });
  });

  test("Deny: the model is told the reader declined", async () => {
    const { text, resume } = await ask(fence("print('must not run')"), "deny");
    assert.match(text, /The code finished with status denied\./);
    assert.equal(await page.locator('.msg.assistant [data-role="tool"]').last().getAttribute("data-status"), "denied");
    assert.equal(await page.locator('.msg.assistant [data-role="tool"]').last().locator('[data-role="stdout"]').count(), 0);
    const r = resume.body.result;
    assert.equal(r.status, "denied");
    assert.equal(r.stderr, "[runtime] the reader declined to run this code.");
    assert.equal(
      r.summary,
      "Not run. The reader declined this code. Do not call it again unless they ask; answer without running code, or say what the code would have done.",
    );
    assert.equal(r.stdout, "");
  });

  test("a run past exec_seconds is stopped: timeout, then Python starts again", async () => {
    const started = Date.now();
    const { text, resume } = await ask(fence("while True:\n    pass"));
    assert.match(text, /The code finished with status timeout\./);
    assert.equal(resume.body.result.status, "timeout");
    assert.equal(resume.body.result.stderr, `[runtime] the code ran longer than ${EXEC_SECONDS}s and was stopped.`);
    assert.ok(resume.body.result.elapsed_ms >= EXEC_SECONDS * 1000, `elapsed_ms ${resume.body.result.elapsed_ms}`);
    assert.ok(Date.now() - started < EXEC_SECONDS * 1000 + 15_000, "the reply came long after the run was stopped");
    await page.waitForSelector('#runtime[data-state="ready"]');
    // The new worker booted through the prelude again.
    const { text: again } = await ask(fence("print(PRELUDE_MARKER)"));
    assert.match(again, /status ok\. It printed:\s+prelude ran with nemar_tools 0\.1\.0/);
  });

  test("osa.fetch reaches exactly fetch_allow: the allowed loopback works, another origin is refused", async () => {
    const a = allowed.origin;
    const code = `
import osa, nemar_tools
print("allowed:", await osa.fetch_text("${a}/allowed/hello.txt"))
index = await nemar_tools.read_index("ds000001")
print("index:", index["recordings"])
for url in ["${other.origin}/allowed/hello.txt", "${a}/allowedfoo/secret.txt", "${a}/allowed/../secret.txt", "https://example.org/"]:
    try:
        await osa.fetch_text(url)
        print("FETCHED", url)
    except osa.FetchRefused as e:
        print("refused:", e.reason)
try:
    await osa.fetch_text("${a}/allowed/redirect")
    print("FOLLOWED the redirect")
except osa.FetchError:
    print("redirect: refused")
for name in ["js", "pyodide", "pyodide.http", "micropip"]:
    try:
        __import__(name)
        print("IMPORTED", name)
    except ImportError:
        print("blocked:", name)
`.trim();
    const { text, resume } = await ask(fence(code));
    const out = resume.body.result.stdout;
    assert.equal(resume.body.result.status, "ok", resume.body.result.stderr);
    assert.match(out, /^allowed: hello from the allowed server$/m);
    assert.match(out, /^index: \['sub-01_task-rest'\]$/m);
    assert.equal(out.match(/^refused: not_in_fetch_allow$/gm).length, 4, out);
    assert.match(out, /^redirect: refused$/m);
    assert.equal(out.match(/^blocked: /gm).length, 4, out);
    assert.doesNotMatch(out, /FETCHED|FOLLOWED|IMPORTED/);
    assert.match(text, /allowed: hello from the allowed server/);
    // Only the allowed server was reached, and only at allowed paths.
    assert.deepEqual(hits, ["allowed /allowed/hello.txt", "allowed /allowed/ds000001/zarr/index.json", "allowed /allowed/redirect"]);
  });

  test("the seal: no network API is left in the worker and Python cannot reach JavaScript", async () => {
    const code = "import sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('js', 'pyodide', 'pyodide_js', 'micropip', '_pyodide')))";
    const { resume } = await ask(fence(code));
    assert.equal(resume.body.result.stdout, "[]\n");
    const workers = page.workers();
    assert.equal(workers.length, 1);
    const left = await workers[0].evaluate(() =>
      ["fetch", "XMLHttpRequest", "WebSocket", "EventSource", "importScripts", "Worker", "caches"].filter((n) => self[n] !== undefined),
    );
    assert.deepEqual(left, []);
    // The worker's own CSP binds it: no eval, so a JavaScript object reached from Python
    // cannot compile code to find another way out. (DevTools' own evaluation is exempt from
    // CSP, so this asks the worker to compile a string itself, through setTimeout.)
    const compiled = await workers[0].evaluate(
      () =>
        new Promise((resolve) => {
          self.addEventListener("securitypolicyviolation", (e) => resolve(`blocked by ${e.effectiveDirective}`));
          setTimeout("self.__compiled = 'yes'", 0);
          setTimeout(() => resolve(`compiled: ${self.__compiled}`), 500);
        }),
    );
    assert.equal(compiled, "blocked by script-src");
  });

  test("figures come back as PNGs no larger than image_px; saved files are the artifacts", async () => {
    // The npm copy of Pyodide has no matplotlib, so a stand-in matplotlib.pyplot draws real
    // PNG bytes through the same calls the runtime makes (get_fignums, figure, savefig, close).
    const code = `
import sys, types, struct, zlib
def png(w, h):
    raw = b"".join(b"\\x00" + b"\\x80\\x40\\x20" * w for _ in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
class Fig:
    dpi = 100.0
    def __init__(self, w, h): self.size = (w, h)
    def get_size_inches(self): return self.size
    def savefig(self, buf, format, dpi): buf.write(png(round(self.size[0] * dpi), round(self.size[1] * dpi)))
figs = {1: Fig(4, 3), 2: Fig(20, 10)}
plt = types.ModuleType("matplotlib.pyplot")
plt.get_fignums = lambda: sorted(figs)
plt.figure = lambda n: figs[n]
plt.close = lambda which: figs.clear()
sys.modules["matplotlib"] = types.ModuleType("matplotlib")
sys.modules["matplotlib.pyplot"] = plt
print("drew", len(figs))
import osa
osa.save_script("analysis/plot.py", "print('plot')\\n")
osa.save_artifact("data.csv", b"a,b\\n1,2\\n")
for bad in ["../x", "/abs", "a//b", ""]:
    try:
        osa.save_artifact(bad, b"")
    except osa.SaveRefused as e:
        print("refused", repr(bad), e.reason)
# The workspace caps are limits' (10 MiB a file), as on the server, in the same words.
print("saved", osa.save_artifact("big.bin", b"x" * 10_200_000))
try:
    osa.save_artifact("huge.bin", b"x" * (10 * 1024 * 1024 + 1))
except osa.SaveRefused as e:
    print("huge:", e)
try:
    osa.save_artifact("a b", b"")
except osa.SaveRefused as e:
    print("message:", e)
`.trim();
    const { reply, resume } = await ask(fence(code));
    const r = resume.body.result;
    assert.equal(r.status, "ok", r.stderr);
    assert.deepEqual(
      r.images.map((i) => [i.mime, i.width, i.height]),
      [
        ["image/png", 400, 300],
        ["image/png", 1023, 512],
      ],
    );
    assert.match(r.images[0].data_base64, /^iVBORw0KGgo/);
    assert.match(r.summary, /2 figure\(s\) drawn, 2 attached\./);
    assert.equal(await reply.locator('[data-role="tool"] img').count(), 2);
    assert.deepEqual(r.artifacts, ["analysis/plot.py", "big.bin", "data.csv"]);
    assert.equal(r.stdout.match(/^refused .* bad_name$/gm).length, 4, r.stdout);
    assert.match(r.stdout, /^saved big\.bin$/m);
    assert.match(r.stdout, /^huge: osa\.save_artifact refused 'huge\.bin': too_large \(the file is 10485761 bytes, over the 10485760-byte \(10 MiB\) cap per file\)$/m);
    assert.match(r.stdout, /^message: osa\.save_artifact refused 'a b': bad_name \(the name has the character ' '; use letters, digits, '\.', '_', '-' and '\/'\)$/m);
    assert.match(r.summary, /Saved 3 file\(s\) for the reader: analysis\/plot\.py, big\.bin, data\.csv\.$/);
    assert.deepEqual(await reply.locator('[data-role="files"] a').allInnerTexts(), ["analysis/plot.py", "big.bin", "data.csv"]);
    assert.match(await reply.locator('[data-role="files"] li').nth(1).innerText(), /\(10200000 bytes\)$/);
  });

  test("an exception is an error result with the traceback; long output is clipped as the server clips", async () => {
    const code = "print('x' * 5000)\ndef f():\n    raise ValueError('bad value')\nf()";
    const { text, resume } = await ask(fence(code));
    const r = resume.body.result;
    assert.match(text, /The code finished with status error\./);
    assert.equal(r.status, "error");
    assert.match(r.stderr, /^Traceback \(most recent call last\):\n  File "<exec>", line 4, in <module>\n/);
    assert.match(r.stderr, /ValueError: bad value\n$/);
    assert.match(r.summary, /^The code raised ValueError: bad value\./);
    assert.match(r.summary, /stdout: 5001 characters, clipped to 2000/);
    assert.equal(Array.from(r.stdout).length, 2000);
    assert.match(r.stdout, /^x{1200}\n\.\.\. 3034 characters omitted \.\.\.\nx{766}\n$/);
  });

  test("embedding: another site runs the runtime in a blob: worker under the README's CSP", async () => {
    const embed = await browser.newPage();
    const violations = [];
    embed.on("console", (m) => {
      if (/Content Security Policy/.test(m.text())) violations.push(m.text());
    });
    await embed.goto(`${allowed.origin}/embed.html?api=${encodeURIComponent(server.url)}`);
    await embed.waitForFunction(() => window.outcome !== undefined);
    const outcome = await embed.evaluate(() => window.outcome);
    await embed.close();
    assert.equal(outcome.type, "result", JSON.stringify(outcome));
    assert.equal(outcome.result.status, "ok", outcome.result.stderr.head);
    assert.equal(outcome.result.stdout.head, "hello from the allowed server\n");
    assert.deepEqual(violations, []);
  });

  // ---- attached files: the picker uploads to the session, and runs here read them at /data.

  const SALES = "region,amount\nnorth,10\nsouth,32.5\nnorth,7.25\neast,0.25\n";
  const NOTES = "attached notes\n";
  const sha256 = (text) => crypto.createHash("sha256").update(text).digest("hex");
  const filesPath = /\/sessions\/([^/]+)\/files(\/[^/]+)?$/;
  let uploadSession; // the session id the page started for its first upload

  // pick chooses files in the picker and waits for the upload's answer and the list.
  async function pick(files) {
    const answered = page.waitForResponse((r) => r.request().method() === "POST" && filesPath.test(new URL(r.url()).pathname));
    await page.setInputFiles("#file-input", files);
    const resp = await answered;
    await page.waitForSelector('#uploads[data-state="idle"]');
    return { status: resp.status(), body: await resp.json(), session: decodeURIComponent(filesPath.exec(new URL(resp.url()).pathname)[1]) };
  }
  const listed = () => page.$$eval('#file-list [data-role="attached-file"]', (lis) => lis.map((li) => li.innerText.replace(/\s+/g, " ").trim()));
  const csvFile = (name, text) => ({ name, mimeType: "text/csv", buffer: Buffer.from(text) });
  // serverMessage is what the page shows of a refusal's body (app.js errorText).
  const serverMessage = (body) => (typeof body.detail === "string" ? body.detail : body.details ? `${body.error}: ${body.details}` : body.error);

  test("attached files: the picker shows only where uploads are enabled; accept follows types", async () => {
    assert.equal(await page.isHidden("#uploads"), true, "browser-test has no uploads: no picker");
    await page.goto(`${server.url}${UPLOADS}/demo/`);
    await page.waitForSelector('#runtime[data-state="ready"], #runtime[data-state="failed"]');
    assert.equal(await page.getAttribute("#runtime", "data-state"), "ready", await page.textContent("#runtime-status"));
    assert.equal(await page.isVisible("#uploads"), true);
    assert.equal(await page.getAttribute("#file-input", "accept"), ".csv,.tsv,.txt,.json");
    assert.equal(await page.getAttribute("#file-input", "type"), "file");
    assert.equal(
      await page.textContent("#uploads-hint"),
      'Types: csv, tsv, txt, json. At most 1 MB a file, 3 files, 2 MB in all. Names may use letters, digits, ".", "_" and "-". Code run in this browser reads them at /data/<name>.',
    );
    assert.deepEqual(await listed(), []);
  });

  test("attached files: a refusal shows the server's message, as text, and attaches nothing", async () => {
    const bad = await pick([{ name: "bad.csv", mimeType: "text/csv", buffer: Buffer.from([0x61, 0x2c, 0xff, 0xfe, 0x0a]) }]);
    assert.ok(bad.status >= 400 && bad.status < 500, `invalid UTF-8 in a .csv: HTTP ${bad.status}`);
    uploadSession = bad.session;
    assert.match(uploadSession, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "before any message, the page starts a session of its own");
    assert.equal(await page.textContent("#uploads-error"), `Not attached: ${serverMessage(bad.body)}`);
    assert.match(serverMessage(bad.body), /UTF-8/);
    assert.deepEqual(await listed(), []);
    // A name that is markup: refused by the server, and whatever the message quotes is text.
    const evil = "<img src=x onerror=window.__xss=1>.csv";
    const named = await pick([csvFile(evil, "a\n1\n")]);
    assert.ok(named.status >= 400 && named.status < 500, `a name with markup: HTTP ${named.status}`);
    assert.equal(await page.textContent("#uploads-error"), `Not attached: ${serverMessage(named.body)}`);
    assert.equal(await page.locator("#uploads img, #uploads-error *").count(), 0);
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    assert.match(serverMessage(named.body), /name/);
    assert.deepEqual(await listed(), []);
    // A file surely over max_file_mb (1) is not sent at all.
    const posts = [];
    const onRequest = (r) => r.method() === "POST" && filesPath.test(new URL(r.url()).pathname) && posts.push(r.url());
    page.on("request", onRequest);
    await page.setInputFiles("#file-input", [csvFile("big.csv", "a\n" + "1\n".repeat(800_000))]);
    await page.waitForFunction(() => document.getElementById("uploads-error").textContent.includes("big.csv"));
    page.off("request", onRequest);
    assert.equal(await page.textContent("#uploads-error"), "big.csv is 1.5 MB, over the 1 MB a file may be; nothing was attached.");
    assert.deepEqual(posts, []);
  });

  test("attached files: a CSV picked here is at /data for the next run, read with csv", async () => {
    const up = await pick([csvFile("sales.csv", SALES)]);
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.equal(up.session, uploadSession, "the same session as the refused upload");
    assert.deepEqual(
      up.body.files.map((f) => [f.name, f.bytes, f.sha256, f.type]),
      [["sales.csv", SALES.length, sha256(SALES), "csv"]],
    );
    assert.equal(await page.isHidden("#uploads-error"), true, "a success clears the last refusal");
    assert.deepEqual(await listed(), [`sales.csv (${SALES.length} bytes) Remove`]);
    const code = `
import csv, os
from collections import defaultdict
with open("/data/sales.csv", newline="") as f:
    rows = list(csv.DictReader(f))
by = defaultdict(float)
for r in rows:
    by[r["region"]] += float(r["amount"])
print("rows", len(rows))
print("north", by["north"])
print("total", sum(by.values()))
print("files", sorted(os.listdir("/data")))
try:
    open("/data/sales.csv", "a").write("x")
    print("WROTE")
except OSError as e:
    print("read-only:", type(e).__name__)
`.trim();
    const { text, chat, resume } = await ask(fence(code));
    assert.equal(chat.body.session_id, uploadSession, "/chat names the session the files were uploaded to");
    const r = resume.body.result;
    assert.equal(r.status, "ok", r.stderr);
    assert.equal(r.stdout, "rows 4\nnorth 17.25\ntotal 50.0\nfiles ['sales.csv']\nread-only: PermissionError\n");
    assert.match(text, /total 50\.0/);
    assert.equal(resume.body.session_id, uploadSession);
  });

  test("attached files: a removed file is gone from /data for the next run; what a run changed is undone", async () => {
    const up = await pick([{ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from(NOTES) }]);
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.deepEqual(up.body.files.map((f) => f.name).sort(), ["notes.txt", "sales.csv"]);
    assert.deepEqual((await listed()).sort(), [`notes.txt (${NOTES.length} bytes) Remove`, `sales.csv (${SALES.length} bytes) Remove`]);
    // Two more would be 4, over max_files (3): refused whole, so neither is attached.
    const over = await pick([csvFile("a.csv", "a\n1\n"), csvFile("b.csv", "b\n2\n")]);
    assert.ok(over.status >= 400 && over.status < 500, `the 4th file: HTTP ${over.status}`);
    assert.equal(await page.textContent("#uploads-error"), `Not attached: ${serverMessage(over.body)}`);
    assert.equal((await listed()).length, 2);
    await page.screenshot({ path: path.join(artifacts, "demo-attached-files.png"), fullPage: true });
    // A run that forces its way into /data: its changes do not reach the next run.
    const vandal = `
import os
os.chmod("/data", 0o755)
os.chmod("/data/notes.txt", 0o644)
open("/data/notes.txt", "w").write("changed")
open("/data/extra.csv", "w").write("x\\n")
os.mkdir("/data/sub")
print(sorted(os.listdir("/data")))
`.trim();
    const v = await ask(fence(vandal));
    assert.equal(v.resume.body.result.stdout, "['extra.csv', 'notes.txt', 'sales.csv', 'sub']\n", v.resume.body.result.stderr);
    const removed = page.waitForResponse((r) => r.request().method() === "DELETE" && filesPath.test(new URL(r.url()).pathname));
    await page.click('#file-list [data-name="sales.csv"] button[data-action="remove-file"]');
    const resp = await removed;
    assert.ok(resp.ok(), `DELETE answered ${resp.status()}`);
    assert.equal(decodeURIComponent(filesPath.exec(new URL(resp.url()).pathname)[2]), "/sales.csv");
    await page.waitForSelector('#uploads[data-state="idle"]');
    assert.deepEqual(await listed(), [`notes.txt (${NOTES.length} bytes) Remove`]);
    const code = `
import os
print(sorted(os.listdir("/data")))
print(os.path.exists("/data/sales.csv"))
print(open("/data/notes.txt").read(), end="")
`.trim();
    const { resume } = await ask(fence(code));
    assert.equal(resume.body.result.stdout, `['notes.txt']\nFalse\n${NOTES}`, resume.body.result.stderr);
  });

  test("attached files: a restarted Python (after a timeout) has them again", async () => {
    const t = await ask(fence("while True:\n    pass"));
    assert.equal(t.resume.body.result.status, "timeout");
    await page.waitForSelector('#runtime[data-state="ready"]');
    const { resume } = await ask(fence('print(open("/data/notes.txt").read(), end="")'));
    assert.equal(resume.body.result.stdout, NOTES, resume.body.result.stderr);
  });

  test("attached files: a new conversation has none, and /data is empty for its runs", async () => {
    await page.click("#new-chat");
    assert.deepEqual(await listed(), []);
    const { chat, resume } = await ask(fence('import os\nprint(os.listdir("/data"))'));
    assert.equal(chat.body.session_id, undefined, "a new conversation without files names no session");
    assert.equal(resume.body.result.stdout, "[]\n", resume.body.result.stderr);
    assert.notEqual(resume.body.session_id, uploadSession);
  });
});

// EMBED_JS is what a community's site runs to use the runtime without the demo page: the
// README's recipe. The API's address comes in the page's query.
const EMBED_JS = `
const api = new URL(location.href).searchParams.get("api").replace(/\\/$/, "");
const c = "${COMMUNITY}";
const report = (v) => { window.outcome = v; };
try {
  const cfg = await (await fetch(\`\${api}/\${c}\`)).json();
  const demoURL = \`\${api}/\${c}/demo/config.json\`;
  const demo = await (await fetch(demoURL)).json();
  // A dynamic import: a static one would be fetched as a worker script (worker-src).
  const src = \`await import(\${JSON.stringify(\`\${api}/\${c}/demo/worker.js\`)});\`;
  const worker = new Worker(URL.createObjectURL(new Blob([src], { type: "text/javascript" })), { type: "module" });
  worker.onerror = (e) => report({ type: "failed", message: e.message || "worker error" });
  worker.onmessage = (e) => {
    const m = e.data;
    if (m.type === "loaded") worker.postMessage(boot);
    else if (m.type === "ready") worker.postMessage({ type: "run", id: 1, code: "import osa\\nprint(await osa.fetch_text(osa.fetch_allow[0] + 'hello.txt'))", images: 0, image_px: 1024 });
    else if (m.type === "result" || m.type === "failed") report(m);
  };
  const boot = {
    type: "boot",
    indexURL: new URL(demo.pyodide.index_url, demoURL).href,
    files: demo.pyodide.files,
    packagesURL: demo.pyodide.packages_url || null,
    runtimeURL: \`\${api}/\${c}/demo/osa_runtime.py\`,
    wheelBase: \`\${api}/\${c}/runtime/\`,
    python: cfg.runtime.python,
    lock: cfg.runtime_lock,
  };
} catch (e) {
  report({ type: "failed", message: String(e) });
}
`;

// loopback starts an HTTP server on 127.0.0.1 that answers like a data host: CORS for any
// origin, a text file, a JSON index for nemar_tools, and a redirect.
function loopback(name, hits) {
  return new Promise((resolve) => {
    const s = http.createServer((req, res) => {
      const p = new URL(req.url, "http://x").pathname;
      if (req.method === "GET") hits.push(`${name} ${p}`);
      res.setHeader("Access-Control-Allow-Origin", "*");
      if (p === "/allowed/hello.txt") {
        res.end(name === "allowed" ? "hello from the allowed server" : "hello from another origin");
      } else if (p === "/allowed/ds000001/zarr/index.json") {
        res.setHeader("Content-Type", "application/json");
        res.end(JSON.stringify({ recordings: ["sub-01_task-rest"] }));
      } else if (p === "/embed.html") {
        // A community's own site embedding the runtime, under the CSP the README gives.
        const api = new URL(req.url, "http://x").searchParams.get("api");
        const apiOrigin = new URL(api).origin;
        res.setHeader(
          "Content-Security-Policy",
          `default-src 'none'; script-src 'self' 'wasm-unsafe-eval' ${apiOrigin}; worker-src blob:; connect-src ${apiOrigin} http://${req.headers.host}`,
        );
        res.setHeader("Content-Type", "text/html; charset=utf-8");
        res.end('<!doctype html><meta charset="utf-8"><title>embedding</title><script type="module" src="/embed.js"></script>');
      } else if (p === "/embed.js") {
        res.setHeader("Content-Type", "text/javascript");
        res.end(EMBED_JS);
      } else if (p === "/allowed/redirect") {
        res.statusCode = 302;
        res.setHeader("Location", "/allowed/hello.txt");
        res.end();
      } else {
        res.statusCode = 404;
        res.end("not found");
      }
    });
    s.listen(0, "127.0.0.1", () => resolve({ server: s, origin: `http://127.0.0.1:${s.address().port}` }));
  });
}

function templateCommunities(dir, origin) {
  fs.cpSync(path.join(here, "communities"), dir, { recursive: true });
  const file = path.join(dir, COMMUNITY, "config.yaml");
  const text = fs.readFileSync(file, "utf8");
  assert.ok(text.includes(PLACEHOLDER_ORIGIN));
  fs.writeFileSync(file, text.replaceAll(PLACEHOLDER_ORIGIN, origin));
  return dir;
}

function buildBinary(dir) {
  const bin = path.join(dir, "assistant");
  execFileSync("go", ["build", "-o", bin, "./cmd/assistant"], { cwd: repo, stdio: "inherit" });
  return bin;
}

// startServer runs assistant serve on a free loopback port and waits for "serving on <url>".
function startServer(bin, communities) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (/^(ANTHROPIC|OPENAI|OPENROUTER)_API_KEY$|^ASSISTANT_(PYODIDE_URL|PYODIDE_PACKAGES_URL|CLIENT_TOOLS_DISABLED|BASE_PATH)$|^OSA_/.test(k)) delete env[k];
  }
  const args = [
    "serve",
    "--addr",
    "127.0.0.1:0",
    "--communities",
    communities,
    "--base-path",
    BASE_PATH,
    "--rate-limits",
    "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0",
    "--log-format",
    "text",
  ];
  const proc = spawn(bin, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  const log = [];
  proc.stderr.on("data", (d) => log.push(d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${log.join("")}`)), 30_000);
    proc.on("exit", (code) => reject(new Error(`the server exited with ${code}:\n${log.join("")}`)));
    readline.createInterface({ input: proc.stdout }).once("line", (line) => {
      clearTimeout(timer);
      const i = line.indexOf("http://");
      if (i < 0) return reject(new Error(`unexpected first line ${JSON.stringify(line)}`));
      resolve({ proc, url: line.slice(i), log });
    });
  });
}
