//! Rows of the redaction table (see `table.rs` for the modes) for JSON's own
//! structure: object keys that hold a secret, values under a credential name
//! that hold nothing secret (`null`, booleans, `""`), and JSON Schema
//! definitions under a credential name, from real `tools/list` answers and
//! from hostile near-misses.
//!
//! Every `json` row is also read by `redact_text` and written through
//! `RedactingWriter` in chunks, and must give the same
//! (`json_rows_hold_through_redact_text_and_the_writer` in `value.rs`). This
//! file holds only rows, so that other tests can read it as it is.

pub(crate) const ROWS: &[(&str, &str, &str)] = &[
    // ---- keys that hold a secret are replaced whole ----
    (
        "json",
        r#"{"cards": {"ghp_0123456789abcdefghijklmnopqrstuvwxyz": "stored"}}"#,
        r#"{"cards": {"[REDACTED]": "stored"}}"#,
    ),
    (
        "json",
        r#"{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlXzEyMw": {"ok": true}}"#,
        r#"{"[REDACTED]": {"ok": true}}"#,
    ),
    (
        "json",
        r#"{"sk-proj-abcdefghijklmnopqrstuvwx": 1}"#,
        r#"{"[REDACTED]": 1}"#,
    ),
    (
        "json",
        r#"{"https://bob:hunter2@db.example.com/app": "up"}"#,
        r#"{"[REDACTED]": "up"}"#,
    ),
    (
        "json",
        r#"{"Bearer abc123def456": "seen"}"#,
        r#"{"[REDACTED]": "seen"}"#,
    ),
    (
        "json",
        r#"{"xoxb-1234567890-abcdefghijkl": 1, "AKIAIOSFODNN7EXAMPLE": 2}"#,
        r#"{"[REDACTED]": 1, "[REDACTED:2]": 2}"#,
    ),
    // A key only partly secret goes whole: its words would say what the
    // secret was for.
    (
        "json",
        r#"{"card ghp_0123456789abcdefghijklmnopqrstuvwxyz of bob": 1}"#,
        r#"{"[REDACTED]": 1}"#,
    ),
    (
        "json",
        r#"{"token=abc123": 1, "api_key: xyz": 2}"#,
        r#"{"[REDACTED]": "[REDACTED]", "[REDACTED:2]": "[REDACTED]"}"#,
    ),
    // A key that is JSON holding a secret (and names a credential).
    (
        "json",
        r#"{"{\"password\":\"hunter2\"}": 1}"#,
        r#"{"[REDACTED]": "[REDACTED]"}"#,
    ),
    // A key written with escapes.
    (
        "json",
        r#"{"\u0067hp_0123456789abcdefghijklmnopqrstuvwxyz": 1}"#,
        r#"{"[REDACTED]": 1}"#,
    ),
    // Several replaced keys stay several members.
    (
        "json",
        r#"{"ghp_0123456789abcdefghijklmnopqrstuvwxyz": 1, "sk-proj-abcdefghijklmnopqrstuvwx": 2, "Bearer abc123def456": 3, "ok": 4}"#,
        r#"{"[REDACTED]": 1, "[REDACTED:2]": 2, "[REDACTED:3]": 3, "ok": 4}"#,
    ),
    // A placeholder the object already holds is skipped, wherever it is.
    (
        "json",
        r#"{"ghp_0123456789abcdefghijklmnopqrstuvwxyz": 1, "[REDACTED]": 2}"#,
        r#"{"[REDACTED:2]": 1, "[REDACTED]": 2}"#,
    ),
    (
        "json",
        r#"{"[REDACTED:2]": 0, "ghp_0123456789abcdefghijklmnopqrstuvwxyz": 1, "sk-proj-abcdefghijklmnopqrstuvwx": 2, "[REDACTED]": 3}"#,
        r#"{"[REDACTED:2]": 0, "[REDACTED:3]": 1, "[REDACTED:4]": 2, "[REDACTED]": 3}"#,
    ),
    // Only the placeholders written so count: `[REDACTED:02]` is a key.
    (
        "json",
        r#"{"[REDACTED:02]": 0, "[REDACTED:1]": 0, "ghp_0123456789abcdefghijklmnopqrstuvwxyz": 1}"#,
        r#"{"[REDACTED:02]": 0, "[REDACTED:1]": 0, "[REDACTED]": 1}"#,
    ),
    // One key twice is one member to a JSON reader: one placeholder.
    (
        "json",
        r#"{"ghp_0123456789abcdefghijklmnopqrstuvwxyz": 1, "ghp_0123456789abcdefghijklmnopqrstuvwxyz": 2, "xoxb-1234567890-abcdefghijkl": 3}"#,
        r#"{"[REDACTED]": 1, "[REDACTED]": 2, "[REDACTED:2]": 3}"#,
    ),
    // Each object numbers its own keys.
    (
        "json",
        r#"{"ghp_0123456789abcdefghijklmnopqrstuvwxyz": {"sk-proj-abcdefghijklmnopqrstuvwx": [{"AKIAIOSFODNN7EXAMPLE": 1}]}, "xoxb-1234567890-abcdefghijkl": 2}"#,
        r#"{"[REDACTED]": {"[REDACTED]": [{"[REDACTED]": 1}]}, "[REDACTED:2]": 2}"#,
    ),
    // JSON inside a string, and inside a string inside that.
    (
        "json",
        r#"{"text": "{\"ghp_0123456789abcdefghijklmnopqrstuvwxyz\": 1, \"sk-proj-abcdefghijklmnopqrstuvwx\": 2}"}"#,
        r#"{"text": "{\"[REDACTED]\": 1, \"[REDACTED:2]\": 2}"}"#,
    ),
    (
        "json",
        r#"{"a": "{\"b\": \"{\\\"Bearer abc123def456\\\": 1, \\\"https://u:pw@h/\\\": 2}\"}"}"#,
        r#"{"a": "{\"b\": \"{\\\"[REDACTED]\\\": 1, \\\"[REDACTED:2]\\\": 2}\"}"}"#,
    ),
    // A string error code and a secret as key in an error's data.
    (
        "json",
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":"ghp_0123456789abcdefghijklmnopqrstuvwxyz","message":"no","data":{"sk-proj-abcdefghijklmnopqrstuvwx":"unknown"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":"[REDACTED]","message":"no","data":{"[REDACTED]":"unknown"}}}"#,
    ),
    // JSON Lines: each object on its own.
    (
        "json",
        "{\"ghp_0123456789abcdefghijklmnopqrstuvwxyz\": 1}\n{\"sk-proj-abcdefghijklmnopqrstuvwx\": 2}\n",
        "{\"[REDACTED]\": 1}\n{\"[REDACTED]\": 2}\n",
    ),
    // Keys the text rules keep stay as written.
    (
        "json",
        r#"{"https://example.com/a": 1, "bob@example.com": 2, "Bearer": 3, "Basic usage": 4, "password": "x", "[REDACTED] note": 5}"#,
        r#"{"https://example.com/a": 1, "bob@example.com": 2, "Bearer": 3, "Basic usage": 4, "password": "[REDACTED]", "[REDACTED] note": 5}"#,
    ),
    (
        "value",
        r#"{"cards": {"ghp_0123456789abcdefghijklmnopqrstuvwxyz": "stored", "Bearer abc123def456": "seen", "[REDACTED]": 0, "name": "visa"}}"#,
        r#"{"cards": {"[REDACTED:2]": "seen", "[REDACTED:3]": "stored", "[REDACTED]": 0, "name": "visa"}}"#,
    ),
    (
        "value",
        r#"{"token=abc123": "x", "list": [{"https://u:pw@h/": null}]}"#,
        r#"{"[REDACTED]": "[REDACTED]", "list": [{"[REDACTED]": null}]}"#,
    ),
    // ---- nothing secret under a credential name keeps its JSON type ----
    (
        "json",
        r#"{"prompt_cache_key": null, "password": "", "token": true, "secret": false}"#,
        r#"{"prompt_cache_key": null, "password": "", "token": true, "secret": false}"#,
    ),
    (
        "json",
        r#"{"password": " ", "apiKey": 0, "token": [], "secret": {}, "auth": [null], "sessionId": "\u0000"}"#,
        r#"{"password": "[REDACTED]", "apiKey": "[REDACTED]", "token": "[REDACTED]", "secret": "[REDACTED]", "auth": "[REDACTED]", "sessionId": "[REDACTED]"}"#,
    ),
    (
        "json",
        r#"[{"name": "API_KEY", "value": null}, {"name": "DB_PASSWORD", "value": ""}, ["authorization", false], ["--password", true], ["--token", "abc"]]"#,
        r#"[{"name": "API_KEY", "value": null}, {"name": "DB_PASSWORD", "value": ""}, ["authorization", false], ["--password", true], ["--token", "[REDACTED]"]]"#,
    ),
    (
        "json",
        r#"{"text": "{\"prompt_cache_key\": null, \"password\": \"x\"}"}"#,
        r#"{"text": "{\"prompt_cache_key\": null, \"password\": \"[REDACTED]\"}"}"#,
    ),
    (
        "value",
        r#"{"prompt_cache_key": null, "x-api-key": "", "cookie": true, "password": 12, "client_secret": [false]}"#,
        r#"{"prompt_cache_key": null, "x-api-key": "", "cookie": true, "password": "[REDACTED]", "client_secret": "[REDACTED]"}"#,
    ),
    // ---- JSON Schema definitions under a credential name are walked ----
    // The Python SDK's FastMCP, for `def fetch_weather(city: str, api_key: str)`.
    (
        "json",
        r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"fetch_weather","inputSchema":{"properties":{"city":{"title":"City","type":"string"},"api_key":{"title":"Api Key","type":"string"}},"required":["city","api_key"],"title":"fetch_weatherArguments","type":"object"},"outputSchema":{"properties":{"result":{"title":"Result","type":"string"}},"required":["result"],"title":"fetch_weatherOutput","type":"object"}}]}}"#,
        r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"fetch_weather","inputSchema":{"properties":{"city":{"title":"City","type":"string"},"api_key":{"title":"Api Key","type":"string"}},"required":["city","api_key"],"title":"fetch_weatherArguments","type":"object"},"outputSchema":{"properties":{"result":{"title":"Result","type":"string"}},"required":["result"],"title":"fetch_weatherOutput","type":"object"}}]}}"#,
    ),
    // FastMCP, for a `credentials: Credentials` model with a `SecretStr`
    // password and an optional token: `$ref`, `$defs`, `anyOf`, `default: null`.
    (
        "json",
        r##"{"name": "login", "inputSchema": {"$defs": {"Credentials": {"properties": {"username": {"title": "Username", "type": "string"}, "password": {"format": "password", "title": "Password", "type": "string", "writeOnly": true}, "token": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Token"}}, "required": ["username", "password"], "title": "Credentials", "type": "object"}}, "properties": {"credentials": {"$ref": "#/$defs/Credentials"}, "otp": {"default": 0, "title": "Otp", "type": "integer"}}, "required": ["credentials"], "title": "loginArguments", "type": "object"}}"##,
        r##"{"name": "login", "inputSchema": {"$defs": {"Credentials": {"properties": {"username": {"title": "Username", "type": "string"}, "password": {"format": "password", "title": "Password", "type": "string", "writeOnly": true}, "token": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Token"}}, "required": ["username", "password"], "title": "Credentials", "type": "object"}}, "properties": {"credentials": {"$ref": "#/$defs/Credentials"}, "otp": {"default": 0, "title": "Otp", "type": "integer"}}, "required": ["credentials"], "title": "loginArguments", "type": "object"}}"##,
    ),
    // FastMCP, `api_token: Optional[str] = None` and a described `SecretStr`.
    (
        "json",
        r#"{"name": "search", "inputSchema": {"properties": {"query": {"title": "Query", "type": "string"}, "api_token": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Api Token"}, "password": {"description": "The account password", "format": "password", "title": "Password", "type": "string", "writeOnly": true}}, "required": ["query", "password"], "title": "searchArguments", "type": "object"}, "outputSchema": null}"#,
        r#"{"name": "search", "inputSchema": {"properties": {"query": {"title": "Query", "type": "string"}, "api_token": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Api Token"}, "password": {"description": "The account password", "format": "password", "title": "Password", "type": "string", "writeOnly": true}}, "required": ["query", "password"], "title": "searchArguments", "type": "object"}, "outputSchema": null}"#,
    ),
    // The TypeScript SDK's zod conversion (draft 7): a credential object's
    // `default` and `enum` stay under its name.
    (
        "json",
        r##"{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"apiKey":{"type":"string","description":"Your API key for the weather service"},"password":{"type":"string","minLength":8},"auth":{"type":"object","properties":{"token":{"type":"string"},"scheme":{"default":"bearer","type":"string","enum":["bearer","basic"]}},"required":["token","scheme"],"additionalProperties":false}},"required":["apiKey"],"additionalProperties":false}"##,
        r##"{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"apiKey":{"type":"string","description":"Your API key for the weather service"},"password":{"type":"string","minLength":8},"auth":{"type":"object","properties":{"token":{"type":"string"},"scheme":{"default":"[REDACTED]","type":"string","enum":"[REDACTED]"}},"required":["token","scheme"],"additionalProperties":false}},"required":["apiKey"],"additionalProperties":false}"##,
    ),
    // A value inside a definition goes as under the credential name.
    (
        "json",
        r#"{"password": {"type": "string", "default": "hunter2", "examples": ["hunter2"], "description": "at least 8 characters"}}"#,
        r#"{"password": {"type": "string", "default": "[REDACTED]", "examples": "[REDACTED]", "description": "at least 8 characters"}}"#,
    ),
    (
        "json",
        r#"{"token": {"const": "hunter2"}, "secret": {"enum": ["a", "b"], "default": null}, "apiKey": {"type": ["string", "null"], "default": false}}"#,
        r#"{"token": {"const": "[REDACTED]"}, "secret": {"enum": "[REDACTED]", "default": null}, "apiKey": {"type": ["string", "null"], "default": false}}"#,
    ),
    // Subschemas must be definitions too.
    (
        "json",
        r#"{"credentials": {"type": "object", "properties": {"user": {"type": "string", "default": "bob"}, "pass": "hunter2", "pin": {"value": "1234"}}, "items": {"id": 7}, "anyOf": [{"type": "object"}, {"value": "hunter2"}, "hunter2", true]}}"#,
        r#"{"credentials": {"type": "object", "properties": {"user": {"type": "string", "default": "[REDACTED]"}, "pass": "[REDACTED]", "pin": "[REDACTED]"}, "items": "[REDACTED]", "anyOf": [{"type": "object"}, "[REDACTED]", "[REDACTED]", true]}}"#,
    ),
    // Another keyword keeps a scalar or a list of scalars, never an object.
    (
        "json",
        r#"{"password": {"type": "string", "description": {"value": "hunter2"}, "required": ["a", {"value": "hunter2"}, ["hunter2"]], "title": "Password: hunter2"}}"#,
        r#"{"password": {"type": "string", "description": "[REDACTED]", "required": ["a", "[REDACTED]", "[REDACTED]"], "title": "Password: [REDACTED]"}}"#,
    ),
    // ---- near-misses: objects that are values, replaced whole ----
    (
        "json",
        r#"{"apiKey": {"id": 7}, "password": {"value": "hunter2"}, "token": {"type": "bearer", "access_token": "x"}, "auth": {"type": "hunter2"}}"#,
        r#"{"apiKey": "[REDACTED]", "password": "[REDACTED]", "token": "[REDACTED]", "auth": "[REDACTED]"}"#,
    ),
    (
        "json",
        r#"{"password": {"type": ["string", "hunter2"]}, "secret": {"$ref": "hunter2"}, "token": {"title": "hunter2", "description": "no type"}, "apiKey": {"type": "string", "key": "hunter2"}}"#,
        r#"{"password": "[REDACTED]", "secret": "[REDACTED]", "token": "[REDACTED]", "apiKey": "[REDACTED]"}"#,
    ),
    (
        "json",
        r#"{"password": {"type": 7}, "secret": {"$ref": 7}, "token": {"type": {"type": "string"}}, "apiKey": {"type": ["string", ["null"]]}, "auth": {"type": "string", "ghp_0123456789abcdefghijklmnopqrstuvwxyz": 1}}"#,
        r#"{"password": "[REDACTED]", "secret": "[REDACTED]", "token": "[REDACTED]", "apiKey": "[REDACTED]", "auth": "[REDACTED]"}"#,
    ),
    // Two `type` members: the first one's bytes are in the text, so it
    // counts too.
    (
        "json",
        r#"{"password": {"type": "hunter2", "type": "string"}}"#,
        r#"{"password": "[REDACTED]"}"#,
    ),
    // A definition under a name that is no credential name is any value.
    (
        "json",
        r#"{"note": {"type": "string", "default": "hello"}}"#,
        r#"{"note": {"type": "string", "default": "hello"}}"#,
    ),
    // Named by a sibling, a definition is still a value.
    (
        "json",
        r#"{"name": "api_key", "value": {"type": "string"}}"#,
        r#"{"name": "api_key", "value": "[REDACTED]"}"#,
    ),
    (
        "json",
        r#"{"text": "{\"apiKey\": {\"type\": \"string\", \"default\": \"abc\"}, \"password\": {\"id\": 7}}"}"#,
        r#"{"text": "{\"apiKey\": {\"type\": \"string\", \"default\": \"[REDACTED]\"}, \"password\": \"[REDACTED]\"}"}"#,
    ),
    (
        "value",
        r#"{"properties": {"apiKey": {"type": "string", "description": "the key", "default": "k-123"}, "password": {"id": 7}, "token": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}}}"#,
        r#"{"properties": {"apiKey": {"type": "string", "description": "the key", "default": "[REDACTED]"}, "password": "[REDACTED]", "token": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}}}"#,
    ),
    (
        "value",
        r#"{"credentials": {"type": "object", "properties": {"ghp_0123456789abcdefghijklmnopqrstuvwxyz": {"type": "string"}, "pass": "x"}}}"#,
        r#"{"credentials": {"type": "object", "properties": {"[REDACTED]": {"type": "string"}, "pass": "[REDACTED]"}}}"#,
    ),
];
