/* DocPilot widget: a launcher and a chat panel that answer from this site's docs.
 *
 * Loaded by the `docpilot` MkDocs plugin as <script type="module" src=".../docpilot/docpilot.js">
 * next to <script type="application/json" id="docpilot-config">. No framework. The build
 * joins the modules of this folder into that one file, in the order their imports give,
 * and minifies it (docpilot_runtime/widget_assembly.py): with docpilot.css, within the
 * budget tests/browser/test_widget_size.py holds (gzipped).
 *
 *   config.js    the owner's options, the strings, page facts
 *   dom.js       element, button, icon, safe-link and clipboard helpers
 *   contract.js  (written by the build) the tags and depth the Python validator allows
 *   tree.js      the validated answer tree → DOM
 *   client.js    the Pyodide worker, finding the runtime, the SSE stream
 *   storage.js   the kept conversation, past ones, consent
 *   controls.js  feedback, copy, actions, refusal links, quoting
 *   entry.js     the search hand-off, "Ask about this page", "Copy this page"
 *   panel.js     launcher, dialog, question box, open/close/dock, keyboard
 *   chat.js      asking and drawing turns
 *
 * Worker protocol: post {id, type: "boot"|"check"|"load"|"ask", ...}, reply
 * {id, ok: true, result} or {id, ok: false, error}. Static mode (endpoint "browser")
 * loads docpilot/static.json (the lexical part of the bundle) into the worker and asks it
 * instead of a server.
 *
 * Safety: answers arrive as the element tree the runtime validated (`blocks`), never as
 * Markdown to parse here; text becomes text nodes only (see `tree`), and links keep only
 * the server's href, and only for http(s) and site-relative URLs. */

import { tree } from "./tree.js";
import { Widget } from "./chat.js";

new Widget();

// The renderer, for tests and pages that draw a stored result themselves.
export { tree as renderTree };
