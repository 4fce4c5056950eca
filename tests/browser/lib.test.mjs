// Unit tests of the pure functions the demo page and its worker share (web/static/lib.mjs):
// the fetch_allow rule of config.md §4.4, output clipping as sandbox/output.go clips, the
// workspace's name rule and caps as sandbox/osa.go has them, the add-only lock merge and the
// get_full_output store. No browser needed. The rule, clipping and workspace cases are the test
// vectors of web/testdata, which the server's Go tests run too.

import assert from "node:assert/strict";
import fs from "node:fs";
import { describe, test } from "node:test";

import {
  AttachedFiles,
  Citations,
  FullOutputStore,
  RESULT_KEYS,
  TEXTS,
  Workspace,
  acceptOf,
  allowedText,
  answerFullOutput,
  artifactNameProblem,
  checkUrl,
  citationParts,
  clip,
  clipCaptured,
  closure,
  cutText,
  formatBytes,
  isDataFileName,
  mergeLock,
  newSessionId,
  safeHref,
  toolResult,
  uploadsOf,
} from "../../web/static/lib.mjs";

const vectors = (name) => JSON.parse(fs.readFileSync(new URL(`../../web/testdata/${name}`, import.meta.url), "utf8"));
const joined = (pieces) => pieces.map(([s, n]) => s.repeat(n)).join("");

// Caps as the page config has them; their values are limits' (routers and web test that).
const CAPS = { summary_chars: 8192 };

describe("checkUrl (config.md §4.4; web/testdata/fetch_allow.json)", () => {
  const { cases } = vectors("fetch_allow.json");
  test("there are cases", () => assert.ok(cases.length >= 50));
  for (const { allow, target, want } of cases) {
    test(`${JSON.stringify(allow)} ${JSON.stringify(target)}`, () => {
      const got = checkUrl(target, allow);
      if (want.startsWith("!")) assert.deepEqual(got, { ok: false, reason: want.slice(1) });
      else assert.deepEqual(got, { ok: true, url: want });
    });
  }
  test("a refusal's detail reads as the server's", () => {
    assert.equal(allowedText([]), "this runtime may fetch nothing");
    assert.equal(allowedText(["https://a/", "https://b/x"]), "this runtime may fetch only https://a/, https://b/x");
  });
});

describe("clip (as sandbox/output.go; web/testdata/clip.json)", () => {
  for (const { name, limit, text, want } of vectors("clip.json").cases) {
    test(name, () => {
      const got = clip(joined(text), limit);
      assert.equal(got, joined(want));
      assert.ok(Array.from(got).length <= limit);
    });
  }
  test("a capture of head and tail clips like the whole text", () => {
    let all = "";
    for (let i = 0; i < 100000; i++) all += "x".repeat(i % 7) + "\n";
    const n = all.length;
    const kept = 262144;
    const head = all.slice(0, kept);
    const tail = all.slice(n - kept);
    assert.equal(clipCaptured(head, tail, n, 1000), clip(all, 1000));
    assert.equal(Array.from(clip(all, 1000)).length, 1000);
  });
});

describe("the workspace (as sandbox/osa.go; web/testdata/workspace.json)", () => {
  const { caps, names, saves } = vectors("workspace.json");
  for (const { name, times, problem } of names) {
    const n = times ? name.repeat(times) : name;
    test(`name ${JSON.stringify(n.slice(0, 40))}`, () => assert.equal(artifactNameProblem(n, caps.artifact_name_chars), problem));
  }
  for (const { why, steps } of saves) {
    test(why, () => {
      const w = new Workspace(caps);
      for (const [i, st] of steps.entries()) {
        const r = w.save("artifact", st.name, new Uint8Array(st.bytes));
        assert.equal(r.ok ? "" : r.refused, st.want, `step ${i}: ${st.name}, ${st.bytes} bytes: ${r.detail}`);
      }
    });
  }
  test("what the guest passes is checked, not trusted", () => {
    const w = new Workspace(caps);
    for (const [kind, name, data] of [
      ["other", "a.txt", new Uint8Array([1])],
      ["artifact", 7, new Uint8Array([1])],
      ["artifact", "a.txt", "not bytes"],
      ["artifact", "a.txt", [1, 2]],
    ]) {
      const r = w.save(kind, name, data);
      assert.equal(r.ok, false, `${kind} ${name} ${typeof data}`);
      assert.equal(r.refused, "bad_name");
    }
    assert.equal(w.take().length, 0);
  });
  test("take returns the files sorted and empties the workspace", () => {
    const w = new Workspace(caps);
    w.save("artifact", "b.csv", new Uint8Array([1]));
    w.save("script", "a.py", new TextEncoder().encode("print(1)"));
    w.save("artifact", "b.csv", new Uint8Array([2, 3]));
    assert.deepEqual(
      w.take().map((f) => [f.name, f.kind, [...f.data]]),
      [
        ["a.py", "script", [...new TextEncoder().encode("print(1)")]],
        ["b.csv", "artifact", [2, 3]],
      ],
    );
    assert.deepEqual(w.take(), []);
    assert.equal(w.total, 0);
  });
});

