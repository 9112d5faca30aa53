//! Reading back what the writers wrote, with strict types.

use std::fs;

use calltape_jsonl_store::{ErrorKind, JsonlReader, JsonlWriter, Options};
use serde::Deserialize;

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Call {
    method: String,
    answer: Option<serde_json::Value>,
}

#[tokio::test]
async fn errors_name_file_line_and_column_and_reading_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let writer = JsonlWriter::open(&path, Options::default()).await;
    writer.append_line(r#"{"method":"tools/call","answer":1}"#);
    writer.append_line(r#"{"method":"tools/call","anwser":1}"#);
    writer.append_line(r#"{"method":7}"#);
    writer.append_line(r#"not json"#);
    writer.append_line(r#"{"method":"prompts/get"}"#);
    assert_eq!(writer.close().await.lines_written, 5);

    let got: Vec<Result<(usize, Call), String>> = JsonlReader::open(&path)
        .unwrap()
        .map(|r| r.map_err(|e| e.to_string()))
        .collect();
    let p = path.display();
    assert_eq!(
        got,
        vec![
            Ok((
                1,
                Call {
                    method: "tools/call".into(),
                    answer: Some(1.into())
                }
            )),
            Err(format!(
                "{p}:2:31: unknown field `anwser`, expected `method` or `answer`"
            )),
            Err(format!(
                "{p}:3:11: invalid type: integer `7`, expected a string"
            )),
            Err(format!("{p}:4:2: expected ident")),
            Ok((
                5,
                Call {
                    method: "prompts/get".into(),
                    answer: None
                }
            )),
        ]
    );
}

#[test]
fn a_missing_file_is_an_open_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.jsonl");
    let err = JsonlReader::<Call>::open(&path).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Open { .. }));
    assert!(
        err.to_string()
            .starts_with(&format!("{}: cannot open: ", path.display()))
    );
}

#[test]
fn a_long_line_is_skipped_with_its_number_and_the_rest_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.jsonl");
    let long = format!("{{\"method\":\"{}\"}}", "m".repeat(100_000));
    fs::write(&path, format!("{long}\n{{\"method\":\"short\"}}\n")).unwrap();
    let mut reader = JsonlReader::<Call>::open(&path).unwrap().max_line(4096);
    let err = reader.next().unwrap().unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::LineTooLong {
                line: 1,
                max_line: 4096,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(reader.next().unwrap().unwrap().1.method, "short");
    assert!(reader.next().is_none());
}
