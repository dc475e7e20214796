"""Tier 3 of the credential check: a secret recognised by its context.

URLs and connection strings with a password; `name = value` assignments in env, YAML,
JSON, TOML, XML, code and CLI flags, and the same in prose ("my API key is …") in
several languages; `Authorization` headers; random tokens behind an unknown vendor prefix.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from docpilot_runtime.screen.credential_match import CredentialMatch
from docpilot_runtime.screen.credential_rules import (
    CLI_COMMANDS,
    HASH_WORDS,
    ID_PREFIXES,
    KEY_QUALIFIERS,
    KEY_STEMS,
    KEY_WORDS,
    NAME_KEYWORDS,
    NAME_STOP_WORDS,
    PASSWORD_STEMS,
    PASSWORD_SUFFIXES,
    PASSWORD_WORDS,
    PREVIOUS_STOP_WORDS,
    PROSE_FILLERS,
    PUBLIC_VALUE_PREFIXES,
    SECRET_PREFIXES,
    SECRET_STEMS,
    SECRET_SUFFIXES,
    SECRET_WORDS,
    UNREPLAYABLE_SCHEMES,
    VERB_LIKE_PASSWORD_WORDS,
)
from docpilot_runtime.screen.values import (
    HEX,
    NAME_WORD,
    decode_base64_text,
    decoded_if_base64_text,
    entropy,
    entropy_floor,
    is_stand_in,
    is_weak_password,
    looks_like_password,
    looks_random,
    mixes_like_random,
    words_only,
)


def contextual_secrets(text: str, lowered: str) -> list[CredentialMatch]:
    found: list[CredentialMatch] = []
    if "://" in text:
        found.extend(_url_passwords(text))
    if _LONG_ALNUM_RUN.search(text):  # ties go to the first listed: the vendor-style token
        found.extend(_prefixed_random_tokens(text))
    if _UUID_BODY.search(text):
        found.extend(_prefixed_uuids(text))
    found.extend(_named_secrets(text, lowered))
    if any(command in lowered for command in CLI_COMMANDS):
        found.extend(_command_line_passwords(text))
    return found


_CLI_PASSWORD = re.compile(
    r"\b(?:mysql\w*+|mariadb\w*+)\b[^\n]{0,200}?[ \t]-p(?P<mysql>[^\s'\"`\-][^\s'\"`]{3,127})"
    r"|\bsshpass[ \t]++-p[ \t]*+['\"]?(?P<sshpass>[^\s'\"`]{4,128})"
    r"|\b(?:curl|wget)\b[^\n]{0,300}?[ \t](?:-u|--user)[ \t=]*+['\"]?[^\s:'\"`]{1,64}:"
    r"(?P<user>[^\s'\"`]{4,128})"
    r"|\bdocker[ \t]++login\b[^\n]{0,200}?[ \t]-p[ \t]++['\"]?(?P<docker>[^\s'\"`]{4,128})"
)


def _command_line_passwords(text: str) -> list[CredentialMatch]:
    for m in _CLI_PASSWORD.finditer(text):
        group = m.lastgroup or ""
        password = m.group(group)
        if is_stand_in(password) or is_weak_password(password):
            continue
        if looks_like_password(password, min_classes=2, min_len=6) or looks_random(password):
            start, end = m.span(group)
            return [CredentialMatch("password_assignment", "password on a command line",
                                    start, end)]
    return []


_PORT = re.compile(r"\d{1,5}(?![A-Za-z0-9])")
_URL_USERINFO = re.compile(
    r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]{1,30}+)://"
    r"([^\s:/?#@\"'<>\[\]]{0,128}+):((?:[^\s/@\"'<>]|@(?=[^\s/@\"'<>]*+@)){1,256}+)"
    r"@(?=[A-Za-z0-9\[_])([^\s/?#:]*+)"
)


def _url_passwords(text: str) -> list[CredentialMatch]:
    for m in _URL_USERINFO.finditer(text):
        scheme, user, password, host = m.group(1).lower(), m.group(2), m.group(3), m.group(4)
        plain = unquote(password)
        if plain == unquote(user) or is_stand_in(plain) or is_weak_password(plain):
            continue
        if "." in user and _PORT.match(plain):
            continue  # `https://host.example:8443,other@…`: a host and port, not user:password
        if not (looks_random(plain) or looks_like_password(plain, min_classes=2, min_len=6)):
            continue
        if "sentry" in host.lower():
            kind, label = "sentry_dsn", "Sentry DSN with its secret key"
        elif scheme in ("http", "https"):
            kind, label = "connection_string_password", "password in a URL"
        else:
            kind, label = "connection_string_password", "password in a connection string"
        return [CredentialMatch(kind, label, m.start(3), m.end(3))]
    return []


_NAME_KEYWORD_TEXT = "|".join(NAME_KEYWORDS)
_NAME_KEYWORD = re.compile(_NAME_KEYWORD_TEXT)
_NAME_KEYWORD_ANY_CASE = re.compile(_NAME_KEYWORD_TEXT, re.IGNORECASE)
_ASSIGNMENT = re.compile(
    r"[\"'`\]]{0,2}+[ \t]*+(?:=>|:=|==|=|:(?![:/])|：|＝)[ \t]*+(?:\r?\n[ \t]*+)?"
    r"|[\"'][ \t]++value[ \t]*+=[ \t]*+"
    r"|[ \t]*+\r?\n[ \t]*+(?:-[ \t]*+)?value[ \t]*+:[ \t]*+"
)
_BARE_VALUE = re.compile(r"[^\s\"'`,;<>(){}\[\]\x80-\U0010ffff]{1,256}+")
_NEXT_QUERY_PARAMETER = re.compile(r"&[A-Za-z_][\w.\-]*+=")
_AUTH_VALUE = re.compile(
    r"[fb]?[\"'`]?[ \t]*+([A-Za-z][A-Za-z0-9\-]{1,24}+)[ \t]++([A-Za-z0-9+/=_\-.~:%$]{1,4096}+)"
)
# A few words between a name and its value, then "is" or ":" ("token for Cloudflare: …").
_PROSE_LEAD = re.compile(
    r"(?:[ \t]++[^\W\d_]{1,20}+){1,6}?"
    r"(?:[ \t]++(?:is|was|are|es|est|ist|lautet|é|è)(?=[ \t])|[ \t]*+[:=：＝])[ \t]*+"
)


def _named_secrets(text: str, lowered: str) -> list[CredentialMatch]:
    # Searching the lower-cased text is ten times faster than IGNORECASE; the rare text whose
    # length changes when lower-cased ("İ") falls back to the slow way.
    if len(lowered) == len(text):
        hits = _NAME_KEYWORD.finditer(lowered)
    else:
        hits = _NAME_KEYWORD_ANY_CASE.finditer(text)
    resume = 0
    reread_until = -1  # the end of the last value whose names were read again
    for kw in hits:
        if kw.start() < resume:
            continue
        start, end = _expand_name(text, kw.start(), kw.end())
        resume = end
        xml_name = text[start:end] if start and text[start - 1] == "<" else None
        located = _locate_value(text, end, cli=text.startswith("-", start), xml_name=xml_name)
        if located is None:
            continue
        value_start, prose = located
        read = _read_value(text, value_start, prose)
        if read is None:
            continue
        match = _judge_name(text, start, end, value_start, read, prose)
        if match is not None:
            return [match]
        # A value judged not a secret may hold the real assignment ("my key is
        # OPENAI_API_KEY = …", "my password is DB_PASSWORD=…"): its names are read too,
        # but not those of a value inside one read again (`key=key=…` stays linear).
        if read[1] >= reread_until:
            resume, reread_until = read[1], read[2]
        else:
            resume = max(resume, read[2])
    return []


def _judge_name(
    text: str, start: int, end: int, value_start: int, read: tuple[str, int, int], prose: bool
) -> CredentialMatch | None:
    """The credential the name at ``start:end`` and its value ``read`` make, or None."""
    header = text[max(start, end - 13) : end].lower() == "authorization"
    if not header and not _could_be_secret(read[0]):
        return None
    if text.startswith(("(", "["), read[2]):
        return None  # `key = base64.b64encode(…)`, `token = data["token"]`: code
    words = [w.lower() for w in NAME_WORD.findall(text[start:end])]
    previous = _previous_word(text, start)
    if prose and len(words) == 1 and words[0] in VERB_LIKE_PASSWORD_WORDS and previous != "de":
        return None  # "pass `stream=True`": the verb, not a password ("mot de passe" is)
    begin = start - 1 - len(previous)
    proper = bool(previous) and text[begin].isupper() and text[begin + 1 : start].islower()
    family = _name_family(words, previous, proper=proper)
    if family is None:
        return None
    if family == "authorization":
        return _authorization_header(text, value_start)
    return _judge_named_value(text, read, family, words, prose)


# Names are ASCII identifiers, or words in Latin, Cyrillic or Hangul script; CJK and kana
# keywords stand alone, since those scripts put no space between a name and its value.
_NAME_CHARS = "A-Za-z0-9_.\\-\u00c0-\u024f\u0400-\u04ff\uac00-\ud7a3"
_NAME_TAIL = re.compile(f"[{_NAME_CHARS}]{{0,64}}")
_NAME_CHAR = re.compile(f"[{_NAME_CHARS}]")


def _expand_name(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen a keyword hit to the whole name around it (`DB_PASSWORD`, `x-api-key`)."""
    if _NAME_CHAR.match(text, start) is None:
        return start, end
    limit = max(0, start - 64)
    while start > limit and _NAME_CHAR.match(text, start - 1):
        start -= 1
    tail = _NAME_TAIL.match(text, end)
    end = tail.end() if tail is not None else end
    while end > start and text[end - 1] in ".-":
        end -= 1
    while start < end and text[start] == ".":
        start += 1
    return start, end


