//! Provider token formats, bare in text with no name nearby.
//!
//! `ROWS` are rows of the redaction table (see `table.rs` for the modes), one
//! leak row and one keep row or more per provider. `GITLEAKS` lists, per rule
//! of gitleaks' default configuration whose token starts with a fixed prefix, a
//! made-up secret of that rule's form (generated from a template, never a real
//! key); every secret is tried in every code and config form of gitleaks'
//! sample generator, written here as `FORMS`, and must not survive
//! `redact_text`, `redact_json_text` or `redact_value`. `NOT_BARE` lists the
//! other gitleaks rules and why they are not caught bare.
//!
//! Data only: the tests that read it are in `tables.rs`, and the CLI's tests
//! drive the same rows and forms through `calltape redact`.

pub(crate) const ROWS: &[(&str, &str, &str)] = &[
    // ---- Stripe ----
    (
        "text",
        "charge with sk_live_XeeSaOcAa2qtQPoOAST0VqJ8 now",
        "charge with [REDACTED] now",
    ),
    (
        "text",
        "test key sk_test_vmTByO9mQB5JzmqoBddmotSO.",
        "test key [REDACTED].",
    ),
    (
        "text",
        "restricted rk_live_yTXQayFWfbhpL8kSlCSF1yAh",
        "restricted [REDACTED]",
    ),
    ("text", "(rk_test_XPfJTTUddEKseu2Ac13fA61e)", "([REDACTED])"),
    (
        "text",
        "webhook secret whsec_syHd1nFfpB9JtO6Z5XCiCqpZmUegq80y",
        "webhook secret [REDACTED]",
    ),
    (
        "text",
        "Stripe keys start with sk_live_ or sk_test_, webhooks with whsec_.",
        "Stripe keys start with sk_live_ or sk_test_, webhooks with whsec_.",
    ),
    (
        "text",
        "call sk_test_helper() in tests",
        "call sk_test_helper() in tests",
    ),
    // ---- Google ----
    (
        "text",
        "got ya29.rp10EOUGtFiHPAZoC61HvrD82wZJ5osQPLlAPhP6HGpJRYaCZd4uddQCDBtM from the server",
        "got [REDACTED] from the server",
    ),
    (
        "text",
        "refresh 1//0bqQ79gYGzNHaoGSHdbJ1ZPI4I4ZbgOZLXqf0L3aNqb2BfTkSH2EwyTvfPipe",
        "refresh [REDACTED]",
    ),
    (
        "text",
        "access tokens start with ya29. and refresh tokens with 1//.",
        "access tokens start with ya29. and refresh tokens with 1//.",
    ),
    (
        "text",
        "see ya29.pdf and 1//2 of the cases",
        "see ya29.pdf and 1//2 of the cases",
    ),
    // ---- Slack and Discord ----
    (
        "text",
        "app token xapp-1-AN26I59FGUD-7170858215646-276e6007ac6180c1476806ffb4e53602b9341537b6d252e214456d1b3cd83c6b",
        "app token [REDACTED]",
    ),
    (
        "text",
        "post to https://hooks.slack.com/services/vcXbBWM0F/N8Ya4yDlNax/uqjVChZWBpJaP9UKZDYC3Zo2 now",
        "post to https://hooks.slack.com/services/[REDACTED] now",
    ),
    (
        "text",
        "https://hooks.slack.com/workflows/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",
        "https://hooks.slack.com/workflows/[REDACTED]",
    ),
    (
        "text",
        "https://discord.com/api/webhooks/702023949960018802/UmnFliTcJmb8SknzaiF5sx7JnCTQTp9sc6uUE5005oQYT3p8kyeBHHV4ZR83cS1yNR9A",
        "https://discord.com/api/webhooks/[REDACTED]",
    ),
    (
        "text",
        "https://discordapp.com/api/webhooks/702023949960018802/UmnFliTcJmb8SknzaiF5sx7JnCTQTp9sc6uUE5005oQYT3p8kyeBHHV4ZR83cS1yNR9A",
        "https://discordapp.com/api/webhooks/[REDACTED]",
    ),
    (
        "text",
        "docs at https://hooks.slack.com/services/ and https://discord.com/api/webhooks/",
        "docs at https://hooks.slack.com/services/ and https://discord.com/api/webhooks/",
    ),
    (
        "text",
        "xapp-level tokens are for Socket Mode",
        "xapp-level tokens are for Socket Mode",
    ),
    // ---- SendGrid ----
    (
        "text",
        "mail 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 sent",
        "mail [REDACTED] sent",
    ),
    (
        "text",
        "MSG. SG. keys look like SG.xxxx.yyyy in the docs.",
        "MSG. SG. keys look like SG.xxxx.yyyy in the docs.",
    ),
    // ---- OpenAI and Anthropic ----
    (
        "text",
        "key sk-proj-tQra3HVameY7PmMTKOqLLYv9W9EJBpNwJ7wzoaFsQ8806S4b",
        "key [REDACTED]",
    ),
    (
        "text",
        "key sk-svcacct-VsyUy8ZMVPdBiBWBciaga6lFhJsPiPBLCKQOXfCfI11PUea8",
        "key [REDACTED]",
    ),
    (
        "text",
        "key sk-admin-oXuVPSapA7a4A09N9opboJAN439m6mqIBlG5gMnP87ZRAdD6",
        "key [REDACTED]",
    ),
    (
        "text",
        "key sk-ant-admin01-UvTUsVxPPChSJtQU0WHPFfDToP3RZhJuSgD0WYANWFqUVXbgTPmzH4Mnu5mpAA",
        "key [REDACTED]",
    ),
    (
        "text",
        "project keys start sk-proj- and admin keys sk-ant-admin01-",
        "project keys start sk-proj- and admin keys sk-ant-admin01-",
    ),
    // ---- GitHub ----
    (
        "text",
        "gho_4FlI38bjLv5jn5IMmKzNsuxmdhPNJbnSCGO9 ghu_yzsypX11jzSOo97zrDkGAFqqGK5JCYbXTOjK",
        "[REDACTED] [REDACTED]",
    ),
    (
        "text",
        "ghs_LVsWonZw9vlai3PiTatJWtG8aYfWJYPb7kz0, ghr_bkwypLMbj8EwmYiaGAhnPdqUWzdE8mxjs6LS",
        "[REDACTED], [REDACTED]",
    ),
    (
        "text",
        "tokens named gho_, ghu_, ghs_ and ghr_",
        "tokens named gho_, ghu_, ghs_ and ghr_",
    ),
    // ---- GitLab ----
    (
        "text",
        "deploy gldt-FGnXxVn1g4RmDwNbGR9b runner glrt-PriUE1bd7P6gX3RXhUcg",
        "deploy [REDACTED] runner [REDACTED]",
    ),
    (
        "text",
        "trigger glptt-27a072e9b5b2caf443bc961a985b994ddc0899eb",
        "trigger [REDACTED]",
    ),
    (
        "text",
        "the glrt- prefix and glptt-tokens and gldt-docs",
        "the glrt- prefix and glptt-tokens and gldt-docs",
    ),
    // ---- PyPI, Replicate, Groq, xAI ----
    (
        "text",
        "upload pypi-AgEIcHlwaS5vcmcxf47Tj9VUzlTDwxdKfi9WaNBEVeBRCr3fy2ufpXYPk3T4oZxUY6RtVRNE6M1",
        "upload [REDACTED]",
    ),
    (
        "text",
        "run r8_WTLGgAwaSuwfXXMMzatKYTtFTfwMpckDT8oiP",
        "run [REDACTED]",
    ),
    (
        "text",
        "groq 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",
        "groq [REDACTED]",
    ),
    (
        "text",
        "grok xai-DCSv2okBKAKiGLYZIXG2jhJFAECxmqDAd9Y30Ac4XAcNyHHj1q6NClZyRE2KkxAnTvRFlXA2A1m5uhD9",
        "grok [REDACTED]",
    ),
    (
        "text",
        "pypi-AgE tokens, r8_ tokens, gsk_ keys, xai- keys and the r8_model field",
        "pypi-AgE tokens, r8_ tokens, gsk_ keys, xai- keys and the r8_model field",
    ),
    (
        "text",
        "xai-sdk and gsk_setup are names",
        "xai-sdk and gsk_setup are names",
    ),
    // ---- DigitalOcean, Shopify, Databricks ----
    (
        "text",
        "do dop_v1_6647de8ec9e9057ae884c33fed5b7c528b5fe19b5fbee17098a7f3b1eb496271",
        "do [REDACTED]",
    ),
    (
        "text",
        "shop 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",
        "shop [REDACTED]",
    ),
    (
        "text",
        "databricks dapie47e559b563dafabdba5e2ef29643862 ok",
        "databricks [REDACTED] ok",
    ),
    (
        "text",
        "Lorem ipsum dapibus dolor, dapi, dop_v1_ and shpat_ prefixes",
        "Lorem ipsum dapibus dolor, dapi, dop_v1_ and shpat_ prefixes",
    ),
    // ---- Azure ----
    (
        "text",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=uJ2WMszT1Fz8UGznya3ijvCQJc0UlbcoZbXy4qUrbZLSxksoOfoMMThXRdvf==;EndpointSuffix=core.windows.net",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=[REDACTED];EndpointSuffix=core.windows.net",
    ),
    (
        "text",
        "GET https://acme.blob.core.windows.net/c/b?sv=2022-11-02&ss=b&sp=r&se=2026-12-01&sig=d2D9H8vP1ATibpnIBflDnGT6YnbRBk%3D",
        "GET https://acme.blob.core.windows.net/c/b?sv=2022-11-02&ss=b&sp=r&se=2026-12-01&sig=[REDACTED]",
    ),
    (
        "text",
        "BlobEndpoint=https://acme.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=b&sig=d2D9H8vP1ATibpnIBflDnGT6YnbRBk%3D",
        "BlobEndpoint=https://acme.blob.core.windows.net/;SharedAccessSignature=[REDACTED]&ss=b&sig=[REDACTED]",
    ),
    (
        "text",
        "the sig=short parameter and config=d2D9H8vP1ATibpnIBflDnGT6YnbRBk%3D",
        "the sig=short parameter and config=d2D9H8vP1ATibpnIBflDnGT6YnbRBk%3D",
    ),
    (
        "text",
        "AccountName=acme;EndpointSuffix=core.windows.net",
        "AccountName=acme;EndpointSuffix=core.windows.net",
    ),
    // ---- AWS ----
    (
        "text",
        "GET /o?X-Amz-Security-Token=t6FYPTTv6vsndhgF9eRW1veDgS0dYlaFqhLidHDyWN4ncPwkEh6B9K5qLIf46bRRBHECFD5XouKpkxHc&X-Amz-Date=20261201",
        "GET /o?X-Amz-Security-Token=[REDACTED]&X-Amz-Date=20261201",
    ),
    (
        "text",
        "x-amz-security-token: t6FYPTTv6vsndhgF9eRW1veDgS0dYlaFqhLidHDyWN4ncPwkEh6B9K5qLIf46bRRBHECFD5XouKpkxHc",
        "x-amz-security-token: [REDACTED]",
    ),
    (
        "text",
        "key ASIAJ7QW2XK5ZP4LM3RT in the log",
        "key [REDACTED] in the log",
    ),
    (
        "text",
        "the x-amz-date header and ASIA region names",
        "the x-amz-date header and ASIA region names",
    ),
    // ---- base64 data and code that start like a prefix ----
    (
        "text",
        "data:image/png;base64,iVBORw0KGgo/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+/w==",
        "data:image/png;base64,iVBORw0KGgo/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+/w==",
    ),
    (
        "text",
        "call test_parse_header_with_a_long_descriptive_name() and live_reload",
        "call test_parse_header_with_a_long_descriptive_name() and live_reload",
    ),
    (
        "text",
        "see key-value stores, API-first design and SKU lists",
        "see key-value stores, API-first design and SKU lists",
    ),
    // ---- in JSON ----
    (
        "json",
        "{\"note\":\"charge sk_live_XeeSaOcAa2qtQPoOAST0VqJ8 ok\",\"n\":1}",
        "{\"note\":\"charge [REDACTED] ok\",\"n\":1}",
    ),
    (
        "json",
        "{\"hook\":\"https://hooks.slack.com/services/vcXbBWM0F/N8Ya4yDlNax/uqjVChZWBpJaP9UKZDYC3Zo2\"}",
        "{\"hook\":\"https://hooks.slack.com/services/[REDACTED]\"}",
    ),
    (
        "json",
        "[\"dapie47e559b563dafabdba5e2ef29643862\",\"dapibus\"]",
        "[\"[REDACTED]\",\"dapibus\"]",
    ),
    (
        "json",
        "{\"url\":\"https://a.blob.core.windows.net/c?sv=1&sig=d2D9H8vP1ATibpnIBflDnGT6YnbRBk%3D\"}",
        "{\"url\":\"https://a.blob.core.windows.net/c?sv=1&sig=[REDACTED]\"}",
    ),
    (
        "json",
        "{\"text\":\"Stripe keys start with sk_live_\"}",
        "{\"text\":\"Stripe keys start with sk_live_\"}",
    ),
    (
        "value",
        "{\"log\":[\"ya29.rp10EOUGtFiHPAZoC61HvrD82wZJ5osQPLlAPhP6HGpJRYaCZd4uddQCDBtM\"]}",
        "{\"log\":[\"[REDACTED]\"]}",
    ),
];

