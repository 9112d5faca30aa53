//! The record-run journal: interactions appended to disk as they complete, beside a cassette that is
//! only replaced, atomically, when the run ends cleanly.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use calltape_jsonl_store::fs as store_fs;

use super::file::{blob_prefix, gate_interaction, interaction_lines, write_blobs};
use super::model::{Cassette, Interaction, Meta};
use super::scrub::Scrubber;
use crate::error::{Error, ErrorKind, Result};

/// The journal of a record run of `cassette`: `<cassette>.journal` beside it.
pub fn journal_path(cassette: &Path) -> PathBuf {
    let mut name = cassette.file_name().unwrap_or_default().to_os_string();
    name.push(".journal");
    cassette.with_file_name(name)
}

/// Interactions recorded so far by a run that re-records a cassette from scratch.
///
/// Each interaction is written (its canonical lines, after the same secret check as
/// [`Cassette::save`]) and synced to disk as soon as it completes, so a run that dies loses nothing it
/// had finished, while the cassette itself keeps its previous content until the run ends and the
/// recording replaces it atomically. The journal is in the cassette format (a meta line, then the
/// interactions in the order they completed), readable with [`Journal::read`].
#[derive(Debug)]
pub struct Journal {
    cassette: PathBuf,
    path: PathBuf,
    file: fs::File,
    lines: usize,
}

impl Journal {
    /// Starts the journal of a record run of `cassette`, replacing one a killed run left behind.
    pub fn create(cassette: &Path, meta: &Meta) -> Result<Self> {
        let path = journal_path(cassette);
        if let Some(parent) = path.parent() {
            // calltape-jsonl-store's: missing folders are made 0700, a link at the path is refused.
            store_fs::create_dir_all(parent).map_err(ErrorKind::Store)?;
        }
        let meta_line = Cassette::new(meta.clone()).to_lines(cassette).remove(0);
        // Owner-only, and never through a link planted at the path: the journal holds what the
        // cassette will.
        let mut file = store_fs::truncate(&path).map_err(ErrorKind::Store)?;
        file.write_all(format!("{meta_line}\n").as_bytes())
            .map_err(|e| Error::io(&path, "cannot write", e))?;
        Ok(Self {
            cassette: cassette.to_path_buf(),
            path,
            file,
            lines: 1,
        })
    }

    /// Where the journal is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one interaction and syncs it to disk; its sidecar blobs are written first.
    ///
    /// An interaction with a line or a blob the final gate stops writes nothing and is an error
    /// ([`ErrorKind::SecretInLine`] or [`ErrorKind::SecretInBlob`]), as in [`Cassette::save`].
    pub fn append(&mut self, interaction: &Interaction, scrubber: &Scrubber) -> Result<()> {
        let lines = interaction_lines(interaction, &blob_prefix(&self.cassette));
        gate_interaction(&self.path, interaction, &lines, scrubber)?;
        let mut one = Cassette::new(Meta::default());
        one.interactions.push(interaction.clone());
        write_blobs(&super::file::blobs_dir(&self.cassette), &one.blobs())?;
        let mut text = lines.join("\n");
        text.push('\n');
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| Error::io(&self.path, "cannot write", e))?;
        self.lines += lines.len();
        Ok(())
    }

    /// Deletes the journal, once its interactions are in the cassette (or were given up).
    pub fn remove(self) -> Result<()> {
        drop(self.file);
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(&self.path, "cannot remove", e)),
        }
    }

    /// Reads the journal a killed record run of `cassette` left behind: the interactions it had
    /// completed (a last one cut short by the kill is left out).
    pub fn read(cassette: &Path) -> Result<Cassette> {
        let path = journal_path(cassette);
        let text = fs::read_to_string(&path).map_err(|e| Error::io(&path, "cannot read", e))?;
        // Only whole lines were synced as a unit; a kill mid-write can leave a partial last line, and
        // an interaction is only complete with its final line.
        let mut lines: Vec<&str> = text.lines().collect();
        if !text.ends_with('\n') {
            lines.pop();
        }
        loop {
            let joined = lines.join("\n");
            match Cassette::parse(cassette, &joined) {
                Ok(c) => return Ok(c),
                Err(e) if lines.len() <= 1 => return Err(e),
                Err(_) => {
                    lines.pop();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Body, Content, Request, Response};
    use serde_json::json;
    use std::collections::BTreeMap;

    fn interaction(text: &str) -> Interaction {
        Interaction {
            request: Request {
                method: "POST".into(),
                upstream: "openai".into(),
                path: "/v1/chat/completions".into(),
                query: vec![],
                headers: BTreeMap::new(),
                body: Body::Json(json!({"q": text})),
                key: format!("k{text}"),
                seq: 0,
            },
            response: Response {
                status: 200,
                headers: vec![],
                content: Content::Body(Body::Text(format!("answer {text}"))),
            },
        }
    }

    #[test]
    fn a_journal_holds_what_completed_and_goes_away_when_removed() {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("c.jsonl");
        let meta = Meta {
            normalizer: "n".into(),
            redaction: "r".into(),
        };
        let mut j = Journal::create(&cassette, &meta).unwrap();
        assert_eq!(j.path(), dir.path().join("c.jsonl.journal"));
        j.append(&interaction("a"), &Scrubber::new()).unwrap();
        j.append(&interaction("b"), &Scrubber::new()).unwrap();
        let back = Journal::read(&cassette).unwrap();
        assert_eq!(back.meta, meta);
        assert_eq!(back.interactions, vec![interaction("a"), interaction("b")]);
        // A kill in the middle of a write leaves a partial line: the complete interactions still read.
        let mut text = fs::read_to_string(j.path()).unwrap();
        text.push_str("{\"t\":\"req\",\"key\":\"x");
        fs::write(j.path(), text).unwrap();
        assert_eq!(Journal::read(&cassette).unwrap().interactions.len(), 2);
        assert!(!cassette.exists(), "the cassette itself is not touched");
        j.remove().unwrap();
        assert!(!journal_path(&cassette).exists());
    }

    #[test]
    fn a_secret_is_refused_before_it_reaches_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("c.jsonl");
        let scrubber = Scrubber::builder().secrets_from_env(false).build().unwrap();
        scrubber.add_header_secret("authorization", "Bearer sk-journal-0123456789abcdef");
        let mut j = Journal::create(&cassette, &Meta::default()).unwrap();
        let mut leaky = interaction("a");
        leaky.response.content = Content::Body(Body::Text("sk-journal-0123456789abcdef".into()));
        assert!(j.append(&leaky, &scrubber).is_err());
        let text = fs::read_to_string(j.path()).unwrap();
        assert!(!text.contains("sk-journal"));
        assert_eq!(text.lines().count(), 1, "only the meta line");
    }
}