def _previous_word(text: str, start: int) -> str:
    """The word one space before a name, lower-cased ("API" in "API key")."""
    if start == 0 or text[start - 1] not in " \t":
        return ""
    end = begin = start - 1
    while begin > 0 and end - begin < 24 and text[begin - 1].isalpha():
        begin -= 1
    return text[begin:end].lower()


def _is_password_word(word: str) -> bool:
    return word in PASSWORD_WORDS or word.endswith(PASSWORD_SUFFIXES) or word.startswith(
        PASSWORD_STEMS
    )


def _is_secret_word(word: str) -> bool:
    return word in SECRET_WORDS or word.endswith(SECRET_SUFFIXES) or word.startswith(
        SECRET_STEMS
    )


def _name_family(words: list[str], previous: str, *, proper: bool = False) -> str | None:
    """What a name says its value is: password, secret, ambiguous key, header, or nothing.

    `proper` says the word before the name is capitalised like a product's name ("my
    Algolia key"), which makes a lone "key" a credential, as "API key" does."""
    if not words or any(w in NAME_STOP_WORDS for w in words) or previous in PREVIOUS_STOP_WORDS:
        return None
    if any(w.startswith(("csrf", "xsrf")) for w in words):
        return None  # `csrftoken`: useless without the session it guards
    if words[-1] == "authorization":
        return "authorization"
    if any(_is_password_word(w) for w in words):
        return "password"
    if any(_is_secret_word(w) for w in words):
        return "secret"
    keyish = [w for w in words if w in KEY_WORDS or w.startswith(KEY_STEMS) or (
        w.endswith("key") and w[:-3] in KEY_QUALIFIERS)]
    if keyish:
        # Only English "key" alone is vague (primary key, cache key); "clave", "Schlüssel",
        # "ключ" in a docs question mean a credential, and their qualifier often follows.
        named_product = proper and previous not in NAME_STOP_WORDS
        vague = (keyish[0] == "key" and len(words) == 1 and previous not in KEY_QUALIFIERS
                 and not named_product)
        return "key" if vague else "secret"
    if words[-1] == "bearer":
        return "bearer"
    return None


