//! The identity proof a shared server gives before a session sends it any credential.
//!
//! From the server's 32-byte secret, HKDF-SHA256 derives two independent values under two labels: a
//! proof key and the bearer token. A session sends a fresh random nonce; the server answers with
//! HMAC-SHA256 under the proof key over a versioned label, its own endpoint and the nonce. The session
//! recomputes that from the record's secret and compares in constant time; only then does it send the
//! token. A proof is useless for any other nonce (replay), endpoint (relay) or secret (an earlier server),
//! and neither derived value reveals the other or the secret.

use std::fmt;

use hkdf::Hkdf;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::Error;

const PROOF_KEY_LABEL: &[u8] = b"calltape shared server proof key v1";
const TOKEN_LABEL: &[u8] = b"calltape shared server token v1";
const IDENTITY_LABEL: &str = "calltape shared server identity v1";

/// The path of the identity endpoint on a shared server.
pub const IDENTITY_PATH: &str = "/.well-known/calltape-shared-server";

/// Where a session that runs another command tells the key's server, with its token, that it is
/// replaced.
pub(crate) const RETIRE_PATH: &str = "/.well-known/calltape-shared-server/retire";

fn random32() -> Result<[u8; 32], Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| {
        Error::io(
            "cannot read the system's random source",
            std::io::Error::other(e.to_string()),
        )
    })?;
    Ok(bytes)
}

/// Lowercase hex of `bytes`.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// Exactly 32 bytes from 64 lowercase or uppercase hex digits.
pub(crate) fn from_hex32(text: &str) -> Option<[u8; 32]> {
    let text = text.as_bytes();
    if text.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// A server's secret: 32 random bytes, fresh for every start. Its `Debug` output never shows it.
#[derive(Clone)]
pub struct Secret([u8; 32]);

impl Secret {
    /// A fresh secret from the system's random source.
    pub fn generate() -> Result<Self, Error> {
        random32().map(Self)
    }

    /// The secret from a record's 64 hex digits.
    pub fn from_hex(text: &str) -> Option<Self> {
        from_hex32(text).map(Self)
    }

    /// The secret as 64 hex digits, for the record only.
    pub fn to_hex(&self) -> String {
        to_hex(&self.0)
    }

    /// The proof key and the bearer token derived from this secret.
    pub fn keys(&self) -> ServerKeys {
        let hk = Hkdf::<Sha256>::new(None, &self.0);
        let mut proof_key = [0u8; 32];
        let mut token = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's limit of 255 * 32, so expand cannot fail.
        hk.expand(PROOF_KEY_LABEL, &mut proof_key)
            .expect("32 bytes is a valid HKDF length");
        hk.expand(TOKEN_LABEL, &mut token)
            .expect("32 bytes is a valid HKDF length");
        ServerKeys {
            proof_key,
            token: to_hex(&token),
        }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([REDACTED])")
    }
}

/// A challenge's nonce: 32 random bytes, fresh for every challenge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nonce([u8; 32]);

impl Nonce {
    /// A fresh nonce from the system's random source.
    pub fn generate() -> Result<Self, Error> {
        random32().map(Self)
    }

    /// A nonce from 64 hex digits, as the identity endpoint receives it.
    pub fn from_hex(text: &str) -> Option<Self> {
        from_hex32(text).map(Self)
    }

    /// The nonce as 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        to_hex(&self.0)
    }
}

/// What a server derives from its secret: the key it proves its identity with and the bearer token it
/// accepts. Its `Debug` output shows neither.
#[derive(Clone)]
pub struct ServerKeys {
    proof_key: [u8; 32],
    token: String,
}

impl fmt::Debug for ServerKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ServerKeys([REDACTED])")
    }
}

impl ServerKeys {
    fn mac(&self, endpoint: &str, nonce: &Nonce) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.proof_key)
            .expect("HMAC takes a key of any length");
        // A JSON array keeps the three parts apart: no endpoint and nonce pair can shift into another.
        let message = serde_json::to_vec(&(IDENTITY_LABEL, endpoint, nonce.to_hex()))
            .expect("strings serialize");
        mac.update(&message);
        mac
    }

    /// The proof, as 64 hex digits, that the holder of this secret is the server at `endpoint`
    /// (`unix:<socket path>` or `http://127.0.0.1:<port>`), for `nonce`.
    pub fn prove(&self, endpoint: &str, nonce: &Nonce) -> String {
        to_hex(&self.mac(endpoint, nonce).finalize().into_bytes())
    }

    /// Whether `proof` is this secret's proof for `endpoint` and `nonce`, compared in constant time.
    pub fn verify(&self, endpoint: &str, nonce: &Nonce, proof: &str) -> bool {
        match from_hex32(proof) {
            Some(bytes) => self.mac(endpoint, nonce).verify_slice(&bytes).is_ok(),
            None => false,
        }
    }

    /// The bearer token, as 64 hex digits. Send it only to a server that proved its identity.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Whether `presented` is the token, compared in constant time (over SHA-256 digests, so its length
    /// leaks nothing either).
    pub fn token_matches(&self, presented: &[u8]) -> bool {
        token_matches(self.token.as_bytes(), presented)
    }
}

