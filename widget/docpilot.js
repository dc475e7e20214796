/* DocPilot widget: a launcher and a chat panel that answer from this site's docs.
 *
 * Loaded by the `docpilot` MkDocs plugin as <script type="module" src=".../docpilot/docpilot.js">
 * next to <script type="application/json" id="docpilot-config">. No framework; the build minifies
 * this file and docpilot.css as it copies them (widget.py, copy_widget): 15 kB gzipped at most.
 *
 * Keyboard: "A" (no modifier, focus not in a text field) opens the panel; Material keeps
 * f, s, / for search and p, n, comma, period for paging. Focus moves into the question box
 * on open and back to the launcher on close; Escape closes; Enter sends, Shift+Enter is a
 * new line.
 *
 * Privacy: nothing the reader writes is stored or sent before their first question. At the
 * first sign of intent (pointer or focus on the launcher, the shortcut) the widget fetches
 * Pyodide and asks the runtime's /api/health whether it is there; that carries nothing of the
 * reader's. Every question first goes through the credential check in the Pyodide worker
 * (worker.js), with its quote, page and history; a question or quote holding a secret is
 * answered here and never sent (nor kept), a history item holding one is dropped. If the
 * worker cannot start, nothing is sent at all.
 *
 * Where questions go (`resolveEndpoint`): the configured runtime; with the default endpoint,
 * the API beside the site (`<site root>/api`, so a site under /docs/ behind a proxy works),
 * else the host root's. When none is there (unreachable, or 404 as under `mkdocs serve` or on
 * a static host; not a 429 or 5xx, which are errors with retry) the widget says so once and
 * answers from docpilot/static.json in the worker, as in static mode.
 *
 * A page load mid-answer: the question (once checked) is kept in sessionStorage while it is
 * answered, and the next page offers it again with Retry (`restore`).
 *
 * Worker protocol: post {id, type: "boot"|"check"|"load"|"ask", ...}, reply
 * {id, ok: true, result} or {id, ok: false, error}. Static mode (endpoint "browser")
 * loads docpilot/static.json (the lexical part of the bundle) into the worker and asks it instead of a server.
 *
 * Safety: answers arrive as the element tree the runtime validated (`blocks`), never as
 * Markdown to parse here; text becomes text nodes only (see `tree`), and links keep only
 * the server's href, and only for http(s) and site-relative URLs.
 *
 * Material's instant navigation swaps the page without re-running this script: the widget
 * stays (with its conversation) and reads `location.pathname` when it sends, so `page` is
 * always the page the reader is on.
 */

const ROOT = new URL("../", import.meta.url); // the script lives at <root>/docpilot/
// Defaults of the options the build writes into #docpilot-config: the schema's own
// (docpilot_runtime/settings_schema.py, WIDGET); tests/test_settings.py holds them equal.
const DEFAULTS = {
  "endpoint": "",
  "title": "Ask the docs",
  "placeholder": "Ask a question about these docs",
  "position": "bottom-right",
  "suggested_questions": [],
  "support_url": "",
  "history": false,
  "require_consent": false,
  "max_question_chars": 2000,
  "language": "",
  "strings": {},
  "pyodide_url": ""
};
const CONFIG = { ...DEFAULTS, ...JSON.parse(document.getElementById("docpilot-config")?.textContent || "{}") };
const T = CONFIG.strings || {};
// Where questions go: set by `resolveEndpoint` once it has found out (see there).
let STATIC = CONFIG.endpoint === "browser";
let API = null;
const CHAT_KEY = "docpilot:chat"; // sessionStorage: the open conversation
const PAST_KEY = "docpilot:past"; // localStorage (history: true): finished conversations
const CONSENT_KEY = "docpilot:consent"; // localStorage: the reader accepted records
const HISTORY_SENT = 6;
const MAX_PAST = 20;
const BOOT_TIMEOUT_MS = 90000;
// The owner's max_question_chars (as the runtime's [server] one); a runtime that refuses a
// question as longer than its own limit sets it (see `ask`).
let maxChars = Number(CONFIG.max_question_chars) || 2000;
const LANG = document.documentElement.lang || undefined;
// The language of the widget's strings (the owner's, else the page's), sent with each
// question when it is a tag the runtime accepts (framing.LANG_TAG).
const LANG_TAG = [CONFIG.language, LANG].find((t) => /^[a-z]{2,8}([-_][a-z0-9]{1,8}){0,4}$/i.test(t || ""));
const FULL_SCREEN = matchMedia("(max-width: 600px)"); // as in docpilot.css
const DOCKED = matchMedia("(min-width: 76.25em)"); // as in docpilot.css: the panel docks

// ------------------------------------------------------------------ DOM helpers

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text != null) node.textContent = text;
  return node;
}

function button(className, label, onClick, text) {
  const node = el("button", className, text);
  node.type = "button";
  if (label) {
    node.setAttribute("aria-label", label);
    node.title = label;
  }
  node.addEventListener("click", onClick);
  return node;
}

// Stroke icons drawn on a 24-unit grid; the path data is ours, never model text.
const ICONS = {
  chat: "M4 5h16v11H10l-6 4z",
  close: "M6 6l12 12M18 6 6 18",
  send: "M4 12h15M13 6l6 6-6 6",
  plus: "M12 5v14M5 12h14",
  past: "M12 7v5l3 2M3.5 12a8.5 8.5 0 1 0 2.5-6M3 4v4h4",
  thumb: "M7 11v9H4v-9zm0 0 4-7c1.5 0 2.5 1 2 3l-1 3h6c1 0 2 1 1.7 2.2l-1.7 6.3c-.3 1-1 1.5-2 1.5H7",
  stop: "M7 7h10v10H7z",
  copy: "M9 9h11v11H9zM5 15H4V4h11v1",
  retry: "M20 11a8 8 0 1 0-2.3 5.7M20 4v7h-7",
};

