// DocPilot's Pyodide worker: the credential check and static mode, off the page's thread.
//
// Load it as a module worker (Pyodide's loader is an ES module; classic workers fail):
//   new Worker(new URL("worker.js", docpilotDir), { type: "module" })
// It lives in <site>/docpilot/ and finds, relative to itself, Pyodide in pyodide/
// (unless told another URL), our wheel and lock file in pyodide/, and static mode's
// index in static.json; static_assets.install_browser_runtime puts them there.
//
// Messages in (every one carries an id the reply repeats):
//   {id, type: "boot", pyodideUrl?}  start Pyodide now; pyodideUrl overrides pyodide/
//                                    (send it first: only the booting message's URL counts)
//   {id, type: "check", question, quote?, history?, page?, lang?}
//                                    what the widget is about to send; answers
//                                    {credential: {kind, label, markdown, start, end, field} | null,
//                                     dropped: ["page", "history[2]", ...]} (drop those, then send)
//   {id, type: "load", bundleUrl?}   static mode: fetch and decode the index (default:
//                                    the sharded one, static/manifest.json beside this
//                                    file, else static.json; a URL may name either)
//   {id, type: "ask", request, maxQuestionChars?}
//                                    static mode: request = the body of POST /api/ask,
//                                    checked against the owner's question limit
//                                    -> the result object, as the server's
//   {id, type: "stats"}              -> {indexBytes, sharded}: the index's bytes fetched so far
// Messages out: {id, ok: true, result} or {id, ok: false, error: "message"}.
// Pyodide boots on the first message, whatever it is; "boot" answers {bootMs, version,
// snapshot, phases, fetched} (snapshot: Python was restored from this site's memory
// snapshot; phases: ms from the boot's start to each step; fetched: the files it fetched).
// Messages are handled one at a time, in the order they arrive.

const HERE = new URL("./", import.meta.url);
const OWN = new URL("pyodide/", HERE); // our wheel and lock file, whoever serves Pyodide
const LOCK_FILE = "docpilot-lock.json";
const STDLIB = "docpilot-stdlib.zip"; // the standard library, reduced to what we import
const PACKAGE = "docpilot-browser";

let booting = null; // Promise of {pyodide, browser, bootMs, version}
let loaded = false;
let queue = Promise.resolve();

// Pyodide's large files (the .wasm, the stdlib zip, our wheel) are kept in Cache Storage, so
// the next page load boots without downloading them: a cache named after the site's lock
// file, fetched fresh on every boot, which changes whenever our wheel or Pyodide does (older
// docpilot-pyodide-* caches are deleted then). The .mjs files are imported as modules,
// which only the HTTP cache can serve (but see `packed`). No Cache Storage (an http://
// page that is not localhost, storage turned off): everything comes from the network.
const KEPT = /\.(wasm|zip|whl)$|pyodide\.asm\.mjs$/;
const CACHE_PREFIX = "docpilot-pyodide-";
let store = null; // Promise of this boot's Cache, or of null
let storing = []; // puts still running: the boot waits for them before it answers

// A host that compresses nothing (`python -m http.server`, a plain bucket) would send the
// 9.6 MB wasm, the 3.3 MB stdlib and the 1.2 MB loader as they are on disk: when the lock
// file came without Content-Encoding, the worker fetches the build's .gz copies and
// decompresses them itself (DecompressionStream; kept decompressed in Cache Storage).
const PACKED = /\.(wasm|zip)$|pyodide\.asm\.mjs$/;
const TYPES = { wasm: "application/wasm", zip: "application/zip", mjs: "text/javascript" };
let packed = false;

