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
//   {id, type: "load", bundleUrl?}   static mode: fetch and decode the index
//                                    (default: static.json beside this file)
//   {id, type: "ask", request, maxQuestionChars?}
//                                    static mode: request = the body of POST /api/ask,
//                                    checked against the owner's question limit
//                                    -> the result object, as the server's
// Messages out: {id, ok: true, result} or {id, ok: false, error: "message"}.
// Pyodide boots on the first message, whatever it is; "boot" answers {bootMs, version}.
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
// which only the HTTP cache can serve. No Cache Storage (an http:// page that is not
// localhost, storage turned off): everything comes from the network as before.
const KEPT = /\.(wasm|zip|whl)$/;
const CACHE_PREFIX = "docpilot-pyodide-";
let store = null; // Promise of this boot's Cache, or of null
let storing = []; // puts still running: the boot waits for them before it answers

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
  const response = await pageFetch(input, init);
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

async function start(pyodideUrl) {
  const began = performance.now();
  const base = pyodideUrl ? directory(pyodideUrl) : OWN;
  const { loadPyodide } = await import(new URL("pyodide.mjs", base).href);
  // Our lock file lists only our wheel, so nothing is looked up on a CDN. Fetched here
  // with revalidation: it names the wheel by content, so it must never be stale.
  const response = await fetch(new URL(LOCK_FILE, OWN), { cache: "no-cache" });
  if (!response.ok) throw new Error(`${LOCK_FILE}: HTTP ${response.status}`);
  const lockText = await response.text();
  store = openStore(lockText);
  const failed = new Promise((_, reject) => (bootFailed = reject));
  const pyodide = await Promise.race([failed, loadPyodide({
    indexURL: base.href,
    lockFileContents: JSON.parse(lockText),
    packageBaseUrl: OWN.href,
    packages: [PACKAGE],
    // Our own Pyodide comes with a reduced stdlib zip; one served elsewhere has its own.
    ...(pyodideUrl ? {} : { stdLibURL: new URL(STDLIB, OWN).href }),
  })]).finally(() => (bootFailed = null));
  await Promise.all(storing); // kept for the next page load before this one answers
  storing = [];
  const browser = pyodide.pyimport("docpilot_runtime.browser.worker");
  return { pyodide, browser, bootMs: Math.round(performance.now() - began), version: pyodide.version };
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

async function load(runtime, bundleUrl) {
  const began = performance.now();
  const url = bundleUrl ? new URL(bundleUrl, self.location.href) : new URL("static.json", HERE);
  const response = await fetch(url, { cache: "no-cache" });
  if (!response.ok) throw new Error(`${url.pathname}: HTTP ${response.status}`);
  const text = await response.text();
  // The index sits in <site>/docpilot/: the site's own path is the reader's page prefix.
  runtime.browser.load_static(text, new URL("../", url).pathname, url.pathname);
  loaded = true;
  return { loadMs: Math.round(performance.now() - began) };
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
  const result = JSON.parse(runtime.browser.ask_static(JSON.stringify(request), maxQuestionChars ?? null));
  if (result.error) {
    // The same refusal the server answers with 400: {field, message, limit?}.
    throw new Error(`${result.error.field}: ${result.error.message}`);
  }
  return result;
}

async function handle(message) {
  const runtime = await boot(message.type === "boot" ? message.pyodideUrl : undefined);
  switch (message.type) {
    case "boot":
      return { bootMs: runtime.bootMs, version: runtime.version };
    case "check":
      return check(runtime, message);
    case "load":
      return load(runtime, message.bundleUrl);
    case "ask":
      return ask(runtime, message.request, message.maxQuestionChars);
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
