//! Where a server of [`serve`](crate::serve) listens, and the transports it can listen on.

use std::{
    fmt,
    net::{Ipv4Addr, SocketAddr, SocketAddrV4},
    path::PathBuf,
    str::FromStr,
};

use serde::{Deserialize, Serialize};

use crate::Error;

/// How a shared server is reached. The default is [`Unix`](Transport::Unix) on Unix and
/// [`Http`](Transport::Http) elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// HTTP over an owner-only Unix socket in the key's folder. Unix only: elsewhere a server or a
    /// session asked for it fails with an error that names the `http` transport.
    #[cfg_attr(unix, default)]
    Unix,
    /// HTTP on a free port of 127.0.0.1.
    #[cfg_attr(not(unix), default)]
    Http,
}

#[cfg(not(unix))]
impl Transport {
    /// Refuses a transport this platform cannot carry: [`Unix`](Transport::Unix) off Unix.
    pub(crate) fn check_available(self) -> Result<(), Error> {
        match self {
            Self::Unix => Err(Error::config(
                "unix sockets are not available on windows; use the http transport",
            )),
            Self::Http => Ok(()),
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unix => "unix",
            Self::Http => "http",
        })
    }
}

impl FromStr for Transport {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "unix" => Ok(Self::Unix),
            "http" => Ok(Self::Http),
            _ => Err(Error::config(format!(
                "unknown transport `{s}`: use unix or http"
            ))),
        }
    }
}

/// Where a server listens: `unix:<socket path>` or `http://127.0.0.1:<port>`. The proof is bound to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// A Unix socket.
    Unix(PathBuf),
    /// A loopback TCP port.
    Http(SocketAddr),
}

impl Endpoint {
    /// The transport of this endpoint.
    pub fn transport(&self) -> Transport {
        match self {
            Self::Unix(_) => Transport::Unix,
            Self::Http(_) => Transport::Http,
        }
    }

    /// Parses `unix:<absolute path>` or `http://127.0.0.1:<port>`; nothing else is a shared endpoint.
    pub fn parse(text: &str) -> Option<Self> {
        if let Some(path) = text.strip_prefix("unix:") {
            let path = PathBuf::from(path);
            return path.is_absolute().then_some(Self::Unix(path));
        }
        let port = text.strip_prefix("http://127.0.0.1:")?;
        if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let port: u16 = port.parse().ok().filter(|p| *p != 0)?;
        Some(Self::Http(SocketAddr::V4(SocketAddrV4::new(
            Ipv4Addr::LOCALHOST,
            port,
        ))))
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
            Self::Http(addr) => write!(f, "http://127.0.0.1:{}", addr.port()),
        }
    }
}