/// Per gitleaks rule whose token starts with a fixed prefix: the rule's id and
/// a template of a made-up secret. In a template, `{Xn}` is `n` characters
/// drawn from the set `X`; everything else is literal.
pub(crate) const GITLEAKS: &[(&str, &str)] = &[
    ("1password-secret-key", "A3-{U6}-{U11}-{U5}-{U5}-{U5}"),
    ("1password-service-account-token", "ops_eyJ{B250}"),
    ("adobe-client-secret", "p8e-{a32}"),
    ("age-secret-key", "AGE-SECRET-KEY-1{U58}"),
    ("alibaba-access-key-id", "LTAI{A20}"),
    ("anthropic-admin-api-key", "sk-ant-admin01-{W93}AA"),
    ("anthropic-api-key", "sk-ant-api03-{W93}AA"),
    ("artifactory-api-key", "AKCp{A69}"),
    ("artifactory-reference-token", "cmVmd{A59}"),
    (
        "authress-service-client-access-key",
        "authress_{a10}.{a5}.acc_{a20}.{B40}",
    ),
    (
        "authress-service-client-access-key",
        "sc_{a10}.{a5}.acc-{a20}.{B40}",
    ),
    ("aws-access-token", "AKIA{U16}"),
    ("aws-access-token", "ASIA{U16}"),
    ("aws-access-token", "A3T{U17}"),
    ("aws-amazon-bedrock-api-key-long-lived", "ABSK{B120}"),
    (
        "aws-amazon-bedrock-api-key-short-lived",
        "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t{B80}",
    ),
    ("clickhouse-cloud-api-secret-key", "4b1d{A38}"),
    ("clojars-api-token", "CLOJARS_{a60}"),
    ("cloudflare-origin-ca-key", "v1.0-{h24}-{h146}"),
    ("databricks-api-token", "dapi{h32}"),
    ("digitalocean-access-token", "doo_v1_{h64}"),
    ("digitalocean-pat", "dop_v1_{h64}"),
    ("digitalocean-refresh-token", "dor_v1_{h64}"),
    ("doppler-api-token", "dp.pt.{A43}"),
    ("duffel-api-token", "duffel_live_{W43}"),
    ("dynatrace-api-token", "dt0c01.{A24}.{A64}"),
    ("easypost-api-token", "EZAK{A54}"),
    ("easypost-test-api-token", "EZTK{A54}"),
    ("facebook-page-access-token", "EAAM{A100}"),
    ("flutterwave-encryption-key", "FLWSECK_TEST-{h12}"),
    ("flutterwave-public-key", "FLWPUBK_TEST-{h32}-X"),
    ("flutterwave-secret-key", "FLWSECK_TEST-{h32}-X"),
    ("flyio-access-token", "fo1_{W43}"),
    ("flyio-access-token", "fm2_{B120}"),
    ("frameio-api-token", "fio-u-{W64}"),
    ("gcp-api-key", "AIza{W35}"),
    ("github-app-token", "ghu_{A36}"),
    ("github-app-token", "ghs_{A36}"),
    ("github-fine-grained-pat", "github_pat_{W82}"),
    ("github-oauth", "gho_{A36}"),
    ("github-pat", "ghp_{A36}"),
    ("github-refresh-token", "ghr_{A36}"),
    ("gitlab-cicd-job-token", "glcbt-{A3}_{W20}"),
    ("gitlab-deploy-token", "gldt-{W20}"),
    ("gitlab-feature-flag-client-token", "glffct-{W20}"),
    ("gitlab-feed-token", "glft-{W20}"),
    ("gitlab-incoming-mail-token", "glimt-{W25}"),
    ("gitlab-kubernetes-agent-token", "glagent-{W50}"),
    ("gitlab-oauth-app-secret", "gloas-{W64}"),
    ("gitlab-pat", "glpat-{W20}"),
    ("gitlab-pat-routable", "glpat-{W40}.01{a7}"),
    ("gitlab-ptt", "glptt-{h40}"),
    ("gitlab-rrt", "GR1348941{W20}"),
    ("gitlab-runner-authentication-token", "glrt-{W20}"),
    (
        "gitlab-runner-authentication-token-routable",
        "glrt-t1_{W40}.01{a7}",
    ),
    ("gitlab-scim-token", "glsoat-{W20}"),
    ("gitlab-session-cookie", "_gitlab_session={a32}"),
    ("grafana-api-key", "eyJrIjoi{A80}"),
    ("grafana-cloud-api-token", "glc_{B60}"),
    ("grafana-service-account-token", "glsa_{A32}_{h8}"),
    ("harness-api-key", "pat.{W22}.{A24}.{A20}"),
    ("heroku-api-key-v2", "HRKU-AA{W58}"),
    ("huggingface-access-token", "hf_{L34}"),
    ("huggingface-organization-api-token", "api_org_{L34}"),
    ("infracost-api-token", "ico-{A32}"),
    ("intra42-client-secret", "s-s4t2ud-{h64}"),
    ("jwt-base64", "ZXlKaGJHY2lPaU{B80}"),
    ("linear-api-key", "lin_api_{A40}"),
    ("lob-api-key", "live_{h35}"),
    ("lob-pub-api-key", "test_pub_{h31}"),
    ("mailgun-private-api-token", "key-{h32}"),
    ("mailgun-pub-key", "pubkey-{h32}"),
    ("mapbox-api-token", "pk.{a60}.{a22}"),
    (
        "microsoft-teams-webhook",
        "https://acme.webhook.office.com/webhookb2/{h8}-{h4}-{h4}-{h4}-{h12}@{h8}-{h4}-{h4}-{h4}-{h12}/IncomingWebhook/{h32}/{h8}-{h4}-{h4}-{h4}-{h12}",
    ),
    ("new-relic-browser-api-token", "NRJS-{h19}"),
    ("new-relic-insert-key", "NRII-{W32}"),
    ("new-relic-user-api-key", "NRAK-{A27}"),
    ("defined-networking-api-token", "dnkey-{W26}-{W52}"),
    ("notion-api-token", "ntn_{D11}{A35}"),
    ("npm-access-token", "npm_{A36}"),
    ("octopus-deploy-api-key", "API-{U26}"),
    ("openai-api-key", "sk-proj-{W74}T3BlbkFJ{W74}"),
    ("openshift-user-token", "sha256~{W43}"),
    ("perplexity-api-key", "pplx-{A48}"),
    (
        "plaid-api-token",
        "access-sandbox-{h8}-{h4}-{h4}-{h4}-{h12}",
    ),
    ("planetscale-api-token", "pscale_tkn_{W43}"),
    ("planetscale-oauth-token", "pscale_oauth_{W43}"),
    ("planetscale-password", "pscale_pw_{W43}"),
    ("postman-api-token", "PMAK-{h24}-{h34}"),
    ("prefect-api-token", "pnu_{A36}"),
    ("pulumi-api-token", "pul-{h40}"),
    ("pypi-upload-token", "pypi-AgEIcHlwaS5vcmc{W70}"),
    ("readme-api-token", "rdme_{a70}"),
    ("rubygems-api-token", "rubygems_{h48}"),
    ("scalingo-api-token", "tk-us-{W48}"),
    ("sendgrid-api-token", "SG.{W22}.{W43}"),
    ("sendinblue-api-token", "xkeysib-{h64}-{A16}"),
    (
        "sentry-org-token",
        "sntrys_eyJpYXQiO{B40}LCJyZWdpb25fdXJs{B40}_{B43}",
    ),
    ("sentry-user-token", "sntryu_{h64}"),
    ("settlemint-application-access-token", "sm_aat_{A16}"),
    ("settlemint-personal-access-token", "sm_pat_{A16}"),
    ("settlemint-service-access-token", "sm_sat_{A16}"),
    ("shippo-api-token", "shippo_live_{h40}"),
    ("shopify-access-token", "shpat_{h32}"),
    ("shopify-custom-access-token", "shpca_{h32}"),
    ("shopify-private-app-access-token", "shppa_{h32}"),
    ("shopify-shared-secret", "shpss_{h32}"),
    ("slack-app-token", "xapp-1-A{U10}-{D13}-{a64}"),
    ("slack-bot-token", "xoxb-{D12}-{D13}-{A24}"),
    ("slack-config-access-token", "xoxe.xoxp-1-{U164}"),
    ("slack-config-refresh-token", "xoxe-1-{U146}"),
    ("slack-legacy-bot-token", "xoxb-{D10}-{A24}"),
    ("slack-legacy-token", "xoxs-{D10}-{D10}-{D10}-{h64}"),
    ("slack-legacy-workspace-token", "xoxa-2-{A40}"),
    ("slack-user-token", "xoxp-{D12}-{D12}-{D12}-{A32}"),
    (
        "slack-webhook-url",
        "https://hooks.slack.com/services/{B46}",
    ),
    ("sourcegraph-access-token", "sgp_{h16}_{h40}"),
    ("square-access-token", "sq0atp-{W22}"),
    ("square-access-token", "EAAA{W60}"),
    ("stripe-access-token", "sk_live_{A24}"),
    ("stripe-access-token", "rk_test_{A24}"),
    ("twilio-api-key", "SK{h32}"),
    ("typeform-api-token", "tfp_{W59}"),
    ("vault-batch-token", "hvb.{W150}"),
    ("vault-service-token", "hvs.{W100}"),
    ("yandex-access-token", "t1.{W20}.{W86}"),
    ("yandex-api-key", "AQVN{W36}"),
    ("yandex-aws-access-token", "YC{W38}"),
    // Formats gitleaks has no rule for.
    ("google-oauth-access-token", "ya29.{W120}"),
    ("google-oauth-refresh-token", "1//0{W100}"),
    ("stripe-webhook-secret", "whsec_{B32}"),
    ("xai-api-key", "xai-{A80}"),
    ("groq-api-key", "gsk_{A52}"),
    ("replicate-api-token", "r8_{A37}"),
    (
        "discord-webhook-url",
        "https://discord.com/api/webhooks/{D18}/{W68}",
    ),
];

