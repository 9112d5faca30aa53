//! Integration tests of calltape-recorder.

mod cassette;
mod private_files;
mod record;
