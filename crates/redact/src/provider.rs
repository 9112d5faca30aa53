//! Provider token formats: credentials known by a fixed prefix, caught bare in
//! any text with no name nearby.
//!
//! One table, [`RULES`]: a prefix, the characters its body is made of and the
//! body's least length. The prefixes follow gitleaks' default rules whose
//! token starts with a fixed prefix, and a few more formats (Google, Stripe
//! webhooks, xAI, Groq, Replicate, Discord webhooks). A rule fires only where a
//! word starts (the text scan checks that), when the body that follows is at
//! least `min` bytes of its characters; the rest of the word goes with it.
//! Prose that merely names a prefix (`dapibus`, `MSG.`, `sk_live_ keys`) has no
//! such body and stays.
//!
//! The text scan stops at one pair of bytes of each prefix, its anchor: the
//! pair least likely in prose and code (see [`commonness`]), chosen at compile
//! time, so that `api_org_` stops the scan at `i_`, not at every `ap`. [`add_stops`] marks the anchors in
//! the scan's table at compile time, and [`INDEX`] maps each anchor to the few
//! rules that hold it, so a stop costs one look-up, a look back of a few bytes
//! and a prefix comparison or two. A rule looks ahead at most its body's least
//! length (or, with `needs`, its window) when it does not fire, and past the
//! whole token when it does, so the scan stays linear.

use crate::step;

/// `a-z`.
const LOWER: u16 = 1;
/// `A-Z`.
const UPPER: u16 = 1 << 1;
/// `0-9`.
const DIGIT: u16 = 1 << 2;
/// `a-f`.
const HEX_LOWER: u16 = 1 << 3;
/// `A-F`.
const HEX_UPPER: u16 = 1 << 4;
const DASH: u16 = 1 << 5;
const UNDERSCORE: u16 = 1 << 6;
const DOT: u16 = 1 << 7;
const SLASH: u16 = 1 << 8;
const PLUS: u16 = 1 << 9;
const EQUALS: u16 = 1 << 10;
const TILDE: u16 = 1 << 11;
const PERCENT: u16 = 1 << 12;
const AT: u16 = 1 << 13;

const ALNUM: u16 = LOWER | UPPER | DIGIT;
/// `[A-Za-z0-9_-]`: base64url, and the characters of a word.
const WORD: u16 = ALNUM | DASH | UNDERSCORE;
/// `[0-9a-fA-F]`.
const HEX: u16 = DIGIT | HEX_LOWER | HEX_UPPER;
/// `[A-Z0-9]`.
const UPPER_DIGIT: u16 = UPPER | DIGIT;
/// `[A-Za-z0-9+/=]`: base64 with its padding.
const BASE64: u16 = ALNUM | PLUS | SLASH | EQUALS;
/// The path of a webhook URL.
const PATH: u16 = WORD | SLASH | PLUS;

static CHARS: [u16; 256] = chars();

const fn chars() -> [u16; 256] {
    let mut t = [0u16; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = match b {
            b'a'..=b'f' => LOWER | HEX_LOWER,
            b'g'..=b'z' => LOWER,
            b'A'..=b'F' => UPPER | HEX_UPPER,
            b'G'..=b'Z' => UPPER,
            b'0'..=b'9' => DIGIT,
            b'-' => DASH,
            b'_' => UNDERSCORE,
            b'.' => DOT,
            b'/' => SLASH,
            b'+' => PLUS,
            b'=' => EQUALS,
            b'~' => TILDE,
            b'%' => PERCENT,
            b'@' => AT,
            _ => 0,
        };
        c += 1;
    }
    t
}

#[inline]
pub(crate) fn is(c: u8, set: u16) -> bool {
    CHARS[usize::from(c)] & set != 0
}

/// One provider format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rule {
    /// The gitleaks rule it stands for (or the provider, for formats gitleaks
    /// has no rule for): what the final gate names when it finds one.
    pub(crate) id: &'static str,
    /// The fixed start of the token, two bytes or more.
    pub(crate) prefix: &'static str,
    /// Whether the prefix matches in any ASCII case.
    pub(crate) any_case: bool,
    /// The characters of the body that follows the prefix.
    pub(crate) body: u16,
    /// The least length of the body.
    pub(crate) min: usize,
    /// `(byte, from, to)`: the first `byte` of the body must sit at an offset
    /// in `from..=to` (a token with a separator at a known place).
    pub(crate) needs: Option<(u8, usize, usize)>,
    /// Whether the prefix stays and only the body goes (a webhook URL keeps its
    /// host and the kind of hook).
    pub(crate) keep_prefix: bool,
}

