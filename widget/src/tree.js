/* The answer tree → DOM.
 *
 * The element tree the runtime validated (result `blocks`, delta `blocks`): text nodes,
 * a fixed set of elements, links with the href the server accepted. Never parsed as
 * Markdown. TAGS and MAX_DEPTH come from the Python side of the contract
 * (markdown_tree.ALLOWED, MAX_DEPTH), written into contract.js as the build assembles. */

import { TAGS, MAX_DEPTH } from "./contract.js";
import { el, link, safeHref, sourceLabel } from "./dom.js";

export const textOf = (nodes) =>
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

const ALIGN = /^(left|center|right)$/;

/** A task list item (GFM `- [x]`) as Material draws the site's own: a disabled checkbox
 * first in the item, named by the item's text for screen readers. */
function taskBox(item, node) {
  item.className = "task-list-item";
  const box = item.appendChild(el("input"));
  box.type = "checkbox";
  box.disabled = true;
  box.defaultChecked = node.checked;
  box.setAttribute("aria-label", textOf(node.c).replace(/\s+/g, " ").trim().slice(0, 200));
}

/** A DocumentFragment of `nodes`, built with createElement and text nodes only, iteratively
 * (no tree can exhaust the stack). `ctx.cite(n)` draws citation n, or null for its "[n]" text. */
export function tree(nodes, ctx) {
  const root = document.createDocumentFragment();
  // Answer headings sit under the panel's h2: the levels the answer uses, in order, become
  // h3, h4, … (no level skipped, which screen readers' heading lists would trip over).
  const levels = [...new Set(JSON.stringify(nodes ?? []).match(/"t":"h[1-6]"/g))].map((m) => m[6]).sort();
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
    let box = null; // what holds `child` in the parent, when not the child itself
    if (t === "pre" && depth < MAX_DEPTH) {
      parent.append(codeBlock(node));
      continue;
    }
    if (t === "a") {
      const href = safeHref(String(node.href || ""));
      if (href) child = link(href);
    } else if (/^h[1-6]$/.test(t)) {
      child = el(`h${Math.min(6, 3 + levels.indexOf(t[1]))}`);
    } else if (TAGS.has(t)) {
      child = el(t);
      if (t === "ol" && Number(node.start) > 1) child.start = Number(node.start);
      if ((t === "th" || t === "td") && ALIGN.test(node.align)) child.style.textAlign = node.align;
      if (t === "li" && typeof node.checked === "boolean") taskBox(child, node);
      // A wide table scrolls sideways in its own box, as Material wraps the page's tables.
      if (t === "table") (box = el("div", "md-typeset__scrollwrap")).appendChild(el("div", "md-typeset__table")).append(child);
    }
    const into = child && depth < MAX_DEPTH ? (parent.append(box || child), child) : parent;
    if (Array.isArray(node.c)) stack.push([into, node.c, 0, depth + 1]);
  }
  return root;
}

/** A result's tree; an old stored turn without one shows its text as plain paragraphs. */
export const blocksOf = (r) => r.blocks || String(r.markdown || "").split(/\n\s*\n/).map((p) => ({ t: "p", c: [p] }));

// ------------------------------------------------------------ the tree as Markdown to paste

const INLINE = /^(em|strong|del|a|code|br|cite)$/;

/** Inline nodes as Markdown: no backslash escapes (this text is pasted and read, not parsed
 * back), links with their absolute URL, citations as [n]. */
const inlineMarkdown = (nodes) => nodes.map((n) => {
  const t = n?.t;
  const inner = () => inlineMarkdown(n.c || []);
  return typeof n === "string" ? n : t === "cite" ? `[${n.n}]` : t === "br" ? "\n" : t === "code" ? `\`${textOf(n.c)}\``
    : t === "em" ? `*${inner()}*` : t === "strong" ? `**${inner()}**` : t === "del" ? `~~${inner()}~~`
    : t === "a" ? `[${inner()}](${safeHref(String(n.href || "")) || ""})` : inner();
}).join("");

/** Block nodes as Markdown, consecutive inline nodes making one paragraph. */
function blockMarkdown(nodes, gap = "\n\n") {
  const out = [];
  let run = [];
  const flush = () => run.length && out.push(inlineMarkdown(run).trim()) && (run = []);
  for (const n of nodes) {
    const t = n?.t;
    const c = n?.c || [];
    if (typeof n === "string" || INLINE.test(t)) {
      run.push(n);
      continue;
    }
    flush();
    if (/^h[1-6]$/.test(t)) out.push(`${"#".repeat(t[1])} ${inlineMarkdown(c)}`);
    else if (t === "pre") out.push(`\`\`\`${n.lang || ""}\n${textOf(c).replace(/\n$/, "")}\n\`\`\``);
    else if (t === "hr") out.push("---");
    else if (t === "blockquote") out.push(blockMarkdown(c).replace(/^/gm, "> "));
    else if (t === "ul" || t === "ol") {
      const mark = (i) => (t === "ol" ? `${(Number(n.start) || 1) + i}.` : "-");
      const task = (li) => (typeof li.checked === "boolean" ? (li.checked ? "[x] " : "[ ] ") : "");
      out.push(c.map((li, i) => `${mark(i)} ${task(li)}${blockMarkdown(li.c || [], "\n").replace(/\n/g, "\n   ")}`).join("\n"));
    } else if (t === "table") {
      // Rows from thead/tbody (or bare), cells' pipes escaped: the one escape a table needs.
      const rows = c.flatMap((g) => (g.t === "tr" ? [g] : g.c || [])).map((tr) => `| ${(tr.c || []).map((cell) => inlineMarkdown(cell.c || []).replace(/\|/g, "\\|")).join(" | ")} |`);
      if (rows.length) rows.splice(1, 0, rows[0].replace(/[^|]+/g, " --- "));
      out.push(rows.join("\n"));
    } else out.push(blockMarkdown(c, gap));
  }
  flush();
  return out.filter(Boolean).join(gap);
}

/** A result as Markdown for the clipboard: the answer, then its sources with their URLs. */
export function markdownOf(result) {
  const sources = (result.citations || []).map((c) => `[${c.n}] ${sourceLabel(c)}${c.url ? ": " + (safeHref(c.url) || c.url) : ""}`);
  return [blockMarkdown(blocksOf(result)), sources.join("\n")].filter(Boolean).join("\n\n");
}
