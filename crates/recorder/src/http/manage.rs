//! The cassettes of a folder as a whole: listing them, removing one with its sidecar blobs, and
//! importing a folder of another recorder's files.

use std::fmt;
use std::path::{Path, PathBuf};

use super::file::blobs_dir;
use super::import::import_mastra;
use super::model::Cassette;
use super::normalize::Normalizer;
use super::scrub::Scrubber;
use crate::error::{Error, ErrorKind, Result};
use crate::inspect::{find_cassettes, is_cassette};
use crate::terminal::{LineBreaks, escape_controls};

/// One cassette found by [`list_cassettes`]. Its `Display` is the line `calltape http ls` prints:
/// the path (its control characters escaped), the number of interactions and the size, or why the
/// cassette cannot be read.
#[derive(Debug)]
#[non_exhaustive]
pub struct Listed {
    /// The cassette.
    pub path: PathBuf,
    /// Its size in bytes, without its sidecar blobs (0 when it cannot be read).
    pub size: u64,
    /// How many interactions it holds, or why it cannot be read.
    pub interactions: Result<usize>,
}

impl fmt::Display for Listed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display().to_string();
        let path = escape_controls(&path, LineBreaks::Escape);
        match &self.interactions {
            Ok(n) => write!(f, "{path}  {n} interactions  {}", human_size(self.size)),
            Err(e) => write!(
                f,
                "{path}  unreadable: {}",
                escape_controls(&e.to_string(), LineBreaks::Escape)
            ),
        }
    }
}

/// `n` bytes as a person reads them: `512 B`, `1.5 KiB`, `3.2 MiB`.
fn human_size(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
    }
}

/// The cassettes under `dir` (found as [`find_cassettes`] finds them), in path order, each read to
/// count its interactions.
pub fn list_cassettes(dir: impl AsRef<Path>) -> Vec<Listed> {
    find_cassettes(dir)
        .into_iter()
        .map(|path| {
            let interactions = Cassette::load(&path).map(|c| c.interactions.len());
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            Listed {
                path,
                size,
                interactions,
            }
        })
        .collect()
}

/// Deletes the cassette at `path` and its sidecar blobs folder ([`blobs_dir`]).
///
/// Refuses a file whose first line is not a cassette's meta line ([`ErrorKind::NotACassette`]),
/// so a mistyped path never deletes a file calltape did not write.
pub fn remove_cassette(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    if !is_cassette(path) {
        return Err(ErrorKind::NotACassette {
            path: path.to_owned(),
        }
        .into());
    }
    std::fs::remove_file(path).map_err(|e| Error::io(path, "cannot remove", e))?;
    let blobs = blobs_dir(path);
    if blobs.exists() {
        std::fs::remove_dir_all(&blobs).map_err(|e| Error::io(&blobs, "cannot remove", e))?;
    }
    Ok(())
}

/// What [`import_mastra_dir`] did with a folder: the files imported and those that could not be.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct ImportedDir {
    /// Each file imported into a cassette, in path order.
    pub files: Vec<ImportedFile>,
    /// Each file that could not be imported at all (unreadable, not such a file, its cassette
    /// not written), in path order.
    pub failures: Vec<Error>,
}

/// One file imported by [`import_mastra_dir`]. Its `Display` is the line `calltape http import`
/// prints: `SOURCE -> CASSETTE (N interactions, M left out)`, the paths' control characters
/// escaped.
#[derive(Debug)]
#[non_exhaustive]
pub struct ImportedFile {
    /// The file of recordings read.
    pub source: PathBuf,
    /// The cassette written.
    pub cassette: PathBuf,
    /// How many interactions the cassette holds.
    pub interactions: usize,
    /// Each recording left out: not importable ([`ErrorKind::NotImported`]) or refused by the
    /// final gate ([`Error::is_refusal`]).
    pub left_out: Vec<Error>,
}

impl fmt::Display for ImportedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = self.source.display().to_string();
        let cassette = self.cassette.display().to_string();
        write!(
            f,
            "{} -> {} ({} interactions",
            escape_controls(&source, LineBreaks::Escape),
            escape_controls(&cassette, LineBreaks::Escape),
            self.interactions
        )?;
        if !self.left_out.is_empty() {
            write!(f, ", {} left out", self.left_out.len())?;
        }
        f.write_str(")")
    }
}