const fn rule(id: &'static str, prefix: &'static str, body: u16, min: usize) -> Rule {
    Rule {
        id,
        prefix,
        any_case: false,
        body,
        min,
        needs: None,
        keep_prefix: false,
    }
}

impl Rule {
    const fn any_case(self) -> Rule {
        Rule {
            any_case: true,
            ..self
        }
    }

    const fn needs(self, byte: u8, from: usize, to: usize) -> Rule {
        Rule {
            needs: Some((byte, from, to)),
            ..self
        }
    }

    const fn keep_prefix(self) -> Rule {
        Rule {
            keep_prefix: true,
            ..self
        }
    }
}

/// Every provider format, by gitleaks rule id. The least lengths are those of
/// gitleaks, capped at 40 so that a token cut short is still caught.
pub(crate) const RULES: &[Rule] = &[
    rule("1password-secret-key", "A3-", UPPER_DIGIT | DASH, 30),
    rule("1password-service-account-token", "ops_eyJ", BASE64, 40),
    rule("adobe-client-secret", "p8e-", ALNUM, 32),
    rule("age-secret-key", "AGE-SECRET-KEY-1", UPPER_DIGIT, 40),
    rule("alibaba-access-key-id", "LTAI", ALNUM, 20),
    // OpenAI (`sk-proj-`, `sk-svcacct-`, `sk-admin-`, legacy `sk-`) and
    // Anthropic (`sk-ant-api03-`, `sk-ant-admin01-`).
    rule("openai-api-key", "sk-", WORD, 20),
    rule("artifactory-api-key", "AKCp", ALNUM, 40),
    rule("artifactory-reference-token", "cmVmd", ALNUM, 40),
    rule(
        "authress-service-client-access-key",
        "authress_",
        BASE64 | WORD | DOT,
        40,
    )
    .needs(b'.', 5, 30),
    rule(
        "authress-service-client-access-key",
        "scauth_",
        BASE64 | WORD | DOT,
        40,
    )
    .needs(b'.', 5, 30),
    rule(
        "authress-service-client-access-key",
        "sc_",
        BASE64 | WORD | DOT,
        40,
    )
    .needs(b'.', 5, 30),
    rule(
        "authress-service-client-access-key",
        "ext_",
        BASE64 | WORD | DOT,
        40,
    )
    .needs(b'.', 5, 30),
    rule("aws-access-token", "AKIA", UPPER_DIGIT, 16),
    rule("aws-access-token", "ASIA", UPPER_DIGIT, 16),
    rule("aws-access-token", "ABIA", UPPER_DIGIT, 16),
    rule("aws-access-token", "ACCA", UPPER_DIGIT, 16),
    rule("aws-access-token", "A3T", UPPER_DIGIT, 17),
    rule("aws-amazon-bedrock-api-key-long-lived", "ABSK", BASE64, 40),
    rule(
        "aws-amazon-bedrock-api-key-short-lived",
        "bedrock-api-key-",
        BASE64,
        20,
    ),
    rule("clickhouse-cloud-api-secret-key", "4b1d", ALNUM, 38),
    rule("clojars-api-token", "CLOJARS_", ALNUM, 40).any_case(),
    rule("cloudflare-origin-ca-key", "v1.0-", HEX | DASH, 40),
    rule("databricks-api-token", "dapi", HEX, 32),
    rule("digitalocean-access-token", "doo_v1_", HEX, 40),
    rule("digitalocean-pat", "dop_v1_", HEX, 40),
    rule("digitalocean-refresh-token", "dor_v1_", HEX, 40).any_case(),
    rule("doppler-api-token", "dp.pt.", ALNUM, 40),
    rule("duffel-api-token", "duffel_test_", WORD | EQUALS, 40),
    rule("duffel-api-token", "duffel_live_", WORD | EQUALS, 40),
    rule("dynatrace-api-token", "dt0c01.", ALNUM | DOT, 40).needs(b'.', 24, 24),
    rule("easypost-api-token", "EZAK", ALNUM, 40),
    rule("easypost-test-api-token", "EZTK", ALNUM, 40),
    rule("facebook-page-access-token", "EAAM", ALNUM, 40),
    rule("facebook-page-access-token", "EAAC", ALNUM, 40),
    rule(
        "flutterwave-encryption-key",
        "FLWSECK_TEST-",
        ALNUM | DASH,
        12,
    ),
    rule("flutterwave-public-key", "FLWPUBK_TEST-", ALNUM | DASH, 32),
    rule("flyio-access-token", "fo1_", WORD, 40),
    rule("flyio-access-token", "fm1a_", BASE64, 40),
    rule("flyio-access-token", "fm1r_", BASE64, 40),
    rule("flyio-access-token", "fm2_", BASE64, 40),
    rule("frameio-api-token", "fio-u-", WORD | EQUALS, 40),
    rule("gcp-api-key", "AIza", WORD, 30),
    rule("github-pat", "ghp_", WORD, 20),
    rule("github-oauth", "gho_", WORD, 20),
    rule("github-app-token", "ghu_", WORD, 20),
    rule("github-app-token", "ghs_", WORD, 20),
    rule("github-refresh-token", "ghr_", WORD, 20),
    rule("github-fine-grained-pat", "github_pat_", WORD, 20),
    rule("gitlab-cicd-job-token", "glcbt-", WORD, 20),
    rule("gitlab-deploy-token", "gldt-", WORD, 20),
    rule("gitlab-feature-flag-client-token", "glffct-", WORD, 20),
    rule("gitlab-feed-token", "glft-", WORD, 20),
    rule("gitlab-incoming-mail-token", "glimt-", WORD, 25),
    rule("gitlab-kubernetes-agent-token", "glagent-", WORD, 40),
    rule("gitlab-oauth-app-secret", "gloas-", WORD, 40),
    // `glpat-` also stands for gitlab-pat-routable (`glpat-….01…`).
    rule("gitlab-pat", "glpat-", WORD | DOT, 16),
    rule("gitlab-ptt", "glptt-", HEX, 40),
    rule("gitlab-rrt", "GR1348941", WORD, 20),
    // `glrt-` also stands for gitlab-runner-authentication-token-routable.
    rule(
        "gitlab-runner-authentication-token",
        "glrt-",
        WORD | DOT,
        20,
    ),
    rule("gitlab-scim-token", "glsoat-", WORD, 20),
    rule("gitlab-session-cookie", "_gitlab_session=", ALNUM, 32).keep_prefix(),
    rule("grafana-api-key", "eyJrIjoi", BASE64, 40),
    rule("grafana-cloud-api-token", "glc_", BASE64, 32).any_case(),
    rule(
        "grafana-service-account-token",
        "glsa_",
        ALNUM | UNDERSCORE,
        40,
    )
    .any_case(),
    rule("harness-api-key", "pat.", WORD | DOT, 40).needs(b'.', 22, 22),
    rule("harness-api-key", "sat.", WORD | DOT, 40).needs(b'.', 22, 22),
    rule("heroku-api-key-v2", "HRKU-AA", WORD, 40),
    rule("huggingface-access-token", "hf_", WORD, 30),
    rule("huggingface-organization-api-token", "api_org_", ALNUM, 30),
    rule("infracost-api-token", "ico-", ALNUM, 32),
    rule("intra42-client-secret", "s-s4t2ud-", HEX, 40),
    rule("intra42-client-secret", "s-s4t2af-", HEX, 40),
    rule("jwt-base64", "ZXlK", BASE64, 40),
    rule("linear-api-key", "lin_api_", ALNUM, 40),
    rule("lob-api-key", "live_", HEX, 35),
    rule("lob-api-key", "test_", HEX, 35),
    rule("lob-pub-api-key", "live_pub_", HEX, 31),
    rule("lob-pub-api-key", "test_pub_", HEX, 31),
    rule("mailgun-private-api-token", "key-", HEX, 32),
    rule("mailgun-pub-key", "pubkey-", HEX, 32),
    rule("mapbox-api-token", "pk.", ALNUM | DOT, 60).needs(b'.', 60, 60),
    rule(
        "microsoft-teams-webhook",
        "webhook.office.com/webhookb2/",
        PATH | AT,
        20,
    )
    .keep_prefix(),
    rule("new-relic-browser-api-token", "NRJS-", HEX, 19),
    rule("new-relic-insert-key", "NRII-", WORD, 32),
    rule("new-relic-user-api-key", "NRAK-", ALNUM, 27),
    rule("defined-networking-api-token", "dnkey-", WORD | EQUALS, 40),
    rule("notion-api-token", "ntn_", ALNUM, 40),
    rule("npm-access-token", "npm_", WORD, 30).any_case(),
    rule("octopus-deploy-api-key", "API-", UPPER_DIGIT, 26),
    rule("openshift-user-token", "sha256~", WORD, 40),
    rule("perplexity-api-key", "pplx-", ALNUM, 40),
    rule("plaid-api-token", "access-sandbox-", HEX | DASH, 32),
    rule("plaid-api-token", "access-development-", HEX | DASH, 32),
    rule("plaid-api-token", "access-production-", HEX | DASH, 32),
    rule(
        "planetscale-api-token",
        "pscale_tkn_",
        WORD | DOT | EQUALS,
        32,
    ),
    rule(
        "planetscale-oauth-token",
        "pscale_oauth_",
        WORD | DOT | EQUALS,
        32,
    ),
    rule(
        "planetscale-password",
        "pscale_pw_",
        WORD | DOT | EQUALS,
        32,
    )
    .any_case(),
    rule("postman-api-token", "PMAK-", HEX | DASH, 40),
    rule("prefect-api-token", "pnu_", ALNUM, 36),
    rule("pulumi-api-token", "pul-", HEX, 40),
    rule("pypi-upload-token", "pypi-AgE", WORD, 50),
    rule("readme-api-token", "rdme_", ALNUM, 40),
    rule("rubygems-api-token", "rubygems_", HEX, 40),
    rule("scalingo-api-token", "tk-us-", WORD, 40),
    rule("sendgrid-api-token", "SG.", WORD | DOT | EQUALS, 40).needs(b'.', 22, 22),
    rule("sendinblue-api-token", "xkeysib-", ALNUM | DASH, 40),
    rule("sentry-org-token", "sntrys_", BASE64 | UNDERSCORE, 40),
    rule("sentry-user-token", "sntryu_", HEX, 40),
    rule("settlemint-application-access-token", "sm_aat_", ALNUM, 16),
    rule("settlemint-personal-access-token", "sm_pat_", ALNUM, 16),
    rule("settlemint-service-access-token", "sm_sat_", ALNUM, 16),
    rule("shippo-api-token", "shippo_live_", HEX, 40),
    rule("shippo-api-token", "shippo_test_", HEX, 40),
    rule("shopify-access-token", "shpat_", HEX, 32),
    rule("shopify-custom-access-token", "shpca_", HEX, 32),
    rule("shopify-private-app-access-token", "shppa_", HEX, 32),
    rule("shopify-shared-secret", "shpss_", HEX, 32),
    rule("slack-app-token", "xapp-", WORD, 20).any_case(),
    rule("slack-bot-token", "xoxb-", WORD, 10),
    rule("slack-user-token", "xoxp-", WORD, 10),
    rule("slack-user-token", "xoxe-", WORD, 10).any_case(),
    rule("slack-legacy-workspace-token", "xoxa-", WORD, 10),
    rule("slack-legacy-workspace-token", "xoxr-", WORD, 10),
    rule("slack-legacy-token", "xoxs-", WORD, 10),
    rule("slack-legacy-token", "xoxo-", WORD, 10),
    rule("slack-config-access-token", "xoxe.xoxb-", WORD, 40).any_case(),
    rule("slack-config-access-token", "xoxe.xoxp-", WORD, 40).any_case(),
    rule("slack-webhook-url", "hooks.slack.com/services/", PATH, 20).keep_prefix(),
    rule("slack-webhook-url", "hooks.slack.com/workflows/", PATH, 20).keep_prefix(),
    rule("slack-webhook-url", "hooks.slack.com/triggers/", PATH, 20).keep_prefix(),
    rule("sourcegraph-access-token", "sgp_", ALNUM | UNDERSCORE, 40),
    rule("square-access-token", "EAAA", WORD, 22),
    rule("square-access-token", "sq0atp-", WORD, 22),
    rule("square-oauth-secret", "sq0csp-", WORD, 22),
    rule("stripe-access-token", "sk_live_", ALNUM, 10),
    rule("stripe-access-token", "sk_test_", ALNUM, 10),
    rule("stripe-access-token", "sk_prod_", ALNUM, 10),
    rule("stripe-access-token", "rk_live_", ALNUM, 10),
    rule("stripe-access-token", "rk_test_", ALNUM, 10),
    rule("stripe-access-token", "rk_prod_", ALNUM, 10),
    rule("stripe-webhook-secret", "whsec_", BASE64, 24),
    rule("twilio-api-key", "SK", HEX, 32),
    rule("typeform-api-token", "tfp_", WORD | DOT | EQUALS, 40),
    rule("vault-batch-token", "hvb.", WORD, 40),
    rule("vault-service-token", "hvs.", WORD, 40),
    rule("yandex-access-token", "t1.", WORD | DOT | EQUALS, 60),
    rule("yandex-api-key", "AQVN", WORD, 35),
    rule("yandex-aws-access-token", "YC", WORD, 38),
    // Formats gitleaks has no rule for.
    rule("google-oauth-access-token", "ya29.", WORD | DOT, 30),
    rule("google-oauth-refresh-token", "1//", WORD, 30),
    rule("xai-api-key", "xai-", ALNUM, 40),
    rule("groq-api-key", "gsk_", ALNUM, 40),
    rule("replicate-api-token", "r8_", ALNUM, 30),
    rule("discord-webhook-url", "discord.com/api/webhooks/", PATH, 20).keep_prefix(),
    rule(
        "discord-webhook-url",
        "discordapp.com/api/webhooks/",
        PATH,
        20,
    )
    .keep_prefix(),
];

