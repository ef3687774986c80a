//! Lower-case hex, the one text form of ids, digests and fingerprints across the crate family.

/// The sixteen lower-case hex digits.
const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends `bytes` to `out` as lower-case hex, two digits a byte.
pub fn encode_into(bytes: &[u8], out: &mut String) {
    out.reserve(bytes.len() * 2);
    for &byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
}

/// `bytes` as lower-case hex, two digits a byte.
///
/// ```
/// assert_eq!(cursor_proto::hex::encode(&[0x00, 0xab, 0x7f]), "00ab7f");
/// ```
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    encode_into(bytes, &mut out);
    out
}

/// Parses hex of either case into bytes; `None` on an odd length or a non-hex digit.
///
/// ```
/// assert_eq!(cursor_proto::hex::decode("00AB7f"), Some(vec![0x00, 0xab, 0x7f]));
/// assert_eq!(cursor_proto::hex::decode("abc"), None);
/// ```
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks_exact(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

/// Parses exactly `2 * N` hex digits into `N` bytes; `None` on any other length or a non-hex
/// digit.
///
/// ```
/// assert_eq!(cursor_proto::hex::decode_array::<2>("beef"), Some([0xbe, 0xef]));
/// assert_eq!(cursor_proto::hex::decode_array::<2>("bee"), None);
/// ```
pub fn decode_array<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

fn nibble(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        let text = encode(&all);
        assert_eq!(text.len(), 512);
        assert_eq!(text, text.to_lowercase());
        assert_eq!(decode(&text), Some(all));
    }

    #[test]
    fn garbage_is_rejected() {
        assert_eq!(decode("zz"), None);
        assert_eq!(decode("+1"), None);
        assert_eq!(decode_array::<1>("é"), None);
        assert_eq!(decode_array::<16>(&"é".repeat(16)), None);
        assert_eq!(decode_array::<2>("00000"), None);
    }
}
