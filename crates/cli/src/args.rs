//! Argument groups that several commands share, each flattened where it is used, so that a flag is
//! spelled, documented and checked the same way everywhere.

use clap::Args;

/// The redaction names: `--redact NAME` and `--keep NAME`, on every command that redacts. The
/// spellings of earlier versions (`redact --name`, `http --redact-name` and `--keep-name`) are
/// hidden aliases.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub(crate) struct RedactNames {
    /// Also redact the value of every field with this name (repeatable), e.g. x-tenant-id.
    #[arg(long = "redact", value_name = "NAME", aliases = ["name", "redact-name"])]
    pub(crate) redact: Vec<String>,

    /// Never redact a field by its name (repeatable), e.g. pageToken.
    #[arg(long = "keep", value_name = "NAME", alias = "keep-name")]
    pub(crate) keep: Vec<String>,
}