def _locate_value(
    text: str, pos: int, *, cli: bool, xml_name: str | None
) -> tuple[int, bool] | None:
    """Where the value after a name starts, and whether it sits in prose rather than syntax."""
    m = _ASSIGNMENT.match(text, pos)
    if m is not None:
        return m.end(), False
    if xml_name is not None and text.startswith(">", pos):  # <password>…</password>
        close = text.find(f"</{xml_name}>", pos, pos + 260)
        return (pos + 1, False) if close != -1 else None
    if pos >= len(text):
        return None
    nxt = text[pos]
    if cli and nxt in " \t":
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        return pos, False
    if not (nxt in " \t" or "\u3000" <= nxt <= "\u9fff" or "\uac00" <= nxt <= "\ud7a3"):
        return None
    lead = _PROSE_LEAD.match(text, pos)  # "password for the admin panel is …"
    return (lead.end() if lead is not None else _skip_prose_filler(text, pos)), True


def _skip_prose_filler(text: str, pos: int) -> int:
    for _ in range(4):
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        end = pos
        while end < len(text) and end - pos < 12 and text[end].isalpha() and text[end].isascii():
            end += 1
        if end == pos and pos < len(text):
            end = pos + 1  # one CJK particle or punctuation mark
        word = text[pos:end].lower()
        if word not in PROSE_FILLERS:
            return pos
        pos = end
    return pos