function icon(name, flip) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  const path = document.createElementNS(ns, "path");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  if (flip) svg.setAttribute("transform", "rotate(180)");
  path.setAttribute("d", ICONS[name]);
  svg.append(path);
  return svg;
}

/** An absolute URL for a link in model or docs text, or null: only http(s) links and
 * site-relative paths ("/guide/#anchor", resolved against the site root) survive. */
function safeHref(url) {
  let resolved;
  try {
    if (/^https?:\/\//i.test(url)) resolved = new URL(url);
    else if (url.startsWith("/") && !url.startsWith("//")) resolved = new URL(url.slice(1), ROOT);
    else return null;
  } catch {
    return null;
  }
  return /^https?:$/.test(resolved.protocol) ? resolved.href : null;
}

function link(href, text) {
  const a = el("a", null, text);
  a.href = href;
  // Same-site links stay in the tab (Material's instant navigation keeps the panel).
  // Off-site ones (the server marks them `external` and shows their domain) open apart,
  // passing on no referrer or ranking.
  if (new URL(href).origin !== location.origin) {
    a.target = "_blank";
    a.rel = "nofollow noopener noreferrer";
  }
  return a;
}

/** Put `text` on the clipboard: the async API, else a hidden selection (http pages,
 * older browsers). Resolves true when it worked. */
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.body.appendChild(el("textarea", "dp-sr"));
    area.value = text;
    area.select();
    const done = document.execCommand("copy");
    area.remove();
    return done;
  }
}

/** "Page › Section" for a citation; a page's own top section is the page. */
const sourceLabel = (c) => (c.page_title && c.page_title !== c.title ? `${c.page_title} › ${c.title}` : c.title || c.url);

// -------------------------------------------------------------- the answer tree

// The element tree the runtime validated (result `blocks`, delta `blocks`): text nodes,
// a fixed set of elements, links with the href the server accepted. Never parsed as Markdown.
const TAGS = new Set("p h1 h2 h3 h4 h5 h6 blockquote ul ol li pre hr em strong a code br".split(" "));
const MAX_DEPTH = 12; // as markdown_tree.MAX_DEPTH; deeper elements are dropped, their text kept

const textOf = (nodes) =>
  (Array.isArray(nodes) ? nodes : []).map((n) => (typeof n === "string" ? n : n?.t === "cite" ? `[${n.n}]` : textOf(n?.c))).join("");

/** A code block as the site draws its own (`div.highlight > pre > code`). With the
 * runtime's `hl` pairs ([Pygments class, text], the classes pymdownx.highlight gives the
 * site, so its stylesheet colours them) each token is a span; the pairs are used only
 * when their text is exactly the block's, and a class only when it is a short name. */
function codeBlock(node) {
  const text = textOf(node.c);
  const lang = /^[\w.+#-]{1,40}$/.test(node.lang || "") ? `language-${node.lang}` : null;
  const code = el("code", lang);
  const pairs = Array.isArray(node.hl) ? node.hl.filter(Array.isArray) : [];
  if (pairs.length && pairs.map((p) => String(p[1])).join("") === text) {
    for (const [css, part] of pairs) code.append(/^[a-z][a-z0-9]{0,3}$/.test(css) ? el("span", css, String(part)) : String(part));
  } else code.textContent = text;
  const box = el("div", "highlight");
  box.appendChild(el("pre")).append(code);
  return box;
}

/** A DocumentFragment of `nodes`, built with createElement and text nodes only, iteratively
 * (no tree can exhaust the stack). `ctx.cite(n)` draws citation n, or null for its "[n]" text. */
function tree(nodes, ctx) {
  const root = document.createDocumentFragment();
  const stack = [[root, Array.isArray(nodes) ? nodes : [], 0, 0]];
  while (stack.length) {
    const top = stack.at(-1);
    const [parent, kids, i, depth] = top;
    if (i >= kids.length) {
      stack.pop();
      continue;
    }
    top[2]++;
    const node = kids[i];
    if (typeof node === "string") {
      parent.append(node);
      continue;
    }
    const t = node?.t;
    if (t === "cite") {
      parent.append(ctx.cite(Number(node.n)) || `[${Number(node.n)}]`);
      continue;
    }
    let child = null; // an element outside the set, or an unsafe link: its text only
    if (t === "pre" && depth < MAX_DEPTH) {
      parent.append(codeBlock(node));
      continue;
    }
    if (t === "a") {
      const href = safeHref(String(node.href || ""));
      if (href) child = link(href);
    } else if (t[0] === "h" && t !== "hr") {
      // Answer headings sit under the panel's own heading: shift them down two levels.
      child = el(`h${Math.min(6, Number(t[1]) + 2)}`);
    } else if (TAGS.has(t)) {
      child = el(t);
      if (t === "ol" && Number(node.start) > 1) child.start = Number(node.start);
    }
    const into = child && depth < MAX_DEPTH ? parent.appendChild(child) : parent;
    if (Array.isArray(node.c)) stack.push([into, node.c, 0, depth + 1]);
  }
  return root;
}

/** A result's tree; an old stored turn without one shows its text as plain paragraphs. */
const blocksOf = (r) => r.blocks || String(r.markdown || "").split(/\n\s*\n/).map((p) => ({ t: "p", c: [p] }));

// -------------------------------------------------------------- the worker

let worker = null;
let booting = null;
let seq = 0;
const pending = new Map();

/** Post one request to the worker; resolves with its result, rejects with its error. */
function call(type, payload) {
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
function bootWorker() {
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
      .then(() => STATIC && call("load", { bundleUrl: new URL("docpilot/static.json", ROOT).href }))
      .then(resolve, reject);
  });
  // A failed boot is not final: the next question starts a fresh worker.
  booting.catch(() => {
    worker?.terminate();
    booting = null;
  });
  return booting;
}

