//! Signatures of the thinking blocks this gateway hands out on the Anthropic API. A client must
//! send a thinking block back unmodified; the gateway checks it with its own secret, kept under
//! `--state` so signatures stay valid across restarts.

use base64::Engine as _;

use crate::state::secret::StateSecret;

/// What the MAC covers besides the text, so a signature is never valid for another purpose.
const PURPOSE: &[u8] = b"cursor-gateway thinking v1\0";

/// Signs and checks thinking blocks.
#[derive(Clone, Debug)]
pub(crate) struct ThinkingKey(StateSecret);

impl ThinkingKey {
    pub(crate) fn new(secret: StateSecret) -> Self {
        Self(secret)
    }

    /// The signature of `thinking`, base64.
    pub(crate) fn sign(&self, thinking: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.0.mac(PURPOSE, thinking.as_bytes()))
    }

    /// True when `signature` is this gateway's signature of `thinking` (compared in constant
    /// time).
    pub(crate) fn verify(&self, thinking: &str, signature: &str) -> bool {
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
            return false;
        };
        self.0.verify(PURPOSE, thinking.as_bytes(), &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_only_its_own_text_and_key() {
        let key = ThinkingKey::new(StateSecret::fixed([7; 32]));
        let signature = key.sign("let me think");
        assert!(key.verify("let me think", &signature));
        assert!(!key.verify("let me think!", &signature));
        assert!(!ThinkingKey::new(StateSecret::fixed([8; 32])).verify("let me think", &signature));
        assert!(!key.verify("let me think", "not base64 !"));
    }

    #[test]
    fn signatures_of_earlier_versions_still_verify() {
        // HMAC-SHA256(key, "cursor-gateway thinking v1\0" || text), base64: what 0.1 signed.
        use hmac::{Hmac, Mac as _};
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&[7; 32]).unwrap();
        mac.update(b"cursor-gateway thinking v1\0");
        mac.update(b"old thought");
        let old = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        assert!(ThinkingKey::new(StateSecret::fixed([7; 32])).verify("old thought", &old));
    }
}
