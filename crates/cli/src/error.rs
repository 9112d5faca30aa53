//! The CLI's one error type. Every command returns it; `main` says it on stderr (redacted, as every
//! line calltape writes there) and exits with its [`exit code`](Error::exit_code).

use std::io::{self, Write};
use std::path::PathBuf;

use calltape_recorder::terminal::{LineBreaks, escape_controls};

use crate::exit;

/// `line 3`, `lines 1, 2, 3`, at most ten of them named.
fn shown_lines(lines: &[usize]) -> String {
    let mut shown: Vec<String> = lines.iter().take(10).map(usize::to_string).collect();
    if lines.len() > 10 {
        shown.push(format!("… {} more", lines.len() - 10));
    }
    let word = if lines.len() == 1 { "line" } else { "lines" };
    format!("{word} {}", shown.join(", "))
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The redaction names given do not make a redactor.
    #[error(transparent)]
    Redact(#[from] calltape_redact::Error),
    /// A file calltape writes (a log, a report, a token file, a folder) cannot be written.
    #[error(transparent)]
    Store(#[from] calltape_jsonl_store::Error),
    /// The bridge, an upstream or the shared server is misconfigured.
    #[error(transparent)]
    Bridge(#[from] calltape_stdio_bridge::Error),
    /// A recording or a cassette cannot be read or written.
    #[error(transparent)]
    Recorder(#[from] calltape_recorder::Error),
    /// A replay or the HTTP proxy is misconfigured.
    #[error(transparent)]
    Replay(#[from] calltape_replay::Error),
    /// The OAuth sign-in is misconfigured, or its token store unusable.
    #[error(transparent)]
    OAuth(#[from] calltape_oauth::Error),
    /// `--oauth-client-secret-file` cannot be read.
    #[error("cannot read the client secret from {}: {source}", path.display())]
    ClientSecretFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// `auth logout` found nothing to remove.
    #[error("{}; `calltape auth list` shows what is stored", match .0 {
        Some(url) => format!("no sign-in stored for {url}"),
        None => "no sign-in stored".to_owned(),
    })]
    NothingStored(Option<String>),
    /// `--header` or `--header-file` with a child command.
    #[error("--header and --header-file apply to --url and --socket, not to a child command")]
    HeadersForChild,
    /// `shared --url` with `--header`, whose value would go on the shared server's command line.
    #[error(
        "a shared server's command line can be read by other local users, so `shared` takes no --header: put the headers in a file and give --header-file FILE"
    )]
    SharedHeaderOnArgv,
    /// No server to talk to.
    #[error("give the server: `-- CMD ARGS…`, --url URL or --socket PATH")]
    NoServer,
    /// `replay` without a recording.
    #[error("give the recording to replay: calltape replay FILE -- CMD…")]
    NoRecording,
    /// `replay` without `--update` of a recording that holds calls with no answer yet.
    #[error(
        "{}: {} with no recorded answer yet ({}); run `calltape replay --update {} -- SERVER…` \
         to fill in their answers from the server first",
        path.display(),
        if lines.len() == 1 { "1 call" } else { "calls" },
        shown_lines(lines),
        path.display()
    )]
    Unanswered {
        /// The recording.
        path: PathBuf,
        /// The lines of the calls with no answer.
        lines: Vec<usize>,
    },
    /// `--watch` without a child command to restart.
    #[error("--watch restarts a child command: give one after `--`")]
    WatchWithoutChild,
    /// `record -o FILE` and `--record FILE` together.
    #[error("give the recording once: -o FILE or --record FILE, not both")]
    RecordingTwice,
    /// `--socket` on a system without Unix sockets.
    #[cfg(windows)]
    #[error(
        "--socket {} needs a unix socket, which calltape does not support on windows; serve the server over loopback http and give its URL with --url (or listen with --listen)",
        path.display()
    )]
    NoUnixSockets {
        /// The socket asked for.
        path: PathBuf,
    },
    /// stderr cannot be sent to the `--log` file.
    #[cfg(unix)]
    #[error("cannot send logs to {}: {source}", path.display())]
    RedirectLogs {
        /// The log file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// `--listen`, `--socket` or `--token-file` given to a shared server.
    #[error(
        "a shared server picks its own endpoint and token: drop --listen, --socket and --token-file"
    )]
    SharedServerFlags,
    /// `http` without an upstream.
    #[error("give at least one --upstream NAME=URL, e.g. --upstream openai=https://api.openai.com")]
    NoUpstreamApi,
    /// A flag's value is not `NAME=VALUE`.
    #[error("{flag} {value:?} is not NAME=VALUE{example}")]
    NotAPair {
        /// The flag, e.g. `--upstream`.
        flag: &'static str,
        /// What it was given.
        value: String,
        /// What ends the message: nothing, or `, e.g. …`.
        example: &'static str,
    },
    /// `--auth` with a key written out instead of read from the environment. (Worded so that the
    /// redactor, which every stderr line passes, does not take the upstream's name for a key.)
    #[error(
        "the key for upstream `{upstream}` in --auth: give it as env:VAR, or HEADER:env:VAR (its value never goes on the command line)"
    )]
    AuthNotFromEnv {
        /// The upstream's name.
        upstream: String,
    },
    /// `--auth` names an environment variable that is unset or empty.
    #[error(
        "the key for upstream `{upstream}` in --auth: environment variable {var} is not set or empty"
    )]
    AuthVarUnset {
        /// The upstream's name.
        upstream: String,
        /// The variable.
        var: String,
    },
    /// The proxy's mode cannot be resolved from `--mode` or the environment.
    #[error("{0}")]
    Mode(String),
    /// The recording a mock answers from is named wrong.
    #[error("{0}")]
    Cassette(String),
    /// `show` of a file in neither of calltape's formats.
    #[error("{} is neither an MCP call recording nor an HTTP cassette: {reason}", path.display())]
    NeitherFormat {
        /// The file.
        path: PathBuf,
        /// Why not, as a clause ("it is empty").
        reason: String,
    },
    /// `show` of a format this build cannot show.
    #[error("{}: a format this calltape cannot show", .0.display())]
    UnknownFormat(PathBuf),
    /// What failed, and the error that says why; exits as that error does.
    #[error("{context}: {source}")]
    Context {
        /// What failed, e.g. "cannot record to calls.jsonl".
        context: String,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// The upstream server could not be started or stopped answering.
    #[error(transparent)]
    Upstream(Box<Error>),
    /// A file named on the command line cannot be read.
    #[error("cannot read {}: {}", path.display(), describe(source))]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// stdout cannot be written (a closed pipe is no error).
    #[error("cannot write to stdout: {0}")]
    Stdout(#[source] io::Error),
    /// The async runtime cannot be made.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] io::Error),
    /// This program's own path is unknown, so it cannot run itself.
    #[error("cannot find this program's path: {0}")]
    CurrentExe(#[source] io::Error),
    /// The working folder is unknown, so a relative path cannot be made absolute.
    #[error("cannot find the working folder: {0}")]
    CurrentDir(#[source] io::Error),
    /// A value that goes into a JSON snippet is not UTF-8.
    #[error("{0} is not UTF-8, so it cannot go into a JSON configuration")]
    NotUtf8(&'static str),
    /// The command to run cannot be started.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Waiting for the command failed.
    #[error("waiting for the command failed: {0}")]
    Wait(#[source] io::Error),
    /// Some of several inputs failed; each was said on stderr as it failed.
    #[error("{failed} of {total} {what}; see the lines above")]
    Partly {
        /// How many failed.
        failed: usize,
        /// Of how many.
        total: usize,
        /// What they are and what befell them, e.g. "files could not be read".
        what: &'static str,
    },
    /// `calltape demo` could not run its steps.
    #[error("demo: {0}")]
    Demo(String),
    /// The final gate refused what a command was about to write (a report): nothing of it was
    /// written.
    #[error("{0}")]
    Refused(calltape_recorder::Refusal),
    /// The final gate refused some of what a command wrote (calls, interactions, lines); each was
    /// said on stderr as it was refused.
    #[error("{0} refused by the final gate (see the lines above): nothing of them was written")]
    RefusedSome(String),
}

impl Error {
    /// The process's exit code for this error: [`exit::UPSTREAM`] when the server (or the runtime
    /// or program that runs it) failed, [`exit::USAGE`] for everything the user can fix in the
    /// command line or its input.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Upstream(_)
            | Self::Runtime(_)
            | Self::CurrentExe(_)
            | Self::Wait(_)
            | Self::Demo(_) => exit::UPSTREAM,
            Self::Refused(_) | Self::RefusedSome(_) => exit::DIFFERENCES,
            Self::OAuth(e) if matches!(e.kind(), calltape_oauth::ErrorKind::SignIn(_)) => {
                exit::UPSTREAM
            }
            Self::Context { source, .. } => source.exit_code(),
            _ => exit::USAGE,
        }
    }

    /// This error, as an upstream failure (exit 3).
    pub(crate) fn upstream(error: impl Into<Error>) -> Self {
        Self::Upstream(Box::new(error.into()))
    }

    /// This error, said after `context`.
    pub(crate) fn context(context: impl Into<String>, error: impl Into<Error>) -> Self {
        Self::Context {
            context: context.into(),
            source: Box::new(error.into()),
        }
    }

    /// Says this error on stderr as `calltape: …`, redacted, with the run's known secret values
    /// hidden (as every line calltape writes there) and its control characters escaped (a message
    /// may quote a recorded string): the one way a command's failure, or one of several inputs'
    /// failures, is said.
    pub(crate) fn report(&self) {
        let message = format!("calltape: {self}");
        let mut stderr = crate::logging::stderr_writer();
        let _ = writeln!(stderr, "{}", escape_controls(&message, LineBreaks::Keep));
        let _ = stderr.flush();
    }
}

/// An I/O error as a person reads it: the common kinds in a few words.
fn describe(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        io::ErrorKind::IsADirectory => "is a directory".to_owned(),
        _ => e.to_string(),
    }
}

/// What a command gives `main` when it did not fail: its exit code, [`exit::OK`],
/// [`exit::DIFFERENCES`] or a command's own status.
pub(crate) type Outcome = Result<u8, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unanswered_lines_are_named_up_to_ten() {
        let error = |lines: Vec<usize>| {
            Error::Unanswered {
                path: PathBuf::from("c.jsonl"),
                lines,
            }
            .to_string()
        };
        assert_eq!(
            error(vec![3]),
            "c.jsonl: 1 call with no recorded answer yet (line 3); run `calltape replay --update \
             c.jsonl -- SERVER…` to fill in their answers from the server first"
        );
        assert!(
            error((1..=12).collect()).contains("(lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, … 2 more)")
        );
    }

    #[test]
    fn exit_codes() {
        let io = || io::Error::other("x");
        let cases: Vec<(Error, u8)> = vec![
            (Error::NoServer, exit::USAGE),
            (Error::Stdout(io()), exit::USAGE),
            (Error::upstream(Error::NoServer), exit::UPSTREAM),
            (Error::Runtime(io()), exit::UPSTREAM),
            (Error::Wait(io()), exit::UPSTREAM),
            (Error::Demo("x".into()), exit::UPSTREAM),
            (
                Error::context("a", Error::upstream(Error::NoServer)),
                exit::UPSTREAM,
            ),
            (Error::context("a", Error::NoServer), exit::USAGE),
            (
                Error::Unanswered {
                    path: PathBuf::from("c.jsonl"),
                    lines: vec![3],
                },
                exit::USAGE,
            ),
        ];
        for (error, code) in cases {
            assert_eq!(error.exit_code(), code, "{error:?}");
        }
    }

    #[test]
    fn context_and_read_messages() {
        let e = Error::context("cannot record to a.jsonl", Error::Mode("full".into()));
        assert_eq!(e.to_string(), "cannot record to a.jsonl: full");
        let e = Error::Read {
            path: "m.log".into(),
            source: io::ErrorKind::NotFound.into(),
        };
        assert_eq!(e.to_string(), "cannot read m.log: no such file");
    }
}
