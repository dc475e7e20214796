/* What the browser keeps: the open conversation (sessionStorage), past ones (localStorage,
 * with `history: true`), and the reader's consent to records. */

import { CONFIG, T } from "./config.js";
import { el } from "./dom.js";
import { STATIC } from "./client.js";
import { blocksOf } from "./tree.js";

export const CHAT_KEY = "docpilot:chat"; // sessionStorage: the open conversation
export const PAST_KEY = "docpilot:past"; // localStorage (history: true): finished conversations
export const DRAFT_KEY = "docpilot:draft"; // sessionStorage: a question waiting for the check
const CONSENT_KEY = "docpilot:consent"; // localStorage: the reader accepted records

export function load(storage, key, fallback) {
  try {
    return JSON.parse(storage.getItem(key)) ?? fallback;
  } catch {
    return fallback;
  }
}

export function store(storage, key, value) {
  try {
    value == null ? storage.removeItem(key) : storage.setItem(key, JSON.stringify(value));
  } catch {
    /* storage full or disabled: the conversation simply is not kept */
  }
}

export const newChat = () => ({ id: `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`, turns: [] });

// Only what a turn needs to be drawn again and remembered.
export const keep = (r) => ({
  turn_id: r.turn_id, kind: r.kind, markdown: r.markdown, blocks: blocksOf(r), citations: r.citations || [],
  closest: r.closest || [], tentative: !!r.tentative, actions: r.actions || [],
  summary: r.summary || "", rescued: !!r.rescued,
});

// -------------------------------------------------------------- consent

/** Whether the reader accepted records (only asked where the owner requires it). */
export function consented() {
  try {
    return CONFIG.require_consent && !STATIC && localStorage.getItem(CONSENT_KEY) === "1";
  } catch {
    return false;
  }
}

/** Where the owner requires consent: a short notice with Accept under the question box.
 * Until it is accepted, questions go without `consent` and the runtime stores nothing of them. */
export function consentNotice(form) {
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
