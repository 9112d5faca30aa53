//! Fetching a list again, page by page, as the recording holds it: every page when the recorded
//! listing was read to its end, else as many items as the client read.

use calltape_recorder::mcp::{CURSOR, ListPages, NEXT_CURSOR, list_items_key};
use serde_json::{Value, json};

use crate::mcp::replayed_session::Conn;

/// The most pages one listing reads: a server whose cursors never end stops there.
const MAX_PAGES: usize = 1_000;

impl Conn {
    /// Sends `request` (a list method's first page) and the requests for the pages after it, and
    /// answers with every page's items in one result, as the recorder writes a list.
    ///
    /// `recorded` is the recorded answer, when there is one: a listing the client left unfinished
    /// (it kept a `nextCursor`) is read until it holds as many items, and its cursor is the
    /// recorded one, since a cursor is the server's own token, not part of what it lists. An error
    /// on any page is the answer.
    pub(super) async fn list(
        &mut self,
        request: &Value,
        recorded: Option<&Value>,
    ) -> Result<Value, String> {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let Some(mut pages) = ListPages::new(method) else {
            return self.request(request).await;
        };
        let recorded_cursor = recorded
            .and_then(|r| r.get(NEXT_CURSOR))
            .filter(|c| !c.is_null());
        let enough = recorded_cursor.map(|_| {
            recorded
                .zip(list_items_key(method))
                .and_then(|(r, key)| r.get(key))
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
        });
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let mut page = request.clone();
        for n in 1..=MAX_PAGES {
            let answer = self.request(&page).await?;
            let Some(result) = answer.get("result") else {
                return Ok(answer);
            };
            pages.add(result.clone());
            let Some(cursor) = pages.next_cursor().cloned() else {
                break;
            };
            if enough.is_some_and(|items| pages.items() >= items) {
                break;
            }
            page["id"] = json!(format!("{}-page-{}", id_text(&id), n + 1));
            page["params"][CURSOR] = cursor;
        }
        let mut result = pages.into_answer();
        if let (Some(cursor), Some(left)) = (recorded_cursor, result.get_mut(NEXT_CURSOR)) {
            *left = cursor.clone();
        }
        Ok(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }
}

/// A request id as text, for the ids of the pages after the first.
fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
