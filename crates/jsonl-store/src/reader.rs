//! Reading a JSONL file back, line by line, with a bounded buffer.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::{DeserializeOwned, IgnoredAny};

use crate::error::{Error, ErrorKind};

/// The default longest line a reader accepts: 64 MiB.
pub const DEFAULT_MAX_LINE: usize = 64 * 1024 * 1024;

/// Iterates the lines of a JSONL file as `(line_number, T)`, line numbers counting from 1.
///
/// Blank lines are skipped. A line that does not parse as `T` is an error naming the file, the line,
/// the column and what was wrong; iteration goes on after it. A last line with no newline that is not
/// complete JSON is [`ErrorKind::TruncatedTail`], the mark a crash mid-write leaves, after every
/// complete line has been read. A line longer than [`max_line`](JsonlReader::max_line) is skipped
/// without being held in memory and reported as [`ErrorKind::LineTooLong`]. An I/O error ends the
/// iteration.
///
/// ```
/// # fn main() -> Result<(), calltape_jsonl_store::Error> {
/// use calltape_jsonl_store::JsonlReader;
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("calls.jsonl");
/// std::fs::write(&path, "{\"n\":1}\n\n{\"n\":2}\n{\"n\":").unwrap();
///
/// let mut reader = JsonlReader::<serde_json::Value>::open(&path)?;
/// assert_eq!(reader.next().unwrap()?.0, 1);
/// assert_eq!(reader.next().unwrap()?.0, 3);
/// let tail = reader.next().unwrap().unwrap_err();
/// assert!(tail.is_truncated_tail());
/// assert!(reader.next().is_none());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct JsonlReader<T, R = BufReader<File>> {
    inner: R,
    path: PathBuf,
    max_line: usize,
    line: usize,
    buf: Vec<u8>,
    done: bool,
    _marker: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> JsonlReader<T> {
    /// Opens `path` for reading.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| Error::open(path, e))?;
        Ok(Self::new(path, BufReader::with_capacity(64 * 1024, file)))
    }
}

impl<T: DeserializeOwned, R: BufRead> JsonlReader<T, R> {
    /// Reads from `reader` (standard input, a pipe, a buffer); `name` stands for it in errors.
    pub fn new(name: impl Into<PathBuf>, reader: R) -> Self {
        Self {
            inner: reader,
            path: name.into(),
            max_line: DEFAULT_MAX_LINE,
            line: 0,
            buf: Vec::new(),
            done: false,
            _marker: PhantomData,
        }
    }

    /// Sets the longest line accepted, in bytes without the newline (default 64 MiB).
    #[must_use]
    pub fn max_line(mut self, max_line: usize) -> Self {
        self.max_line = max_line;
        self
    }

    /// The path (or name) read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the next line into `self.buf`, holding at most `max_line` bytes of it.
    fn read_line(&mut self) -> io::Result<Option<Line>> {
        self.buf.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok(match (any, too_long) {
                    (false, _) => None,
                    (true, true) => Some(Line::TooLong),
                    (true, false) => Some(Line::Tail),
                });
            }
            any = true;
            let (take, end) = match memchr::memchr(b'\n', available) {
                Some(i) => (i, Some(i + 1)),
                None => (available.len(), None),
            };
            if !too_long {
                if self.buf.len() + take > self.max_line {
                    too_long = true;
                    self.buf = Vec::new();
                } else {
                    self.buf.extend_from_slice(&available[..take]);
                }
            }
            match end {
                Some(n) => {
                    self.inner.consume(n);
                    return Ok(Some(if too_long {
                        Line::TooLong
                    } else {
                        Line::Complete
                    }));
                }
                None => {
                    let n = available.len();
                    self.inner.consume(n);
                }
            }
        }
    }

    fn parse_error(&self, e: &serde_json::Error) -> Error {
        ErrorKind::Parse {
            path: self.path.clone(),
            line: self.line,
            column: e.column(),
            message: message_of(e),
        }
        .into()
    }
}

enum Line {
    /// Ended by a newline.
    Complete,
    /// The end of the file without a newline.
    Tail,
    /// Longer than `max_line`; not kept.
    TooLong,
}

