// Pure functions shared by the page (app.js) and the runtime (worker.js). No DOM, no network:
// the browser tests import this file directly under Node. No caps either: every cap comes from
// the server's limits package, in the page's config JSON (its "limits" object, web.PageLimits),
// and is passed in.

// ---- fetch_allow (config.md §4.4) ----

// hasDotSegment reports whether a URL as written has a "." or ".." path segment (also
// percent-encoded), before the URL parser would silently remove it.
function hasDotSegment(raw) {
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*([^?#]*)/.exec(raw);
  if (!m) return false;
  return m[1].split("/").some((seg) => {
    const s = seg.toLowerCase().replaceAll("%2e", ".");
    return s === "." || s === "..";
  });
}

function withSlash(p) {
  return p.endsWith("/") ? p : p + "/";
}

// checkUrl decides whether executed code may fetch target. It is allowed iff it parses, is
// http(s), carries no username or password, and some fetch_allow entry E (entries that do not
// parse as absolute URLs, or that have a "." or ".." path segment, are skipped) has the same
// origin and the target path, with "/" appended if missing, starts with E's path with "/"
// appended if missing. The query is ignored. Returns {ok: true, url} (the URL to fetch, without
// its fragment) or {ok: false, reason}. The server's CheckURL (sandbox/egress.go) is the same
// rule; web/testdata/fetch_allow.json holds the cases both run.
export function checkUrl(target, fetchAllow) {
  let u;
  try {
    u = new URL(String(target));
  } catch {
    return { ok: false, reason: "unparseable" };
  }
  u.hash = "";
  if (u.protocol !== "http:" && u.protocol !== "https:") return { ok: false, reason: "scheme_not_allowed" };
  if (u.username !== "" || u.password !== "") return { ok: false, reason: "credentials_in_url" };
  const path = withSlash(u.pathname);
  for (const entry of fetchAllow || []) {
    if (typeof entry !== "string" || hasDotSegment(entry)) continue;
    let e;
    try {
      e = new URL(entry);
    } catch {
      continue;
    }
    if (e.protocol !== "http:" && e.protocol !== "https:") continue;
    if (e.username !== "" || e.password !== "") continue;
    if (e.origin !== u.origin) continue;
    if (path.startsWith(withSlash(e.pathname))) return { ok: true, url: u.href };
  }
  return { ok: false, reason: "not_in_fetch_allow" };
}

// allowedText says what a runtime may fetch, in a refusal's detail (as sandbox/egress.go says it).
export function allowedText(fetchAllow) {
  return fetchAllow.length ? `this runtime may fetch only ${fetchAllow.join(", ")}` : "this runtime may fetch nothing";
}

// ---- the workspace: the files one run saves (osa.save_script, osa.save_artifact) ----

// quoteRune quotes one character as Go's %q does, so that a refusal reads the same in both
// runtimes.
function quoteRune(ch) {
  const c = ch.codePointAt(0);
  const named = { 7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 39: "\\'", 92: "\\\\" };
  if (named[c]) return `'${named[c]}'`;
  if (ch !== " " && /[\p{C}\p{Z}]/u.test(ch)) {
    if (c < 0x80) return `'\\x${c.toString(16).padStart(2, "0")}'`;
    if (c < 0x10000) return `'\\u${c.toString(16).padStart(4, "0")}'`;
    return `'\\U${c.toString(16).padStart(8, "0")}'`;
  }
  return `'${ch}'`;
}

// artifactNameProblem says what is wrong with a name given to osa.save_script or
// osa.save_artifact, or returns "" when it is fine: a relative path of 1 to maxChars characters,
// segments separated by "/", each made of ASCII letters, digits, ".", "_" and "-", none empty,
// "." or "..". The server's ArtifactNameProblem (sandbox/osa.go) is the same rule in the same
// words; web/testdata/workspace.json holds the cases both run.
export function artifactNameProblem(name, maxChars) {
  if (name === "") return "the name is empty";
  if (chars(name).length > maxChars) return `the name is longer than ${maxChars} characters`;
  if (name.startsWith("/")) return "the name must be a relative path, without a leading /";
  for (const seg of name.split("/")) {
    if (seg === "") return "the name has an empty path segment";
    if (seg === "." || seg === "..") return "the name has a . or .. path segment";
    for (const ch of seg) {
      if (!/^[A-Za-z0-9._-]$/.test(ch)) return `the name has the character ${quoteRune(ch)}; use letters, digits, '.', '_', '-' and '/'`;
    }
  }
  return "";
}

// Workspace holds the files one run saved, under the caps of limits (the page config's
// saved_files, saved_file_bytes, saved_bytes and artifact_name_chars), checked as the server's
// workspace (sandbox/osa.go) checks them. save answers {ok: true, refused: null, detail: ""} or
// {ok: false, refused: reason, detail}.
export class Workspace {
  constructor(caps) {
    this.caps = caps;
    this.clear();
  }
  clear() {
    this.files = new Map(); // name -> {kind, data}
    this.total = 0;
  }
  save(kind, name, data) {
    const caps = this.caps;
    const refuse = (refused, detail) => ({ ok: false, refused, detail });
    // The guest can reach this through its transport directly: nothing it passes is trusted.
    if (kind !== "script" && kind !== "artifact") return refuse("bad_name", "the kind of file must be script or artifact");
    if (typeof name !== "string") return refuse("bad_name", "the name must be a string");
    if (!(data instanceof Uint8Array)) return refuse("bad_name", "the file's contents must be bytes");
    const problem = artifactNameProblem(name, caps.artifact_name_chars);
    if (problem) return refuse("bad_name", problem);
    const mib = (n) => n / 2 ** 20;
    if (data.length > caps.saved_file_bytes) {
      return refuse("too_large", `the file is ${data.length} bytes, over the ${caps.saved_file_bytes}-byte (${mib(caps.saved_file_bytes)} MiB) cap per file`);
    }
    const old = this.files.get(name);
    if (!old && this.files.size >= caps.saved_files) return refuse("too_many_files", `a run may save at most ${caps.saved_files} files`);
    const total = this.total - (old ? old.data.length : 0) + data.length;
    if (total > caps.saved_bytes) {
      return refuse("workspace_full", `the files of this run would take ${total} bytes, over the ${caps.saved_bytes}-byte (${mib(caps.saved_bytes)} MiB) cap per run`);
    }
    this.total = total;
    this.files.set(name, { kind, data: data.slice() });
    return { ok: true, refused: null, detail: "" };
  }
  // take returns the saved files sorted by name, [{name, kind, data}], and empties the workspace.
  take() {
    const out = [...this.files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, f]) => ({ name, ...f }));
    this.clear();
    return out;
  }
}

