"""The data behind `credentials.find_credential`: vendor key formats and placeholder vocabulary.

Kept apart from the detector so the table reads as data. One row per credential format a
vendor documents publicly (benchmarks/credentials/SOURCES.md names the documents); each row is
a regex whose `body` group is the part that must look random, plus lower-case hints: the regex
only runs when one of its hints occurs in the lower-cased question, which keeps a question with
no candidate at a few microseconds however long the table grows.

Regexes are written to stay linear: every repeat is bounded or possessive, and each row starts
with a literal (or a lookbehind and a literal), so no input makes them backtrack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class TokenFormat:
    """One vendor credential format: where it starts, what it is called, what must be random."""

    kind: str
    label: str
    pattern: re.Pattern[str]
    hints: tuple[str, ...]
    context: re.Pattern[str] | None = None  # must also occur somewhere in the question
    span_is_body: bool = False  # the regex starts with the secret's name; highlight the value
    # True when every hint is the token's literal start: the row is then tried only where a
    # run of token characters begins with one; other rows search the whole question.
    at_start: bool = True


# A token ends where a run of token characters does ("." may follow: the end of a sentence).
# Where it starts is checked by the caller against TOKEN_CHARS: a regex that opens with its
# literal prefix lets `re` jump between occurrences of that prefix, one that opens with a
# lookbehind tries every position, which is twenty times slower.
TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_END = r"(?![A-Za-z0-9_\-])"
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def _row(
    kind: str,
    label: str,
    regex: str,
    *hints: str,
    context: str | None = None,
    named: bool = False,
    at_start: bool = True,
) -> TokenFormat:
    return TokenFormat(
        kind=kind,
        label=label,
        pattern=re.compile(regex + _END),
        hints=hints,
        context=re.compile(context) if context else None,
        span_is_body=named,
        at_start=at_start and not named,
    )


# Order matters only between rows that can match the same text: the more specific row first
# (Anthropic and OpenRouter before the generic `sk-` row, Square before Meta's `EAA`).
TOKEN_FORMATS: tuple[TokenFormat, ...] = (
    # --- AI model providers -------------------------------------------------------------
    _row("anthropic_api_key", "Anthropic API key",
         r"sk-ant-(?:api|admin|oat|ort|sid)\d\d-(?P<body>[A-Za-z0-9_\-]{24,}+)", "sk-ant-"),
    _row("anthropic_api_key", "Anthropic API key", r"sk-ant-(?P<body>[A-Za-z0-9_\-]{32,}+)",
         "sk-ant-"),
    _row("openrouter_api_key", "OpenRouter API key", r"sk-or-v\d-(?P<body>[a-f0-9]{48,}+)",
         "sk-or-"),
    _row("langfuse_secret_key", "Langfuse secret key", rf"sk-lf-(?P<body>{_UUID})", "sk-lf-"),
    _row("openai_api_key", "OpenAI project API key",
         r"sk-proj-(?P<body>[A-Za-z0-9_\-]{20,}+)", "sk-proj-"),
    _row("openai_api_key", "OpenAI service-account key",
         r"sk-svcacct-(?P<body>[A-Za-z0-9_\-]{20,}+)", "sk-svcacct-"),
    _row("openai_api_key", "OpenAI admin key", r"sk-admin-(?P<body>[A-Za-z0-9_\-]{20,}+)",
         "sk-admin-"),
    _row("openai_api_key", "OpenAI API key", r"sk-None-(?P<body>[A-Za-z0-9_\-]{20,}+)",
         "sk-none-"),
    _row("openai_api_key", "OpenAI API key",
         r"sk-(?P<body>[A-Za-z0-9]{8,}T3BlbkFJ[A-Za-z0-9]{8,}+)", "sk-"),
    _row("openai_api_key", "OpenAI API key", r"sk-(?P<body>[A-Za-z0-9]{48})", "sk-"),
    _row("openai_style_api_key", "secret API key (sk-…)",
         r"sk-(?P<body>[A-Za-z0-9]{32,}+)", "sk-"),
    _row("groq_api_key", "Groq API key", r"gsk_(?P<body>[A-Za-z0-9]{40,}+)", "gsk_"),
    _row("xai_api_key", "xAI API key", r"xai-(?P<body>[A-Za-z0-9]{60,}+)", "xai-"),
    _row("perplexity_api_key", "Perplexity API key", r"pplx-(?P<body>[A-Za-z0-9]{40,}+)",
         "pplx-"),
    _row("replicate_api_token", "Replicate API token", r"r8_(?P<body>[A-Za-z0-9]{37})",
         "r8_"),
    _row("huggingface_token", "Hugging Face access token",
         r"hf_(?P<body>[A-Za-z0-9]{30,40})", "hf_"),
    _row("huggingface_token", "Hugging Face organization token",
         r"api_org_(?P<body>[A-Za-z0-9]{30,40})", "api_org_"),
    _row("langsmith_api_key", "LangSmith API key",
         r"lsv2_(?:pt|sk)_(?P<body>[a-f0-9]{32}_[a-f0-9]{10})", "lsv2_"),
    _row("pinecone_api_key", "Pinecone API key",
         r"pcsk_(?P<body>[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,}+)", "pcsk_"),
    _row("tavily_api_key", "Tavily API key",
         r"tvly-(?:dev-|prod-)?(?P<body>[A-Za-z0-9]{32})", "tvly-"),
    _row("nvidia_api_key", "NVIDIA API key", r"nvapi-(?P<body>[A-Za-z0-9_\-]{60,}+)",
         "nvapi-"),
    _row("cerebras_api_key", "Cerebras API key", r"csk-(?P<body>[a-z0-9]{40,}+)", "csk-"),
    _row("fireworks_api_key", "Fireworks AI API key", r"fw_(?P<body>[A-Za-z0-9]{24,}+)",
         "fw_"),
    _row("voyage_api_key", "Voyage AI API key", r"pa-(?P<body>[A-Za-z0-9_\-]{40,}+)", "pa-"),
    _row("anyscale_api_key", "Anyscale API key", r"esecret_(?P<body>[a-z0-9]{26,}+)",
         "esecret_"),
    # --- Cloud providers ------------------------------------------------------------------
    _row("aws_access_key_id", "AWS access key ID",
         r"(?P<body>(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16})",
         "akia", "asia", "abia", "acca", "a3t"),
    _row("aws_secret_access_key", "AWS secret access key",
         r"(?i:(?:aws[_\s-]?)?secret[_\s-]?access[_\s-]?key|aws[_\s-]?secret(?:[_\s-]?key)?)"
         r"[\"']?\s*+(?:[:=]|=>|is|es|est|ist|é)?\s*+[\"']?(?P<body>[A-Za-z0-9/+]{40})"
         r"(?![A-Za-z0-9/+=])",
         "secret", named=True),
    _row("aws_secret_access_key", "AWS secret access key",
         r"(?:AKIA|ASIA)[A-Z0-9]{16}[\"']?\s*+[,:;|/]?\s*+[\"']?"
         r"(?P<body>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", "akia", "asia", named=True),
    _row("aws_session_token", "AWS session token",
         r"(?P<body>(?:FwoGZXIvYXdz|IQoJb3JpZ2luX2Vj)[A-Za-z0-9/+=]{80,}+)",
         "fwogzxivyxdz", "iqojb3jpz2lux2vj"),
    _row("aws_bedrock_api_key", "Amazon Bedrock API key",
         r"ABSK(?P<body>[A-Za-z0-9+/]{100,}+={0,2})", "absk"),
    _row("google_api_key", "Google API key", r"AIza(?P<body>[0-9A-Za-z_\-]{35})", "aiza"),
    _row("google_oauth_client_secret", "Google OAuth client secret",
         r"GOCSPX-(?P<body>[A-Za-z0-9_\-]{28})", "gocspx-"),
    _row("google_oauth_token", "Google OAuth access token",
         r"ya29\.(?P<body>[0-9A-Za-z_\-]{30,}+)", "ya29."),
    _row("google_oauth_token", "Google OAuth refresh token",
         r"1//0(?P<body>[0-9A-Za-z_\-]{40,}+)", "1//0"),
    _row("gcp_service_account_key", "Google Cloud service-account key",
         r"\"private_key\"\s*+:\s*+\"-----BEGIN PRIVATE KEY-----(?:\\n)?"
         r"(?P<body>[A-Za-z0-9+/=]{24,}+)", "private_key",
         context=r"service_account|gserviceaccount\.com|\"private_key_id\"", named=True),
    _row("azure_storage_account_key", "Azure storage account key",
         r"(?i:AccountKey)=(?P<body>[A-Za-z0-9+/]{80,100}={0,2})", "accountkey=", at_start=False),
    _row("azure_shared_access_key", "Azure shared access key",
         r"(?i:SharedAccessKey)=(?P<body>[A-Za-z0-9+/]{40,}+={0,2})", "sharedaccesskey=",
         at_start=False),
    _row("azure_sas_token", "Azure SAS token signature",
         r"sig=(?P<body>[A-Za-z0-9%+/]{40,}+(?:={0,2}|(?:%3[Dd]){0,2}))", "sig=",
         context=r"[?&]sv=\d{4}-\d\d-\d\d", at_start=False),
    _row("azure_ad_client_secret", "Azure AD (Entra ID) client secret",
         r"(?P<body>[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34})", "q~", at_start=False),
    _row("alibaba_access_key_id", "Alibaba Cloud AccessKey ID",
         r"LTAI(?P<body>[A-Za-z0-9]{12,20})", "ltai"),
    _row("tencent_secret_id", "Tencent Cloud SecretId", r"AKID(?P<body>[A-Za-z0-9]{32})",
         "akid"),
    _row("digitalocean_token", "DigitalOcean token", r"do[opr]_v1_(?P<body>[a-f0-9]{64})",
         "dop_v1_", "doo_v1_", "dor_v1_"),
    _row("cloudflare_origin_ca_key", "Cloudflare Origin CA key",
         r"v1\.0-(?P<body>[a-f0-9]{24}-[a-f0-9]{146})", "v1.0-"),
    _row("heroku_api_key", "Heroku API key", r"HRKU-(?P<body>[A-Za-z0-9_\-]{58,}+)", "hrku-"),
    _row("heroku_api_key", "Heroku API key",
         rf"(?i:heroku[a-z_\-]{{0,20}}(?:key|token))[\"']?\s*+[:=]\s*+[\"']?(?P<body>{_UUID})",
         "heroku", named=True),
    _row("fly_token", "Fly.io access token", r"fo1_(?P<body>[A-Za-z0-9_\-]{40,}+)", "fo1_"),
    _row("fly_token", "Fly.io access token",
         r"(?:FlyV1 )?fm[12][ar]?_(?P<body>[A-Za-z0-9+/]{60,}+={0,3})", "fm1", "fm2"),
    _row("vault_token", "HashiCorp Vault token", r"hv[sbr]\.(?P<body>[A-Za-z0-9_\-]{24,}+)",
         "hvs.", "hvb.", "hvr."),
    _row("vault_token", "HashiCorp Vault token",
         r"(?i:vault_?token)[\"']?\s*+[:=]\s*+[\"']?s\.(?P<body>[A-Za-z0-9]{24})", "vault",
         named=True),
    _row("terraform_cloud_token", "Terraform Cloud / HCP API token",
         r"[A-Za-z0-9]{14}\.atlasv1\.(?P<body>[A-Za-z0-9_=\-]{60,}+)", "atlasv1", at_start=False),
    _row("pulumi_access_token", "Pulumi access token", r"pul-(?P<body>[a-f0-9]{40})", "pul-"),
    _row("doppler_token", "Doppler token",
         r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?P<body>[A-Za-z0-9]{40,44})", "dp."),
    _row("supabase_token", "Supabase access token",
         r"sbp_(?:oauth_)?(?P<body>[a-f0-9]{40})", "sbp_"),
    _row("supabase_token", "Supabase secret key", r"sb_secret_(?P<body>[A-Za-z0-9_\-]{20,}+)",
         "sb_secret_"),
    _row("planetscale_token", "PlanetScale token or password",
         r"pscale_(?:tkn|pw|oauth)_(?P<body>[A-Za-z0-9_=.\-]{32,64})", "pscale_"),
    _row("databricks_token", "Databricks access token",
         r"dapi(?P<body>[a-f0-9]{32})(?:-\d)?", "dapi"),
    _row("openshift_token", "OpenShift user token", r"sha256~(?P<body>[A-Za-z0-9_\-]{43})",
         "sha256~"),
    # --- Source hosting, CI and package registries -------------------------------------
    _row("github_token", "GitHub personal access token", r"ghp_(?P<body>[A-Za-z0-9]{30,}+)",
         "ghp_"),
    _row("github_token", "GitHub OAuth token", r"gho_(?P<body>[A-Za-z0-9]{30,}+)", "gho_"),
    _row("github_token", "GitHub App token", r"gh[us]_(?P<body>[A-Za-z0-9]{30,}+)",
         "ghu_", "ghs_"),
    _row("github_token", "GitHub refresh token", r"ghr_(?P<body>[A-Za-z0-9]{30,}+)", "ghr_"),
    _row("github_token", "GitHub fine-grained personal access token",
         r"github_pat_(?P<body>[A-Za-z0-9]{20,}_[A-Za-z0-9]{40,}+)", "github_pat_"),
    _row("gitlab_token", "GitLab personal access token",
         r"glpat-(?P<body>[A-Za-z0-9_\-]{20,}+(?:\.[a-z0-9]{9})?)", "glpat-"),
    _row("gitlab_token", "GitLab token",
         r"gl(?:dt|rt|ptt|cbt|ft|imt|agent|oas|soat|ffct)-(?P<body>[A-Za-z0-9_\-]{20,}+)",
         "gldt-", "glrt-", "glptt-", "glcbt-", "glft-", "glimt-", "glagent-", "gloas-",
         "glsoat-", "glffct-"),
    _row("gitlab_token", "GitLab runner registration token",
         r"GR1348941(?P<body>[A-Za-z0-9_\-]{20,}+)", "gr1348941"),
    _row("bitbucket_app_password", "Bitbucket app password",
         r"ATBB(?P<body>[A-Za-z0-9_\-=]{32,}+)", "atbb"),
    _row("atlassian_api_token", "Atlassian API token",
         r"AT[AC]TT3(?P<body>[A-Za-z0-9_\-=]{100,}+)", "atatt3", "atctt3"),
    _row("npm_token", "npm access token", r"npm_(?P<body>[A-Za-z0-9]{36,}+)", "npm_"),
    _row("pypi_token", "PyPI API token", r"pypi-(?P<body>AgE[A-Za-z0-9_\-]{50,}+)", "pypi-"),
    _row("rubygems_api_key", "RubyGems API key", r"rubygems_(?P<body>[a-f0-9]{48})",
         "rubygems_"),
    _row("nuget_api_key", "NuGet API key", r"oy2(?P<body>[a-z0-9]{43})", "oy2"),
    _row("crates_io_token", "crates.io API token", r"cio(?P<body>[A-Za-z0-9]{32})", "cio"),
    _row("clojars_token", "Clojars deploy token", r"CLOJARS_(?P<body>[a-z0-9]{60})",
         "clojars_"),
    _row("docker_hub_token", "Docker Hub access token",
         r"dckr_(?:pat|oat)_(?P<body>[A-Za-z0-9_\-]{27,}+)", "dckr_"),
    _row("jfrog_token", "JFrog Artifactory API key", r"AKCp(?P<body>[A-Za-z0-9]{60,80})",
         "akcp"),
    _row("jfrog_token", "JFrog Artifactory reference token",
         r"cmVmdGtu(?P<body>[A-Za-z0-9]{50,}+)", "cmvmdgtu"),
    _row("circleci_token", "CircleCI personal API token",
         r"CCIP(?:AT|RJ)_(?P<body>[A-Za-z0-9]{20,}_[a-f0-9]{40})", "ccipat_", "cciprj_"),
    _row("buildkite_token", "Buildkite API token", r"bkua_(?P<body>[a-f0-9]{40})", "bkua_"),
    _row("netlify_token", "Netlify personal access token",
         r"nfp_(?P<body>[A-Za-z0-9]{36,}+)", "nfp_"),
    _row("render_api_key", "Render API key", r"rnd_(?P<body>[A-Za-z0-9]{32,}+)", "rnd_"),
    _row("sourcegraph_token", "Sourcegraph access token",
         r"sgp_(?:[a-f0-9]{16}_)?(?P<body>[a-f0-9]{40})", "sgp_"),
    _row("prefect_api_key", "Prefect API key", r"pnu_(?P<body>[A-Za-z0-9]{36})", "pnu_"),
    _row("octopus_deploy_api_key", "Octopus Deploy API key", r"API-(?P<body>[A-Z0-9]{26})",
         "api-"),
    _row("harness_token", "Harness API token",
         r"(?:pat|sat)\.(?P<body>[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20})",
         "pat.", "sat."),
    _row("scalingo_token", "Scalingo API token", r"tk-us-(?P<body>[A-Za-z0-9_\-]{48})",
         "tk-us-"),
    _row("infracost_api_key", "Infracost API key", r"ico-(?P<body>[A-Za-z0-9]{32})", "ico-"),
    # --- Messaging, email and chat ------------------------------------------------------
    _row("slack_token", "Slack token",
         r"(?:xoxe\.)?xox[abcposr]-(?P<body>\d{6,}+-[0-9A-Za-z\-]{16,}+)", "xox"),
    _row("slack_token", "Slack refresh token", r"xoxe-\d-(?P<body>[A-Za-z0-9]{40,}+)",
         "xoxe-"),
    _row("slack_token", "Slack app-level token",
         r"xapp-\d-(?P<body>[A-Z0-9]{6,}+-\d{6,}+-[a-f0-9]{32,}+)", "xapp-"),
    _row("slack_webhook_url", "Slack webhook URL",
         r"https://hooks\.slack\.com/(?:services|workflows|triggers)/"
         r"(?P<body>[A-Za-z0-9_]{6,}+/[A-Za-z0-9_]{6,}+/[A-Za-z0-9_/]{16,}+)", "hooks.slack.com",
         at_start=False),
    _row("discord_webhook_url", "Discord webhook URL",
         r"https://(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/\d{15,22}/"
         r"(?P<body>[A-Za-z0-9_\-]{60,}+)", "discord", at_start=False),
    _row("discord_bot_token", "Discord bot token",
         r"(?P<body>[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40})",
         "m", "n", "o"),
    _row("teams_webhook_url", "Microsoft Teams webhook URL",
         rf"https://[a-z0-9\-]+\.webhook\.office\.com/webhookb2/{_UUID}@{_UUID}/"
         rf"IncomingWebhook/(?P<body>[a-f0-9]{{32}})/{_UUID}", "webhook.office.com",
         at_start=False),
    _row("telegram_bot_token", "Telegram bot token",
         r"(?<![0-9])(?:bot)?\d{8,10}:(?P<body>AA[A-Za-z0-9_\-]{33})", ":aa", at_start=False),
    _row("twilio_api_key", "Twilio API key", r"SK(?P<body>[0-9a-fA-F]{32})", "sk"),
    _row("twilio_auth_token", "Twilio auth token",
         r"AC[0-9a-f]{32}[\"']?\s*+[,:]\s*+[\"']?(?P<body>[0-9a-f]{32})", "ac", named=True),
    _row("twilio_auth_token", "Twilio auth token",
         r"(?i:auth_?token)[\"'\s:=]{1,6}+(?:is\s)?[\"']?(?P<body>[0-9a-f]{32})", "auth",
         context=r"(?i:twilio)|AC[0-9a-f]{32}", named=True),
    _row("sendgrid_api_key", "SendGrid API key",
         r"SG\.(?P<body>[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{32,64})", "sg."),
    _row("mailgun_api_key", "Mailgun API key", r"key-(?P<body>[0-9a-zA-Z]{32})", "key-"),
    _row("mailchimp_api_key", "Mailchimp API key", r"(?P<body>[0-9a-f]{32})-us\d{1,2}",
         "-us", at_start=False),
    _row("brevo_api_key", "Brevo (Sendinblue) API key",
         r"x(?:key|smtp)sib-(?P<body>[a-f0-9]{64}-[A-Za-z0-9]{16})", "xkeysib-", "xsmtpsib-"),
    _row("mailersend_api_key", "MailerSend API token", r"mlsn\.(?P<body>[a-f0-9]{64})",
         "mlsn."),
    _row("resend_api_key", "Resend API key", r"re_(?P<body>[A-Za-z0-9]{8}_[A-Za-z0-9]{24})",
         "re_"),
    _row("postmark_token", "Postmark server token",
         rf"(?i:postmark[a-z_\-]{{0,20}}(?:key|token))[\"']?\s*+[:=]\s*+[\"']?"
         rf"(?P<body>{_UUID})", "postmark", named=True),
    _row("intercom_access_token", "Intercom access token",
         r"dG9rO(?P<body>[A-Za-z0-9+/=_\-]{40,}+)", "dg9ro"),
    _row("hubspot_token", "HubSpot private app token",
         rf"pat-(?:na|eu|ap)\d-(?P<body>{_UUID})", "pat-"),
    # --- Payments and commerce ----------------------------------------------------------
    _row("stripe_secret_key", "Stripe secret key",
         r"sk_live_(?P<body>[A-Za-z0-9]{20,}+)", "sk_live_"),
    _row("stripe_secret_key", "Stripe restricted key",
         r"rk_live_(?P<body>[A-Za-z0-9]{20,}+)", "rk_live_"),
    _row("stripe_secret_key", "Stripe test-mode secret key",
         r"(?:sk|rk)_test_(?P<body>[A-Za-z0-9]{20,}+)", "sk_test_", "rk_test_"),
    _row("stripe_webhook_secret", "Stripe webhook signing secret",
         r"whsec_(?P<body>[A-Za-z0-9]{32,}+)", "whsec_"),
    _row("square_access_token", "Square access token",
         r"(?:EAAA|sq0atp-)(?P<body>[A-Za-z0-9_\-]{22,60})", "eaaa", "sq0atp-"),
    _row("square_access_token", "Square OAuth application secret",
         r"sq0csp-(?P<body>[A-Za-z0-9_\-]{43})", "sq0csp-"),
    _row("facebook_access_token", "Meta (Facebook) access token",
         r"EAA[B-Z](?P<body>[A-Za-z0-9]{80,}+)", "eaa"),
    _row("shopify_token", "Shopify access token",
         r"shp(?:at|ca|pa|ss)_(?P<body>[a-fA-F0-9]{32})", "shpat_", "shpca_", "shppa_",
         "shpss_"),
    _row("braintree_access_token", "Braintree access token",
         r"access_token\$(?:production|sandbox)\$(?P<body>[a-z0-9]{16}\$[a-f0-9]{32})",
         "access_token$"),
    _row("plaid_access_token", "Plaid access token",
         rf"access-(?:sandbox|development|production)-(?P<body>{_UUID})", "access-"),
    _row("shippo_api_token", "Shippo API token",
         r"shippo_(?:live|test)_(?P<body>[a-fA-F0-9]{40})", "shippo_"),
    _row("flutterwave_secret_key", "Flutterwave secret key",
         r"FLWSECK(?:_TEST)?-(?P<body>[a-h0-9]{32})-X", "flwseck"),
    _row("easypost_api_key", "EasyPost API key", r"EZ[AT]K(?P<body>[A-Za-z0-9]{54})",
         "ezak", "eztk"),
    _row("duffel_api_token", "Duffel API token",
         r"duffel_(?:test|live)_(?P<body>[A-Za-z0-9_\-=]{43})", "duffel_"),
    # --- Productivity, observability and other SaaS ------------------------------------
    _row("linear_api_key", "Linear API key",
         r"lin_(?:api|oauth)_(?P<body>[A-Za-z0-9]{40})", "lin_api_", "lin_oauth_"),
    _row("notion_token", "Notion integration token", r"secret_(?P<body>[A-Za-z0-9]{43})",
         "secret_"),
    _row("notion_token", "Notion integration token",
         r"ntn_(?P<body>[0-9]{11}[A-Za-z0-9]{35})", "ntn_"),
    _row("postman_api_key", "Postman API key",
         r"PMAK-(?P<body>[a-f0-9]{24}-[a-f0-9]{34})", "pmak-"),
    _row("sentry_auth_token", "Sentry auth token",
         r"sntry[su]_(?P<body>[A-Za-z0-9+/=_]{60,}+)", "sntrys_", "sntryu_"),
    _row("grafana_token", "Grafana service-account token",
         r"glsa_(?P<body>[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})", "glsa_"),
    _row("grafana_token", "Grafana Cloud access token",
         r"glc_(?P<body>[A-Za-z0-9+/]{32,}+={0,2})", "glc_"),
    _row("grafana_token", "Grafana API key", r"eyJrIjoi(?P<body>[A-Za-z0-9+/]{40,}+={0,2})",
         "eyjrijoi"),
    _row("newrelic_key", "New Relic API key",
         r"NR(?:AK|II|JS|AA|RA|SP)-(?P<body>[A-Za-z0-9]{24,32})", "nrak-", "nrii-", "nrjs-",
         "nraa-", "nrra-", "nrsp-"),
    _row("newrelic_key", "New Relic license key", r"(?P<body>[a-f0-9]{36})NRAL", "nral",
         at_start=False),
    _row("dynatrace_token", "Dynatrace API token",
         r"dt0[a-z]\d\d\.(?P<body>[A-Za-z0-9]{24}\.[A-Za-z0-9]{64})", "dt0"),
    _row("asana_token", "Asana personal access token",
         r"(?:1/|2/)\d{6,20}(?:/\d{6,20})?:(?P<body>[A-Za-z0-9]{32})", "1/", "2/", at_start=False),
    _row("figma_token", "Figma personal access token",
         r"figd_(?P<body>[A-Za-z0-9_\-]{40,}+)", "figd_"),
    _row("airtable_token", "Airtable personal access token",
         r"pat[A-Za-z0-9]{14}\.(?P<body>[a-f0-9]{64})", "pat"),
    _row("contentful_token", "Contentful personal access token",
         r"CFPAT-(?P<body>[A-Za-z0-9_\-]{43})", "cfpat-"),
    _row("typeform_token", "Typeform personal access token",
         r"tfp_(?P<body>[A-Za-z0-9_\-.=]{40,}+)", "tfp_"),
    _row("readme_api_key", "ReadMe API key", r"rdme_(?P<body>[a-z0-9]{70})", "rdme_"),
    _row("frameio_token", "Frame.io API token", r"fio-u-(?P<body>[A-Za-z0-9_\-=]{64})",
         "fio-u-"),
    _row("adobe_client_secret", "Adobe client secret", r"p8e-(?P<body>[A-Za-z0-9]{32})",
         "p8e-"),
    _row("launchdarkly_key", "LaunchDarkly key", rf"(?:api|sdk)-(?P<body>{_UUID})",
         "api-", "sdk-"),
    _row("dropbox_access_token", "Dropbox access token",
         r"sl\.(?:u\.)?(?P<body>[A-Za-z0-9_\-]{120,}+)", "sl."),
    _row("twitter_bearer_token", "X (Twitter) bearer token",
         r"AAAAAAAAAAAAAAAAAAAAAA(?P<body>[A-Za-z0-9%]{60,}+)", "aaaaaaaaaaaaaaaaaaaaaa"),
    _row("mapbox_secret_token", "Mapbox secret token",
         r"sk\.eyJ(?P<body>[A-Za-z0-9_\-]{20,}+\.[A-Za-z0-9_\-]{20,}+)", "sk.eyj"),
    _row("fcm_server_key", "Firebase Cloud Messaging server key",
         r"AAAA[A-Za-z0-9_\-]{7}:(?P<body>APA91b[A-Za-z0-9_\-]{120,}+)", "apa91b", at_start=False),
    _row("onepassword_token", "1Password service-account token",
         r"ops_eyJ(?P<body>[A-Za-z0-9+/=_\-]{100,}+)", "ops_eyj"),
    _row("onepassword_secret_key", "1Password Secret Key",
         r"A3-(?P<body>[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})"
         r"-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})", "a3-"),
    _row("age_secret_key", "age secret key",
         r"AGE-SECRET-KEY-1(?P<body>[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})", "age-secret-key-"),
    _row("clickhouse_cloud_key", "ClickHouse Cloud API secret", r"4b1d(?P<body>[A-Za-z0-9]{38})",
         "4b1d"),
    _row("maxmind_license_key", "MaxMind license key",
         r"(?P<body>[A-Za-z0-9]{6}_[A-Za-z0-9]{29})_mmk", "_mmk", at_start=False),
)


# Words that mark a value as a stand-in when they occur anywhere in it (case-insensitive).
# Random bodies of the lengths we accept contain one of these by chance well under 0.1% of
# the time; real keys that vendors print as examples almost always contain one.
PLACEHOLDER_WORDS: tuple[str, ...] = (
    "example", "sample", "dummy", "fake", "placeholder", "redacted", "changeme", "change_me",
    "change-me", "your", "insert", "replace", "notreal", "not_real", "not-real", "not_a_real",
    "not-a-real", "invalid", "xxxx", "****", "....", "…", "lorem", "foobar", "todo",
    "mock", "demo", "secret", "password", "passwd", "token", "<", ">",
    "votre", "deine", "su_clave", "vostr", "ваш", "你的", "您的", "あなたの",
)

# How a value says "look it up elsewhere" instead of being the secret itself.
REFERENCE_MARKERS: tuple[str, ...] = (
    "${", "$(", "{{", "}}", "%(", "%s", "{%", "<%", "process.env", "os.environ", "getenv",
    "env(", "env[", "env.", "secrets.", "vault:", "!vault", "op://", "ref+", "arn:aws:",
    "keyvault", "enc[", "sops", "secretmanager", "secretsmanager", "ssm:", "file:",
)

# Passwords that documentation, tutorials and container images use as defaults. Matched after
# lower-casing, undoing leetspeak and stripping trailing digits and punctuation, so
# "P@ssw0rd!" and "admin123" land here too. A real password on this list is also a
# password nobody should be using.
WEAK_PASSWORDS: frozenset[str] = frozenset({
    "password", "passwd", "pass", "passw", "pw", "pwd", "secret", "secrets", "changeme",
    "changeit", "letmein", "qwerty", "qwertyuiop", "asdf", "asdfgh", "zxcvbn", "admin",
    "administrator", "root", "toor", "guest", "test", "tester", "testing", "demo", "welcome",
    "default", "example", "sample", "hunter", "foobar", "foobared", "foo", "bar", "baz",
    "iloveyou", "monkey", "dragon", "master", "login", "abc", "abcd", "abcdef", "user",
    "username", "postgres", "postgresql", "mysql", "mariadb", "redis", "rabbit", "rabbitmq",
    "mongo", "mongodb", "oracle", "sa", "django", "rails", "docker", "vagrant", "ubuntu",
    "raspberry", "superuser", "supersecret", "topsecret", "mypass", "mypassword", "mysecret",
    "private", "none", "null", "empty", "blank", "temp", "temporary", "trustno", "opensesame",
    "open sesame", "sesame", "correcthorsebatterystaple", "qazwsx", "iqazwsx", "qaz", "wsx",
    "pa", "s", "p", "dbpass", "dbpassword", "db", "app", "apppass", "service", "minio",
    "minioadmin", "elastic", "keycloak", "jenkins", "airflow", "grafana",
    "prom", "sonar", "nexus", "wordpress", "wp", "drupal", "joomla", "magento", "odoo",
    "letmeinnow", "hello", "helloworld", "world", "love", "sunshine", "princess", "football",
    "baseball", "shadow", "michael", "superman", "batman", "starwars", "whatever", "trustme",
    "azerty", "passe", "motdepasse", "contrasena", "senha", "passwort", "kennwort", "parola",
})

LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a",
                      "$": "s", "!": "i", "|": "l", "+": "t"})

# Keys vendors and standards print in their documentation, so readers paste them while
# following along. Values with EXAMPLE/xxxx/etc. are caught by PLACEHOLDER_WORDS; these are the
# ones that look random.
VENDOR_EXAMPLES: frozenset[str] = frozenset({
    # Stripe API reference test keys, and their bodies (docs also show them behind sk_live_).
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    "sk_test_BQokikJOvBiI2HlWgH4olfQ2",
    "4eC39HqLyjWDarjtT1zdp7dc",
    "BQokikJOvBiI2HlWgH4olfQ2",
    # jwt.io's sample token.
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
    "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    # Django REST framework's TokenAuthentication example.
    "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
    # Azurite / Azure Storage Emulator's published development account key.
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
    # RFC 6750 (OAuth bearer tokens) and RFC 7617 (HTTP Basic) examples.
    "mF_9.B5f-4.1JqM",
    "QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
    # Google Maps Platform documentation samples.
    "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
    # Google reCAPTCHA v2 test keys (site and secret), documented for automated tests.
    "6LeIxAcTAAAAAJcZVRqyHh71UMIEGNQ_MXjiZKhI",
    "6LeIxAcTAAAAAGG-vFI1TnRWxMZNFuojJ4WifJWe",
    # Algolia DocSearch's documented search-only key (public by design).
    "599cec31baffa4868cae4e79f180729b",
})

# Values that are public by design: publishable payment keys, public-key material, client ids.
PUBLIC_VALUE_PREFIXES: tuple[str, ...] = (
    "pk_live_", "pk_test_", "pk.", "pk-lf-", "sb_publishable_", "FLWPUBK", "pubkey-",
    "ssh-rsa", "ssh-ed25519", "ssh-dss", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-", "AAAAB3Nza",
    "AAAAC3Nza", "AAAAE2Vj", "age1", "npub1", "Iv1.", "Iv23", "sha256-", "sha384-", "sha512-",
    "sha1-", "md5-", "data:", "MFkwEwYHKoZIzj0", "MIIBIjANBgkqhkiG9w0BAQEFAAOC", "MCowBQYDK2Vw",
)

# --- Names that say a value is a secret --------------------------------------------------

PASSWORD_WORDS: frozenset[str] = frozenset({
    "password", "passwd", "pwd", "pass", "passphrase", "passcode", "pw", "pword", "passwort",
    "kennwort", "contraseña", "contrasena", "senha", "mdp", "parola", "wachtwoord", "hasło",
    "haslo", "passe", "пароль", "密码", "密碼", "口令", "パスワード", "비밀번호", "lösenord",
    "salasana",
})
PASSWORD_SUFFIXES: tuple[str, ...] = ("password", "passwd", "passphrase", "passwort")

SECRET_WORDS: frozenset[str] = frozenset({
    "secret", "token", "apikey", "credential", "credentials", "auth", "oauth", "authkey",
    "accesskey",
    "secretkey", "privatekey", "jeton", "токен", "密钥", "令牌", "秘钥", "トークン", "토큰",
    "シークレット", "секрет",
})
SECRET_SUFFIXES: tuple[str, ...] = (
    "token", "secret", "apikey", "accesskey", "secretkey", "privatekey", "authkey",
)

# Words for "key", which alone is too vague (primary key, cache key): these count only next
# to a qualifier such as "API" or "access", or in an env-style name such as STRIPE_KEY.
KEY_WORDS: frozenset[str] = frozenset({
    "key", "clave", "clé", "cle", "chiave", "chave", "schlüssel", "schluessel", "sleutel",
    "klucz", "ключ", "キー", "키",
})
KEY_QUALIFIERS: frozenset[str] = frozenset({
    "api", "access", "secret", "private", "auth", "account", "master", "admin", "signing",
    "sign", "encryption", "client", "app", "application", "service", "license", "licence",
    "subscription", "write", "ingest", "deploy", "sdk", "server", "rest", "webhook", "shared",
    "storage", "hmac", "jwt", "session", "personal", "root", "bot", "integration",
    "management", "live", "prod", "production", "dev", "sandbox", "x", "ocp", "apim",
    "geheimer", "secreta", "secrète", "secreto", "segreta", "privé", "privada",
})

# A name containing any of these describes something about a secret, or something else that
# happens to be called a key or token: never the secret itself.
NAME_STOP_WORDS: frozenset[str] = frozenset({
    "id", "ids", "uid", "kid", "public", "pub", "publishable", "url", "uri", "urls",
    "endpoint", "host", "path", "file", "filename", "dir", "directory", "folder", "type",
    "name", "names", "length", "len", "size", "expiry", "expires", "expiration", "expire",
    "exp", "ttl", "timeout", "lifetime", "count", "limit", "limits", "max", "min", "maximum",
    "minimum", "policy", "field", "fields", "header", "env", "var", "variable", "hint",
    "prompt", "rotation", "rotate", "algorithm", "alg", "format", "location", "label",
    "description", "desc", "placeholder", "pattern", "regex", "hash", "hashed", "hasher",
    "digest", "checksum", "fingerprint", "index", "version", "prefix", "suffix", "mode",
    "enabled", "enable", "disabled", "required", "method", "methods", "strategy", "provider",
    "ref", "reference", "arn", "sort", "partition", "primary", "foreign", "composite",
    "unique", "cache", "idempotency", "lookup", "routing", "shard", "row", "column", "map",
    "usage", "scope", "scopes", "audience", "issuer", "claim", "claims", "kind", "source",
    "input", "output", "param", "parameter", "arg", "argument", "option", "options", "schema",
    "validation", "validator", "strength", "complexity", "requirement", "requirements",
    "rule", "rules", "generator", "encoder", "decoder", "tokenizer", "tokens", "secrets",
    "keys", "passwords", "csrf", "xsrf", "nonce", "state", "page", "next", "continuation",
    "cursor", "sync", "verifier", "challenge", "bucket", "embedding", "embeddings",
    "completion", "context", "window", "budget", "cost", "price", "rate", "per", "spent",
    "used", "remaining", "total", "num", "number", "stdin", "helper", "command", "cmd",
    "manager", "encrypted", "bcrypt", "sha", "md5", "salt", "rounds", "history", "link",
    "realm", "region", "site", "sitekey", "vapid", "anon", "lang", "i18n", "text", "message",
    "error",
    "errors", "status", "valid", "is", "has", "show", "toggle", "visible", "button",
})

# Filler a reader puts between a name and its value in prose: "my token is …", "mot de passe : …".
PROSE_FILLERS: frozenset[str] = frozenset({
    "is", "was", "are", "equals", "of", "es", "est", "ist", "lautet", "é", "è", "era", "e",
    "wird", "sera", "vale", "это", "是", "为", "為", "は", "が", "이", "가", "은", "는", "=", ":",
    "-", "–", "—", "：", "＝", "here", "like", "now", "currently", "set", "to", "as", "api",
    "de", "da", "do", "del", "di", "della", "d'api",
})

# A word just before a name that makes it something other than a secret ("public key",
# "primary key", "CSRF token").
PREVIOUS_STOP_WORDS: frozenset[str] = frozenset({
    "public", "publishable", "pub", "primary", "foreign", "sort", "partition", "cache",
    "idempotency", "csrf", "xsrf", "composite", "unique", "lookup", "routing", "page", "next",
    "hash", "hashed", "encrypted", "site", "max", "min", "sample", "example", "dummy", "fake",
})