/// The rule of a token found at `at` in `data` (where the text rules put
/// their placeholder: after the prefix of a rule that keeps it, else at the
/// token's start), the longest prefix winning; `None` when no rule's prefix
/// is there (a JWT).
pub(crate) fn rule_at(data: &[u8], at: usize) -> Option<&'static str> {
    let same = |a: &[u8], b: &[u8], any_case: bool| {
        a.len() == b.len()
            && if any_case {
                a.eq_ignore_ascii_case(b)
            } else {
                a == b
            }
    };
    RULES
        .iter()
        .filter(|rule| {
            let p = rule.prefix.as_bytes();
            if rule.keep_prefix {
                at >= p.len() && same(&data[at - p.len()..at], p, rule.any_case)
            } else {
                data.len() - at >= p.len() && same(&data[at..at + p.len()], p, rule.any_case)
            }
        })
        .max_by_key(|rule| rule.prefix.len())
        .map(|rule| rule.id)
}

/// Query and connection-string parameters whose value is a credential in any
/// text: Azure's shared access signature `sig=` (also inside a
/// `SharedAccessSignature=`), with the least length of its value.
const PARAMS: &[(&[u8], usize)] = &[(b"sig", 16)];

/// The most rules that share the first two bytes of their prefix.
const BUCKET: usize = 16;