/// Imports every `*.json` file of Mastra's LLM recorder in `dir` ([`import_mastra`]) into a
/// cassette of the same name under `out` (`NAME.json` becomes `NAME.jsonl`), saved through
/// `scrubber` as the proxy saves one.
///
/// One file that cannot be imported does not stop the others: it is in
/// [`ImportedDir::failures`]. Fails when `dir` cannot be read or holds no `*.json` file
/// ([`ErrorKind::NothingToImport`]).
pub fn import_mastra_dir(
    dir: impl AsRef<Path>,
    out: impl AsRef<Path>,
    normalizer: &Normalizer,
    scrubber: &Scrubber,
) -> Result<ImportedDir> {
    let (dir, out) = (dir.as_ref(), out.as_ref());
    let mut sources: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, "cannot read", e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    sources.sort();
    if sources.is_empty() {
        return Err(ErrorKind::NothingToImport {
            dir: dir.to_owned(),
        }
        .into());
    }
    let mut imported = ImportedDir::default();
    for source in sources {
        let mut name = source.file_stem().unwrap_or_default().to_os_string();
        name.push(".jsonl");
        let cassette = out.join(name);
        let result = import_mastra(&source, normalizer, scrubber).and_then(|file| {
            let saved = file.cassette.save(&cassette, scrubber)?;
            Ok((file, saved.refused))
        });
        match result {
            Ok((file, refused)) => imported.files.push(ImportedFile {
                interactions: file.cassette.interactions.len() - refused.len(),
                left_out: file.skipped.into_iter().chain(refused).collect(),
                source,
                cassette,
            }),
            Err(e) => imported.failures.push(e),
        }
    }
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Body, Content, Interaction, Meta, Request, Response};
    use std::collections::BTreeMap;

    fn scrubber() -> Scrubber {
        Scrubber::builder().build().unwrap()
    }

    /// A cassette of `n` interactions at `path`, one of them with a binary body in a sidecar blob.
    fn cassette(path: &Path, n: usize) {
        let normalizer = Normalizer::new();
        let mut cassette = Cassette::new(Meta {
            normalizer: normalizer.fingerprint().into(),
            redaction: scrubber().fingerprint(),
        });
        for i in 0..n {
            let mut request = Request {
                method: "POST".into(),
                upstream: "openai".into(),
                path: format!("/v1/{i}"),
                query: vec![],
                headers: BTreeMap::new(),
                body: Body::Json(serde_json::json!({"n": i})),
                key: String::new(),
                seq: 0,
            };
            request.key = normalizer.key(&request);
            let body = if i == 0 {
                Body::Binary(crate::http::Blob::new("audio/wav", vec![0u8, 1, 2, 255]))
            } else {
                Body::Json(serde_json::json!({"ok": i}))
            };
            cassette.interactions.push(Interaction {
                request,
                response: Response {
                    status: 200,
                    headers: vec![],
                    content: Content::Body(body),
                },
            });
        }
        cassette.save(path, &scrubber()).unwrap();
    }

    #[test]
    fn a_listing_counts_each_cassettes_interactions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        cassette(&dir.path().join("sub/b.jsonl"), 3);
        cassette(&dir.path().join("a.jsonl"), 1);
        std::fs::write(dir.path().join("notes.jsonl"), "{\"not\":\"a cassette\"}\n").unwrap();
        let listed = list_cassettes(dir.path());
        let lines: Vec<String> = listed.iter().map(ToString::to_string).collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains("a.jsonl  1 interactions  "), "{lines:?}");
        assert!(lines[1].contains("b.jsonl  3 interactions  "), "{lines:?}");
        assert!(listed[1].size > 0);
    }

    #[test]
    fn sizes_read_as_a_person_reads_them() {
        let cases = [
            (0, "0 B"),
            (1023, "1023 B"),
            (1536, "1.5 KiB"),
            (3 << 20, "3.0 MiB"),
        ];
        for (n, want) in cases {
            assert_eq!(human_size(n), want);
        }
    }

    #[test]
    fn removing_a_cassette_removes_its_blobs_and_refuses_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        cassette(&path, 2);
        assert!(blobs_dir(&path).exists());
        let other = dir.path().join("notes.txt");
        std::fs::write(&other, "keep me\n").unwrap();

        let refused = remove_cassette(&other).unwrap_err();
        assert!(
            matches!(refused.kind(), ErrorKind::NotACassette { .. }),
            "{refused}"
        );
        assert!(other.exists());

        remove_cassette(&path).unwrap();
        assert!(!path.exists());
        assert!(!blobs_dir(&path).exists());
    }

    #[test]
    fn a_folder_without_recordings_is_nothing_to_import() {
        let dir = tempfile::tempdir().unwrap();
        let err =
            import_mastra_dir(dir.path(), dir.path(), &Normalizer::new(), &scrubber()).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::NothingToImport { .. }),
            "{err}"
        );
        let missing = dir.path().join("missing");
        let err =
            import_mastra_dir(&missing, dir.path(), &Normalizer::new(), &scrubber()).unwrap_err();
        assert!(err.to_string().contains("cannot read"), "{err}");
    }

    #[test]
    fn each_file_of_a_folder_becomes_a_cassette_and_a_bad_one_does_not_stop_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let recording = serde_json::json!({
            "meta": {},
            "recordings": [{
                "request": {"url": "https://api.openai.com/v1/models", "method": "GET"},
                "response": {"status": 200, "body": {"data": []}},
            }, {"response": {"status": 200}}],
        });
        std::fs::write(dir.path().join("a.json"), recording.to_string()).unwrap();
        std::fs::write(dir.path().join("b.json"), "not json").unwrap();
        std::fs::write(dir.path().join("c.txt"), "ignored").unwrap();

        let imported =
            import_mastra_dir(dir.path(), out.path(), &Normalizer::new(), &scrubber()).unwrap();
        assert_eq!(imported.files.len(), 1);
        assert_eq!(imported.failures.len(), 1, "{:?}", imported.failures);
        let file = &imported.files[0];
        assert_eq!(file.cassette, out.path().join("a.jsonl"));
        assert_eq!((file.interactions, file.left_out.len()), (1, 1));
        assert!(
            file.to_string()
                .ends_with("a.jsonl (1 interactions, 1 left out)"),
            "{file}"
        );
        assert!(is_cassette(&file.cassette));
    }
}
