/* The panel: the launcher, the dialog and its question box; opening, closing, docking
 * beside the page, focus and the keyboard.
 *
 * Keyboard: "A" (no modifier, focus not in a text field) opens the panel; Material keeps
 * f, s, / for search and p, n, comma, period for paging. Focus moves into the question box
 * on open and back to the launcher on close; Escape closes; Enter sends, Shift+Enter is a
 * new line.
 *
 * The conversation (chat.js) extends it with `ask`, `prepare`, `draw`, `save`, `reset`
 * and `togglePast`, which the panel's controls call. */

import { CONFIG, T, LANG, FULL_SCREEN, DOCKED } from "./config.js";
import { el, button, icon } from "./dom.js";
import { Quoting } from "./controls.js";
import { consentNotice } from "./storage.js";
import { pageActions, searchHandoff } from "./entry.js";

export class Panel {
  constructor() {
    // The owner's max_question_chars (as the runtime's [server] one); a runtime that refuses
    // a question as longer than its own limit sets it (see `ask`).
    this.maxChars = Number(CONFIG.max_question_chars) || 2000;
  }

  build() {
    const root = (this.root = el("div", `dp dp--${CONFIG.position === "bottom-left" ? "left" : "right"}`));
    root.id = "docpilot";
    root.hidden = true; // until the stylesheet is in
    // The stylesheet lives in the widget, not <head>: Material's instant navigation
    // drops head elements the next page does not have. A load that fails (a dropped
    // connection) is tried once more a second later; unstyled, the widget stays out.
    const stylesheet = (retry) => {
      const css = root.appendChild(el("link"));
      css.rel = "stylesheet";
      css.href = new URL("docpilot.css", import.meta.url).href;
      css.onload = () => (root.hidden = skip.hidden = false);
      css.onerror = () => (css.remove(), retry ? setTimeout(stylesheet, 1000) : console.warn("DocPilot hidden: no", css.href));
    };
    stylesheet(true);

    // The owner's title and placeholder, else the strings' in the page's language.
    const title = (this.title = CONFIG.title || T.title);
    const placeholder = CONFIG.placeholder || T.placeholder;
    this.launcher = button("dp-launcher", null, () => (this.panel.hidden ? this.open() : this.close()));
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
    const head = panel.appendChild(el("div", "dp-head")); // not <header>: the page has the banner
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
    const row = form.appendChild(el("div", "dp-row"));
    this.input = row.appendChild(el("textarea", "dp-input"));
    this.input.rows = 1;
    this.input.placeholder = placeholder;
    this.input.setAttribute("aria-label", placeholder);
    this.quoting = new Quoting(panel, this.input);
    form.prepend(this.quoting.chip);
    this.send = row.appendChild(el("button", "dp-send"));
    this.send.type = "submit";
    this.send.setAttribute("aria-label", T.send);
    this.send.title = T.send;
    this.send.append(icon("send"));
    this.tooLong = form.appendChild(el("p", "dp-error dp-long"));
    this.tooLong.id = "dp-long";
    this.tooLong.hidden = true;
    consentNotice(form);
    pageActions(this, form);
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
    root.append(panel, this.launcher, this.quoting.button);
    document.body.append(root);
    // Keyboard reach: a skip link among the page's first Tab stops (after Material's own
    // "Skip to content"), shown when focused; the launcher names the shortcut.
    const skip = el("a", "dp-skip", `${title} (A)`);
    skip.href = "#dp-panel";
    skip.hidden = true;
    skip.addEventListener("click", (ev) => {
      ev.preventDefault();
      ev.stopPropagation(); // not a page anchor for Material's instant navigation
      this.open();
    });
    skip.addEventListener("focus", () => this.prepare(), { once: true });
    document.querySelector(".md-skip")?.after(skip) ?? document.body.prepend(skip);
    searchHandoff(this);
    this.label();
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
    const over = n > this.maxChars;
    this.count.textContent = `${n.toLocaleString(LANG)} / ${this.maxChars.toLocaleString(LANG)}`;
    this.count.classList.toggle("dp-over", over);
    this.input.setAttribute("aria-invalid", String(over));
    if (!over) this.tooLong.hidden = true;
    return over;
  }

  tooLongText() {
    return T.too_long.replace("{limit}", this.maxChars.toLocaleString(LANG));
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
    this.label();
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
    this.quoting.button.hidden = true;
    this.launcher.setAttribute("aria-expanded", "false");
    this.root.classList.remove("dp--open");
    this.label();
    this.dock();
    this.launcher.focus();
    if (this.chat.turns.length) this.save();
  }

  /** The launcher's name follows the panel: closed, what it opens and the shortcut (and
   * whether an answer came while it was closed); open, that it closes it. */
  label(unread) {
    const more = unread ? ` (${T.unread})` : "";
    const name = this.panel.hidden ? `${this.title} (${T.shortcut})${more}` : `${T.close}: ${this.title}`;
    this.launcher.setAttribute("aria-label", name);
    this.launcher.title = name;
  }

  /** Scroll the log down, but never past the top of `turn`: a long answer is read from
   * its question down, not from its feedback buttons up. */
  scrollDown(turn = this.log.lastElementChild) {
    this.log.scrollTop = Math.min(turn ? turn.offsetTop - 8 : Infinity, this.log.scrollHeight);
  }
}
