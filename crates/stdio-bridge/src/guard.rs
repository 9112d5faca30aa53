//! Who may talk to a loopback HTTP listener: the check `serve`, the shared server and calltape's HTTP
//! proxy run on every request before anything else.
//!
//! A web page the user visits can reach 127.0.0.1 three ways: a cross-origin request (a plain `POST`
//! with `Content-Type: text/plain` needs no preflight), which always carries an `Origin` header; a
//! request the page makes without one (an `<img>`, a `<script>`, a link followed or a form's `GET`),
//! which a browser marks `Sec-Fetch-Site: cross-site` or `same-site` (a page on another port of
//! `localhost` is the same site); and DNS rebinding, where the page's own name resolves to 127.0.0.1
//! and its requests carry that name in `Host`. [`LoopbackGuard`] refuses all three: an `Origin` gets
//! 403 unless it was allowed by name (or is the listener's own, when
//! [`LoopbackGuard::allow_own_origin`] says so), a request without an `Origin` whose `Sec-Fetch-Site`
//! is anything but `same-origin` or `none` (the user's own navigation) gets 403, and a `Host` that is
//! not `127.0.0.1`, `localhost` or `[::1]` (with the listener's port, when it has one) gets 421. A
//! client that is not a browser sends neither header and is served.
//!
//! The listener's own origin (`http://127.0.0.1:PORT`, `http://localhost:PORT` or `http://[::1]:PORT`,
//! with the port it listens on) is the one no foreign page can have: a page carries it only when it was
//! loaded from this very address and port, and calltape's listeners serve no pages. A rebinding page
//! carries its own name (`http://evil.example:PORT`), which is refused.
//!
//! # Example
//!
//! ```
//! use calltape_stdio_bridge::guard::LoopbackGuard;
//! use http::{HeaderMap, HeaderValue, StatusCode};
//!
//! let guard = LoopbackGuard::new(Some(8808)).allow_origin("http://localhost:3000");
//! let mut headers = HeaderMap::new();
//! headers.insert("host", HeaderValue::from_static("127.0.0.1:8808"));
//! assert!(guard.check(&headers).is_ok());
//!
//! headers.insert("origin", HeaderValue::from_static("https://evil.example"));
//! assert_eq!(guard.check(&headers).unwrap_err().status(), StatusCode::FORBIDDEN);
//!
//! // An `<img src="http://127.0.0.1:8808/…">` on a page: no Origin, but the browser says where from.
//! headers.remove("origin");
//! headers.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
//! assert_eq!(guard.check(&headers).unwrap_err().status(), StatusCode::FORBIDDEN);
//! ```

use std::fmt;

use http::{HeaderMap, StatusCode, header};

/// The header a browser adds to every request it makes, saying whether a page of another site, of
/// the same site, of the same origin, or the user (`none`) caused it.
const SEC_FETCH_SITE: &str = "sec-fetch-site";

/// The `Sec-Fetch-Site` values a request without an `Origin` may carry: the user's own navigation,
/// and a page of the listener's own origin.
const SEC_FETCH_SITE_ALLOWED: [&[u8]; 2] = [b"same-origin", b"none"];

/// The checks a loopback listener runs on each request's `Origin` and `Host` headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoopbackGuard {
    port: Option<u16>,
    allowed_origins: Vec<String>,
    own_origin: bool,
}

/// Why a request was refused: the status to answer with and a short text that says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    status: StatusCode,
    message: &'static str,
}

