//! Replays every saved input of the `frame_scanner` fuzz target (crashes found once, and seeds)
//! through the check the target runs, so a crash the fuzzer found stays fixed under `cargo test`.

use std::path::Path;

use calltape_stdio_bridge::fuzzing::check_frame;

#[test]
fn frame_scanner_regressions_hold() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions/frame_scanner");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "{} holds no inputs", dir.display());
    for path in paths {
        let frame = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // A panic names the text; the file name says which input it was.
        eprintln!("{}", path.display());
        check_frame(&frame);
    }
}
