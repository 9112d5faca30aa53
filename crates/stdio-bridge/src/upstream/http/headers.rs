//! Extra headers sent with every request to an HTTP upstream.

use std::{fmt, path::Path};

use http::{HeaderMap, HeaderName, HeaderValue};

use crate::Error;
use crate::vocab::{
    HEADER_LAST_EVENT_ID, HEADER_METHOD, HEADER_NAME, HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID,
};

/// Headers the upstream manages itself; setting them by hand would break the protocol.
const MANAGED: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    HEADER_LAST_EVENT_ID,
    HEADER_SESSION_ID,
    HEADER_PROTOCOL_VERSION,
    HEADER_METHOD,
    HEADER_NAME,
];

/// Extra HTTP headers sent with every request to an HTTP upstream (POST, GET and DELETE alike),
/// typically credentials such as `Authorization`.
///
/// Build it from `--header 'K: V'` arguments with [`push_line`](Self::push_line) and from a file of such
/// lines with [`read_file`](Self::read_file), which keeps secrets out of the command line. Values are
/// marked sensitive and never appear in `Debug` output or error messages.
///
/// ```
/// use calltape_stdio_bridge::ExtraHeaders;
///
/// let mut headers = ExtraHeaders::new();
/// headers.push_line("Authorization: Bearer abc123")?;
/// headers.push_lines("# team gateway\nX-Team: tools\n\n", "headers.txt")?;
/// assert_eq!(headers.names().collect::<Vec<_>>(), ["authorization", "x-team"]);
/// assert!(!format!("{headers:?}").contains("abc123"));
/// # Ok::<(), calltape_stdio_bridge::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct ExtraHeaders {
    map: HeaderMap,
}

impl ExtraHeaders {
    /// No extra headers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one header written as `Name: value` (the form `--header` takes). Whitespace around the name
    /// and the value is dropped. A name given twice is sent twice.
    pub fn push_line(&mut self, line: &str) -> Result<(), Error> {
        self.push_line_from(line, "header")
    }

    /// Adds one header.
    pub fn push(&mut self, name: &str, value: &str) -> Result<(), Error> {
        self.push_checked(name, value, "header")
    }

    /// Sets one header, replacing every value the name had (a client's own `Authorization`, say).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), Error> {
        let mut one = Self::new();
        one.push_checked(name, value, "header")?;
        for (header, value) in one.map {
            if let Some(header) = header {
                self.map.insert(header, value);
            }
        }
        Ok(())
    }

    /// Adds every header of a text holding one `Name: value` per line; empty lines and lines starting
    /// with `#` are skipped, and CRLF line ends are accepted. `source` names the text in error messages
    /// (a file name, say).
    pub fn push_lines(&mut self, text: &str, source: &str) -> Result<(), Error> {
        for (number, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            self.push_line_from(trimmed, &format!("{source}:{}", number + 1))?;
        }
        Ok(())
    }

    /// Adds every header of a file in the form [`push_lines`](Self::push_lines) reads (`--header-file`).
    pub fn read_file(&mut self, path: &Path) -> Result<(), Error> {
        let text = std::fs::read_to_string(path).map_err(|source| {
            Error::io(
                format!("cannot read header file {}", path.display()),
                source,
            )
        })?;
        self.push_lines(&text, &path.display().to_string())
    }

    /// The header names, lowercased, in the order they were added.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.iter().map(|(name, _)| name.as_str())
    }

    /// Each header's name (lowercased) and value, in the order they were added; a value that is
    /// not text is left out. For a caller that hides the credentials among them in its own logs
    /// and records.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.map
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
    }

    /// How many header values there are.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(crate) fn map(&self) -> &HeaderMap {
        &self.map
    }

    fn push_line_from(&mut self, line: &str, source: &str) -> Result<(), Error> {
        let Some((name, value)) = line.split_once(':') else {
            return Err(Error::config(format!(
                "{source}: expected a header written as 'Name: value', found no ':'"
            )));
        };
        self.push_checked(name.trim(), value.trim(), source)
    }

    fn push_checked(&mut self, name: &str, value: &str, source: &str) -> Result<(), Error> {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            Error::config(format!(
                "{source}: '{}' is not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)",
                name.escape_debug()
            ))
        })?;
        if MANAGED.contains(&header.as_str()) {
            return Err(Error::config(format!(
                "{source}: header '{name}' is managed by the bridge and cannot be set by hand"
            )));
        }
        let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
            Error::config(format!(
                "{source}: the value of header '{name}' holds a character a header cannot carry (a control character, a line break or non-ASCII)"
            ))
        })?;
        value.set_sensitive(true);
        self.map.append(header, value);
        Ok(())
    }
}