impl Refusal {
    /// 403 for a foreign origin, 421 for a foreign host.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// A lowercase sentence for the response body.
    pub fn message(&self) -> &'static str {
        self.message
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl LoopbackGuard {
    /// A guard for a listener on `port` (`None` for a Unix socket, where any port in `Host` is
    /// accepted), allowing no origin.
    pub fn new(port: Option<u16>) -> Self {
        Self {
            port,
            allowed_origins: Vec::new(),
            own_origin: false,
        }
    }

    /// Lets requests from the listener's own origin through: `http://` with `127.0.0.1`, `localhost`
    /// or `[::1]` and the listener's port, as the MCP conformance suite sends them. A Unix socket has no
    /// origin of its own.
    pub fn allow_own_origin(mut self) -> Self {
        self.own_origin = true;
        self
    }

    /// Lets requests from exactly this origin through (`http://localhost:3000`, say: a browser app
    /// under test). Compared byte for byte with the `Origin` header.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// The origins let through.
    pub fn allowed_origins(&self) -> &[String] {
        &self.allowed_origins
    }

    /// Whether `origin` is this listener's own: `http://` and a loopback name with its port.
    fn is_own_origin(&self, origin: &[u8]) -> bool {
        let (true, Some(port)) = (self.own_origin, self.port) else {
            return false;
        };
        let Some(host) = origin.strip_prefix(b"http://") else {
            return false;
        };
        ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .any(|name| host == format!("{name}:{port}").as_bytes())
    }

    /// Checks a request's headers: `Ok` when it may be served.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let mut origins = headers.get_all(header::ORIGIN).iter().peekable();
        // A browser always sends Origin on the requests that matter; only the ones allowed pass.
        if origins.peek().is_some()
            && !origins.all(|o| {
                self.is_own_origin(o.as_bytes())
                    || self
                        .allowed_origins
                        .iter()
                        .any(|a| a.as_bytes() == o.as_bytes())
            })
        {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                message: "requests with an Origin header this server does not allow are refused: no web page may call it",
            });
        }
        // Without an Origin, a browser still says whether a page made the request: only the user's
        // own navigation (`none`) and the listener's own pages (`same-origin`, which no calltape
        // listener serves) may pass. A request with an allowed Origin was checked above.
        if headers.get(header::ORIGIN).is_none()
            && !headers.get_all(SEC_FETCH_SITE).iter().all(|v| {
                SEC_FETCH_SITE_ALLOWED
                    .iter()
                    .any(|a| v.as_bytes().eq_ignore_ascii_case(a))
            })
        {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                message: "requests a web page sent (Sec-Fetch-Site other than same-origin or none, and no Origin header this server allows) are refused: no web page may call it",
            });
        }
        let mut hosts = headers.get_all(header::HOST).iter();
        let host_ok = match (hosts.next(), hosts.next()) {
            (Some(h), None) => h.to_str().is_ok_and(|h| host_is_loopback(h, self.port)),
            _ => false,
        };
        if !host_ok {
            return Err(Refusal {
                status: StatusCode::MISDIRECTED_REQUEST,
                message: "the Host header must name this loopback server",
            });
        }
        Ok(())
    }
}

