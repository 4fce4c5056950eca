// The demo page's citations in a real browser (knowledge.md §5): Debian's Chromium driven by
// playwright-core, against the real server binary. First its model is a fake Anthropic
// Messages API on loopback that streams a reply citing search results (citations_delta), as
// the real API does; then it is the offline demo model, answering a question from a
// community's own documentation (a guide in its folder, indexed by the server). Either way the
// page must show each marker as a link to its source and a numbered source list under the
// reply, from the citation events and done.citations.
//
// Environment: ASSISTANT_BIN, CHROMIUM, ARTIFACTS, as for demo.test.mjs.

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const artifacts = path.resolve(process.env.ARTIFACTS || path.join(repo, "tests/artifacts"));
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const COMMUNITY = "browser-cite";
const STEP_MS = 60_000;

const QUICKSTART = { source: "https://www.hedtags.org/quickstart#where", title: "HED quickstart > Where tags go" };
const SCHEMA = { source: "https://www.hedtags.org/schema", title: "HED schema" };
const BAD = { source: "javascript:alert(1)", title: "Not a web address" };

// The fake model's replies, one per request: text blocks, each with the citations it streams
// before its text.
const REPLIES = [
  [
    { text: "Per the docs, " },
    { text: "tags go in events", cites: [[QUICKSTART, "Annotations are placed in the events.tsv file."]] },
    { text: ".tsv files. " },
    { text: "They come from a schema.", cites: [[SCHEMA, "Every tag comes from a schema."], [QUICKSTART, "Annotations are placed in the events.tsv file."]] },
    { text: " Some sources are not links.", cites: [[BAD, "x"]] },
    { text: " A bare [7] stays text." },
  ],
  [{ text: "A new reply numbers from one.", cites: [[SCHEMA, "Versions are released on GitHub."]] }],
];

const chromiumMissing = !fs.existsSync(chromiumPath);

describe("citations on the demo page in Chromium", { skip: chromiumMissing ? "Chromium is absent" : false }, () => {
  let tmp;
  let model; // the fake Anthropic API
  let server;
  let browser;
  let page;
  const consoleLog = [];

  before(async () => {
    fs.mkdirSync(artifacts, { recursive: true });
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "assistant-cite-"));
    model = await fakeAnthropic(REPLIES);
    const communities = path.join(tmp, "communities");
    fs.mkdirSync(path.join(communities, COMMUNITY), { recursive: true });
    fs.writeFileSync(
      path.join(communities, COMMUNITY, "config.yaml"),
      [
        `id: ${COMMUNITY}`,
        "name: Browser Citations",
        "description: The community of the browser test of citations, answered by a fake Anthropic API.",
        "default_model: anthropic/claude-test",
        "widget:",
        "  title: Browser Citations Assistant",
        "",
      ].join("\n"),
    );
    const bin = process.env.ASSISTANT_BIN || buildBinary(tmp);
    server = await startServer(bin, communities, model.url, ["--data-dir", path.join(tmp, "data")]);
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    page = await (await browser.newContext({ viewport: { width: 1000, height: 800 } })).newPage();
    page.setDefaultTimeout(STEP_MS);
    page.on("console", (m) => consoleLog.push(`[${m.type()}] ${m.text()}`));
    page.on("pageerror", (e) => consoleLog.push(`[pageerror] ${e.message}`));
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) {
      server.proc.kill("SIGTERM");
      fs.writeFileSync(path.join(artifacts, "citations-server.log"), server.log.join(""));
    }
    fs.writeFileSync(path.join(artifacts, "citations-console.log"), consoleLog.join("\n") + "\n");
    if (model) model.server.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  async function ask(message) {
    const before = await page.locator(".msg.assistant").count();
    await page.fill("#input", message);
    await page.click("#send");
    await page.waitForFunction(() => !document.getElementById("send").disabled);
    return page.locator(".msg.assistant").nth(before);
  }

  // markersOf is each marker of a reply as [text, href or null].
  const markersOf = (reply) =>
    reply.locator('[data-role="cite"]').evaluateAll((els) => els.map((e) => [e.textContent, e.tagName === "A" ? e.getAttribute("href") : null]));
  // sourcesOf is a reply's source list as [number, label, href or null, cited text].
  const sourcesOf = (reply) =>
    reply.locator('[data-role="source"]').evaluateAll((els) =>
      els.map((li) => {
        const a = li.querySelector("a");
        return [li.value, (a || li.querySelector("span")).textContent, a ? a.getAttribute("href") : null, li.querySelector("q")?.textContent ?? ""];
      }),
    );

  test("markers link to their sources, and the sources are listed under the reply", async () => {
    await page.goto(`${server.url}${COMMUNITY}/demo/`);
    await page.waitForFunction(() => !document.getElementById("send").disabled);
    const reply = await ask("Where do tags go?");
    const text = await reply.locator(".text").innerText();
    assert.equal(text, "Per the docs, tags go in events.tsv files.[1] They come from a schema.[2][1] Some sources are not links.[3] A bare [7] stays text.");
    assert.deepEqual(await markersOf(reply), [
      ["[1]", QUICKSTART.source],
      ["[2]", SCHEMA.source],
      ["[1]", QUICKSTART.source],
      ["[3]", null],
    ]);
    assert.deepEqual(await sourcesOf(reply), [
      [1, QUICKSTART.title, QUICKSTART.source, "Annotations are placed in the events.tsv file."],
      [2, SCHEMA.title, SCHEMA.source, "Every tag comes from a schema."],
      [3, BAD.title, null, "x"],
    ]);
    // Links open the source elsewhere, never with this page as their opener.
    const rels = await reply.locator("a.cite, [data-role=source] a").evaluateAll((as) => as.map((a) => [a.target, a.rel]));
    assert.ok(rels.length === 5 && rels.every(([t, r]) => t === "_blank" && r === "noopener noreferrer"), JSON.stringify(rels));
    // The source list is the last thing in the reply.
    assert.equal(await reply.evaluate((n) => n.lastElementChild.dataset.role), "sources");
    await page.screenshot({ path: path.join(artifacts, "demo-citations.png"), fullPage: true });
  });

  test("the next reply numbers its sources from one again", async () => {
    const reply = await ask("And versions?");
    assert.equal(await reply.locator(".text").innerText(), "A new reply numbers from one.[1]");
    assert.deepEqual(await markersOf(reply), [["[1]", SCHEMA.source]]);
    assert.deepEqual(await sourcesOf(reply), [[1, SCHEMA.title, SCHEMA.source, "Versions are released on GitHub."]]);
    // The reply before it keeps its own list.
    assert.equal(await page.locator(".msg.assistant").first().locator('[data-role="source"]').count(), 3);
    assert.equal(model.requests.length, 2);
  });
});

