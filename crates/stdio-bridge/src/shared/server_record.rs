//! The record a running shared server writes: how to reach it and the secret it proves itself with.

use std::{fs, path::Path};
#[cfg(unix)]
use std::{fs::OpenOptions, io::Read, os::unix::fs::OpenOptionsExt};

use serde::{Deserialize, Serialize};

use super::{identity::Secret, paths::check_private_file};
use crate::{
    Error, ErrorKind,
    serve::{Endpoint, Transport},
};

/// The path both `calltape serve` and a shared server answer MCP at.
pub const MCP_PATH: &str = "/mcp";

/// The largest record read; anything longer is not a record.
const MAX_RECORD_LEN: u64 = 4096;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordJson {
    version: u32,
    transport: Transport,
    endpoint: String,
    path: String,
    pid: u32,
    secret: String,
    /// Absent from the records of an older calltape: such a server matches no session's command.
    #[serde(default)]
    command: String,
}

/// The contents of `server.json`.
#[derive(Debug, Clone)]
pub struct ServerRecord {
    /// Where the server listens.
    pub endpoint: Endpoint,
    /// The HTTP path of its MCP endpoint (`/mcp`).
    pub path: String,
    /// The server's process id.
    pub pid: u32,
    /// The secret it proves itself with.
    pub secret: Secret,
    /// The fingerprint of the command it runs, the folder it runs in and calltape's version
    /// ([`Launcher::fingerprint`](super::Launcher::fingerprint)): a session attaches only to a server
    /// whose fingerprint is its own.
    pub command: String,
}

impl ServerRecord {
    /// The record as JSON text.
    pub fn to_json(&self) -> String {
        let json = RecordJson {
            version: 1,
            transport: self.endpoint.transport(),
            endpoint: self.endpoint.to_string(),
            path: self.path.clone(),
            pid: self.pid,
            secret: self.secret.to_hex(),
            command: self.command.clone(),
        };
        serde_json::to_string(&json).expect("a record serializes")
    }

    /// Parses a record; `None` when it is not a version-1 record with a consistent endpoint.
    pub fn from_json(text: &str) -> Option<Self> {
        let json: RecordJson = serde_json::from_str(text).ok()?;
        if json.version != 1 || !json.path.starts_with('/') {
            return None;
        }
        let endpoint = Endpoint::parse(&json.endpoint)?;
        if endpoint.transport() != json.transport {
            return None;
        }
        Some(Self {
            endpoint,
            path: json.path,
            pid: json.pid,
            secret: Secret::from_hex(&json.secret)?,
            command: json.command,
        })
    }