impl<T: DeserializeOwned, R: BufRead> Iterator for JsonlReader<T, R> {
    type Item = Result<(usize, T), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let kind = match self.read_line() {
                Ok(Some(kind)) => kind,
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(Error::read(&self.path, e)));
                }
            };
            self.line += 1;
            if let Line::TooLong = kind {
                return Some(Err(ErrorKind::LineTooLong {
                    path: self.path.clone(),
                    line: self.line,
                    max_line: self.max_line,
                }
                .into()));
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(match serde_json::from_slice::<T>(&self.buf) {
                Ok(value) => Ok((self.line, value)),
                Err(e) if matches!(kind, Line::Tail) => {
                    self.done = true;
                    // A cut line is never complete JSON; a complete one that only lacks its newline
                    // and does not fit `T` is an ordinary parse error.
                    match serde_json::from_slice::<IgnoredAny>(&self.buf) {
                        Ok(_) => Err(self.parse_error(&e)),
                        Err(cut) => Err(ErrorKind::TruncatedTail {
                            path: self.path.clone(),
                            line: self.line,
                            len: self.buf.len(),
                            message: message_of(&cut),
                        }
                        .into()),
                    }
                }
                Err(e) => Err(self.parse_error(&e)),
            });
        }
        None
    }
}

/// serde_json's message without its " at line L column C" suffix, which the error's own position
/// replaces.
fn message_of(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&suffix) {
        Some(message) => message.to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Call {
        name: String,
        answer: Option<u32>,
    }

    type Item = Result<(usize, Call), String>;

    fn read_all(text: &str, max_line: usize) -> Vec<Item> {
        JsonlReader::<Call, _>::new("calls.jsonl", io::Cursor::new(text.as_bytes().to_vec()))
            .max_line(max_line)
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
    }

    fn ok(line: usize, name: &str) -> Item {
        Ok((
            line,
            Call {
                name: name.into(),
                answer: None,
            },
        ))
    }

    #[test]
    fn table_of_inputs_and_what_the_reader_yields() {
        let cases: Vec<(&str, Vec<Item>)> = vec![
            ("", vec![]),
            ("{\"name\":\"a\"}\n", vec![ok(1, "a")]),
            ("{\"name\":\"a\"}", vec![ok(1, "a")]),
            ("\n  \n{\"name\":\"a\"}\r\n\n", vec![ok(3, "a")]),
            (
                "{\"name\":\"a\"}\n{\"name\":\"a\",\"anwser\":1}\n{\"name\":\"b\"}\n",
                vec![
                    ok(1, "a"),
                    Err("calls.jsonl:2:20: unknown field `anwser`, expected `name` or `answer`".into()),
                    ok(3, "b"),
                ],
            ),
            (
                "{\"name\":\"a\"}\n{\"name\":\"b\",\"ans",
                vec![
                    ok(1, "a"),
                    Err("calls.jsonl:2: the last line is cut short (16 bytes, no newline: EOF while \
                         parsing a string), as a crash mid-write leaves it; every line before it was read"
                        .into()),
                ],
            ),
            (
                "{\"name\":7}",
                vec![Err("calls.jsonl:1:9: invalid type: integer `7`, expected a string".into())],
            ),
            (
                "{\"name\":\"a\"}\n{\"name\":\"toolong\"}\n{\"name\":\"b\"}\n{\"name\":\"toolong2\"}",
                vec![
                    ok(1, "a"),
                    Err("calls.jsonl:2: line is longer than the 16-byte limit; it was skipped, raise \
                         max_line to read it"
                        .into()),
                    ok(3, "b"),
                    Err("calls.jsonl:4: line is longer than the 16-byte limit; it was skipped, raise \
                         max_line to read it"
                        .into()),
                ],
            ),
        ];
        for (input, want) in cases {
            let max = if input.contains("toolong") { 16 } else { 1024 };
            assert_eq!(read_all(input, max), want, "input: {input:?}");
        }
    }

    #[test]
    fn a_line_longer_than_the_buffer_is_never_held_whole() {
        let long = format!(
            "{{\"name\":\"{}\"}}\n{{\"name\":\"z\"}}\n",
            "x".repeat(1 << 20)
        );
        let mut reader = JsonlReader::<Call, _>::new(
            "big.jsonl",
            BufReader::with_capacity(4096, io::Cursor::new(long.into_bytes())),
        )
        .max_line(1000);
        let err = reader.next().unwrap().unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::LineTooLong { line: 1, .. }),
            "{err}"
        );
        assert!(
            reader.buf.capacity() <= 1000 + 4096,
            "{}",
            reader.buf.capacity()
        );
        assert_eq!(
            reader.next().unwrap().unwrap(),
            (
                2,
                Call {
                    name: "z".into(),
                    answer: None
                }
            )
        );
    }
}
