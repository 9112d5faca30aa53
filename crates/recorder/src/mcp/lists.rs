//! The server's surface: the lists a client fetches (`tools/list`, `prompts/list`,
//! `resources/list`, `resources/templates/list`), recorded so that a replay can tell when a tool,
//! prompt or resource went away or changed its inputs.
//!
//! A list is recorded once per session, as the last listing the client fetched to its end: one line
//! whose answer holds the items of every page, in the order the pages came, and the other fields of
//! the last page. A list answered in pages (`nextCursor`) is therefore one line however many pages
//! it took; a listing the client left before its last page (and no listing it finished) is recorded
//! as far as the client read it, with the `nextCursor` of the last page it read, which says that
//! more items were left unread. The line's `input` is `{}` and its `name` empty: a list has no
//! arguments of its own besides the cursor, which is the server's, not the client's.
//!
//! [`ListPages`] puts the pages together, for the recorder and for a replay that fetches the list
//! again.

use serde_json::{Map, Value};

use calltape_stdio_bridge::vocab::{
    PROMPTS_LIST, RESOURCES_LIST, RESOURCES_TEMPLATES_LIST, TOOLS_LIST,
};

/// The list methods that describe a server's surface, each with the field of its answer that holds
/// the items.
pub const LIST_METHODS: &[(&str, &str)] = &[
    (TOOLS_LIST, "tools"),
    (PROMPTS_LIST, "prompts"),
    (RESOURCES_LIST, "resources"),
    (RESOURCES_TEMPLATES_LIST, "resourceTemplates"),
];

/// The field of a list answer that names the next page.
pub const NEXT_CURSOR: &str = "nextCursor";

/// The field of a list request that asks for a page after the first.
pub const CURSOR: &str = "cursor";

/// The field that holds a list method's items (`tools` for `tools/list`), or `None` when `method`
/// is not one of the [`LIST_METHODS`].
pub fn list_items_key(method: &str) -> Option<&'static str> {
    LIST_METHODS
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, key)| *key)
}

/// The pages of one listing put together: every page's items in order, the other fields of the
/// last page, and its `nextCursor` while there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPages {
    key: &'static str,
    items: Vec<Value>,
    /// The last page's fields other than the items and the cursor.
    rest: Map<String, Value>,
    /// The cursor of the next page, as the server wrote it.
    next: Option<Value>,
    pages: usize,
}

impl ListPages {
    /// An empty listing of `method`'s items; `None` when `method` is not a list method.
    pub fn new(method: &str) -> Option<Self> {
        Some(Self {
            key: list_items_key(method)?,
            items: Vec::new(),
            rest: Map::new(),
            next: None,
            pages: 0,
        })
    }

    /// Adds the `result` of the next page. A result that is not an object adds a page with no item.
    pub fn add(&mut self, result: Value) {
        self.pages += 1;
        let Value::Object(mut result) = result else {
            self.next = None;
            return;
        };
        if let Some(Value::Array(items)) = result.remove(self.key) {
            self.items.extend(items);
        }
        self.next = result.remove(NEXT_CURSOR).filter(|c| !c.is_null());
        self.rest = result;
    }

    /// The cursor of the page after the last one added, when the server named one.
    pub fn next_cursor(&self) -> Option<&Value> {
        self.next.as_ref()
    }

    /// Whether the last page added named no next page: the listing is whole.
    pub fn is_finished(&self) -> bool {
        self.pages > 0 && self.next.is_none()
    }

    /// How many pages were added.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// How many items the pages held.
    pub fn items(&self) -> usize {
        self.items.len()
    }

    /// The listing as one answer: the last page's fields, the items of every page, and the
    /// `nextCursor` of the last page when it named one.
    pub fn into_answer(self) -> Value {
        let mut answer = self.rest;
        answer.insert(self.key.to_owned(), Value::Array(self.items));
        if let Some(next) = self.next {
            answer.insert(NEXT_CURSOR.to_owned(), next);
        }
        Value::Object(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pages_make_one_answer_with_every_item_in_order() {
        let mut pages = ListPages::new("resources/list").unwrap();
        assert!(!pages.is_finished());
        pages.add(json!({"resources": [{"uri": "a"}, {"uri": "b"}], "nextCursor": "MTA="}));
        assert_eq!(pages.next_cursor(), Some(&json!("MTA=")));
        assert!(!pages.is_finished());
        pages.add(json!({"resources": [{"uri": "c"}], "ttlMs": 5}));
        assert!(pages.is_finished());
        assert_eq!((pages.pages(), pages.items()), (2, 3));
        assert_eq!(
            pages.into_answer(),
            json!({"resources": [{"uri": "a"}, {"uri": "b"}, {"uri": "c"}], "ttlMs": 5})
        );
    }

    #[test]
    fn a_listing_left_before_its_last_page_keeps_the_cursor_it_stopped_at() {
        let mut pages = ListPages::new("tools/list").unwrap();
        pages.add(json!({"tools": [{"name": "a"}], "nextCursor": "2"}));
        assert_eq!(
            pages.into_answer(),
            json!({"tools": [{"name": "a"}], "nextCursor": "2"})
        );
        assert_eq!(ListPages::new("tools/call"), None);
        assert_eq!(
            list_items_key("resources/templates/list"),
            Some("resourceTemplates")
        );
    }
}