// ---- output clipping, as the server clips (sandbox/output.go; web/testdata/clip.json) ----

function marker(omitted) {
  return `\n... ${omitted} characters omitted ...\n`;
}

// chars splits a string into code points, which is what the limits count.
export function chars(s) {
  return Array.from(s);
}

// clipCaptured clips captured output to at most limit characters (code points). A capture is
// the first characters (head), the characters after them (tail, possibly only the last ones)
// and the total count; when head and tail hold total characters together, they are the whole
// text. When the text is longer than limit it keeps the first 3/5 and the end around a
// "\n... N characters omitted ...\n" marker, sized so that the result never exceeds limit.
export function clipCaptured(head, tail, total, limit) {
  if (total <= limit) return head + tail;
  const h = chars(head);
  const t = chars(tail);
  const whole = h.length + t.length === total;
  const start = whole ? h.concat(t) : h;
  const end = whole ? start : t;
  const widest = marker(total).length;
  // A cap too small for the marker: the head alone.
  if (widest > limit) return start.slice(0, Math.floor((limit * 3) / 5)).join("");
  const headChars = Math.min(Math.floor((limit * 3) / 5), start.length, limit - widest);
  const keep = Math.min(limit - headChars - widest, end.length);
  const omitted = total - headChars - keep;
  return start.slice(0, headChars).join("") + marker(omitted) + (keep > 0 ? end.slice(end.length - keep).join("") : "");
}

// clip clips a whole string to at most limit characters.
export function clip(text, limit) {
  return clipCaptured(text, "", chars(text).length, limit);
}

// ---- the lock overlay (config.md §7) ----

// canonicalName is the PEP 503 name: lower case, runs of "-", "_" and "." as one "-".
export function canonicalName(name) {
  return String(name).toLowerCase().replace(/[-_.]+/g, "-");
}

