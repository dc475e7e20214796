/* The conversation: asking a question (the secret check, then the runtime or the static
 * index), drawing each turn and its result, and keeping the chat across page loads.
 *
 * Privacy: nothing the reader writes is stored or sent before their first question. At the
 * first sign of intent (pointer or focus on the launcher, the shortcut, typing in the
 * theme's search box) the widget fetches
 * Pyodide and asks the runtime's /api/health whether it is there; that carries nothing of the
 * reader's. Every question first goes through the credential check in the Pyodide worker
 * (worker.js), with its quote, page and history; a question or quote holding a secret is
 * answered here and never sent (nor kept), a history item holding one is dropped. If the
 * worker cannot start, nothing is sent at all.
 *
 * A page load mid-answer: the question (once checked) is kept in sessionStorage while it is
 * answered, and the next page offers it again with Retry (`restore`).
 *
 * Material's instant navigation swaps the page without re-running this script: the widget
 * stays (with its conversation) and reads `location.pathname` when it sends, so `page` is
 * always the page the reader is on. */

import { CONFIG, T, LANG, LANG_TAG, HISTORY_SENT, MAX_PAST, FULL_SCREEN } from "./config.js";
import { el, button, icon, link, safeHref, sourceLabel } from "./dom.js";
import { tree, textOf, blocksOf, markdownOf } from "./tree.js";
import { STATIC, FELL_BACK, bootWorker, call, screen, resolveEndpoint, fallBack, loadStatic, askServer, historyItem } from "./client.js";
import { CHAT_KEY, PAST_KEY, DRAFT_KEY, load, store, newChat, keep, consented } from "./storage.js";
import { copied, drawRefusal, actionButton, feedback } from "./controls.js";
import { Panel } from "./panel.js";

const STILL_MS = 6000; // silence before "still working"
const STALL_MS = 60000; // silence before the turn times out

export class Widget extends Panel {
  constructor() {
    super();
    this.chat = this.restore();
    this.inFlight = null; // the turn being answered, once its question passed the check
    this.leaving = false;
    addEventListener("pagehide", () => (this.leaving = true));
    addEventListener("pageshow", () => (this.leaving = false));
    this.busy = false;
    this.build();
    if (this.chat.open) this.open(false);
    // A question sent while Pyodide was still starting, then a page load: back in the box.
    const draft = load(sessionStorage, DRAFT_KEY, null);
    if (draft?.question) {
      store(sessionStorage, DRAFT_KEY, null);
      this.draft(String(draft.question));
      this.quoting.set(draft.quote || "");
    }
  }

  /** Open the panel with `text` in the box, for the reader to finish and send. */
  draft(text) {
    if (this.panel.hidden) this.open();
    this.input.value = text;
    this.input.focus();
    this.counted();
  }