/// The gitleaks rules that are not caught bare, and why. Rules caught by
/// another text rule (a JWT, a URL's password, a PEM block, a credential
/// name) say which.
pub(crate) const NOT_BARE: &[(&str, &str)] = &[
    (
        "airtable-personnal-access-token",
        "`pat` starts too many words for the scan to stop at, and its `.` sits 17 bytes on",
    ),
    (
        "twitter-bearer-token",
        "22 `A`s is also a run of zero bytes in base64 data (images, audio), which recordings carry",
    ),
    (
        "azure-ad-client-secret",
        "no fixed prefix: the fixed `Q~` sits at the fifth byte",
    ),
    (
        "facebook-access-token",
        "no fixed prefix: an app id of digits, then `|`",
    ),
    (
        "hashicorp-tf-api-token",
        "no fixed prefix: the fixed `.atlasv1.` sits in the middle",
    ),
    (
        "maxmind-license-key",
        "no fixed prefix: the fixed `_mmk` is a suffix",
    ),
    (
        "jwt",
        "caught by the JWT rule (three base64url segments, the first `eyJ`)",
    ),
    (
        "private-key",
        "caught by the PEM block rule, not a prefix of one word",
    ),
    (
        "sidekiq-sensitive-url",
        "caught by the URL rule: the secret is the URL's user:password",
    ),
    (
        "curl-auth-header",
        "a header in a command line: caught by the Authorization rules",
    ),
    (
        "curl-auth-user",
        "`curl -u user:password`: a command-line form, not a token format",
    ),
    (
        "kubernetes-secret-yaml",
        "a YAML document shape, not a token format",
    ),
    (
        "nuget-config-password",
        "an XML name/value form, not a token format",
    ),
    ("pkcs12-file", "a file name rule, no text to match"),
    (
        "freemius-secret-key",
        "`sk_` only after `secret_key =>`: caught by the credential name",
    ),
    (
        "generic-api-key",
        "a credential name and a value: caught by the name rules",
    ),
    (
        "hashicorp-tf-password",
        "a credential name and a value: caught by the name rules",
    ),
    (
        "beamer-api-token",
        "`b_` is too short to stand alone; gitleaks needs the keyword too",
    ),
    (
        "gocardless-api-token",
        "`live_` and word characters is also an identifier; gitleaks needs the keyword too",
    ),
    (
        "okta-access-token",
        "`00` and word characters is also a number; gitleaks needs the keyword too",
    ),
    (
        "sumologic-access-id",
        "`su` is too short to stand alone; gitleaks needs the keyword too",
    ),
    (
        "sonar-api-token",
        "the prefix is optional; gitleaks needs the keyword",
    ),
    (
        "mailchimp-api-key",
        "no fixed prefix: the fixed `-us` is a suffix; gitleaks needs the keyword",
    ),
    (
        "telegram-bot-api-token",
        "no fixed prefix: digits, then `:A`; gitleaks needs the keyword",
    ),
    (
        "dropbox-long-lived-api-token",
        "no fixed prefix: the fixed `AAAAAAAAAA` sits at the twelfth byte",
    ),
    (
        "dropbox-short-lived-api-token",
        "`sl.` is too short to stand alone; gitleaks needs the keyword too",
    ),
    ("heroku-api-key", "a UUID: needs the keyword"),
    ("hubspot-api-key", "a UUID: needs the keyword"),
    ("kucoin-secret-key", "a UUID: needs the keyword"),
    ("messagebird-client-id", "a UUID: needs the keyword"),
    ("sendbird-access-id", "a UUID: needs the keyword"),
    ("snyk-api-token", "a UUID: needs the keyword"),
    ("squarespace-access-token", "a UUID: needs the keyword"),
    (
        "mailgun-signing-key",
        "hex groups with no prefix: needs the keyword",
    ),
    (
        "twitter-access-token",
        "digits, `-`, then letters: needs the keyword",
    ),
    // Random strings of a fixed length, known only by the keyword before them.
    ("adafruit-api-key", KEYWORD),
    ("adobe-client-id", KEYWORD),
    ("airtable-api-key", KEYWORD),
    ("algolia-api-key", KEYWORD),
    ("alibaba-secret-key", KEYWORD),
    ("asana-client-id", KEYWORD),
    ("asana-client-secret", KEYWORD),
    ("atlassian-api-token", KEYWORD),
    ("bitbucket-client-id", KEYWORD),
    ("bitbucket-client-secret", KEYWORD),
    ("bittrex-access-key", KEYWORD),
    ("bittrex-secret-key", KEYWORD),
    ("cisco-meraki-api-key", KEYWORD),
    ("cloudflare-api-key", KEYWORD),
    ("cloudflare-global-api-key", KEYWORD),
    ("codecov-access-token", KEYWORD),
    ("cohere-api-token", KEYWORD),
    ("coinbase-access-token", KEYWORD),
    ("confluent-access-token", KEYWORD),
    ("confluent-secret-key", KEYWORD),
    ("contentful-delivery-api-token", KEYWORD),
    ("datadog-access-token", KEYWORD),
    ("discord-api-token", KEYWORD),
    ("discord-client-id", KEYWORD),
    ("discord-client-secret", KEYWORD),
    ("droneci-access-token", KEYWORD),
    ("dropbox-api-token", KEYWORD),
    ("etsy-access-token", KEYWORD),
    ("facebook-secret", KEYWORD),
    ("fastly-api-token", KEYWORD),
    ("finicity-api-token", KEYWORD),
    ("finicity-client-secret", KEYWORD),
    ("finnhub-access-token", KEYWORD),
    ("flickr-access-token", KEYWORD),
    ("freshbooks-access-token", KEYWORD),
    ("gitter-access-token", KEYWORD),
    ("intercom-api-key", KEYWORD),
    ("jfrog-api-key", KEYWORD),
    ("jfrog-identity-token", KEYWORD),
    ("kraken-access-token", KEYWORD),
    ("kucoin-access-token", KEYWORD),
    ("launchdarkly-access-token", KEYWORD),
    ("linear-client-secret", KEYWORD),
    ("linkedin-client-id", KEYWORD),
    ("linkedin-client-secret", KEYWORD),
    ("looker-client-id", KEYWORD),
    ("looker-client-secret", KEYWORD),
    ("mattermost-access-token", KEYWORD),
    ("messagebird-api-token", KEYWORD),
    ("netlify-access-token", KEYWORD),
    ("new-relic-user-api-id", KEYWORD),
    ("nytimes-access-token", KEYWORD),
    ("plaid-client-id", KEYWORD),
    ("plaid-secret-key", KEYWORD),
    ("privateai-api-token", KEYWORD),
    ("rapidapi-access-token", KEYWORD),
    ("sendbird-access-token", KEYWORD),
    ("sentry-access-token", KEYWORD),
    ("sidekiq-secret", KEYWORD),
    ("sumologic-access-token", KEYWORD),
    ("travisci-access-token", KEYWORD),
    ("twitch-api-token", KEYWORD),
    ("twitter-access-secret", KEYWORD),
    ("twitter-api-key", KEYWORD),
    ("twitter-api-secret", KEYWORD),
    ("zendesk-secret-key", KEYWORD),
];

