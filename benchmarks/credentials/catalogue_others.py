"""A third split of credential kinds, from sources the catalogue did not use: other secret
scanners' rule tests (Nosey Parker's and Kingfisher's rule files, which pair each rule with
example and counter-example strings) and providers' own documentation of their key formats.
gitleaks' and detect-secrets' test data stay held out, as before.

Nothing is copied: each row describes a shape in our words (prefix, alphabet, length, the
name the value is kept under), and the surroundings in `FOREIGN` imitate the kinds of text
those rule tests place secrets in (a NuGet.config, a .netrc, a JSON-RPC call, a device URL,
curl with a form field, a Gradle properties file, Terraform, an .npmrc line, a C# settings
file...), written here. Every kind is kept out of rule writing: this split is measured only.
Kinds whose format the catalogue already has (GitHub, Slack, Stripe, ...) are not repeated.
"""

from __future__ import annotations

from catalogue import Kind


def K(kind: str, product: str, env: str, shape: str, source: str) -> Kind:
    return Kind(kind, product, env, shape, source)


def N(kind: str, product: str, env: str, shape: str, source: str) -> Kind:
    return Kind(kind, product, env, shape, source, named=True)


NP = "Nosey Parker rule tests"
KF = "Kingfisher rule tests"

OTHERS: tuple[Kind, ...] = (
    # --- prefixed formats, from the two scanners' rule tests --------------------------------
    K("dependency_track_key", "Dependency-Track", "DTRACK_API_KEY", "odt_{a62:32-40}", NP),
    K("stackhawk_key", "StackHawk", "HAWK_API_KEY", "hawk.{url:20}.{url:20}", NP),
    K("teamcity_token", "TeamCity", "TEAMCITY_TOKEN", "eyJ0eXAiOiAiVENWMiJ9.{url:36}.{url:48}", NP),
    K("pyx_user_token", "pyx", "PYX_TOKEN", "sk-pyx-{a62:64}", NP),
    K("pyx_publishing_token", "pyx", "PYX_PUBLISH_TOKEN", "tp-pyx-2{a52:45}", NP),
    K("adafruit_io_key", "Adafruit IO", "ADAFRUIT_IO_KEY", "aio_{a62:28}", NP),
    K("adobe_client_secret", "Adobe", "ADOBE_CLIENT_SECRET", "p8e-{a36l:32}", NP),
    K("apify_token", "Apify", "APIFY_TOKEN", "apify_api_{a62:36}", KF),
    K("clickup_token", "ClickUp", "CLICKUP_TOKEN", "pk_{dig:7-8}_{a36u:32}", KF),
    K("voiceflow_key", "Voiceflow", "VOICEFLOW_API_KEY", "VF.DM.{hex:24}.{a62:16}", KF),
    K("beamer_key", "Beamer", "BEAMER_API_KEY", "b_{a62:44}", KF),
    K("blynk_device_url", "Blynk", "BLYNK_URL",
      "https://blynk.cloud/external/api/get?token={url:32}&V1", NP),
    K("thingsboard_device_url", "ThingsBoard", "TB_URL",
      "https://thingsboard.cloud/api/v1/{a36l:20}/telemetry", NP),
    K("truenas_bearer", "TrueNAS", "TRUENAS_HEADER",
      "Authorization: Bearer {dig:1-2}-{a62:64}", NP),
    K("netrc_entry", "netrc", "NETRC", "machine api.service.test\n  login deploy\n"
      "  password {a62:24}", NP),
    K("odbc_connection", "SQL Server", "CONNECTION_STRING",
      "Server=db01,1433;Database=docs;User Id=app;Password={a62:10}#{dig:2};", NP),
    # --- recognisable only by their name (the rule tests key on the product's name) ---------
    N("truenas_api_key", "TrueNAS", "TRUENAS_API_KEY", "{dig:1-2}-{a62:64}", NP),
    N("kagi_api_key", "Kagi", "KAGI_API_KEY", "{url:11}.{url:43}", NP),
    N("blynk_org_token", "Blynk", "BLYNK_TOKEN", "{url:40}", NP),
    N("particle_access_token", "Particle", "PARTICLE_ACCESS_TOKEN", "{hex:40}", NP),
    N("sauce_access_key", "Sauce Labs", "SAUCE_ACCESS_KEY", "{uuid}", NP),
    N("thingsboard_provision_secret", "ThingsBoard", "PROVISION_DEVICE_SECRET", "{a36l:20}", NP),
    N("linkedin_client_secret", "LinkedIn", "LINKEDIN_CLIENT_SECRET", "{a62:16}", NP),
    N("nasa_api_key", "NASA", "NASA_API_KEY", "{a62:40}", NP),
    N("aiven_token", "Aiven", "AIVEN_API_TOKEN", "{b64:372}", KF),
    N("betterstack_token", "Better Stack", "BETTERSTACK_API_TOKEN", "{a62:24}", KF),
    N("alchemy_api_key", "Alchemy", "ALCHEMY_API_KEY", "{a36l:23}_{a62:8}", KF),
    N("checkly_api_key", "Checkly", "CHECKLY_API_KEY", "{a36l:32}", KF),
    # --- providers' documentation of their keys: values kept under a name -------------------
    N("snyk_token", "Snyk", "SNYK_TOKEN", "{uuid}", "Snyk docs: Authenticate the CLI"),
    N("cypress_record_key", "Cypress Cloud", "CYPRESS_RECORD_KEY", "{uuid}",
      "Cypress docs: Record key"),
    N("percy_token", "Percy", "PERCY_TOKEN", "{hex:64}", "Percy docs: project tokens"),
    N("codacy_token", "Codacy", "CODACY_PROJECT_TOKEN", "{hex:32}",
      "Codacy docs: project API tokens"),
    N("coveralls_token", "Coveralls", "COVERALLS_REPO_TOKEN", "{a62:32}",
      "Coveralls docs: repo token"),
    N("expo_token", "Expo", "EXPO_TOKEN", "{url:40}", "Expo docs: programmatic access"),
    N("pipedrive_token", "Pipedrive", "PIPEDRIVE_API_TOKEN", "{hex:40}",
      "Pipedrive docs: How to find the API token"),
    N("todoist_token", "Todoist", "TODOIST_API_TOKEN", "{hex:40}", "Todoist docs: API token"),
    N("unsplash_key", "Unsplash", "UNSPLASH_ACCESS_KEY", "{url:43}",
      "Unsplash docs: Authorization"),
    N("openweather_key", "OpenWeather", "OPENWEATHER_API_KEY", "{hex:32}",
      "OpenWeather docs: API keys"),
    N("newsapi_key", "News API", "NEWS_API_KEY", "{hex:32}", "NewsAPI docs: Authentication"),
    N("meilisearch_master_key", "Meilisearch", "MEILI_MASTER_KEY", "{url:32}",
      "Meilisearch docs: Securing your project"),
    N("ipinfo_token", "IPinfo", "IPINFO_TOKEN", "{hex:14}", "IPinfo docs: Authentication"),
    K("bitwarden_sm_token", "Bitwarden Secrets Manager", "BWS_ACCESS_TOKEN",
      "0.{uuid}.{a62:30}:{b64:22}==", "Bitwarden docs: Secrets Manager access tokens"),
)