// mergeLock merges the community's overlay into the distribution's lock, add-only: an overlay
// entry whose name the distribution already has is skipped (and reported), never replacing
// the stock entry. Overlay wheels are resolved against wheelBase. A stock entry whose file the
// local copy lacks (files is the copy's list; null means everything is there) points at
// packagesURL when one is given, else is reported missing. Returns {lock, skipped, missing}.
export function mergeLock(stock, overlay, { wheelBase, files, packagesURL, indexURL }) {
  const lock = { ...stock, packages: {} };
  const have = files ? new Set(files) : null;
  const missing = new Set();
  for (const [name, entry] of Object.entries(stock.packages || {})) {
    const e = { ...entry };
    if (have && !/^[a-z][a-z0-9+.-]*:/i.test(e.file_name)) {
      if (have.has(e.file_name)) {
        e.file_name = new URL(e.file_name, indexURL).href;
      } else if (packagesURL) {
        e.file_name = new URL(e.file_name, packagesURL).href;
      } else {
        missing.add(name);
      }
    }
    lock.packages[name] = e;
  }
  const skipped = [];
  for (const [name, entry] of Object.entries((overlay && overlay.packages) || {})) {
    if (Object.hasOwn(lock.packages, name) || Object.hasOwn(lock.packages, canonicalName(name))) {
      skipped.push(name);
      continue;
    }
    lock.packages[name] = { ...entry, file_name: new URL(entry.file_name, wheelBase).href };
  }
  return { lock, skipped, missing };
}

// closure lists the lock entries that loading names needs, dependencies first, and the names
// the lock does not know.
export function closure(lock, names) {
  const out = [];
  const unknown = [];
  const seen = new Set();
  const visit = (raw, top) => {
    const name = lookupName(lock, raw);
    if (name === null) {
      if (top) unknown.push(raw);
      return;
    }
    if (seen.has(name)) return;
    seen.add(name);
    for (const dep of lock.packages[name].depends || []) visit(dep, false);
    out.push(name);
  };
  for (const n of names) visit(n, true);
  return { names: out, unknown };
}

// lookupName finds the lock key for a package name, or null.
export function lookupName(lock, name) {
  if (Object.hasOwn(lock.packages, name)) return name;
  const c = canonicalName(name);
  if (Object.hasOwn(lock.packages, c)) return c;
  for (const k of Object.keys(lock.packages)) if (canonicalName(k) === c) return k;
  return null;
}

// ---- results (api.md §6.3, §6.4) ----

export const RESULT_KEYS = ["call_id", "status", "stdout", "stderr", "summary", "images", "artifacts", "elapsed_ms"];

// toolResult builds a ClientToolResult with exactly its eight keys; its summary is clipped to
// caps.summary_chars.
export function toolResult(callId, fields, caps) {
  const r = {
    call_id: callId,
    status: fields.status || "ok",
    stdout: fields.stdout || "",
    stderr: fields.stderr || "",
    summary: fields.summary || "",
    images: (fields.images || []).map((i) => ({ mime: i.mime, data_base64: i.data_base64, width: i.width, height: i.height })),
    artifacts: [...new Set(fields.artifacts || [])].sort(),
    elapsed_ms: Math.max(0, Math.round(fields.elapsed_ms || 0)),
  };
  r.summary = clip(r.summary, caps.summary_chars);
  return r;
}

export const TEXTS = {
  busy: "[runtime] another browser task is still running in this page.",
  unknownTool: (name) => `[runtime] this page cannot run a tool named "${name}".`,
  noCode: "[runtime] the call carried no code to run.",
  gateFailed: (msg) => `[runtime] the permission prompt could not be shown, so the code was not run: ${msg}`,
  denied: "[runtime] the reader declined to run this code.",
  deniedSummary:
    "Not run. The reader declined this code. Do not call it again unless they ask; answer without running code, or say what the code would have done.",
  cannotRun: (msg) => `[runtime] the code could not be run: ${msg}`,
  timeout: (n) => `[runtime] the code ran longer than ${n}s and was stopped.`,
  cancelled: "[runtime] the reader stopped this run before it finished.",
  oom: "[runtime] the Python runtime ran out of memory and was restarted. Try working on less data at a time.",
  noOutput: (id, runs) =>
    `[runtime] no output is kept for call_id "${id}" in this browser. Output stays in the tab that ran the code: it is gone after a reload, and only the last ${runs} runs are kept.`,
};

// ---- the page's store of full outputs (api.md §6.6) ----

