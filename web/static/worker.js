// The demo page's Python runtime: Pyodide in a module Web Worker.
//
// Boot, in order (api.md §6.3, config.md §4): load Pyodide from the index URL; merge the
// community's lock overlay into the distribution's lock, add-only; load the preload; import
// import_before_seal; seal (the worker's native network APIs are replaced by one guarded
// fetch that allows exactly fetch_allow, refusing redirects and credentials; Python's
// modules that reach JavaScript are removed and refused); run the prelude. The page enforces
// exec_seconds by terminating this worker and starting a new one.
//
// Messages in:  {type: "boot", ...settings} once, then {type: "run", id, code, images, image_px,
//               data?}. data, when present, is the session's attached files, [{name, bytes}]
//               (every one, not a change): from then on each run starts with exactly those in
//               /data, read-only, whatever earlier runs did there. settings.limits is the page config's limits object (the server's caps); when
//               it is absent, they are read from the config.json beside runtimeURL.
// Messages out: {type: "loaded"} as soon as this module has run (a page that loads it through
//               a dynamic import in a blob: worker waits for it before sending "boot"),
//               {type: "progress", step, steps, phase, text}, {type: "ready", info},
//               {type: "failed", kind, message}, {type: "result", id, result}.

import { DATA_DIR, Workspace, allowedText, checkUrl, closure, isDataFileName, lookupName, mergeLock } from "./lib.mjs";

let runtime = null; // {run} once booted

self.onmessage = async (ev) => {
  const msg = ev.data;
  if (msg.type === "boot") {
    try {
      const info = await boot(msg);
      self.postMessage({ type: "ready", info });
    } catch (e) {
      self.postMessage({ type: "failed", kind: e.kind || "boot", message: messageOf(e) });
    }
  } else if (msg.type === "run") {
    if (!runtime) {
      self.postMessage({ type: "result", id: msg.id, error: "the runtime has not started" });
      return;
    }
    try {
      const result = await runtime.run(msg.code, msg.images, msg.image_px, msg.data);
      self.postMessage({ type: "result", id: msg.id, result });
    } catch (e) {
      self.postMessage({ type: "result", id: msg.id, error: messageOf(e) });
    }
  }
};

self.postMessage({ type: "loaded" });

function messageOf(e) {
  if (e && typeof e.message === "string") return e.message;
  return String(e);
}

class BootError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

