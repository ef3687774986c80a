//! Deterministic UUID v4 minting from an injected seed (the core never reads a random source).

use sha2::{Digest, Sha256};

/// Mints UUID v4 strings from a seed: SHA-256 of seed and counter, version and variant bits set.
#[derive(Clone, Debug)]
pub(crate) struct IdSource {
    seed: [u8; 16],
    counter: u64,
}

impl IdSource {
    pub(crate) fn new(seed: [u8; 16]) -> Self {
        Self { seed, counter: 0 }
    }

    /// The next UUID, lower-case and hyphenated.
    pub(crate) fn next_uuid(&mut self) -> String {
        let counter = self.counter.to_le_bytes();
        self.counter = self.counter.wrapping_add(1);
        hashed_uuid(&[&self.seed, &counter])
    }
}

/// A v4-shaped UUID from the SHA-256 of `parts`, in order: the same parts, the same id.
pub(crate) fn hashed_uuid(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    let digest = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    cursor_proto::uuid::v4_from_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_v4_shaped_distinct_and_reproducible() {
        let mut a = IdSource::new([7; 16]);
        let mut b = IdSource::new([7; 16]);
        let first = a.next_uuid();
        assert_eq!(first, b.next_uuid());
        assert_ne!(first, a.next_uuid());
        assert_eq!(first.len(), 36);
        assert_eq!(&first[14..15], "4");
        assert!(matches!(&first[19..20], "8" | "9" | "a" | "b"));
    }

    #[test]
    fn different_seeds_give_different_ids() {
        assert_ne!(
            IdSource::new([1; 16]).next_uuid(),
            IdSource::new([2; 16]).next_uuid()
        );
    }
}
