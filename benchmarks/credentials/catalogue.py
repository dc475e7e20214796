"""A catalogue of documented credential formats, for measuring the check on kinds it was not
written with.

Each row describes one kind of credential in our own words, from what its issuer documents
publicly (key-format pages, token-prefix announcements, API authentication guides) and from
the format descriptions public secret scanners publish (GitHub's secret-scanning partner list,
the detector names and prefixes documented by open-source scanners); no scanner's code, regex
or test data was copied, and gitleaks' and detect-secrets' test fixtures were not read. A row
gives the shape a generator fills with seeded random characters:

    "ghp_{a62:36}"        literal "ghp_", then 36 base62 characters
    "{hex:32}-us{dig:1-2}" 32 hex digits, "-us", one or two digits
    "{uuid}"               a random version-4 UUID

`named` rows have no distinctive prefix: the issuer's value is a bare random string that is
recognisable only by the name it is stored under (the `env` column), so every case of such a
kind carries that name. `split_of(kind)` splits the catalogue by a seeded hash of the kind's
id into "written" (rules may be written looking at these rows) and "unseen" (measured once).
"""

from __future__ import annotations

import hashlib
import random
import re
import string
from dataclasses import dataclass

ALPHABETS = {
    "a62": string.ascii_letters + string.digits,
    "a52": string.ascii_letters,
    "a36l": string.ascii_lowercase + string.digits,
    "a36u": string.ascii_uppercase + string.digits,
    "low": string.ascii_lowercase,
    "up": string.ascii_uppercase,
    "hex": "0123456789abcdef",
    "HEX": "0123456789ABCDEF",
    "b64": string.ascii_letters + string.digits + "+/",
    "url": string.ascii_letters + string.digits + "-_",
    "b32": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
    "b32l": "abcdefghijklmnopqrstuvwxyz234567",
    "bech": "qpzry9x8gf2tvdw0s3jn54khce6mua7l",
    "b58": "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz",
    "dig": string.digits,
}
SPLIT_SEED = "docpilot-credential-split-2026-12"


@dataclass(frozen=True)
class Kind:
    """One documented credential format."""

    kind: str
    product: str
    env: str  # the name the issuer's docs store it under
    shape: str
    source: str  # where the format is described (the issuer's docs page, by title)
    named: bool = False  # no distinctive prefix: recognisable only by its name

    @property
    def needs_name(self) -> bool:
        """True when the value alone does not say what it is: cases carry its name."""
        return self.named or not literal_prefix(self.shape)


def K(kind: str, product: str, env: str, shape: str, source: str = "") -> Kind:
    return Kind(kind, product, env, shape, source or f"{product} docs: API authentication")


def N(kind: str, product: str, env: str, shape: str, source: str = "") -> Kind:
    return Kind(kind, product, env, shape, source or f"{product} docs: API keys", named=True)


