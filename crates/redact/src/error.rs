//! The one error type of the crate: only building a configuration can fail.

use std::fmt;

/// Why a [`RedactorBuilder`](crate::RedactorBuilder) could not build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: Box<ErrorKind>,
}

/// The kinds of configuration mistakes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A name given to `redact_names` or `keep_names` is empty or only blanks.
    EmptyName {
        /// Which list held it.
        list: NameList,
        /// Its position in that list, from 1.
        position: usize,
    },
    /// The same name (compared without regard to ASCII case) was given both to
    /// `redact_names` and to `keep_names`.
    ConflictingName {
        /// The name as given to `keep_names`.
        name: String,
    },
}

/// The builder list a name came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameList {
    /// `RedactorBuilder::redact_names`.
    Redact,
    /// `RedactorBuilder::keep_names`.
    Keep,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Error {
        Error {
            kind: Box::new(kind),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.kind {
            ErrorKind::EmptyName { list, position } => {
                let list = match list {
                    NameList::Redact => "redact",
                    NameList::Keep => "keep",
                };
                write!(
                    f,
                    "{list} name #{position} is empty; give a field name such as `apiKey`, or leave it out"
                )
            }
            ErrorKind::ConflictingName { name } => write!(
                f,
                "`{name}` is both a name to redact and a name to keep; remove it from one of the two lists"
            ),
        }
    }
}

impl std::error::Error for Error {}
