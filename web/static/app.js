// The reference chat page: GET /{c} for the config, POST /{c}/chat and /{c}/chat/resume
// streamed (api.md §5, §6, §7), the permission gate, a Pyodide runtime in a Web Worker
// (worker.js), and the reader's attached files (POST and DELETE /{c}/sessions/{id}/files), which
// the worker writes to /data before each run. Every URL is computed from this page's own
// location, so the page works under any mount prefix: it is served at <api>/<community>/demo/.

import {
  AttachedFiles,
  Citations,
  DATA_DIR,
  FullOutputStore,
  KIB,
  TEXTS,
  acceptOf,
  answerFullOutput,
  chars,
  citationParts,
  clipCaptured,
  cutText,
  formatBytes,
  newSessionId,
  safeHref,
  toolResult,
  uploadsOf,
} from "./lib.mjs";

const BOOT_TIMEOUT_MS = 120_000;
const CONFIG_TIMEOUT_MS = 5_000;
const UPLOAD_TIMEOUT_MS = 120_000;
const SILENCE_MS = 60_000;
const SERVER_TOOL_SILENCE_MS = 120_000;

const server = JSON.parse(document.getElementById("demo-config").textContent);
const community = server.community;
// The server's caps (its limits package): a result's (api.md §6.4), the browser runs one reply
// may chain (§6.7), the full output store's (§6.6). A community's own limits may only be lower.
const caps = server.limits;
const apiEndpoint = new URL("../../", location.href).href.replace(/\/$/, "");
const apiURL = (path) => `${apiEndpoint}/${community}${path}`;

const el = {
  runtime: document.getElementById("runtime"),
  status: document.getElementById("runtime-status"),
  steps: document.getElementById("boot-steps"),
  banner: document.getElementById("banner"),
  messages: document.getElementById("messages"),
  form: document.getElementById("composer"),
  input: document.getElementById("input"),
  send: document.getElementById("send"),
  newChat: document.getElementById("new-chat"),
  title: document.getElementById("title"),
  uploads: document.getElementById("uploads"),
  fileInput: document.getElementById("file-input"),
  fileList: document.getElementById("file-list"),
  uploadsHint: document.getElementById("uploads-hint"),
  uploadsError: document.getElementById("uploads-error"),
};

const state = {
  config: null,
  sessionId: null,
  busy: false,
  answering: false,
  autoRun: false,
  pythonTools: [], // [{name, runtime, requires_permission}] this page can run
  declared: [], // what /chat and /chat/resume declare: set once the runtime is ready
  limits: null,
  runtime: null,
  bootOnFirstMessage: false,
  uploads: null, // the effective runtime.python.uploads when enabled
  uploading: false,
};

// The session's attached files and the bytes this page uploaded (what the worker writes).
const attached = new AttachedFiles();

const store = new FullOutputStore({ runs: caps.full_output_runs, totalChars: caps.full_output_total_chars });

// ---------------------------------------------------------------- small DOM helpers

function h(tag, attrs = {}, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") n.className = v;
    else if (k === "text") n.textContent = v;
    else if (k.startsWith("data-")) n.setAttribute(k, v);
    else n[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) n.append(c);
  return n;
}

function showBanner(text) {
  el.banner.textContent = text;
  el.banner.hidden = false;
}

function scrollDown() {
  window.scrollTo(0, document.body.scrollHeight);
}

