//! Calls that need the client's input (MCP 2026-07-28): the server answers a `tools/call`,
//! `prompts/get` or `resources/read` with a result whose `resultType` is `input_required` (its
//! `inputRequests`, an opaque `requestState`), and the client sends the same call again, under a new
//! id, with its `inputResponses` and that `requestState`, until the server gives the final result.
//! The recorder writes one line for such an exchange, as for a legacy call during which the server
//! asked the client something: the first request's time, name and input, and the final result; the
//! rounds between are not recorded.
//!
//! Methods that are not calls in either era, whatever `--methods` says: `server/discover` (what
//! `initialize` was, minus the session) and `subscriptions/listen` (a stream of notifications that
//! ends when the client goes).

use serde_json::Value;

pub(crate) use calltape_stdio_bridge::vocab::SERVER_DISCOVER;
use calltape_stdio_bridge::vocab::SUBSCRIPTIONS_LISTEN;

/// The `resultType` of a result that asks the client for input before the call can end.
pub(crate) const INPUT_REQUIRED: &str = "input_required";

/// The `_meta` key a 2026-07-28 server says who it is under, on each result: the recorder takes the
/// `server` of a call's line from it, as it takes it from `initialize`'s answer in the handshake era.
pub(crate) use calltape_stdio_bridge::vocab::META_SERVER_INFO as SERVER_INFO_META;

/// Requests that are never recorded as calls.
pub(crate) const NOT_CALLS: &[&str] = &[SERVER_DISCOVER, SUBSCRIPTIONS_LISTEN];

/// The `requestState` of a result that asks for input, `Some(None)` when it carries none; `None`
/// when the result is not one that asks for input.
pub(crate) fn input_required_state(response: &Value) -> Option<Option<String>> {
    let result = response.get("result")?;
    if result.get("resultType")?.as_str()? != INPUT_REQUIRED {
        return None;
    }
    Some(
        result
            .get("requestState")
            .and_then(Value::as_str)
            .map(str::to_owned),
    )
}

/// Whether a request's `params` make it the retry of a call that asked for input: it carries the
/// client's `inputResponses` or the server's `requestState`.
pub(crate) fn is_retry(params: Option<&Value>) -> bool {
    params.is_some_and(|p| p.get("inputResponses").is_some() || p.get("requestState").is_some())
}