def _read_value(text: str, pos: int, prose: bool) -> tuple[str, int, int] | None:
    if text.startswith(("f\"", "f'", "b\"", "b'"), pos):
        pos += 1
    if pos < len(text) and text[pos] in "\"'`":
        close = text.find(text[pos], pos + 1, pos + 258)
        if close == -1 or "\n" in text[pos + 1 : close]:
            return None
        return text[pos + 1 : close], pos + 1, close
    m = _BARE_VALUE.match(text, pos)
    if m is None:
        return None
    value = m.group()
    if (cut := _NEXT_QUERY_PARAMETER.search(value)) is not None:
        value = value[: cut.start()]  # `?token=…&page=2`: the value ends at the next parameter
    value = value.rstrip(".:!?") if prose else value.rstrip(".")
    return (value, pos, pos + len(value)) if value else None


def _could_be_secret(value: str) -> bool:
    """Cheap first look: long enough, and not a plain word or number ("setting", "8080")."""
    if len(value) < 6 or value.isdigit():
        return False
    return not (value.isalpha() and (value.islower() or value.isupper()))


def _judge_named_value(
    text: str, read: tuple[str, int, int], family: str, words: list[str], prose: bool
) -> CredentialMatch | None:
    value, start, end = read
    for prefix in ("base64:", "oauth:"):  # Laravel's APP_KEY=base64:…, Twitch's oauth:…
        if value.startswith(prefix):
            value, start = value[len(prefix) :], start + len(prefix)
    if _names_itself(value, words):
        return None  # "api_key: my_api_key_here"
    if family == "bearer":
        if looks_random(value):
            return CredentialMatch("authorization_header", "bearer token", start, end)
        return None
    if family == "password":
        candidate = decoded_if_base64_text(value) if not prose else value
        if not (looks_like_password(candidate) or looks_random(candidate)):
            return None
        before = text[max(0, start - 12) : start].rstrip(" ='\"").lower()
        if text.startswith(";", end) or before.endswith((";password", ";pwd", ";pass")):
            return CredentialMatch(
                "connection_string_password", "password in a connection string", start, end
            )
        return CredentialMatch("password_assignment", "password", start, end)
    if not looks_random(value, strong=family == "key"):
        return None
    if prose and HEX.fullmatch(value) and _near_hash_words(text, start):
        return None  # "the sha256 of the token file is …"
    return CredentialMatch("high_entropy_secret", "secret token or API key", start, end)


def _names_itself(value: str, words: list[str]) -> bool:
    """True when the value spells its own name as a word ("my_api_key_here",
    `PKCS12PrivateKeyTypes` under `key:`) and nothing random is left without it. A vendor
    prefix that repeats the name (`sk-helicone-…` under HELICONE_API_KEY, `RGAPI-…` under
    RIOT_API_KEY) leaves a random rest; a name's letters met by chance inside a random body
    are not a word."""
    lowered = value.lower()
    if len(lowered) != len(value):
        return any(len(w) >= 3 and w in lowered for w in words)
    covered = [False] * len(value)
    for word in (w for w in words if len(w) >= 3):
        at = lowered.find(word)
        while at != -1:
            after = at + len(word)
            if _word_bounded(value, at, after):
                if at >= 12 or (after < len(value) and value[after] not in "-_."):
                    return True  # the name inside the value, not a prefix before it
                covered[at:after] = [True] * len(word)
            at = lowered.find(word, at + 1)
    if not any(covered):
        return False
    rest = "".join(ch for ch, hidden in zip(value, covered, strict=True) if not hidden)
    return not looks_random(rest.strip("_-.:"))


def _word_bounded(value: str, start: int, end: int) -> bool:
    """`value[start:end]` stands as a word: separators, the ends, or case changes around it."""
    head, tail = value[start], value[end - 1]
    before = start == 0 or not value[start - 1].isalnum() or (
        value[start - 1].islower() and head.isupper())
    after = end == len(value) or not value[end].isalnum() or (
        value[end].isupper() and tail.islower())
    return before and after


