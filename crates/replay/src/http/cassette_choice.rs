//! Which cassette a request names: the proxy's own, or one under its cassette folder, chosen by the
//! cassette header or the `/_cassette/NAME/` path prefix.

use std::path::PathBuf;

use super::{CASSETTE_HEADER, State};

/// The cassette file for a request that names `chosen` (or none), or why it cannot have one.
pub(crate) fn cassette_path(state: &State, chosen: Option<&str>) -> Result<PathBuf, String> {
    let Some(name) = chosen else {
        return state.cassette.clone().ok_or_else(|| {
            format!("this request names no cassette: send the {CASSETTE_HEADER} header or use the /_cassette/NAME/ path prefix")
        });
    };
    let Some(dir) = &state.cassette_dir else {
        return Err(format!(
            "cassette {name:?} was requested, but the proxy has no cassette folder; give it one"
        ));
    };
    crate::cassette_file(dir, name)
}
