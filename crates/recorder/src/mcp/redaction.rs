//! What of a call passes through the redactor: the input, the answer, an error's message and a
//! resource URI.

use std::borrow::Cow;

use calltape_redact::Redactor;

use crate::echo::EchoedSecrets;
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

/// Hides each of `secrets` wherever the outcome's texts hold it.
pub(crate) fn hide_echoes(outcome: &mut Outcome, secrets: &EchoedSecrets) {
    match outcome {
        Outcome::Answer(answer) => secrets.hide_in_value(answer),
        Outcome::Error(error) => {
            if let Some(message) = &mut error.message {
                secrets.hide_in(message);
            }
        }
    }
}

/// Hides each of `values` (whatever their length) wherever the outcome's texts hold it, as
/// `[REDACTED]`: for values a caller sent the server itself, such as secrets filled into a replayed
/// call, which must come back into no report and no rewritten recording.
pub fn hide_sent_values<'a>(outcome: &mut Outcome, values: impl IntoIterator<Item = &'a str>) {
    let mut secrets = EchoedSecrets::default();
    for value in values {
        secrets.learn_known("sent", value);
    }
    if !secrets.is_empty() {
        hide_echoes(outcome, &secrets);
    }
}
