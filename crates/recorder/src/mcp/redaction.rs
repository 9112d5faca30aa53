//! What of a call passes through the redactor: the input, the answer, an error's message and a
//! resource URI.

use std::borrow::Cow;

use calltape_redact::{KnownSecrets, Redactor};

use crate::mcp::format::{ErrorCode, Outcome};
use calltape_stdio_bridge::vocab::RESOURCES_READ;

/// Redacts an outcome in place: an answer by field name and in every text (texts that hold JSON are
/// redacted as JSON), an error's message and a text error code (a tool error's `_meta.code`) as
/// text.
pub fn redact_outcome(redactor: &Redactor, outcome: &mut Outcome) {
    match outcome {
        Outcome::Answer(answer) => redactor.redact_value(answer),
        Outcome::Error(error) => {
            if let ErrorCode::Text(code) = &mut error.code
                && let Cow::Owned(redacted) = redactor.redact_text(code)
            {
                *code = redacted;
            }
            if let Some(message) = &mut error.message
                && let Cow::Owned(redacted) = redactor.redact_text(message)
            {
                *message = redacted;
            }
        }
    }
}

/// The name a call is recorded under: a resource URI is redacted as text, a tool or prompt name is
/// kept as the client sent it.
pub fn redact_name(redactor: &Redactor, method: &str, name: &str) -> String {
    if method == RESOURCES_READ || name.contains("://") {
        redactor.redact_text(name).into_owned()
    } else {
        name.to_owned()
    }
}

/// Hides each of `known` wherever the outcome holds it: in an answer's strings and object keys, in
/// an error's message and text code.
pub fn hide_known(outcome: &mut Outcome, known: &KnownSecrets) {
    if known.is_empty() {
        return;
    }
    match outcome {
        Outcome::Answer(answer) => known.hide_in_value(answer),
        Outcome::Error(error) => {
            for text in [
                match &mut error.code {
                    ErrorCode::Text(code) => Some(code),
                    ErrorCode::Number(_) => None,
                },
                error.message.as_mut(),
            ]
            .into_iter()
            .flatten()
            {
                if let Cow::Owned(hidden) = known.hide_in_text(text) {
                    *text = hidden;
                }
            }
        }
    }
}

/// Hides each of `values` (whatever their length) wherever the outcome holds it, as [`hide_known`]
/// does: for values a caller sent the server itself, such as secrets filled into a replayed call,
/// which must come back into no report and no rewritten recording.
pub fn hide_sent_values<'a>(outcome: &mut Outcome, values: impl IntoIterator<Item = &'a str>) {
    let known = KnownSecrets::new();
    for value in values {
        known.add("sent", value);
    }
    hide_known(outcome, &known);
}
