//! Normalization and hashing shared by the adapters.

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `text`'s UTF-8 bytes: the form Cursor's headers carry.
pub(crate) fn sha256_hex(text: &str) -> String {
    cursor_proto::hex::encode(&Sha256::digest(text.as_bytes()))
}

/// Removes all whitespace and lower-cases, as Cursor does to every raw id before hashing.
pub(crate) fn compact_lowercase(raw: &str) -> String {
    raw.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_hex_matches_the_published_vector_for_abc() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn compaction_drops_every_kind_of_whitespace_and_lowercases() {
        assert_eq!(compact_lowercase(" AB-cd\r\n\tEF \n"), "ab-cdef");
    }
}
