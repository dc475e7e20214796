/* Where questions go and how they travel: the Pyodide worker (credential check, static
 * answers), finding the runtime (`resolveEndpoint`), and the runtime's SSE stream.
 *
 * Where questions go: the configured runtime; with the default endpoint, the API beside
 * the site (`<site root>/api`, so a site under /docs/ behind a proxy works), else the host
 * root's. When none is there (unreachable, or 404 as under `mkdocs serve` or on a static
 * host; not a 429 or 5xx, which are errors with retry) the widget says so once and answers
 * from docpilot/static.json in the worker, as in static mode. */

import { CONFIG, ROOT } from "./config.js";

// Where questions go: set by `resolveEndpoint` once it has found out (see there).
export let STATIC = CONFIG.endpoint === "browser";
export let API = null;
// The default endpoint found no runtime: answers come from static.json (`fallBack`).
export let FELL_BACK = false;
const BOOT_TIMEOUT_MS = 90000;

let worker = null;
let booting = null;
let seq = 0;
const pending = new Map();

/** Post one request to the worker; resolves with its result, rejects with its error. */
export function call(type, payload) {
  return new Promise((resolve, reject) => {
    const id = ++seq;
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, type, ...payload });
  });
}

function failAll(error) {
  for (const { reject } of pending.values()) reject(error);
  pending.clear();
}

/** Start the worker once (when the panel first opens): boots Pyodide, and in static mode
 * loads docpilot/static.json. Rejects when either fails or takes longer than BOOT_TIMEOUT_MS. */
export function bootWorker() {
  booting ||= new Promise((resolve, reject) => {
    setTimeout(() => reject(new Error("worker boot timed out")), BOOT_TIMEOUT_MS);
    try {
      worker = new Worker(new URL("worker.js", import.meta.url), { type: "module" });
    } catch (error) {
      return reject(error);
    }
    worker.onmessage = ({ data }) => {
      const waiting = pending.get(data?.id);
      if (!waiting) return;
      pending.delete(data.id);
      data.ok ? waiting.resolve(data.result) : waiting.reject(new Error(String(data.error)));
    };
    worker.onerror = worker.onmessageerror = () => {
      const error = new Error("worker failed");
      failAll(error);
      reject(error);
    };
    call("boot", CONFIG.pyodide_url ? { pyodideUrl: CONFIG.pyodide_url } : {})
      .then(() => resolveEndpoint())
      .then(() => STATIC && loadStatic())
      .then(resolve, reject);
  });
  // A failed boot is not final: the next question starts a fresh worker.
  booting.catch(() => {
    worker?.terminate();
    booting = loading = null;
  });
  return booting;
}

let loading = null;

/** Static mode's index into the worker, once: the sharded one's manifest (the worker
 * fetches the rest as questions need it). When it fails after falling back, the
 * site's own server is gone as well (`docpilot serve` stopped): that is one state, the
 * runtime down (`down`), and the next question looks for the runtime again. */
export function loadStatic() {
  loading ||= call("load", { bundleUrl: new URL("docpilot/static/manifest.json", ROOT).href }).catch((error) => {
    loading = null;
    const down = FELL_BACK;
    if (down) {
      STATIC = FELL_BACK = false;
      resolving = null;
    }
    throw Object.assign(error, { unreachable: true, down });
  });
  return loading;
}

/** Check every field of `body` before it leaves the page: a credential in the question or
 * quote is returned; a page or history item holding one is dropped from `body` (and its
 * turn in `sent` kept local). */
export async function screen(body, sent) {
  const { credential, dropped } = await call("check", body);
  if (dropped.includes("page")) delete body.page;
  body.history = body.history.filter((_, i) => {
    if (!dropped.includes(`history[${i}]`)) return true;
    sent[i].local = true; // it held a secret: never sent or stored again
    return false;
  });
  return credential && { ...credential, inQuote: credential.field === "quote" };
}

// -------------------------------------------------------------- where questions go

/** The API roots to try, in order: the configured runtime's; with the default endpoint,
 * the one beside the site (a site under a sub-path, behind a proxy) and the host root's
 * (one runtime serving several versions or languages of a site). None in static mode. */
function apiCandidates() {
  if (CONFIG.endpoint === "browser") return [];
  if (CONFIG.endpoint) return [CONFIG.endpoint.replace(/\/+$/, "").replace(/(\/api)?$/, "/api")];
  return [...new Set([new URL("api", ROOT).href, new URL("/api", ROOT).href])];
}