pub(crate) const KEYWORD: &str = "a random string known only by the keyword before it: caught when that keyword is part of a credential name";

/// The number of rules in the gitleaks default configuration these lists
/// were made from.
pub(crate) const GITLEAKS_RULES: usize = 222;

/// Rows of `GITLEAKS` for formats gitleaks has no rule for.
pub(crate) const NOT_GITLEAKS: &[&str] = &[
    "google-oauth-access-token",
    "google-oauth-refresh-token",
    "stripe-webhook-secret",
    "xai-api-key",
    "groq-api-key",
    "replicate-api-token",
    "discord-webhook-url",
];

/// The code and config forms of gitleaks' sample generator, and bare forms in
/// prose. `{n}` is a name in camelCase, `{N}` the same name in capitals, `{s}`
/// the secret.
pub(crate) const FORMS: &[&str] = &[
    "{n}=\"{s}\"",
    "{n} = \"{s}\"",
    "{n}={s}",
    "{n} = {s}",
    "{\n    \"{n}\": \"{s}\"\n}",
    "{\"config.ini\": \"{N}={s}\\nBACKUP_ENABLED=true\"}",
    "<{n}>\n    {s}\n</{n}>",
    "{n}: {s}",
    "{n}: '{s}'",
    "{n}: \"{s}\"",
    "string {n} = \"{s}\";",
    "var {n} string = \"{s}\"",
    "{n} := \"{s}\"",
    "{n} := `{s}`",
    "String {n} = \"{s}\";",
    "var {n} = \"{s}\"",
    "${n} .= \"{s}\"",
    "{n} = '{s}'",
    "System.setProperty(\"{N}\", \"{s}\")",
    "  \"{n}\" => \"{s}\"",
    "{N} = \"{s}\"",
    "{N} := \"{s}\"",
    "{N} ::= \"{s}\"",
    "{N} :::= \"{s}\"",
    "{N} ?= \"{s}\"",
    "{s}",
    "found {s} in the log",
    "({s})",
    "it was {s}.",
    "[{s}]",
    "'{s}'",
    "`{s}`",
    "q={s}&page=2",
    "{s};next",
    "first line\n{s}\nlast line",
];