// FullOutputStore keeps the full output of the last runs runs, at most totalChars characters
// in all (the page config's full_output_runs and full_output_total_chars).
export class FullOutputStore {
  constructor({ runs, totalChars }) {
    this.runs = runs;
    this.totalChars = totalChars;
    this.map = new Map();
  }
  size(rec) {
    return rec.stdout.length + rec.stderr.length + rec.traceback.length;
  }
  put(callId, rec) {
    this.map.delete(callId);
    this.map.set(callId, rec);
    let total = 0;
    for (const r of this.map.values()) total += this.size(r);
    while (this.map.size > this.runs || (total > this.totalChars && this.map.size > 1)) {
      const [k, r] = this.map.entries().next().value;
      this.map.delete(k);
      total -= this.size(r);
    }
  }
  get(callId) {
    const r = this.map.get(callId);
    if (r) {
      this.map.delete(callId);
      this.map.set(callId, r);
    }
    return r;
  }
}

// answerFullOutput answers get_full_output from the store, under the run limits (stdout_chars,
// stderr_chars, images) and the caps (summary_chars).
export function answerFullOutput(store, callId, args, limits, caps) {
  const id = typeof args.call_id === "string" ? args.call_id : "";
  const stream = args.stream === undefined || args.stream === null ? "stdout" : args.stream;
  const offset = Number.isInteger(args.offset) && args.offset >= 0 ? args.offset : 0;
  const rec = store.get(id);
  if (!rec) return toolResult(callId, { status: "error", stderr: TEXTS.noOutput(id, store.runs) }, caps);
  if (stream === "figures") {
    const images = rec.images.slice(0, limits.images);
    return toolResult(callId, { images, summary: `get_full_output: ${images.length} figure(s) from call_id "${id}", attached.` }, caps);
  }
  if (!["stdout", "stderr", "traceback"].includes(stream)) {
    return toolResult(callId, {
      status: "error",
      stderr: `[runtime] get_full_output has no stream named "${String(stream).slice(0, 64)}": use stdout, stderr, traceback or figures.`,
    }, caps);
  }
  const all = chars(rec[stream]);
  const size = stream === "stdout" ? limits.stdout_chars : limits.stderr_chars;
  const start = Math.min(offset, all.length);
  const end = Math.min(start + size, all.length);
  const page = all.slice(start, end).join("");
  const more = end < all.length ? `More remains: call again with offset=${end}.` : "This is the end of the stream.";
  const summary = `get_full_output: ${stream} characters ${start} to ${end} of ${all.length} from call_id "${id}". ${more}`;
  return toolResult(callId, stream === "stdout" ? { stdout: page, summary } : { stderr: page, summary }, caps);
}

// ---- the reader's attached files (runtime.python.uploads) ----

// DATA_DIR is where runs read the session's attached files, as on the server.
export const DATA_DIR = "/data";

// isDataFileName reports whether name can be written to DATA_DIR as is: one path segment of
// ASCII letters, digits, ".", "_" and "-", not "." or "..". The server's upload rule is the same
// (and also bounds the length); the worker checks again so that no name from anywhere can reach
// outside DATA_DIR.
export function isDataFileName(name) {
  return typeof name === "string" && /^[A-Za-z0-9._-]+$/.test(name) && name !== "." && name !== "..";
}

// uploadsOf is the effective runtime.python.uploads of GET /{c}, or null when uploads are off
// (or the config does not say).
export function uploadsOf(cfg) {
  const py = cfg && cfg.runtime && cfg.runtime.python;
  const u = py && py.uploads;
  if (!u || u.enabled !== true) return null;
  const num = (v) => (Number.isFinite(v) && v > 0 ? v : null);
  return {
    max_file_mb: num(u.max_file_mb),
    max_session_mb: num(u.max_session_mb),
    max_files: num(u.max_files),
    types: Array.isArray(u.types) ? u.types.filter((t) => typeof t === "string" && /^[a-z0-9]{1,16}$/.test(t)) : [],
  };
}

// acceptOf is the file input's accept attribute for the allowed types: ".csv,.tsv".
export function acceptOf(types) {
  return types.map((t) => `.${t}`).join(",");
}

// KIB is the unit of sizes shown to the reader: MB are MiB, as the server counts max_file_mb.
export const KIB = 2 ** 10;

// formatBytes writes a size for a reader: "512 bytes", "1.5 KB", "25 MB".
export function formatBytes(n) {
  if (!Number.isFinite(n) || n < 0) return "";
  if (n < KIB) return `${n} ${n === 1 ? "byte" : "bytes"}`;
  const units = ["KB", "MB", "GB"];
  let v = n;
  let i = -1;
  do {
    v /= KIB;
    i++;
  } while (v >= KIB && i < units.length - 1);
  return `${v >= 10 ? Math.round(v) : Math.round(v * 10) / 10} ${units[i]}`;
}