/// The `requestState` a retry echoes.
pub(crate) fn retry_state(params: Option<&Value>) -> Option<&str> {
    params?.get("requestState")?.as_str()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::mcp::{Outcome, Recorder, RecorderOptions, Recording};
    use serde_json::json;

    /// Feeds `frames` (`true`: from the client) to one session and reads the recording back, with
    /// the count of calls left unanswered.
    pub(crate) async fn record(frames: &[(bool, &str)], methods: &[&str]) -> (Recording, u64) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let options = RecorderOptions::default().methods(methods.iter().copied());
        let recorder = Recorder::open(&path, options).await.unwrap();
        let session = recorder.session();
        let start = std::time::SystemTime::now();
        for (n, (from_client, frame)) in frames.iter().enumerate() {
            let at = start + std::time::Duration::from_millis(n as u64);
            match from_client {
                true => session.client_frame(frame.as_bytes(), at),
                false => session.server_frame(frame.as_bytes(), at),
            }
        }
        drop(session);
        let report = recorder.close().await;
        (Recording::read(&path).unwrap(), report.unanswered)
    }

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"modern","version":"2.3"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;

    #[tokio::test]
    async fn an_input_required_exchange_is_one_call_with_the_final_result() {
        let call = |id: u32, extra: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"book","arguments":{{"city":"Oslo","apiKey":"ak_live_abcdefghijklmnop"}}{extra},{META}}}}}"#
            )
        };
        let frames = [
            (true, call(1, "")),
            (
                false,
                r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"which day?"}}},"requestState":"s1"}}"#.to_owned(),
            ),
            // Another call meanwhile, answered at once.
            (true, call(2, "").replace("\"book\"", "\"weather\"")),
            (
                false,
                r#"{"jsonrpc":"2.0","id":2,"result":{"content":[],"resultType":"complete"}}"#
                    .to_owned(),
            ),
            (
                true,
                call(
                    3,
                    r#","inputResponses":{"q":{"action":"accept","content":{"day":"Mon"}}},"requestState":"s1""#,
                ),
            ),
            (
                false,
                r#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","requestState":"s2"}}"#.to_owned(),
            ),
            (true, call(4, r#","requestState":"s2""#)),
            (
                false,
                r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"booked Mon"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"booker","version":"1"}}}}"#.to_owned(),
            ),
        ];
        let frames: Vec<(bool, &str)> = frames.iter().map(|(c, f)| (*c, f.as_str())).collect();
        let (recording, unanswered) = record(&frames, &["tools/call"]).await;
        assert_eq!(unanswered, 0);
        let calls: Vec<_> = recording.calls.iter().map(|c| &c.record).collect();
        assert_eq!(calls.len(), 2, "{calls:#?}");
        let (weather, book) = (calls[0], calls[1]);
        assert_eq!(weather.name, "weather");
        assert_eq!(book.name, "book");
        assert_eq!(
            book.input,
            Some(json!({"city": "Oslo", "apiKey": "[REDACTED]"}))
        );
        assert_eq!(
            book.outcome,
            Outcome::Answer(json!({"content": [{"type": "text", "text": "booked Mon"}],
                "resultType": "complete", "_meta": {SERVER_INFO_META: {"name": "booker", "version": "1"}}}))
        );
        // Who the server is comes from its stamp, as from `initialize`'s answer in the other era.
        assert_eq!(
            book.server.as_ref().map(|s| s["name"].clone()),
            Some(json!("booker"))
        );
        assert_eq!(book.protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(
            book.client.as_ref().map(|c| c["name"].clone()),
            Some(json!("modern"))
        );
        // From the first request to the final answer: frames 0 to 7, a millisecond apart.
        assert_eq!(book.duration_ms, 7.0);
    }

    #[tokio::test]
    async fn a_call_left_waiting_for_input_is_unanswered_and_discover_and_listen_are_not_calls() {
        let frames: &[(bool, &str)] = &[
            (
                true,
                r#"{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{}}"#,
            ),
            (
                false,
                r#"{"jsonrpc":"2.0","id":"d","result":{"supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":{"name":"modern-server","version":"9"},"cacheScope":"public","resultType":"complete"}}"#,
            ),
            (
                true,
                r#"{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"filter":{"toolsListChanged":true}}}"#,
            ),
            (
                true,
                r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{}}}"#,
            ),
            (
                false,
                r#"{"jsonrpc":"2.0","id":1,"result":{"messages":[],"resultType":"complete"}}"#,
            ),
            (
                true,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}"#,
            ),
            (
                false,
                r#"{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{}}}"#,
            ),
        ];
        let methods = [
            "tools/call",
            "prompts/get",
            "server/discover",
            "subscriptions/listen",
        ];
        let (recording, unanswered) = record(frames, &methods).await;
        let calls: Vec<_> = recording.calls.iter().map(|c| &c.record).collect();
        assert_eq!(calls.len(), 1, "{calls:#?}");
        assert_eq!(calls[0].method, "prompts/get");
        // The server's info comes from discover, as it comes from initialize.
        assert_eq!(
            calls[0].server.as_ref().map(|s| s["name"].clone()),
            Some(json!("modern-server"))
        );
        assert_eq!(unanswered, 1);
    }

    #[test]
    fn results_that_ask_for_input_and_their_retries_are_told_apart() {
        let asks =
            json!({"id": 1, "result": {"resultType": "input_required", "requestState": "s"}});
        assert_eq!(input_required_state(&asks), Some(Some("s".to_owned())));
        let bare = json!({"id": 1, "result": {"resultType": "input_required"}});
        assert_eq!(input_required_state(&bare), Some(None));
        let done = json!({"id": 1, "result": {"resultType": "complete"}});
        assert_eq!(input_required_state(&done), None);
        assert_eq!(input_required_state(&json!({"id": 1, "error": {}})), None);
        assert!(is_retry(Some(&json!({"name": "a", "inputResponses": {}}))));
        assert!(is_retry(Some(&json!({"name": "a", "requestState": "s"}))));
        assert!(!is_retry(Some(&json!({"name": "a", "arguments": {}}))));
        assert_eq!(retry_state(Some(&json!({"requestState": "s"}))), Some("s"));
    }
}