/// Whether `host` is a loopback name, with no port or with `port` (any port when `port` is `None`).
pub fn host_is_loopback(host: &str, port: Option<u16>) -> bool {
    let (name, host_port) = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inside, after)) => (format!("[{inside}]"), after.strip_prefix(':')),
            None => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, p)) => (name.to_owned(), Some(p)),
            None => (host.to_owned(), None),
        }
    };
    let name_ok = matches!(
        name.to_ascii_lowercase().as_str(),
        "127.0.0.1" | "localhost" | "[::1]"
    );
    let port_ok = match (host_port, port) {
        (None, _) => true,
        (Some(p), want) => match p.parse::<u16>() {
            Ok(p) => want.is_none_or(|want| want == p),
            Err(_) => false,
        },
    };
    name_ok && port_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn loopback_hosts() {
        for host in [
            "127.0.0.1",
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:8080",
            "[::1]",
            "[::1]:8080",
        ] {
            assert!(host_is_loopback(host, Some(8080)), "{host}");
            assert!(host_is_loopback(host, None), "{host}");
        }
        for host in [
            "127.0.0.1:8081",
            "localhost.:8080",
            "localhost.",
            "evil.example",
            "evil.example:8080",
            "127.0.0.2",
            "0.0.0.0:8080",
            "[::2]:8080",
            "localhost:",
            "localhost:x",
            "[::1",
            "",
            "127.0.0.1.nip.io",
        ] {
            assert!(!host_is_loopback(host, Some(8080)), "{host}");
        }
    }

    #[test]
    fn a_request_a_page_made_without_an_origin_is_refused_by_its_sec_fetch_site() {
        let guard = LoopbackGuard::new(Some(8080))
            .allow_origin("http://localhost:3000")
            .allow_own_origin();
        // (origins, Sec-Fetch-Site values, expected status; None = served)
        let table: &[(&[&str], &[&str], Option<u16>)] = &[
            // Not a browser: neither header.
            (&[], &[], None),
            // The user's own navigation, and a page of the listener's own origin.
            (&[], &["none"], None),
            (&[], &["same-origin"], None),
            (&[], &["Same-Origin"], None),
            // An <img>, a <script> or a form's GET on a page of another site, or of another port
            // of localhost (the same site).
            (&[], &["cross-site"], Some(403)),
            (&[], &["same-site"], Some(403)),
            (&[], &["CROSS-SITE"], Some(403)),
            (&[], &["none", "cross-site"], Some(403)),
            (&[], &["something-else"], Some(403)),
            (&[], &[""], Some(403)),
            // With an Origin, the Origin decides: an allowed app's CORS fetch is cross-site.
            (&["http://localhost:3000"], &["cross-site"], None),
            (&["http://localhost:3000"], &["same-site"], None),
            (&["http://127.0.0.1:8080"], &["same-origin"], None),
            (&["https://evil.example"], &["none"], Some(403)),
            (&["https://evil.example"], &["cross-site"], Some(403)),
        ];
        for (origins, sites, expected) in table {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
            for o in *origins {
                headers.append(header::ORIGIN, HeaderValue::from_str(o).unwrap());
            }
            for s in *sites {
                headers.append(SEC_FETCH_SITE, HeaderValue::from_str(s).unwrap());
            }
            let got = guard.check(&headers).err().map(|r| r.status().as_u16());
            assert_eq!(got, *expected, "{origins:?} {sites:?}");
            // Every listener's guard does the same, whatever it allows.
            if origins.is_empty() {
                for other in [LoopbackGuard::new(Some(8080)), LoopbackGuard::new(None)] {
                    let got = other.check(&headers).err().map(|r| r.status().as_u16());
                    assert_eq!(got, *expected, "{sites:?} {other:?}");
                }
            }
        }
    }

    #[test]
    fn origins_and_hosts_table() {
        let guard = LoopbackGuard::new(Some(8080))
            .allow_origin("http://localhost:3000")
            .allow_own_origin();
        // (origins, hosts, expected status; None = served)
        let table: &[(&[&str], &[&str], Option<u16>)] = &[
            (&[], &["127.0.0.1:8080"], None),
            (&[], &["localhost"], None),
            (&["http://localhost:3000"], &["127.0.0.1:8080"], None),
            // The listener's own origin, under each loopback name.
            (&["http://127.0.0.1:8080"], &["127.0.0.1:8080"], None),
            (&["http://localhost:8080"], &["localhost:8080"], None),
            (&["http://[::1]:8080"], &["[::1]:8080"], None),
            (&["http://127.0.0.1:8081"], &["127.0.0.1:8080"], Some(403)),
            (&["http://127.0.0.1"], &["127.0.0.1:8080"], Some(403)),
            (&["https://127.0.0.1:8080"], &["127.0.0.1:8080"], Some(403)),
            (&["http://127.0.0.1:8080/"], &["127.0.0.1:8080"], Some(403)),
            (&["http://localhost.:8080"], &["127.0.0.1:8080"], Some(403)),
            (&["http://127.0.0.2:8080"], &["127.0.0.1:8080"], Some(403)),
            (
                &["http://evil.example:8080"],
                &["127.0.0.1:8080"],
                Some(403),
            ),
            (&["http://127.0.0.1:80800"], &["127.0.0.1:8080"], Some(403)),
            (
                &["http://127.0.0.1:8080"],
                &["evil.example:8080"],
                Some(421),
            ),
            (&["https://evil.example"], &["127.0.0.1:8080"], Some(403)),
            (&["http://localhost:3000/"], &["127.0.0.1:8080"], Some(403)),
            (&["HTTP://LOCALHOST:3000"], &["127.0.0.1:8080"], Some(403)),
            (&["null"], &["127.0.0.1:8080"], Some(403)),
            (
                &["http://localhost:3000", "https://evil.example"],
                &["127.0.0.1:8080"],
                Some(403),
            ),
            (&["https://evil.example"], &["evil.example:8080"], Some(403)),
            (&[], &["evil.example:8080"], Some(421)),
            (&[], &["127.0.0.1:8081"], Some(421)),
            (&[], &[], Some(421)),
            (&[], &["127.0.0.1:8080", "evil.example"], Some(421)),
        ];
        for (origins, hosts, expected) in table {
            let mut headers = HeaderMap::new();
            for o in *origins {
                headers.append(header::ORIGIN, HeaderValue::from_str(o).unwrap());
            }
            for h in *hosts {
                headers.append(header::HOST, HeaderValue::from_str(h).unwrap());
            }
            let got = guard.check(&headers).err().map(|r| r.status().as_u16());
            assert_eq!(got, *expected, "{origins:?} {hosts:?}");
        }
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("localhost"));
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://localhost:3000"),
        );
        assert_eq!(
            LoopbackGuard::new(None)
                .check(&headers)
                .unwrap_err()
                .status(),
            StatusCode::FORBIDDEN,
            "no origin is allowed by default"
        );
        // Its own origin only when asked, and a Unix socket has none.
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://localhost:80"),
        );
        headers.insert(header::HOST, HeaderValue::from_static("localhost:80"));
        assert_eq!(
            LoopbackGuard::new(Some(80))
                .check(&headers)
                .unwrap_err()
                .status(),
            StatusCode::FORBIDDEN,
            "its own origin is refused unless allowed"
        );
        assert!(
            LoopbackGuard::new(Some(80))
                .allow_own_origin()
                .check(&headers)
                .is_ok()
        );
        assert_eq!(
            LoopbackGuard::new(None)
                .allow_own_origin()
                .check(&headers)
                .unwrap_err()
                .status(),
            StatusCode::FORBIDDEN,
            "a socket's guard takes no origin as its own"
        );
    }
}