// renderText writes text as paragraphs and fenced code blocks, never as HTML. With a reply's
// citations, each marker of a cited source ("[2]") is a link to it (knowledge.md §5).
function renderText(node, text, citations) {
  node.replaceChildren();
  const fence = /```[^\n`]*\n([\s\S]*?)```/g;
  let last = 0;
  const para = (s) => {
    if (!s.trim()) return;
    s = s.replace(/^\n+|\n+$/g, "");
    if (!citations) return node.append(h("p", { text: s }));
    const p = h("p");
    for (const part of citationParts(s, citations)) p.append(part.text !== undefined ? part.text : markerLink(part));
    node.append(p);
  };
  for (let m; (m = fence.exec(text)); ) {
    para(text.slice(last, m.index));
    node.append(h("pre", {}, h("code", { text: m[1] })));
    last = fence.lastIndex;
  }
  para(text.slice(last));
}

// markerLink is a citation marker: a link to its source, or plain text when the source cannot
// be a link.
function markerLink(part) {
  const attrs = { class: "cite", "data-role": "cite", "data-marker": String(part.marker), text: `[${part.marker}]`, title: part.title || part.source };
  if (!part.href) return h("span", attrs);
  return h("a", { ...attrs, href: part.href, target: "_blank", rel: "noopener noreferrer" });
}

// ---------------------------------------------------------------- the reply bubble

class Reply {
  constructor() {
    this.node = h("div", { class: "msg assistant", "data-role": "assistant" });
    el.messages.append(this.node);
    this.runs = []; // [{node, text}], one per run of the reply (a browser run starts the next)
    // The reply's sources, numbered across its runs, listed under it.
    this.citations = new Citations();
    this.sourceList = h("ol", { class: "source-list" });
    this.sources = h("div", { class: "sources", "data-role": "sources" }, h("p", { class: "sources-title", text: "Sources" }), this.sourceList);
    this.newRun();
  }
  newRun() {
    this.text = "";
    this.textNode = h("div", { class: "text" });
    this.loading = h("p", { class: "note", text: "…" });
    this.node.append(this.textNode, this.loading);
    this.runs.push({ node: this.textNode, text: "" });
  }
  render() {
    this.runs.at(-1).text = this.text;
    renderText(this.textNode, this.text, this.citations);
  }
  append(chunk) {
    this.text += chunk;
    if (this.text.trim()) this.loading.remove();
    this.render();
    scrollDown();
  }
  setText(text) {
    this.text = text || "";
    this.loading.remove();
    this.render();
  }
  // cite takes a citation event: a source cited for the first time, before its marker.
  cite(ev) {
    if (this.citations.add(ev)) this.renderSources();
  }
  // setCitations takes the whole reply's list (done, tool_request, a JSON answer): every run's
  // markers are links again and the list is complete.
  setCitations(list) {
    this.citations.addAll(list);
    for (const run of this.runs) renderText(run.node, run.text, this.citations);
    this.renderSources();
  }
  renderSources() {
    const items = this.citations.list().map((c) => {
      const label = c.title || c.source || `Source ${c.marker}`;
      const href = safeHref(c.source);
      const li = h("li", { value: c.marker, "data-marker": String(c.marker), "data-role": "source" });
      li.append(href ? h("a", { href, target: "_blank", rel: "noopener noreferrer", text: label }) : h("span", { text: label }));
      if (c.cited_text) li.append(" ", h("q", { class: "cited", text: cutText(c.cited_text, 300) }));
      return li;
    });
    this.sourceList.replaceChildren(...items);
    if (items.length) this.node.append(this.sources); // stays last, under the reply
  }
  note(text) {
    this.loading.remove();
    this.node.append(h("p", { class: "note", text }));
  }
  warning(text) {
    this.loading.remove();
    this.node.append(h("p", { class: "warning", "data-role": "warning", text }));
  }
  error(text, ref) {
    this.loading.remove();
    this.node.append(h("p", { class: "error", "data-role": "error", text: `[Error: ${text}]` }));
    showBanner(ref ? `${text} (reference ${ref})` : text);
  }
  finish() {
    this.loading.remove();
  }
}

// ---------------------------------------------------------------- the permission gate and run panel

class ToolPanel {
  constructor(reply, tool, description, code) {
    this.node = h("div", { class: "tool", "data-role": "tool", "data-tool": tool, "data-status": "pending" });
    this.node.append(
      h("h3", { text: `The assistant wants to run ${tool} in your browser` }),
      h("p", { class: "description", "data-role": "description", text: description || "(no description given)" }),
      h("pre", { "data-role": "code" }, h("code", { text: code })),
    );
    this.actions = h("div", { class: "actions" });
    this.node.append(this.actions);
    reply.loading.remove();
    reply.node.append(this.node);
    scrollDown();
  }
  ask() {
    return new Promise((resolve) => {
      const run = h("button", { type: "button", text: "Run", "data-action": "run" });
      const deny = h("button", { type: "button", class: "danger", text: "Deny", "data-action": "deny" });
      const always = h("input", { type: "checkbox", "data-action": "auto-run" });
      const label = h("label", {}, always, " Run without asking until I reload");
      run.onclick = () => {
        if (always.checked) state.autoRun = true;
        resolve("run");
      };
      deny.onclick = () => resolve("deny");
      this.actions.replaceChildren(run, deny, label);
      this.node.setAttribute("data-status", "asking");
      run.focus();
    });
  }
  running(onStop) {
    const stop = h("button", { type: "button", class: "danger", text: "Stop", "data-action": "stop" });
    stop.onclick = onStop;
    this.actions.replaceChildren(h("span", { class: "note", text: "Running… " }), stop);
    this.node.setAttribute("data-status", "running");
  }
  waiting(text) {
    this.actions.replaceChildren(h("span", { class: "note", text }));
  }
  files(files) {
    if (!files.length) return;
    const list = h("ul", { class: "files", "data-role": "files" });
    for (const f of files) {
      const bytes = Uint8Array.from(atob(f.data_base64), (c) => c.charCodeAt(0));
      const url = URL.createObjectURL(new Blob([bytes], { type: f.kind === "script" ? "text/x-python" : "application/octet-stream" }));
      list.append(h("li", {}, h("a", { href: url, download: f.name.replaceAll("/", "_"), text: f.name }), ` (${bytes.length} bytes)`));
    }
    this.node.append(h("p", { class: "stream-label", text: "files the code saved" }), list);
  }
  show(result, words) {
    this.actions.replaceChildren();
    this.node.setAttribute("data-status", result.status);
    this.node.append(h("p", { class: "outcome", "data-role": "outcome", text: words }));
    const stream = (name, text) => {
      if (!text) return;
      this.node.append(h("p", { class: "stream-label", text: name }), h("pre", { "data-role": name }, h("code", { text })));
    };
    stream("stdout", result.stdout);
    stream("stderr", result.stderr);
    for (const img of result.images) {
      this.node.append(h("img", { src: `data:${img.mime};base64,${img.data_base64}`, width: img.width, height: img.height, alt: "A figure the code drew" }));
    }
    scrollDown();
  }
}

// ---------------------------------------------------------------- the runtime (a worker per boot)

class Runtime {
  constructor(settings, limits) {
    this.settings = settings;
    this.limits = limits;
    this.worker = null;
    this.ready = null; // a promise per boot
    this.pending = null; // the run in progress: {id, resolve, timer}
    this.seq = 0;
    this.everReady = false;
    this.dataSent = -1; // the attached files' version this worker holds
  }

  start() {
    this.stopWorker();
    let worker;
    try {
      worker = new Worker(new URL("worker.js", location.href), { type: "module", name: "osa-runtime" });
    } catch (e) {
      const msg = `the runtime's worker could not be created (${e.message}); this page's Content-Security-Policy must allow worker-src 'self' blob:.`;
      bootFailed(msg);
      this.ready = Promise.reject(new Error(msg));
      this.ready.catch(() => {});
      return this.ready;
    }
    this.worker = worker;
    this.dataSent = -1;
    setRuntime("booting", "Starting Python…");
    el.steps.replaceChildren();
    this.ready = new Promise((resolve, reject) => {
      const deadline = setTimeout(() => {
        if (this.worker !== worker) return;
        this.stopWorker();
        const msg =
          `Python did not start within ${BOOT_TIMEOUT_MS / 1000} s. If this page is embedded in another site, ` +
          "that site's Content-Security-Policy must allow script-src 'wasm-unsafe-eval' and worker-src blob:.";
        bootFailed(msg);
        reject(new Error(msg));
      }, BOOT_TIMEOUT_MS);
      worker.onmessage = (ev) => {
        const m = ev.data;
        if (m.type === "progress") {
          bootStep(m);
        } else if (m.type === "ready") {
          clearTimeout(deadline);
          this.everReady = true;
          bootReady(m.info);
          resolve(m.info);
        } else if (m.type === "failed") {
          clearTimeout(deadline);
          this.stopWorker();
          bootFailed(m.message);
          reject(new Error(m.message));
        } else if (m.type === "result") {
          this.finishRun(m.id, m.error ? { kind: "error", message: m.error } : { kind: "result", result: m.result });
        }
      };
      worker.onerror = (ev) => {
        ev.preventDefault();
        const text = ev.message || "the runtime's worker failed";
        if (this.pending) {
          this.finishRun(this.pending.id, /memory/i.test(text) ? { kind: "oom" } : { kind: "error", message: text });
          this.restart();
          return;
        }
        clearTimeout(deadline);
        this.stopWorker();
        bootFailed(text);
        reject(new Error(text));
      };
    });
    this.ready.catch(() => {});
    this.worker.postMessage({ type: "boot", ...this.settings });
    return this.ready;
  }

  stopWorker() {
    if (this.worker) {
      this.worker.terminate();
      this.worker = null;
    }
  }

  restart() {
    this.start();
  }

  // run runs code; it resolves to {kind: "result"|"timeout"|"cancelled"|"oom"|"error", ...}.
  run(code) {
    return new Promise((resolve) => {
      const id = ++this.seq;
      const timer = setTimeout(() => {
        this.finishRun(id, { kind: "timeout" });
        this.restart();
      }, this.limits.exec_seconds * 1000);
      this.pending = { id, resolve, timer };
      const msg = { type: "run", id, code, images: this.limits.images, image_px: this.limits.image_px };
      // The attached files go to the worker when they changed since it last had them (a new
      // worker has none); it writes them to /data before this run and every later one.
      if (state.uploads && this.dataSent !== attached.version) {
        msg.data = attached.data();
        this.dataSent = attached.version;
      }
      this.worker.postMessage(msg);
    });
  }

  cancel() {
    if (!this.pending) return;
    this.finishRun(this.pending.id, { kind: "cancelled" });
    this.restart();
  }

  finishRun(id, outcome) {
    const p = this.pending;
    if (!p || p.id !== id) return;
    clearTimeout(p.timer);
    this.pending = null;
    p.resolve(outcome);
  }
}

function setRuntime(stateName, text) {
  el.runtime.setAttribute("data-state", stateName);
  el.status.textContent = text;
}

function bootStep(m) {
  const items = el.steps.children;
  for (const li of items) if (li.getAttribute("data-state") === "current") li.setAttribute("data-state", "done");
  el.steps.append(h("li", { text: m.text, "data-state": "current", "data-phase": m.phase }));
  setRuntime("booting", `Starting Python: step ${m.step} of ${m.steps}, ${m.text.charAt(0).toLowerCase()}${m.text.slice(1)}`);
}

function bootReady(info) {
  for (const li of el.steps.children) li.setAttribute("data-state", "done");
  state.declared = [...state.pythonTools.map((t) => t.name), "get_full_output"];
  const pkgs = info.packages.length ? `; packages: ${info.packages.join(", ")}` : "";
  setRuntime("ready", `Python is ready (Pyodide ${info.pyodide}${pkgs}).`);
  if (info.skipped.length) {
    el.steps.append(h("li", { text: `Overlay entries not used because the distribution has them: ${info.skipped.join(", ")}` }));
  }
}

function bootFailed(message) {
  for (const li of el.steps.children) if (li.getAttribute("data-state") === "current") li.setAttribute("data-state", "failed");
  setRuntime("failed", `Python could not start: ${message}`);
  // A page whose runtime never started does not offer code execution.
  if (!state.runtime || !state.runtime.everReady) state.declared = [];
}

// ---------------------------------------------------------------- answering a tool_request

// runResult is a ClientToolResult under the server's caps.
function runResult(callId, fields) {
  return toolResult(callId, fields, caps);
}

function errorResult(callId, stderr) {
  return runResult(callId, { status: "error", stderr });
}

async function answer(req, reply) {
  const callId = req.call_id;
  if (typeof callId !== "string" || callId.length < 1 || chars(callId).length > caps.call_id_chars) {
    throw new Error("the assistant asked for a browser task without a valid call id");
  }
  if (state.answering) return errorResult(callId, TEXTS.busy);
  state.answering = true;
  try {
    return await answerCall(callId, req, reply);
  } finally {
    state.answering = false;
  }
}

async function answerCall(callId, req, reply) {
  const args = req.args && typeof req.args === "object" ? req.args : {};
  if (req.tool === "get_full_output") {
    const r = answerFullOutput(store, callId, args, state.limits, caps);
    reply.note(`Answered get_full_output from this page: ${r.summary || r.stderr}`);
    return r;
  }
  const tool = state.pythonTools.find((t) => t.name === req.tool);
  if (!tool || !state.runtime) return errorResult(callId, TEXTS.unknownTool(String(req.tool)));
  const code = typeof args.code === "string" ? args.code : "";
  if (!code.trim()) return errorResult(callId, TEXTS.noCode);

  let panel;
  try {
    panel = new ToolPanel(reply, tool.name, typeof args.description === "string" ? args.description : "", code);
  } catch (e) {
    return errorResult(callId, TEXTS.gateFailed(e.message));
  }
  const ask = !(req.requires_permission === false && tool.requires_permission === false) && !state.autoRun;
  if (ask && (await panel.ask()) === "deny") {
    const r = runResult(callId, { status: "denied", stderr: TEXTS.denied, summary: TEXTS.deniedSummary });
    panel.show(r, "Not run: you declined.");
    return r;
  }

  const rt = state.runtime;
  panel.waiting("Waiting for Python to start…");
  try {
    await rt.ready;
  } catch (e) {
    const r = errorResult(callId, TEXTS.cannotRun(e.message));
    panel.show(r, "Not run: Python could not start.");
    return r;
  }
  panel.running(() => rt.cancel());
  const started = performance.now();
  const out = await rt.run(code);
  const elapsed = performance.now() - started;
  const limits = state.limits;
  let r;
  let words;
  switch (out.kind) {
    case "timeout":
      r = runResult(callId, {
        status: "timeout",
        stderr: TEXTS.timeout(limits.exec_seconds),
        summary: `Stopped: the code ran longer than ${limits.exec_seconds}s, the limit for one run, so the runtime was restarted and nothing it printed is kept. Variables defined in earlier runs are gone.`,
        elapsed_ms: elapsed,
      });
      words = `Stopped after ${limits.exec_seconds} s (time limit); Python is restarting.`;
      break;
    case "cancelled":
      r = runResult(callId, {
        status: "cancelled",
        stderr: TEXTS.cancelled,
        summary: "Stopped by the reader before it finished; nothing it printed is kept, and the runtime was restarted.",
        elapsed_ms: elapsed,
      });
      words = "Stopped by you; Python is restarting.";
      break;
    case "oom":
      r = runResult(callId, {
        status: "oom",
        stderr: TEXTS.oom,
        summary: "The runtime ran out of memory and was restarted; variables defined in earlier runs are gone.",
        elapsed_ms: elapsed,
      });
      words = "Out of memory; Python is restarting.";
      break;
    case "error":
      r = runResult(callId, {
        status: "error",
        stderr: TEXTS.cannotRun(out.message),
        summary: `Not run: the runtime failed (${out.message.slice(0, 300)}).`,
        elapsed_ms: elapsed,
      });
      words = "The runtime failed.";
      break;
    default:
      r = fromRun(callId, out.result, elapsed);
      panel.files(out.result.files);
      words = r.status === "ok" ? `Ran in ${elapsed < 1000 ? `${Math.round(elapsed)} ms` : `${(elapsed / 1000).toFixed(1)} s`}.` : "The code raised an error.";
  }
  panel.show(r, words);
  return r;
}

// fromRun turns the runtime's capture into a ClientToolResult and keeps the full output.
function fromRun(callId, py, elapsed) {
  const limits = state.limits;
  const full = (c) => clipCaptured(c.head, c.tail, c.total, caps.captured_chars);
  store.put(callId, {
    stdout: full(py.stdout),
    stderr: full(py.stderr),
    traceback: chars(py.traceback).slice(0, caps.captured_chars).join(""),
    images: py.images,
  });
  const images = py.images.slice(0, limits.images);
  const stdout = clipCaptured(py.stdout.head, py.stdout.tail, py.stdout.total, limits.stdout_chars);
  const stderr = clipCaptured(py.stderr.head, py.stderr.tail, py.stderr.total, limits.stderr_chars);
  const parts = [];
  parts.push(py.status === "ok" ? "Ran without an error." : `The code raised ${py.error}. The traceback is at the end of stderr.`);
  const count = (name, c, limit) => {
    if (c.total === 0) return `${name}: empty.`;
    if (c.total <= limit) return `${name}: ${c.total} characters.`;
    return `${name}: ${c.total} characters, clipped to ${limit} (the middle is left out; get_full_output with call_id "${callId}" and stream "${name}" pages through all of it).`;
  };
  parts.push(count("stdout", py.stdout, limits.stdout_chars));
  parts.push(count("stderr", py.stderr, limits.stderr_chars));
  if (py.figures_drawn === 0) {
    parts.push("No figures.");
  } else {
    let f = `${py.figures_drawn} figure(s) drawn, ${images.length} attached`;
    if (py.figures_too_big) f += `, ${py.figures_too_big} too large to attach`;
    if (py.figures_drawn > limits.images) f += `; at most ${limits.images} are attached per run`;
    parts.push(f + ".");
  }
  const artifacts = py.files.map((f) => f.name);
  if (artifacts.length) parts.push(`Saved ${artifacts.length} file(s) for the reader: ${artifacts.join(", ")}.`);
  return runResult(callId, { status: py.status, stdout, stderr, summary: parts.join(" "), images, artifacts, elapsed_ms: elapsed });
}

// ---------------------------------------------------------------- streaming /chat and /chat/resume

async function errorText(resp) {
  let body = null;
  try {
    body = await resp.json();
  } catch {
    // not JSON
  }
  if (body && typeof body.detail === "string") return body.detail.slice(0, 500);
  if (body && typeof body.error === "string") return body.details ? `${body.error}: ${body.details}` : body.error;
  return `Request failed (${resp.status})`;
}

// stream posts body and renders the SSE reply into reply. It returns {toolRequest} when the
// run ended by asking the page to run a tool.
async function stream(url, body, reply) {
  const ctrl = new AbortController();
  let silence = SILENCE_MS;
  let timer = setTimeout(() => ctrl.abort(), silence);
  const alive = () => {
    clearTimeout(timer);
    timer = setTimeout(() => ctrl.abort(), silence);
  };
  const outcome = { toolRequest: null, ended: false };
  try {
    let resp;
    try {
      resp = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
        signal: ctrl.signal,
        credentials: "omit",
      });
    } catch (e) {
      throw new Error(ctrl.signal.aborted ? "the server did not answer in time" : `the server could not be reached (${e.message})`);
    }
    if (!resp.ok) throw new Error(await errorText(resp));
    const type = resp.headers.get("Content-Type") || "";
    if (!type.startsWith("text/event-stream")) {
      const data = await resp.json();
      if (typeof data.session_id === "string") state.sessionId = data.session_id;
      reply.setCitations(data.citations);
      reply.setText(data.message && data.message.content);
      outcome.ended = true;
      return outcome;
    }
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (e) {
        throw new Error(ctrl.signal.aborted ? `no answer for ${silence / 1000} s, so the page stopped waiting` : `the reply was cut off (${e.message})`);
      }
      if (chunk.done) break;
      alive();
      buf += decoder.decode(chunk.value, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (!line.startsWith("data: ")) continue;
        let ev;
        try {
          ev = JSON.parse(line.slice(6));
        } catch (e) {
          console.warn("skipping an event that is not JSON", e);
          continue;
        }
        const s = handleEvent(ev, reply, outcome);
        if (s === "server_tool") silence = SERVER_TOOL_SILENCE_MS;
        if (s === "server_tool_done") silence = SILENCE_MS;
      }
    }
  } finally {
    clearTimeout(timer);
  }
  if (!outcome.ended) reply.error("the reply stopped before it finished: the connection closed early.");
  return outcome;
}

function handleEvent(ev, reply, outcome) {
  switch (ev.event) {
    case "session":
      if (typeof ev.session_id === "string") state.sessionId = ev.session_id;
      return;
    case "content":
      if (typeof ev.content === "string") reply.append(ev.content);
      return;
    case "citation":
      reply.cite(ev);
      return;
    case "tool_call":
      reply.note(`Using ${ev.name}…`);
      return;
    case "tool_start":
      reply.note(`Running ${ev.name} on the server…`);
      return "server_tool";
    case "tool_end":
      return "server_tool_done";
    case "warning":
      reply.warning(ev.message);
      return;
    case "done":
      if (typeof ev.session_id === "string") state.sessionId = ev.session_id;
      reply.setCitations(ev.citations);
      reply.setText(ev.content);
      outcome.ended = true;
      return;
    case "tool_request":
      if (typeof ev.session_id === "string") state.sessionId = ev.session_id;
      reply.setCitations(ev.citations);
      reply.setText(ev.content);
      outcome.toolRequest = ev;
      outcome.ended = true;
      return;
    case "error":
      reply.error(ev.message || "the assistant failed", ev.error_id);
      outcome.ended = true;
      return;
    default:
      console.warn("unknown event", ev.event);
  }
}

function pageContext() {
  if (chars(location.href).length > caps.page_url_chars || !/^https?:/.test(location.protocol)) return undefined;
  return { url: location.href, title: document.title || null };
}

// send runs one reply: /chat, then as many tool_request → /chat/resume rounds as it takes.
async function send(text) {
  state.busy = true;
  setComposer();
  el.banner.hidden = true;
  const mine = h("div", { class: "msg user", "data-role": "user" });
  renderText(mine, text);
  el.messages.append(mine);
  const reply = new Reply();
  try {
    if (state.bootOnFirstMessage) {
      state.bootOnFirstMessage = false;
      reply.loading.textContent = "Starting Python first…";
      await state.runtime.start().catch(() => {});
    }
    const body = { message: text, stream: true };
    if (state.sessionId) body.session_id = state.sessionId;
    if (state.declared.length) body.client_tools = state.declared;
    const pc = pageContext();
    if (pc) body.page_context = pc;
    let outcome = await stream(apiURL("/chat"), body, reply);
    let runs = 0;
    while (outcome.toolRequest) {
      runs++;
      if (runs > caps.runs_per_reply) {
        reply.error(`this reply stopped: it ran code ${caps.runs_per_reply} times, the most one reply may`);
        break;
      }
      const req = outcome.toolRequest;
      const result = await answer(req, reply);
      reply.newRun();
      const resume = { session_id: req.session_id || state.sessionId, result, client_tools: state.declared };
      outcome = await stream(apiURL("/chat/resume"), resume, reply);
    }
  } catch (e) {
    reply.error(e.message);
  } finally {
    reply.finish();
    state.busy = false;
    setComposer();
  }
}

function setComposer() {
  const usable = state.config !== null && !state.busy;
  el.input.disabled = !usable;
  el.send.disabled = !usable;
  if (usable) el.input.focus();
}

// ---------------------------------------------------------------- attached files

const filesURL = (sessionId, name) =>
  apiURL(`/sessions/${encodeURIComponent(sessionId)}/files${name === undefined ? "" : `/${encodeURIComponent(name)}`}`);

function setUpUploads(cfg) {
  const u = uploadsOf(cfg);
  state.uploads = u;
  if (!u) return;
  if (u.types.length) el.fileInput.accept = acceptOf(u.types);
  const bounds = [];
  if (u.max_file_mb) bounds.push(`${u.max_file_mb} MB a file`);
  if (u.max_files) bounds.push(`${u.max_files} files`);
  if (u.max_session_mb) bounds.push(`${u.max_session_mb} MB in all`);
  const parts = [];
  if (u.types.length) parts.push(`Types: ${u.types.join(", ")}.`);
  if (bounds.length) parts.push(`At most ${bounds.join(", ")}.`);
  parts.push('Names may use letters, digits, ".", "_" and "-".');
  if (state.runtime) parts.push(`Code run in this browser reads them at ${DATA_DIR}/<name>.`);
  el.uploadsHint.textContent = parts.join(" ");
  el.fileInput.addEventListener("change", () => {
    const files = [...el.fileInput.files];
    el.fileInput.value = "";
    if (files.length) upload(files);
  });
  el.uploads.hidden = false;
  renderFiles();
}

function uploadsProblem(text) {
  el.uploadsError.textContent = text;
  el.uploadsError.hidden = !text;
}

// renderFiles lists the session's files; names are the server's, written as text.
function renderFiles() {
  el.fileList.replaceChildren();
  for (const f of attached.list) {
    const remove = h("button", { type: "button", class: "quiet", text: "Remove", "data-action": "remove-file" });
    remove.setAttribute("aria-label", `Remove ${f.name}`);
    remove.disabled = state.uploading;
    remove.onclick = () => removeFile(f.name);
    el.fileList.append(
      h(
        "li",
        { "data-role": "attached-file", "data-name": f.name },
        h("span", { class: "file-name", text: f.name }),
        h("span", { class: "file-size", text: `(${formatBytes(f.bytes)})` }),
        attached.has(f.name) ? null : h("span", { class: "file-note", text: "not in this browser: only server runs read it" }),
        remove,
      ),
    );
  }
  el.fileInput.disabled = state.uploading;
  el.uploads.setAttribute("data-state", state.uploading ? "busy" : "idle");
}

// filesRequest sends one request about the session's files and returns its JSON body; a
// refusal throws with the server's message.
async function filesRequest(url, init) {
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), UPLOAD_TIMEOUT_MS);
  try {
    let resp;
    try {
      resp = await fetch(url, { ...init, signal: ctrl.signal, credentials: "omit" });
    } catch (e) {
      throw new Error(ctrl.signal.aborted ? "the server did not answer in time" : `the server could not be reached (${e.message})`);
    }
    if (!resp.ok) throw new Error(await errorText(resp));
    return await resp.json().catch(() => null);
  } finally {
    clearTimeout(timer);
  }
}

// upload posts the picked files in one request: the server keeps all of them or none. Before
// the first message there is no session yet, so the page starts one under an id of its own (the
// API creates a session under a client-chosen id), and /chat then names it.
async function upload(files) {
  uploadsProblem("");
  const u = state.uploads;
  // What is surely too big is not sent at all; every other rule is the server's.
  const capBytes = u.max_file_mb ? u.max_file_mb * KIB * KIB : Infinity;
  const big = files.find((f) => f.size > capBytes);
  if (big) {
    uploadsProblem(`${big.name} is ${formatBytes(big.size)}, over the ${u.max_file_mb} MB a file may be; nothing was attached.`);
    return;
  }
  if (!state.sessionId) state.sessionId = newSessionId();
  const sessionId = state.sessionId;
  state.uploading = true;
  renderFiles();
  try {
    const form = new FormData();
    const sent = new Map();
    for (const f of files) {
      const bytes = new Uint8Array(await f.arrayBuffer());
      sent.set(f.name, bytes);
      form.append("file", new Blob([bytes], { type: f.type || "application/octet-stream" }), f.name);
    }
    const body = await filesRequest(filesURL(sessionId), { method: "POST", body: form });
    if (state.sessionId !== sessionId) return; // a new conversation began meanwhile
    if (!body || !Array.isArray(body.files)) throw new Error("the server's answer held no list of files");
    attached.setList(body.files, sent);
  } catch (e) {
    if (state.sessionId === sessionId) uploadsProblem(`Not attached: ${e.message}`);
  } finally {
    state.uploading = false;
    renderFiles();
  }
}

async function removeFile(name) {
  uploadsProblem("");
  const sessionId = state.sessionId;
  if (!sessionId) return;
  state.uploading = true;
  renderFiles();
  try {
    const body = await filesRequest(filesURL(sessionId, name), { method: "DELETE" });
    if (state.sessionId !== sessionId) return;
    if (body && Array.isArray(body.files)) attached.setList(body.files);
    else attached.remove(name);
  } catch (e) {
    if (state.sessionId === sessionId) uploadsProblem(`${name} was not removed: ${e.message}`);
  } finally {
    state.uploading = false;
    renderFiles();
  }
}

// ---------------------------------------------------------------- start

async function loadConfig() {
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), CONFIG_TIMEOUT_MS);
  try {
    const resp = await fetch(apiURL(""), { signal: ctrl.signal, credentials: "omit" });
    if (!resp.ok) throw new Error(`Failed to load community configuration (HTTP ${resp.status})`);
    const cfg = await resp.json();
    if (!cfg.default_model) throw new Error("The community configuration names no default model, so the chat is off.");
    return cfg;
  } catch (e) {
    throw ctrl.signal.aborted ? new Error("Failed to load community configuration (no answer within 5 s)") : e;
  } finally {
    clearTimeout(timer);
  }
}

// limitsOf is the community's runtime.python.limits, each within the server's cap, with the
// server's default where one is missing.
function limitsOf(py) {
  const l = py.limits || {};
  const def = caps.defaults;
  const within = (v, d, cap) => Math.min(Number.isInteger(v) && v > 0 ? v : d, cap);
  return {
    stdout_chars: within(l.stdout_chars, def.stdout_chars, caps.stdout_chars),
    stderr_chars: within(l.stderr_chars, def.stderr_chars, caps.stderr_chars),
    images: Math.min(Number.isInteger(l.images) && l.images >= 0 ? l.images : def.images, caps.images),
    image_px: within(l.image_px, def.image_px, caps.image_px),
    exec_seconds: Number.isInteger(l.exec_seconds) && l.exec_seconds > 0 ? l.exec_seconds : def.exec_seconds,
  };
}

function setUpRuntime(cfg) {
  const py = cfg.runtime && cfg.runtime.python;
  state.pythonTools = (cfg.client_tools || []).filter((t) => t.runtime === "python");
  if (!state.pythonTools.length || !py || !py.pyodide_version) {
    setRuntime("off", "This community does not run code in the browser, so this page is a plain chat.");
    return;
  }
  const p = server.pyodide || {};
  if (!p.index_url) {
    setRuntime("failed", `Python cannot run on this page: ${p.problem || "the server did not say where Pyodide is."}`);
    return;
  }
  state.limits = limitsOf(py);
  state.runtime = new Runtime(
    {
      indexURL: new URL(p.index_url, location.href).href,
      files: p.files,
      packagesURL: p.packages_url || null,
      runtimeURL: new URL("osa_runtime.py", location.href).href,
      wheelBase: apiURL("/runtime/"),
      python: py,
      lock: cfg.runtime_lock,
      limits: caps,
    },
    state.limits,
  );
  if (py.preload_on === "first_message") {
    state.bootOnFirstMessage = true;
    setRuntime("idle", "Python starts when you send your first message.");
  } else {
    // widget_open, and first_run too: the page declares its tools only once Python is ready.
    state.runtime.start();
  }
}

async function main() {
  el.form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = el.input.value.trim();
    if (!text || state.busy || !state.config) return;
    el.input.value = "";
    send(text);
  });
  el.input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) el.form.requestSubmit();
  });
  el.newChat.addEventListener("click", () => {
    if (state.busy || state.uploading) return;
    state.sessionId = null;
    el.messages.replaceChildren();
    el.banner.hidden = true;
    // A new session has no files: the next run finds /data empty.
    attached.reset();
    if (state.uploads) {
      uploadsProblem("");
      renderFiles();
    }
  });
  let cfg;
  try {
    cfg = await loadConfig();
  } catch (e) {
    setRuntime("failed", e.message);
    showBanner(e.message);
    return;
  }
  state.config = cfg;
  const w = cfg.widget || {};
  if (w.title) {
    el.title.textContent = w.title;
    document.title = w.title;
  }
  if (w.placeholder) el.input.placeholder = w.placeholder;
  if (w.initial_message) {
    const r = new Reply();
    r.setText(w.initial_message);
    r.finish();
  }
  setUpRuntime(cfg);
  setUpUploads(cfg);
  setComposer();
}

main();