describe("mergeLock (add-only)", () => {
  const stock = {
    info: { version: "0.29.5" },
    packages: {
      numpy: { name: "numpy", file_name: "numpy-2.whl", depends: [], sha256: "a" },
      micropip: { name: "micropip", file_name: "micropip-1.whl", depends: ["packaging"], sha256: "b" },
      packaging: { name: "packaging", file_name: "packaging-1.whl", depends: [], sha256: "c" },
    },
  };
  const overlay = {
    packages: {
      "nemar-tools": { name: "nemar-tools", file_name: "nemar_tools-0.1.0-py3-none-any.whl", depends: ["numpy"], sha256: "d" },
      numpy: { name: "numpy", file_name: "evil-numpy.whl", depends: [], sha256: "e" },
    },
  };
  const opts = { wheelBase: "https://api.example/osa/nemar/runtime/", indexURL: "https://api.example/osa/pyodide/v0.29.5/" };

  test("never replaces a stock entry and resolves overlay wheels", () => {
    const { lock, skipped } = mergeLock(stock, overlay, { ...opts, files: null });
    assert.deepEqual(skipped, ["numpy"]);
    assert.equal(lock.packages.numpy.file_name, "numpy-2.whl");
    assert.equal(lock.packages["nemar-tools"].file_name, "https://api.example/osa/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl");
    assert.deepEqual(lock.info, stock.info);
    assert.equal(stock.packages.numpy.file_name, "numpy-2.whl", "the stock lock is not modified");
  });
  test("a core-only copy reports what it lacks, or takes it from packages_url", () => {
    const core = mergeLock(stock, overlay, { ...opts, files: ["pyodide.mjs", "packaging-1.whl"] });
    assert.deepEqual([...core.missing].sort(), ["micropip", "numpy"]);
    assert.equal(core.lock.packages.packaging.file_name, "https://api.example/osa/pyodide/v0.29.5/packaging-1.whl");
    const cdn = mergeLock(stock, overlay, { ...opts, files: [], packagesURL: "https://cdn.example/full/" });
    assert.equal(cdn.missing.size, 0);
    assert.equal(cdn.lock.packages.numpy.file_name, "https://cdn.example/full/numpy-2.whl");
  });
  test("closure lists dependencies first and unknown names", () => {
    const { lock } = mergeLock(stock, overlay, { ...opts, files: null });
    assert.deepEqual(closure(lock, ["nemar_tools", "micropip", "nope"]), { names: ["numpy", "nemar-tools", "packaging", "micropip"], unknown: ["nope"] });
  });
});