CATALOGUE: tuple[Kind, ...] = (
    # --- Source forges and CI -------------------------------------------------------------
    K("github_classic_pat", "GitHub", "GITHUB_TOKEN", "ghp_{a62:36}",
      "GitHub blog: Behind GitHub's new authentication token formats"),
    K("github_oauth_token", "GitHub", "GH_TOKEN", "gho_{a62:36}"),
    K("github_user_to_server", "GitHub", "GITHUB_TOKEN", "ghu_{a62:36}"),
    K("github_installation_token", "GitHub", "GITHUB_TOKEN", "ghs_{a62:36}"),
    K("github_refresh_token", "GitHub", "GITHUB_REFRESH_TOKEN", "ghr_{a62:76}"),
    K("github_fine_grained_pat", "GitHub", "GITHUB_TOKEN", "github_pat_{a62:22}_{a62:59}",
      "GitHub Docs: Managing your personal access tokens"),
    K("gitlab_pat", "GitLab", "GITLAB_TOKEN", "glpat-{url:20}", "GitLab docs: Token overview"),
    K("gitlab_deploy_token", "GitLab", "CI_DEPLOY_PASSWORD", "gldt-{url:20}"),
    K("gitlab_runner_token", "GitLab", "RUNNER_TOKEN", "glrt-{url:20}"),
    K("gitlab_pipeline_trigger", "GitLab", "TRIGGER_TOKEN", "glptt-{hex:40}"),
    K("gitlab_feed_token", "GitLab", "GITLAB_FEED_TOKEN", "glft-{url:20}"),
    K("gitlab_oauth_secret", "GitLab", "GITLAB_APP_SECRET", "gloas-{hex:64}"),
    K("gitlab_incoming_mail", "GitLab", "INCOMING_EMAIL_TOKEN", "glimt-{a36l:25}"),
    K("gitlab_agent_token", "GitLab", "AGENT_TOKEN", "glagent-{url:50}"),
    K("gitlab_scim_token", "GitLab", "SCIM_TOKEN", "glsoat-{url:20}"),
    K("gitlab_ci_job_token", "GitLab", "CI_JOB_TOKEN", "glcbt-{hex:2}_{url:20}"),
    K("gitlab_feature_flag_client", "GitLab", "UNLEASH_INSTANCE_TOKEN", "glffct-{url:20}"),
    K("bitbucket_app_password", "Bitbucket", "BITBUCKET_APP_PASSWORD", "ATBB{a62:32}"),
    K("bitbucket_access_token", "Bitbucket", "BITBUCKET_TOKEN", "ATCTT3xFfGN0{url:180}"),
    K("atlassian_api_token", "Atlassian", "JIRA_API_TOKEN", "ATATT3xFfGF0{url:170}=",
      "Atlassian support: Manage API tokens for your Atlassian account"),
    K("circleci_pat", "CircleCI", "CIRCLECI_TOKEN", "CCIPAT_{a62:22}_{hex:40}"),
    K("circleci_project_token", "CircleCI", "CIRCLE_PROJECT_TOKEN", "CCIPRJ_{a62:22}_{hex:40}"),
    K("buildkite_agent_token", "Buildkite", "BUILDKITE_AGENT_TOKEN", "bkct_{a62:40}"),
    K("buildkite_user_token", "Buildkite", "BUILDKITE_API_TOKEN", "bkua_{hex:40}"),
    K("sonarqube_user_token", "SonarQube", "SONAR_TOKEN", "squ_{hex:40}"),
    K("sonarqube_project_token", "SonarQube", "SONAR_TOKEN", "sqp_{hex:40}"),
    K("sonarqube_global_token", "SonarQube", "SONAR_TOKEN", "sqa_{hex:40}"),
    K("sourcegraph_token", "Sourcegraph", "SRC_ACCESS_TOKEN", "sgp_{hex:16}_{hex:40}"),
    K("harness_pat", "Harness", "HARNESS_API_KEY", "pat.{url:22}.{hex:24}.{a62:20}"),
    K("codecov_token", "Codecov", "CODECOV_TOKEN", "{uuid}"),
    N("travis_ci_token", "Travis CI", "TRAVIS_API_TOKEN", "{url:22}"),
    N("jenkins_api_token", "Jenkins", "JENKINS_API_TOKEN", "11{hex:32}"),
    N("drone_token", "Drone CI", "DRONE_TOKEN", "{a62:32}"),
    N("gitea_token", "Gitea", "GITEA_TOKEN", "{hex:40}"),
    N("azure_devops_pat", "Azure DevOps", "AZURE_DEVOPS_EXT_PAT", "{a36l:52}"),
    N("appveyor_token", "AppVeyor", "APPVEYOR_API_TOKEN", "v2.{a36l:20}"),
    # --- Package registries and artefact stores ------------------------------------------------
    K("npm_access_token", "npm", "NPM_TOKEN", "npm_{a62:36}", "npm Docs: About access tokens"),
    K("pypi_upload_token", "PyPI", "PYPI_API_TOKEN", "pypi-AgEIcHlwaS5vcmc{url:70}",
      "PyPI help: API tokens"),
    K("testpypi_upload_token", "TestPyPI", "TEST_PYPI_API_TOKEN",
      "pypi-AgENdGVzdC5weXBpLm9yZw{url:70}"),
    K("rubygems_api_key", "RubyGems", "GEM_HOST_API_KEY", "rubygems_{hex:48}"),
    K("nuget_api_key", "NuGet", "NUGET_API_KEY", "oy2{a36l:43}"),
    K("docker_hub_pat", "Docker Hub", "DOCKERHUB_TOKEN", "dckr_pat_{url:27}",
      "Docker Docs: Create and manage access tokens"),
    K("docker_hub_org_token", "Docker Hub", "DOCKER_ORG_TOKEN", "dckr_oat_{url:32}"),
    K("jfrog_api_key", "JFrog Artifactory", "ARTIFACTORY_API_KEY", "AKCp{a62:69}"),
    K("jfrog_reference_token", "JFrog Artifactory", "JFROG_ACCESS_TOKEN",
      "cmVmdGtuOjAxOjE3{a62:48}"),
    K("clojars_token", "Clojars", "CLOJARS_PASSWORD", "CLOJARS_{a36l:60}"),
    K("crates_io_token", "crates.io", "CARGO_REGISTRY_TOKEN", "cio{a62:32}"),
    K("hex_pm_key", "Hex.pm", "HEX_API_KEY", "{hex:32}", ),
    K("pub_dev_token", "pub.dev", "PUB_TOKEN", "{a62:40}"),
    N("cloudsmith_api_key", "Cloudsmith", "CLOUDSMITH_API_KEY", "{hex:40}"),
    N("packagecloud_token", "packagecloud", "PACKAGECLOUD_TOKEN", "{hex:48}"),
    N("quay_robot_token", "Quay", "QUAY_ROBOT_TOKEN", "{a36u:64}"),
    K("octopus_api_key", "Octopus Deploy", "OCTOPUS_API_KEY", "API-{a36u:26}"),
    # --- Cloud providers ---------------------------------------------------------------------
    K("aws_access_key_id", "AWS", "AWS_ACCESS_KEY_ID", "AKIA{b32:16}",
      "AWS IAM User Guide: Unique identifiers (prefixes)"),
    K("aws_temporary_key_id", "AWS", "AWS_ACCESS_KEY_ID", "ASIA{b32:16}"),
    N("aws_secret_access_key", "AWS", "AWS_SECRET_ACCESS_KEY", "{b64:40}",
      "AWS CLI: Configuration and credential file settings"),
    K("aws_bedrock_api_key", "Amazon Bedrock", "AWS_BEARER_TOKEN_BEDROCK",
      "ABSKQmVkcm9ja0FQSUtleS{b64:100}="),
    K("google_api_key", "Google Cloud", "GOOGLE_API_KEY", "AIza{url:35}",
      "Google Cloud docs: Manage API keys"),
    K("google_oauth_client_secret", "Google OAuth", "GOOGLE_CLIENT_SECRET", "GOCSPX-{url:28}"),
    K("google_oauth_access_token", "Google OAuth", "GOOGLE_ACCESS_TOKEN", "ya29.a0{url:150}"),
    K("google_refresh_token", "Google OAuth", "GOOGLE_REFRESH_TOKEN", "1//0{url:99}"),
    K("azure_ad_client_secret", "Microsoft Entra ID", "AZURE_CLIENT_SECRET",
      "{a62:3}8Q~{url:34}", "Microsoft Learn: Add and manage application credentials"),
    K("azure_storage_connection", "Azure Storage", "AZURE_STORAGE_CONNECTION_STRING",
      "DefaultEndpointsProtocol=https;AccountName=st{low:8};AccountKey={b64:86}==;"
      "EndpointSuffix=core.windows.net"),
    K("azure_service_bus_connection", "Azure Service Bus", "SERVICEBUS_CONNECTION",
      "Endpoint=sb://ns{low:6}.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
      "SharedAccessKey={b64:43}="),
    K("azure_cosmos_connection", "Azure Cosmos DB", "COSMOS_CONNECTION_STRING",
      "AccountEndpoint=https://db{low:6}.documents.azure.com:443/;AccountKey={b64:86}==;"),
    K("azure_sas_url", "Azure Storage", "AZURE_SAS_URL",
      "https://st{low:8}.blob.core.windows.net/docs?sv=2022-11-02&ss=b&srt=co&sp=rl"
      "&se=2027-01-01T00:00:00Z&sig={b64:43}%3D"),
    N("azure_openai_key", "Azure OpenAI", "AZURE_OPENAI_API_KEY", "{hex:32}"),
    N("azure_apim_subscription_key", "Azure API Management", "OCP_APIM_SUBSCRIPTION_KEY",
      "{hex:32}"),
    N("azure_function_key", "Azure Functions", "AZURE_FUNCTIONS_KEY", "{url:54}=="),
    N("azure_acr_password", "Azure Container Registry", "ACR_PASSWORD", "{a62:42}+ACR{a62:7}"),
    N("azure_search_admin_key", "Azure AI Search", "AZURE_SEARCH_ADMIN_KEY", "{a62:52}"),
    K("gcp_service_account_json", "Google Cloud", "GOOGLE_APPLICATION_CREDENTIALS",
      '{{"type": "service_account", "project_id": "docs-{low:6}", "private_key_id": "{hex:40}", '
      '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC{b64:200}'
      '\\n-----END PRIVATE KEY-----\\n"}}'),
    K("alibaba_access_key_id", "Alibaba Cloud", "ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI{a62:20}"),
    N("alibaba_access_key_secret", "Alibaba Cloud", "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
      "{a62:30}"),
    K("tencent_secret_id", "Tencent Cloud", "TENCENTCLOUD_SECRET_ID", "AKID{a62:32}"),
    N("tencent_secret_key", "Tencent Cloud", "TENCENTCLOUD_SECRET_KEY", "{a62:32}"),
    K("ibm_cloud_api_key", "IBM Cloud", "IBMCLOUD_API_KEY", "{url:44}"),
    K("yandex_api_key", "Yandex Cloud", "YC_API_KEY", "AQVN{url:35}"),
    K("yandex_oauth_token", "Yandex", "YC_OAUTH_TOKEN", "y0_{url:54}"),
    K("yandex_iam_token", "Yandex Cloud", "YC_IAM_TOKEN", "t1.9euel{url:150}"),
    K("digitalocean_pat", "DigitalOcean", "DIGITALOCEAN_TOKEN", "dop_v1_{hex:64}"),
    K("digitalocean_oauth", "DigitalOcean", "DIGITALOCEAN_ACCESS_TOKEN", "doo_v1_{hex:64}"),
    K("digitalocean_refresh", "DigitalOcean", "DO_REFRESH_TOKEN", "dor_v1_{hex:64}"),
    K("digitalocean_spaces_key", "DigitalOcean Spaces", "SPACES_KEY", "DO00{a36u:16}"),
    N("digitalocean_spaces_secret", "DigitalOcean Spaces", "SPACES_SECRET", "{b64:43}"),
    N("linode_token", "Linode", "LINODE_TOKEN", "{hex:64}"),
    N("vultr_api_key", "Vultr", "VULTR_API_KEY", "{a36u:36}"),
    N("hetzner_token", "Hetzner Cloud", "HCLOUD_TOKEN", "{a62:64}"),
    K("scaleway_access_key", "Scaleway", "SCW_ACCESS_KEY", "SCW{a36u:17}"),
    N("scaleway_secret_key", "Scaleway", "SCW_SECRET_KEY", "{uuid}"),
    N("ovh_application_secret", "OVHcloud", "OVH_APPLICATION_SECRET", "{a36l:32}"),
    K("backblaze_application_key", "Backblaze B2", "B2_APPLICATION_KEY", "K00{a62:28}"),
    N("wasabi_secret_key", "Wasabi", "WASABI_SECRET_KEY", "{a62:40}"),
    N("minio_secret_key", "MinIO", "MINIO_SECRET_KEY", "{a62:40}"),
    N("cloudflare_api_token", "Cloudflare", "CLOUDFLARE_API_TOKEN", "{url:40}",
      "Cloudflare docs: Create API token"),
    N("cloudflare_global_key", "Cloudflare", "CLOUDFLARE_API_KEY", "{hex:37}"),
    K("cloudflare_origin_ca_key", "Cloudflare", "CF_ORIGIN_CA_KEY", "v1.0-{hex:24}-{hex:146}"),
    N("cloudflare_r2_secret", "Cloudflare R2", "R2_SECRET_ACCESS_KEY", "{hex:64}"),
    N("fastly_api_token", "Fastly", "FASTLY_API_TOKEN", "{url:32}"),
    K("akamai_client_token", "Akamai EdgeGrid", "AKAMAI_CLIENT_TOKEN",
      "akab-{a36l:16}-{a36l:16}"),
    N("akamai_client_secret", "Akamai EdgeGrid", "AKAMAI_CLIENT_SECRET", "{b64:43}="),
    K("heroku_api_key", "Heroku", "HEROKU_API_KEY", "HRKU-AA{url:58}"),
    K("fly_io_token", "Fly.io", "FLY_API_TOKEN", "FlyV1 fm2_{b64:180}"),
    K("fly_io_org_token", "Fly.io", "FLY_ORG_TOKEN", "fo1_{url:43}"),
    K("netlify_pat", "Netlify", "NETLIFY_AUTH_TOKEN", "nfp_{a62:36}"),
    K("render_api_key", "Render", "RENDER_API_KEY", "rnd_{a62:32}"),
    N("vercel_token", "Vercel", "VERCEL_TOKEN", "{a62:24}"),
    N("railway_token", "Railway", "RAILWAY_TOKEN", "{uuid}"),
    K("scalingo_token", "Scalingo", "SCALINGO_API_TOKEN", "tk-us-{url:48}"),
    K("openshift_token", "OpenShift", "OPENSHIFT_TOKEN", "sha256~{url:43}"),
    K("tailscale_auth_key", "Tailscale", "TS_AUTHKEY", "tskey-auth-{a62:17}-{a62:32}"),
    K("tailscale_api_key", "Tailscale", "TAILSCALE_API_KEY", "tskey-api-{a62:17}-{a62:32}"),
    K("tailscale_oauth_secret", "Tailscale", "TS_OAUTH_SECRET",
      "tskey-client-{a62:17}-{a62:32}"),
    N("ngrok_authtoken", "ngrok", "NGROK_AUTHTOKEN", "2{a62:26}_{a62:21}"),
    # --- Secrets managers and infrastructure tools --------------------------------------------
    K("vault_service_token", "HashiCorp Vault", "VAULT_TOKEN", "hvs.{url:90}",
      "Vault docs: Tokens (token prefixes)"),
    K("vault_batch_token", "HashiCorp Vault", "VAULT_TOKEN", "hvb.{url:130}"),
    K("terraform_cloud_token", "HCP Terraform", "TF_TOKEN_app_terraform_io",
      "{a62:14}.atlasv1.{url:67}"),
    K("pulumi_access_token", "Pulumi", "PULUMI_ACCESS_TOKEN", "pul-{hex:40}"),
    K("doppler_personal_token", "Doppler", "DOPPLER_TOKEN", "dp.pt.{a62:43}",
      "Doppler docs: Token formats"),
    K("doppler_service_token", "Doppler", "DOPPLER_TOKEN", "dp.st.dev.{a62:40}"),
    K("doppler_cli_token", "Doppler", "DOPPLER_TOKEN", "dp.ct.{a62:40}"),
    K("doppler_scim_token", "Doppler", "DOPPLER_SCIM_TOKEN", "dp.scim.{a62:40}"),
    K("infisical_service_token", "Infisical", "INFISICAL_TOKEN", "st.{uuid}.{hex:32}.{hex:32}"),
    K("onepassword_service_account", "1Password", "OP_SERVICE_ACCOUNT_TOKEN",
      "ops_eyJzaWduSW5BZGRyZXNzIjoi{b64:300}"),
    K("onepassword_secret_key", "1Password", "OP_SECRET_KEY",
      "A3-{a36u:6}-{a36u:6}-{a36u:5}-{a36u:5}-{a36u:5}-{a36u:5}"),
    K("age_secret_key", "age", "SOPS_AGE_KEY", "AGE-SECRET-KEY-1{b32:58}",
      "C2SP age specification"),
    K("wireguard_private_key", "WireGuard", "WG_PRIVATE_KEY", "PrivateKey = {b64:42}{a62:1}="),
    K("ansible_vault_password", "Ansible", "ANSIBLE_VAULT_PASSWORD", "{a62:32}"),
    K("kubernetes_sa_token", "Kubernetes", "KUBE_TOKEN",
"{jwt:RS256}"),
    K("kubeconfig_client_key", "Kubernetes", "KUBECONFIG",
      "client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB{b64:200}"),
    K("docker_config_auth", "Docker", "DOCKER_AUTH_CONFIG",
      '{{"auths": {{"registry.example.org": {{"auth": "{b64:28}"}}}}}}'),
    # --- AI and machine-learning APIs ----------------------------------------------------------
    K("openai_project_key", "OpenAI", "OPENAI_API_KEY", "sk-proj-{url:74}T3BlbkFJ{url:74}",
      "OpenAI API reference: Authentication"),
    K("openai_service_account_key", "OpenAI", "OPENAI_API_KEY",
      "sk-svcacct-{url:58}T3BlbkFJ{url:58}"),
    K("openai_admin_key", "OpenAI", "OPENAI_ADMIN_KEY", "sk-admin-{url:58}T3BlbkFJ{url:58}"),
    K("anthropic_api_key", "Anthropic", "ANTHROPIC_API_KEY", "sk-ant-api03-{url:93}AA",
      "Anthropic docs: API keys"),
    K("anthropic_admin_key", "Anthropic", "ANTHROPIC_ADMIN_KEY", "sk-ant-admin01-{url:93}AA"),
    K("openrouter_api_key", "OpenRouter", "OPENROUTER_API_KEY", "sk-or-v1-{hex:64}"),
    K("deepseek_api_key", "DeepSeek", "DEEPSEEK_API_KEY", "sk-{hex:32}"),
    K("groq_api_key", "Groq", "GROQ_API_KEY", "gsk_{a62:52}"),
    K("xai_api_key", "xAI", "XAI_API_KEY", "xai-{a62:80}"),
    K("perplexity_api_key", "Perplexity", "PERPLEXITY_API_KEY", "pplx-{a62:48}"),
    K("replicate_api_token", "Replicate", "REPLICATE_API_TOKEN", "r8_{a62:37}"),
    K("huggingface_user_token", "Hugging Face", "HF_TOKEN", "hf_{a52:34}",
      "Hugging Face docs: User access tokens"),
    K("huggingface_org_token", "Hugging Face", "HUGGINGFACE_API_KEY", "api_org_{a52:34}"),
    K("langsmith_pat", "LangSmith", "LANGSMITH_API_KEY", "lsv2_pt_{hex:32}_{hex:10}"),
    K("langsmith_service_key", "LangSmith", "LANGSMITH_API_KEY", "lsv2_sk_{hex:32}_{hex:10}"),
    K("langfuse_secret_key", "Langfuse", "LANGFUSE_SECRET_KEY", "sk-lf-{uuid}"),
    K("pinecone_api_key", "Pinecone", "PINECONE_API_KEY", "pcsk_{a62:5}_{a62:63}"),
    K("tavily_api_key", "Tavily", "TAVILY_API_KEY", "tvly-dev-{a62:32}"),
    K("nvidia_api_key", "NVIDIA", "NVIDIA_API_KEY", "nvapi-{url:64}"),
    K("fireworks_api_key", "Fireworks AI", "FIREWORKS_API_KEY", "fw_{a62:24}"),
    K("cerebras_api_key", "Cerebras", "CEREBRAS_API_KEY", "csk-{a36l:48}"),
    K("voyage_api_key", "Voyage AI", "VOYAGE_API_KEY", "pa-{url:43}"),
    K("together_api_key", "Together AI", "TOGETHER_API_KEY", "tgp_v1_{url:43}"),
    K("anyscale_api_key", "Anyscale", "ANYSCALE_API_KEY", "esecret_{a36l:26}"),
    K("elevenlabs_api_key", "ElevenLabs", "ELEVENLABS_API_KEY", "sk_{hex:48}"),
    K("stability_api_key", "Stability AI", "STABILITY_API_KEY", "sk-{a62:48}"),
    K("runpod_api_key", "RunPod", "RUNPOD_API_KEY", "rpa_{a36u:40}"),
    K("jina_api_key", "Jina AI", "JINA_API_KEY", "jina_{hex:32}{url:28}"),
    K("firecrawl_api_key", "Firecrawl", "FIRECRAWL_API_KEY", "fc-{hex:32}"),
    K("e2b_api_key", "E2B", "E2B_API_KEY", "e2b_{hex:40}"),
    K("browserbase_api_key", "Browserbase", "BROWSERBASE_API_KEY", "bb_live_{url:27}"),
    K("modal_token_secret", "Modal", "MODAL_TOKEN_SECRET", "as-{a62:22}"),
    K("helicone_api_key", "Helicone", "HELICONE_API_KEY", "sk-helicone-{a36l:7}-{a36l:7}-{a36l:7}-{a36l:7}"),
    K("deepinfra_token", "DeepInfra", "DEEPINFRA_TOKEN", "{a62:32}"),
    N("mistral_api_key", "Mistral AI", "MISTRAL_API_KEY", "{a62:32}"),
    N("cohere_api_key", "Cohere", "COHERE_API_KEY", "{a62:40}"),
    N("ai21_api_key", "AI21 Labs", "AI21_API_KEY", "{a62:32}"),
    N("assemblyai_api_key", "AssemblyAI", "ASSEMBLYAI_API_KEY", "{hex:32}"),
    N("deepgram_api_key", "Deepgram", "DEEPGRAM_API_KEY", "{hex:40}"),
    N("wandb_api_key", "Weights & Biases", "WANDB_API_KEY", "{hex:40}"),
    N("comet_api_key", "Comet", "COMET_API_KEY", "{a62:25}"),
    N("kaggle_key", "Kaggle", "KAGGLE_KEY", "{hex:32}"),
    N("serpapi_key", "SerpApi", "SERPAPI_API_KEY", "{hex:64}"),
    N("exa_api_key", "Exa", "EXA_API_KEY", "{uuid}"),
    N("qdrant_api_key", "Qdrant Cloud", "QDRANT_API_KEY", "{url:64}"),
    N("weaviate_api_key", "Weaviate Cloud", "WEAVIATE_API_KEY", "{a62:40}"),
    N("roboflow_api_key", "Roboflow", "ROBOFLOW_API_KEY", "{a62:20}"),
    N("clarifai_pat", "Clarifai", "CLARIFAI_PAT", "{hex:32}"),
    # --- Messaging, chat and e-mail ---------------------------------------------------------
    K("slack_bot_token", "Slack", "SLACK_BOT_TOKEN", "xoxb-{dig:11}-{dig:13}-{a62:24}",
      "Slack API docs: Tokens"),
    K("slack_user_token", "Slack", "SLACK_USER_TOKEN", "xoxp-{dig:11}-{dig:11}-{dig:13}-{hex:32}"),
    K("slack_app_token", "Slack", "SLACK_APP_TOKEN", "xapp-1-A{a36u:10}-{dig:13}-{hex:64}"),
    K("slack_config_token", "Slack", "SLACK_CONFIG_TOKEN", "xoxe.xoxp-1-{a62:160}"),
    K("slack_refresh_token", "Slack", "SLACK_REFRESH_TOKEN", "xoxe-1-{a62:140}"),
    K("slack_webhook", "Slack", "SLACK_WEBHOOK_URL",
      "https://hooks.slack.com/services/T{a36u:8}/B{a36u:10}/{a62:24}"),
    K("slack_workflow_webhook", "Slack", "SLACK_WORKFLOW_URL",
      "https://hooks.slack.com/triggers/T{a36u:8}/{dig:13}/{hex:32}"),
    K("discord_bot_token", "Discord", "DISCORD_TOKEN",
      "MT{a62:22}.G{url:5}.{url:38}", "Discord developer docs: Authentication"),
    K("discord_webhook", "Discord", "DISCORD_WEBHOOK_URL",
      "https://discord.com/api/webhooks/{dig:18}/{url:68}"),
    K("teams_webhook", "Microsoft Teams", "TEAMS_WEBHOOK_URL",
      "https://contoso{low:4}.webhook.office.com/webhookb2/{uuid}@{uuid}/IncomingWebhook/"
      "{hex:32}/{uuid}"),
    K("telegram_bot_token", "Telegram", "TELEGRAM_BOT_TOKEN", "{dig:10}:AA{url:33}",
      "Telegram Bot API: Authorizing your bot"),
    K("mattermost_token", "Mattermost", "MM_TOKEN", "{a36l:26}"),
    K("twitch_oauth_token", "Twitch", "TWITCH_OAUTH", "oauth:{a36l:30}"),
    K("line_channel_token", "LINE", "LINE_CHANNEL_ACCESS_TOKEN", "{b64:171}="),
    K("sendgrid_api_key", "SendGrid", "SENDGRID_API_KEY", "SG.{url:22}.{url:43}"),
    K("mailgun_api_key", "Mailgun", "MAILGUN_API_KEY", "key-{hex:32}"),
    K("mailgun_new_key", "Mailgun", "MAILGUN_API_KEY", "{hex:32}-{hex:8}-{hex:8}"),
    K("mailchimp_api_key", "Mailchimp", "MAILCHIMP_API_KEY", "{hex:32}-us{dig:2}"),
    K("mandrill_api_key", "Mandrill", "MANDRILL_API_KEY", "md-{url:22}"),
    K("brevo_api_key", "Brevo", "BREVO_API_KEY", "xkeysib-{hex:64}-{a62:16}"),
    K("brevo_smtp_key", "Brevo", "BREVO_SMTP_KEY", "xsmtpsib-{hex:64}-{a62:16}"),
    K("resend_api_key", "Resend", "RESEND_API_KEY", "re_{a62:8}_{a62:24}"),
    K("mailersend_api_key", "MailerSend", "MAILERSEND_API_TOKEN", "mlsn.{hex:64}"),
    N("postmark_server_token", "Postmark", "POSTMARK_SERVER_TOKEN", "{uuid}"),
    N("sparkpost_api_key", "SparkPost", "SPARKPOST_API_KEY", "{hex:40}"),
    N("mailjet_secret_key", "Mailjet", "MJ_APIKEY_PRIVATE", "{hex:32}"),
    K("twilio_api_key", "Twilio", "TWILIO_API_KEY", "SK{hex:32}"),
    N("twilio_auth_token", "Twilio", "TWILIO_AUTH_TOKEN", "{hex:32}"),
    N("vonage_api_secret", "Vonage", "VONAGE_API_SECRET", "{a62:16}"),
    N("messagebird_key", "MessageBird", "MESSAGEBIRD_ACCESS_KEY", "{a62:25}"),
    N("pusher_secret", "Pusher", "PUSHER_APP_SECRET", "{hex:20}"),
    N("ably_api_key", "Ably", "ABLY_API_KEY", "{a62:6}.{a62:6}:{url:43}"),
    K("fcm_server_key", "Firebase Cloud Messaging", "FCM_SERVER_KEY",
      "AAAA{url:7}:APA91b{url:134}"),
    # --- Payments and commerce -----------------------------------------------------------------
    K("stripe_live_secret", "Stripe", "STRIPE_SECRET_KEY", "sk_live_51{a62:97}",
      "Stripe docs: API keys"),
    K("stripe_test_secret", "Stripe", "STRIPE_SECRET_KEY", "sk_test_51{a62:97}"),
    K("stripe_restricted_key", "Stripe", "STRIPE_RESTRICTED_KEY", "rk_live_51{a62:97}"),
    K("stripe_webhook_secret", "Stripe", "STRIPE_WEBHOOK_SECRET", "whsec_{a62:32}"),
    K("square_access_token", "Square", "SQUARE_ACCESS_TOKEN", "EAAA{url:60}"),
    K("square_oauth_secret", "Square", "SQUARE_APP_SECRET", "sq0csp-{url:43}"),
    K("square_legacy_token", "Square", "SQUARE_ACCESS_TOKEN", "sq0atp-{url:22}"),
    K("shopify_admin_token", "Shopify", "SHOPIFY_ACCESS_TOKEN", "shpat_{hex:32}",
      "Shopify dev docs: About authentication and authorization"),
    K("shopify_custom_app_token", "Shopify", "SHOPIFY_TOKEN", "shpca_{hex:32}"),
    K("shopify_private_app_password", "Shopify", "SHOPIFY_PASSWORD", "shppa_{hex:32}"),
    K("shopify_shared_secret", "Shopify", "SHOPIFY_API_SECRET", "shpss_{hex:32}"),
    K("plaid_access_token", "Plaid", "PLAID_ACCESS_TOKEN", "access-production-{uuid}"),
    N("plaid_secret", "Plaid", "PLAID_SECRET", "{hex:30}"),
    K("braintree_access_token", "Braintree", "BRAINTREE_ACCESS_TOKEN",
      "access_token$production${a36l:16}${hex:32}"),
    K("paystack_secret_key", "Paystack", "PAYSTACK_SECRET_KEY", "sk_live_{hex:40}"),
    K("flutterwave_secret_key", "Flutterwave", "FLW_SECRET_KEY", "FLWSECK-{hex:32}-X"),
    K("flutterwave_test_secret", "Flutterwave", "FLW_SECRET_KEY", "FLWSECK_TEST-{hex:32}-X"),
    N("razorpay_key_secret", "Razorpay", "RAZORPAY_KEY_SECRET", "{a62:24}"),
    K("mollie_live_key", "Mollie", "MOLLIE_API_KEY", "live_{a62:30}"),
    K("mollie_test_key", "Mollie", "MOLLIE_API_KEY", "test_{a62:30}"),
    K("gocardless_token", "GoCardless", "GOCARDLESS_ACCESS_TOKEN", "live_{url:40}"),
    K("checkout_secret_key", "Checkout.com", "CKO_SECRET_KEY", "sk_{uuid}"),
    N("adyen_api_key", "Adyen", "ADYEN_API_KEY", "AQE{url:60}"),
    N("paypal_client_secret", "PayPal", "PAYPAL_CLIENT_SECRET", "E{url:79}"),
    K("shippo_live_token", "Shippo", "SHIPPO_API_TOKEN", "shippo_live_{hex:40}"),
    K("easypost_api_key", "EasyPost", "EASYPOST_API_KEY", "EZAK{hex:54}"),
    K("duffel_api_token", "Duffel", "DUFFEL_ACCESS_TOKEN", "duffel_live_{url:43}"),
    K("lemonsqueezy_key", "Lemon Squeezy", "LEMONSQUEEZY_API_KEY",
"{jwt:RS256}"),
    K("woocommerce_consumer_secret", "WooCommerce", "WC_CONSUMER_SECRET", "cs_{hex:40}"),
    N("coinbase_api_secret", "Coinbase", "COINBASE_API_SECRET", "{a62:32}"),
    N("binance_secret_key", "Binance", "BINANCE_SECRET_KEY", "{a62:64}"),
    # --- Observability and incident tools ------------------------------------------------------
    K("dynatrace_token", "Dynatrace", "DT_API_TOKEN", "dt0c01.{a36u:24}.{a36u:64}"),
    K("newrelic_user_key", "New Relic", "NEW_RELIC_API_KEY", "NRAK-{a36u:27}",
      "New Relic docs: API keys"),
    K("newrelic_insert_key", "New Relic", "NEW_RELIC_INSERT_KEY", "NRII-{url:32}"),
    K("newrelic_license_key", "New Relic", "NEW_RELIC_LICENSE_KEY", "{hex:36}NRAL"),
    K("sentry_user_token", "Sentry", "SENTRY_AUTH_TOKEN", "sntryu_{hex:64}"),
    K("sentry_org_token", "Sentry", "SENTRY_AUTH_TOKEN", "sntrys_eyJpYXQiOjE3{b64:120}"),
    K("sentry_dsn", "Sentry", "SENTRY_DSN",
      "https://{hex:32}:{hex:32}@o{dig:6}.ingest.sentry.io/{dig:7}"),
    K("grafana_service_account", "Grafana", "GRAFANA_TOKEN", "glsa_{a62:32}_{hex:8}"),
    K("grafana_cloud_token", "Grafana Cloud", "GRAFANA_CLOUD_TOKEN",
      "glc_eyJvIjoi{b64:100}"),
    N("datadog_api_key", "Datadog", "DD_API_KEY", "{hex:32}", "Datadog docs: API and application keys"),
    N("datadog_app_key", "Datadog", "DD_APP_KEY", "{hex:40}"),
    K("honeycomb_ingest_key", "Honeycomb", "HONEYCOMB_API_KEY", "hcaik_{a36l:58}"),
    N("honeycomb_config_key", "Honeycomb", "HONEYCOMB_WRITEKEY", "{a62:22}"),
    N("rollbar_token", "Rollbar", "ROLLBAR_ACCESS_TOKEN", "{hex:32}"),
    N("bugsnag_api_key", "Bugsnag", "BUGSNAG_API_KEY", "{hex:32}"),
    N("pagerduty_api_key", "PagerDuty", "PAGERDUTY_API_TOKEN", "u+{url:18}"),
    N("opsgenie_api_key", "Opsgenie", "OPSGENIE_API_KEY", "{uuid}"),
    N("logzio_token", "Logz.io", "LOGZIO_TOKEN", "{a52:32}"),
    N("lightstep_token", "Lightstep", "LS_ACCESS_TOKEN", "{b64:84}"),
    N("elastic_api_key", "Elastic", "ELASTIC_API_KEY", "{b64:58}=="),
    K("posthog_personal_key", "PostHog", "POSTHOG_PERSONAL_API_KEY", "phx_{a62:43}"),
    N("mixpanel_secret", "Mixpanel", "MIXPANEL_API_SECRET", "{hex:32}"),
    N("amplitude_secret_key", "Amplitude", "AMPLITUDE_SECRET_KEY", "{hex:32}"),
    N("segment_write_key", "Segment", "SEGMENT_WRITE_KEY", "{a62:32}"),
    K("launchdarkly_sdk_key", "LaunchDarkly", "LAUNCHDARKLY_SDK_KEY", "sdk-{uuid}"),
    K("launchdarkly_api_token", "LaunchDarkly", "LAUNCHDARKLY_ACCESS_TOKEN", "api-{uuid}"),
    N("statuspage_api_key", "Statuspage", "STATUSPAGE_API_KEY", "{uuid}"),
    N("checkly_api_key", "Checkly", "CHECKLY_API_KEY", "cu_{hex:32}"),
    # --- Productivity, CRM and content -------------------------------------------------------
    K("linear_api_key", "Linear", "LINEAR_API_KEY", "lin_api_{a62:40}"),
    K("notion_token", "Notion", "NOTION_TOKEN", "ntn_{dig:11}{a62:35}"),
    K("notion_legacy_token", "Notion", "NOTION_API_KEY", "secret_{a62:43}"),
    K("postman_api_key", "Postman", "POSTMAN_API_KEY", "PMAK-{hex:24}-{hex:34}"),
    K("figma_pat", "Figma", "FIGMA_TOKEN", "figd_{url:40}"),
    K("airtable_pat", "Airtable", "AIRTABLE_TOKEN", "pat{a62:14}.{hex:64}"),
    K("contentful_pat", "Contentful", "CONTENTFUL_MANAGEMENT_TOKEN", "CFPAT-{url:43}"),
    K("dropbox_access_token", "Dropbox", "DROPBOX_ACCESS_TOKEN", "sl.{url:135}"),
    K("dropbox_new_token", "Dropbox", "DROPBOX_TOKEN", "sl.u.{url:200}"),
    K("hubspot_private_app", "HubSpot", "HUBSPOT_ACCESS_TOKEN", "pat-na1-{uuid}"),
    K("intercom_access_token", "Intercom", "INTERCOM_ACCESS_TOKEN", "dG9rOj{b64:54}="),
    K("asana_pat", "Asana", "ASANA_ACCESS_TOKEN", "2/{dig:16}/{dig:16}:{hex:32}"),
    K("typeform_token", "Typeform", "TYPEFORM_TOKEN", "tfp_{url:44}_{a62:14}"),
    K("mapbox_secret_token", "Mapbox", "MAPBOX_SECRET_TOKEN",
      "sk.eyJ1IjoiZG9jc{a62:20}IiwiYSI6I{a62:26}.{url:22}"),
    K("frameio_token", "Frame.io", "FRAMEIO_TOKEN", "fio-u-{url:64}"),
    K("readme_api_key", "ReadMe", "README_API_KEY", "rdme_{a36l:70}"),
    K("prefect_api_key", "Prefect", "PREFECT_API_KEY", "pnu_{a62:36}"),
    K("infracost_api_key", "Infracost", "INFRACOST_API_KEY", "ico-{a62:32}"),
    K("dbt_cloud_token", "dbt Cloud", "DBT_CLOUD_API_TOKEN", "dbtc_{url:50}"),
    K("retool_api_key", "Retool", "RETOOL_API_KEY", "retool_{a62:36}"),
    K("riot_games_key", "Riot Games", "RIOT_API_KEY", "RGAPI-{uuid}"),
    K("salesforce_access_token", "Salesforce", "SF_ACCESS_TOKEN",
      "00D{a62:12}!{a62:96}"),
    K("zoom_jwt", "Zoom", "ZOOM_TOKEN",
"{jwt:HS256}"),
    K("calendly_pat", "Calendly", "CALENDLY_TOKEN",
"{jwt:ES256}"),
    N("okta_api_token", "Okta", "OKTA_API_TOKEN", "00{url:40}"),
    N("auth0_client_secret", "Auth0", "AUTH0_CLIENT_SECRET", "{url:64}"),
    K("clerk_secret_key", "Clerk", "CLERK_SECRET_KEY", "sk_live_{a62:46}"),
    N("algolia_admin_key", "Algolia", "ALGOLIA_ADMIN_API_KEY", "{hex:32}"),
    N("trello_token", "Trello", "TRELLO_TOKEN", "ATTA{hex:64}{hex:8}"),
    N("zendesk_api_token", "Zendesk", "ZENDESK_API_TOKEN", "{a62:40}"),
    N("freshdesk_api_key", "Freshdesk", "FRESHDESK_API_KEY", "{a62:20}"),
    N("spotify_client_secret", "Spotify", "SPOTIFY_CLIENT_SECRET", "{hex:32}"),
    N("steam_web_api_key", "Steam", "STEAM_API_KEY", "{HEX:32}"),
    N("contentstack_token", "Contentstack", "CONTENTSTACK_MANAGEMENT_TOKEN", "cs{hex:32}"),
    N("sanity_api_token", "Sanity", "SANITY_API_TOKEN", "sk{a62:180}"),
    N("storyblok_token", "Storyblok", "STORYBLOK_TOKEN", "{a62:24}tt"),
    N("prismic_token", "Prismic", "PRISMIC_ACCESS_TOKEN",
      "MC5{b64:40}.{url:40}"),
    N("github_app_client_secret", "GitHub", "GITHUB_CLIENT_SECRET", "{hex:40}"),
    N("gitlab_webhook_secret", "GitLab", "GITLAB_WEBHOOK_SECRET", "{a62:32}"),
    N("zapier_webhook_secret", "Zapier", "ZAPIER_SECRET", "{a62:32}"),
    K("zapier_webhook", "Zapier", "ZAPIER_WEBHOOK_URL",
      "https://hooks.zapier.com/hooks/catch/{dig:7}/{a36l:6}/"),
    # --- Databases and data platforms ------------------------------------------------------
    K("postgres_url", "PostgreSQL", "DATABASE_URL",
      "postgresql://app_{low:5}:{a62:20}@db.internal:5432/docs"),
    K("mysql_url", "MySQL", "DATABASE_URL", "mysql://root:{a62:16}@127.0.0.1:3306/wiki"),
    K("mongodb_srv_url", "MongoDB Atlas", "MONGODB_URI",
      "mongodb+srv://docs{low:4}:{a62:16}@cluster0.{a36l:5}.mongodb.net/?retryWrites=true"),
    K("redis_url", "Redis", "REDIS_URL", "redis://default:{a62:32}@redis-{dig:5}.cloud.redislabs.com:{dig:5}"),
    K("amqp_url", "RabbitMQ", "CLOUDAMQP_URL", "amqps://{low:8}:{url:32}@hawk.rmq.cloudamqp.com/{low:8}"),
    K("neon_password", "Neon", "DATABASE_URL",
      "postgresql://neondb_owner:npg_{a62:12}@ep-{low:6}-{low:5}-a1b2c3d4.eu-central-1.aws.neon.tech/neondb"),
    K("supabase_access_token", "Supabase", "SUPABASE_ACCESS_TOKEN", "sbp_{hex:40}"),
    K("supabase_secret_key", "Supabase", "SUPABASE_SECRET_KEY", "sb_secret_{url:32}"),
    K("planetscale_password", "PlanetScale", "PLANETSCALE_PASSWORD", "pscale_pw_{url:43}"),
    K("planetscale_token", "PlanetScale", "PLANETSCALE_SERVICE_TOKEN", "pscale_tkn_{url:43}"),
    K("planetscale_oauth", "PlanetScale", "PLANETSCALE_OAUTH_TOKEN", "pscale_oauth_{url:43}"),
    K("databricks_pat", "Databricks", "DATABRICKS_TOKEN", "dapi{hex:32}"),
    K("clickhouse_cloud_key", "ClickHouse Cloud", "CLICKHOUSE_KEY_SECRET", "4b1d{a62:38}"),
    N("snowflake_password", "Snowflake", "SNOWFLAKE_PASSWORD", "{a62:12}#{dig:3}Qx"),
    N("confluent_api_secret", "Confluent Cloud", "CONFLUENT_CLOUD_API_SECRET", "{url:64}"),
    N("upstash_redis_token", "Upstash", "UPSTASH_REDIS_REST_TOKEN", "A{url:60}="),
    N("mongodb_atlas_private_key", "MongoDB Atlas", "MONGODB_ATLAS_PRIVATE_KEY", "{uuid}"),
    N("influxdb_token", "InfluxDB", "INFLUXDB_TOKEN", "{url:86}=="),
    N("firebase_database_secret", "Firebase", "FIREBASE_DATABASE_SECRET", "{a62:40}"),
    N("pinata_jwt_secret", "Pinata", "PINATA_API_SECRET", "{hex:64}"),
    # --- Signing keys, application secrets and crypto ----------------------------------------
    K("pem_rsa_private_key", "OpenSSL", "TLS_KEY",
      "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA{b64:48}\n{b64:64}\n{b64:64}\n"
      "-----END RSA PRIVATE KEY-----"),
    K("openssh_private_key", "OpenSSH", "SSH_PRIVATE_KEY",
      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ{b64:22}\n"
      "{b64:64}\n-----END OPENSSH PRIVATE KEY-----"),
    K("pgp_private_key", "OpenPGP", "GPG_PRIVATE_KEY",
      "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQVYBGR{b64:57}\n{b64:64}\n{b64:64}\n"
      "-----END PGP PRIVATE KEY BLOCK-----"),
    K("ec_private_key", "OpenSSL", "EC_KEY",
      "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI{b64:55}\n{b64:64}\n-----END EC PRIVATE KEY-----"),
    K("openvpn_static_key", "OpenVPN", "OPENVPN_TLS_AUTH",
      "-----BEGIN OpenVPN Static key V1-----\n{hex:32}\n{hex:32}\n{hex:32}\n{hex:32}\n"
      "-----END OpenVPN Static key V1-----"),
    K("putty_private_key", "PuTTY", "PPK",
      "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\n"
      "Public-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI{b64:40}\nPrivate-Lines: 1\n{b64:44}"),
    K("jwt_hs256_session", "JWT", "SESSION_TOKEN",
"{jwt:HS256}"),
    K("nostr_secret_key", "Nostr", "NOSTR_NSEC", "nsec1{bech:58}"),
    K("bitcoin_wif_key", "Bitcoin", "BTC_PRIVATE_KEY", "L{b58:51}"),
    N("ethereum_private_key", "Ethereum", "ETH_PRIVATE_KEY", "0x{hex:64}"),
    K("laravel_app_key", "Laravel", "APP_KEY", "base64:{b64:43}="),
    N("django_secret_key", "Django", "DJANGO_SECRET_KEY", "django-insecure-{a36l:20}!{a36l:8}#{a36l:20}"),
    N("rails_secret_key_base", "Rails", "SECRET_KEY_BASE", "{hex:128}"),
    N("rails_master_key", "Rails", "RAILS_MASTER_KEY", "{hex:32}"),
    N("flask_secret_key", "Flask", "FLASK_SECRET_KEY", "{hex:48}"),
    N("nextauth_secret", "Auth.js", "NEXTAUTH_SECRET", "{b64:43}="),
    N("jwt_signing_secret", "JWT", "JWT_SECRET", "{a62:48}"),
    N("encryption_key", "application", "ENCRYPTION_KEY", "{hex:64}"),
    N("webhook_signing_secret", "application", "WEBHOOK_SECRET", "{a62:40}"),
    N("session_secret", "Express", "SESSION_SECRET", "{url:48}"),
    N("github_webhook_secret", "GitHub", "GITHUB_WEBHOOK_SECRET", "{hex:40}"),
    K("npmrc_auth_token", "npm", "NPM_CONFIG", "//registry.npmjs.org/:_authToken={uuid}"),
    K("pip_index_credentials", "pip", "PIP_INDEX_URL",
      "https://__token__:{a62:40}@pypi.internal.example.net/simple/"),
    K("git_credential_url", "Git", "GIT_REMOTE",
      "https://x-access-token:{a62:40}@git.internal.org/docs/site.git"),
    K("basic_auth_header", "HTTP", "AUTH_HEADER", "Authorization: Basic {basic}"),
    K("bearer_header", "HTTP", "AUTH_HEADER", "Authorization: Bearer {url:48}"),
    K("api_key_header", "HTTP", "API_HEADER", "X-API-Key: {a62:40}"),
    N("generic_api_secret", "the service", "API_SECRET", "{a62:40}"),
    N("generic_client_secret", "OAuth", "CLIENT_SECRET", "{url:40}"),
    N("generic_access_token", "the API", "ACCESS_TOKEN", "{a62:64}"),
    N("generic_private_token", "the API", "PRIVATE_TOKEN", "{a62:20}"),
)


