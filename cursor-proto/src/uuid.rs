//! The UUID text form the wire uses for conversation, message, request and login ids.

/// Formats 16 bytes as a version-4, RFC 4122 variant UUID (lower-case, hyphenated).
///
/// The caller chooses the bytes: the OS random source for real ids, a seeded source for
/// reproducible ones in sans-IO state machines.
///
/// ```
/// let id = cursor_proto::uuid::v4_from_bytes([0xff; 16]);
/// assert_eq!(id, "ffffffff-ffff-4fff-bfff-ffffffffffff");
/// ```
pub fn v4_from_bytes(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40; // version 4
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
    let mut text = String::with_capacity(36);
    for (index, byte) in bytes.iter().enumerate() {
        if matches!(index, 4 | 6 | 8 | 10) {
            text.push('-');
        }
        crate::hex::encode_into(&[*byte], &mut text);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_and_variant_bits_are_forced_and_groups_hyphenated() {
        let id = v4_from_bytes([0; 16]);
        assert_eq!(id, "00000000-0000-4000-8000-000000000000");
        let id = v4_from_bytes(*b"0123456789abcdef");
        assert_eq!(id, "30313233-3435-4637-b839-616263646566");
    }
}