/// Rules by their anchor.
pub(crate) struct Index {
    /// Per pair of bytes `(first << 8) | second`: 0, or 1 + the bucket of the
    /// rules whose anchor is that pair.
    pair: [u8; 65536],
    buckets: [[u8; BUCKET]; 255],
    lens: [u8; 255],
    /// Per rule, where its anchor sits in its prefix.
    anchor: [u8; RULES.len()],
}

/// How often a pair of bytes meets the scan in prose and code, roughly: the
/// lower, the better an anchor. `_`, `-` or `~` next to a digit or a capital
/// (`K_`, `3-`) and two capitals are rare, and so are a few pairs of small
/// letters (see [`rare`]); `_` or `-` next to a small letter (snake_case,
/// kebab-case, UUIDs)
/// and a digit next to a letter (hex) are common; two small letters are the
/// most common of all.
const fn punct(c: u8) -> bool {
    matches!(c, b'_' | b'-' | b'~')
}

const fn loud(c: u8) -> bool {
    c.is_ascii_digit() || c.is_ascii_uppercase()
}

/// Pairs of small letters that English and code seldom hold: with `q`, `j`
/// or `z`, and Slack's `xo`, Brevo's `xk`, Perplexity's `lx`.
const fn rare(a: u8, b: u8) -> bool {
    matches!(a, b'q' | b'j' | b'z')
        || matches!(b, b'q' | b'j' | b'z')
        || matches!((a, b), (b'x', b'o') | (b'x', b'k') | (b'l', b'x'))
}