def split_of(kind: str) -> str:
    """'written' or 'unseen', by a seeded hash of the kind's id (about half each)."""
    digest = hashlib.sha256(f"{SPLIT_SEED}:{kind}".encode()).digest()
    return "written" if digest[0] % 2 == 0 else "unseen"


_PART = re.compile(r"\{(\w+)(?::(\w+)(?:-(\d+))?)?\}|\{\{|\}\}")


def _jwt(alg: str, rng: random.Random) -> str:
    """A signed-looking JWT: a real JSON header and claims, a random signature."""
    import base64
    import json

    def part(data: dict[str, object]) -> str:
        raw = json.dumps(data, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    claims = {"iss": "https://auth.service.test", "sub": f"u{rng.randrange(10**9)}",
              "iat": 1760000000 + rng.randrange(10**7), "scope": "read write"}
    sig = "".join(rng.choice(ALPHABETS["url"]) for _ in range(43 if alg == "HS256" else 86))
    return f"{part({'alg': alg, 'typ': 'JWT'})}.{part(claims)}.{sig}"


def fill(shape: str, rng: random.Random) -> str:
    """A fresh random value in `shape` (see the module docstring)."""

    def one(m: re.Match[str]) -> str:
        if m.group() == "{{":
            return "{"
        if m.group() == "}}":
            return "}"
        name = m.group(1)
        if name == "uuid":
            h = "".join(rng.choice(ALPHABETS["hex"]) for _ in range(32))
            return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"
        if name == "jwt":
            return _jwt(m.group(2) or "HS256", rng)
        if name == "basic":
            import base64

            user = "".join(rng.choice(ALPHABETS["low"]) for _ in range(6))
            pw = "".join(rng.choice(ALPHABETS["a62"]) for _ in range(14))
            return base64.b64encode(f"{user}:{pw}".encode()).decode()
        low = int(m.group(2))
        high = int(m.group(3) or low)
        n = rng.randint(low, high)
        return "".join(rng.choice(ALPHABETS[name]) for _ in range(n))

    return _PART.sub(one, shape)


def literal_prefix(shape: str) -> str:
    """The fixed text a shape starts with (empty for a named kind's bare value)."""
    m = _PART.search(shape)
    return shape[: m.start()] if m else shape


def short_prefix(shape: str) -> str:
    """The prefix a reader would keep when writing a placeholder: up to the first separator
    ("pypi-" of "pypi-AgEIcHlwaS5vcmc…", "sk." of "sk.eyJ…")."""
    prefix = literal_prefix(shape)
    cut = min((prefix.find(c) for c in "_-.:" if 0 < prefix.find(c) < len(prefix) - 1),
              default=-1)
    return prefix[: cut + 1] if cut >= 0 else prefix


def literal_text(shape: str) -> str:
    """The shape's fixed parts, joined: where its syntax (":", "=", "//") shows."""
    return _PART.sub("", shape)
