//! The login secrets: a PKCE verifier and challenge, and the uuid that names the attempt.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::AuthError;

/// The verifier (kept by the client, sent only on the poll) and its challenge (put in the link).
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    verifier: String,
    challenge: String,
}

impl Pkce {
    /// Draws 32 random bytes for a fresh verifier.
    pub fn generate() -> Result<Self, AuthError> {
        let mut bytes = [0_u8; 32];
        fill_random(&mut bytes)?;
        Ok(Self::from_verifier(URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// Derives the challenge of a given verifier: base64url (no padding) of the SHA-256 of
    /// the verifier *string*, not of the random bytes behind it.
    pub fn from_verifier(verifier: String) -> Self {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Self {
            verifier,
            challenge,
        }
    }

    /// The verifier (a secret until the login completes).
    pub fn verifier(&self) -> &str {
        &self.verifier
    }

    /// The challenge (public: it is in the login link).
    pub fn challenge(&self) -> &str {
        &self.challenge
    }
}

impl fmt::Debug for Pkce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pkce")
            .field("verifier", &"<redacted>")
            .field("challenge", &self.challenge)
            .finish()
    }
}

/// A random (version 4) UUID in lower-case hyphenated form.
pub fn random_uuid() -> Result<String, AuthError> {
    let mut bytes = [0_u8; 16];
    fill_random(&mut bytes)?;
    Ok(cursor_proto::uuid::v4_from_bytes(bytes))
}

fn fill_random(bytes: &mut [u8]) -> Result<(), AuthError> {
    getrandom::fill(bytes).map_err(|error| AuthError::Randomness(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_matches_rfc_7636_appendix_b() {
        let pkce = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".to_owned());
        assert_eq!(
            pkce.challenge(),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn generated_verifiers_are_43_url_safe_characters_and_differ() {
        let first = Pkce::generate().unwrap();
        let second = Pkce::generate().unwrap();
        assert_eq!(first.verifier().len(), 43);
        assert!(
            first
                .verifier()
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_ne!(first.verifier(), second.verifier());
    }

    #[test]
    fn debug_hides_the_verifier() {
        let pkce = Pkce::from_verifier("very-secret-verifier".to_owned());
        assert!(!format!("{pkce:?}").contains("very-secret-verifier"));
    }

    #[test]
    fn uuids_have_the_version_4_layout() {
        let uuid = random_uuid().unwrap();
        let groups: Vec<&str> = uuid.split('-').collect();
        assert_eq!(
            groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(groups[2].starts_with('4'));
        assert!(matches!(groups[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'));
        assert_ne!(uuid, random_uuid().unwrap());
    }
}
