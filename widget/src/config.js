/* The owner's options (#docpilot-config, written by the build), the interface strings,
 * and the page facts every other module reads. */

export const ROOT = new URL("../", import.meta.url); // the script lives at <root>/docpilot/
// Defaults of the options the build writes into #docpilot-config: the schema's own
// (docpilot_runtime/settings_schema.py, WIDGET); tests/test_settings.py holds them equal.
const DEFAULTS = {
  "endpoint": "",
  "title": "",
  "placeholder": "",
  "position": "bottom-right",
  "suggested_questions": [],
  "support_url": "",
  "history": false,
  "require_consent": false,
  "max_question_chars": 2000,
  "language": "",
  "strings": {},
  "pyodide_url": "",
  "search_handoff": true,
  "ask_about_page": true,
  "copy_page": true,
  "ai_notice": true
};
// Found by its element and type, not its id alone: a page heading "DocPilot config" has
// that id too, and comes first.
export const CONFIG = { ...DEFAULTS, ...JSON.parse(document.querySelector('script#docpilot-config[type="application/json"]')?.textContent || "{}") };
export const T = CONFIG.strings || {};
export const HISTORY_SENT = 6;
export const MAX_PAST = 20;
export const LANG = document.documentElement.lang || undefined;
// The language of the widget's strings (the owner's, else the page's), sent with each
// question when it is a tag the runtime accepts (framing.LANG_TAG).
export const LANG_TAG = [CONFIG.language, LANG].find((t) => /^[a-z]{2,8}([-_][a-z0-9]{1,8}){0,4}$/i.test(t || ""));
export const FULL_SCREEN = matchMedia("(max-width: 600px)"); // as in docpilot.css
export const DOCKED = matchMedia("(min-width: 76.25em)"); // as in docpilot.css: the panel docks
