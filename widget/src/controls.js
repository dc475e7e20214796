/* The controls around an answer: feedback, copy, a declared action, the refusal's closest
 * pages, and quoting a passage of an answer into the next question. */

import { CONFIG, ROOT, T } from "./config.js";
import { el, button, icon, link, safeHref, copyText } from "./dom.js";
import { API, bootWorker, call } from "./client.js";

/** Copy `text`, and say so on the button (its text, or an icon button's name) and to
 * screen readers (`live`). */
export async function copied(node, text, live) {
  const said = (live.textContent = (await copyText(text)) ? T.copied : T.copy_failed);
  const label = node.getAttribute("aria-label");
  const shown = label ? "" : node.textContent;
  const show = (words) => {
    if (shown) return (node.textContent = words);
    node.setAttribute("aria-label", words);
    node.title = words;
  };
  show(said);
  setTimeout(show, 2000, shown || label);
}

/** Under a refusal: the closest pages (unless its text lists them) and the owner's
 * support link. */
export function drawRefusal(answer, body, result) {
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
export function actionButton({ name, arguments: args = {} }) {
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

/** Thumbs up/down for a turn the runtime recorded, with reasons and a note on "down";
 * `report` adds "Report a wrong answer": "down" with "incorrect" chosen. */
export function feedback(turnId, report) {
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
  if (report) {
    box.insertBefore(button("dp-report", null, () => {
      down.click();
      if (!reasons.size) form.querySelector(".dp-tag").click(); // "incorrect"
    }, T.report), done);
  }
  return box;
}

/** Quoting a passage of an answer: selecting text in an answer shows "Ask about this";
 * the quote then sits in a chip above the question box until sent or removed. */
export class Quoting {
  constructor(panel, input) {
    this.panel = panel;
    this.input = input;
    this.text = "";
    this.selected = "";
    this.chip = el("div", "dp-chip");
    this.chip.hidden = true;
    this.button = button("dp-quote-btn", null, () => this.attach(), T.ask_about);
    this.button.hidden = true;
    this.button.addEventListener("mousedown", (ev) => ev.preventDefault()); // keep the selection
    document.addEventListener("selectionchange", () => this.onSelection());
  }

  onSelection() {
    const selection = document.getSelection();
    const body = (node) => (node?.nodeType === 1 ? node : node?.parentElement)?.closest(".dp-body");
    const inAnswer = selection && !selection.isCollapsed && body(selection.anchorNode) &&
      body(selection.anchorNode) === body(selection.focusNode);
    const text = inAnswer ? selection.toString().trim() : "";
    if (!text || this.panel.hidden) return (this.button.hidden = true);
    this.selected = text.slice(0, 2000);
    const rect = selection.getRangeAt(0).getBoundingClientRect();
    Object.assign(this.button.style, {
      top: `${Math.max(8, Math.min(rect.bottom + 6, innerHeight - 40))}px`,
      left: `${Math.max(8, Math.min(rect.left, innerWidth - 180))}px`,
    });
    this.button.hidden = false;
  }

  attach() {
    this.set(this.selected || "");
    document.getSelection()?.removeAllRanges();
    this.button.hidden = true;
    this.input.focus();
  }

  set(text) {
    this.text = text;
    this.chip.hidden = !text;
    this.chip.replaceChildren();
    if (!text) return;
    this.chip.append(el("span", "dp-label", T.quoting), el("q", null, text));
    const remove = button("dp-icon", T.remove_quote, () => {
      this.set("");
      this.input.focus();
    });
    remove.append(icon("close"));
    this.chip.append(remove);
  }
}
