//! Response headers that vary from one request to the next while the application sees the same
//! answer: they do not count when a re-recorded interaction is compared with the stored one.

/// Response headers whose values change on every request although nothing the application sees
/// changed (`*` stands for any run of characters, `-` included). A re-recorded interaction that
/// differs from the stored one only in these headers and in its timing is
/// [the same](super::Interaction::same_apart_from_noise), so its stored line is kept byte for byte
/// and re-recording a real API does not rewrite every line.
///
/// | headers | why they vary |
/// |---|---|
/// | `date` | the server's clock |
/// | `x-request-id`, `request-id`, `x-amzn-requestid`, `apim-request-id`, `cf-ray` | a new id per request (OpenAI, Anthropic, AWS Bedrock, Azure OpenAI, Cloudflare in front of most APIs) |
/// | `openai-processing-ms`, `x-envoy-upstream-service-time`, `server-timing`, `x-amzn-bedrock-invocation-latency` | how long this request took |
/// | `x-ratelimit-remaining*`, `x-ratelimit-reset*` | rate-limit counters and their countdowns (OpenAI, Groq, OpenRouter, Azure OpenAI) |
/// | `anthropic-ratelimit-*-remaining`, `anthropic-ratelimit-*-reset` | Anthropic's counters and reset times |
/// | `ratelimit-remaining`, `ratelimit-reset` | the IETF draft's counters |
/// | `retry-after`, `retry-after-ms` | a countdown to the next reset; the status and body that say why still count |
///
/// The limits themselves (`x-ratelimit-limit-*`, `anthropic-ratelimit-*-limit`) and every other
/// header still count. Only kept headers are compared at all: a cassette stores what
/// [`KEPT_RESPONSE_HEADERS`](super::KEPT_RESPONSE_HEADERS) and the user name.
pub const VOLATILE_RESPONSE_HEADERS: &[&str] = &[
    "date",
    // Request ids.
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "apim-request-id",
    "cf-ray",
    // Processing times.
    "openai-processing-ms",
    "x-envoy-upstream-service-time",
    "server-timing",
    "x-amzn-bedrock-invocation-latency",
    // Rate-limit counters and resets.
    "x-ratelimit-remaining*",
    "x-ratelimit-reset*",
    "anthropic-ratelimit-*-remaining",
    "anthropic-ratelimit-*-reset",
    "ratelimit-remaining",
    "ratelimit-reset",
    "retry-after",
    "retry-after-ms",
];

/// Whether a response header is on [`VOLATILE_RESPONSE_HEADERS`] (the name in any case).
pub fn is_volatile_response_header(name: &str) -> bool {
    on_header_list(VOLATILE_RESPONSE_HEADERS, name)
}

/// Whether a header name (in any case) matches one of the lower-case `patterns`, where one `*`
/// stands for any run of characters: the header lists' one matcher.
pub(crate) fn on_header_list(patterns: &[&str], name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    patterns
        .iter()
        .any(|pattern| match pattern.split_once('*') {
            Some((prefix, suffix)) => {
                name.len() >= prefix.len() + suffix.len()
                    && name.starts_with(prefix)
                    && name.ends_with(suffix)
            }
            None => name == *pattern,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headers_of_real_answers_are_volatile_or_not_as_the_table_says() {
        // The kept headers of an OpenAI and an Anthropic answer, and some of other APIs.
        let table = [
            ("date", true),
            ("Date", true),
            ("x-request-id", true),
            ("request-id", true),
            ("x-amzn-RequestId", true),
            ("apim-request-id", true),
            ("cf-ray", true),
            ("openai-processing-ms", true),
            ("x-envoy-upstream-service-time", true),
            ("server-timing", true),
            ("x-amzn-bedrock-invocation-latency", true),
            ("x-ratelimit-remaining-requests", true),
            ("x-ratelimit-remaining-tokens", true),
            ("x-ratelimit-reset-requests", true),
            ("x-ratelimit-reset-tokens", true),
            ("x-ratelimit-remaining", true),
            ("x-ratelimit-reset", true),
            ("anthropic-ratelimit-requests-remaining", true),
            ("anthropic-ratelimit-requests-reset", true),
            ("anthropic-ratelimit-input-tokens-remaining", true),
            ("anthropic-ratelimit-output-tokens-reset", true),
            ("ratelimit-remaining", true),
            ("retry-after", true),
            ("retry-after-ms", true),
            // What the application may act on, and what does not vary per request.
            ("content-type", false),
            ("x-ratelimit-limit-requests", false),
            ("x-ratelimit-limit-tokens", false),
            ("anthropic-ratelimit-requests-limit", false),
            ("anthropic-ratelimit-tokens-limit", false),
            ("openai-version", false),
            ("openai-organization", false),
            ("x-should-retry", false),
            ("anthropic-ratelimit-remaining", false),
            ("request-ids", false),
            ("", false),
        ];
        for (name, volatile) in table {
            assert_eq!(is_volatile_response_header(name), volatile, "{name}");
        }
    }
}