const fn commonness(a: u8, b: u8) -> u8 {
    let (da, db) = (a.is_ascii_digit(), b.is_ascii_digit());
    if a == b':' || a == b'=' {
        // The scan's separators: never an anchor.
        255
    } else if (punct(a) && loud(b)) || (loud(a) && punct(b)) {
        0
    } else if (a.is_ascii_uppercase() && b.is_ascii_uppercase())
        || (a.is_ascii_lowercase() && b.is_ascii_lowercase() && rare(a, b))
    {
        1
    } else if punct(a) || punct(b) || da != db {
        2
    } else if matches!(a, b'.' | b'/')
        || matches!(b, b'.' | b'/')
        || a.is_ascii_uppercase()
        || b.is_ascii_uppercase()
    {
        3
    } else if da {
        4
    } else {
        5
    }
}

/// Where the anchor of `prefix` sits: the least common pair, the first of those.
const fn anchor_of(prefix: &[u8]) -> usize {
    let mut best = 0;
    let mut k = 1;
    while k + 1 < prefix.len() {
        if commonness(prefix[k], prefix[k + 1]) < commonness(prefix[best], prefix[best + 1]) {
            best = k;
        }
        k += 1;
    }
    assert!(
        commonness(prefix[best], prefix[best + 1]) < 255,
        "a prefix needs a pair that is not a separator"
    );
    best
}