# Where the rule tests put secrets, in our words: {env}, {name} (lower-case), {v}.
FOREIGN = {
    "nuget_config": '<packageSourceCredentials><feed><add key="Username" value="ci" />'
                    '<add key="ClearTextPassword" value="{v}" /></feed></packageSourceCredentials>',
    "gradle_properties": "# gradle.properties\norg.gradle.jvmargs=-Xmx2g\n{name}={v}",
    "terraform": 'provider "service" {{\n  {name} = "{v}"\n  region = "eu-west-1"\n}}',
    "npmrc": "//registry.service.test/:_authToken={v}\nalways-auth=true",
    "appsettings": '{{\n  "Logging": {{ "LogLevel": {{ "Default": "Warning" }} }},\n'
                   '  "{env}": "{v}"\n}}',
    "compose": "services:\n  docs:\n    image: docs:latest\n    environment:\n      - {env}={v}",
    "jsonrpc": '{{"id": 7, "method": "auth.login_with_api_key", "params": ["{v}"]}}',
    "curl_form": "curl https://api.service.test/v1/devices -d {name}={v}",
    "python_auth": 'client.auth = httpx.BasicAuth(username="__token__", password="{v}")',
    "ini": "[default]\nregion = us-east-1\n{name} = {v}",
    "php_array": "$config['{name}'] = '{v}';",
    "swift": 'let {camel} = "{v}"',
}
# Values with syntax of their own (URLs, headers, blocks) go in as they are, as the tests do.
FOREIGN_WHOLE = {
    "readme_block": "To reproduce:\n\n    {v}\n\nthe request hangs",
    "script": "#!/bin/sh\nset -e\n# {env}\n{v}\n",
    "comment": "// TODO remove before release: {v}",
}