def _near_hash_words(text: str, pos: int) -> bool:
    window = text[max(0, pos - 80) : pos + 80].lower()
    return any(word in window for word in HASH_WORDS)


def _authorization_header(text: str, pos: int) -> CredentialMatch | None:
    m = _AUTH_VALUE.match(text, pos)
    if m is None:
        read = _read_value(text, pos, prose=False)
        if read is not None and looks_random(read[0]):
            return CredentialMatch("authorization_header", "Authorization header", *read[1:])
        return None
    scheme, credential = m.group(1).lower(), m.group(2).rstrip("\"'`.")
    start, end = m.start(2), m.start(2) + len(credential)
    if scheme in UNREPLAYABLE_SCHEMES or is_stand_in(credential):
        return None
    if scheme == "basic":
        decoded = decode_base64_text(credential)
        if decoded is None or ":" not in decoded:
            return None
        user, _, password = decoded.partition(":")
        if password == user or is_stand_in(password) or is_weak_password(password):
            return None
        if looks_like_password(password, min_classes=2, min_len=6) or looks_random(password):
            return CredentialMatch("authorization_header", "HTTP Basic credentials", start, end)
        return None
    if looks_random(credential):
        label = "bearer token" if scheme == "bearer" else "Authorization header"
        return CredentialMatch("authorization_header", label, start, end)
    return None


_LONG_ALNUM_RUN = re.compile(r"[A-Za-z0-9]{24}")
# An unknown vendor's token: a short lower- or mixed-case prefix of up to three segments
# joined by "_" or "-" (`abc_`, `sk-lf-`, `pat-na1-`), then a random body. Bodies may
# carry "_" and "-" (url-safe base64); each is judged on its letters and digits.
_PREFIXED_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_\-./+=@:])([A-Za-z][A-Za-z0-9]{1,11}[_\-](?:[A-Za-z0-9]{1,20}[_\-]){0,2})"
    r"([A-Za-z0-9][A-Za-z0-9_\-]{23,}+)(?![A-Za-z0-9_\-./+=])"
)
_UUID_TEXT = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UUID_BODY = re.compile(_UUID_TEXT)
# A UUID behind a prefix (`sk_…`, `pat-na1-…`, `access-production-…`): a key only when the
# prefix's first segment says so (SECRET_PREFIXES); `req_…`, `user-…` are identifiers.
_PREFIXED_UUID = re.compile(
    r"(?<![A-Za-z0-9_\-./+=@:])([A-Za-z][A-Za-z0-9]{1,11})[_\-](?:[A-Za-z0-9]{1,12}[_\-]){0,2}?"
    + _UUID_TEXT + r"(?![A-Za-z0-9_\-./+=])"
)


def _prefixed_uuids(text: str) -> list[CredentialMatch]:
    for m in _PREFIXED_UUID.finditer(text):
        if m.group(1).lower() in SECRET_PREFIXES and not is_stand_in(m.group()):
            return [CredentialMatch("generic_api_token", "API token", *m.span())]
    return []


def _prefixed_random_tokens(text: str) -> list[CredentialMatch]:
    for m in _PREFIXED_TOKEN.finditer(text):
        prefix, body = m.group(1), m.group(2)
        first = re.split(r"[_\-]", prefix.lower(), maxsplit=1)[0]
        if first in ID_PREFIXES or m.group().startswith(PUBLIC_VALUE_PREFIXES):
            continue
        if is_stand_in(body) or words_only(m.group()):
            continue
        if _looks_like_vendor_body(text, m.start(), first, body):
            return [CredentialMatch("generic_api_token", "API token", *m.span())]
    return []


def _looks_like_vendor_body(text: str, start: int, first: str, body: str) -> bool:
    """A body behind an unknown prefix that is random: base62, lower-case base36, or a hex
    string (not next to digest words)."""
    core = "".join(ch for ch in body if ch.isalnum())
    if len(core) < 24:
        return False
    if HEX.fullmatch(core):
        return len(core) >= 32 and not _near_hash_words(text, start) and (
            entropy(core) >= entropy_floor(len(core)))
    if looks_random(core, strong=True, allow_hex=False):
        return True
    # Lower-case base36 (`csk-…`, `glimt-…`): two classes, so it must be long and mixed.
    return len(core) >= 32 and (core.islower() or core.isupper()) and (
        any(c.isdigit() for c in core) and mixes_like_random(core)
        and entropy(core) >= entropy_floor(len(core)))