// newSessionId is a random UUID4, for a session the page starts itself: the API accepts a
// client-chosen id and creates the session under it (api.md §4.2). crypto.randomUUID needs a
// secure context; getRandomValues does not.
export function newSessionId() {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// AttachedFiles is the page's view of a session's attached files: the server's list
// ({name, bytes, sha256, type}, as POST and GET …/files answer) and the bytes this page uploaded,
// which are what the worker writes to DATA_DIR (there is no route for a file's bytes). version
// changes whenever what the worker should hold changes.
export class AttachedFiles {
  constructor() {
    this.version = 0;
    this.reset();
  }
  reset() {
    this.list = [];
    this.held = new Map(); // name -> {bytes: Uint8Array, sha256: the server's when it took them}
    this.version++;
  }
  // setList takes the server's list after an upload or a removal; sent maps the names an
  // accepted upload carried to their bytes (the server keeps a batch whole or not at all). The
  // page holds bytes only for listed files, and drops them when the server's sha256 of a name
  // changes (another tab replaced the file): it has no way to fetch the new bytes.
  setList(files, sent = new Map()) {
    const list = [];
    for (const f of Array.isArray(files) ? files : []) {
      if (!f || !isDataFileName(f.name)) continue;
      list.push({ name: f.name, bytes: Number(f.bytes) || 0, sha256: typeof f.sha256 === "string" ? f.sha256 : "", type: typeof f.type === "string" ? f.type : "" });
    }
    const held = new Map();
    for (const f of list) {
      const old = this.held.get(f.name);
      if (sent.has(f.name)) held.set(f.name, { bytes: sent.get(f.name), sha256: f.sha256 });
      else if (old && old.sha256 === f.sha256) held.set(f.name, old);
    }
    this.list = list;
    this.held = held;
    this.version++;
  }
  // remove drops one file, when the server answers a removal without a list.
  remove(name) {
    this.setList(this.list.filter((f) => f.name !== name));
  }
  // has reports whether the page holds the bytes of name, so that runs here can read it.
  has(name) {
    return this.held.has(name);
  }
  // data is what the worker writes to DATA_DIR: [{name, bytes}], in the server's order.
  data() {
    return this.list.filter((f) => this.held.has(f.name)).map((f) => ({ name: f.name, bytes: this.held.get(f.name).bytes }));
  }
}

// ---------------------------------------------------------------- citations (knowledge.md §5)

// safeHref is url when it is an absolute http or https URL, else null: a source comes from a
// tool's result, and only a web address may become a link.
export function safeHref(url) {
  if (typeof url !== "string") return null;
  try {
    const u = new URL(url);
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
  } catch {
    return null;
  }
}

// Citations keeps a reply's sources by marker, from its citation events and done.citations
// (api.md §5): each needs an integer marker of at least 1 and a string source, as the widget
// requires; anything else is left out.
export class Citations {
  constructor() {
    this.byMarker = new Map();
  }
  add(c) {
    if (!c || !Number.isInteger(c.marker) || c.marker < 1 || typeof c.source !== "string") return false;
    const str = (v) => (typeof v === "string" ? v : "");
    this.byMarker.set(c.marker, { marker: c.marker, source: c.source, title: str(c.title), cited_text: str(c.cited_text) });
    return true;
  }
  // addAll takes a done or tool_request's list, the whole reply's.
  addAll(list) {
    if (Array.isArray(list)) for (const c of list) this.add(c);
  }
  get(marker) {
    return this.byMarker.get(marker);
  }
  // list is the sources in marker order.
  list() {
    return [...this.byMarker.values()].sort((a, b) => a.marker - b.marker);
  }
}

// citationParts splits text into plain runs and the markers of known sources ("[2]" whose
// source is cited), in order: [{text}] and [{marker, source, title, href}], href null for a
// source that cannot be a link. A bracketed number no citation names stays text.
export function citationParts(text, citations) {
  const out = [];
  const re = /\[(\d{1,6})\]/g;
  let last = 0;
  for (let m; (m = re.exec(text)); ) {
    const c = citations.get(Number(m[1]));
    if (!c) continue;
    if (m.index > last) out.push({ text: text.slice(last, m.index) });
    out.push({ marker: c.marker, source: c.source, title: c.title, href: safeHref(c.source) });
    last = re.lastIndex;
  }
  if (last < text.length) out.push({ text: text.slice(last) });
  return out;
}

// cutText is s when it has at most n characters, else its first n and "…".
export function cutText(s, n) {
  const c = chars(s);
  return c.length <= n ? s : c.slice(0, n).join("") + "…";
}
