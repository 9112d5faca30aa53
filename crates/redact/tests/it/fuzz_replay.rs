//! Replays every saved fuzz input (crashes found once, and seeds) through the
//! same checks the fuzz targets run.

use std::path::Path;

use calltape_redact::fuzzing::{check_json, check_structure, check_text, check_writer};

fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_regressions")
        .join(target);
    let mut count = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check(&data);
        count += 1;
    }
    count
}

#[test]
fn redact_text_regressions_hold() {
    assert!(replay("redact_text", check_text) > 0);
}

#[test]
fn redact_json_regressions_hold() {
    assert!(replay("redact_json", check_json) > 0);
}

#[test]
fn redact_writer_regressions_hold() {
    assert!(replay("redact_writer", check_writer) > 0);
}

#[test]
fn redact_structure_regressions_hold() {
    assert!(replay("redact_structure", check_structure) > 0);
}

#[test]
fn secrets_placed_in_random_documents_never_survive() {
    // The structure target's check on inputs of a fixed generator, so that
    // `cargo test` tries every placement without a fuzzer.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut data = vec![0u8; 256];
    for _ in 0..1_000 {
        for byte in &mut data {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *byte = (state >> 24) as u8;
        }
        check_structure(&data);
    }
}
