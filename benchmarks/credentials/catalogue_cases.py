"""Reader questions built from `catalogue.py`: each kind's value in realistic surroundings,
and hard negatives in the same shapes (placeholders, references, redactions, published
examples) plus text that only looks random (digests, UUIDs, public keys, images, versions).

Everything is drawn from one seeded generator, so a run is reproducible; nothing here was
ever a real credential. `cases(split)` returns the cases of one half of the catalogue.
"""

from __future__ import annotations

import base64
import hashlib
import random
from dataclasses import dataclass

from catalogue import CATALOGUE, Kind, fill, literal_text, short_prefix, split_of
from catalogue_others import FOREIGN, FOREIGN_WHOLE, OTHERS

SEED = 20261202


@dataclass(frozen=True)
class Case:
    text: str
    credential: bool
    kind: str  # the catalogue kind, or the negative's family
    context: str  # which template placed the value


# Templates that place a value under its name; {env}, {name} (lower-case), {product}, {v}.
NAMED = {
    "env_line": "My .env has\n{env}={v}\nand the build still says 401. What is wrong?",
    "export": 'export {env}="{v}"\nmkdocs build then fails to authenticate, why?',
    "docker": "docker run --rm -e {env}={v} -p 8000:8000 docs:latest exits at start-up",
    "json": 'settings.json:\n{{\n  "{name}": "{v}",\n  "timeout": 30\n}}\nIs this the right key name?',
    "yaml": "plugins:\n  - search\n  - docpilot:\n      {name}: {v}\nmkdocs serve warns about it",
    "toml": '[provider]\nkind = "openai"\n{name} = "{v}"\nthe runtime ignores this, why?',
    "python": 'import os\nos.environ["{env}"] = "{v}"\nclient.connect()  # raises 403',
    "js": "const {camel} = '{v}';\nfetch(url, {{ headers }}) returns 401 from {product}",
    "github_actions": "env:\n  {env}: {v}\nsteps:\n  - run: mkdocs gh-deploy --force",
    "k8s": "apiVersion: v1\nkind: Secret\nstringData:\n  {env}: {v}\nthe pod cannot read it",
    "prose": "my {product} {word} is {v} and it gets rejected since yesterday",
    "php": "'{name}' => '{v}',\nin config/services.php does not work with {product}",
    "go": '{camel} := "{v}"\nreq.Header.Set("Authorization", "Bearer "+{camel})',
}
# Templates that place a value with a recognisable shape on its own.
BARE = {
    "question": "Is this the right format for a {product} token? {v}",
    "log": "The deploy log prints `{v}` right before the error, is that a problem?",
    "traceback": "Traceback (most recent call last):\n  ...\nAuthError: token {v} was rejected",
    "spanish": "Mi clave de {product} {v} no funciona con el plugin, ¿qué hago?",
    "german": "Warum wird mein {product}-Token {v} abgelehnt?",
    "chinese": "我的 {product} 密钥 {v} 一直报 401 错误，怎么办？",
    "curl_header": "curl -H 'Authorization: Bearer {v}' https://api.service.test/v1/items gives 403",
    "query": "GET https://api.service.test/v2/search?q=docs&api_key={v} returns an error",
}
# Values that already carry their own syntax (URLs, PEM blocks, headers, JSON, connection
# strings) are placed whole.
WHOLE = {
    "fenced": "Here is what I have:\n```\n{v}\n```\nand it does not connect. Why?",
    "inline": "I configured {v} as the docs say, still failing",
    "env_line": "{env}={v}",
    "after_prose": "Deploying fails. My settings:\n{v}\nAny idea?",
}

WORDS = ("API key", "token", "secret", "access token", "key")


def _camel(env: str) -> str:
    parts = env.lower().split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def _is_whole(shape: str) -> bool:
    """A value with syntax of its own (URL, header, connection string, PEM block, JSON)."""
    fixed = literal_text(shape.rstrip("="))  # base64 padding is not syntax
    return any(mark in fixed for mark in (" ", "\n", "/", ";", "=", '"', "$")) or (
        ":" in fixed and not fixed.endswith(":")
    )


def _names_it(template: str) -> bool:
    return any(slot in template for slot in ("{env}", "{name}", "{camel}"))