/** "up", "failing" (a runtime that answers 429 or 5xx: its errors are told, with retry)
 * or "absent" (no runtime: unreachable, or a 404, 405 or 501 as static hosts and
 * `mkdocs serve` answer, or a page that is not the runtime's JSON). */
async function probeApi(api) {
  try {
    const response = await fetch(`${api}/health`, { headers: { Accept: "application/json" }, cache: "no-store" });
    if ([404, 405, 501].includes(response.status)) return "absent";
    if (!response.ok) return "failing";
    return (response.headers.get("content-type") || "").includes("json") ? "up" : "absent";
  } catch {
    return "absent";
  }
}

let resolving = null;

/** Decide once per page load where questions go (at the first sign of intent, beside the
 * Pyodide boot, so nobody waits for it). A configured runtime is taken at its word (it
 * hears nothing before the first question); the same origin's candidates are probed: the
 * first that is there, or static mode when none is (`FELL_BACK`: the panel says so once).
 * `recheck` probes again, the configured runtime too (it stopped answering a question).
 * Resolves with FELL_BACK. */
export function resolveEndpoint(recheck = false) {
  const candidates = apiCandidates();
  if (recheck) resolving = null;
  if (!resolving && CONFIG.endpoint && !recheck) {
    API = candidates[0] || null;
    resolving = Promise.resolve(FELL_BACK);
  }
  resolving ||= Promise.all(candidates.map(probeApi)).then((found) => {
    const index = found.findIndex((state) => state !== "absent");
    if (index >= 0) API = candidates[index];
    else fallBack();
    return FELL_BACK;
  });
  return resolving;
}

/** No runtime answers: from now on this page answers in the browser, from static.json. */
export function fallBack() {
  if (STATIC) return;
  STATIC = FELL_BACK = true;
  API = null;
  resolving = Promise.resolve(true);
}

// -------------------------------------------------------------- asking

/** Send one question to the runtime and read its Server-Sent Events; `view` draws
 * progress and deltas as they arrive. Resolves with the authoritative result. */
export async function askServer(body, view, signal) {
  const response = await fetch(`${API}/ask`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal,
  }).catch((error) => {
    if (signal.aborted) throw error;
    throw Object.assign(new Error("network"), { unreachable: true });
  });
  if ([404, 405, 501].includes(response.status)) throw Object.assign(new Error("no API"), { unreachable: true, absent: true });
  if (!response.ok) {
    const error = (await response.json().catch(() => null))?.error;
    // Over the runtime's own limit: the widget takes that limit from here on.
    const limit = error?.field === "question" && Number(error.limit);
    // Over a rate cap: the wait the runtime gives (Retry-After, in seconds or as a date; the
    // body's when a cross-origin response hides the header).
    const after = response.headers.get("Retry-After") || "";
    const wait = response.status === 429 &&
      Math.ceil(Math.max(1, Number(after) || (Date.parse(after) - Date.now()) / 1000 || Number(error?.retry_after) || 10));
    throw Object.assign(new Error(error?.message || `HTTP ${response.status}`), { limit, wait, said: error?.message });
  }
  const type = response.headers.get("content-type") || "";
  // A host that answers every path with a page (a single-page-app fallback) has no API.
  if (type.includes("text/html")) throw Object.assign(new Error("no API"), { unreachable: true, absent: true });
  if (!type.includes("event-stream")) return response.json();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let result = null;
  for (;;) {
    // The connection dropping mid-answer (the runtime stopped) is a runtime gone, not a bug.
    const { value, done } = await reader.read().catch((error) => {
      throw signal.aborted ? error : Object.assign(new Error("stream cut"), { unreachable: true });
    });
    if (done) break;
    view.heard();
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const name = /^event: ?(.*)$/m.exec(block)?.[1];
      const data = JSON.parse(/^data: ?(.*)$/m.exec(block)?.[1] || "null");
      if (name === "progress") view.progress(data.message);
      else if (name === "delta") view.delta(data);
      else if (name === "answer") result = data;
      else if (name === "error") throw new Error(data.message);
    }
  }
  if (!result) throw new Error("the stream ended without an answer");
  return result;
}

/** What the runtime should remember of a finished turn (DESIGN: history items). */
export function historyItem({ question, quote, result }) {
  const item = { question, kind: result.kind, markdown: result.markdown.slice(0, 20000) };
  if (result.summary) item.summary = result.summary.slice(0, 2000);
  if (result.rescued) item.rescued = true;
  if (quote) item.quote = quote;
  return item;
}
