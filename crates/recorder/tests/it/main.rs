//! Integration tests of calltape-recorder.

mod cassette;
mod record;
