"""Which language a question (or a site's text) is written in, from its own characters.

A reader on an English site may ask in German: the page's language (the ask request's
``lang``) says nothing about the question's. The turn reads it here to answer in the
reader's language and to tell a reader whose question is not in the docs' language that
a question in that language finds more (``shared.framing``).

Scripts decide first (kana: Japanese; Hangul: Korean; Han without kana: Chinese;
Devanagari: Hindi; Cyrillic: Russian). Latin-script text is scored by the most common
function words of each language we have words for, plus a few letters and marks only one
language writes (``¿``, ``ñ``, ``ß``, ``ã``: two clues each), each distinct word once;
English wins ties, and a language other than English needs two clues, so a technical
English question with a ``die`` or a ``was`` in it stays English. "" when nothing
decides.
Pure Python: static mode runs it in the browser.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["question_language", "same_language"]

_WORD = re.compile(r"[^\W\d_]+")

# The commonest function words of each language, lower case, as a reader writes them.
_FUNCTION_WORDS = {
    "en": """the is are was were how what do does did can could i to of in and with for my
        it not when why which this that there be on you use should would have has an
        from or if but at by any our we me your get""",
    "de": """der die das und ist ich wie nicht mit ein eine einen den dem des auf für es kann
        wird werden auch oder wenn bei zu von im sich mein meine meinen gibt man noch
        aber nur sie wo warum welche wir ihr habe hat sind muss soll über nach beim
        zum zur keine kein dass ob schon immer""",
    "fr": """le la les un une des est et je comment pour dans que qui ne pas avec sur du au
        il elle mon ma mes ce cette on peut faire quand pourquoi sont aux mais ou
        à où ça se nous vous leur lors très tout tous aussi puis j'ai n'est c'est
        quelle quel de en""",
    "es": """el la los las un una es y que cómo como para con por en de del mi mis no se lo
        al puedo hay qué cuando pero sin más este esta hace desde ya muy sobre
        también porque dónde cuál tengo quiero está están son ser hacer usar""",
    "pt": """o os as um uma é e que como para com por em de do da dos das no na não se meu
        minha posso quando mas isso este esta ao pelo pela também porque onde qual
        tenho quero está estão são ser fazer usar você""",
    "it": """il lo la gli le un una è e che come per con di del della dei delle in non si
        mio mia posso quando ma questo questa sono al nel nella anche perché dove
        quale ho voglio essere fare usare""",
}
# Letters and marks that only one of the languages above writes.
_MARKS = {"¿": "es", "¡": "es", "ñ": "es", "ß": "de", "ä": "de", "ö": "de", "ü": "de",
          "ã": "pt", "õ": "pt", "ç": "fr", "œ": "fr", "ê": "fr", "ù": "it"}


@lru_cache(maxsize=1)
def _words() -> dict[str, frozenset[str]]:
    return {lang: frozenset(words.split()) for lang, words in _FUNCTION_WORDS.items()}


def _script_language(text: str) -> str:
    counts = {"ja": 0, "ko": 0, "zh": 0, "hi": 0, "ru": 0, "latin": 0}
    for ch in text:
        code = ord(ch)
        if 0x3040 <= code <= 0x30FF:  # hiragana, katakana
            counts["ja"] += 1
        elif 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF:
            counts["ko"] += 1
        elif 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF:
            counts["zh"] += 1
        elif 0x0900 <= code <= 0x097F:
            counts["hi"] += 1
        elif 0x0400 <= code <= 0x04FF:
            counts["ru"] += 1
        elif ch.isalpha() and code < 0x0250:
            counts["latin"] += 1
    if counts["ja"]:
        return "ja"  # Japanese writes kanji too; kana is Japanese alone
    # A CJK character carries a word or a syllable; weigh it against three Latin letters,
    # so a Chinese question full of English option names stays Chinese.
    best = max(("ko", "zh", "hi", "ru"), key=lambda lang: counts[lang])
    return best if counts[best] and 3 * counts[best] >= counts["latin"] else ""


def question_language(text: str) -> str:
    """The primary language subtag ("de", "ja") the text is written in, "" when unsure."""
    text = unicodedata.normalize("NFC", text)
    script = _script_language(text)
    if script:
        return script
    # Code spans say nothing about the language around them.
    prose = re.sub(r"`[^`]*`", " ", text).lower()
    scores = dict.fromkeys(_FUNCTION_WORDS, 0)
    for word in set(_WORD.findall(prose.replace("’", "'"))):
        for lang, words in _words().items():
            scores[lang] += word in words
    for mark, lang in _MARKS.items():
        scores[lang] += 2 * (mark in prose)  # a letter no other language here writes
    english = scores.pop("en")
    lang, best = max(scores.items(), key=lambda item: (item[1], item[0]))
    if best >= 2 and best > english and list(scores.values()).count(best) == 1:
        return lang
    return "en" if english else ""


def same_language(a: str, b: str) -> bool:
    """Whether two language tags name one language ("pt-BR" and "pt"); an empty tag
    matches anything (nothing is known)."""
    if not a or not b:
        return True
    return a.lower().replace("_", "-").split("-")[0] == b.lower().replace("_", "-").split("-")[0]



# How many of the first sections a site's language is read from.
DOCS_SAMPLE_UNITS = 40


def sections_language(sections: Iterable[tuple[str, str]]) -> str:
    """The language of docs sections given as (title, text) pairs: read from their
    openings, as a question's ("" when that says nothing)."""
    sample = " ".join(f"{title}. {text[:400]}" for title, text in sections)
    return question_language(sample[:8000])