describe("results", () => {
  test("a result has exactly the eight ClientToolResult keys", () => {
    const r = toolResult("c1", { status: "denied", stderr: TEXTS.denied, summary: TEXTS.deniedSummary, extra: 1, artifacts: ["b", "a", "b"], elapsed_ms: 3.6 }, CAPS);
    assert.deepEqual(Object.keys(r), RESULT_KEYS);
    assert.deepEqual(r.artifacts, ["a", "b"]);
    assert.equal(r.elapsed_ms, 4);
  });
  test("get_full_output pages through the store", () => {
    const store = new FullOutputStore({ runs: 2, totalChars: 1000 });
    const limits = { stdout_chars: 4, stderr_chars: 3, images: 1 };
    store.put("a", { stdout: "0123456789", stderr: "err", traceback: "", images: [{ mime: "image/png", data_base64: "AA==", width: 1, height: 1 }, {}] });
    let r = answerFullOutput(store, "g1", { call_id: "a" }, limits, CAPS);
    assert.equal(r.stdout, "0123");
    assert.match(r.summary, /More remains: call again with offset=4\.$/);
    r = answerFullOutput(store, "g2", { call_id: "a", offset: 8 }, limits, CAPS);
    assert.equal(r.stdout, "89");
    assert.match(r.summary, /This is the end of the stream\.$/);
    r = answerFullOutput(store, "g3", { call_id: "a", stream: "stderr" }, limits, CAPS);
    assert.equal(r.stderr, "err");
    r = answerFullOutput(store, "g4", { call_id: "a", stream: "figures" }, limits, CAPS);
    assert.equal(r.images.length, 1);
    assert.equal(r.summary, 'get_full_output: 1 figure(s) from call_id "a", attached.');
    assert.equal(answerFullOutput(store, "g5", { call_id: "a", stream: "nope" }, limits, CAPS).status, "error");
    r = answerFullOutput(store, "g6", { call_id: "zzz" }, limits, CAPS);
    assert.equal(r.status, "error");
    assert.equal(r.stderr, TEXTS.noOutput("zzz", 2));
    store.put("b", { stdout: "", stderr: "", traceback: "", images: [] });
    store.put("c", { stdout: "", stderr: "", traceback: "", images: [] });
    assert.equal(store.get("a"), undefined, "the oldest run is evicted");
  });
  test("the summary is clipped to summary_chars", () => {
    assert.equal(Array.from(toolResult("c", { summary: "s".repeat(50) }, { summary_chars: 40 }).summary).length, 40);
  });
  test("the full output store keeps at most totalChars", () => {
    const store = new FullOutputStore({ runs: 16, totalChars: 10 });
    store.put("a", { stdout: "12345", stderr: "", traceback: "", images: [] });
    store.put("b", { stdout: "123456", stderr: "", traceback: "", images: [] });
    assert.equal(store.get("a"), undefined);
    assert.ok(store.get("b"));
  });
});

describe("attached files (runtime.python.uploads)", () => {
  test("only a plain one-segment name is written under /data", () => {
    for (const ok of ["sales.csv", "a", "A-b_c.1.TSV", "..x", ".hidden"]) assert.equal(isDataFileName(ok), true, ok);
    for (const bad of ["", ".", "..", "../x.csv", "a/b.csv", "/etc/passwd", "a b.csv", "<b>x</b>.csv", "é.csv", "a\0.csv", 7, null]) {
      assert.equal(isDataFileName(bad), false, String(bad));
    }
  });
  test("uploadsOf reads GET /{c}'s runtime.python.uploads; off unless enabled is true", () => {
    assert.equal(uploadsOf({}), null);
    assert.equal(uploadsOf({ runtime: { python: { uploads: { enabled: false, types: ["csv"] } } } }), null);
    assert.equal(uploadsOf({ runtime: { python: { uploads: { enabled: "true" } } } }), null);
    assert.deepEqual(uploadsOf({ runtime: { python: { uploads: { enabled: true, max_file_mb: 25, max_session_mb: 100, max_files: 16, types: ["csv", "json", "<x>", 3] } } } }), {
      max_file_mb: 25,
      max_session_mb: 100,
      max_files: 16,
      types: ["csv", "json"],
    });
    assert.equal(acceptOf(["csv", "tsv"]), ".csv,.tsv");
  });
  test("sizes read as a reader expects", () => {
    const cases = [
      [0, "0 bytes"],
      [1, "1 byte"],
      [1023, "1023 bytes"],
      [1024, "1 KB"],
      [1536, "1.5 KB"],
      [10 * 1024 + 300, "10 KB"],
      [25 * 1024 * 1024, "25 MB"],
      [3 * 1024 ** 3, "3 GB"],
      [-1, ""],
    ];
    for (const [n, want] of cases) assert.equal(formatBytes(n), want, String(n));
  });
  test("a session id of the page's own is a UUID4", () => {
    const a = newSessionId();
    assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(newSessionId(), a);
  });
  test("the page holds bytes only for listed files it uploaded, while the server's sha256 stays", () => {
    const a = new AttachedFiles();
    const v0 = a.version;
    const bytes = (s) => new TextEncoder().encode(s);
    const sent = new Map([
      ["a.csv", bytes("x\n1\n")],
      ["b.csv", bytes("y\n2\n")],
    ]);
    a.setList(
      [
        { name: "a.csv", bytes: 4, sha256: "aaa", type: "csv" },
        { name: "b.csv", bytes: 4, sha256: "bbb", type: "csv" },
        { name: "old.csv", bytes: 9, sha256: "ooo", type: "csv" },
        { name: "../evil.csv", bytes: 1, sha256: "eee", type: "csv" },
      ],
      sent,
    );
    assert.ok(a.version > v0);
    assert.deepEqual(a.list.map((f) => f.name), ["a.csv", "b.csv", "old.csv"]);
    assert.deepEqual(a.data().map((f) => f.name), ["a.csv", "b.csv"]);
    assert.equal(a.has("old.csv"), false, "a file this page did not upload has no bytes here");
    // A later list keeps what was held, unless the server's sha256 of it changed.
    a.setList([
      { name: "a.csv", bytes: 4, sha256: "aaa" },
      { name: "b.csv", bytes: 4, sha256: "bbb2" },
    ]);
    assert.deepEqual(a.data().map((f) => f.name), ["a.csv"]);
    assert.equal(a.list.length, 2, "b.csv is still listed: server runs read it");
    const v1 = a.version;
    a.remove("b.csv");
    assert.ok(a.version > v1);
    assert.deepEqual(a.data().map((f) => [f.name, new TextDecoder().decode(f.bytes)]), [["a.csv", "x\n1\n"]]);
    a.reset();
    assert.deepEqual([a.list, a.data()], [[], []]);
  });
});

