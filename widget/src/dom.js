/* Small DOM helpers: elements, buttons, icons, safe links, the clipboard. */

import { ROOT } from "./config.js";

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text != null) node.textContent = text;
  return node;
}

export function button(className, label, onClick, text) {
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

export function icon(name, flip) {
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
export function safeHref(url) {
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

export function link(href, text) {
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
export async function copyText(text) {
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
export const sourceLabel = (c) => (c.page_title && c.page_title !== c.title ? `${c.page_title} › ${c.title}` : c.title || c.url);
