//! What a recorder is told ([`RecorderOptions`]) and what it tells back ([`RecorderReport`]).

use std::fmt;

use calltape_jsonl_store::WriterReport;
use calltape_redact::{KnownSecrets, Redactor};
use calltape_stdio_bridge::vocab::{
    PROMPTS_GET, PROMPTS_LIST, RESOURCES_LIST, RESOURCES_READ, RESOURCES_TEMPLATES_LIST,
    TOOLS_CALL, TOOLS_LIST,
};

use crate::error::{Error, ErrorKind};
use crate::refusal::Refusal;

/// The methods recorded unless told otherwise: the calls, and the lists that describe the server's
/// surface (each recorded once per session, see [`LIST_METHODS`](crate::mcp::LIST_METHODS)).
pub const DEFAULT_METHODS: &[&str] = &[
    TOOLS_CALL,
    RESOURCES_READ,
    PROMPTS_GET,
    TOOLS_LIST,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
];

/// How a [`Recorder`](crate::mcp::Recorder) records: which methods, the file's size cap, and extra redaction names.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecorderOptions {
    /// The JSON-RPC methods recorded; [`DEFAULT_METHODS`] by default.
    pub methods: Vec<String>,
    /// The most bytes the recording may reach on disk; later calls are dropped and reported.
    pub max_bytes: u64,
    /// Field names redacted on top of the built-in credential names.
    pub redact_names: Vec<String>,
    /// Field names never redacted by name, such as `pageToken`.
    pub keep_names: Vec<String>,
    /// Secret values of the run (a key the caller sends the server, say): hidden wherever a record
    /// would hold them, object keys included, and refused by the final gate. The recorder adds to
    /// it every value a request holds under a credential name, so a caller that shares the set
    /// (its log writer, say) hides those too.
    pub known: KnownSecrets,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        Self {
            methods: DEFAULT_METHODS.iter().map(|m| (*m).to_owned()).collect(),
            max_bytes: calltape_jsonl_store::DEFAULT_MAX_BYTES,
            redact_names: Vec::new(),
            keep_names: Vec::new(),
            known: KnownSecrets::new(),
        }
    }
}

impl RecorderOptions {
    /// Records exactly these methods.
    pub fn methods<I, S>(mut self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.methods = methods.into_iter().map(Into::into).collect();
        self
    }

    /// Caps the recording's size on disk.
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Redacts these field names too.
    pub fn redact_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.redact_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// Never redacts these field names by name.
    pub fn keep_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.keep_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// Hides and refuses the values of `known` too, and adds to it the values requests hold under
    /// credential names.
    pub fn known_secrets(mut self, known: KnownSecrets) -> Self {
        self.known = known;
        self
    }

    /// The redactor these options describe.
    pub fn redactor(&self) -> Result<Redactor, Error> {
        Redactor::builder()
            .redact_names(self.redact_names.iter().map(String::as_str))
            .keep_names(self.keep_names.iter().map(String::as_str))
            .build()
            .map_err(|e| ErrorKind::Redaction(e).into())
    }
}

/// What a recorder did, returned by [`Recorder::close`](crate::mcp::Recorder::close).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecorderReport {
    /// Calls handed to the writer.
    pub recorded: u64,
    /// Requests whose session ended before they were answered: they have no line.
    pub unanswered: u64,
    /// Calls the final gate refused: a line that still held a provider token or a secret value of
    /// the run after redaction. Nothing of them was written.
    pub refused: u64,
    /// The first refused calls (at most 100), each named with what stopped it.
    pub refusals: Vec<Refusal>,
    /// What the writer did; `None` when the recorder had already been closed.
    pub writer: Option<WriterReport>,
}

impl RecorderReport {
    /// Whether every answered call reached the file: none was refused or lost by the writer.
    pub fn is_complete(&self) -> bool {
        self.refused == 0 && self.writer.as_ref().is_none_or(WriterReport::is_complete)
    }
}

impl fmt::Display for RecorderReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.recorded == 1 { "" } else { "s" };
        match &self.writer {
            Some(writer) => write!(f, "recorded {} call{s}; {writer}", self.recorded)?,
            None => write!(f, "recorded {} call{s}", self.recorded)?,
        }
        if self.refused > 0 {
            let s = if self.refused == 1 { "" } else { "s" };
            write!(
                f,
                "; {} call{s} refused: a line still held a credential, nothing of it written",
                self.refused
            )?;
        }
        if self.unanswered > 0 {
            write!(
                f,
                "; {} unanswered at the end, not recorded",
                self.unanswered
            )?;
        }
        if let Some(error) = self.writer.as_ref().and_then(|w| w.first_error.as_ref()) {
            write!(f, "; first error: {error}")?;
        }
        Ok(())
    }
}