/// Names the forms are tried with: a credential name, and names that say
/// nothing, so that only the token's own form can give it away.
pub(crate) const NAMES: &[(&str, &str)] = &[
    ("apiToken", "API_TOKEN"),
    ("setting", "SETTING"),
    ("value", "VALUE"),
];

/// A small deterministic generator, so every run tries the same secrets.
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as usize
    }
}

fn charset(code: char) -> &'static str {
    match code {
        'A' => "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        'a' => "abcdefghijklmnopqrstuvwxyz0123456789",
        'L' => "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        'U' => "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
        'h' => "0123456789abcdef",
        'D' => "0123456789",
        'W' => "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
        'B' => "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        other => panic!("unknown character set {other:?}"),
    }
}

/// The secret a template describes, and its generated pieces (the parts that
/// must never survive).
pub(crate) fn secret(template: &str, rng: &mut Lcg) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = open + rest[open..].find('}').expect("closed {");
        let spec = &rest[open + 1..close];
        let set = charset(spec.chars().next().expect("a set")).as_bytes();
        let n: usize = spec[1..].parse().expect("a length");
        let piece: String = (0..n)
            .map(|_| char::from(set[rng.next() % set.len()]))
            .collect();
        out.push_str(&piece);
        pieces.push(piece);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    // Short pieces (a uuid's groups) may well occur elsewhere; the long ones
    // carry the secret.
    pieces.retain(|p| p.len() >= 8);
    assert!(!pieces.is_empty(), "{template}: no piece of 8 or more");
    (out, pieces)
}