def positives(
    kind: Kind, rng: random.Random, per_kind: int,
    named_extra: dict[str, str] | None = None, whole_extra: dict[str, str] | None = None,
) -> list[Case]:
    """``per_kind`` fresh values of ``kind`` in our surroundings (and the extra ones: those
    that name the value are used for a kind known only by its name)."""
    extra = {k: t for k, t in (named_extra or {}).items()
             if _names_it(t) or not kind.needs_name}
    out: list[Case] = []
    for _ in range(per_kind):
        value = fill(kind.shape, rng)
        if _is_whole(kind.shape):
            templates = {**WHOLE, **(whole_extra or {})}
            if "\n" in value or " " in value:
                templates.pop("env_line")
        elif kind.needs_name:
            templates = {**NAMED, **extra}
        else:
            templates = {**NAMED, **extra, **BARE}
        context = rng.choice(sorted(templates))
        text = templates[context].format(
            env=kind.env, name=kind.env.lower(), camel=_camel(kind.env), product=kind.product,
            word=rng.choice(WORDS), v=value,
        )
        out.append(Case(text, True, kind.kind, context))
    return out


def _stand_ins(kind: Kind, rng: random.Random) -> list[tuple[str, str]]:
    """Values in the kind's place that are not secrets: (family, value)."""
    prefix = short_prefix(kind.shape)
    real = fill(kind.shape, rng)
    body_len = max(8, len(real) - len(prefix))
    stand_ins = [
        ("placeholder", prefix + "<your-token-here>" if prefix else f"<{kind.env}>"),
        ("placeholder", prefix + "x" * min(body_len, 40)),
        ("placeholder", f"YOUR_{kind.env}"),
        ("reference", "${" + kind.env + "}"),
        ("reference", "${{ secrets." + kind.env + " }}"),
        ("redacted", (prefix or real[:3]) + "****" + real[-4:]),
    ]
    if prefix:  # as vendors print them: the shape, with EXAMPLE at the end (AKIA…7EXAMPLE)
        stand_ins.append(("example", real[:-7] + "EXAMPLE"))
    return stand_ins


def negatives(kind: Kind, rng: random.Random) -> list[Case]:
    out = []
    for family, value in _stand_ins(kind, rng):
        if _is_whole(kind.shape) and family in ("placeholder", "example"):
            continue  # a whole connection string or PEM block has no single slot to fill
        context = rng.choice(sorted(NAMED))
        text = NAMED[context].format(
            env=kind.env, name=kind.env.lower(), camel=_camel(kind.env), product=kind.product,
            word=rng.choice(WORDS), v=value,
        )
        out.append(Case(text, False, f"{family}:{kind.kind}", context))
    out.append(Case(f"Where do I put {kind.env} for {kind.product}? The page on "
                    f"{kind.product} setup does not say.", False, f"name_only:{kind.kind}",
                    "prose"))
    return out


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _b64(rng: random.Random, n: int) -> bytes:
    return bytes(rng.randrange(256) for _ in range(n))