static INDEX: Index = index();

/// The case variants of a prefix's first byte or second byte.
const fn variants(c: u8, any_case: bool) -> [u8; 2] {
    if any_case {
        [c.to_ascii_lowercase(), c.to_ascii_uppercase()]
    } else {
        [c, c]
    }
}

const fn index() -> Index {
    let mut ix = Index {
        pair: [0; 65536],
        buckets: [[0; BUCKET]; 255],
        lens: [0; 255],
        anchor: [0; RULES.len()],
    };
    let mut buckets = 0;
    let mut r = 0;
    while r < RULES.len() {
        let rule = &RULES[r];
        let p = rule.prefix.as_bytes();
        assert!(p.len() >= 2, "a prefix is two bytes or more");
        let k = anchor_of(p);
        ix.anchor[r] = k as u8;
        let firsts = variants(p[k], rule.any_case);
        let seconds = variants(p[k + 1], rule.any_case);
        let mut f = 0;
        while f < 2 {
            let mut s = 0;
            while s < 2 {
                let key = ((firsts[f] as usize) << 8) | seconds[s] as usize;
                if ix.pair[key] == 0 {
                    assert!(buckets < 255, "too many pairs of first bytes");
                    buckets += 1;
                    ix.pair[key] = buckets as u8;
                }
                let b = ix.pair[key] as usize - 1;
                let len = ix.lens[b] as usize;
                // The same variant twice (a prefix without letters) adds nothing.
                if len == 0 || ix.buckets[b][len - 1] as usize != r {
                    assert!(len < BUCKET, "too many rules share their first two bytes");
                    ix.buckets[b][len] = r as u8;
                    ix.lens[b] = len as u8 + 1;
                }
                s += 1;
            }
            f += 1;
        }
        r += 1;
    }
    assert!(RULES.len() <= 256, "rule numbers are bytes");
    ix
}

/// Marks in the text scan's table of pairs every rule's anchor.
pub(crate) const fn add_stops(stops: &mut [u8; 65536], flag: u8) {
    let mut r = 0;
    while r < RULES.len() {
        let rule = &RULES[r];
        let p = rule.prefix.as_bytes();
        let k = anchor_of(p);
        let firsts = variants(p[k], rule.any_case);
        let seconds = variants(p[k + 1], rule.any_case);
        let mut f = 0;
        while f < 2 {
            let mut s = 0;
            while s < 2 {
                stops[((firsts[f] as usize) << 8) | seconds[s] as usize] |= flag;
                s += 1;
            }
            f += 1;
        }
        r += 1;
    }
}

/// The provider token whose anchor sits at `b[i]`, starting where a word
/// starts, at or after `floor`: the span to redact (without the prefix for a
/// rule that keeps it).
pub(crate) fn token(b: &[u8], i: usize, floor: usize) -> Option<(usize, usize)> {
    let (&first, &second) = (b.get(i)?, b.get(i + 1)?);
    let bucket = INDEX.pair[(usize::from(first) << 8) | usize::from(second)];
    if bucket == 0 {
        return None;
    }
    let bucket = usize::from(bucket - 1);
    let rules = &INDEX.buckets[bucket][..usize::from(INDEX.lens[bucket])];
    step!(rules.len());
    rules.iter().find_map(|&r| {
        let s = i.checked_sub(usize::from(INDEX.anchor[usize::from(r)]))?;
        // Right after a span, the placeholder's `]` comes before the word.
        if s < floor || (s > floor && is(b[s - 1], WORD)) {
            return None;
        }
        matches(&RULES[usize::from(r)], b, s)
    })
}