// The guide of the offline test's community, and what the offline model must quote from it.
const GUIDE_URL = "https://docs.example.org/browser-docs/guide.html";
const GUIDE = `# Browser docs guide

This guide is the documentation of the browser test's community.

## What is a widget?

A widget is a small chat window that a community embeds on its own website. It talks to this
server and shows the answers of the assistant.

## How are sources shown?

Every answer that uses the documentation lists its sources under the reply. Each marker in
the text links to the page it came from.
`;

describe("the offline demo answers from the documentation, with citations, in Chromium", { skip: chromiumMissing ? "Chromium is absent" : false }, () => {
  const ADMIN = "admin-key-for-the-test";
  let tmp;
  let server;
  let browser;
  let page;

  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "assistant-docs-"));
    const dir = path.join(tmp, "communities", "browser-docs");
    fs.mkdirSync(path.join(dir, "docs"), { recursive: true });
    fs.writeFileSync(path.join(dir, "docs", "guide.md"), GUIDE);
    fs.writeFileSync(
      path.join(dir, "config.yaml"),
      [
        "id: browser-docs",
        "name: Browser Docs",
        "description: The community of the browser test of the offline model's cited answers.",
        "documentation:",
        "  - title: Browser docs guide",
        `    url: ${GUIDE_URL}`,
        "    source_path: docs/guide.md",
        "    preload: true",
        "widget:",
        "  title: Browser Docs Assistant",
        "",
      ].join("\n"),
    );
    const bin = process.env.ASSISTANT_BIN || buildBinary(tmp);
    server = await startServer(bin, path.join(tmp, "communities"), null, ["--data-dir", path.join(tmp, "data"), "--admin-key", ADMIN]);
    // The guide is read and indexed in the background: wait until its sections are searchable.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await fetch(`${server.url}health/communities`, { headers: { "X-API-Key": ADMIN } });
      const docs = r.ok ? (await r.json())["browser-docs"]?.docs : null;
      if (docs && docs.store && docs.documents.every((d) => d.sections > 0)) break;
      if (Date.now() > deadline) throw new Error(`the guide was not indexed: ${JSON.stringify(docs)}\n${server.log.join("")}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({ executablePath: chromiumPath, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] });
    page = await (await browser.newContext({ viewport: { width: 1000, height: 900 } })).newPage();
    page.setDefaultTimeout(STEP_MS);
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) {
      server.proc.kill("SIGTERM");
      fs.writeFileSync(path.join(artifacts, "citations-offline-server.log"), server.log.join(""));
    }
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test("a question is answered with quoted passages, their markers linked and listed", async () => {
    await page.goto(`${server.url}browser-docs/demo/`);
    await page.waitForFunction(() => !document.getElementById("send").disabled);
    await page.fill("#input", "How are sources shown in an answer?");
    await page.click("#send");
    await page.waitForFunction(() => !document.getElementById("send").disabled);
    const reply = page.locator(".msg.assistant").last();
    const text = await reply.locator(".text").innerText();
    assert.match(text, /^I am the offline demo model/);
    assert.match(text, /Every answer that uses the documentation lists its sources under the reply\. Each marker in the text links to the page it came from\.\[1\]/);
    const markers = await reply.locator('a[data-role="cite"]').evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute("href")]));
    assert.ok(markers.length >= 1, text);
    assert.equal(markers[0][0], "[1]");
    assert.ok(markers[0][1].startsWith(GUIDE_URL + "#"), markers[0][1]);
    const sources = await reply.locator('[data-role="source"] a').evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute("href")]));
    assert.equal(sources.length, new Set(markers.map((m) => m[1])).size);
    assert.deepEqual(sources[0], ["Browser docs guide > How are sources shown?", markers[0][1]]);
    await page.screenshot({ path: path.join(artifacts, "demo-offline-citations.png"), fullPage: true });
  });
});

// fakeAnthropic serves POST /v1/messages as the Messages API streams it: the n-th request gets
// replies[n] (the last one again after that), each cited block's citations_delta events
// before its text.
function fakeAnthropic(replies) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/messages") {
        res.statusCode = 404;
        return res.end();
      }
      requests.push(JSON.parse(body));
      const blocks = replies[Math.min(requests.length - 1, replies.length - 1)];
      res.setHeader("Content-Type", "text/event-stream");
      const send = (event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      send("message_start", {
        type: "message_start",
        message: { id: `msg_${requests.length}`, type: "message", role: "assistant", model: "claude-test", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } },
      });
      blocks.forEach((b, index) => {
        send("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "", citations: [] } });
        for (const [src, cited] of b.cites || []) {
          send("content_block_delta", {
            type: "content_block_delta",
            index,
            delta: { type: "citations_delta", citation: { type: "search_result_location", source: src.source, title: src.title, cited_text: cited, search_result_index: 0, start_block_index: 0, end_block_index: 1 } },
          });
        }
        send("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: b.text } });
        send("content_block_stop", { type: "content_block_stop", index });
      });
      send("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 20 } });
      send("message_stop", { type: "message_stop" });
      res.end();
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, requests, url: `http://127.0.0.1:${server.address().port}` })));
}

// freePort is a loopback port nothing listens on now: the server's own origin must be in
// --cors-origins before it starts, for its chat to spend the (fake) platform key.
function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function buildBinary(dir) {
  const bin = path.join(dir, "assistant");
  execFileSync("go", ["build", "-o", bin, "./cmd/assistant"], { cwd: repo, stdio: "inherit" });
  return bin;
}

// startServer runs assistant serve for communities, with the fake model at modelURL as the
// platform's Anthropic API (null: no key anywhere, so the offline model answers).
async function startServer(bin, communities, modelURL, extra = []) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (/^(ANTHROPIC|OPENAI|OPENROUTER)_|^ASSISTANT_|^OSA_|^DATA_DIR$/.test(k)) delete env[k];
  if (modelURL) {
    env.ANTHROPIC_API_KEY = "sk-ant-fake";
    env.ANTHROPIC_BASE_URL = modelURL;
  }
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const args = ["serve", "--addr", `127.0.0.1:${port}`, "--communities", communities, "--cors-origins", origin,
    "--rate-limits", "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0", "--log-format", "text", ...extra];
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
      resolve({ proc, url: line.slice(i).replace(/\/?$/, "/"), log });
    });
  });
}