impl fmt::Debug for ExtraHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.map.keys().map(|name| (name.as_str(), "[REDACTED]")))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replaces_every_value_of_a_name() {
        let mut headers = ExtraHeaders::new();
        headers.push_line("Authorization: Bearer ours").unwrap();
        headers.push_line("authorization: Basic b3Vycw==").unwrap();
        headers.push_line("X-Team: tools").unwrap();
        headers.set("Authorization", "Bearer theirs").unwrap();
        let values: Vec<_> = headers.map().get_all("authorization").iter().collect();
        assert_eq!(values, ["Bearer theirs"]);
        assert!(headers.map()["authorization"].is_sensitive());
        assert_eq!(headers.map()["x-team"], "tools");
        assert!(headers.set("Mcp-Session-Id", "x").is_err());
    }

    #[test]
    fn header_lines_parse_and_refuse_bad_input() {
        let mut headers = ExtraHeaders::new();
        headers.push_line("  X-Api-Key :  s3cret  ").unwrap();
        headers.push_line("Cookie: a=1").unwrap();
        headers.push_line("cookie: b=2").unwrap();
        assert_eq!(headers.len(), 3);
        let values: Vec<_> = headers.map().get_all("cookie").iter().collect();
        assert_eq!(values, ["a=1", "b=2"]);
        assert_eq!(headers.map()["x-api-key"], "s3cret");
        assert!(headers.map()["x-api-key"].is_sensitive());

        let errors: &[(&str, &str)] = &[
            (
                "no colon here",
                "header: expected a header written as 'Name: value', found no ':'",
            ),
            (
                ": value",
                "header: '' is not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)",
            ),
            (
                "Bad Name: v",
                "header: 'Bad Name' is not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)",
            ),
            (
                "Mcp-Session-Id: abc",
                "header: header 'Mcp-Session-Id' is managed by the bridge and cannot be set by hand",
            ),
            (
                "accept: */*",
                "header: header 'accept' is managed by the bridge and cannot be set by hand",
            ),
            (
                "X-Token: a\u{7}b",
                "header: the value of header 'X-Token' holds a character a header cannot carry (a control character, a line break or non-ASCII)",
            ),
        ];
        for (line, message) in errors {
            let err = ExtraHeaders::new().push_line(line).unwrap_err();
            assert_eq!(err.to_string(), *message, "line {line:?}");
        }
    }

    #[test]
    fn header_files_skip_comments_and_name_the_line() {
        let mut headers = ExtraHeaders::new();
        headers
            .push_lines(
                "# comment\r\nAuthorization: Bearer t0k\r\n\r\n   \nX-A: 1\n",
                "h.txt",
            )
            .unwrap();
        assert_eq!(
            headers.names().collect::<Vec<_>>(),
            ["authorization", "x-a"]
        );
        let err = ExtraHeaders::new()
            .push_lines("X-A: 1\n\nbroken line secret\n", "h.txt")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "h.txt:3: expected a header written as 'Name: value', found no ':'"
        );
        assert!(!err.to_string().contains("secret"));
    }

    #[test]
    fn header_files_are_read_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("headers");
        std::fs::write(&path, "Authorization: Bearer from-file\n").unwrap();
        let mut headers = ExtraHeaders::new();
        headers.read_file(&path).unwrap();
        assert_eq!(headers.map()["authorization"], "Bearer from-file");
        let missing = dir.path().join("missing");
        let err = ExtraHeaders::new().read_file(&missing).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot read header file {}: ", missing.display())),
            "{err}"
        );
    }

    #[test]
    fn debug_output_hides_values() {
        let mut headers = ExtraHeaders::new();
        headers.push("Authorization", "Bearer hidden").unwrap();
        assert_eq!(format!("{headers:?}"), r#"{"authorization": "[REDACTED]"}"#);
    }
}