fn matches(rule: &Rule, b: &[u8], s: usize) -> Option<(usize, usize)> {
    let p = rule.prefix.as_bytes();
    let head = b.get(s..s + p.len())?;
    step!(p.len());
    if head != p && !(rule.any_case && head.eq_ignore_ascii_case(p)) {
        return None;
    }
    let body = s + p.len();
    if let Some((byte, from, to)) = rule.needs {
        let limit = b.len().min(body + to + 1);
        let mut i = body;
        while i < limit && b[i] != byte && is(b[i], rule.body) {
            i += 1;
        }
        step!(i - body + 1);
        if i == limit || b[i] != byte || i - body < from {
            return None;
        }
    }
    let mut end = body;
    while end < b.len() && is(b[end], rule.body) {
        end += 1;
    }
    step!(end - body + 1);
    // A sentence may end right after the token.
    while end > body && b[end - 1] == b'.' {
        end -= 1;
    }
    if end - body < rule.min {
        return None;
    }
    // The rest of the word goes too.
    let from = end;
    while end < b.len() && is(b[end], WORD) {
        end += 1;
    }
    step!(end - from + 1);
    Some((if rule.keep_prefix { body } else { s }, end))
}

/// The value of a provider parameter (see [`PARAMS`]) given at the `=` at
/// `b[eq]`, when the parameter's name starts at or after `floor`.
pub(crate) fn param_value(b: &[u8], eq: usize, floor: usize) -> Option<(usize, usize)> {
    PARAMS.iter().find_map(|&(name, min)| {
        let start = eq.checked_sub(name.len())?;
        if start < floor
            || !b[start..eq].eq_ignore_ascii_case(name)
            || (start > 0 && (is(b[start - 1], WORD) || b[start - 1] == b'.'))
        {
            return None;
        }
        let v = eq + 1;
        let mut end = v;
        while end < b.len() && is(b[end], BASE64 | PERCENT) {
            end += 1;
        }
        step!(end - v + name.len() + 1);
        (end - v >= min).then_some((v, end))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_reachable_from_its_first_two_bytes() {
        let mut stops = [0; 65536];
        add_stops(&mut stops, 1);
        for (r, rule) in RULES.iter().enumerate() {
            let p = rule.prefix.as_bytes();
            let k = usize::from(INDEX.anchor[r]);
            let key = (usize::from(p[k]) << 8) | usize::from(p[k + 1]);
            assert!(stops[key] != 0, "{}", rule.prefix);
            let bucket = usize::from(INDEX.pair[key]);
            assert!(bucket > 0, "{}", rule.prefix);
            let rules = &INDEX.buckets[bucket - 1][..usize::from(INDEX.lens[bucket - 1])];
            assert!(rules.contains(&(r as u8)), "{}: {}", rule.id, rule.prefix);
        }
    }

    #[test]
    fn a_rule_needs_its_body() {
        // The anchor of the rule that fires, or of the first with that prefix.
        let at = |text: &str| {
            let k = RULES
                .iter()
                .zip(INDEX.anchor)
                .filter(|(rule, _)| text.starts_with(rule.prefix))
                .map(|(_, k)| usize::from(k))
                .next()
                .unwrap_or(0);
            token(text.as_bytes(), k, 0)
        };
        assert_eq!(at("dapibus lorem"), None);
        assert_eq!(
            at("dapi0123456789abcdef0123456789abcdef rest"),
            Some((0, 36))
        );
        assert_eq!(at("SG.msg"), None);
        assert_eq!(at("r8_ is a prefix"), None);
        let hook = "hooks.slack.com/services/T0000000/B0000000/abcdefghijklmnop";
        assert_eq!(at(hook), Some((25, hook.len())));
        assert_eq!(at("pat.terns.are.not.tokens.at.all.even.long.ones"), None);
    }

    #[test]
    fn a_parameter_needs_its_name_alone() {
        let b = b"?sv=1&sig=abcdefghijklmnopqrstuvwx%3D&se=2";
        assert_eq!(param_value(b, 9, 0), Some((10, 37)));
        assert_eq!(param_value(b"xsig=abcdefghijklmnopqrstuvwx", 4, 0), None);
        assert_eq!(param_value(b"sig=short", 3, 0), None);
    }
}