describe("citations (knowledge.md §5): markers, sources, links", () => {
  test("Citations keeps well-formed citations by marker, in marker order", () => {
    const c = new Citations();
    assert.equal(c.add({ marker: 2, source: "https://b.example/", title: "B", cited_text: "b." }), true);
    assert.equal(c.add({ marker: 1, source: "https://a.example/x#y" }), true);
    for (const bad of [null, {}, { marker: 0, source: "s" }, { marker: 1.5, source: "s" }, { marker: "3", source: "s" }, { marker: 3 }, { marker: 3, source: 7 }]) {
      assert.equal(c.add(bad), false, JSON.stringify(bad));
    }
    c.addAll([{ marker: 3, source: "https://c.example/", title: 9 }]);
    c.addAll("not a list");
    assert.deepEqual(c.list(), [
      { marker: 1, source: "https://a.example/x#y", title: "", cited_text: "" },
      { marker: 2, source: "https://b.example/", title: "B", cited_text: "b." },
      { marker: 3, source: "https://c.example/", title: "", cited_text: "" },
    ]);
  });

  test("citationParts: markers of cited sources become parts, other brackets stay text", () => {
    const c = new Citations();
    c.add({ marker: 1, source: "https://a.example/", title: "A" });
    c.add({ marker: 2, source: "javascript:alert(1)", title: "X" });
    assert.deepEqual(citationParts("Fact.[1][2] A bare [3], a list [x] and [1].", c), [
      { text: "Fact." },
      { marker: 1, source: "https://a.example/", title: "A", href: "https://a.example/" },
      { marker: 2, source: "javascript:alert(1)", title: "X", href: null },
      { text: " A bare [3], a list [x] and " },
      { marker: 1, source: "https://a.example/", title: "A", href: "https://a.example/" },
      { text: "." },
    ]);
    assert.deepEqual(citationParts("no markers", c), [{ text: "no markers" }]);
    assert.deepEqual(citationParts("", c), []);
  });

  test("safeHref: only absolute http and https addresses", () => {
    assert.equal(safeHref("https://www.hedtags.org/docs#intro"), "https://www.hedtags.org/docs#intro");
    assert.equal(safeHref("http://x.example"), "http://x.example/");
    for (const bad of ["javascript:alert(1)", "data:text/html,x", "/relative", "", "vbscript:x", null, 3]) assert.equal(safeHref(bad), null, String(bad));
  });

  test("cutText cuts at characters, not UTF-16 units", () => {
    assert.equal(cutText("abc", 3), "abc");
    assert.equal(cutText("abcd", 3), "abc…");
    assert.equal(cutText("😀😀😀😀", 2), "😀😀…");
  });
});
