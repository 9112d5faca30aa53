//! The redaction table: one row per case, `(mode, input, expected)`.
//!
//! Modes:
//! - `name`: `expected` is `redact` or `keep`, the default redactor's decision;
//! - `text`: `Redactor::redact_text(input) == expected`;
//! - `json`: `Redactor::redact_json_text(input) == expected`;
//! - `value`: `input` parsed, `redact_value`, equals `expected` parsed.
//!
//! Every text and JSON row is also checked for idempotence (the expected
//! output redacts to itself) and for borrowing when nothing changes.
//! Adding a case is adding a row.
//!
//! The rows and what they mean; the tests that check them are in
//! `tables.rs`, and the CLI's tests drive the same rows through
//! `calltape redact`.

use std::borrow::Cow;

use calltape_redact::Redactor;
use serde_json::Value;

use super::{table_context, table_json};

pub(crate) const ROWS: &[(&str, &str, &str)] = &[
    // ---- names the rules must redact ----
    ("name", "apiKey", "redact"),
    ("name", "api_key", "redact"),
    ("name", "x-api-key", "redact"),
    ("name", "X_API_KEY", "redact"),
    ("name", "access_token", "redact"),
    ("name", "accessToken", "redact"),
    ("name", "accesstoken", "redact"),
    ("name", "x-amzn-oidc-accesstoken", "redact"),
    ("name", "x-csrftoken", "redact"),
    ("name", "clientSecret", "redact"),
    ("name", "passWord", "redact"),
    ("name", "X-PassWord", "redact"),
    ("name", "passwd", "redact"),
    ("name", "passphrase", "redact"),
    ("name", "x-goog-iap-jwt-assertion", "redact"),
    ("name", "Authorization", "redact"),
    ("name", "X-AuthToken", "redact"),
    ("name", "set-cookie", "redact"),
    ("name", "x-hub-signature-256", "redact"),
    ("name", "pageToken", "keep"),
    ("name", "nextPageToken", "keep"),
    ("name", "APIKey", "redact"),
    ("name", "OAuthToken", "redact"),
    ("name", "oauth2Token", "redact"),
    ("name", "apiKey2", "redact"),
    ("name", "auth", "redact"),
    ("name", "x-auth", "redact"),
    ("name", "proxy-authorization", "redact"),
    ("name", "credential", "redact"),
    ("name", "credentials", "redact"),
    ("name", "aws.credentials.secret", "redact"),
    ("name", "AWS_SECRET_ACCESS_KEY", "redact"),
    ("name", "DB_PASSWORD", "redact"),
    ("name", "GITHUB_TOKEN", "redact"),
    ("name", "private_key", "redact"),
    ("name", "cacheKey", "keep"),
    ("name", "Cookie", "redact"),
    ("name", "signature", "redact"),
    ("name", "jwt", "redact"),
    ("name", "refresh_token", "redact"),
    ("name", "id_token", "redact"),
    ("name", "client_secret", "redact"),
    ("name", "userPassword", "redact"),
    ("name", "newpassword", "redact"),
    ("name", "adminpasswd", "redact"),
    ("name", "openaiapikey", "redact"),
    ("name", "clientsecret", "redact"),
    ("name", "--password", "redact"),
    ("name", "sessionId", "redact"),
    ("name", "session_id", "redact"),
    ("name", "mcp-session-id", "redact"),
    ("name", "Mcp-Session-Id", "redact"),
    ("name", "x-acme-session-id", "redact"),
    ("name", "SessionID", "redact"),
    ("name", "sessionid", "redact"),
    // ---- names the rules must keep ----
    ("name", "maxTokens", "keep"),
    ("name", "tokens", "keep"),
    ("name", "tokenizer", "keep"),
    ("name", "author", "keep"),
    ("name", "authorId", "keep"),
    ("name", "monkey", "keep"),
    ("name", "keyboard", "keep"),
    ("name", "name", "keep"),
    ("name", "price", "keep"),
    ("name", "total_tokens", "keep"),
    ("name", "max_output_tokens", "keep"),
    ("name", "promptTokens", "keep"),
    ("name", "keys", "keep"),
    ("name", "donkey", "keep"),
    ("name", "secretary", "keep"),
    ("name", "authored", "keep"),
    ("name", "session", "keep"),
    ("name", "sessions", "keep"),
    ("name", "requestId", "keep"),
    ("name", "email", "keep"),
    ("name", "", "keep"),
    // ---- Bearer and Basic ----
    (
        "text",
        "Authorization: Bearer abc123def456",
        "Authorization: Bearer [REDACTED]",
    ),
    ("text", "bearer abc123def456", "bearer [REDACTED]"),
    ("text", "BEARER abc123def456", "BEARER [REDACTED]"),
    (
        "text",
        "sent Bearer a1b2c3d4-e5f6 upstream",
        "sent Bearer [REDACTED] upstream",
    ),
    ("text", "Bearer abc/def+ghi==", "Bearer [REDACTED]"),
    ("text", "Bearer abc~123.", "Bearer [REDACTED]."),
    ("text", "sent Bearer abc.def.ghi", "sent Bearer [REDACTED]"),
    ("text", "Bearer e.g.", "Bearer e.g."),
    (
        "text",
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
        "Bearer [REDACTED]",
    ),
    ("text", "Bearer\tMixedCaseTokenValue", "Bearer\t[REDACTED]"),
    ("text", "Basic dXNlcjpwYXNz", "Basic [REDACTED]"),
    ("text", "basic YWxhZGRpbjpvcGVuc2VzYW1l", "basic [REDACTED]"),
    (
        "text",
        "Authorization: Basic dXNlcjpwYXNz",
        "Authorization: Basic [REDACTED]",
    ),
    (
        "text",
        "Authorization: Bearer token",
        "Authorization: Bearer [REDACTED]",
    ),
    ("text", "Authorization: Bearer", "Authorization: [REDACTED]"),
    (
        "text",
        "a Bearer token goes in the header",
        "a Bearer token goes in the header",
    ),
    ("text", "Basic usage", "Basic usage"),
    (
        "text",
        "Bearer tokens expire after an hour.",
        "Bearer tokens expire after an hour.",
    ),
    (
        "text",
        "use the Bearer scheme, not Basic auth",
        "use the Bearer scheme, not Basic auth",
    ),
    (
        "text",
        "a Bearer token-based flow",
        "a Bearer token-based flow",
    ),
    ("text", "Bearer [REDACTED]", "Bearer [REDACTED]"),
    (
        "text",
        "Authorization: Bearer [REDACTED]",
        "Authorization: Bearer [REDACTED]",
    ),
    // ---- JWTs ----
    (
        "text",
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc_DEF-123 sent",
        "token [REDACTED] sent",
    ),
    (
        "text",
        "(eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.)",
        "([REDACTED])",
    ),
    (
        "text",
        "jwe eyJhbGciOiJSU0EifQ.a1.b2.c3.d4 end",
        "jwe [REDACTED] end",
    ),
    (
        "text",
        "cursor eyJvZmZzZXQiOjEwMH0 next",
        "cursor eyJvZmZzZXQiOjEwMH0 next",
    ),
    (
        "text",
        "cursor=eyJvZmZzZXQiOjEwMH0",
        "cursor=eyJvZmZzZXQiOjEwMH0",
    ),
    (
        "text",
        "eyJvZmZzZXQiOjEwMH0.second",
        "eyJvZmZzZXQiOjEwMH0.second",
    ),
    (
        "text",
        "heyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
        "heyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
    ),
    // ---- URLs and connection strings ----
    (
        "text",
        "postgres://user:pass@localhost:5432/db",
        "postgres://[REDACTED]@localhost:5432/db",
    ),
    (
        "text",
        "DATABASE_URL is mongodb+srv://admin:s3cret@cluster0.example.net/app",
        "DATABASE_URL is mongodb+srv://[REDACTED]@cluster0.example.net/app",
    ),
    (
        "text",
        "redis://:p4ss@localhost:6379/0",
        "redis://[REDACTED]@localhost:6379/0",
    ),
    (
        "text",
        "amqp://guest:guest@rabbit:5672/",
        "amqp://[REDACTED]@rabbit:5672/",
    ),
    (
        "text",
        "https://bob:p@ss@example.com/x",
        "https://[REDACTED]@example.com/x",
    ),
    (
        "text",
        "https://[REDACTED]@example.com/x",
        "https://[REDACTED]@example.com/x",
    ),
    (
        "text",
        "https://example.com/path?q=1",
        "https://example.com/path?q=1",
    ),
    (
        "text",
        "https://bob@example.com/",
        "https://bob@example.com/",
    ),
    (
        "text",
        "http://localhost:8080/a:b@c",
        "http://localhost:8080/a:b@c",
    ),
    (
        "text",
        "mail bob@example.com or alice+x@example.org",
        "mail bob@example.com or alice+x@example.org",
    ),
    ("text", "mailto:bob@example.com", "mailto:bob@example.com"),
    (
        "text",
        "Server=db;User Id=sa;Password=abc123;",
        "Server=db;User Id=sa;Password=[REDACTED];",
    ),
    // ---- values given to credential names ----
    (
        "text",
        "GET /cb?access_token=abc123&state=xyz",
        "GET /cb?access_token=[REDACTED]&state=xyz",
    ),
    (
        "text",
        "https://app.example.com/#id_token=abc.def&scope=openid",
        "https://app.example.com/#id_token=[REDACTED]&scope=openid",
    ),
    ("text", "apiKey: \"abc123\"", "apiKey: \"[REDACTED]\""),
    (
        "text",
        "log: {\"password\": \"hunter2\", \"user\": \"bob\"} end",
        "log: {\"password\": \"[REDACTED]\", \"user\": \"bob\"} end",
    ),
    (
        "text",
        "got {\"token\":\"a\\\"b\"}",
        "got {\"token\":\"[REDACTED]\"}",
    ),
    ("text", "TOKEN=abc123", "TOKEN=[REDACTED]"),
    (
        "text",
        "export API_KEY=live-1234",
        "export API_KEY=[REDACTED]",
    ),
    (
        "text",
        "export GITHUB_TOKEN=\"x y\"",
        "export GITHUB_TOKEN=\"[REDACTED]\"",
    ),
    (
        "text",
        "curl -H \"Authorization: Bearer abc123\" https://api.example.com",
        "curl -H \"Authorization: Bearer [REDACTED]\" https://api.example.com",
    ),
    (
        "text",
        "curl -H \"X-Api-Key: abc123\" https://x",
        "curl -H \"X-Api-Key: [REDACTED]\" https://x",
    ),
    (
        "text",
        "curl -H 'Authorization: token abc' x",
        "curl -H 'Authorization: token [REDACTED]' x",
    ),
    ("text", "password: hunter2", "password: [REDACTED]"),
    (
        "text",
        "db:\n  host: localhost\n  password: hunter2\n  port: 5432\n",
        "db:\n  host: localhost\n  password: [REDACTED]\n  port: 5432\n",
    ),
    ("text", "X-Api-Key: abc", "X-Api-Key: [REDACTED]"),
    ("text", "x-api-key:abc", "x-api-key:[REDACTED]"),
    ("text", "{ apiKey: 'x' }", "{ apiKey: '[REDACTED]' }"),
    ("text", "DB_PASSWORD='x'", "DB_PASSWORD='[REDACTED]'"),
    (
        "text",
        "password=abc&user=bob",
        "password=[REDACTED]&user=bob",
    ),
    ("text", "password=abc#frag", "password=[REDACTED]#frag"),
    ("text", "password=abc,next", "password=[REDACTED],next"),
    ("text", "password=abc;next", "password=[REDACTED];next"),
    ("text", "{password=abc}", "{password=[REDACTED]}"),
    ("text", "f(password=abc)", "f(password=[REDACTED])"),
    (
        "text",
        "password=\"abc def\" rest",
        "password=\"[REDACTED]\" rest",
    ),
    ("text", "secret = 'abc'", "secret = '[REDACTED]'"),
    ("text", "api_key := abc", "api_key := [REDACTED]"),
    (
        "text",
        "\"api_key\" => \"abc\"",
        "\"api_key\" => \"[REDACTED]\"",
    ),
    (
        "text",
        "--password=hunter2 --user bob",
        "--password=[REDACTED] --user bob",
    ),
    // A usage line's placeholder names a value and is none; a value that
    // only starts like one is still a value.
    (
        "text",
        "Usage: calltape shared --key <KEY> <--url <URL>|CMD>",
        "Usage: calltape shared --key <KEY> <--url <URL>|CMD>",
    ),
    (
        "text",
        "[--oauth-client-secret-file <FILE>] --password <PASSWORD>...",
        "[--oauth-client-secret-file <FILE>] --password <PASSWORD>...",
    ),
    ("text", "--password <pw>hunter2", "--password [REDACTED]"),
    ("text", "--password <PW>.x", "--password [REDACTED]"),
    (
        "text",
        "config.db.password=hunter2",
        "config.db.password=[REDACTED]",
    ),
    (
        "text",
        "Mcp-Session-Id: 3f9a1c2e",
        "Mcp-Session-Id: [REDACTED]",
    ),
    (
        "text",
        "set-cookie: sid=abc; Path=/",
        "set-cookie: sid=[REDACTED]; Path=/",
    ),
    // What follows a cookie name but is no cookie pair is read as text: a token there is found.
    (
        "text",
        "cookie=-64 glpat-Zq8xW3vT9kL2mN7pHx4L ok",
        "cookie=-64 [REDACTED] ok",
    ),
    (
        "text",
        "Cookie: a=1 glpat-Zq8xW3vT9kL2mN7pHx4L; b=2",
        "Cookie: a=[REDACTED] [REDACTED]; b=[REDACTED]",
    ),
    (
        "text",
        "set-cookie: a=1; Expires=Thu, 01 Jan 2026 00:00:00 GMT, sid=abc",
        "set-cookie: a=[REDACTED]; Expires=Thu, 01 Jan 2026 00:00:00 GMT, sid=[REDACTED]",
    ),
    // A token that stands as a cookie's name goes; the header after it is
    // read as it was, when it is read again (idempotence).
    (
        "text",
        "Cookie: glpat-Zq8xW3vT9kL2mN7pHx4L=1; b=2",
        "Cookie: [REDACTED]=1; b=[REDACTED]",
    ),
    (
        "text",
        "cookie=J:xoxp-ssxVu006eg]token:]",
        "cookie=J:[REDACTED]]token:[REDACTED]",
    ),
    (
        "text",
        "cookie:sk_test_eAyAccountKo x.=r{y token:z",
        "cookie:[REDACTED] x.=r{y token:[REDACTED]",
    ),
    // What a cookie header holds that is no cookie's value is read as text:
    // a URL's password, an assignment, a bearer token there is found.
    (
        "text",
        "Cookie: a=1 postgres://app:Hx4Lm9Qw2Rt7Yp3K@db:5432/app; b=2",
        "Cookie: a=[REDACTED] postgres://[REDACTED]@db:5432/app; b=[REDACTED]",
    ),
    (
        "text",
        "{\"cookie\":-64,\"note\":\"see postgres://app:Hx4Lm9Qw2Rt7Yp3K@db/app\"}",
        "{\"cookie\":\"[REDACTED]\",\"note\":\"see postgres://[REDACTED]@db/app\"}",
    ),
    (
        "text",
        "x cookie:37,\"Bearer Tk9Lm2Qx7Vb4Nw8Zr3Jc\"",
        "x cookie:37,\"Bearer [REDACTED]\"",
    ),
    (
        "text",
        "set-cookie: sid=1; Path=/cb?access_token=abc123; HttpOnly, x password:hunter2",
        "set-cookie: sid=[REDACTED]; Path=/cb?access_token=[REDACTED]; HttpOnly, x password:[REDACTED]",
    ),
    (
        "text",
        "Set-Cookie: -----BEGIN RSA PRIVATE KEY-----abc-----END RSA PRIVATE KEY-----=} ; b=2",
        "Set-Cookie: [REDACTED]=} ; b=[REDACTED]",
    ),
    ("text", "password: \"unterminated", "password: \"[REDACTED]"),
    (
        "text",
        "text {\\\"password\\\": \\\"pw\\\"} end",
        "text {\\\"password\\\": \\\"[REDACTED]\\\"} end",
    ),
    ("text", "password=[REDACTED]", "password=[REDACTED]"),
    (
        "text",
        "password: \"[REDACTED]\"",
        "password: \"[REDACTED]\"",
    ),
    ("text", "token == other", "token == other"),
    ("text", "password: {user: 1}", "password: {user: 1}"),
    ("text", "TOKEN=", "TOKEN="),
    ("text", "std::key::Key", "std::key::Key"),
    ("text", "author: Jane", "author: Jane"),
    ("text", "maxTokens: 100", "maxTokens: 100"),
    (
        "text",
        "max_tokens=100 tokens=20",
        "max_tokens=100 tokens=20",
    ),
    (
        "text",
        "request_id=3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "request_id=3f2504e0-4f89-11d3-9a0c-0305e82c3301",
    ),
    ("text", "the token is valid: yes", "the token is valid: yes"),
    ("text", "time 10:30, ratio a=b", "time 10:30, ratio a=b"),
    // ---- tokens known by their form ----
    (
        "text",
        "key sk-proj-abcdefghijklmnopqrstuvwx end",
        "key [REDACTED] end",
    ),
    ("text", "sk-ant-api03-abcdefghijklmnopqrstuv", "[REDACTED]"),
    (
        "text",
        "OPENAI sk-abcdefghijklmnopqrstuvwxyz0123",
        "OPENAI [REDACTED]",
    ),
    (
        "text",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "[REDACTED]",
    ),
    (
        "text",
        "gho_abcdefghijklmnopqrstuvwxyz0123456789.",
        "[REDACTED].",
    ),
    (
        "text",
        "(ghs_abcdefghijklmnopqrstuvwxyz0123456789)",
        "([REDACTED])",
    ),
    (
        "text",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "[REDACTED]",
    ),
    ("text", "glpat-abcdefghij0123456789", "[REDACTED]"),
    ("text", "slack xoxb-123456789012-abcdef", "slack [REDACTED]"),
    (
        "text",
        "xoxp-123456789012-abcdef xoxa-123456789012-x",
        "[REDACTED] [REDACTED]",
    ),
    (
        "text",
        "xoxr-123456789012-abcdef,xoxs-123456789012-abcdef",
        "[REDACTED],[REDACTED]",
    ),
    ("text", "AKIAIOSFODNN7EXAMPLE", "[REDACTED]"),
    ("text", "aws ASIAIOSFODNN7EXAMPLE key", "aws [REDACTED] key"),
    (
        "text",
        "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
        "[REDACTED]",
    ),
    (
        "text",
        "npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "[REDACTED]",
    ),
    (
        "text",
        "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
        "[REDACTED]",
    ),
    ("text", "sk-learn is a library", "sk-learn is a library"),
    (
        "text",
        "task-sk-abcdefghijklmnopqrstuvwxyz",
        "task-sk-abcdefghijklmnopqrstuvwxyz",
    ),
    (
        "text",
        "ghp_short and AKIA alone",
        "ghp_short and AKIA alone",
    ),
    (
        "text",
        "npm_config_cache hf_hub xoxo",
        "npm_config_cache hf_hub xoxo",
    ),
    ("text", "AKIAlowercasenotakey1", "AKIAlowercasenotakey1"),
    // ---- prose and other text kept exactly ----
    ("text", "", ""),
    ("text", "nothing to see here", "nothing to see here"),
    (
        "text",
        "id 3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "id 3f2504e0-4f89-11d3-9a0c-0305e82c3301",
    ),
    (
        "text",
        "caf\u{e9} \u{1f600} na\u{ef}ve: ok",
        "caf\u{e9} \u{1f600} na\u{ef}ve: ok",
    ),
    (
        "text",
        "mot de passe: password=s\u{e9}same!",
        "mot de passe: password=[REDACTED]",
    ),
    (
        "text",
        "base64 QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=",
        "base64 QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=",
    ),
    // ---- text that is JSON goes through the JSON rules ----
    (
        "text",
        "{\"password\": \"x\"}",
        "{\"password\": \"[REDACTED]\"}",
    ),
    (
        "text",
        "  [ {\"token\":1} ]",
        "  [ {\"token\":\"[REDACTED]\"} ]",
    ),
    (
        "text",
        "{\"apiKey\": {\"nested\": true}}",
        "{\"apiKey\": \"[REDACTED]\"}",
    ),
    (
        "text",
        "{not json, password=x}",
        "{not json, password=[REDACTED]}",
    ),
    // ---- JSON text ----
    (
        "json",
        "{\"apiKey\":\"abc\",\"name\":\"x\"}",
        "{\"apiKey\":\"[REDACTED]\",\"name\":\"x\"}",
    ),
    (
        "json",
        "{\"auth\": {\"user\":\"a\",\"pass\":\"b\"}}",
        "{\"auth\": \"[REDACTED]\"}",
    ),
    ("json", "{\"token\": 123}", "{\"token\": \"[REDACTED]\"}"),
    // A null, a boolean and "" hold no secret: their JSON type stays.
    (
        "json",
        "{\"token\": null, \"secret\": false}",
        "{\"token\": null, \"secret\": false}",
    ),
    (
        "json",
        "{\"tokens\": [1,2], \"maxTokens\": 1024}",
        "{\"tokens\": [1,2], \"maxTokens\": 1024}",
    ),
    (
        "json",
        "[{\"password\":\"a\"},[{\"password\":\"b\"}]]",
        "[{\"password\":\"[REDACTED]\"},[{\"password\":\"[REDACTED]\"}]]",
    ),
    (
        "json",
        "{\"a\":[[{\"secret\":\"x\"}]]}",
        "{\"a\":[[{\"secret\":\"[REDACTED]\"}]]}",
    ),
    (
        "json",
        "{\"a\":[[[[{\"b\":[{\"jwt\":[1,[2]]}]}]]]]}",
        "{\"a\":[[[[{\"b\":[{\"jwt\":\"[REDACTED]\"}]}]]]]}",
    ),
    (
        "json",
        "{\"text\":\"{\\\"password\\\":\\\"x\\\",\\\"n\\\":1}\"}",
        "{\"text\":\"{\\\"password\\\":\\\"[REDACTED]\\\",\\\"n\\\":1}\"}",
    ),
    (
        "json",
        "{\"t\":\"{\\\"u\\\":\\\"{\\\\\\\"token\\\\\\\":\\\\\\\"x\\\\\\\"}\\\"}\"}",
        "{\"t\":\"{\\\"u\\\":\\\"{\\\\\\\"token\\\\\\\":\\\\\\\"[REDACTED]\\\\\\\"}\\\"}\"}",
    ),
    (
        "json",
        "{\"text\":\"[{\\\"apiKey\\\": {\\\"a\\\": [1, 2]}}]\"}",
        "{\"text\":\"[{\\\"apiKey\\\": \\\"[REDACTED]\\\"}]\"}",
    ),
    (
        "json",
        "{\"note\":\"line1\\nBearer abc123\\u00e9\"}",
        "{\"note\":\"line1\\nBearer [REDACTED]\\u00e9\"}",
    ),
    (
        "json",
        "{\"note\":\"caf\\u00e9 password=s\\u00e9same \\ud83d\\ude00 ok\"}",
        "{\"note\":\"caf\\u00e9 password=[REDACTED] \\ud83d\\ude00 ok\"}",
    ),
    (
        "json",
        "{\n  \"user\" : \"bob\",\n  \"password\" :   \"pw\"\n}\n",
        "{\n  \"user\" : \"bob\",\n  \"password\" :   \"[REDACTED]\"\n}\n",
    ),
    (
        "json",
        "{\"a\":1}\n{\"password\":\"x\"}\n",
        "{\"a\":1}\n{\"password\":\"[REDACTED]\"}\n",
    ),
    ("json", "\"Bearer abc123def\"", "\"Bearer [REDACTED]\""),
    (
        "json",
        "{\"pass\\u0077ord\":\"x\"}",
        "{\"pass\\u0077ord\":\"[REDACTED]\"}",
    ),
    (
        "json",
        "{\"headers\":{\"Authorization\":\"Bearer x\"}}",
        "{\"headers\":{\"Authorization\":\"[REDACTED]\"}}",
    ),
    (
        "json",
        "{\"password\":\"[REDACTED]\"}",
        "{\"password\":\"[REDACTED]\"}",
    ),
    (
        "json",
        "{\"password\":\"[REDACTED]x\"}",
        "{\"password\":\"[REDACTED]\"}",
    ),
    (
        "json",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"login\",\"arguments\":{\"username\":\"bob\",\"password\":\"pw\"}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"login\",\"arguments\":{\"username\":\"bob\",\"password\":\"[REDACTED]\"}}}",
    ),
    (
        "json",
        "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"apiKey\\\":\\\"k\\\"}\"}],\"structuredContent\":{\"apiKey\":\"k\"}}",
        "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"apiKey\\\":\\\"[REDACTED]\\\"}\"}],\"structuredContent\":{\"apiKey\":\"[REDACTED]\"}}",
    ),
    (
        "json",
        "{\"url\":\"postgres://u:p@h/db\",\"email\":\"bob@example.com\"}",
        "{\"url\":\"postgres://[REDACTED]@h/db\",\"email\":\"bob@example.com\"}",
    ),
    (
        "json",
        "{\"requestId\":\"3f2504e0-4f89-11d3-9a0c-0305e82c3301\",\"cursor\":\"eyJvZmZzZXQiOjEwMH0\"}",
        "{\"requestId\":\"3f2504e0-4f89-11d3-9a0c-0305e82c3301\",\"cursor\":\"eyJvZmZzZXQiOjEwMH0\"}",
    ),
    (
        "json",
        "{\"sessionId\":\"3f9a1c2e\",\"session\":\"3f9a1c2e\"}",
        "{\"sessionId\":\"[REDACTED]\",\"session\":\"3f9a1c2e\"}",
    ),
    ("json", "[]", "[]"),
    ("json", "{}", "{}"),
    ("json", "42", "42"),
    ("json", "not json: token=abc", "not json: token=[REDACTED]"),
    ("json", "{\"a\": \"b\",}", "{\"a\": \"b\",}"),
    (
        "json",
        "{\"password\": \"x\",}",
        "{\"password\": \"[REDACTED]\",}",
    ),
    // ---- values ----
    (
        "value",
        "{\"a\":{\"b\":[{\"c\":{\"secret\":[1,2]}}]}}",
        "{\"a\":{\"b\":[{\"c\":{\"secret\":\"[REDACTED]\"}}]}}",
    ),
    (
        "value",
        "[[[\"Bearer abc123def\"]]]",
        "[[[\"Bearer [REDACTED]\"]]]",
    ),
    (
        "value",
        "{\"text\":\"{\\\"token\\\":\\\"x\\\"}\"}",
        "{\"text\":\"{\\\"token\\\":\\\"[REDACTED]\\\"}\"}",
    ),
    (
        "value",
        "{\"maxTokens\":256,\"price\":1.5}",
        "{\"maxTokens\":256,\"price\":1.5}",
    ),
    (
        "value",
        "{\"cookie\":{\"a\":{\"b\":[1]}},\"ok\":true}",
        "{\"cookie\":\"[REDACTED]\",\"ok\":true}",
    ),
];

