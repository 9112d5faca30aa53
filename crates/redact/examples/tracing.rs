//! Logs through `tracing_subscriber` with every line redacted on its way to
//! stderr.
//!
//! Run with `cargo run -p calltape-redact --example tracing`.

use std::sync::Mutex;

use calltape_redact::{RedactingWriter, Redactor};

fn main() {
    let redactor = Redactor::builder()
        .keep_names(["pageToken"])
        .build()
        .expect("a valid configuration");

    // One writer behind a mutex; a closure that builds a writer per event works too:
    // `.with_writer(move || RedactingWriter::new(redactor.clone(), std::io::stderr()))`.
    let writer = RedactingWriter::new(redactor, std::io::stderr());
    tracing_subscriber::fmt()
        .with_writer(Mutex::new(writer))
        .with_ansi(false)
        .init();

    tracing::info!(
        api_key = "sk-proj-abcdefghijklmnopqrstuvwx",
        "calling the upstream"
    );
    tracing::info!("GET https://api.example.com/v1/items?access_token=abc123&pageToken=p2");
    tracing::warn!(
        body = r#"{"user":"bob","password":"hunter2"}"#,
        "login failed, retrying with Authorization: Bearer abc123def456"
    );
    tracing::info!("connected to postgres://app:s3cret@db.internal:5432/app");
}