def generic_negatives(rng: random.Random) -> list[Case]:
    """Text that looks random but carries no secret: (family, text), many of each."""
    made: list[tuple[str, str]] = []
    for _ in range(6):
        sha = _hex(rng, 40)
        made += [
            ("git_sha", f"Since commit {sha} the navigation tabs disappear, can you check?"),
            ("sha256", f"sha256sum says {_hex(rng, 64)}  mkdocs_docpilot-1.2.0.tar.gz, "
                       "is the download corrupt?"),
            ("digest", f"image: ghcr.io/org/docs@sha256:{_hex(rng, 64)} will not pull"),
            ("uuid", f"The request id {_hex(rng, 8)}-{_hex(rng, 4)}-4{_hex(rng, 3)}-a{_hex(rng, 3)}-"
                     f"{_hex(rng, 12)} appears in the error page"),
            ("integrity", 'integrity="sha384-' + base64.b64encode(_b64(rng, 48)).decode()
             + '" crossorigin on the script tag blocks loading'),
            ("ssh_public", "Deploy key to add: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"
             + base64.b64encode(_b64(rng, 24)).decode().rstrip("=") + " ci@docs"),
            ("ssh_rsa_public", "authorized_keys has ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ"
             + base64.b64encode(_b64(rng, 120)).decode() + " me@laptop"),
            ("pem_public", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"
             + base64.b64encode(_b64(rng, 48)).decode() + "\n-----END PUBLIC KEY-----\n"
             "is this the key the webhook verifies with?"),
            ("certificate", "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE"
             + base64.b64encode(_b64(rng, 60)).decode() + "\n-----END CERTIFICATE-----"),
            ("image", "![logo](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA"
             + base64.b64encode(_b64(rng, 90)).decode() + ") does not render"),
            ("version", f"Upgrading from 9.{rng.randint(1, 9)}.{rng.randint(0, 30)} to "
                        f"10.0.0rc{rng.randint(1, 4)}+build.{rng.randint(100, 999)} broke search"),
            ("timestamp", f"The log line says 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                          f"{rng.randint(0, 23):02d}:14:07.{rng.randint(100000, 999999)}Z then stops"),
            ("stripe_ids", f"The webhook sends cus_{_hex(rng, 14)} and pi_3"
             + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                       for _ in range(24)) + ", how do I show them?"),
            ("publishable", "pk_live_51" + "".join(
                rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                for _ in range(60)) + " is in the page source, that is fine right?"),
            ("env_reference", "api_key: !ENV [DOCPILOT_API_KEY]\ntoken = os.environ['GITHUB_TOKEN']"
                              "\nwhy is the key not read?"),
            ("css", f"The theme uses #{_hex(rng, 6)} and rgba(0,0,0,.{rng.randint(1, 9)}) for the "
                    "header, how do I override it?"),
            ("path", f"Build output goes to /home/runner/work/docs/site/assets/javascripts/"
                     f"bundle.{_hex(rng, 8)}.min.js and 404s"),
            ("minified", "var e=function(t,n){return t&&n?t.split(\"\").map(function(r){return "
                         "r.charCodeAt(0)^n}).join(\"-\"):\"\"};module.exports=e;"),
            ("base64_text", "The header is X-Meta: " + base64.b64encode(
                f"build={rng.randint(100, 999)} branch=main author=docs team".encode()).decode()),
            ("commit_range", f"git diff {_hex(rng, 12)}..{_hex(rng, 12)} -- docs/ shows nothing"),
        ]
    # Keys that vendors print in their own documentation, which readers paste as they follow
    # along: AWS's documented example pair, Stripe's documented test key, jwt.io's sample.
    made += [
        ("vendor_example", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
                           "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        ("vendor_example", "Stripe.api_key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc' is from the "
                           "docs; is it enough to try the plugin?"),
        ("vendor_example", "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIx"
                           "MjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwR"
                           "JSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
        ("vendor_example", "SLACK_BOT_TOKEN=xoxb-not-a-real-token-this-will-not-work"),
        ("vendor_example", "The emulator uses AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uS"
                           "RZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw== in its connection string"),
        ("vendor_example", "RECAPTCHA_SITE_KEY=6LeIxAcTAAAAAJcZVRqyHh71UMIEGNQ_MXjiZKhI for tests"),
    ]
    return [Case(text, False, family, "generic") for family, text in made]


def other_negatives(kind: Kind, rng: random.Random) -> list[Case]:
    """Its stand-ins, in our surroundings and in the sources' ones."""
    out = negatives(kind, rng)
    if _is_whole(kind.shape):
        return out
    foreign = {k: t for k, t in FOREIGN.items() if _names_it(t)}
    for family, value in _stand_ins(kind, rng):
        context = rng.choice(sorted(foreign))
        text = foreign[context].format(env=kind.env, name=kind.env.lower(),
                                       camel=_camel(kind.env), v=value)
        out.append(Case(text, False, f"{family}:{kind.kind}", context))
    return out


def cases(split: str, per_kind: int = 6) -> list[Case]:
    """The cases of one split, reproducibly: "written" or "unseen" (the two halves of the
    catalogue), or "others" (`catalogue_others`: kinds from other scanners' rule tests and
    providers' documents, with their kinds of surroundings)."""
    out: list[Case] = []
    if split == "others":
        for kind in OTHERS:
            rng = random.Random(f"{SEED}:others:{kind.kind}")
            out += positives(kind, rng, per_kind, FOREIGN, FOREIGN_WHOLE)
            out += other_negatives(kind, rng)
        return out + generic_negatives(random.Random(f"{SEED}:others"))
    for kind in CATALOGUE:
        if split_of(kind.kind) != split:
            continue
        rng = random.Random(f"{SEED}:{kind.kind}")
        out += positives(kind, rng, per_kind)
        out += negatives(kind, rng)
    rng = random.Random(SEED)
    for case in generic_negatives(rng):
        digest = hashlib.sha256(case.text.encode()).digest()
        if ("written" if digest[0] % 2 == 0 else "unseen") == split:
            out.append(case)
    return out
