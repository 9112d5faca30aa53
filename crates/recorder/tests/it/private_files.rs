//! The files a cassette brings (the cassette, its journal, its sidecar blobs): owner-only, in an
//! owner-only folder, never written or read through a symbolic link planted at their path.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;

use calltape_recorder::http::{
    Blob, Body, Cassette, Content, Interaction, Meta, Request, Response, Scrubber,
};
use calltape_recorder::http::{CassetteIndex, Journal, blobs_dir, journal_path};

fn binary(data: &[u8]) -> Interaction {
    Interaction {
        request: Request {
            method: "POST".into(),
            upstream: "openai".into(),
            path: "/v1/audio/speech".into(),
            query: vec![],
            headers: BTreeMap::new(),
            body: Body::Empty,
            key: "k".into(),
            seq: 0,
        },
        response: Response {
            status: 200,
            headers: vec![],
            content: Content::Body(Body::Binary(Blob::new("audio/wav", data.to_vec()))),
        },
    }
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

/// A file the test owns, that a planted link points at: it must come out of each case as it went in.
fn target(dir: &Path) -> std::path::PathBuf {
    let target = dir.join("target.txt");
    fs::write(&target, "the user's own file\n").unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
    target
}

fn assert_untouched(target: &Path) {
    assert_eq!(fs::read_to_string(target).unwrap(), "the user's own file\n");
    assert_eq!(mode(target), 0o644);
}

#[test]
fn the_journal_is_created_owner_only_and_never_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let journal = Journal::create(&cassette, &Meta::default()).unwrap();
    assert_eq!(mode(journal.path()), 0o600);
    journal.remove().unwrap();

    let target = target(dir.path());
    symlink(&target, journal_path(&cassette)).unwrap();
    let err = Journal::create(&cassette, &Meta::default()).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains(&journal_path(&cassette).display().to_string())
            && message.contains("symbolic link"),
        "{message}"
    );
    assert_untouched(&target);
}

#[test]
fn blobs_are_owner_only_in_an_owner_only_folder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let mut cassette = Cassette::new(Meta::default());
    cassette.interactions.push(binary(b"RIFF0000WAVE"));
    cassette.save(&path, &Scrubber::new()).unwrap();
    let blobs = blobs_dir(&path);
    assert_eq!(mode(&blobs), 0o700);
    let names: Vec<_> = fs::read_dir(&blobs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(names.len(), 1, "one blob and no temporary file: {names:?}");
    assert_eq!(mode(&names[0]), 0o600);
    assert_eq!(mode(&path), 0o600);

    // A folder left open by an older build is closed on the next save.
    fs::set_permissions(&blobs, fs::Permissions::from_mode(0o755)).unwrap();
    cassette.interactions.push(binary(b"RIFF1111WAVE"));
    cassette.save(&path, &Scrubber::new()).unwrap();
    assert_eq!(mode(&blobs), 0o700);

    // The journal writes its blobs the same way.
    let other = dir.path().join("j.jsonl");
    let mut journal = Journal::create(&other, &Meta::default()).unwrap();
    journal
        .append(&binary(b"RIFF2222WAVE"), &Scrubber::new())
        .unwrap();
    assert_eq!(mode(&blobs_dir(&other)), 0o700);
    for entry in fs::read_dir(blobs_dir(&other)).unwrap() {
        assert_eq!(mode(&entry.unwrap().path()), 0o600);
    }
}

#[test]
fn a_blob_is_never_written_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = target(dir.path());
    let blob = Blob::new("audio/wav", b"RIFF0000WAVE".to_vec());
    let mut cassette = Cassette::new(Meta::default());
    cassette.interactions.push(binary(&blob.data));

    // A link planted where the blob goes.
    let path = dir.path().join("c.jsonl");
    fs::create_dir(blobs_dir(&path)).unwrap();
    let planted = blobs_dir(&path).join(blob.file_name());
    symlink(&target, &planted).unwrap();
    let err = cassette.save(&path, &Scrubber::new()).unwrap_err();
    assert!(
        err.to_string().contains(&planted.display().to_string()),
        "{err}"
    );
    assert_untouched(&target);

    // A link planted as the blob folder itself.
    let other = dir.path().join("d.jsonl");
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, blobs_dir(&other)).unwrap();
    let err = cassette.save(&other, &Scrubber::new()).unwrap_err();
    let folder = blobs_dir(&other).display().to_string();
    assert!(err.to_string().contains(&folder), "{err}");
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn a_blob_that_is_a_link_is_an_error_on_load_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let mut cassette = Cassette::new(Meta::default());
    cassette.interactions.push(binary(b"RIFF0000WAVE"));
    cassette.save(&path, &Scrubber::new()).unwrap();
    let blob = fs::read_dir(blobs_dir(&path))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();

    // The same bytes, so only the link itself can make the load fail.
    let secret = dir.path().join("secret.bin");
    fs::write(&secret, b"RIFF0000WAVE").unwrap();
    fs::remove_file(&blob).unwrap();
    symlink(&secret, &blob).unwrap();

    let err = Cassette::load(&path).unwrap_err();
    assert!(
        err.to_string().contains(&blob.display().to_string()),
        "{err}"
    );
    assert!(err.to_string().contains("symbolic link"), "{err}");
    let err = CassetteIndex::load(&path).unwrap_err();
    assert!(
        err.to_string().contains(&blob.display().to_string()),
        "{err}"
    );
    assert!(err.to_string().contains("symbolic link"), "{err}");
}

#[test]
fn the_cassette_is_never_replaced_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = target(dir.path());
    let path = dir.path().join("c.jsonl");
    symlink(&target, &path).unwrap();
    let err = Cassette::new(Meta::default())
        .save(&path, &Scrubber::new())
        .unwrap_err();
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_untouched(&target);
}

#[test]
fn stale_blobs_are_never_removed_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let named_like_a_blob = elsewhere.join(format!("{}.bin", "a".repeat(64)));
    fs::write(&named_like_a_blob, "the user's own file").unwrap();
    let path = dir.path().join("c.jsonl");
    symlink(&elsewhere, blobs_dir(&path)).unwrap();
    // A cassette without blobs: nothing is written to the folder, and nothing is removed from it.
    let err = Cassette::new(Meta::default())
        .save(&path, &Scrubber::new())
        .unwrap_err();
    let folder = blobs_dir(&path).display().to_string();
    assert!(err.to_string().contains(&folder), "{err}");
    assert!(named_like_a_blob.exists());
}
