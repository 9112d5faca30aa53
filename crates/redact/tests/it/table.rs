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

use std::borrow::Cow;

use calltape_redact::Redactor;
use serde_json::Value;

const ROWS: &[(&str, &str, &str)] = &[
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
    (
        "json",
        "{\"token\": null, \"secret\": false}",
        "{\"token\": \"[REDACTED]\", \"secret\": \"[REDACTED]\"}",
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
    // ---- short credential names ----
    ("name", "pwd", "redact"),
    ("name", "pass", "redact"),
    ("name", "DB_PASS", "redact"),
    ("name", "secret_key", "redact"),
    ("name", "private_key", "redact"),
    ("name", "client_secret", "redact"),
    ("name", "bypass", "keep"),
    ("name", "passenger", "keep"),
    ("name", "cwd", "keep"),
    ("text", "pwd=abc pass=def", "pwd=[REDACTED] pass=[REDACTED]"),
    ("text", "MYSQL_PWD=abc", "MYSQL_PWD=[REDACTED]"),
    (
        "text",
        "secret_key=a1 client_secret=b2 private_key=c3",
        "secret_key=[REDACTED] client_secret=[REDACTED] private_key=[REDACTED]",
    ),
    ("text", "bypass=yes cwd=/tmp", "bypass=yes cwd=/tmp"),
    (
        "json",
        "{\"pwd\":\"a\",\"pass\":\"b\",\"compass\":\"c\"}",
        "{\"pwd\":\"[REDACTED]\",\"pass\":\"[REDACTED]\",\"compass\":\"c\"}",
    ),
    // ---- names that describe a credential without holding one ----
    ("name", "tokenType", "keep"),
    ("name", "token_type", "keep"),
    ("name", "authType", "keep"),
    ("name", "authMethod", "keep"),
    ("name", "authUrl", "keep"),
    ("name", "authorizationUrl", "keep"),
    ("name", "authorization_endpoint", "keep"),
    ("name", "tokenUrl", "keep"),
    ("name", "token_endpoint", "keep"),
    ("name", "keyId", "keep"),
    ("name", "key_id", "keep"),
    ("name", "kid", "keep"),
    ("name", "private_key_id", "keep"),
    ("name", "publicKey", "keep"),
    ("name", "public_key", "keep"),
    ("name", "primaryKey", "keep"),
    ("name", "primary_key", "keep"),
    ("name", "foreignKey", "keep"),
    ("name", "sortKey", "keep"),
    ("name", "partitionKey", "keep"),
    ("name", "idempotencyKey", "keep"),
    ("name", "Idempotency-Key", "keep"),
    ("name", "page_token", "keep"),
    ("name", "next_page_token", "keep"),
    ("name", "max_tokens", "keep"),
    ("name", "input_tokens", "keep"),
    ("name", "output_tokens", "keep"),
    ("name", "cache_read_input_tokens", "keep"),
    ("name", "tokenTypes", "redact"),
    ("name", "publicKeySecret", "redact"),
    ("name", "primaryKeyToken", "redact"),
    (
        "json",
        "{\"token_type\":\"Bearer\",\"access_token\":\"abc\",\"expires_in\":3600}",
        "{\"token_type\":\"Bearer\",\"access_token\":\"[REDACTED]\",\"expires_in\":3600}",
    ),
    (
        "json",
        "{\"nextPageToken\":\"CAoQAA\",\"keyId\":\"k1\",\"publicKey\":\"MFkwEwYH\"}",
        "{\"nextPageToken\":\"CAoQAA\",\"keyId\":\"k1\",\"publicKey\":\"MFkwEwYH\"}",
    ),
    (
        "json",
        "{\"usage\":{\"input_tokens\":12,\"output_tokens\":40,\"total_tokens\":52}}",
        "{\"usage\":{\"input_tokens\":12,\"output_tokens\":40,\"total_tokens\":52}}",
    ),
    (
        "json",
        "{\"authorization_endpoint\":\"https://id.example.com/authorize\",\"token_endpoint\":\"https://id.example.com/token\"}",
        "{\"authorization_endpoint\":\"https://id.example.com/authorize\",\"token_endpoint\":\"https://id.example.com/token\"}",
    ),
    (
        "json",
        "{\"pageToken\":\"ghp_abcdefghijklmnopqrstuvwxyz0123456789\",\"cacheKey\":\"Bearer abc123def\"}",
        "{\"pageToken\":\"[REDACTED]\",\"cacheKey\":\"Bearer [REDACTED]\"}",
    ),
    (
        "text",
        "keyId=k1 page_token=CAoQAA token_type=Bearer",
        "keyId=k1 page_token=CAoQAA token_type=Bearer",
    ),
    // ---- prose and code are not values ----
    ("text", "The key: it is simple", "The key: it is simple"),
    ("text", "auth: moved to settings", "auth: moved to settings"),
    (
        "text",
        "let token = get_token();",
        "let token = get_token();",
    ),
    (
        "text",
        "token = os.getenv(\"TOKEN\")",
        "token = os.getenv(\"TOKEN\")",
    ),
    (
        "text",
        "let key = Secret::new(raw);",
        "let key = Secret::new(raw);",
    ),
    ("text", "password: hunter2 now", "password: [REDACTED] now"),
    ("text", "password: letmein", "password: [REDACTED]"),
    ("text", "token = get_token", "token = [REDACTED]"),
    (
        "text",
        "password: Secret123 here",
        "password: [REDACTED] here",
    ),
    (
        "json",
        "{\"note\":\"The key: it is simple\"}",
        "{\"note\":\"The key: it is simple\"}",
    ),
    // ---- Authorization, whatever the scheme ----
    (
        "text",
        "Authorization: Bot MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
        "Authorization: Bot [REDACTED]",
    ),
    (
        "text",
        "Authorization: SSWS 00QCjAl4MlV-WPXM-abcdef",
        "Authorization: SSWS [REDACTED]",
    ),
    (
        "text",
        "Authorization: Token abc def",
        "Authorization: Token [REDACTED]",
    ),
    (
        "text",
        "Proxy-Authorization: Digest username=\"bob\", realm=\"x\", response=\"6629fae49393a05397450978507c4ef1\"\nHost: x",
        "Proxy-Authorization: Digest [REDACTED]\nHost: x",
    ),
    (
        "text",
        "curl -H 'Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=5d672d79c15b' https://x",
        "curl -H 'Authorization: AWS4-HMAC-SHA256 [REDACTED]' https://x",
    ),
    (
        "text",
        "curl -H \"Authorization: Digest username=\\\"bob\\\", response=\\\"abc\\\"\" https://x",
        "curl -H \"Authorization: Digest [REDACTED]\" https://x",
    ),
    (
        "text",
        "authorization: Negotiate YIIBhgYGKwYBBQUCoIIBejCCAXag",
        "authorization: Negotiate [REDACTED]",
    ),
    (
        "text",
        "Authorization: Custom-Scheme k=v, sig=abc",
        "Authorization: Custom-Scheme [REDACTED]",
    ),
    (
        "text",
        "Authorization: Bearer abc123def456 user=bob",
        "Authorization: Bearer [REDACTED] user=bob",
    ),
    ("text", "Authorization: abc123", "Authorization: [REDACTED]"),
    (
        "text",
        "Authorization: Digest [REDACTED]",
        "Authorization: Digest [REDACTED]",
    ),
    (
        "json",
        "{\"log\":\"Authorization: Bot abc def\\nnext\"}",
        "{\"log\":\"Authorization: Bot [REDACTED]\\nnext\"}",
    ),
    (
        "json",
        "{\"Proxy-Authorization\":\"Digest username=\\\"bob\\\"\"}",
        "{\"Proxy-Authorization\":\"[REDACTED]\"}",
    ),
    // ---- every cookie ----
    (
        "text",
        "Cookie: sid=abc123; theme=dark; csrftoken=xyz",
        "Cookie: sid=[REDACTED]; theme=[REDACTED]; csrftoken=[REDACTED]",
    ),
    (
        "text",
        "Set-Cookie: sid=abc123; Path=/; Expires=Wed, 21 Oct 2015 07:28:00 GMT; HttpOnly; Secure",
        "Set-Cookie: sid=[REDACTED]; Path=/; Expires=Wed, 21 Oct 2015 07:28:00 GMT; HttpOnly; Secure",
    ),
    (
        "text",
        "set-cookie: a=1; Max-Age=60; SameSite=Lax, b=\"two\"; Domain=example.com",
        "set-cookie: a=[REDACTED]; Max-Age=60; SameSite=Lax, b=[REDACTED]; Domain=example.com",
    ),
    (
        "text",
        "curl -H \"Cookie: a=1; b=2\" https://x",
        "curl -H \"Cookie: a=[REDACTED]; b=[REDACTED]\" https://x",
    ),
    (
        "text",
        "Cookie: sid=[REDACTED]; theme=[REDACTED]",
        "Cookie: sid=[REDACTED]; theme=[REDACTED]",
    ),
    (
        "text",
        "the cookie: it is set on login",
        "the cookie: it is set on login",
    ),
    (
        "json",
        "{\"headers\":\"Cookie: a=1; b=2\\r\\nAccept: */*\"}",
        "{\"headers\":\"Cookie: a=[REDACTED]; b=[REDACTED]\\r\\nAccept: */*\"}",
    ),
    // ---- private key blocks ----
    (
        "text",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabcdef==\n-----END RSA PRIVATE KEY-----\nnext line",
        "[REDACTED]\nnext line",
    ),
    (
        "text",
        "key: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "key: [REDACTED]",
    ),
    (
        "text",
        "log \"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0B\\n-----END PRIVATE KEY-----\\n\" end",
        "log \"[REDACTED]\\n\" end",
    ),
    (
        "text",
        "cut -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIAbc",
        "cut [REDACTED]",
    ),
    (
        "text",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----",
        "[REDACTED]",
    ),
    (
        "text",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----",
    ),
    (
        "text",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+g\n-----END CERTIFICATE-----",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+g\n-----END CERTIFICATE-----",
    ),
    ("text", "------------- a rule", "------------- a rule"),
    (
        "json",
        "{\"private_key_id\":\"k1\",\"note\":\"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBg\\n-----END PRIVATE KEY-----\\n\",\"n\":1}",
        "{\"private_key_id\":\"k1\",\"note\":\"[REDACTED]\\n\",\"n\":1}",
    ),
    (
        "json",
        "[\"-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAA\\n-----END OPENSSH PRIVATE KEY-----\"]",
        "[\"[REDACTED]\"]",
    ),
    // ---- command lines ----
    (
        "text",
        "deploy --password hunter2 --user bob",
        "deploy --password [REDACTED] --user bob",
    ),
    (
        "text",
        "deploy --api-key \"abc def\" --token=xyz",
        "deploy --api-key \"[REDACTED]\" --token=[REDACTED]",
    ),
    (
        "text",
        "gh auth --with-token 'abc'",
        "gh auth --with-token '[REDACTED]'",
    ),
    (
        "text",
        "deploy --password --verbose --token",
        "deploy --password --verbose --token",
    ),
    (
        "text",
        "deploy --user bob --force now",
        "deploy --user bob --force now",
    ),
    (
        "text",
        "mysql -u root -phunter2 -h db app",
        "mysql -u root -p[REDACTED] -h db app",
    ),
    (
        "text",
        "mysqldump -uroot -p'hunter 2' app > dump.sql",
        "mysqldump -uroot -p'[REDACTED]' app > dump.sql",
    ),
    (
        "text",
        "mysql -p -u root\ngit add -p file",
        "mysql -p -u root\ngit add -p file",
    ),
    ("text", "grep -pattern x", "grep -pattern x"),
    (
        "json",
        "{\"cmd\":\"mysql -uroot -ps3cret db\"}",
        "{\"cmd\":\"mysql -uroot -p[REDACTED] db\"}",
    ),
    // ---- assignment operators ----
    ("text", "api_key ::= abc", "api_key ::= [REDACTED]"),
    ("text", "api_key :::= abc", "api_key :::= [REDACTED]"),
    ("text", "API_TOKEN ?= abc", "API_TOKEN ?= [REDACTED]"),
    (
        "text",
        "$password .= \"abc\";",
        "$password .= \"[REDACTED]\";",
    ),
    ("text", "'token' => 'abc'", "'token' => '[REDACTED]'"),
    (
        "text",
        "System.setProperty(\"X_TOKEN\", \"abc123\");",
        "System.setProperty(\"X_TOKEN\", \"[REDACTED]\");",
    ),
    (
        "text",
        "os.Setenv(\"API_KEY\", 'abc123')",
        "os.Setenv(\"API_KEY\", '[REDACTED]')",
    ),
    (
        "text",
        "setProperty(\"X_USER\", \"bob\")",
        "setProperty(\"X_USER\", \"bob\")",
    ),
    (
        "text",
        "var apiToken string = \"abc123\"",
        "var apiToken string = \"[REDACTED]\"",
    ),
    (
        "text",
        "val apiToken: String = \"abc123\"",
        "val apiToken: String = \"[REDACTED]\"",
    ),
    (
        "text",
        "const API_KEY: &str = \"abc123\";",
        "const API_KEY: &str = \"[REDACTED]\";",
    ),
    (
        "text",
        "var name string = \"bob\"",
        "var name string = \"bob\"",
    ),
    ("text", "token = `abc123`", "token = `[REDACTED]`"),
    (
        "text",
        "token != other and token <= x",
        "token != other and token <= x",
    ),
    // ---- name/value pairs in text ----
    (
        "text",
        "<entry name=\"apiToken\" value=\"abc123\"/>",
        "<entry name=\"apiToken\" value=\"[REDACTED]\"/>",
    ),
    (
        "text",
        "<add key=\"ApiKey\" value=\"abc123\" />",
        "<add key=\"ApiKey\" value=\"[REDACTED]\" />",
    ),
    (
        "text",
        "<entry name=\"user\" value=\"bob\"/>",
        "<entry name=\"user\" value=\"bob\"/>",
    ),
    (
        "text",
        "<apiToken>abc123</apiToken>",
        "<apiToken>[REDACTED]</apiToken>",
    ),
    (
        "text",
        "<password>\n   hunter2\n</password>",
        "<password>\n   [REDACTED]\n</password>",
    ),
    ("text", "<name>bob</name> a -> b", "<name>bob</name> a -> b"),
    (
        "text",
        "env:\n  - name: DB_PASSWORD\n    value: hunter2\n  - name: HOME\n    value: /root\n",
        "env:\n  - name: DB_PASSWORD\n    value: [REDACTED]\n  - name: HOME\n    value: /root\n",
    ),
    (
        "text",
        "got {\"name\": \"OPENAI_API_KEY\", \"value\": \"abc\"} from",
        "got {\"name\": \"OPENAI_API_KEY\", \"value\": \"[REDACTED]\"} from",
    ),
    // ---- URLs ----
    (
        "text",
        "https://user%3Ahunter2@example.com/x",
        "https://[REDACTED]@example.com/x",
    ),
    (
        "text",
        "https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/org/repo",
        "https://[REDACTED]@github.com/org/repo",
    ),
    (
        "text",
        "https://x7Gk2pQ9zL4mN8vR3tY6wE1@example.com/",
        "https://[REDACTED]@example.com/",
    ),
    (
        "text",
        "https://oauth2:glpat-abcdefghij0123456789@gitlab.com/x",
        "https://[REDACTED]@gitlab.com/x",
    ),
    (
        "text",
        "https://first.last.name.of.someone@example.com/",
        "https://first.last.name.of.someone@example.com/",
    ),
    (
        "text",
        "GET /cb?access%5Ftoken=abc123&state=x",
        "GET /cb?access%5Ftoken=[REDACTED]&state=x",
    ),
    (
        "text",
        "GET /cb?api%5Fkey=abc123&client%5Fsecret=s3&page%5Fsize=2",
        "GET /cb?api%5Fkey=[REDACTED]&client%5Fsecret=[REDACTED]&page%5Fsize=2",
    ),
    (
        "json",
        "{\"url\":\"https://user%3Ahunter2@db.example.com/\"}",
        "{\"url\":\"https://[REDACTED]@db.example.com/\"}",
    ),
    // ---- unterminated quotes ----
    (
        "text",
        "password=\"secret value\nnext",
        "password=\"[REDACTED]\nnext",
    ),
    ("text", "token: 'two words and more", "token: '[REDACTED]"),
    // ---- JSON escapes in text ----
    (
        "text",
        "log \\u0073k-proj-abcdefghijklmnopqrstuvwx end",
        "log [REDACTED] end",
    ),
    (
        "text",
        "log s\\u006b-proj-abcdefghijklmnopqrstuvwx end",
        "log [REDACTED] end",
    ),
    (
        "text",
        "log \\u0041BC caf\\u00e9 end",
        "log \\u0041BC caf\\u00e9 end",
    ),
    // ---- YAML block scalars and more operators ----
    (
        "text",
        "auth:\n  api_token: |\n    abc\n    def\n  user: bob\n",
        "auth:\n  api_token: |\n    [REDACTED]\n  user: bob\n",
    ),
    (
        "text",
        "private_key: >-\n  MIIEv\n\n  abc\nnext: 1",
        "private_key: >-\n  [REDACTED]\nnext: 1",
    ),
    ("text", "note: |\n  some text\n", "note: |\n  some text\n"),
    ("text", "TOKEN += \"abc\"", "TOKEN += \"[REDACTED]\""),
    (
        "text",
        "$apiToken ??= \"abc\"",
        "$apiToken ??= \"[REDACTED]\"",
    ),
    ("text", "count += 1", "count += 1"),
    (
        "text",
        "<entry>\n  <name=\"apiToken\" />\n  <value=\"abc\" />\n</entry>",
        "<entry>\n  <name=\"apiToken\" />\n  <value=\"[REDACTED]\" />\n</entry>",
    ),
    // ---- name/value pairs in JSON ----
    (
        "json",
        "{\"env\":[{\"name\":\"OPENAI_API_KEY\",\"value\":\"sk-abc\"},{\"name\":\"HOME\",\"value\":\"/root\"}]}",
        "{\"env\":[{\"name\":\"OPENAI_API_KEY\",\"value\":\"[REDACTED]\"},{\"name\":\"HOME\",\"value\":\"/root\"}]}",
    ),
    (
        "json",
        "{\"headers\":[{\"value\":\"Digest a=1\",\"name\":\"Authorization\"},{\"name\":\"Accept\",\"value\":\"*/*\"}]}",
        "{\"headers\":[{\"value\":\"[REDACTED]\",\"name\":\"Authorization\"},{\"name\":\"Accept\",\"value\":\"*/*\"}]}",
    ),
    (
        "json",
        "{\"key\": \"X-Api-Key\", \"value\": \"abc123\", \"type\": \"text\"}",
        "{\"key\": \"[REDACTED]\", \"value\": \"[REDACTED]\", \"type\": \"text\"}",
    ),
    (
        "json",
        "{\"name\":\"token\",\"value\":{\"a\":[1,{\"b\":\"c\"}]},\"n\":1}",
        "{\"name\":\"token\",\"value\":\"[REDACTED]\",\"n\":1}",
    ),
    (
        "json",
        "{\"value\":\"Bearer abc123def\",\"name\":\"Accept\"}",
        "{\"value\":\"Bearer [REDACTED]\",\"name\":\"Accept\"}",
    ),
    (
        "json",
        "{\"name\":\"get_token\",\"arguments\":{\"scope\":\"read\"}}",
        "{\"name\":\"get_token\",\"arguments\":{\"scope\":\"read\"}}",
    ),
    (
        "json",
        "{\"name\":\"password\",\"value\":\"a\",\"name\":\"user\"}",
        "{\"name\":\"password\",\"value\":\"a\",\"name\":\"user\"}",
    ),
    (
        "json",
        "{\"n\\u0061me\":\"api_key\",\"value\":\"x\",\"inner\":{\"name\":\"a\",\"value\":\"b\"}}",
        "{\"n\\u0061me\":\"api_key\",\"value\":\"[REDACTED]\",\"inner\":{\"name\":\"a\",\"value\":\"b\"}}",
    ),
    (
        "json",
        "{\"value\":{\"name\":\"secret\",\"value\":\"in\"},\"name\":\"cookie\"}",
        "{\"value\":\"[REDACTED]\",\"name\":\"cookie\"}",
    ),
    (
        "json",
        "{\"value\":{\"name\":\"secret\",\"value\":\"in\"},\"name\":\"outer\"}",
        "{\"value\":{\"name\":\"secret\",\"value\":\"[REDACTED]\"},\"name\":\"outer\"}",
    ),
    (
        "json",
        "{\"headers\":[[\"authorization\",\"Token abc\"],[\"accept\",\"*/*\"]]}",
        "{\"headers\":[[\"authorization\",\"[REDACTED]\"],[\"accept\",\"*/*\"]]}",
    ),
    (
        "json",
        "[[\"X-Api-Key\", {\"v\": 1}], [\"token\", \"a\", \"b\"]]",
        "[[\"X-Api-Key\", \"[REDACTED]\"], [\"token\", \"a\", \"b\"]]",
    ),
    (
        "json",
        "{\"required\":[\"apiKey\",\"query\"]}",
        "{\"required\":[\"apiKey\",\"query\"]}",
    ),
    (
        "json",
        "{\"args\":[\"deploy\",\"--password\",\"hunter2\",\"--user\",\"bob\"]}",
        "{\"args\":[\"deploy\",\"--password\",\"[REDACTED]\",\"--user\",\"bob\"]}",
    ),
    (
        "json",
        "[\"--api-key\", {\"a\": 1}, \"--token=abc\", \"--verbose\"]",
        "[\"--api-key\", \"[REDACTED]\", \"--token=[REDACTED]\", \"--verbose\"]",
    ),
    (
        "json",
        "[\"--token\", \"--password\", \"x\", \"y\"]",
        "[\"--token\", \"[REDACTED]\", \"[REDACTED]\", \"y\"]",
    ),
    (
        "json",
        "{\"text\":\"{\\\"name\\\":\\\"DB_PASSWORD\\\",\\\"value\\\":\\\"pw\\\"}\"}",
        "{\"text\":\"{\\\"name\\\":\\\"DB_PASSWORD\\\",\\\"value\\\":\\\"[REDACTED]\\\"}\"}",
    ),
    (
        "value",
        "{\"env\":[{\"name\":\"GITHUB_TOKEN\",\"value\":\"x\"},{\"value\":[1],\"key\":\"secret\"}]}",
        "{\"env\":[{\"name\":\"GITHUB_TOKEN\",\"value\":\"[REDACTED]\"},{\"value\":\"[REDACTED]\",\"key\":\"[REDACTED]\"}]}",
    ),
    (
        "value",
        "{\"h\":[[\"Cookie\",\"a=1\"]],\"argv\":[\"--password\",\"x\",\"--name\",\"y\"]}",
        "{\"h\":[[\"Cookie\",\"[REDACTED]\"]],\"argv\":[\"--password\",\"[REDACTED]\",\"--name\",\"y\"]}",
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

fn check(redactor: &Redactor, row: usize, mode: &str, input: &str, expected: &str) {
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

#[test]
fn every_row_holds() {
    let redactor = Redactor::new();
    for (row, (mode, input, expected)) in ROWS.iter().enumerate() {
        check(&redactor, row, mode, input, expected);
    }
}

#[test]
fn text_and_json_rows_agree_with_the_value_walk() {
    // Wherever a JSON row is valid JSON, the text path and the value path
    // must redact alike.
    let redactor = Redactor::new();
    for (row, (mode, input, _)) in ROWS.iter().enumerate() {
        if *mode != "json" {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(input) else {
            continue;
        };
        let text: Value =
            serde_json::from_str(&redactor.redact_json_text(input)).expect("valid JSON out");
        assert_eq!(
            text,
            redactor.redacted_value(&value),
            "row {row}: {input:?}"
        );
    }
}

#[test]
fn the_table_is_big_enough() {
    assert!(ROWS.len() >= 150, "{} rows", ROWS.len());
    for mode in ["name", "text", "json", "value"] {
        assert!(ROWS.iter().any(|(m, ..)| *m == mode), "no {mode} rows");
    }
}
