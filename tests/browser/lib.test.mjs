// Unit tests of the pure functions the demo page and its worker share (web/static/lib.mjs):
// the fetch_allow rule of config.md §4.4, output clipping as sandbox/output.go clips, the
// add-only lock merge and the get_full_output store. No browser needed.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  FullOutputStore,
  RESULT_KEYS,
  TEXTS,
  answerFullOutput,
  checkUrl,
  clip,
  clipCaptured,
  closure,
  mergeLock,
  toolResult,
} from "../../web/static/lib.mjs";

describe("checkUrl (config.md §4.4)", () => {
  const cases = [
    // [fetch_allow, target, allowed or refusal reason]
    [["https://zarr.nemar.org"], "https://zarr.nemar.org/ds1/zarr/index.json", true],
    [["https://zarr.nemar.org/"], "https://zarr.nemar.org/", true],
    [["https://zarr.nemar.org/"], "https://zarr.nemar.org", true],
    [["https://h/data"], "https://h/data", true],
    [["https://h/data"], "https://h/data/", true],
    [["https://h/data"], "https://h/data/x/y.json?q=1", true],
    [["https://h/data/"], "https://h/data", true],
    [["https://h/data"], "https://h/database", "not_in_fetch_allow"],
    [["https://h/data"], "https://h/dat", "not_in_fetch_allow"],
    [["https://h/data"], "https://h/data/../secret", "not_in_fetch_allow"],
    [["https://h/data"], "https://h/data/%2e%2e/secret", "not_in_fetch_allow"],
    [["https://h/data"], "http://h/data/x", "not_in_fetch_allow"],
    [["https://h/data"], "https://h:8443/data/x", "not_in_fetch_allow"],
    [["https://h:443/data"], "https://h/data/x", true],
    [["https://h/data"], "https://other/data/x", "not_in_fetch_allow"],
    [["https://h/data"], "https://user:pw@h/data/x", "credentials_in_url"],
    [["https://h/data"], "ftp://h/data/x", "scheme_not_allowed"],
    [["https://h/data"], "data:text/plain,hi", "scheme_not_allowed"],
    [["https://h/data"], "not a url", "unparseable"],
    [["https://h/data"], "/data/x", "unparseable"],
    [["https://h/a/../data"], "https://h/data/x", "not_in_fetch_allow"],
    [["https://h/./data"], "https://h/data/x", "not_in_fetch_allow"],
    [["https://h/%2E%2E/data"], "https://h/data/x", "not_in_fetch_allow"],
    [["data"], "https://h/data/x", "not_in_fetch_allow"],
    [[""], "https://h/data/x", "not_in_fetch_allow"],
    [[], "https://h/data/x", "not_in_fetch_allow"],
    [["https://H/Data"], "https://h/Data/x", true],
    [["https://h/data?x=1"], "https://h/data/x", true],
    [["http://127.0.0.1:8080/allowed/"], "http://127.0.0.1:8080/allowed/hello.txt", true],
    [["http://127.0.0.1:8080/allowed/"], "http://localhost:8080/allowed/hello.txt", "not_in_fetch_allow"],
  ];
  for (const [allow, target, want] of cases) {
    test(`${JSON.stringify(allow)} ${target}`, () => {
      const got = checkUrl(target, allow);
      if (want === true) assert.equal(got.ok, true, JSON.stringify(got));
      else assert.deepEqual(got, { ok: false, reason: want });
    });
  }
});

describe("clip (as sandbox/output.go)", () => {
  // The cases of sandbox/output_test.go TestClipWriter.
  const cases = [
    ["cap smaller than the marker", 10, "a".repeat(20), "aaaaaa"],
    ["empty", 10, "", ""],
    ["fits", 10, "abcdef", "abcdef"],
    ["exactly the limit", 10, "0123456789", "0123456789"],
    ["multibyte fits", 5, "héllo", "héllo"],
    ["clipped keeps head 3/5 and tail", 60, "a".repeat(50) + "b".repeat(50) + "c".repeat(50), "a".repeat(28) + "\n... 122 characters omitted ...\n"],
    ["clipped with a tail", 100, "a".repeat(100) + "z".repeat(100), "a".repeat(60) + "\n... 132 characters omitted ...\n" + "z".repeat(8)],
    ["clipped multibyte tail stays whole", 100, "é".repeat(150) + "€".repeat(150), "é".repeat(60) + "\n... 232 characters omitted ...\n" + "€".repeat(8)],
    ["astral characters count once", 40, "😀".repeat(100), "😀".repeat(8) + "\n... 92 characters omitted ...\n"],
  ];
  for (const [name, limit, text, want] of cases) {
    test(name, () => {
      const got = clip(text, limit);
      assert.equal(got, want);
      assert.ok(Array.from(got).length <= limit);
    });
  }
  test("a capture of head and tail clips like the whole text", () => {
    let all = "";
    for (let i = 0; i < 100000; i++) all += "x".repeat(i % 7) + "\n";
    const n = all.length;
    const head = all.slice(0, 262144);
    const tail = all.slice(n - 262144);
    assert.equal(clipCaptured(head, tail, n, 1000), clip(all, 1000));
    assert.equal(Array.from(clip(all, 1000)).length, 1000);
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
    const r = toolResult("c1", { status: "denied", stderr: TEXTS.denied, summary: TEXTS.deniedSummary, extra: 1, artifacts: ["b", "a", "b"], elapsed_ms: 3.6 });
    assert.deepEqual(Object.keys(r), RESULT_KEYS);
    assert.deepEqual(r.artifacts, ["a", "b"]);
    assert.equal(r.elapsed_ms, 4);
  });
  test("get_full_output pages through the store", () => {
    const store = new FullOutputStore({ runs: 2 });
    const limits = { stdout_chars: 4, stderr_chars: 3, images: 1 };
    store.put("a", { stdout: "0123456789", stderr: "err", traceback: "", images: [{ mime: "image/png", data_base64: "AA==", width: 1, height: 1 }, {}] });
    let r = answerFullOutput(store, "g1", { call_id: "a" }, limits);
    assert.equal(r.stdout, "0123");
    assert.match(r.summary, /More remains: call again with offset=4\.$/);
    r = answerFullOutput(store, "g2", { call_id: "a", offset: 8 }, limits);
    assert.equal(r.stdout, "89");
    assert.match(r.summary, /This is the end of the stream\.$/);
    r = answerFullOutput(store, "g3", { call_id: "a", stream: "stderr" }, limits);
    assert.equal(r.stderr, "err");
    r = answerFullOutput(store, "g4", { call_id: "a", stream: "figures" }, limits);
    assert.equal(r.images.length, 1);
    assert.equal(r.summary, 'get_full_output: 1 figure(s) from call_id "a", attached.');
    assert.equal(answerFullOutput(store, "g5", { call_id: "a", stream: "nope" }, limits).status, "error");
    r = answerFullOutput(store, "g6", { call_id: "zzz" }, limits);
    assert.equal(r.status, "error");
    assert.equal(r.stderr, TEXTS.noOutput("zzz"));
    store.put("b", { stdout: "", stderr: "", traceback: "", images: [] });
    store.put("c", { stdout: "", stderr: "", traceback: "", images: [] });
    assert.equal(store.get("a"), undefined, "the oldest run is evicted");
  });
});