async function boot(s) {
  const py = s.python;
  const preload = py.preload || [];
  const allowInstall = py.allow_install || [];
  const imports = py.import_before_seal || [];
  const steps = 2 + preload.length + (allowInstall.length ? 1 : 0) + imports.length + 1 + (py.prelude ? 1 : 0);
  let step = 0;
  const progress = (phase, text, extra = {}) => {
    step++;
    self.postMessage({ type: "progress", step, steps, phase, text, ...extra });
  };

  progress("loading_runtime", `Loading Pyodide ${py.pyodide_version}`);
  const get = (url, name, as) =>
    fetch(url).then((r) => {
      if (!r.ok) throw new Error(`${name} answered HTTP ${r.status}`);
      return r[as]();
    });
  let mod, stockLock, runtimeSource, osaSource, caps;
  try {
    [mod, stockLock, runtimeSource, osaSource, caps] = await Promise.all([
      import(new URL("pyodide.mjs", s.indexURL).href),
      get(new URL("pyodide-lock.json", s.indexURL), "pyodide-lock.json", "json"),
      get(s.runtimeURL, "osa_runtime.py", "text"),
      // The osa module, the same file the server's runtime runs, is served beside the runtime.
      get(new URL("osa.py", s.runtimeURL), "osa.py", "text"),
      s.limits || get(new URL("config.json", s.runtimeURL), "config.json", "json").then((c) => c.limits),
    ]);
  } catch (e) {
    throw new BootError("loading_runtime", `Pyodide ${py.pyodide_version} could not be loaded from ${s.indexURL}: ${messageOf(e)}`);
  }
  if (!caps || typeof caps !== "object") throw new BootError("loading_runtime", "the server's config holds no limits for the runtime");
  if (mod.version !== py.pyodide_version) {
    throw new BootError("loading_runtime", `the server's Pyodide is version ${mod.version}, but this community runs ${py.pyodide_version}`);
  }
  const merged = mergeLock(stockLock, s.lock, {
    wheelBase: s.wheelBase,
    files: s.files,
    packagesURL: s.packagesURL,
    indexURL: s.indexURL,
  });
  const need = closure(merged.lock, preload);
  if (need.unknown.length) {
    throw new BootError(
      "loading_package",
      `preload names ${need.unknown.join(", ")}, which neither Pyodide ${py.pyodide_version} nor the community's lock overlay provides`,
    );
  }
  const absent = need.names.filter((n) => merged.missing.has(n));
  if (absent.length) {
    const named = preload.filter((n) => closure(merged.lock, [n]).names.some((x) => merged.missing.has(x)));
    throw new BootError(
      "loading_package",
      `this server's copy of Pyodide ${py.pyodide_version} holds only the core, without ${named.join(", ")} ` +
        `(${absent.length} packages with what they depend on), which the community preloads. ` +
        "Whoever runs the server can install the full distribution, or set ASSISTANT_PYODIDE_PACKAGES_URL or ASSISTANT_PYODIDE_URL to a CDN.",
    );
  }

  // Executed code reaches JavaScript only through what jsglobals holds: nothing but timers.
  const jsglobals = { setTimeout: setTimeout.bind(self), clearTimeout: clearTimeout.bind(self) };
  let pyodide;
  try {
    pyodide = await mod.loadPyodide({
      indexURL: s.indexURL,
      lockFileContents: merged.lock,
      packageBaseUrl: s.indexURL,
      jsglobals,
      env: { MPLBACKEND: "agg", HOME: "/home/pyodide" },
      stdout: (line) => console.log("[python]", line),
      stderr: (line) => console.warn("[python]", line),
    });
  } catch (e) {
    throw new BootError("loading_runtime", `Pyodide ${py.pyodide_version} did not start: ${messageOf(e)}`);
  }
  progress("runtime_loaded", `Pyodide ${pyodide.version} started`);

  for (const name of preload) {
    const key = lookupName(merged.lock, name);
    progress("loading_package", `Loading package ${name}`, { package: name });
    const errors = [];
    await pyodide.loadPackage([key], {
      checkIntegrity: true,
      messageCallback: () => {},
      errorCallback: (m) => errors.push(m),
    });
    if (!Object.hasOwn(pyodide.loadedPackages, key)) {
      throw new BootError("loading_package", `package ${name} could not be loaded: ${errors.join("; ") || "no reason given"}`);
    }
  }

  if (allowInstall.length) {
    progress("installing", `Installing ${allowInstall.join(", ")}`, { package: allowInstall.join(", ") });
    try {
      await pyodide.loadPackage("micropip", { checkIntegrity: true });
      const micropip = pyodide.pyimport("micropip");
      const opts = { deps: false };
      if ((py.index_urls || []).length) opts.index_urls = py.index_urls;
      await micropip.install.callKwargs(allowInstall, opts);
    } catch (e) {
      throw new BootError("installing", `allow_install failed: ${messageOf(e)}`);
    }
  }

  for (const name of imports) {
    progress("importing", `Importing ${name}`, { module: name });
    try {
      pyodide.pyimport(name);
    } catch (e) {
      throw new BootError("import_before_seal", `import_before_seal: importing ${name} failed: ${lastLine(messageOf(e))}`);
    }
  }

  progress("sealing", "Sealing the network");
  const ns = pyodide.globals.get("dict")();
  pyodide.runPython(runtimeSource, { globals: ns, filename: "<osa_runtime>" });
  ns.get("set_from_entries")(Object.fromEntries);
  ns.get("configure")(JSON.stringify(caps));
  const fetchAllow = py.fetch_allow || [];
  const workspace = new Workspace(caps);
  ns.get("make_osa")(osaSource, makeBridge(fetchAllow, workspace), fetchAllow);
  ns.get("seal")();
  sealGlobals();

  if (py.prelude) {
    progress("prelude", "Running the community's prelude");
    try {
      await ns.get("run_prelude")(py.prelude);
    } catch (e) {
      throw new BootError("prelude", `the community's prelude failed: ${lastLine(messageOf(e))}`);
    } finally {
      workspace.clear(); // what the prelude saved is not a run's
    }
  }

  const runFn = ns.get("run");
  let data = null; // the attached files, once the page has sent them
  runtime = {
    run: async (code, images, imagePx, files) => {
      if (files !== undefined) data = checkData(files);
      // Rewritten before every run: what a run changed in /data does not reach the next one.
      if (data) writeData(pyodide.FS, data);
      workspace.clear();
      const result = await runFn(code, images, imagePx);
      result.files = workspace.take().map((f) => ({ name: f.name, kind: f.kind, data_base64: base64(f.data) }));
      return result;
    },
  };
  return {
    pyodide: pyodide.version,
    packages: Object.keys(pyodide.loadedPackages).sort(),
    skipped: merged.skipped,
  };
}

