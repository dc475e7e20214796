"""Stage 1 of a turn: a question that carries a credential is recognised, and nothing else is.

Every secret here is synthetic: a seeded generator fills each vendor's documented format with
random characters (benchmarks/credentials/make_cases.py does the same for the full case set).
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from pathlib import Path

import pytest
from docpilot_runtime.screen.credentials import CredentialMatch, credential_reply, find_credential

# (no `corpora` import: these tests also run under Pyodide, which has no yaml)
CASES = Path(__file__).resolve().parents[2] / "benchmarks" / "credentials" / "cases.jsonl"
_rng = random.Random(7)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "-_"


def rand(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def b64url_json(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def found_kind(text: str) -> str | None:
    match = find_credential(text)
    return match.kind if match else None


# --- Vendor formats ---------------------------------------------------------------------

VENDOR_KEYS = {
    "openai_api_key": "sk-proj-" + rand(URLSAFE, 74) + "T3BlbkFJ" + rand(URLSAFE, 74),
    "anthropic_api_key": "sk-ant-api03-" + rand(URLSAFE, 93) + "AA",
    "aws_access_key_id": "AKIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
    "github_token": "ghp_" + rand(ALNUM, 36),
    "gitlab_token": "glpat-" + rand(URLSAFE, 20),
    "slack_token": f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(ALNUM, 24)}",
    "stripe_secret_key": "sk_live_51" + rand(ALNUM, 97),
    "google_api_key": "AIza" + rand(URLSAFE, 35),
    "twilio_api_key": "SK" + rand(HEX, 32),
    "sendgrid_api_key": f"SG.{rand(URLSAFE, 22)}.{rand(URLSAFE, 43)}",
    "npm_token": "npm_" + rand(ALNUM, 36),
    "pypi_token": "pypi-AgEIcHlwaS5vcmc" + rand(URLSAFE, 120),
    "huggingface_token": "hf_" + rand(string.ascii_letters, 34),
    "databricks_token": "dapi" + rand(HEX, 32),
    "digitalocean_token": "dop_v1_" + rand(HEX, 64),
    "shopify_token": "shpat_" + rand(HEX, 32),
    "vault_token": "hvs." + rand(URLSAFE, 94),
    "linear_api_key": "lin_api_" + rand(ALNUM, 40),
    "postman_api_key": f"PMAK-{rand(HEX, 24)}-{rand(HEX, 34)}",
    "grafana_token": f"glsa_{rand(ALNUM, 32)}_{rand(HEX, 8)}",
    "newrelic_key": "NRAK-" + rand(string.ascii_uppercase + string.digits, 27),
    "pulumi_access_token": "pul-" + rand(HEX, 40),
    "doppler_token": "dp.pt." + rand(ALNUM, 43),
    "terraform_cloud_token": rand(ALNUM, 14) + ".atlasv1." + rand(URLSAFE, 67),
    "telegram_bot_token": "7" + rand(string.digits, 9) + ":AA" + rand(URLSAFE, 33),
    "age_secret_key": "AGE-SECRET-KEY-1" + rand("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
}


@pytest.mark.parametrize(("kind", "key"), VENDOR_KEYS.items(), ids=VENDOR_KEYS.keys())
def test_vendor_key_is_recognised_with_its_kind_and_span(kind: str, key: str) -> None:
    text = f"I set MY_KEY={key} and still get 401, why?"
    match = find_credential(text)
    assert match is not None
    assert match.kind == kind
    assert text[match.start : match.end] == key


@pytest.mark.parametrize(
    "template",
    [
        "Mi clave {key} no funciona, ¿qué hago?",
        "我的密钥 {key} 一直报 401 错误",
        "トークン {key} を設定したのにエラーになります",
        "Почему ключ {key} не работает?",
        '{{"token": "{key}"}}',
        "`{key}`.",
    ],
)
def test_vendor_key_is_recognised_in_any_language_and_quoting(template: str) -> None:
    key = "ghp_" + rand(ALNUM, 36)
    assert found_kind(template.format(key=key)) == "github_token"


@pytest.mark.parametrize(
    "text",
    [
        "I set OPENAI_API_KEY=sk-... and still get 401",
        "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "sk-proj-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "api_key: sk-proj-abc123...truncated",
    ],
)
def test_placeholder_openai_key_is_not_flagged(text: str) -> None:
    assert find_credential(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "stripe.api_key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc'",
        "Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
        "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
        "xoxb-not-a-real-token-this-will-not-work",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    ],
)
def test_vendor_documentation_example_is_not_flagged(text: str) -> None:
    assert find_credential(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "ghp_1234567890abcdefghijklmnopqrstuvwxyz",
        "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
        "GITHUB_TOKEN=ghp_YOUR_TOKEN_HERE",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "ghp_a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6",
    ],
)
def test_placeholder_github_token_made_of_sequences_or_repeats_is_not_flagged(text: str) -> None:
    assert find_credential(text) is None


def test_text_that_changes_length_when_lower_cased_is_still_checked() -> None:
    password = "Quartz#4821xK!"
    assert found_kind(f"İstanbul ofisi: DB_PASSWORD={password}") == "password_assignment"


def test_jwt_io_sample_token_is_not_flagged() -> None:
    sample = (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
        "IiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    )
    assert find_credential(f"Authorization: Bearer {sample}") is None


def test_stripe_test_secret_key_is_flagged_but_publishable_key_is_not() -> None:
    assert found_kind("sk_test_51" + rand(ALNUM, 97)) == "stripe_secret_key"
    assert find_credential("STRIPE_PUBLISHABLE_KEY=pk_live_51" + rand(ALNUM, 97)) is None


def test_twilio_account_sid_alone_is_an_identifier_but_with_its_token_it_is_a_secret() -> None:
    sid = "AC" + rand(HEX, 32)
    assert find_credential(f"TWILIO_ACCOUNT_SID={sid}") is None
    assert found_kind(f"curl -u {sid}:{rand(HEX, 32)} https://api.twilio.com") == (
        "twilio_auth_token"
    )


def test_aws_secret_access_key_is_recognised_by_its_name() -> None:
    text = f"aws_secret_access_key = {rand(ALNUM + '+/', 40)}"
    assert found_kind(text) == "aws_secret_access_key"


# --- Structure ----------------------------------------------------------------------------


def test_jwt_with_real_claims_is_flagged() -> None:
    token = ".".join((b64url_json({"alg": "RS256", "typ": "JWT"}),
                      b64url_json({"sub": "u-4821", "exp": 1767225600}), rand(URLSAFE, 342)))
    match = find_credential(f"my cookie is {token}, can I decode it?")
    assert match is not None and match.kind == "jwt"


def test_supabase_anon_jwt_is_public_by_design() -> None:
    token = ".".join((b64url_json({"alg": "HS256", "typ": "JWT"}),
                      b64url_json({"iss": "supabase", "role": "anon"}), rand(URLSAFE, 43)))
    assert find_credential(f"SUPABASE_ANON_KEY={token}") is None


def pem_body(n: int) -> str:
    body = rand(ALNUM + "+/", n)
    return "\n".join(body[i : i + 64] for i in range(0, n, 64))


@pytest.mark.parametrize(
    "block",
    [
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA{body}\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAA"
        "ABAAAAMwAAAAtzc2gtZW\n{body}\n-----END OPENSSH PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC{body}",  # JSON-escaped
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBG{body}",  # partial paste
        "just the middle: MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ{body}",
    ],
)
def test_private_key_is_flagged_even_when_partial(block: str) -> None:
    assert found_kind(block.format(body=pem_body(200))) == "pem_private_key"


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{body}\n"
        "-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE{body}\n-----END CERTIFICATE-----",
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{body} docs@ci",
        "-----BEGIN RSA PRIVATE KEY----- appears in my logs, what does it mean?",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n<redacted>\n-----END OPENSSH PRIVATE KEY-----",
    ],
)
def test_public_key_material_and_bare_pem_headers_are_not_flagged(text: str) -> None:
    assert find_credential(text.format(body=pem_body(300).replace("\n", ""))) is None


# --- Context: URLs, assignments, headers -------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "postgres://docs_app:{pw}@db.internal:5432/docs",
        "mongodb+srv://admin:{pw}@cluster0.ab1cd.mongodb.net/docs",
        "redis://:{pw}@cache.internal:6379/0",
        "amqp://svc:{pw}@mq.internal:5672/",
        "https://deploy:{pw}@git.acme-docs.io/docs.git",
    ],
)
def test_connection_string_with_a_real_password_is_flagged(url: str) -> None:
    password = "Qz" + rand(ALNUM, 10) + "!7"
    match = find_credential(f"DATABASE_URL={url.format(pw=password)} fails")
    assert match is not None and match.kind == "connection_string_password"


@pytest.mark.parametrize(
    "url",
    [
        "postgres://user:password@localhost:5432/docs",
        "postgres://postgres:postgres@localhost:5432/postgres",
        "postgresql://${DB_USER}:${DB_PASSWORD}@${DB_HOST}/docs",
        "mongodb+srv://admin:<password>@cluster0.mongodb.net/test",
        "amqp://guest:guest@localhost:5672/",
        "https://user@git.acme-docs.io/docs.git",
        "https://squidfunk.github.io/mkdocs-material/setup/setting-up-site-search/",
    ],
)
def test_url_without_a_real_password_is_not_flagged(url: str) -> None:
    assert find_credential(f"Why does {url} fail?") is None


@pytest.mark.parametrize(
    "template",
    [
        "DB_PASSWORD={pw}",
        'export PGPASSWORD="{pw}"',
        "database:\n  password: {pw}",
        '{{"username": "docs", "password": "{pw}"}}',
        '[database]\npassword = "{pw}"',
        "mkdocs-deploy --password {pw}",
        "<password>{pw}</password>",
        "env:\n  - name: SMTP_PASSWORD\n    value: \"{pw}\"",
        "my password is {pw} and login fails",
        "Mi contraseña es {pw}",
        "我的密码是{pw}，为什么登录失败？",
        "Мой пароль: {pw}",
    ],
)
def test_password_assignment_with_a_real_looking_value_is_flagged(template: str) -> None:
    assert found_kind(template.format(pw="Quartz#4821xK!")) == "password_assignment"


@pytest.mark.parametrize(
    "text",
    [
        "What does password= do in mkdocs.yml?",
        "password: changeme",
        "DB_PASSWORD=password123",
        "MYSQL_ROOT_PASSWORD: admin123",
        "password: P@ssw0rd!",
        "password: ****",
        "password = %(db_password)s",
        "password: {{ db_password }}",
        "password: str = Field(min_length=12)",
        "password_min_length: 12",
        "password = random_password.db.result",
        "The password must contain at least 12 characters, one digit and one symbol.",
    ],
)
def test_password_placeholder_default_or_code_is_not_flagged(text: str) -> None:
    assert find_credential(text) is None


@pytest.mark.parametrize(
    "template",
    [
        'api_key = "{tok}"',
        "MISTRAL_API_KEY={tok}",
        "curl -H 'X-API-Key: {tok}' https://search.acme-docs.io",
        "client_secret: {tok}",
        "My API key is {tok}, why 403?",
        "?access_token={tok}&page=2",
    ],
)
def test_random_value_behind_a_secret_name_is_flagged(template: str) -> None:
    assert found_kind(template.format(tok=rand(ALNUM, 32))) == "high_entropy_secret"


@pytest.mark.parametrize(
    "text",
    [
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "token: ${GITHUB_TOKEN}",
        "apiKey: process.env.OPENAI_API_KEY",
        'key = os.environ["OPENAI_API_KEY"]',
        "api_key: YOUR_API_KEY",
        "api_key: <insert key here>",
        "max_tokens: 1024",
        "token_url: https://auth.acme-docs.io/oauth/token",
        "primary key 0f8fad5b-d9cb-469f-a165-70867728950e duplicated",
        "The cache key is docs-v2-3f9a1c2b",
        "public key: MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE" + "A" * 8,
    ],
)
def test_secret_name_without_a_secret_value_is_not_flagged(text: str) -> None:
    assert find_credential(text) is None


def test_basic_auth_header_is_flagged_only_when_it_decodes_to_a_real_password() -> None:
    real = base64.b64encode(b"docs-bot:Quartz#4821xK!").decode()
    default = base64.b64encode(b"user:password").decode()
    assert found_kind(f"Authorization: Basic {real}") == "authorization_header"
    assert find_credential(f"Authorization: Basic {default}") is None


def test_bearer_header_with_an_opaque_token_is_flagged_but_not_a_placeholder() -> None:
    assert found_kind(f"Authorization: Bearer {rand(ALNUM, 40)}") == "authorization_header"
    assert find_credential("Authorization: Bearer <token>") is None
    assert find_credential("Authorization: Bearer $TOKEN") is None


def test_random_token_behind_an_unknown_vendor_prefix_is_flagged() -> None:
    assert found_kind(f"our search key acme_live_{rand(ALNUM, 40)} stopped") in (
        "generic_api_token",
        "high_entropy_secret",
    )
    assert found_kind(f"it is acme_live_{rand(ALNUM, 40)}") == "generic_api_token"


@pytest.mark.parametrize(
    "token",
    [
        "fx_" + rand(HEX, 40),  # a hex body behind an unknown prefix
        "qz-" + rand("abcdefghijklmnopqrstuvwxyz0123456789", 48),  # lower-case base36
        "wy0_" + rand(URLSAFE, 54),  # url-safe base64 with "-" and "_" inside
        "acme-api-" + rand(ALNUM, 17) + "-" + rand(ALNUM, 32),  # a long middle segment
    ],
)
def test_unknown_vendor_token_in_a_new_shape_is_flagged(token: str) -> None:
    assert found_kind(f"The deploy log prints `{token}` before the error") == "generic_api_token"


def test_uuid_behind_a_secret_prefix_is_a_key_but_behind_an_id_prefix_is_not() -> None:
    h = rand(HEX, 32)
    uuid = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"
    assert found_kind(f"Is sk_{uuid} the right format?") is not None
    assert find_credential(f"The job req_{uuid} failed, user-{uuid} too") is None


def test_hex_behind_a_prefix_next_to_digest_words_is_not_flagged() -> None:
    assert find_credential(f"cache key: docs-{rand(HEX, 40)}") is None
    assert find_credential(f"build-{rand(HEX, 40)} is the commit that broke it") is None


def test_vendor_prefix_that_repeats_the_name_is_still_a_secret() -> None:
    token = "sk-helicone-" + "-".join(rand("abcdefghijklmnopqrstuvwxyz0123456789", 7)
                                      for _ in range(4))
    assert found_kind(f"HELICONE_API_KEY: {token}") == "high_entropy_secret"
    assert find_credential("HELICONE_API_KEY: my_helicone_api_key_here") is None


def test_a_key_named_after_a_product_in_prose_is_a_credential() -> None:
    assert found_kind(f"my Algolia key is {rand(HEX, 32)} and it is rejected") is not None
    assert find_credential(f"the cache key is {rand(HEX, 32)} after the build") is None


def test_openvpn_static_key_block_is_flagged_but_its_header_alone_is_not() -> None:
    lines = "\n".join(rand(HEX, 32) for _ in range(8))
    block = f"-----BEGIN OpenVPN Static key V1-----\n{lines}\n-----END OpenVPN Static key V1-----"
    assert found_kind(f"tls-auth ta.key:\n{block}") == "openvpn_static_key"
    assert find_credential("Where does -----BEGIN OpenVPN Static key V1----- go?") is None


def test_personal_access_token_named_pat_is_flagged() -> None:
    assert found_kind(f"CLARIFAI_PAT={rand(HEX, 32)}") == "high_entropy_secret"
    assert find_credential("Set CLARIFAI_PAT to your token from the settings page") is None


@pytest.mark.parametrize(
    "text",
    [
        "How do I rotate my API key?",
        "Where do I put the token?",
        "The build broke after commit 3f2a9c1e8b7d6f5a4c3b2a1908f7e6d5c4b3a291",
        "Request id 0f8fad5b-d9cb-469f-a165-70867728950e failed",
        "sha256 of the bundle is " + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b78"
        "52b855",
        "The header colour #1e88e5 doesn't apply",
        "After upgrading to mkdocs-material==9.5.49 search crashes",
        "payment_intent pi_3MtwBwLkdIwHu7ix28a3tqPa stays in requires_action",
        "What is aGVsbG8gd29ybGQ= in the config?",
        "def rotate_api_key(service_account_token_provider): ...",
    ],
)
def test_ordinary_docs_question_is_not_flagged(text: str) -> None:
    assert find_credential(text) is None


# --- The whole case set, robustness, and the reply ---------------------------------------


def load_cases() -> list[dict[str, object]]:
    with CASES.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_case_set_precision_and_recall_meet_the_bar() -> None:
    cases = load_cases()
    tp = fp = fn = 0
    for case in cases:
        flagged = find_credential(str(case["text"])) is not None
        tp += flagged and bool(case["credential"])
        fp += flagged and not case["credential"]
        fn += (not flagged) and bool(case["credential"])
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    assert precision >= 0.98, f"precision {precision:.3f} ({fp} false positives)"
    assert recall >= 0.95, f"recall {recall:.3f} ({fn} false negatives)"


def test_case_set_is_large_and_varied_enough() -> None:
    cases = load_cases()
    positives = [c for c in cases if c["credential"]]
    assert len(positives) >= 220
    assert len(cases) - len(positives) >= 220
    assert len({c["kind"] for c in positives}) >= 45


PATHOLOGICAL = [
    "a" * 2000,
    "key=" * 500,
    "password: x " * 166,
    "-----BEGIN " * 180,
    "sk-" * 666,
    "https://" + "a:" * 996,
    "eyJ" + ".eyJ" * 499,
    ("x" * 63 + " ") * 31,
    "1/" * 1000,
    "AAAA" * 500,
    "ghp_" + "_" * 1996,
    "@" * 2000,
    ":aa" * 666,
]


@pytest.mark.timeout(10)
@pytest.mark.parametrize("text", PATHOLOGICAL, ids=[p[:6] for p in PATHOLOGICAL])
def test_pathological_two_thousand_characters_complete(text: str) -> None:
    find_credential(text)  # completes: no regex here backtracks catastrophically


def test_reply_names_the_kind_and_never_echoes_the_secret() -> None:
    for case in load_cases():
        text = str(case["text"])
        match = find_credential(text)
        if match is None:
            continue
        secret = text[match.start : match.end]
        reply = credential_reply(match)
        assert match.label in reply
        assert "rotate" in reply or "change that password" in reply
        for i in range(0, max(len(secret) - 8, 0) + 1):
            assert secret[i : i + 8] not in reply, f"reply echoes part of {case['origin']}"


def test_every_match_has_a_snake_case_kind_and_a_span_inside_the_text() -> None:
    for case in load_cases():
        text = str(case["text"])
        match = find_credential(text)
        if match is None:
            continue
        assert isinstance(match, CredentialMatch)
        assert re.fullmatch(r"[a-z0-9]+(?:_[a-z0-9]+)*", match.kind)
        assert 0 <= match.start < match.end <= len(text)


# --- The rules file: plain data any engine can read ------------------------------------


def _plain(value: object) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return isinstance(value, str | bool)


def test_the_rules_file_is_plain_json_and_every_row_compiles_with_a_body() -> None:
    from docpilot_runtime.screen.credential_rules import RULES_FILE, TOKEN_FORMATS

    data = json.loads(RULES_FILE.read_text(encoding="utf-8"))
    assert _plain(data)
    assert len(TOKEN_FORMATS) == len(data["token_formats"]) >= 80
    for fmt, row in zip(TOKEN_FORMATS, data["token_formats"], strict=True):
        assert "body" in fmt.pattern.groupindex, row["kind"]
        assert row["hints"] and all(h == h.lower() for h in row["hints"]), row["kind"]
        assert re.fullmatch(r"[a-z0-9_]+", row["kind"]), row["kind"]


def test_a_malformed_rules_row_is_named_with_its_file_and_index() -> None:
    from docpilot_runtime.screen.credential_rules import RulesError, _token_format

    with pytest.raises(RulesError, match=r"token_formats\[3\]: regex does not compile"):
        _token_format({"kind": "k", "label": "K", "regex": "(", "hints": ["k"]},
                      "credential_rules.json: token_formats[3]")
    with pytest.raises(RulesError, match="expected an object with kind, label, regex"):
        _token_format({"kind": "k"}, "credential_rules.json: token_formats[0]")
