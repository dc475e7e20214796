"""Write cases.jsonl: reader questions with and without credentials, for the stage-1 check.

Every secret in the file is random text shaped like a vendor's documented key format, drawn
from a seeded generator, so the file is reproducible and nothing in it was ever a real
credential. Run from anywhere: `python benchmarks/credentials/make_cases.py`.

Each line: {"text", "credential", "kind", "origin"}. `kind` is the kind the detector should
report (null for a question without a credential); `origin` says which public format or
situation the case imitates (SOURCES.md names the vendor documents).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

OUT = Path(__file__).with_name("cases.jsonl")
RNG = random.Random(20250601)

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def chars(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def digits(n: int) -> str:
    return str(RNG.randint(1, 9)) + chars(string.digits, n - 1)


def uuid4() -> str:
    h = chars(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{RNG.choice('89ab')}{h[17:20]}-{h[20:]}"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def password() -> str:
    """A human-made strong password: words, digits and symbols mixed."""
    stems = ["Falcon", "river", "Quartz", "maple", "Orbit", "tundra", "Cobalt", "lumen", "Vigil"]
    return (RNG.choice(stems) + RNG.choice("!#%&*+?@^~") + digits(RNG.randint(2, 4))
            + chars(string.ascii_letters, 2) + RNG.choice("!#%&*?@"))


def jwt(claims: dict[str, object], alg: str = "HS256") -> str:
    header = {"alg": alg, "typ": "JWT"}
    sig_len = 43 if alg.startswith("HS") else 342
    return ".".join((b64url(json.dumps(header, separators=(",", ":")).encode()),
                     b64url(json.dumps(claims, separators=(",", ":")).encode()),
                     chars(URLSAFE, sig_len)))


def sample_signed_jwt(claims: dict[str, object]) -> str:
    """A tutorial's token: signed with jwt.io's published sample secret, so anyone can mint
    it (the random signature is still drawn, so the cases after it stay as they were)."""
    header, payload, _ = jwt(claims).split(".")
    mac = hmac.new(b"your-256-bit-secret", f"{header}.{payload}".encode(), hashlib.sha256)
    return f"{header}.{payload}.{b64url(mac.digest())}"


def b64_lines(n_chars: int) -> str:
    body = chars(B64, n_chars)
    return "\n".join(body[i : i + 64] for i in range(0, len(body), 64))


# --- Question templates ---------------------------------------------------------------------

KEY_TEMPLATES = [
    "I set {env}={secret} and still get 401, why?",
    "Getting 'invalid credentials' from the {product} integration. My .env has:\n{env}={secret}"
    "\nWhat am I missing?",
    'export {env}="{secret}"\nmkdocs serve then fails with an auth error. Is the plugin '
    "reading it?",
    "Is this the right format for a {product} key? {secret}",
    "plugins:\n  - docpilot:\n      api_key: {secret}\nIs this correct in mkdocs.yml?",
    "docker run -e {env}={secret} docpilot:latest exits immediately, any idea?",
    "Traceback (most recent call last):\n  ...\nAuthenticationError: Incorrect API key "
    "provided: {secret}. What now?",
    'Here is my config and search says unauthorized: {{"token": "{secret}"}}',
    "Mi clave de {product} {secret} no funciona con el plugin, ¿qué hago?",
    "Pourquoi mon jeton {product} {secret} est-il refusé ?",
    "Warum wird mein {product}-Token {secret} abgelehnt?",
    "我的 {product} 密钥 {secret} 一直报 401 错误，怎么办？",
    "{product} のトークン {secret} を設定したのに認証エラーになります。",
    "Почему ключ {product} {secret} не работает с плагином?",
    "A minha chave {product} {secret} não funciona no build, o que faço?",
    "{product} 토큰 {secret} 을 넣었는데 401 오류가 납니다",
    "Perché la mia chiave {product} {secret} viene rifiutata?",
    "The deploy step prints `{secret}` in the log, is that a problem for the docs build?",
]
URL_TEMPLATES = [
    "Notifications from the docs build should go to {secret} but nothing arrives. Why?",
    "I configured the webhook as {secret} in mkdocs.yml, is the format right?",
    "¿Por qué no llegan los avisos a {secret}?",
    "webhook_url: {secret}\nthe plugin ignores it, help",
]


def key_cases(kind: str, origin: str, env: str, product: str,
              make: Callable[[], str], n: int = 3) -> list[dict[str, object]]:
    templates = RNG.sample(KEY_TEMPLATES, n)
    return [case(t.format(env=env, product=product, secret=make()), kind, origin)
            for t in templates]


def url_cases(kind: str, origin: str, make: Callable[[], str], n: int = 3
              ) -> list[dict[str, object]]:
    return [case(t.format(secret=make()), kind, origin) for t in RNG.sample(URL_TEMPLATES, n)]


def case(text: str, kind: str | None, origin: str) -> dict[str, object]:
    return {"text": text, "credential": kind is not None, "kind": kind, "origin": origin}


# --- Positives: vendor formats --------------------------------------------------------------

# (kind, origin, env var, product, maker)
VENDOR_FORMATS: list[tuple[str, str, str, str, Callable[[], str]]] = [
    ("openai_api_key", "OpenAI project key: sk-proj- with T3BlbkFJ marker", "OPENAI_API_KEY",
     "OpenAI", lambda: "sk-proj-" + chars(URLSAFE, 74) + "T3BlbkFJ" + chars(URLSAFE, 74)),
    ("openai_api_key", "OpenAI legacy user key: sk- 20 + T3BlbkFJ + 20", "OPENAI_API_KEY",
     "OpenAI", lambda: "sk-" + chars(ALNUM, 20) + "T3BlbkFJ" + chars(ALNUM, 20)),
    ("openai_api_key", "OpenAI service-account key: sk-svcacct-", "OPENAI_API_KEY", "OpenAI",
     lambda: "sk-svcacct-" + chars(URLSAFE, 58) + "T3BlbkFJ" + chars(URLSAFE, 58)),
    ("anthropic_api_key", "Anthropic API key: sk-ant-api03- + 93 + AA", "ANTHROPIC_API_KEY",
     "Anthropic", lambda: "sk-ant-api03-" + chars(URLSAFE, 93) + "AA"),
    ("anthropic_api_key", "Anthropic admin key: sk-ant-admin01-", "ANTHROPIC_ADMIN_KEY",
     "Anthropic", lambda: "sk-ant-admin01-" + chars(URLSAFE, 93) + "AA"),
    ("openrouter_api_key", "OpenRouter key: sk-or-v1- + 64 hex", "OPENROUTER_API_KEY",
     "OpenRouter", lambda: "sk-or-v1-" + chars(HEX, 64)),
    ("openai_style_api_key", "OpenAI-compatible provider key (DeepSeek style): sk- + 32 hex",
     "DEEPSEEK_API_KEY", "DeepSeek", lambda: "sk-" + chars(HEX, 32)),
    ("groq_api_key", "Groq key: gsk_ + 52 base62", "GROQ_API_KEY", "Groq",
     lambda: "gsk_" + chars(ALNUM, 52)),
    ("xai_api_key", "xAI key: xai- + 80 base62", "XAI_API_KEY", "xAI",
     lambda: "xai-" + chars(ALNUM, 80)),
    ("perplexity_api_key", "Perplexity key: pplx- + 48", "PERPLEXITY_API_KEY", "Perplexity",
     lambda: "pplx-" + chars(ALNUM, 48)),
    ("replicate_api_token", "Replicate token: r8_ + 37", "REPLICATE_API_TOKEN", "Replicate",
     lambda: "r8_" + chars(ALNUM, 37)),
    ("huggingface_token", "Hugging Face user access token: hf_ + 34 letters", "HF_TOKEN",
     "Hugging Face", lambda: "hf_" + chars(string.ascii_letters, 34)),
    ("langsmith_api_key", "LangSmith key: lsv2_pt_<32 hex>_<10 hex>", "LANGSMITH_API_KEY",
     "LangSmith", lambda: f"lsv2_pt_{chars(HEX, 32)}_{chars(HEX, 10)}"),
    ("pinecone_api_key", "Pinecone key: pcsk_<5>_<long>", "PINECONE_API_KEY", "Pinecone",
     lambda: f"pcsk_{chars(ALNUM, 5)}_{chars(ALNUM, 63)}"),
    ("tavily_api_key", "Tavily key: tvly-dev- + 32", "TAVILY_API_KEY", "Tavily",
     lambda: "tvly-dev-" + chars(ALNUM, 32)),
    ("nvidia_api_key", "NVIDIA API catalog key: nvapi- + 64", "NVIDIA_API_KEY", "NVIDIA",
     lambda: "nvapi-" + chars(URLSAFE, 64)),
    ("aws_access_key_id", "AWS long-term access key id: AKIA + 16 base32", "AWS_ACCESS_KEY_ID",
     "AWS", lambda: "AKIA" + chars(BASE32, 16)),
    ("aws_access_key_id", "AWS temporary (STS) access key id: ASIA + 16", "AWS_ACCESS_KEY_ID",
     "AWS", lambda: "ASIA" + chars(BASE32, 16)),
    ("aws_session_token", "AWS STS session token (IQoJb3JpZ2luX2Vj…)", "AWS_SESSION_TOKEN",
     "AWS", lambda: "IQoJb3JpZ2luX2Vj" + chars(B64, 300)),
    ("google_api_key", "Google API key: AIza + 35", "GOOGLE_API_KEY", "Google Maps",
     lambda: "AIza" + chars(URLSAFE, 35)),
    ("google_oauth_client_secret", "Google OAuth client secret: GOCSPX- + 28",
     "GOOGLE_CLIENT_SECRET", "Google OAuth", lambda: "GOCSPX-" + chars(URLSAFE, 28)),
    ("google_oauth_token", "Google OAuth access token: ya29.", "GOOGLE_ACCESS_TOKEN", "Google",
     lambda: "ya29.a0" + chars(URLSAFE, 160)),
    ("azure_ad_client_secret", "Microsoft Entra client secret: xxx8Q~ + 34", "AZURE_CLIENT_SECRET",
     "Azure AD", lambda: chars(ALNUM, 3) + "8Q~" + chars(ALNUM + "_~.-", 34)),
    ("alibaba_access_key_id", "Alibaba Cloud AccessKey ID: LTAI + 20", "ALIBABA_ACCESS_KEY_ID",
     "Alibaba Cloud", lambda: "LTAI" + chars(ALNUM, 20)),
    ("digitalocean_token", "DigitalOcean PAT: dop_v1_ + 64 hex", "DIGITALOCEAN_TOKEN",
     "DigitalOcean", lambda: "dop_v1_" + chars(HEX, 64)),
    ("heroku_api_key", "Heroku API key v2: HRKU-AA + 58", "HEROKU_API_KEY", "Heroku",
     lambda: "HRKU-AA" + chars(URLSAFE, 58)),
    ("fly_token", "Fly.io token: fo1_ + 43", "FLY_API_TOKEN", "Fly.io",
     lambda: "fo1_" + chars(URLSAFE, 43)),
    ("vault_token", "HashiCorp Vault service token: hvs. + 90+", "VAULT_TOKEN", "Vault",
     lambda: "hvs." + chars(URLSAFE, 94)),
    ("terraform_cloud_token", "Terraform Cloud token: <14>.atlasv1.<67>", "TFE_TOKEN",
     "Terraform Cloud", lambda: chars(ALNUM, 14) + ".atlasv1." + chars(URLSAFE, 67)),
    ("pulumi_access_token", "Pulumi token: pul- + 40 hex", "PULUMI_ACCESS_TOKEN", "Pulumi",
     lambda: "pul-" + chars(HEX, 40)),
    ("doppler_token", "Doppler personal token: dp.pt. + 43", "DOPPLER_TOKEN", "Doppler",
     lambda: "dp.pt." + chars(ALNUM, 43)),
    ("supabase_token", "Supabase access token: sbp_ + 40 hex", "SUPABASE_ACCESS_TOKEN",
     "Supabase", lambda: "sbp_" + chars(HEX, 40)),
    ("planetscale_token", "PlanetScale password: pscale_pw_ + 43", "PLANETSCALE_PASSWORD",
     "PlanetScale", lambda: "pscale_pw_" + chars(URLSAFE, 43)),
    ("databricks_token", "Databricks PAT: dapi + 32 hex", "DATABRICKS_TOKEN", "Databricks",
     lambda: "dapi" + chars(HEX, 32)),
    ("github_token", "GitHub classic PAT: ghp_ + 36", "GITHUB_TOKEN", "GitHub",
     lambda: "ghp_" + chars(ALNUM, 36)),
    ("github_token", "GitHub OAuth token: gho_ + 36", "GH_TOKEN", "GitHub",
     lambda: "gho_" + chars(ALNUM, 36)),
    ("github_token", "GitHub App installation token: ghs_ + 36", "GITHUB_TOKEN", "GitHub",
     lambda: "ghs_" + chars(ALNUM, 36)),
    ("github_token", "GitHub fine-grained PAT: github_pat_<22>_<59>", "GITHUB_TOKEN", "GitHub",
     lambda: f"github_pat_{chars(ALNUM, 22)}_{chars(ALNUM, 59)}"),
    ("gitlab_token", "GitLab PAT: glpat- + 20", "GITLAB_TOKEN", "GitLab",
     lambda: "glpat-" + chars(URLSAFE, 20)),
    ("gitlab_token", "GitLab deploy token: gldt- + 20", "CI_DEPLOY_TOKEN", "GitLab",
     lambda: "gldt-" + chars(URLSAFE, 20)),
    ("bitbucket_app_password", "Bitbucket app password: ATBB + 32", "BITBUCKET_APP_PASSWORD",
     "Bitbucket", lambda: "ATBB" + chars(ALNUM, 32)),
    ("atlassian_api_token", "Atlassian API token: ATATT3 + 186", "JIRA_API_TOKEN", "Jira",
     lambda: "ATATT3xFfGF0" + chars(URLSAFE, 170) + "=" + chars(UPPER_ALNUM, 8)),
    ("npm_token", "npm access token: npm_ + 36", "NPM_TOKEN", "npm",
     lambda: "npm_" + chars(ALNUM, 36)),
    ("pypi_token", "PyPI API token: pypi-AgEIcHlwaS5vcmc…", "TWINE_PASSWORD", "PyPI",
     lambda: "pypi-AgEIcHlwaS5vcmc" + chars(URLSAFE, 160)),
    ("rubygems_api_key", "RubyGems key: rubygems_ + 48 hex", "GEM_HOST_API_KEY", "RubyGems",
     lambda: "rubygems_" + chars(HEX, 48)),
    ("nuget_api_key", "NuGet key: oy2 + 43 lowercase", "NUGET_API_KEY", "NuGet",
     lambda: "oy2" + chars(LOWER_ALNUM, 43)),
    ("docker_hub_token", "Docker Hub PAT: dckr_pat_ + 27", "DOCKERHUB_TOKEN", "Docker Hub",
     lambda: "dckr_pat_" + chars(URLSAFE, 27)),
    ("circleci_token", "CircleCI PAT: CCIPAT_<22>_<40 hex>", "CIRCLE_TOKEN", "CircleCI",
     lambda: f"CCIPAT_{chars(ALNUM, 22)}_{chars(HEX, 40)}"),
    ("netlify_token", "Netlify PAT: nfp_ + 36", "NETLIFY_AUTH_TOKEN", "Netlify",
     lambda: "nfp_" + chars(ALNUM, 36)),
    ("slack_token", "Slack bot token: xoxb-<team>-<bot>-<24>", "SLACK_BOT_TOKEN", "Slack",
     lambda: f"xoxb-{digits(12)}-{digits(13)}-{chars(ALNUM, 24)}"),
    ("slack_token", "Slack user token: xoxp-<d>-<d>-<d>-<32 hex>", "SLACK_USER_TOKEN", "Slack",
     lambda: f"xoxp-{digits(12)}-{digits(12)}-{digits(13)}-{chars(HEX, 32)}"),
    ("slack_token", "Slack app-level token: xapp-1-A…-<d>-<64 hex>", "SLACK_APP_TOKEN", "Slack",
     lambda: f"xapp-1-A{chars(UPPER_ALNUM, 10)}-{digits(13)}-{chars(HEX, 64)}"),
    ("discord_bot_token", "Discord bot token: base64(id).<6>.<27+>", "DISCORD_TOKEN", "Discord",
     lambda: (base64.b64encode(digits(18).encode()).decode().rstrip("=") + "."
              + chars(URLSAFE, 6) + "." + chars(URLSAFE, 38))),
    ("telegram_bot_token", "Telegram bot token: <bot id>:AA + 33", "TELEGRAM_BOT_TOKEN",
     "Telegram", lambda: digits(10) + ":AA" + chars(URLSAFE, 33)),
    ("twilio_api_key", "Twilio API key SID: SK + 32 hex", "TWILIO_API_KEY", "Twilio",
     lambda: "SK" + chars(HEX, 32)),
    ("sendgrid_api_key", "SendGrid key: SG.<22>.<43>", "SENDGRID_API_KEY", "SendGrid",
     lambda: f"SG.{chars(URLSAFE, 22)}.{chars(URLSAFE, 43)}"),
    ("mailgun_api_key", "Mailgun legacy key: key- + 32", "MAILGUN_API_KEY", "Mailgun",
     lambda: "key-" + chars(HEX, 32)),
    ("mailchimp_api_key", "Mailchimp key: <32 hex>-us<dc>", "MAILCHIMP_API_KEY", "Mailchimp",
     lambda: chars(HEX, 32) + f"-us{RNG.randint(1, 21)}"),
    ("brevo_api_key", "Brevo key: xkeysib-<64 hex>-<16>", "BREVO_API_KEY", "Brevo",
     lambda: f"xkeysib-{chars(HEX, 64)}-{chars(ALNUM, 16)}"),
    ("resend_api_key", "Resend key: re_<8>_<24>", "RESEND_API_KEY", "Resend",
     lambda: f"re_{chars(ALNUM, 8)}_{chars(ALNUM, 24)}"),
    ("stripe_secret_key", "Stripe live secret key: sk_live_ + 99", "STRIPE_SECRET_KEY", "Stripe",
     lambda: "sk_live_51" + chars(ALNUM, 97)),
    ("stripe_secret_key", "Stripe restricted key: rk_live_", "STRIPE_RESTRICTED_KEY", "Stripe",
     lambda: "rk_live_51" + chars(ALNUM, 97)),
    ("stripe_secret_key", "Stripe test-mode secret key: sk_test_", "STRIPE_SECRET_KEY",
     "Stripe", lambda: "sk_test_51" + chars(ALNUM, 97)),
    ("stripe_webhook_secret", "Stripe webhook signing secret: whsec_ + 32", "STRIPE_WEBHOOK_SECRET",
     "Stripe", lambda: "whsec_" + chars(ALNUM, 32)),
    ("square_access_token", "Square production access token: EAAA + 60", "SQUARE_ACCESS_TOKEN",
     "Square", lambda: "EAAA" + chars(URLSAFE, 60)),
    ("shopify_token", "Shopify Admin API token: shpat_ + 32 hex", "SHOPIFY_ACCESS_TOKEN",
     "Shopify", lambda: "shpat_" + chars(HEX, 32)),
    ("shopify_token", "Shopify app shared secret: shpss_ + 32 hex", "SHOPIFY_API_SECRET",
     "Shopify", lambda: "shpss_" + chars(HEX, 32)),
    ("plaid_access_token", "Plaid access token: access-production-<uuid>", "PLAID_ACCESS_TOKEN",
     "Plaid", lambda: "access-production-" + uuid4()),
    ("linear_api_key", "Linear personal API key: lin_api_ + 40", "LINEAR_API_KEY", "Linear",
     lambda: "lin_api_" + chars(ALNUM, 40)),
    ("notion_token", "Notion internal integration secret: ntn_<11 digits><35>", "NOTION_TOKEN",
     "Notion", lambda: "ntn_" + digits(11) + chars(ALNUM, 35)),
    ("notion_token", "Notion legacy integration token: secret_ + 43", "NOTION_API_KEY",
     "Notion", lambda: "secret_" + chars(ALNUM, 43)),
    ("postman_api_key", "Postman key: PMAK-<24 hex>-<34 hex>", "POSTMAN_API_KEY", "Postman",
     lambda: f"PMAK-{chars(HEX, 24)}-{chars(HEX, 34)}"),
    ("sentry_auth_token", "Sentry user auth token: sntryu_ + 64 hex", "SENTRY_AUTH_TOKEN",
     "Sentry", lambda: "sntryu_" + chars(HEX, 64)),
    ("grafana_token", "Grafana service-account token: glsa_<32>_<8 hex>", "GRAFANA_TOKEN",
     "Grafana", lambda: f"glsa_{chars(ALNUM, 32)}_{chars(HEX, 8)}"),
    ("newrelic_key", "New Relic user key: NRAK- + 27", "NEW_RELIC_API_KEY", "New Relic",
     lambda: "NRAK-" + chars(UPPER_ALNUM, 27)),
    ("dynatrace_token", "Dynatrace token: dt0c01.<24>.<64>", "DT_API_TOKEN", "Dynatrace",
     lambda: f"dt0c01.{chars(UPPER_ALNUM, 24)}.{chars(UPPER_ALNUM, 64)}"),
    ("figma_token", "Figma PAT: figd_ + 40", "FIGMA_TOKEN", "Figma",
     lambda: "figd_" + chars(URLSAFE, 40)),
    ("airtable_token", "Airtable PAT: pat<14>.<64 hex>", "AIRTABLE_TOKEN", "Airtable",
     lambda: f"pat{chars(ALNUM, 14)}.{chars(HEX, 64)}"),
    ("contentful_token", "Contentful CMA token: CFPAT- + 43", "CONTENTFUL_MANAGEMENT_TOKEN",
     "Contentful", lambda: "CFPAT-" + chars(URLSAFE, 43)),
    ("dropbox_access_token", "Dropbox short-lived token: sl. + 135", "DROPBOX_TOKEN", "Dropbox",
     lambda: "sl.u." + chars(URLSAFE, 140)),
    ("twitter_bearer_token", "X/Twitter app bearer token: 22 A + 90", "TWITTER_BEARER_TOKEN",
     "X", lambda: "A" * 22 + chars(ALNUM, 60) + "%3D" + chars(ALNUM, 27)),
    ("mapbox_secret_token", "Mapbox secret token: sk.eyJ…", "MAPBOX_SECRET_TOKEN", "Mapbox",
     lambda: "sk." + b64url(json.dumps({"u": "docs-team", "a": chars(LOWER_ALNUM, 25)})
                            .encode()) + "." + chars(URLSAFE, 22)),
    ("age_secret_key", "age secret key: AGE-SECRET-KEY-1 + 58 bech32", "SOPS_AGE_KEY", "age",
     lambda: "AGE-SECRET-KEY-1" + chars("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    ("onepassword_secret_key", "1Password Secret Key: A3-XXXXXX-…", "OP_SECRET_KEY",
     "1Password", lambda: "A3-" + "-".join(chars(UPPER_ALNUM, n) for n in (6, 6, 5, 5, 5, 5))),
    ("facebook_access_token", "Meta Graph API token: EAAG + 150", "FB_ACCESS_TOKEN", "Meta",
     lambda: "EAAG" + chars(ALNUM, 150)),
    ("cloudflare_origin_ca_key", "Cloudflare Origin CA key: v1.0-<24>-<146>",
     "CF_ORIGIN_CA_KEY", "Cloudflare", lambda: f"v1.0-{chars(HEX, 24)}-{chars(HEX, 146)}"),
    ("jfrog_token", "JFrog Artifactory API key: AKCp + 69", "ARTIFACTORY_API_KEY", "JFrog",
     lambda: "AKCp" + chars(ALNUM, 69)),
    ("buildkite_token", "Buildkite API token: bkua_ + 40 hex", "BUILDKITE_API_TOKEN",
     "Buildkite", lambda: "bkua_" + chars(HEX, 40)),
]

URL_FORMATS: list[tuple[str, str, Callable[[], str]]] = [
    ("slack_webhook_url", "Slack incoming webhook URL",
     lambda: f"https://hooks.slack.com/services/T{chars(UPPER_ALNUM, 10)}/B{chars(UPPER_ALNUM, 10)}"
             f"/{chars(ALNUM, 24)}"),
    ("discord_webhook_url", "Discord webhook URL",
     lambda: f"https://discord.com/api/webhooks/{digits(19)}/{chars(URLSAFE, 68)}"),
    ("teams_webhook_url", "Microsoft Teams incoming webhook URL",
     lambda: f"https://acme.webhook.office.com/webhookb2/{uuid4()}@{uuid4()}/IncomingWebhook/"
             f"{chars(HEX, 32)}/{uuid4()}"),
]


def context_cases() -> list[dict[str, object]]:
    """Secrets recognised by their surroundings: names, headers, URLs, structure."""
    out: list[dict[str, object]] = []
    add = out.append
    aws_secret = lambda: chars(B64, 40)  # noqa: E731
    add(case(f"My ~/.aws/credentials has\n[default]\naws_access_key_id = AKIA{chars(BASE32, 16)}"
             f"\naws_secret_access_key = {aws_secret()}\nand the S3 deploy still fails",
             "aws_access_key_id", "AWS shared credentials file"))
    add(case(f"aws_secret_access_key={aws_secret()} is set, why does mkdocs gh-deploy ask again?",
             "aws_secret_access_key", "AWS secret access key by name (env)"))
    add(case(f'"SecretAccessKey": "{aws_secret()}" came back from STS, where do I put it?',
             "aws_secret_access_key", "AWS STS JSON response field"))
    add(case(f"Mi AWS secret access key es {aws_secret()} y el deploy falla",
             "aws_secret_access_key", "AWS secret access key in Spanish prose"))
    sid = "AC" + chars(HEX, 32)
    add(case(f"Twilio client = Client('{sid}', '{chars(HEX, 32)}') raises 20003, why?",
             "twilio_auth_token", "Twilio account SID + auth token pair"))
    add(case(f"TWILIO_ACCOUNT_SID={sid}\nTWILIO_AUTH_TOKEN={chars(HEX, 32)}\nSMS alerts don't send",
             "twilio_auth_token", "Twilio auth token by name"))
    add(case(f"curl -u {sid}:{chars(HEX, 32)} https://api.twilio.com/2010-04-01/Accounts.json "
             "works but the plugin doesn't", "twilio_auth_token", "Twilio SID:token basic auth"))
    add(case(f"HEROKU_API_KEY={uuid4()} and the deploy hook fails",
             "heroku_api_key", "Heroku legacy API key (UUID) by name"))
    add(case(f"VAULT_TOKEN=s.{chars(ALNUM, 24)} vault kv get fails in CI",
             "vault_token", "HashiCorp Vault legacy service token by name"))
    add(case(f"POSTMARK_SERVER_TOKEN={uuid4()} emails from the feedback form bounce",
             "postmark_token", "Postmark server token (UUID) by name"))
    for _ in range(2):
        key_id = chars(HEX, 40)
        add(case('My service account file:\n{\n  "type": "service_account",\n  "project_id": '
                 f'"docs-prod-4821",\n  "private_key_id": "{key_id}",\n  "private_key": '
                 f'"-----BEGIN PRIVATE KEY-----\\n{chars(B64, 120)}\\n-----END PRIVATE KEY-----'
                 '\\n",\n  "client_email": "docs@docs-prod-4821.iam.gserviceaccount.com"\n}\n'
                 "Why can't the plugin read it?", "gcp_service_account_key",
                 "Google Cloud service-account JSON key file"))
    account_key = chars(B64, 86) + "=="
    add(case("AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=docsprod;"
             f"AccountKey={account_key};EndpointSuffix=core.windows.net\nupload fails",
             "azure_storage_account_key", "Azure Storage connection string"))
    add(case("Endpoint=sb://docs-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageShared"
             f"AccessKey;SharedAccessKey={chars(B64, 43)}= is what I use, why 401?",
             "azure_shared_access_key", "Azure Service Bus connection string"))
    add(case("https://docsprod.blob.core.windows.net/site/index.html?sv=2022-11-02&ss=b&srt=o&sp=r"
             f"&se=2026-01-01T00:00:00Z&st=2025-01-01T00:00:00Z&spr=https&sig={chars(B64, 43)}%3D"
             " returns 403", "azure_sas_token", "Azure Storage SAS URL"))
    return out


def structure_cases() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    add = out.append
    for alg in ("HS256", "RS256", "HS256"):
        token = jwt({"sub": uuid4(), "email": f"writer{RNG.randint(1, 99)}@acme-docs.io",
                     "iat": 1735689600 + RNG.randint(0, 10**7), "exp": 1767225600}, alg)
        add(case(f"The API returns 401 with Authorization: Bearer {token} — is the token expired?",
                 "jwt", f"JWT ({alg}) in a bearer header"))
    add(case("My session cookie is " + jwt({"user_id": RNG.randint(1, 10**6), "role": "admin",
                                             "exp": 1767225600}) + ", can I decode it?",
             "jwt", "JWT in prose"))
    add(case("supabase service_role key " + jwt({"iss": "supabase", "ref": chars(string.
             ascii_lowercase, 20), "role": "service_role", "iat": 1700000000, "exp": 2015000000})
             + " works locally", "jwt", "Supabase service_role JWT"))
    add(case("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + b64_lines(1560)
             + "\n-----END RSA PRIVATE KEY-----\nthis is my deploy key, why does ssh reject it?",
             "pem_private_key", "PEM RSA private key (PKCS#1)"))
    add(case("Is this key format right?\n-----BEGIN PRIVATE KEY-----\n"
             "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + b64_lines(300) + "\n...",
             "pem_private_key", "PEM PKCS#8 private key, partial paste"))
    add(case("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAA"
             "ABAAAAMwAAAAtzc2gtZW\n" + b64_lines(320) + "\n-----END OPENSSH PRIVATE KEY-----\n"
             "gh-deploy says permission denied (publickey)", "pem_private_key",
             "OpenSSH private key"))
    add(case("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI" + b64_lines(150)
             + "\n-----END EC PRIVATE KEY-----", "pem_private_key", "PEM EC private key (SEC1)"))
    add(case("Signing fails with\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBG" + b64_lines(400)
             + "\n-----END PGP PRIVATE KEY BLOCK-----", "pem_private_key",
             "OpenPGP private key block"))
    add(case("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI"
             + b64_lines(200) + "\n-----END ENCRYPTED PRIVATE KEY-----\nwhat passphrase?",
             "pem_private_key", "PKCS#8 encrypted private key"))
    add(case("Only the middle of my key: MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ"
             + chars(B64, 120) + " — does the plugin need it?", "pem_private_key",
             "headerless PKCS#8 private key body"))
    return out


def url_password_cases() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    add = out.append
    add(case(f"DATABASE_URL=postgres://docs_app:{password()}@db.internal:5432/docs fails with SSL"
             " error", "connection_string_password", "PostgreSQL URI with password"))
    add(case(f"mongodb+srv://admin:{chars(ALNUM, 16)}@cluster0.ab1cd.mongodb.net/docs?retryWrites"
             "=true is my URI, the search index never builds", "connection_string_password",
             "MongoDB Atlas SRV URI"))
    add(case(f"REDIS_URL=redis://:{chars(ALNUM, 24)}@cache.internal:6379/0 times out",
             "connection_string_password", "Redis URI with password only"))
    add(case(f"amqp://svc-docs:{password()}@mq.internal:5672/ refuses the connection",
             "connection_string_password", "AMQP URI"))
    add(case(f"mysql://root:{password()}@127.0.0.1:3306/wiki is in my config, migration fails",
             "connection_string_password", "MySQL URI"))
    add(case(f"git clone https://deploy:{password()}@git.acme-docs.io/docs.git asks again",
             "connection_string_password", "HTTPS URL with basic-auth password"))
    add(case(f"jdbc:postgresql://db.internal:5432/docs?user=docs&password={password()} fails",
             "password_assignment", "JDBC URL password parameter"))
    add(case(f"SENTRY_DSN=https://{chars(HEX, 32)}:{chars(HEX, 32)}@o{digits(6)}.ingest.sentry.io/"
             f"{digits(7)} — is the secret part still needed?", "sentry_dsn",
             "legacy Sentry DSN with public:secret"))
    return out


def assignment_cases() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    add = out.append
    forms = [
        ("DB_PASSWORD={pw}\nthe docs container can't reach postgres", "env assignment"),
        ('export PGPASSWORD="{pw}"\npsql works but the indexer does not', "shell export"),
        ("database:\n  host: db.internal\n  password: {pw}\nIs the YAML right?", "YAML"),
        ('{{"username": "docs", "password": "{pw}"}} is rejected by the login endpoint',
         "JSON body"),
        ('[database]\npassword = "{pw}"\nport = 5432\nWhy is the TOML ignored?', "TOML"),
        ("mkdocs-deploy --user docs --password {pw} fails with 403", "CLI flag"),
        ("spring.datasource.password={pw} and the app cannot connect", "Java properties"),
        ("<connectionStrings><add name=\"db\" connectionString=\"Server=db;User Id=docs;"
         "Password={pw};\"/></connectionStrings>", "ADO.NET connection string"),
        ('env:\n  - name: SMTP_PASSWORD\n    value: "{pw}"\nthe pod keeps restarting',
         "Kubernetes env entry"),
        ("<password>{pw}</password> in settings.xml, Maven deploy fails", "XML element"),
        ("psycopg2.connect(host='db', user='docs', password='{pw}') hangs", "Python kwarg"),
        ("my password is {pw} and the admin page still says access denied", "English prose"),
        ("Mi contraseña es {pw} y no puedo entrar al panel", "Spanish prose"),
        ("Mon mot de passe : {pw} — pourquoi la connexion échoue ?", "French prose"),
        ("Mein Passwort ist {pw}, trotzdem kommt 'Zugriff verweigert'", "German prose"),
        ("我的密码是{pw}，为什么登录失败？", "Chinese prose"),
        ("パスワードは{pw}です。ログインできません", "Japanese prose"),
        ("Мой пароль: {pw}, но вход не работает", "Russian prose"),
        ("Minha senha é {pw} e o login falha", "Portuguese prose"),
        ("비밀번호는 {pw} 인데 로그인이 안 됩니다", "Korean prose"),
        ("SMTP_PASS={pw} and mails from the feedback widget bounce", "env PASS"),
        ("ENV POSTGRES_PASSWORD {pw}\nin my Dockerfile, is that why it fails?", "Dockerfile ENV"),
    ]
    for template, origin in forms:
        kind = "connection_string_password" if "ADO" in origin else "password_assignment"
        add(case(template.format(pw=password()), kind, f"password assignment: {origin}"))
    encoded = base64.b64encode(password().encode()).decode()
    add(case(f"apiVersion: v1\nkind: Secret\ndata:\n  password: {encoded}\nwhy can't the pod "
             "read it?", "password_assignment", "Kubernetes Secret data (base64 password)"))
    secrets = [
        ("api_key = \"{tok}\"  # Cohere, the plugin says unauthorized", "Python, Cohere-style key"),
        ("MISTRAL_API_KEY={tok}\nmkdocs build can't reach the model", "env, Mistral-style key"),
        ("curl -H 'X-API-Key: {tok}' https://search.acme-docs.io/v1/query gives 401",
         "X-API-Key header"),
        ("DD_API_KEY={hex} the datadog agent rejects it", "Datadog-style 32-hex key by name"),
        ("WANDB_API_KEY={hex40} wandb login fails", "Weights & Biases-style 40-hex key"),
        ("client_secret: {tok}\nclient_id: docs-portal\nOAuth login fails", "OAuth client secret"),
        ("My API key is {tok}, why does search return 403?", "prose, API key"),
        ("La clave de API es {tok} pero el plugin no responde", "Spanish prose, API key"),
        ("SECRET_KEY = '{tok}{tok}' in settings.py, is that why sessions break?",
         "Django SECRET_KEY"),
        ("Ocp-Apim-Subscription-Key: {hex} returns 401 from the gateway",
         "Azure API Management subscription key header"),
        ("JWT_SECRET={tok}\nlogin tokens don't verify", "JWT signing secret"),
        ("ALGOLIA_ADMIN_KEY={hex} and DocSearch crawls fail", "Algolia admin key by name"),
        ("?access_token={tok}&page=2 in the request URL, is that safe?", "token query parameter"),
        ("my cloudflare api token is {tok40} and wrangler says 10000", "Cloudflare-style token"),
    ]
    for template, origin in secrets:
        text = template.format(tok=chars(ALNUM, 32), hex=chars(HEX, 32), hex40=chars(HEX, 40),
                               tok40=chars(URLSAFE, 40))
        add(case(text, "high_entropy_secret", f"secret by name: {origin}"))
    creds = base64.b64encode(f"docs-bot:{password()}".encode()).decode()
    add(case(f"curl -H 'Authorization: Basic {creds}' https://wiki.acme-docs.io/api returns 403",
             "authorization_header", "HTTP Basic header (RFC 7617 shape)"))
    creds = base64.b64encode(f"admin@acme-docs.io:{chars(ALNUM, 24)}".encode()).decode()
    add(case(f'headers = {{"Authorization": "Basic {creds}"}} works in Postman only',
             "authorization_header", "HTTP Basic header with API token as password"))
    add(case(f"Authorization: Bearer {chars(ALNUM, 40)}\nthe gateway says invalid_token",
             "authorization_header", "opaque bearer token"))
    add(case(f"-H \"Authorization: Token {chars(HEX, 40)}\" gives 401 from the DRF backend",
             "authorization_header", "DRF-style token header"))
    add(case(f"Authorization: Bot {chars(URLSAFE, 30)}{chars(string.digits, 5)}a is rejected",
             "authorization_header", "bot scheme header"))
    cli = [
        ("mysql -u root -p{pw} docs < dump.sql fails with 1045", "mysql -p with attached password"),
        ("sshpass -p '{pw}' ssh deploy@docs.acme-docs.io hangs", "sshpass -p"),
        ("curl -u docs:{pw} https://wiki.acme-docs.io/rest/api/content returns 401",
         "curl -u user:password"),
        ("docker login -u docs -p {pw} registry.acme-docs.io warns about --password-stdin",
         "docker login -p"),
        ("kubectl create secret generic db --from-literal=password={pw} worked, now what?",
         "kubectl --from-literal password"),
        ("The password for the staging admin panel is {pw}, why can't I log in?",
         "prose with words between name and value"),
    ]
    for template, origin in cli:
        add(case(template.format(pw=password()), "password_assignment", origin))
    app_key = base64.b64encode(bytes(RNG.getrandbits(8) for _ in range(32))).decode()
    add(case(f"APP_KEY=base64:{app_key} in .env, Laravel still says no encryption key",
             "laravel_app_key", "Laravel APP_KEY (base64: prefix)"))
    add(case(f"SECRET_KEY=django-insecure-{chars(ALNUM + '!@#$%^&*(-_=+)', 50)} in settings.py",
             "high_entropy_secret", "Django generated SECRET_KEY"))
    add(case(f"My API token for Cloudflare: {chars(URLSAFE, 40)}", "high_entropy_secret",
             "prose with words between name and value"))
    add(case(f"twitch_oauth: oauth:{chars(LOWER_ALNUM, 30)} for the chat bot",
             "high_entropy_secret", "Twitch IRC oauth token"))
    for prefix in ("acme_live_", "dpk-prod-", "zx_sk_", "docsbot_"):
        add(case(f"our internal search service key {prefix}{chars(ALNUM, 40)} stopped working",
                 "generic_api_token", f"unknown vendor prefix {prefix!r} + random body"))
    return out


# --- Negatives ------------------------------------------------------------------------------


def negative_cases() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []

    def add(text: str, origin: str) -> None:
        out.append(case(text, None, origin))

    mentions = [
        "How do I rotate my API key?",
        "Where do I put the token?",
        "What does password= do in mkdocs.yml?",
        "Can I use an environment variable for the OpenAI API key instead of mkdocs.yml?",
        "Is it safe to commit my .env file if it only has the token name?",
        "What's the difference between a publishable key and a secret key in Stripe?",
        "Why does the plugin say 'API key missing' when I run mkdocs serve?",
        "How do I set a password on the preview site?",
        "Does DocPilot store my access token anywhere?",
        "Which scopes does the GitHub token need for gh-deploy?",
        "My token expired after 90 days, how do I make a longer-lived one?",
        "How many tokens does a page of documentation use?",
        "Set max_tokens: 1024 in the plugin config, is that per answer?",
        "The tokenizer splits 'mkdocs.yml' into three tokens, is that expected?",
        "What is the primary key of the search index table?",
        "KeyError: 'nav' when building, what does it mean?",
        "How do I add a keyboard shortcut to open the search?",
        "Is there a password-protected pages plugin for MkDocs?",
        "Can the secret scanner run in CI before mkdocs build?",
        "How do I revoke a leaked Slack token?",
        "What does `secret: true` mean on a page's front matter?",
        "Where is the API key setting in the admin UI?",
        "The docs say to use a 'personal access token' — is that the same as an OAuth token?",
        "How long should a password be for the admin area?",
        "Why does the login form say 'invalid password' with the right password?",
        "Does the auth plugin support SSO with Azure AD?",
        "How do I pass the token to the Docker container without it ending up in the image?",
        "What is a bearer token?",
        "The API key field is greyed out in settings, why?",
        "I rotated my AWS access keys, do I need to rebuild the site?",
        "¿Cómo roto mi clave de API?",
        "Wie ändere ich mein Passwort für die Vorschau?",
        "如何更换我的 API 密钥？",
        "APIキーはどこに設定しますか？",
        "Как сбросить токен доступа?",
        "Onde coloco o token de acesso?",
        "Comment changer le mot de passe administrateur ?",
        "API 키를 어디에 넣어야 하나요?",
        "Dove si imposta la chiave API?",
        "Is the monkey-patching of the token refresh function supported?",
    ]
    for text in mentions:
        add(text, "question that only mentions a credential word")

    placeholders = [
        "I set OPENAI_API_KEY=sk-... and still get 401",
        "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in .env, right?",
        "api_key: YOUR_API_KEY\nIs that where it goes?",
        "curl -H 'Authorization: Bearer <token>' https://api.acme-docs.io/v1/ask",
        "Authorization: Bearer <your-key>",
        "password: ****",
        "password: ********  # hidden, what else should I check?",
        "export GITHUB_TOKEN=$GITHUB_TOKEN before mkdocs gh-deploy?",
        "token: ${GITHUB_TOKEN}",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "with:\n  api-key: ${{ secrets.DOCPILOT_API_KEY }}",
        "password: {{ db_password }} in the Ansible template",
        "password = %(db_password)s in the ini file",
        "apiKey: process.env.OPENAI_API_KEY",
        'key = os.environ["OPENAI_API_KEY"]',
        "password: changeme",
        "DB_PASSWORD=password123 in docker-compose, is that the problem?",
        "POSTGRES_PASSWORD=postgres",
        "MYSQL_ROOT_PASSWORD: admin123",
        "password: P@ssw0rd!",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "GITHUB_TOKEN=ghp_YOUR_TOKEN_HERE",
        "sk-proj-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "Set ANTHROPIC_API_KEY=sk-ant-api03-... then restart",
        "SLACK_BOT_TOKEN=xoxb-your-bot-token",
        "xoxb-not-a-real-token-this-will-not-work",
        "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
        "AIzaSy... is my Google key placeholder",
        "AKIAXXXXXXXXXXXXXXXX",
        "hf_************************************",
        "glpat-<your token>",
        "token: abc123",
        "password: secret",
        "api_key: <insert key here>",
        "Bearer YOUR_ACCESS_TOKEN",
        "postgres://user:password@localhost:5432/docs",
        "postgres://postgres:postgres@localhost:5432/postgres",
        "DATABASE_URL=postgresql://${DB_USER}:${DB_PASSWORD}@${DB_HOST}/docs",
        "mongodb+srv://admin:<password>@cluster0.mongodb.net/test",
        "amqp://guest:guest@localhost:5672/",
        "redis://:foobared@localhost:6379",
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6638...",
        "password: ENC[AES256_GCM,data:Tr8=,iv:abc,tag:def,type:str]",
        "password: \"{{ .Values.db.password }}\"",
        "valueFrom:\n  secretKeyRef:\n    name: db-secret\n    key: password",
        "PGPASSWORD=$(cat /run/secrets/db_password) psql -h db",
        "password_file: /run/secrets/db_password",
        "token = getpass.getpass('Token: ')",
        "password: str = Field(min_length=12)",
        "password: z.string().min(8)",
        "password: { type: String, required: true }",
        "interface User { password: string; token?: string }",
        "password_min_length: 12\npassword_max_age: 90",
        "secretName: docs-tls\nsecretKey: tls.crt",
        "Mi clave es TU_CLAVE_API, ¿dónde va?",
        "Mon token est <VOTRE_TOKEN>",
        "TWILIO_ACCOUNT_SID=ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "api_key: sk-proj-abc123...truncated",
        "STRIPE_SECRET_KEY=sk_test_YOUR_SECRET_KEY",
        "cookie: session=REDACTED",
    ]
    for text in placeholders:
        add(text, "placeholder, reference or default instead of a secret")

    vendor_examples = [
        ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG"
         "/bPxRfiCYEXAMPLEKEY\nfrom the AWS docs, does the plugin accept these?",
         "AWS documentation example key pair"),
        ("AKIAI44QH8DHBEXAMPLE / je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY", "AWS docs example"),
        ("stripe.api_key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc' from the Stripe quickstart",
         "Stripe API reference test key"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwi"
         "bmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQs"
         "sw5c is from jwt.io, why doesn't it work?", "jwt.io sample token"),
        ("Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b as in the DRF docs",
         "Django REST framework TokenAuthentication example"),
        ("AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBH"
         "BeksoGMGw== is the Azurite key, right?", "Azurite development storage key"),
        ("Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ== from RFC 7617", "RFC 7617 example"),
        ("Authorization: Bearer mF_9.B5f-4.1JqM", "RFC 6750 example"),
        ("SENTRY_DSN=https://examplePublicKey@o0.ingest.sentry.io/0", "Sentry docs DSN"),
        ("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
         "Slack docs webhook example"),
        ("<script src=\"https://maps.googleapis.com/maps/api/js?key=AIzaSyDaGmWKa4JsXZ-HjGw7ISLn"
         "_3namBGewQe&callback=initMap\"></script> from the Maps docs",
         "Google Maps Platform documentation key"),
        ("The Stripe docs show sk_test_BQokikJOvBiI2HlWgH4olfQ2, is that mine?",
         "Stripe documentation test key"),
    ]
    for text, origin in vendor_examples:
        add(text, origin)

    for _ in range(4):
        add(f"The build broke after commit {chars(HEX, 40)}, what changed?", "git SHA-1 (40 hex)")
        add(f"git revert {chars(HEX, RNG.randint(7, 12))} fixed the nav, why?", "short git SHA")
        add(f"Request id {uuid4()} failed with 500", "UUID v4")
        add(f"sha256 of the bundle is {chars(HEX, 64)}, does it match the release?",
            "SHA-256 digest")
        add(f"md5sum gives {chars(HEX, 32)} for search_index.json", "MD5 digest")
    add(f"image: ghcr.io/acme/docs@sha256:{chars(HEX, 64)}", "Docker image digest")
    add(f"docker pull docpilot@sha256:{chars(HEX, 64)} fails", "Docker image digest")
    add(f'<script src="https://cdn.jsdelivr.net/npm/x.js" integrity="sha384-{chars(B64, 64)}" '
        'crossorigin="anonymous"></script> gives an SRI error', "SRI integrity hash")
    add(f'"integrity": "sha512-{chars(B64, 86)}==" in package-lock.json changed',
        "npm lockfile integrity")
    add("The logo is ![logo](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
        f"AAAADUlEQVR42m{chars(B64, 40)}AAAAAElFTkSuQmCC) but it doesn't render",
        "base64 image data URI")
    add(f"background: url(data:image/svg+xml;base64,{chars(B64, 120)}) is ignored",
        "base64 SVG data URI")
    for version in ("mkdocs 1.6.1", "mkdocs-material==9.5.49", "python 3.12.7", "v2.14.0-rc.1",
                    "node v20.11.1"):
        add(f"After upgrading to {version} the search plugin crashes", "version string")
    urls = [
        "https://squidfunk.github.io/mkdocs-material/setup/setting-up-site-search/",
        "https://github.com/acme/docs/blob/main/mkdocs.yml#L42",
        "https://docs.google.com/spreadsheets/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/edit",
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ",
        "http://localhost:8000/docs/?q=install#search",
        "https://user@git.acme-docs.io/docs.git",
        "ssh://git@github.com/acme/docs.git",
        "https://api.acme-docs.io/v1/search?q=token+rotation&page=2",
    ]
    for url in urls:
        add(f"Why does {url} return 404 after deploy?", "URL without a password")
    add("The header colour #1e88e5 and accent #ff4081 don't apply", "CSS colours")
    add("primary: indigo\naccent: '#ff4081'\nwhy is the accent ignored?", "CSS colour in YAML")
    public = [
        (f"I added ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{chars(B64, 360)} docs@ci to GitHub, "
         "still denied", "SSH public key (RSA)"),
        (f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{chars(B64, 43)} deploy@docs is my public key",
         "SSH public key (Ed25519)"),
        ("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + b64_lines(330)
         + "\n-----END PUBLIC KEY-----\nis this the JWKS key?", "PEM public key"),
        ("-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE" + b64_lines(300)
         + "\n-----END CERTIFICATE-----\nthe TLS cert fails", "PEM certificate"),
        ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBG" + b64_lines(300)
         + "\n-----END PGP PUBLIC KEY BLOCK-----", "PGP public key block"),
        (f"STRIPE_PUBLISHABLE_KEY=pk_live_51{chars(ALNUM, 97)}", "Stripe publishable live key"),
        (f"Stripe.js init with pk_test_51{chars(ALNUM, 97)} shows a blank form",
         "Stripe publishable test key"),
        ("mapboxgl.accessToken = 'pk." + b64url(json.dumps({"u": "docs", "a": chars(
            LOWER_ALNUM, 25)}).encode()) + "." + chars(URLSAFE, 22) + "'", "Mapbox public token"),
        (f"age recipient age1{chars('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)} for sops",
         "age public key"),
        ("The JWKS has \"n\": \"" + chars(URLSAFE, 342) + "\", \"e\": \"AQAB\"",
         "RSA public modulus in JWKS"),
        ("SUPABASE_ANON_KEY=" + jwt({"iss": "supabase", "ref": chars(string.ascii_lowercase, 20),
                                     "role": "anon", "iat": 1700000000, "exp": 2015000000}),
         "Supabase anon key (public by design)"),
        (f"client_id: {digits(12)}-{chars(LOWER_ALNUM, 32)}.apps.googleusercontent.com",
         "Google OAuth client id"),
        (f"TWILIO_ACCOUNT_SID=AC{chars(HEX, 32)} is that secret?", "Twilio account SID alone"),
        (f"GitHub App client ID Iv1.{chars(HEX, 16)} in the config", "GitHub App client id"),
    ]
    for text, origin in public:
        add(text, origin)
    ids = [
        (f"payment_intent pi_3{chars(ALNUM, 23)} stays in requires_action", "Stripe object id"),
        (f"charge ch_3{chars(ALNUM, 23)} was refunded twice", "Stripe object id"),
        (f"customer cus_{chars(ALNUM, 14)} can't see invoices", "Stripe object id"),
        (f"webhook event evt_1{chars(ALNUM, 23)} was delivered late", "Stripe object id"),
        (f"OpenAI returned file-{chars(ALNUM, 22)} but the assistant can't find it",
         "OpenAI file id"),
        (f"response id chatcmpl-{chars(ALNUM, 29)} has no content", "OpenAI completion id"),
        (f"Anthropic message msg_01{chars(ALNUM, 22)} was cut off", "Anthropic message id"),
        (f"tool_use id toolu_01{chars(ALNUM, 22)} mismatch error", "Anthropic tool-use id"),
        (f"arn:aws:iam::{digits(12)}:role/docs-deploy can't assume the role", "AWS role ARN"),
        (f"AWS account {digits(12)} in us-east-1, CloudFront returns 403", "AWS account id"),
        (f'"KeyId": "{uuid4()}" from kms describe-key', "AWS KMS key id (UUID)"),
        (f"gpg key ID {chars(HEX.upper(), 16)} expired, can I still verify releases?",
         "GPG key id"),
        (f"Host key fingerprint is SHA256:{chars(B64, 43)}.", "SSH host key fingerprint"),
        (f"IPFS CID Qm{chars('123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz', 44)}"
         " won't pin", "IPFS content id"),
        (f"Google Analytics G-{chars(UPPER_ALNUM, 10)} is not tracking the docs",
         "Google Analytics measurement id"),
        (f"The Algolia app id {chars(UPPER_ALNUM, 10)} with index docs_v2 returns nothing",
         "Algolia application id"),
    ]
    for text, origin in ids:
        add(text, origin)
    code = [
        ("def rotate_api_key(service_account_token_provider):\n    ...", "long identifiers"),
        ("The class AbstractCredentialProviderFactoryBean throws NPE", "long identifier"),
        ("MKDOCS_DOCPILOT_API_KEY_ENV_VAR_NAME is documented as what?", "env var name"),
        ("export DOCPILOT_API_KEY_FILE=/run/secrets/docpilot_api_key", "secret file path"),
        ("What is aGVsbG8gd29ybGQ= in the config? Someone said it's base64", "base64 of text"),
        ("The cache key is docs-v2-3f9a1c2b and it never invalidates", "cache key"),
        ("primary_key: id\npartition_key: tenant", "database keys"),
        ("use_password_auth: true\npassword_hash_algorithm: argon2id", "password settings"),
        ("token_url: https://auth.acme-docs.io/oauth/token\ntoken_type: bearer", "OAuth config"),
        ("The GitHub Action uses actions/checkout@v4 with token: ${{ github.token }}",
         "Actions token expression"),
        ('"scripts": {"build": "mkdocs build --strict", "deploy": "mkdocs gh-deploy"}',
         "package.json scripts"),
        ("from docpilot import Settings\nsettings = Settings(api_key=os.getenv('API_KEY'))",
         "Python reading env"),
        ("password_reset_url: /account/reset\npassword_policy: strong", "password settings"),
        ("secret_name: projects/docs/secrets/openai-key/versions/latest", "Secret Manager path"),
        ("auth:\n  provider: github\n  allowed_org: acme", "auth config"),
        ("keys: [up, down, enter]", "keyboard keys"),
        ("The credentials helper is git-credential-manager, does gh-deploy use it?",
         "credential helper"),
        ("max_tokens: 2048\ntemperature: 0.2\ntop_p: 0.9", "model parameters"),
        ("csrf_token mismatch on the feedback form", "CSRF token mention"),
        ("nextPageToken: CAoQAA from the API, how do I paginate?", "page token"),
    ]
    for text, origin in code:
        add(text, origin)
    more = [
        ("I get 'Bad credentials' from GitHub even though the token has repo scope.",
         "credential word"),
        ("Our secret scanner flagged AKIAIOSFODNN7EXAMPLE in the docs, is it real?",
         "AWS docs example key"),
        ("What's the format of an OpenAI key? Does it always start with sk-?", "format question"),
        ("The Stripe docs say keys look like sk_live_... — can I put one in extra.js?",
         "truncated key"),
        ("JWTs have three parts, header.payload.signature — how do I decode one?", "JWT mention"),
        ("The JOSE header is eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ, what algorithm is that?",
         "JWT header alone"),
        ("Authorization: Bearer " + sample_signed_jwt({"sub": "1234567890", "name": "Jane Doe",
                                                       "iat": 1516239022}) + " from a tutorial",
         "tutorial JWT signed with the sample secret"),
        ("echo 'dG9rZW4gcm90YXRpb24gZ3VpZGU=' | base64 -d prints what?", "base64 of text"),
        (f"Content-Security-Policy: script-src 'nonce-{chars(B64, 22)}' blocks the widget",
         "CSP nonce"),
        ("code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM in the PKCE flow",
         "PKCE challenge (RFC 7636 example)"),
        (f"X-Hub-Signature-256: sha256={chars(HEX, 64)} does not match my computation",
         "webhook signature header"),
        (f"HMAC of the body with our signing key gives {chars(HEX, 64)}, is that right?",
         "HMAC digest"),
        (f'ETag: "{chars(HEX, 40)}" never changes after deploy', "ETag"),
        (f"sha1 of the key file is {chars(HEX, 40)}", "digest of a key file"),
        ("Ich habe meinen API-Schlüssel rotiert, muss ich neu bauen?", "German mention"),
        ("Mi token expiró, ¿cómo genero otro?", "Spanish mention"),
        ("Где хранить секретный ключ для сборки?", "Russian mention"),
        ("令牌过期了怎么办？", "Chinese mention"),
        ("パスワードを忘れました。リセット方法は？", "Japanese mention"),
        ("The password must contain at least 12 characters, one digit and one symbol like !@#.",
         "password policy prose"),
        ('password: ""\napi_key: null\ntoken: ~\nsecret: false', "empty values"),
        ("PASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']",
         "Django setting"),
        ("secret_key_base: <%= ENV['SECRET_KEY_BASE'] %>", "ERB env reference"),
        ("password: Pa$$w0rd", "leetspeak default"),
        ("password=hunter2", "famous joke password"),
        ("The default credentials are admin:admin, should I change them?", "default creds"),
        ("tokens: 4096\ntoken: 5", "numeric token settings"),
        ("Authorization: Bearer {{token}} in Postman", "Postman variable"),
        ("Authorization: Bearer ${ACCESS_TOKEN}", "env reference in header"),
        (f"https://cdn.acme-docs.io/assets/{chars(HEX, 32)}.css is cached forever",
         "content-hashed asset URL"),
        (f"main.{chars(HEX, 8)}.js and chunk-vendors.{chars(HEX, 8)}.js are huge",
         "webpack chunk hashes"),
        (f"docker logs {chars(HEX, 64)} shows nothing", "Docker container id"),
        (f"pod docs-{chars(LOWER_ALNUM, 9)}-{chars(LOWER_ALNUM, 5)} is in CrashLoopBackOff",
         "Kubernetes pod name"),
        (f"<UserSecretsId>{uuid4()}</UserSecretsId> in the csproj", ".NET user-secrets id"),
        ("SSH_AUTH_SOCK=/tmp/ssh-XXXXabcd/agent.1234 is set", "ssh agent socket"),
        ("password = random_password.db.result", "Terraform reference"),
        ("password: config.requireSecret('dbPassword')", "Pulumi secret reference"),
        ("node id MDQ6VXNlcjU4MzIzMQ== returns null from the GraphQL API", "GitHub node id"),
        (f"send to 0x{chars(HEX, 40)} on mainnet", "Ethereum address"),
        ("The private key file permission is 0600, is that enough?", "private key mention"),
        ("-----BEGIN RSA PRIVATE KEY----- appears in my logs, what does it mean?",
         "PEM header alone"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\n<redacted>\n-----END OPENSSH PRIVATE KEY-----",
         "redacted PEM"),
        (f"Slack channel C{chars(UPPER_ALNUM, 10)} and user U{chars(UPPER_ALNUM, 10)}",
         "Slack ids"),
        (f"Telegram chat id -100{digits(10)} gets no messages", "Telegram chat id"),
        (f"The Sentry DSN https://{chars(HEX, 32)}@o{digits(6)}.ingest.sentry.io/{digits(7)} "
         "is public, right?", "Sentry DSN without secret"),
        ("Stripe-Version: 2023-10-16 header, which one should I use?", "API version date"),
        ("stripe listen prints whsec_... should I copy it?", "truncated webhook secret"),
        ("AWS_REGION=us-east-1\nAWS_PROFILE=docs-deploy", "AWS non-secret env"),
        ("GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/docs-sa.json", "credential file path"),
        ('firebaseConfig = { apiKey: "<API_KEY>", projectId: "docs-prod" }',
         "Firebase placeholder"),
        (f"request_id={chars(HEX, 32)} in the 502 page", "request id hex"),
        ("OAuth state=af0ifjsldkj&code=SplxlOBeZQQYbYS6WxSbIA in the redirect",
         "OAuth authorization response example (RFC 6749)"),
        ("password: Passw0rd123! from the tutorial", "tutorial default password"),
        ("Use the token endpoint https://auth.acme-docs.io/oauth2/token with grant_type="
         "client_credentials", "OAuth endpoint"),
        ("The API key header name is X-API-Key, right?", "header name only"),
        ("api_key_header: X-API-Key\napi_key_env: DOCPILOT_KEY", "key settings"),
        (f"cache key: docs-{chars(HEX, 40)}", "CI cache key"),
        (f"primary key {uuid4()} duplicated in the index", "primary key UUID"),
        (f"The public key is {chars(B64, 43)}= for WireGuard peer B", "WireGuard public key"),
        ("docsearch({ appId: 'R2IYF7ETH7', apiKey: '599cec31baffa4868cae4e79f180729b', "
         "indexName: 'docsearch' })", "Algolia DocSearch documented search-only key"),
        ("RECAPTCHA_SECRET_KEY=6LeIxAcTAAAAAGG-vFI1TnRWxMZNFuojJ4WifJWe for the test form",
         "Google reCAPTCHA documented test secret"),
        ("Authorization: Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJkb2NzIn0.", "unsigned JWT"),
        (f"Cookie: theme=dark; csrftoken={chars(ALNUM, 32)}", "CSRF cookie"),
        ("The password for the admin panel is in 1Password, where do I find it?",
         "prose password mention"),
        ("My API token for Cloudflare: where do I create it?", "prose token mention"),
        ("mysql -u root -p docs prompts for a password", "mysql -p prompt"),
        ("curl -u $USER:$TOKEN https://api.acme-docs.io", "curl -u with variables"),
        ("docker login -u docs --password-stdin < token.txt", "docker login stdin"),
        ("password: S3cr3tP@ss from the tutorial", "leetspeak of a placeholder"),
        ("secret: !Ref DbSecret\npassword: !Sub '{{resolve:secretsmanager:Db:SecretString:pw}}'",
         "CloudFormation references"),
        ("kubectl create secret generic db --from-literal=password=$DB_PASSWORD",
         "kubectl with env reference"),
        ("security:\n  - bearerAuth: []\ncomponents:\n  securitySchemes:\n    ApiKeyAuth:\n"
         "      type: apiKey\n      in: header\n      name: X-API-KEY", "OpenAPI security schemes"),
        ("markdown_extensions:\n  - pymdownx.keys\nPress ++ctrl+alt+del++", "keys extension"),
        ('{"error": "invalid_token", "error_description": "The access token expired"}',
         "OAuth error body"),
        ("Use `openssl rand -hex 32` to generate the secret", "secret generation advice"),
        (f"api_key_id: {uuid4()}", "API key id"),
        ("GET /v1/users?page_token=CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA&limit=50", "page token"),
        ("env shows PWD: '/Users/maciej/docs' and HOME: '/Users/maciej'", "PWD working directory"),
        ("By default the build is quiet. Pass `verbose=True` if you want every page logged.",
         "'pass' the verb, before a code value"),
        ("mhu = MultiHostUrl('https://docs.acme.io:8443,mirror:bar@cdn.acme.io/path')",
         "multi-host URL with ports"),
        ('headers["sec-websocket-key"] = base64.b64encode(secrets.token_bytes(16))',
         "secret name assigned from a function call"),
        ("token = response.json()['access_token']", "token read from a response"),
        ("PyJWT's README encodes {'some': 'payload'} with the key 'secret', what does HS256 do?",
         "JWT library example mention"),
    ]
    for text, origin in more:
        add(text, origin)
    return out


def main() -> None:
    cases: list[dict[str, object]] = []
    for kind, origin, env, product, make in VENDOR_FORMATS:
        cases.extend(key_cases(kind, origin, env, product, make))
    for kind, origin, make in URL_FORMATS:
        cases.extend(url_cases(kind, origin, make))
    cases.extend(context_cases())
    cases.extend(structure_cases())
    cases.extend(url_password_cases())
    cases.extend(assignment_cases())
    cases.extend(negative_cases())
    with OUT.open("w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    positives = [c for c in cases if c["credential"]]
    kinds = {c["kind"] for c in positives}
    print(f"{len(cases)} cases: {len(positives)} with a credential across {len(kinds)} kinds, "
          f"{len(cases) - len(positives)} without -> {OUT}")


if __name__ == "__main__":
    main()