/// The rows of this file, then those of the contextual rules
/// (`table_context.rs`) and of JSON's structure (`table_json.rs`); a row's
/// number counts through all three.
pub(crate) fn all_rows() -> impl Iterator<Item = &'static (&'static str, &'static str, &'static str)>
{
    ROWS.iter()
        .chain(table_context::ROWS)
        .chain(table_json::ROWS)
}

pub(crate) fn check(redactor: &Redactor, row: usize, mode: &str, input: &str, expected: &str) {
    let ctx = format!("row {row}: {mode} {input:?}");
    match mode {
        "name" => {
            let want = match expected {
                "redact" => true,
                "keep" => false,
                other => panic!("{ctx}: expected must be redact or keep, not {other:?}"),
            };
            assert_eq!(redactor.is_redacted_name(input), want, "{ctx}");
        }
        "text" | "json" => {
            let run = |s: &'_ str| -> String {
                if mode == "text" {
                    redactor.redact_text(s).into_owned()
                } else {
                    redactor.redact_json_text(s).into_owned()
                }
            };
            assert_eq!(run(input), expected, "{ctx}");
            assert_eq!(run(expected), expected, "{ctx}: not idempotent");
            let borrowed = if mode == "text" {
                redactor.redact_text(expected)
            } else {
                redactor.redact_json_text(expected)
            };
            assert!(
                matches!(borrowed, Cow::Borrowed(_)),
                "{ctx}: unchanged output should be borrowed"
            );
        }
        "value" => {
            let mut value: Value =
                serde_json::from_str(input).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let want: Value =
                serde_json::from_str(expected).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_eq!(
                redactor.redacted_value(&value),
                want,
                "{ctx}: redacted_value"
            );
            redactor.redact_value(&mut value);
            assert_eq!(value, want, "{ctx}: redact_value");
            redactor.redact_value(&mut value);
            assert_eq!(value, want, "{ctx}: not idempotent");
        }
        other => panic!("{ctx}: unknown mode {other:?}"),
    }
}
