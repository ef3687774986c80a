//! `x-cursor-checksum`: an obfuscated time bucket followed by the machine ids.

use base64::{Engine as _, engine::general_purpose::STANDARD};

/// The 8-character time prefix for `now_ms` (milliseconds since the Unix epoch).
///
/// Cursor builds the six bytes with JavaScript shifts, which take the shift count mod 32
/// and work on 32-bit integers: `t >> 40` is `t >> 8` and `t >> 32` is `t`. The layout is
/// therefore `[t>>8, t, t>>24, t>>16, t>>8, t]`, reproduced here on purpose.
pub fn checksum_prefix(now_ms: u64) -> String {
    let bucket = now_ms / 1_000_000;
    // JavaScript's ToInt32: wrap to 32 bits, then shift arithmetically.
    let t = bucket as u32 as i32;
    let byte = |shift_by: u32| (t >> (shift_by % 32)) as u8;
    let mut bytes = [byte(40), byte(32), byte(24), byte(16), byte(8), byte(0)];
    let mut prev: u8 = 165;
    for (i, b) in bytes.iter_mut().enumerate() {
        // i < 6, so the cast is exact.
        *b = (*b ^ prev).wrapping_add(i as u8);
        prev = *b;
    }
    STANDARD.encode(bytes)
}

/// The full header value: prefix, machine id, and `/` plus the MAC machine id when known.
pub fn checksum(now_ms: u64, machine_id: &str, mac_machine_id: Option<&str>) -> String {
    let mut out = checksum_prefix(now_ms);
    out.push_str(machine_id);
    if let Some(mac) = mac_machine_id {
        out.push('/');
        out.push_str(mac);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // The test vectors of docs/PROTOCOL.md §3.3 (JavaScript layout).
    #[test]
    fn prefix_matches_the_javascript_shift_vectors() {
        assert_eq!(checksum_prefix(1_700_000_000_000), "Vfb45Bi9");
        assert_eq!(checksum_prefix(1_767_225_600_000), "Umxud4TC");
    }

    #[test]
    fn prefix_is_stable_within_a_bucket() {
        assert_eq!(
            checksum_prefix(1_700_000_000_000),
            checksum_prefix(1_700_000_999_999)
        );
        assert_ne!(
            checksum_prefix(1_700_000_000_000),
            checksum_prefix(1_700_001_000_000)
        );
    }

    #[test]
    fn full_value_is_72_or_137_characters() {
        let id = "a".repeat(64);
        let mac = "b".repeat(64);
        assert_eq!(checksum(1_700_000_000_000, &id, None).len(), 72);
        let full = checksum(1_700_000_000_000, &id, Some(&mac));
        assert_eq!(full.len(), 137);
        assert!(full.starts_with("Vfb45Bi9aaaa"));
        assert!(full.contains(&format!("/{mac}")));
    }
}
