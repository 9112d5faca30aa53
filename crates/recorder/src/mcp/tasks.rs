//! Task-augmented calls (MCP 2025-11-25): a `tools/call` with a `task` parameter is answered with a
//! task handle, the client polls `tasks/get`, and fetches the call's own result with `tasks/result`.
//! The recorder writes one line for such a call, with that result, so that it replays as a plain
//! call; the handle and the polls are not recorded.

use serde_json::Value;

/// The method a client fetches a task's result with.
pub use calltape_stdio_bridge::vocab::TASKS_RESULT;

/// The `_meta` key a task's result names its task under: the task is not part of the call's answer.
pub use calltape_stdio_bridge::vocab::META_RELATED_TASK as RELATED_TASK_META;

/// The id of the task a `tools/call`'s response created: `result.task.taskId` of a result that is
/// not a tool result.
pub(crate) fn created_task(response: &Value) -> Option<String> {
    let result = response.get("result")?;
    if result.get("content").is_some() {
        return None;
    }
    result
        .get("task")?
        .get("taskId")?
        .as_str()
        .map(str::to_owned)
}

/// The id of the task a `tasks/result` request's `params` fetch.
pub(crate) fn fetched_task(params: Option<&Value>) -> Option<&str> {
    params?.get("taskId")?.as_str()
}

/// Removes the [`RELATED_TASK_META`] entry from a task's result (and its `_meta` when that leaves
/// it empty): the result then reads as the plain call's would.
pub fn strip_related_task(result: &mut Value) {
    let Some(Value::Object(meta)) = result.get_mut("_meta") else {
        return;
    };
    meta.remove(RELATED_TASK_META);
    if meta.is_empty()
        && let Value::Object(result) = result
    {
        result.remove("_meta");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::{Outcome, Recorder, RecorderOptions, Recording};
    use serde_json::json;

    #[tokio::test]
    async fn a_task_augmented_call_is_one_line_with_the_result_the_client_fetched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let recorder = Recorder::open(&path, RecorderOptions::default())
            .await
            .unwrap();
        let session = recorder.session();
        let at = std::time::SystemTime::now();
        let frames: &[(bool, &str)] = &[
            (
                true,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"research","arguments":{"topic":"tides"},"task":{"ttl":60000}}}"#,
            ),
            (
                false,
                r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-7","status":"working","pollInterval":1000}}}"#,
            ),
            (
                true,
                r#"{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t-7"}}"#,
            ),
            (
                false,
                r#"{"jsonrpc":"2.0","id":2,"result":{"taskId":"t-7","status":"completed"}}"#,
            ),
            (
                true,
                r#"{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"t-7"}}"#,
            ),
            (
                false,
                r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"report"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-7"}}}}"#,
            ),
            (
                true,
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
            ),
            (false, r#"{"jsonrpc":"2.0","id":4,"result":{"content":[]}}"#),
        ];
        for (from_client, frame) in frames {
            match from_client {
                true => session.client_frame(frame.as_bytes(), at),
                false => session.server_frame(frame.as_bytes(), at),
            }
        }
        drop(session);
        let report = recorder.close().await;
        assert_eq!((report.recorded, report.unanswered), (2, 0), "{report}");
        let recording = Recording::read(&path).unwrap();
        let call = &recording.calls[0].record;
        assert_eq!(
            (call.method.as_str(), call.name.as_str()),
            ("tools/call", "research")
        );
        assert_eq!(call.input, Some(json!({"topic": "tides"})));
        assert_eq!(
            call.outcome,
            Outcome::Answer(json!({"content": [{"type": "text", "text": "report"}]}))
        );
        assert_eq!(recording.calls[1].record.name, "echo");
    }

    #[test]
    fn a_task_handle_is_told_from_a_result_and_its_task_stripped_from_the_final_result() {
        let handle = json!({"id": 1, "result": {"task": {"taskId": "t1", "status": "working"}}});
        assert_eq!(created_task(&handle), Some("t1".to_owned()));
        let result = json!({"id": 1, "result": {"content": [], "task": {"taskId": "t1"}}});
        assert_eq!(created_task(&result), None);
        assert_eq!(fetched_task(Some(&json!({"taskId": "t1"}))), Some("t1"));
        let mut final_result =
            json!({"content": [], "_meta": {RELATED_TASK_META: {"taskId": "t1"}}});
        strip_related_task(&mut final_result);
        assert_eq!(final_result, json!({"content": []}));
        let mut kept =
            json!({"content": [], "_meta": {RELATED_TASK_META: {"taskId": "t1"}, "k": 1}});
        strip_related_task(&mut kept);
        assert_eq!(kept, json!({"content": [], "_meta": {"k": 1}}));
    }
}
