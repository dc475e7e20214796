/* Asking from where readers already are: an "Ask" entry in the theme's search results, and
 * "Ask about this page" / "Copy this page as Markdown" in the panel (each an option). */

import { CONFIG, T } from "./config.js";
import { el, button } from "./dom.js";
import { copied } from "./controls.js";

// The search box of each theme and what the entry goes before: Material's results, the
// built-in `mkdocs` theme's results (in its search dialog), and, `after` set, the
// `readthedocs` theme's sidebar form (its results are on a page of their own).
const SEARCHES = [
  [".md-search__input", ".md-search-result"],
  ["#mkdocs-search-query", "#mkdocs-search-results"],
  ["#rtd-search-form [name=q]", "#rtd-search-form", true],
];

/** An entry above the search results, "Ask the docs assistant: “query”", that hands the
 * query to `widget.handoff` (which keeps a keyword query as a draft). */
export function searchHandoff(widget) {
  for (const [input, results, after] of SEARCHES) {
    const box = document.querySelector(input);
    const list = document.querySelector(results);
    // A reader typing a search may be about to ask: start the worker (a sign of intent,
    // like the pointer on the launcher), so its boot runs while they type.
    box?.addEventListener("input", () => widget.prepare(), { once: true });
    if (!CONFIG.search_handoff || !box || !list) continue;
    const query = () => box.value.trim();
    const entry = button("dp-search", null, () => {
      // The theme's search closes as a reader leaves it for the panel (Material's toggle,
      // the mkdocs theme's modal).
      const toggle = document.getElementById("__search");
      if (toggle?.checked) toggle.click();
      entry.closest(".modal")?.querySelector("[data-dismiss=modal], [data-bs-dismiss=modal]")?.click();
      widget.handoff(query());
    });
    const show = () => {
      entry.hidden = !query();
      entry.replaceChildren(el("strong", null, `${T.search_ask}: `), `“${query()}”`);
    };
    after ? list.after(entry) : list.before(entry);
    box.addEventListener("input", show);
    show();
  }
}

/** The page's name as the theme writes it in <title> ("Page - Site"). */
const pageTitle = () => document.title.split(" - ")[0];

/** The page as Markdown: the build's clean copy beside it (`markdown_pages`), else the
 * page's text as the browser renders it (plain lines, no markup). */
async function pageText() {
  const path = location.pathname;
  try {
    const response = await fetch(path.endsWith("/") ? `${path}index.md` : path.replace(/\.html$/, ".md"));
    if (response.ok && !/html/.test(response.headers.get("content-type"))) return await response.text();
  } catch {
    /* not published, or a file:// page: the rendered text below */
  }
  // The page's own text: Material's article, the other themes' main region, else the body.
  const main = ["article.md-content__inner", "[role=main]", "main"].map((s) => document.querySelector(s)).find(Boolean) || document.body;
  return main.innerText.replace(/¶/g, "").trim();
}

/** "Ask about this page" and "Copy this page as Markdown", above the question box. */
export function pageActions(widget, form) {
  if (!CONFIG.ask_about_page && !CONFIG.copy_page) return;
  const bar = form.appendChild(el("div", "dp-page"));
  if (CONFIG.ask_about_page) {
    bar.append(button("dp-tag", null, () => widget.draft(T.ask_page_prefix.replace("{title}", pageTitle())), T.ask_page));
  }
  if (CONFIG.copy_page) {
    const copy = bar.appendChild(button("dp-tag", null, async () => copied(copy, await pageText(), widget.live), T.copy_page));
  }
}