/** Check every field of `body` before it leaves the page: a credential in the question or
 * quote is returned; a page or history item holding one is dropped from `body` (and its
 * turn in `sent` kept local). */
async function screen(body, sent) {
  const { credential, dropped } = await call("check", body);
  if (dropped.includes("page")) delete body.page;
  body.history = body.history.filter((_, i) => {
    if (!dropped.includes(`history[${i}]`)) return true;
    sent[i].local = true; // it held a secret: never sent or stored again
    return false;
  });
  return credential && { ...credential, inQuote: credential.field === "quote" };
}

// -------------------------------------------------------------- consent

/** Whether the reader accepted records (only asked where the owner requires it). */
function consented() {
  try {
    return CONFIG.require_consent && !STATIC && localStorage.getItem(CONSENT_KEY) === "1";
  } catch {
    return false;
  }
}

/** Where the owner requires consent: a short notice with Accept under the question box.
 * Until it is accepted, questions go without `consent` and the runtime stores nothing of them. */
function consentNotice(form) {
  if (!CONFIG.require_consent || STATIC || consented()) return;
  const notice = form.appendChild(el("div", "dp-consent"));
  notice.append(el("span", null, T.consent_notice));
  const accept = notice.appendChild(el("button", "dp-accept", T.consent_accept));
  accept.type = "button";
  accept.addEventListener("click", () => {
    try {
      localStorage.setItem(CONSENT_KEY, "1");
    } catch {
      return; // storage refused: nothing can remember the choice, so do not claim it
    }
    notice.remove();
  });
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
function resolveEndpoint(recheck = false) {
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

let FELL_BACK = false;

/** No runtime answers: from now on this page answers in the browser, from static.json. */
function fallBack() {
  if (STATIC) return;
  STATIC = FELL_BACK = true;
  API = null;
  resolving = Promise.resolve(true);
}

// -------------------------------------------------------------- asking

/** Send one question to the runtime and read its Server-Sent Events; `view` draws
 * progress and deltas as they arrive. Resolves with the authoritative result. */
async function askServer(body, view, signal) {
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
    throw Object.assign(new Error(error?.message || `HTTP ${response.status}`), limit ? { limit } : {});
  }
  const type = response.headers.get("content-type") || "";
  // A host that answers every path with a page (a single-page-app fallback) has no API.
  if (type.includes("text/html")) throw Object.assign(new Error("no API"), { unreachable: true, absent: true });
  if (!type.includes("event-stream")) return response.json();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let result = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
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
function historyItem({ question, quote, result }) {
  const item = { question, kind: result.kind, markdown: result.markdown.slice(0, 20000) };
  if (result.summary) item.summary = result.summary.slice(0, 2000);
  if (result.rescued) item.rescued = true;
  if (quote) item.quote = quote;
  return item;
}

// -------------------------------------------------------------- storage

function load(storage, key, fallback) {
  try {
    return JSON.parse(storage.getItem(key)) ?? fallback;
  } catch {
    return fallback;
  }
}

function store(storage, key, value) {
  try {
    value == null ? storage.removeItem(key) : storage.setItem(key, JSON.stringify(value));
  } catch {
    /* storage full or disabled: the conversation simply is not kept */
  }
}

const newChat = () => ({ id: `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`, turns: [] });

// Only what a turn needs to be drawn again and remembered.
const keep = (r) => ({
  turn_id: r.turn_id, kind: r.kind, markdown: r.markdown, blocks: blocksOf(r), citations: r.citations || [],
  closest: r.closest || [], tentative: !!r.tentative, actions: r.actions || [],
  summary: r.summary || "", rescued: !!r.rescued,
});

// -------------------------------------------------------------- the widget

class Widget {
  constructor() {
    this.chat = this.restore();
    this.inFlight = null; // the turn being answered, once its question passed the check
    this.leaving = false;
    addEventListener("pagehide", () => (this.leaving = true));
    addEventListener("pageshow", () => (this.leaving = false));
    this.busy = false;
    this.quote = "";
    this.build();
    if (this.chat.open) this.open(false);
  }

  /** The conversation this tab kept, with a question a page load interrupted put back as
   * a failed turn that offers Retry (it passed the credential check before it was kept). */
  restore() {
    const chat = load(sessionStorage, CHAT_KEY, null) || newChat();
    const { pending } = chat;
    delete chat.pending;
    if (pending?.question) {
      chat.turns.push({ question: String(pending.question), quote: pending.quote || undefined, error: T.interrupted, local: true });
    }
    return chat;
  }

  /** Start what the first question needs, at the first sign of intent (pointer or focus
   * on the launcher, the shortcut, opening): Pyodide's boot and finding the runtime. */
  prepare() {
    bootWorker().catch(() => {});
    resolveEndpoint().then(() => this.noteFallback());
  }

  /** Say once, at the top of the conversation, that no runtime answers and the docs'
   * own passages are found in the browser instead. */
  noteFallback() {
    if (!FELL_BACK || this.log.querySelector(".dp-notice")) return;
    const note = el("p", "dp-notice", T.static_fallback);
    note.setAttribute("role", "status");
    this.log.prepend(note);
  }

  build() {
    const root = (this.root = el("div", `dp dp--${CONFIG.position === "bottom-left" ? "left" : "right"}`));
    root.id = "docpilot";
    root.hidden = true; // until the stylesheet is in
    const css = el("link");
    css.rel = "stylesheet";
    css.href = new URL("docpilot.css", import.meta.url).href;
    css.onload = () => (root.hidden = false);
    // The stylesheet lives in the widget, not <head>: Material's instant navigation
    // drops head elements the next page does not have.
    root.append(css);

    const title = CONFIG.title || "Ask the docs";
    this.launcher = button("dp-launcher", `${title} (${T.shortcut})`, () => (this.panel.hidden ? this.open() : this.close()));
    this.launcher.append(icon("chat"), el("span", null, T.launcher));
    this.launcher.setAttribute("aria-expanded", "false");
    this.launcher.setAttribute("aria-controls", "dp-panel");
    this.launcher.setAttribute("aria-keyshortcuts", "A");
    for (const intent of ["pointerenter", "focus"]) this.launcher.addEventListener(intent, () => this.prepare(), { once: true });

    const panel = (this.panel = el("section", "dp-panel"));
    panel.id = "dp-panel";
    panel.hidden = true;
    panel.setAttribute("role", "dialog");
    panel.setAttribute("aria-labelledby", "dp-title");
    const head = panel.appendChild(el("header", "dp-head"));
    head.append(el("h2", "dp-title", title));
    head.lastChild.id = "dp-title";
    const tool = (label, name, onClick) => head.appendChild(button("dp-icon", label, onClick)).append(icon(name));
    if (CONFIG.history) tool(T.past, "past", () => this.togglePast());
    tool(T.new_chat, "plus", () => this.reset());
    tool(T.close, "close", () => this.close());

    this.log = panel.appendChild(el("div", "dp-log"));
    this.log.tabIndex = -1;
    // A log, but not live itself: the region below speaks each finished block as plain
    // text, so nothing is read twice and no Markdown is ever read out.
    this.log.setAttribute("role", "log");
    this.log.setAttribute("aria-live", "off");
    this.log.setAttribute("aria-label", title);
    this.pastList = panel.appendChild(el("div", "dp-past"));
    this.pastList.hidden = true;
    // Screen readers hear progress and streamed text from here (the log itself is not live,
    // so nothing is read twice).
    this.live = panel.appendChild(el("div", "dp-sr"));
    this.live.setAttribute("aria-live", "polite");

    const form = (this.form = panel.appendChild(el("form", "dp-form")));
    this.chip = form.appendChild(el("div", "dp-chip"));
    this.chip.hidden = true;
    const row = form.appendChild(el("div", "dp-row"));
    this.input = row.appendChild(el("textarea", "dp-input"));
    this.input.rows = 1;
    this.input.placeholder = CONFIG.placeholder || "";
    this.input.setAttribute("aria-label", CONFIG.placeholder || title);
    this.send = row.appendChild(el("button", "dp-send"));
    this.send.type = "submit";
    this.send.setAttribute("aria-label", T.send);
    this.send.title = T.send;
    this.send.append(icon("send"));
    this.tooLong = form.appendChild(el("p", "dp-error dp-long"));
    this.tooLong.id = "dp-long";
    this.tooLong.hidden = true;
    consentNotice(form);
    const foot = form.appendChild(el("div", "dp-foot"));
    foot.append(el("span", null, T.privacy));
    this.count = foot.appendChild(el("span", "dp-count"));
    this.count.id = "dp-count";
    this.input.setAttribute("aria-describedby", "dp-count dp-long");
    this.counted();
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.busy ? this.controller?.abort() : this.ask(this.input.value);
    });
    this.input.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter" || ev.shiftKey || ev.isComposing) return; // Shift+Enter: new line
      ev.preventDefault();
      this.ask(this.input.value);
    });
    this.input.addEventListener("input", () => {
      this.counted();
      this.input.style.height = "auto";
      this.input.style.height = `${Math.min(this.input.scrollHeight, 160)}px`;
    });

    this.quoteButton = button("dp-quote-btn", null, () => this.attachQuote(), T.ask_about);
    this.quoteButton.hidden = true;
    this.quoteButton.addEventListener("mousedown", (ev) => ev.preventDefault()); // keep the selection
    document.addEventListener("selectionchange", () => this.onSelection());

    panel.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") {
        ev.stopPropagation();
        this.close();
      }
      if (ev.key === "Tab" && FULL_SCREEN.matches) this.trapFocus(ev);
    });
    document.addEventListener("keydown", (ev) => this.onKey(ev));
    // The question box comes first in Tab order (it is drawn last): Tab from it reaches the
    // answer's citations, actions and feedback, not the page behind the panel.
    panel.insertBefore(form, this.log);
    root.append(panel, this.launcher, this.quoteButton);
    document.body.append(root);
    this.draw();
    for (const event of ["scroll", "resize"]) addEventListener(event, () => this.lift(), { passive: true });
    DOCKED.addEventListener("change", () => this.dock());
    this.lift();
  }

  /** Keep the launcher and panel above Material's footer navigation ("Previous", "Next")
   * once it scrolls into view, rather than covering its links. */
  lift() {
    const nav = document.querySelector(".md-footer__inner");
    const top = nav ? nav.getBoundingClientRect().top : innerHeight;
    this.root.style.setProperty("--dp-lift", `${Math.max(0, Math.round(innerHeight - top))}px`);
  }

  onKey(ev) {
    const target = ev.target;
    const typing = target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName);
    if (ev.key === "Escape" && !this.panel.hidden && !typing) return this.close();
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey || ev.isComposing) return;
    if ((ev.key === "a" || ev.key === "A") && this.panel.hidden) {
      ev.preventDefault();
      this.open();
    }
  }

  /** Full screen, the panel hides the page: keep Tab inside it, the way a modal would. */
  trapFocus(ev) {
    const stops = [...this.panel.querySelectorAll("a[href], button, textarea")].filter((e) => e.offsetParent && !e.disabled);
    const edge = ev.shiftKey ? stops[0] : stops.at(-1);
    if (document.activeElement !== edge) return;
    ev.preventDefault();
    (ev.shiftKey ? stops.at(-1) : stops[0]).focus();
  }

  /** The counter under the box: length against the limit, flagged past it. */
  counted() {
    const n = this.input.value.length;
    const over = n > maxChars;
    this.count.textContent = `${n.toLocaleString(LANG)} / ${maxChars.toLocaleString(LANG)}`;
    this.count.classList.toggle("dp-over", over);
    this.input.setAttribute("aria-invalid", String(over));
    if (!over) this.tooLong.hidden = true;
    return over;
  }

  tooLongText() {
    return T.too_long.replace("{limit}", maxChars.toLocaleString(LANG));
  }

  /** The send button while a turn runs: it stops the turn. */
  sending(busy) {
    const label = busy ? T.stop : T.send;
    this.send.setAttribute("aria-label", label);
    this.send.title = label;
    this.send.replaceChildren(icon(busy ? "stop" : "send"));
  }

  /** On wide screens the open panel docks beside the page, which narrows to make room
   * (docpilot.css); the class is on <html> so that the page's own layout can follow. */
  dock() {
    const side = CONFIG.position === "bottom-left" ? "left" : "right";
    const docked = !this.panel.hidden && DOCKED.matches;
    document.documentElement.classList.toggle("dp-docked", docked);
    document.documentElement.classList.toggle(`dp-docked--${side}`, docked);
    this.lift();
  }

  open(focus = true) {
    this.panel.hidden = false;
    this.launcher.classList.remove("dp-unread");
    this.launcher.setAttribute("aria-label", this.launcher.title);
    this.panel.setAttribute("aria-modal", String(FULL_SCREEN.matches));
    this.launcher.setAttribute("aria-expanded", "true");
    this.root.classList.add("dp--open");
    this.dock();
    if (focus) this.input.focus();
    this.scrollDown();
    // Boot now (if hovering did not already), while the reader types.
    this.prepare();
    if (this.chat.turns.length) this.save();
  }

  close() {
    this.panel.hidden = true;
    this.quoteButton.hidden = true;
    this.launcher.setAttribute("aria-expanded", "false");
    this.root.classList.remove("dp--open");
    this.dock();
    this.launcher.focus();
    if (this.chat.turns.length) this.save();
  }

  /** Keep the conversation: always in sessionStorage (with whether the panel was open,
   * so a full page load restores it), and in localStorage when the owner enabled history.
   * Only ever called after a first question. */
  save() {
    const turns = this.chat.turns.filter((t) => t.result && !t.local);
    const pending = this.inFlight && { question: this.inFlight.question, quote: this.inFlight.quote };
    store(sessionStorage, CHAT_KEY, { id: this.chat.id, open: !this.panel.hidden, turns, ...(pending && { pending }) });
    if (!CONFIG.history || !turns.length) return;
    // Past conversations keep no model summaries: reopened, they travel as skeletons.
    const past = load(localStorage, PAST_KEY, []).filter((c) => c.id !== this.chat.id);
    const plain = turns.map(({ question, quote, result }) => ({ question, quote, result: { ...result, summary: "" } }));
    past.unshift({ id: this.chat.id, at: Date.now(), turns: plain });
    store(localStorage, PAST_KEY, past.slice(0, MAX_PAST));
  }

  reset() {
    if (this.busy) return;
    this.chat = newChat();
    if (load(sessionStorage, CHAT_KEY, null)) store(sessionStorage, CHAT_KEY, null);
    this.setQuote("");
    this.pastList.hidden = true;
    this.log.hidden = false;
    this.draw();
    this.input.focus();
  }

  togglePast() {
    const showing = this.pastList.hidden;
    this.pastList.hidden = !showing;
    this.log.hidden = showing;
    if (!showing) return this.input.focus();
    const past = load(localStorage, PAST_KEY, []);
    this.pastList.replaceChildren(el("h3", null, T.past));
    if (!past.length) this.pastList.append(el("p", null, T.past_empty));
    const items = this.pastList.appendChild(el("ul"));
    for (const chat of past) {
      const when = new Date(chat.at).toLocaleString(document.documentElement.lang || undefined);
      const open = button(null, null, () => this.reopen(chat), chat.turns[0]?.question || "…");
      open.append(el("small", null, when));
      items.appendChild(el("li")).append(open);
    }
    items.querySelector("button")?.focus();
  }

  reopen(chat) {
    this.chat = { id: chat.id, turns: chat.turns };
    this.pastList.hidden = true;
    this.log.hidden = false;
    this.save();
    this.draw();
    this.input.focus();
  }

  // ------------------------------------------------------------ drawing

  draw() {
    this.log.replaceChildren();
    if (!this.chat.turns.length) {
      this.drawEmpty();
      return this.noteFallback();
    }
    this.chat.turns.forEach((turn, index) => {
      const view = this.turnView(turn, index);
      if (turn.result) this.drawResult(view, turn.result, index);
      else if (turn.error) view.body.append(this.errorBox(turn));
    });
    this.noteFallback();
    this.scrollDown();
  }

  drawEmpty() {
    const empty = this.log.appendChild(el("div", "dp-empty"));
    empty.append(el("p", null, T.intro));
    const questions = CONFIG.suggested_questions || [];
    if (!questions.length) return;
    empty.append(el("p", "dp-label", T.suggested));
    const list = empty.appendChild(el("ul", "dp-suggest"));
    for (const q of questions) list.appendChild(el("li")).append(button(null, null, () => this.ask(q), q));
  }

  turnView(turn, index) {
    const wrap = this.log.appendChild(el("article", "dp-turn"));
    const q = wrap.appendChild(el("div", "dp-q"));
    if (turn.quote) q.append(el("blockquote", null, turn.quote));
    q.append(el("p", null, turn.mask || turn.question));
    const answer = wrap.appendChild(el("div", "dp-a"));
    const steps = answer.appendChild(el("ul", "dp-steps"));
    const body = answer.appendChild(el("div", "dp-body md-typeset"));
    body.dataset.turn = index;
    return { wrap, answer, steps, body };
  }

  /** Draw a finished turn; replaces whatever the stream drew. */
  drawResult(view, result, index) {
    const { answer, steps, body } = view;
    steps.remove();
    const byN = new Map((result.citations || []).map((c) => [c.n, c]));
    const anchor = (n) => `dp-c${index}-${n}`;
    const cite = (n) => {
      if (!byN.has(n)) return null;
      const a = el("a", "dp-cite", String(n));
      a.href = `#${anchor(n)}`;
      a.setAttribute("aria-label", `${n}: ${sourceLabel(byN.get(n))}`);
      // Scroll within the panel; Material's instant navigation must not see this click.
      a.addEventListener("click", (ev) => {
        ev.preventDefault();
        ev.stopPropagation();
        const item = document.getElementById(anchor(n));
        item?.scrollIntoView({ block: "nearest" });
        item?.querySelector("a")?.focus();
      });
      return a;
    };
    body.replaceChildren(tree(blocksOf(result), { cite }));
    body.dataset.kind = result.kind;
    for (const pre of body.querySelectorAll("pre")) {
      const copy = button("dp-icon dp-copy-code", T.copy_code, () => this.copied(copy, pre.textContent.replace(/\n$/, "")));
      pre.append(copy);
      copy.append(icon("copy"));
    }
    if (result.tentative) {
      const badge = el("span", "dp-badge", T.tentative);
      badge.title = T.tentative_hint;
      answer.insertBefore(badge, body);
    }
    if (byN.size) {
      answer.append(el("p", "dp-label", T.sources));
      // Not an <ol>: the list's own numbers would double a numbered heading ("1. 4. Ask").
      const list = answer.appendChild(el("ul", "dp-cites"));
      for (const c of byN.values()) {
        const item = list.appendChild(el("li"));
        item.id = anchor(c.n);
        item.append(el("span", "dp-n", String(c.n)));
        const href = c.url ? safeHref(c.url) : null;
        if (!href) {
          item.append(el("span", null, c.title)); // a site tool's reply has no page
          continue;
        }
        const a = item.appendChild(link(href, sourceLabel(c)));
        // Full screen, the panel covers the page: get out of the way of the cited section.
        a.addEventListener("click", () => FULL_SCREEN.matches && this.close());
        if (!c.excerpt) continue;
        const tip = item.appendChild(el("span", "dp-preview", c.excerpt));
        tip.id = `${item.id}-p`;
        tip.setAttribute("role", "tooltip");
        a.setAttribute("aria-describedby", tip.id);
      }
    }
    if (result.kind === "refusal") this.drawRefusal(answer, body, result);
    if (result.actions?.length) {
      const row = answer.appendChild(el("div", "dp-actions"));
      for (const action of result.actions) row.append(this.actionButton(action));
    }
    const rated = result.turn_id && !STATIC && ["answer", "passages", "refusal"].includes(result.kind);
    const row = answer.appendChild(rated ? this.feedback(result.turn_id) : el("div", "dp-tools"));
    const turn = this.chat.turns[index];
    const tools = [];
    if (result.markdown) tools.push(button("dp-icon", T.copy, () => this.copied(tools[0], result.markdown)));
    if (turn && turn === this.chat.turns.at(-1) && result.kind !== "credential") tools.push(button("dp-icon dp-again", T.retry, () => this.retry(turn)));
    tools.forEach((b, i) => b.append(icon(i || !result.markdown ? "retry" : "copy")));
    row.prepend(...tools);
  }

  /** Copy `text`, and say so on the button and to screen readers. */
  async copied(node, text) {
    const said = (await copyText(text)) ? T.copied : T.copy_failed;
    const label = node.getAttribute("aria-label");
    node.setAttribute("aria-label", said);
    node.title = this.live.textContent = said;
    setTimeout(() => {
      node.setAttribute("aria-label", label);
      node.title = label;
    }, 2000);
  }

  drawRefusal(answer, body, result) {
    // The runtime's refusal text usually lists the closest pages itself; add them only if not.
    const closest = (result.closest || []).filter((p) => safeHref(p.url));
    const listed = [...body.querySelectorAll("a")].map((a) => a.href);
    if (closest.length && !closest.every((p) => listed.includes(safeHref(p.url)))) {
      answer.append(el("p", "dp-label", T.closest));
      const list = answer.appendChild(el("ul", "dp-cites"));
      for (const p of closest) list.appendChild(el("li")).append(link(safeHref(p.url), p.title || p.url));
    }
    const support = CONFIG.support_url;
    if (support && /^(https?:|mailto:|\/)/i.test(support)) {
      const a = answer.appendChild(link(new URL(support, ROOT).href, T.support));
      a.className = "dp-support";
    }
  }

  /** A declared URL opens (placeholders filled, URL-encoded); otherwise the site's own
   * script gets a `docpilot:action` event on document. The runtime never runs an action. */
  actionButton({ name, arguments: args = {} }) {
    const label = String(name).replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());
    return button("md-button dp-action", null, () => {
      const template = (CONFIG.actions || {})[name];
      if (!template) {
        document.dispatchEvent(new CustomEvent("docpilot:action", { detail: { name, arguments: args } }));
        return;
      }
      const url = template.replace(/\{(\w+)\}/g, (_, key) => encodeURIComponent(args[key] ?? ""));
      window.open(new URL(url, ROOT).href, "_blank", "noopener");
    }, label);
  }

  feedback(turnId) {
    const box = el("div", "dp-fb");
    const reasons = new Set();
    const form = el("div", "dp-fb-form");
    form.hidden = true;
    const done = el("p", "dp-fb-done");
    done.setAttribute("role", "status");
    // Thanks only once the runtime has the rating; a failure says so and lets the
    // reader send it again (the form keeps what they wrote).
    const post = async (rating) => {
      const body = { turn_id: turnId, rating };
      const buttons = [up, down, ...form.querySelectorAll("button")];
      buttons.forEach((b) => (b.disabled = true));
      done.className = "dp-fb-done";
      done.textContent = T.sending_feedback;
      let withheld = ""; // why the note stayed in the browser: "note_withheld" or "note_unchecked"
      if (rating === "down") {
        if (reasons.size) body.reasons = [...reasons];
        const text = note.value.trim().slice(0, 1000);
        // The note is the reader's text, as the question is: a secret in it (or a check
        // that could not run) keeps it in the browser; the rating is sent all the same.
        if (text) {
          withheld = await bootWorker()
            .then(() => call("check", { question: text }))
            .then((r) => (r.credential ? "note_withheld" : ""), () => "note_unchecked");
        }
        if (text && !withheld) body.note = text;
      }
      const sent = await fetch(`${API}/feedback`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      }).then((r) => r.ok, () => false);
      done.textContent = sent ? (withheld ? `${T.thanks} ${T[withheld]}` : T.thanks) : T.feedback_failed;
      done.classList.toggle("dp-fb-failed", !sent);
      if (sent) return (form.hidden = true);
      buttons.forEach((b) => (b.disabled = false));
    };
    const up = button("dp-icon", T.helpful, () => {
      up.setAttribute("aria-pressed", "true");
      down.setAttribute("aria-pressed", "false");
      post("up");
    });
    up.append(icon("thumb"));
    const down = button("dp-icon", T.not_helpful, () => {
      down.setAttribute("aria-pressed", "true");
      up.setAttribute("aria-pressed", "false");
      form.hidden = false;
      // The form opens below the answer, often under the fold of the panel.
      form.scrollIntoView({ block: "nearest" });
      form.querySelector("button").focus({ preventScroll: true });
    });
    down.append(icon("thumb", true));
    for (const reason of ["incorrect", "incomplete", "unclear"]) {
      const tag = button("dp-tag", null, () => {
        reasons.has(reason) ? reasons.delete(reason) : reasons.add(reason);
        tag.setAttribute("aria-pressed", String(reasons.has(reason)));
      }, T[`reason_${reason}`]);
      tag.setAttribute("aria-pressed", "false");
      form.append(tag);
    }
    const note = form.appendChild(el("textarea", "dp-note"));
    note.rows = 2;
    note.maxLength = 1000;
    note.placeholder = T.note;
    note.setAttribute("aria-label", T.note);
    form.append(button("md-button dp-fb-send", null, () => post("down"), T.send_feedback));
    box.append(up, down, done, form);
    return box;
  }

  /** Scroll the log down, but never past the top of `turn`: a long answer is read from
   * its question down, not from its feedback buttons up. */
  scrollDown(turn = this.log.lastElementChild) {
    this.log.scrollTop = Math.min(turn ? turn.offsetTop - 8 : Infinity, this.log.scrollHeight);
  }

  // ------------------------------------------------------------ quoting

  onSelection() {
    const selection = document.getSelection();
    const body = (node) => (node?.nodeType === 1 ? node : node?.parentElement)?.closest(".dp-body");
    const inAnswer = selection && !selection.isCollapsed && body(selection.anchorNode) &&
      body(selection.anchorNode) === body(selection.focusNode);
    const text = inAnswer ? selection.toString().trim() : "";
    if (!text || this.panel.hidden) return (this.quoteButton.hidden = true);
    this.selected = text.slice(0, 2000);
    const rect = selection.getRangeAt(0).getBoundingClientRect();
    Object.assign(this.quoteButton.style, {
      top: `${Math.max(8, Math.min(rect.bottom + 6, innerHeight - 40))}px`,
      left: `${Math.max(8, Math.min(rect.left, innerWidth - 180))}px`,
    });
    this.quoteButton.hidden = false;
  }

  attachQuote() {
    this.setQuote(this.selected || "");
    document.getSelection()?.removeAllRanges();
    this.quoteButton.hidden = true;
    this.input.focus();
  }

  setQuote(text) {
    this.quote = text;
    this.chip.hidden = !text;
    this.chip.replaceChildren();
    if (!text) return;
    this.chip.append(el("span", "dp-label", T.quoting), el("q", null, text));
    const remove = button("dp-icon", T.remove_quote, () => {
      this.setQuote("");
      this.input.focus();
    });
    remove.append(icon("close"));
    this.chip.append(remove);
  }

  // ------------------------------------------------------------ one turn

  /** A turn that failed: its message with a retry, and the question back in the box. */
  fail(view, turn, message) {
    turn.local = true;
    turn.error = message;
    view.steps.remove();
    view.body.replaceChildren(this.errorBox(turn));
    this.live.textContent = message;
    if (!this.input.value.trim()) this.input.value = turn.question;
    if (turn.quote && !this.quote) this.setQuote(turn.quote);
    this.counted();
  }

  errorBox(turn) {
    const box = el("div", "dp-error");
    box.append(el("p", null, turn.error), button("md-button dp-retry", null, () => this.retry(turn), T.retry));
    return box;
  }

  /** Ask a failed turn's question again, in its place. */
  retry(turn) {
    if (this.busy) return;
    this.input.value = "";
    this.chat.turns = this.chat.turns.filter((t) => t !== turn);
    this.draw();
    this.setQuote(turn.quote || "");
    this.ask(turn.question);
  }

  /** The result for `body`: from the runtime, or from the static index in the worker when
   * there is none (found out now, should the runtime have stopped answering). */
  async answer(body, ui, signal) {
    await resolveEndpoint();
    if (!STATIC) {
      try {
        return await askServer(body, ui, signal);
      } catch (error) {
        if (signal.aborted || !error.unreachable) throw error;
        if (error.absent) fallBack();
        else if (!(await resolveEndpoint(true))) throw error; // unreachable: is it there at all?
      }
    }
    this.noteFallback();
    ui.progress(T.searching);
    return call("ask", { request: body, maxQuestionChars: maxChars });
  }

  async ask(raw) {
    const question = String(raw || "").trim();
    if (!question || this.busy) return;
    if (question.length > maxChars) {
      // Never cut a question silently: keep it in the box and say what the limit is.
      this.input.value ||= question;
      this.counted();
      this.tooLong.textContent = this.tooLongText();
      this.tooLong.hidden = false;
      this.live.textContent = this.tooLong.textContent;
      return;
    }
    this.busy = true;
    this.log.setAttribute("aria-busy", "true");
    const controller = (this.controller = new AbortController());
    const stopped = new Promise((_, reject) => controller.signal.addEventListener("abort", () => reject(Object.assign(new Error("stopped"), { name: "AbortError" }))));
    stopped.catch(() => {});
    const until = (promise) => Promise.race([promise, stopped]);
    this.sending(true);
    const quote = this.quote;
    this.input.value = "";
    this.input.style.height = "";
    this.counted();
    this.setQuote("");
    this.pastList.hidden = true;
    this.log.hidden = false;
    if (!this.chat.turns.length) this.log.replaceChildren();
    for (const again of this.log.querySelectorAll(".dp-again")) again.remove(); // only the latest answer is retried
    const turn = { question, quote: quote || undefined };
    const index = this.chat.turns.push(turn) - 1;
    const view = this.turnView(turn, index);
    this.live.textContent = "";
    let streamed = [];
    let drafted = [];
    let frame = 0;
    const ui = {
      progress: (message) => {
        view.steps.append(el("li", null, message));
        this.live.textContent = message;
        this.scrollDown();
      },
      // Settled blocks are appended; the draft of the open block replaces the last one.
      delta: ({ blocks, draft }) => {
        if (!streamed.length && !drafted.length) this.live.textContent = ""; // it reads the answer now
        streamed = streamed.concat(blocks || []);
        drafted = draft || [];
        this.live.append(textOf(blocks));
        // Redraw at most once a frame; markers become links when the answer lands.
        frame ||= requestAnimationFrame(() => {
          frame = 0;
          view.body.replaceChildren(tree(streamed.concat(drafted), { cite: () => null }));
          this.scrollDown();
        });
      },
    };
    this.scrollDown();
    try {
      // 1. The secret check, in this browser, before anything leaves it.
      const boot = bootWorker();
      const settled = boot.then(() => true, () => true);
      if (!(await Promise.race([settled, new Promise((r) => setTimeout(r, 150, false))]))) {
        ui.progress(T.preparing);
      }
      const sent = this.chat.turns.slice(0, index).filter((t) => t.result && !t.local).slice(-HISTORY_SENT);
      const body = { question, history: sent.map(historyItem), page: location.pathname };
      if (LANG_TAG) body.lang = LANG_TAG; // the runtime's refusal, framing and progress follow it
      if (quote) body.quote = quote;
      if (consented()) body.consent = true;
      let credential;
      try {
        await until(boot);
        credential = await until(screen(body, sent));
      } catch (error) {
        return this.fail(view, turn, controller.signal.aborted ? T.stopped : T.check_failed);
      }
      if (credential) {
        turn.local = true; // never stored, never sent as history
        if (!credential.inQuote && credential.end > credential.start) {
          turn.mask = question.slice(0, credential.start) + "•".repeat(8) + question.slice(credential.end);
          view.wrap.querySelector(".dp-q p").textContent = turn.mask;
        }
        turn.result = { kind: "credential", markdown: credential.markdown, blocks: credential.blocks };
        this.drawResult(view, turn.result, index);
        this.live.textContent = view.body.textContent;
        return;
      }
      // 2. Ask the runtime (or, in static mode, the static index in the worker).
      this.inFlight = turn; // kept, so a page load now offers it again (`restore`)
      this.save();
      const result = await until(this.answer(body, ui, controller.signal));
      cancelAnimationFrame(frame);
      turn.result = keep(result);
      turn.local = result.kind === "credential"; // caught by the server's check: keep it nowhere
      this.drawResult(view, turn.result, index);
      if (!streamed.length && !drafted.length) this.live.textContent = view.body.textContent;
      this.save();
    } catch (error) {
      cancelAnimationFrame(frame);
      if (controller.signal.aborted) return this.fail(view, turn, T.stopped);
      console.error("DocPilot:", error.message); // the question itself is never logged
      if (error.limit) maxChars = error.limit;
      this.fail(view, turn, error.limit ? this.tooLongText() : error.unreachable ? T.network : T.error);
    } finally {
      // Unless the page is going away (its requests end with it): then the next page offers it.
      if (this.inFlight === turn && !this.leaving) {
        this.inFlight = null;
        this.save();
      }
      this.busy = false;
      this.log.setAttribute("aria-busy", "false");
      this.sending(false);
      this.scrollDown();
      // Closed mid-answer: the launcher says something new is waiting.
      if (this.panel.hidden) {
        this.launcher.classList.add("dp-unread");
        this.launcher.setAttribute("aria-label", `${this.launcher.title} (${T.unread})`);
      }
    }
  }
}

new Widget();

// The renderer, for tests and pages that draw a stored result themselves.
export { tree as renderTree };