async function gunzipped(response, url) {
  const reader = response.body.getReader();
  const first = await reader.read();
  const head = first.value || new Uint8Array(0);
  const rest = new ReadableStream({
    start(controller) {
      if (head.length) controller.enqueue(head);
      if (first.done) controller.close();
    },
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  // A host that sent the .gz with Content-Encoding has had the browser decode it already.
  const gzip = head[0] === 0x1f && head[1] === 0x8b;
  const body = gzip ? rest.pipeThrough(new DecompressionStream("gzip")) : rest;
  const type = TYPES[url.split("?")[0].split(".").pop()] || "application/octet-stream";
  return new Response(body, { status: 200, headers: { "Content-Type": type } });
}

async function hostFetch(input, init) {
  const url = String(input?.url ?? input).split("#")[0];
  if (packed && self.DecompressionStream && PACKED.test(url.split("?")[0])) {
    const response = await pageFetch(`${url}.gz`, init).catch(() => null);
    if (response?.ok && response.body) return gunzipped(response, url);
  }
  return pageFetch(input, init);
}

async function openStore(lockText) {
  try {
    if (!self.caches || !self.crypto?.subtle) return null;
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(lockText));
    const hex = [...new Uint8Array(digest)].slice(0, 8).map((b) => b.toString(16).padStart(2, "0")).join("");
    const name = CACHE_PREFIX + hex;
    for (const old of await caches.keys()) if (old.startsWith(CACHE_PREFIX) && old !== name) await caches.delete(old);
    return await caches.open(name);
  } catch {
    return null;
  }
}

async function cachedFetch(input, init) {
  const url = String(input?.url ?? input).split("#")[0];
  const cache = KEPT.test(url.split("?")[0]) ? await store : null;
  const hit = cache && (await cache.match(url).catch(() => null));
  if (hit) return hit;
  const response = await hostFetch(input, init);
  if (cache && response.ok && response.type !== "opaque") {
    storing.push(cache.put(url, response.clone()).catch(() => {}));
  }
  return response;
}

// Pyodide does not always reject when one of its files fails to load (a refused .wasm can
// leave it waiting): a failed fetch while booting fails the boot at once instead. So does a
// download that stalls: no byte of any of the boot's files for STALL_MS (a proxy holding
// the connection open) is a failure too, reported as soon as it is one, not at the page's
// 90 s deadline.
const STALL_MS = 15000;
let bootFailed = null;
let downloads = 0;
let stallTimer = 0;
let lastByte = 0;
function progressed(name) {
  lastByte = performance.now();
  watchStall(name);
}
function watchStall(name) {
  clearTimeout(stallTimer);
  if (downloads <= 0) return;
  const armed = performance.now();
  stallTimer = setTimeout(() => {
    // Much later than asked: this thread was busy (starting Python), not the network idle.
    if (performance.now() - armed > STALL_MS + 1000) return progressed(name);
    // Bytes that arrived while this thread was busy are read first, then it is judged.
    stallTimer = setTimeout(() => {
      if (downloads > 0 && performance.now() - lastByte >= STALL_MS) bootFailed?.(new Error(`${name} stalled`));
      else watchStall(name);
    }, 100);
  }, STALL_MS);
}
// Watch a response's bytes arrive on a copy of it (reading the copy as fast as the network
// delivers, whatever pace Pyodide reads its own at: a busy machine compiling the wasm is
// not a stalled download).
function watched(response, name) {
  if (!response.body) return response;
  const reader = response.clone().body.getReader();
  downloads++;
  (async () => {
    try {
      while (!(await reader.read()).done) progressed(name);
    } catch {
      /* the download failed: Pyodide's own copy says so */
    }
    downloads--;
    progressed(name);
  })();
  return response;
}
const pageFetch = self.fetch.bind(self);
self.fetch = async (input, init) => {
  const name = String(input?.url ?? input).split("?")[0].split("/").pop();
  const watch = !!bootFailed;
  if (watch) {
    downloads++;
    progressed(name);
  }
  try {
    const response = await cachedFetch(input, init);
    if (!response.ok) bootFailed?.(new Error(`${name}: HTTP ${response.status}`));
    return watch ? watched(response, name) : response;
  } catch (error) {
    bootFailed?.(new Error(`${name} could not be loaded`));
    throw error;
  } finally {
    if (watch) {
      downloads--;
      progressed(name);
    }
  }
};

function directory(url) {
  const text = String(url);
  return new URL(text.endsWith("/") ? text : `${text}/`, self.location.href);
}

// A warm full page load restores Python from a memory snapshot instead of starting it:
// the first boot on a site (per Pyodide and wheel: the cache's name) takes one right
// after our core is imported, before anything else runs in Python, and keeps it in Cache
// Storage beside the files (Pyodide's experimental _makeSnapshot/_loadSnapshot; our core
// loads no binary extension, which a snapshot could not hold). A snapshot that fails to
// restore is dropped and Python starts as usual.
const SNAPSHOT = "docpilot-snapshot.bin";

async function wheelBytes(lock) {
  const entry = lock.packages?.[PACKAGE];
  if (!entry) throw new Error(`${LOCK_FILE}: no ${PACKAGE} entry`);
  const response = await fetch(new URL(entry.file_name, OWN));
  if (!response.ok) throw new Error(`${entry.file_name}: HTTP ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const hex = [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
  if (hex !== entry.sha256) throw new Error(`${entry.file_name}: sha256 differs from ${LOCK_FILE}`);
  return bytes;
}

async function snapshotBytes(cache, key) {
  const hit = cache && (await cache.match(key).catch(() => null));
  return hit ? new Uint8Array(await hit.arrayBuffer()) : null;
}

// pyodide.asm.mjs from the .gz copy a plain host cannot compress for us: imported from
// the decompressed text (a blob: URL), which Cache Storage keeps for the next page load.
async function blobImports() {
  // A page policy without blob: in script-src (the runtime's own) refuses such an import.
  const href = URL.createObjectURL(new Blob(["export default 1"], { type: "text/javascript" }));
  try {
    return (await import(href)).default === 1;
  } catch {
    return false;
  } finally {
    URL.revokeObjectURL(href);
  }
}

async function wasmScript(base) {
  if (!packed || base !== OWN || !self.DecompressionStream || !(await blobImports())) return undefined;
  try {
    const response = await fetch(new URL("pyodide.asm.mjs", base));
    const href = URL.createObjectURL(new Blob([await response.arrayBuffer()], { type: "text/javascript" }));
    try {
      return (await import(href)).default;
    } finally {
      URL.revokeObjectURL(href);
    }
  } catch {
    return undefined; // Pyodide imports it itself
  }
}

async function start(pyodideUrl) {
  const began = performance.now();
  // Where the boot's time goes (ms since it began, cumulative), for the benchmarks.
  const phases = {};
  const mark = (name) => (phases[name] = Math.round(performance.now() - began));
  const base = pyodideUrl ? directory(pyodideUrl) : OWN;
  // Our lock file lists only our wheel, so nothing is looked up on a CDN. Fetched here
  // with revalidation: it names the wheel by content, so it must never be stale.
  const response = await fetch(new URL(LOCK_FILE, OWN), { cache: "no-cache" });
  if (!response.ok) throw new Error(`${LOCK_FILE}: HTTP ${response.status}`);
  packed = !response.headers.get("content-encoding");
  const lockText = await response.text();
  mark("lock");
  const lock = JSON.parse(lockText);
  store = openStore(`${base.href}\n${lockText}`);
  const failed = new Promise((_, reject) => (bootFailed = reject));
  const [{ loadPyodide }, createPyodideModule] = await Promise.all([
    import(new URL("pyodide.mjs", base).href),
    wasmScript(base),
  ]);
  mark("loader");
  const cache = await store;
  const key = new URL(SNAPSHOT, OWN).href;
  const options = {
    // Called once the wasm is instantiated and the stdlib is in place, before Python starts.
    fsInit: () => mark("wasmAndStdlib"),
    indexURL: base.href,
    lockFileContents: lock,
    packageBaseUrl: OWN.href,
    ...(createPyodideModule ? { createPyodideModule } : {}),
    // Our own Pyodide comes with a reduced stdlib zip; one served elsewhere has its own.
    ...(pyodideUrl ? {} : { stdLibURL: new URL(STDLIB, OWN).href }),
  };
  const wheel = wheelBytes(lock);
  wheel.catch(() => {}); // awaited below; a failure fails the boot there
  let snapshot = await snapshotBytes(cache, key);
  let pyodide = null;
  let restored = false;
  const boot = async () => {
    if (snapshot) {
      try {
        pyodide = await loadPyodide({ ...options, _loadSnapshot: snapshot });
        restored = true;
      } catch {
        snapshot = null;
        await cache?.delete(key).catch(() => {});
      }
    }
    pyodide ||= await loadPyodide({ ...options, ...(cache ? { _makeSnapshot: true } : {}) });
    mark("python");
    // The wheel's files: a snapshot holds the modules imported, not the file system.
    pyodide.unpackArchive(await wheel, "wheel", {
      extractDir: pyodide.runPython("import site; site.getsitepackages()[0]"),
    });
    mark("wheel");
  };
  await Promise.race([failed, boot()]).finally(() => (bootFailed = null));
  pyodide.runPython("import docpilot_runtime.browser.worker");
  mark("core");
  if (cache && !restored) {
    try {
      storing.push(cache.put(key, new Response(pyodide.makeMemorySnapshot())).catch(() => {}));
    } catch {
      /* no snapshot this time: the next page load starts Python as usual */
    }
    mark("snapshot");
  }
  await Promise.all(storing); // kept for the next page load before this one answers
  storing = [];
  mark("stored");
  const browser = pyodide.pyimport("docpilot_runtime.browser.worker");
  return {
    pyodide,
    browser,
    bootMs: Math.round(performance.now() - began),
    version: pyodide.version,
    snapshot: restored,
    phases,
    // What the boot fetched (not from Cache Storage): per file, its time and bytes.
    fetched: performance.getEntriesByType("resource").map((r) => ({
      name: r.name.split("/").pop(),
      ms: Math.round(r.duration),
      bytes: r.transferSize,
    })),
  };
}

function boot(pyodideUrl) {
  if (!booting) {
    booting = start(pyodideUrl).catch((error) => {
      throw new Error(`Pyodide did not start: ${describe(error)}`);
    });
    booting.catch(() => {
      booting = null; // a later message tries again (a network blip, say)
    });
  }
  return booting;
}

// Static mode's index: the sharded one (static/manifest.json, then only the files each
// question needs), or the whole static.json (a URL naming it, or a site built before the
// shards). The manifest is fetched fresh; every other file is named by its content.
const MANIFEST = "static/manifest.json";
let shards = null; // the URL of static/ while the sharded index is loaded
let fetchedBytes = 0; // bytes of index files fetched, for the benchmarks

async function load(runtime, bundleUrl) {
  const began = performance.now();
  let url = new URL(bundleUrl || MANIFEST, bundleUrl ? self.location.href : HERE);
  let response = await fetch(url, { cache: "no-cache" });
  if (!bundleUrl && response.status === 404) {
    url = new URL("static.json", HERE);
    response = await fetch(url, { cache: "no-cache" });
  }
  if (!response.ok) throw new Error(`${url.pathname}: HTTP ${response.status}`);
  const text = await response.text();
  fetchedBytes = new TextEncoder().encode(text).length;
  // The index sits in <site>/docpilot/: the site's own path is the reader's page prefix.
  if (url.pathname.endsWith("/manifest.json")) {
    runtime.browser.load_manifest(text, new URL("../../", url).pathname, url.pathname);
    shards = new URL("./", url);
  } else {
    runtime.browser.load_static(text, new URL("../", url).pathname, url.pathname);
    shards = null;
  }
  loaded = true;
  return { loadMs: Math.round(performance.now() - began), sharded: !!shards };
}

const MAX_ROUNDS = 8; // a turn names its files in two rounds, three for some follow-ups

async function askSharded(runtime, request, maxQuestionChars) {
  for (let round = 0; ; round++) {
    const out = JSON.parse(runtime.browser.ask_sharded(JSON.stringify(request), maxQuestionChars ?? null));
    if (!out.need) return out;
    if (round >= MAX_ROUNDS) throw new Error("static index: a question kept asking for more files");
    const files = await Promise.all(out.need.map(async (name) => {
      const response = await fetch(new URL(name, shards));
      if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
      return [name, new Uint8Array(await response.arrayBuffer())];
    }));
    for (const [name, data] of files) {
      fetchedBytes += data.length;
      runtime.browser.add_file(name, data);
    }
  }
}

function check(runtime, { question, quote, history, page, lang }) {
  if (typeof question !== "string") throw new Error("check: question must be a string");
  const proxy = runtime.browser.check(question, quote ?? null, JSON.stringify(history ?? []), page ?? null, lang ?? null);
  try {
    const found = proxy.toJs({ dict_converter: Object.fromEntries });
    return { credential: found.credential ?? null, dropped: found.dropped ?? [] };
  } finally {
    proxy.destroy();
  }
}

async function ask(runtime, request, maxQuestionChars) {
  if (!request || typeof request !== "object") throw new Error("ask: request must be an object");
  if (!loaded) await load(runtime);
  const result = shards
    ? await askSharded(runtime, request, maxQuestionChars)
    : JSON.parse(runtime.browser.ask_static(JSON.stringify(request), maxQuestionChars ?? null));
  if (result.error) {
    // The same refusal the server answers with 400: {field, message, limit?}.
    throw new Error(`${result.error.field}: ${result.error.message}`);
  }
  return result;
}

async function handle(message) {
  const runtime = await boot(message.type === "boot" ? message.pyodideUrl : undefined);
  switch (message.type) {
    case "boot": {
      const { bootMs, version, snapshot, phases, fetched } = runtime;
      return { bootMs, version, snapshot, phases, fetched };
    }
    case "check":
      return check(runtime, message);
    case "load":
      return load(runtime, message.bundleUrl);
    case "ask":
      return ask(runtime, message.request, message.maxQuestionChars);
    case "stats":
      return { indexBytes: fetchedBytes, sharded: !!shards };
    default:
      throw new Error(`unknown message type ${JSON.stringify(message.type)}`);
  }
}

function describe(error) {
  // A Python exception's message is its whole traceback; its last line says what failed.
  const lines = String(error?.message ?? error).trim().split("\n");
  return lines[lines.length - 1];
}

self.onmessage = (event) => {
  const message = event.data || {};
  queue = queue.then(async () => {
    try {
      self.postMessage({ id: message.id, ok: true, result: await handle(message) });
    } catch (error) {
      self.postMessage({ id: message.id, ok: false, error: describe(error) });
    }
  });
};
