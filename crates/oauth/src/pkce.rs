//! The random values of one sign-in: the PKCE verifier and its S256 challenge (RFC 7636), and the
//! `state` that ties the redirect to the request.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use sha2::{Digest, Sha256};

use crate::Error;

/// A PKCE pair: the verifier sent to the token endpoint, the challenge sent to the authorization
/// endpoint.
pub(crate) struct Pkce {
    pub(crate) verifier: String,
    pub(crate) challenge: String,
}

impl Pkce {
    /// A fresh pair: 32 random bytes as the verifier (43 base64url characters), its SHA-256 as the
    /// challenge.
    pub(crate) fn new() -> Result<Self, Error> {
        let verifier = random_token()?;
        let challenge = s256(&verifier);
        Ok(Self {
            verifier,
            challenge,
        })
    }
}

/// The S256 challenge of `verifier`: base64url (no padding) of its SHA-256.
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// 32 random bytes, base64url without padding: a PKCE verifier or a `state`.
pub(crate) fn random_token() -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::sign_in(format!("cannot draw random bytes for the sign-in: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_is_base64url_of_sha256() {
        // Computed independently: Python's hashlib.sha256 and base64.urlsafe_b64encode, "=" removed.
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWEOEjXk"),
            "TP3DZQl9rJnri9eRuZaFS6Q7czCrth7sEZC00LreApo"
        );
    }

    #[test]
    fn verifiers_are_long_enough_and_differ() {
        let a = Pkce::new().unwrap();
        let b = Pkce::new().unwrap();
        assert_eq!(a.verifier.len(), 43);
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(a.challenge, s256(&a.verifier));
        assert!(
            a.verifier
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
    }
}