    /// Reads the record at `path`. `Ok(None)` when there is none or it is not a record (a server that
    /// died mid-write leaves no partial record, since records are renamed into place). Refused when it is
    /// a link, another user's, or readable by the group or others.
    ///
    /// On Windows: refused when it is a link; who may write it is up to the key's owner-only folder.
    #[cfg(unix)]
    pub fn read(path: &Path) -> Result<Option<Self>, Error> {
        if !check_private_file(path, false)? {
            return Ok(None);
        }
        // A read only, no-follow, of a file checked just above, and bounded by MAX_RECORD_LEN, which
        // calltape-jsonl-store's whole-file read is not; records are written through it.
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(format!("cannot open {}", path.display()), e)),
        };
        let mut text = String::new();
        file.take(MAX_RECORD_LEN)
            .read_to_string(&mut text)
            .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
        Ok(Self::from_record_text(path, &text))
    }

    /// Reads the record at `path`. `Ok(None)` when there is none or it is not a record (a server that
    /// died mid-write leaves no partial record, since records are renamed into place). Refused when it is
    /// a link, another user's, or readable by the group or others.
    ///
    /// On Windows: refused when it is a link; who may write it is up to the key's owner-only folder.
    #[cfg(not(unix))]
    pub fn read(path: &Path) -> Result<Option<Self>, Error> {
        if !check_private_file(path)? {
            return Ok(None);
        }
        // No link followed; a file longer than a record is not one.
        let bytes = match calltape_jsonl_store::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e)
                if e.io_error().map(std::io::Error::kind) == Some(std::io::ErrorKind::NotFound) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(ErrorKind::File(e).into()),
        };
        if bytes.len() as u64 > MAX_RECORD_LEN {
            tracing::debug!(path = %path.display(), "ignoring a record longer than {MAX_RECORD_LEN} bytes");
            return Ok(None);
        }
        Ok(Self::from_record_text(
            path,
            &String::from_utf8_lossy(&bytes),
        ))
    }

    fn from_record_text(path: &Path, text: &str) -> Option<Self> {
        let record = Self::from_json(text);
        if record.is_none() {
            tracing::debug!(path = %path.display(), "ignoring a record that is not a version-1 shared server record");
        }
        record
    }

    /// Writes the record owner-only in one step: to a fresh temporary file beside it, then renamed
    /// (calltape-jsonl-store's atomic write). A symbolic link at `path` is refused.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        calltape_jsonl_store::fs::write_atomic(path, self.to_json())
            .map_err(|e| ErrorKind::File(e).into())
    }

    /// Removes the record at `path` only if it still names `pid`: a server never removes its
    /// successor's record. Returns whether it removed one.
    pub fn remove_if_pid(path: &Path, pid: u32) -> bool {
        match Self::read(path) {
            Ok(Some(record)) if record.pid == pid => fs::remove_file(path).is_ok(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use super::*;

    fn record(endpoint: &str) -> ServerRecord {
        ServerRecord {
            endpoint: Endpoint::parse(endpoint).unwrap(),
            path: MCP_PATH.into(),
            pid: 42,
            secret: Secret::from_hex(&"ab".repeat(32)).unwrap(),
            command: "cd".repeat(32),
        }
    }

    #[test]
    fn json_shape() {
        let r = record("http://127.0.0.1:4567");
        let value: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"version":1,"transport":"http","endpoint":"http://127.0.0.1:4567","path":"/mcp","pid":42,"secret":"ab".repeat(32),"command":"cd".repeat(32)})
        );
        let r = record("unix:/run/user/1/calltape/shared/k/server.sock");
        assert!(r.to_json().contains(
            r#""transport":"unix","endpoint":"unix:/run/user/1/calltape/shared/k/server.sock""#
        ));
        let back = ServerRecord::from_json(&r.to_json()).unwrap();
        assert_eq!(back.endpoint, r.endpoint);
        assert_eq!(back.pid, 42);
        assert_eq!(back.secret.to_hex(), r.secret.to_hex());
        assert_eq!(back.command, r.command);
        // The record of an older calltape has no command: it matches no session's.
        let old = r
            .to_json()
            .replace(&format!(r#","command":"{}""#, r.command), "");
        assert_eq!(ServerRecord::from_json(&old).unwrap().command, "");
    }

    #[test]
    fn refuses_what_is_not_a_record() {
        let good = record("http://127.0.0.1:4567").to_json();
        let cases = [
            good.replace(r#""version":1"#, r#""version":2"#),
            good.replace("127.0.0.1", "10.0.0.1"),
            good.replace("127.0.0.1:4567", "localhost:4567"),
            good.replace(":4567", ":0"),
            good.replace(":4567", ":70000"),
            good.replace(r#""transport":"http""#, r#""transport":"unix""#),
            good.replace(r#""path":"/mcp""#, r#""path":"mcp""#),
            good.replace(&"ab".repeat(32), "abc"),
            good.replace('}', r#","extra":1}"#),
            record("unix:/a/b.sock")
                .to_json()
                .replace("unix:/a", "unix:a"),
            String::new(),
            "[]".into(),
            good[..good.len() - 1].to_owned(),
        ];
        for case in cases {
            assert!(ServerRecord::from_json(&case).is_none(), "{case}");
        }
    }

    #[test]
    fn written_in_one_step_owner_only_and_removed_only_by_its_writer() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("server.json");
        assert!(ServerRecord::read(&path).unwrap().is_none());
        let r = record("http://127.0.0.1:4567");
        r.write(&path).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(ServerRecord::read(&path).unwrap().unwrap().pid, 42);
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
        // Replaced by a newer record.
        let mut newer = r.clone();
        newer.pid = 43;
        newer.write(&path).unwrap();
        assert_eq!(ServerRecord::read(&path).unwrap().unwrap().pid, 43);
        assert!(!ServerRecord::remove_if_pid(&path, 42));
        assert!(path.exists());
        assert!(ServerRecord::remove_if_pid(&path, 43));
        assert!(!path.exists());
    }

    #[test]
    fn a_corrupt_record_reads_as_none_and_an_exposed_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("server.json");
        fs::write(&path, "not json").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(ServerRecord::read(&path).unwrap().is_none());
        record("http://127.0.0.1:1").write(&path).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let message = ServerRecord::read(&path).unwrap_err().to_string();
        assert!(message.contains("0644"), "{message}");
        assert!(!message.contains(&"ab".repeat(32)), "{message}");
    }

    #[test]
    fn transport_names() {
        assert_eq!("unix".parse::<Transport>().unwrap(), Transport::Unix);
        assert_eq!("http".parse::<Transport>().unwrap(), Transport::Http);
        assert!(
            "tcp"
                .parse::<Transport>()
                .unwrap_err()
                .to_string()
                .contains("use unix or http")
        );
    }
}
