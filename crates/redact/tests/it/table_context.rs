//! Rows of the redaction table (see `table.rs` for the modes) for the rules
//! that find a credential by its context: a name, a header, a flag, a form,
//! a sibling; and for the names and prose that must stay. Each rule has rows
//! that must be redacted and rows that must be kept.

pub(crate) const ROWS: &[(&str, &str, &str)] = &[
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
    // A run of letters that prose would not write is a value, even before more words.
    (
        "text",
        "X-Api-Key: VsqkqvSbiNPHBhJEgVLyHCIP Basic dXNlcjpwYXNz",
        "X-Api-Key: [REDACTED] Basic [REDACTED]",
    ),
    (
        "text",
        "password: qwertyuiopasdfghjkl then more",
        "password: [REDACTED] then more",
    ),
    (
        "text",
        "Password: Required for login",
        "Password: Required for login",
    ),
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
    ("text", "api_token: |", "api_token: |"),
    ("text", "api_token: >-\n", "api_token: >-\n"),
    (
        "text",
        "<password>\n  hunter2\nmore",
        "<password>\n  [REDACTED]\nmore",
    ),
    ("text", "<password>abc\nmore", "<password>[REDACTED]\nmore"),
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
    // ---- more keep rows, and each rule inside JSON strings ----
    (
        "text",
        "no Authorization header was sent",
        "no Authorization header was sent",
    ),
    ("text", "note=\"an open quote", "note=\"an open quote"),
    (
        "json",
        "{\"log\":\"password=\\\"secret value\\nnext\"}",
        "{\"log\":\"password=\\\"[REDACTED]\\nnext\"}",
    ),
    (
        "json",
        "{\"log\":\"key \\u0073k-proj-abcdefghijklmnopqrstuvwx end\"}",
        "{\"log\":\"key [REDACTED] end\"}",
    ),
    (
        "json",
        "{\"xml\":\"<apiToken>abc</apiToken><user>bob</user>\"}",
        "{\"xml\":\"<apiToken>[REDACTED]</apiToken><user>bob</user>\"}",
    ),
    (
        "json",
        "{\"makefile\":\"API_TOKEN ?= abc\\nCC ?= gcc\"}",
        "{\"makefile\":\"API_TOKEN ?= [REDACTED]\\nCC ?= gcc\"}",
    ),
    (
        "json",
        "{\"cmd\":\"deploy --password hunter2 --user bob\"}",
        "{\"cmd\":\"deploy --password [REDACTED] --user bob\"}",
    ),
    (
        "json",
        "{\"code\":\"let token = get_token();\",\"note\":\"The key: it is simple\"}",
        "{\"code\":\"let token = get_token();\",\"note\":\"The key: it is simple\"}",
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
        "[[\"x-auth-token\", \"abc123\"], [\"accept\", \"*/*\"]]",
        "[[\"x-auth-token\", \"[REDACTED]\"], [\"accept\", \"*/*\"]]",
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
];