/// Whether `presented` equals `expected`, in time that depends on neither.
pub(crate) fn token_matches(expected: &[u8], presented: &[u8]) -> bool {
    let a = Sha256::digest(expected);
    let b = Sha256::digest(presented);
    bool::from(a.as_slice().ct_eq(b.as_slice()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENDPOINT: &str = "http://127.0.0.1:4000";

    #[test]
    fn secrets_and_nonces_are_fresh() {
        let a = Secret::generate().unwrap();
        let b = Secret::generate().unwrap();
        assert_ne!(a.to_hex(), b.to_hex());
        assert_eq!(a.to_hex().len(), 64);
        assert_ne!(Nonce::generate().unwrap(), Nonce::generate().unwrap());
    }

    #[test]
    fn hex_round_trips_and_refuses_garbage() {
        let s = Secret::generate().unwrap();
        assert_eq!(Secret::from_hex(&s.to_hex()).unwrap().to_hex(), s.to_hex());
        assert_eq!(
            Secret::from_hex(&s.to_hex().to_uppercase())
                .unwrap()
                .to_hex(),
            s.to_hex()
        );
        for bad in [
            "",
            "00",
            &"g".repeat(64),
            &"0".repeat(63),
            &"0".repeat(65),
            &"é".repeat(32),
        ] {
            assert!(Secret::from_hex(bad).is_none(), "{bad}");
            assert!(Nonce::from_hex(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let s = Secret::generate().unwrap();
        let keys = s.keys();
        let shown = format!("{s:?} {keys:?}");
        assert!(!shown.contains(&s.to_hex()));
        assert!(!shown.contains(keys.token()));
    }

    #[test]
    fn derived_values_are_independent_and_stable() {
        let s = Secret::from_hex(&"11".repeat(32)).unwrap();
        let k1 = s.keys();
        let k2 = s.keys();
        assert_eq!(k1.token(), k2.token());
        assert_eq!(k1.token().len(), 64);
        assert_ne!(k1.token(), s.to_hex());
        assert_ne!(to_hex(&k1.proof_key), k1.token());
        assert_ne!(to_hex(&k1.proof_key), s.to_hex());
        let other = Secret::from_hex(&"12".repeat(32)).unwrap().keys();
        assert_ne!(other.token(), k1.token());
    }

    #[test]
    fn a_proof_verifies_only_for_its_key_endpoint_and_nonce() {
        let keys = Secret::generate().unwrap().keys();
        let nonce = Nonce::generate().unwrap();
        let proof = keys.prove(ENDPOINT, &nonce);
        assert_eq!(proof.len(), 64);
        assert!(keys.verify(ENDPOINT, &nonce, &proof));
        assert!(keys.verify(ENDPOINT, &nonce, &proof.to_uppercase()));

        // Replayed: the proof of another nonce.
        assert!(!keys.verify(ENDPOINT, &Nonce::generate().unwrap(), &proof));
        // Stale: made with an earlier server's key.
        let earlier = Secret::generate().unwrap().keys();
        assert!(!keys.verify(ENDPOINT, &nonce, &earlier.prove(ENDPOINT, &nonce)));
        // Relayed: bound to another endpoint.
        assert!(!keys.verify(
            ENDPOINT,
            &nonce,
            &keys.prove("http://127.0.0.1:4001", &nonce)
        ));
        assert!(!keys.verify(
            "unix:/tmp/a.sock",
            &nonce,
            &keys.prove("unix:/tmp/b.sock", &nonce)
        ));
        // Garbage.
        for bad in [
            "",
            "zz",
            &"0".repeat(64),
            &proof[..63],
            &format!("{proof}0"),
            keys.token(),
        ] {
            assert!(!keys.verify(ENDPOINT, &nonce, bad), "{bad}");
        }
        // One flipped digit.
        let mut flipped = proof.clone().into_bytes();
        flipped[10] = if flipped[10] == b'0' { b'1' } else { b'0' };
        assert!(!keys.verify(ENDPOINT, &nonce, std::str::from_utf8(&flipped).unwrap()));
    }

    #[test]
    fn parts_cannot_shift_between_endpoint_and_nonce() {
        let keys = Secret::generate().unwrap().keys();
        let nonce = Nonce::generate().unwrap();
        let proof = keys.prove(ENDPOINT, &nonce);
        let shifted = format!("{ENDPOINT}\",\"");
        assert!(!keys.verify(&shifted, &nonce, &proof));
    }

    #[test]
    fn token_comparison() {
        let keys = Secret::generate().unwrap().keys();
        assert!(keys.token_matches(keys.token().as_bytes()));
        assert!(!keys.token_matches(b""));
        assert!(!keys.token_matches(&keys.token().as_bytes()[..63]));
        assert!(!keys.token_matches(keys.token().to_uppercase().as_bytes()));
    }
}