  /** A query from the site's search: a keyword query (one to three words) waits in the box
   * for the reader to edit and send; a longer one is asked. */
  handoff(query) {
    if (!query) return;
    this.draft(query);
    if (query.split(/\s+/).length > 3) this.ask(query);
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
    this.quoting.set("");
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
      const when = new Date(chat.at).toLocaleString(LANG);
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
      const copy = button("dp-icon dp-copy-code", T.copy_code, () => copied(copy, pre.textContent.replace(/\n$/, ""), this.live));
      pre.append(copy);
      copy.append(icon("copy"));
    }
    // A model's answer says so, in one line, with where to look.
    const ai = result.kind === "answer" && CONFIG.ai_notice;
    if (ai) {
      const note = answer.insertBefore(el("p", "dp-ai"), body);
      note.append(el("strong", null, T.ai_label), ` · ${T.ai_hint}`);
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
        const tip = item.appendChild(el("span", "dp-preview"));
        // The section's words as its page shows them: `code` stays code.
        String(c.excerpt).split(/`([^`\n]+)`/).forEach((part, i) => tip.append(i % 2 ? el("code", null, part) : part));
        tip.id = `${item.id}-p`;
        tip.setAttribute("role", "tooltip");
        a.setAttribute("aria-describedby", tip.id);
      }
    }
    if (result.kind === "refusal") drawRefusal(answer, body, result);
    if (result.actions?.length) {
      const row = answer.appendChild(el("div", "dp-actions"));
      for (const action of result.actions) row.append(actionButton(action));
    }
    const rated = result.turn_id && !STATIC && ["answer", "passages", "refusal"].includes(result.kind);
    const row = answer.appendChild(rated ? feedback(result.turn_id, ai) : el("div", "dp-tools"));
    const turn = this.chat.turns[index];
    const tools = [];
    if (result.markdown) tools.push(button("dp-icon", T.copy, () => copied(tools[0], markdownOf(result), this.live)));
    if (turn && turn === this.chat.turns.at(-1) && result.kind !== "credential") tools.push(button("dp-icon dp-again", T.retry, () => this.retry(turn)));
    tools.forEach((b, i) => b.append(icon(i || !result.markdown ? "retry" : "copy")));
    row.prepend(...tools);
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
    if (turn.quote && !this.quoting.text) this.quoting.set(turn.quote);
    this.counted();
  }

  /** The failure's message, the runtime's own words under it when it gave some, and Retry,
   * which a rate cap keeps off (counting down) until its wait is over. */
  errorBox(turn) {
    const box = el("div", "dp-error");
    const again = button("md-button dp-retry", null, () => this.retry(turn), T.retry);
    box.append(el("p", null, turn.error), turn.said ? el("small", null, turn.said) : "", again);
    const tick = () => {
      const left = Math.ceil((turn.until - Date.now()) / 1000);
      again.disabled = left > 0;
      again.textContent = left > 0 ? `${T.retry} (${left})` : T.retry;
      if (left > 0) setTimeout(tick, 1000);
    };
    if (turn.until) tick();
    return box;
  }

  /** Ask a failed turn's question again, in its place. */
  retry(turn) {
    if (this.busy) return;
    this.input.value = "";
    this.chat.turns = this.chat.turns.filter((t) => t !== turn);
    this.draw();
    this.quoting.set(turn.quote || "");
    this.ask(turn.question);
  }

  /** The result for `body`: from the runtime, or from the static index in the worker when
   * there is none (found out now, should the runtime have stopped answering). */
  async answer(body, ui, signal) {
    await resolveEndpoint();
    if (!STATIC) {
      ui.progress(T.waiting);
      try {
        return await askServer(body, ui, signal);
      } catch (error) {
        if (signal.aborted || !error.unreachable || !navigator.onLine) throw error;
        if (error.absent) fallBack();
        else if (!(await resolveEndpoint(true))) throw error; // unreachable: is it there at all?
      }
    }
    ui.progress(T.searching);
    await loadStatic();
    this.noteFallback();
    return call("ask", { request: body, maxQuestionChars: this.maxChars });
  }

  async ask(raw) {
    const question = String(raw || "").trim();
    if (!question || this.busy) return;
    if (question.length > this.maxChars) {
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
    // Why the turn ended early: the reader's Stop, or the silence timeout.
    const endedBy = () => (controller.signal.reason === "timeout" ? T.timed_out : T.stopped);
    this.sending(true);
    const quote = this.quoting.text;
    this.input.value = "";
    this.input.style.height = "";
    this.counted();
    this.quoting.set("");
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
    const say = (message) => {
      view.steps.append(el("li", null, message));
      this.live.textContent = message;
      this.scrollDown();
    };
    // Silence from the runtime: "still working" after a few seconds, a timeout after a minute
    // (its providers time out after 30 s by default and it moves on, saying so).
    let quiet = [];
    const ui = {
      heard: () => {
        quiet.forEach(clearTimeout);
        quiet = [setTimeout(say, STILL_MS, T.still_working), setTimeout(() => controller.abort("timeout"), STALL_MS)];
      },
      progress: (message) => {
        ui.heard();
        say(message);
      },
      // Settled blocks are appended; the draft of the open block replaces the last one.
      delta: ({ blocks, draft }) => {
        ui.heard();
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
    ui.heard(); // from Enter on: a turn that never hears back (a hung check too) times out
    try {
      if (!navigator.onLine && !STATIC) return this.fail(view, turn, T.offline);
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
      // Until the check has run, a page load puts the question back in the box (this tab's
      // storage only; it is removed as soon as the check is done, whatever it found).
      store(sessionStorage, DRAFT_KEY, { question, quote });
      try {
        await until(boot);
        credential = await until(screen(body, sent));
      } catch (error) {
        return this.fail(view, turn, controller.signal.aborted ? endedBy() : T.check_failed);
      } finally {
        if (!this.leaving) store(sessionStorage, DRAFT_KEY, null);
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
      if (controller.signal.aborted) return this.fail(view, turn, endedBy());
      console.error("DocPilot:", error.message); // the question itself is never logged
      if (error.limit) this.maxChars = error.limit;
      if (error.wait) Object.assign(turn, { until: Date.now() + error.wait * 1000, said: error.said });
      this.fail(view, turn,
        error.limit ? this.tooLongText()
        : error.wait ? T.rate_limited.replace("{seconds}", error.wait)
        : !navigator.onLine ? T.offline
        : error.down ? T.runtime_down
        : error.unreachable ? T.network : T.error);
    } finally {
      quiet.forEach(clearTimeout);
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
        this.label(true);
      }
    }
  }
}