// checkData keeps the page's files that can be written under DATA_DIR as they are named.
function checkData(files) {
  if (!Array.isArray(files)) throw new Error("the attached files were not sent as a list");
  const out = [];
  for (const f of files) {
    if (!f || !isDataFileName(f.name) || !(f.bytes instanceof Uint8Array)) throw new Error("an attached file has a name or contents this runtime cannot write");
    out.push({ name: f.name, bytes: f.bytes });
  }
  return out;
}

// writeData makes DATA_DIR hold exactly files, read-only as on the server: whatever is there
// (files a run wrote, a directory, a symlink in its place) is removed first.
function writeData(FS, files) {
  const at = FS.analyzePath(DATA_DIR, true);
  if (at.exists && FS.isDir(at.object.mode) && !FS.isLink(at.object.mode)) {
    emptyDir(FS, DATA_DIR);
  } else {
    if (at.exists) FS.unlink(DATA_DIR);
    FS.mkdir(DATA_DIR);
  }
  for (const f of files) {
    const p = `${DATA_DIR}/${f.name}`;
    FS.writeFile(p, f.bytes);
    FS.chmod(p, 0o444);
  }
  FS.chmod(DATA_DIR, 0o555);
}

function emptyDir(FS, dir) {
  FS.chmod(dir, 0o755);
  for (const n of FS.readdir(dir)) {
    if (n === "." || n === "..") continue;
    const p = `${dir}/${n}`;
    const { node } = FS.lookupPath(p, { follow: false });
    if (FS.isDir(node.mode)) {
      emptyDir(FS, p);
      FS.rmdir(p);
    } else {
      FS.unlink(p);
    }
  }
}

function lastLine(text) {
  const lines = String(text).trim().split("\n");
  return lines[lines.length - 1];
}

function base64(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

// makeBridge is the one way out of the sealed worker, the transport of the osa module: the
// native fetch, kept in this closure only, behind the fetch_allow check (no redirect is followed
// and no credentials are sent), and the run's workspace. Every answer has refused, detail and
// error (null when not refused, "" and null), as osa_runtime.py reads them.
function makeBridge(fetchAllow, workspace) {
  const nativeFetch = self.fetch.bind(self);
  const NativeHeaders = self.Headers;
  return {
    check: (url) => checkUrl(url, fetchAllow),
    save: (kind, name, data) => ({ ...workspace.save(kind, name, data), error: null }),
    fetch: async (url, method, headers, body) => {
      const c = checkUrl(url, fetchAllow);
      if (!c.ok) return { refused: c.reason, detail: allowedText(fetchAllow), error: null };
      try {
        const r = await nativeFetch(c.url, {
          method,
          headers: new NativeHeaders(Array.from(headers || [])),
          body: body || undefined,
          redirect: "error",
          credentials: "omit",
          mode: "cors",
          referrerPolicy: "no-referrer",
          cache: "no-store",
        });
        const bytes = new Uint8Array(await r.arrayBuffer());
        return { refused: null, detail: "", error: null, status: r.status, url: r.url, headers: Array.from(r.headers.entries()), body: bytes };
      } catch (e) {
        return { refused: null, detail: "", error: `${messageOf(e)} (a redirect, a refused CORS request, or the network)` };
      }
    },
  };
}

// sealGlobals removes every network API (and every way to start more code) from the worker.
function sealGlobals() {
  const names = [
    "fetch",
    "XMLHttpRequest",
    "WebSocket",
    "WebSocketStream",
    "EventSource",
    "WebTransport",
    "importScripts",
    "Worker",
    "SharedWorker",
    "caches",
    "BroadcastChannel",
    "RTCPeerConnection",
    "Request",
  ];
  for (const n of names) {
    try {
      Object.defineProperty(self, n, { value: undefined, writable: false, configurable: false });
    } catch {
      // checked below
    }
  }
  if (self.navigator && "sendBeacon" in self.navigator) {
    try {
      Object.defineProperty(self.navigator, "sendBeacon", { value: undefined, writable: false, configurable: false });
    } catch {
      // checked below
    }
  }
  const left = names.filter((n) => self[n] !== undefined);
  if (left.length) throw new BootError("seal", `the network could not be sealed: ${left.join(", ")} is still reachable`);
}
