//! Replaying a call that the server runs only as a task (MCP 2025-11-25): a recording holds such a
//! call as a plain one, with its final result. When the server refuses it plain and its `tools/list`
//! declares `execution.taskSupport: "required"`, the call is sent again with a `task` parameter, its
//! task polled with `tasks/get` and its result fetched with `tasks/result`, all within the call's
//! timeout.

use std::time::Duration;

use calltape_recorder::mcp::{TASKS_RESULT, strip_related_task};
use calltape_stdio_bridge::vocab::{TASKS_GET, TOOLS_LIST};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::mcp::replayed_session::{Conn, humanize};

/// How long to wait between polls when the server suggests nothing, and at most.
const DEFAULT_POLL: u64 = 500;
const MAX_POLL: u64 = 5_000;

impl Conn {
    /// Whether the server declares that `tool` runs only as a task; its tool list is read once per
    /// session, on the first call that needs it.
    pub(super) async fn requires_task(&mut self, tool: &str) -> Result<bool, String> {
        if self.task_tools.is_none() {
            self.task_tools = Some(self.task_only_tools().await?);
        }
        Ok(self
            .task_tools
            .as_ref()
            .is_some_and(|tools| tools.iter().any(|t| t == tool)))
    }

    /// The names of the tools whose `execution.taskSupport` is `required`, over every page.
    async fn task_only_tools(&mut self) -> Result<Vec<String>, String> {
        let request = json!({"jsonrpc": "2.0", "id": "calltape-tools",
            "method": TOOLS_LIST, "params": {}});
        let answer = self.list(&request, None).await?;
        let names = answer
            .pointer("/result/tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|tool| {
                tool.pointer("/execution/taskSupport")
                    .and_then(Value::as_str)
                    == Some("required")
            })
            .filter_map(|tool| tool.get("name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        Ok(names)
    }

    /// Sends `request` (a `tools/call`) as a task, polls the task until it ends and fetches its
    /// result: the response `tasks/result` gave, without the `_meta` that names the task. An error
    /// on the way is the call's outcome; a task still running at the timeout fails the replay.
    pub(super) async fn run_task(&mut self, request: &Value) -> Result<Value, String> {
        let deadline = Instant::now() + self.timeout;
        let mut request = request.clone();
        let ttl = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
        request["params"]["task"] = json!({"ttl": ttl});
        let id = request["id"].to_string();
        let created = self.request(&request).await?;
        let Some(task) = created.pointer("/result/task").cloned() else {
            // An error, or a plain answer after all.
            return Ok(created);
        };
        let task_id = task
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or("the server's task has no taskId")?
            .to_owned();
        let mut status = task;
        for poll in 1.. {
            if let Some("completed" | "failed" | "cancelled" | "input_required") =
                status.get("status").and_then(Value::as_str)
            {
                break;
            }
            let wait = status
                .get("pollInterval")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_POLL)
                .min(MAX_POLL);
            let wake = Instant::now() + Duration::from_millis(wait);
            if wake >= deadline {
                return Err(format!(
                    "its task {task_id} did not end within {}",
                    humanize(self.timeout)
                ));
            }
            tokio::time::sleep_until(wake).await;
            let get = json!({"jsonrpc": "2.0", "id": format!("calltape-task-{id}-{poll}"),
                "method": TASKS_GET, "params": {"taskId": task_id}});
            let answer = self.request(&get).await?;
            match answer.get("result") {
                Some(result) => status = result.clone(),
                None => return Ok(answer),
            }
        }
        let fetch = json!({"jsonrpc": "2.0", "id": format!("calltape-task-{id}-result"),
            "method": TASKS_RESULT, "params": {"taskId": task_id}});
        let mut answer = self.request(&fetch).await?;
        if let Some(result) = answer.get_mut("result") {
            strip_related_task(result);
        }
        Ok(answer)
    }
}
