//! What of a call passes through the redactor: the input, the answer, an error's message and a
//! resource URI.

use std::borrow::Cow;

use calltape_redact::Redactor;

use crate::mcp::format::Outcome;

/// Redacts an outcome in place: an answer by field name and in every text (texts that hold JSON are
/// redacted as JSON), an error's message as text.
pub fn redact_outcome(redactor: &Redactor, outcome: &mut Outcome) {
    match outcome {
        Outcome::Answer(answer) => redactor.redact_value(answer),
        Outcome::Error(error) => {
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
pub(crate) fn redact_name(redactor: &Redactor, method: &str, name: &str) -> String {
    if method == "resources/read" || name.contains("://") {
        redactor.redact_text(name).into_owned()
    } else {
        name.to_owned()
    }
}
