//! Request ids: random UUID v4, generated here from the OS random source.

use crate::error::CursorError;

/// A UUID v4 for `x-request-id` (and the trace id of IDE-identity calls).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RequestId(String);

impl RequestId {
    /// A fresh random id. Fails only if the OS random source fails.
    pub fn generate() -> Result<Self, CursorError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)
            .map_err(|err| CursorError::invalid(format!("OS random source failed: {err}")))?;
        Ok(Self::from_random_bytes(bytes))
    }

    /// Formats 16 random bytes as a version-4, RFC 4122 variant UUID.
    pub fn from_random_bytes(bytes: [u8; 16]) -> Self {
        Self(cursor_proto::uuid::v4_from_bytes(bytes))
    }

    /// The hyphenated lower-case form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// 64 lower-case hex characters of fresh randomness: a process-stable `x-client-key`
/// when the caller keeps it for the life of the process (never derived from a token).
pub fn random_client_key() -> Result<String, CursorError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|err| CursorError::invalid(format!("OS random source failed: {err}")))?;
    Ok(cursor_proto::hex::encode(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_version_and_variant_bits() {
        let id = RequestId::from_random_bytes([0xff; 16]);
        assert_eq!(id.as_str(), "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let id = RequestId::from_random_bytes([0; 16]);
        assert_eq!(id.as_str(), "00000000-0000-4000-8000-000000000000");
    }

    #[test]
    fn generated_ids_differ_and_parse_as_v4() {
        let a = RequestId::generate().unwrap();
        let b = RequestId::generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 36);
        assert_eq!(a.as_str().as_bytes()[14], b'4');
    }

    #[test]
    fn client_keys_are_64_lowercase_hex() {
        let key = random_client_key().unwrap();
        assert_eq!(key.len(), 64);
        assert!(
            key.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
    }
}
