//! Per-message compression (gzip only; Connect keeps no context across messages).

use std::io::{Read, Write};

use bytes::Bytes;
use flate2::{Compression as Level, read::GzDecoder, write::GzEncoder};

use super::EnvelopeError;

/// The message compression negotiated for one direction of a call.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Compression {
    /// No compression: a frame with the compressed flag is protocol drift.
    #[default]
    Identity,
    /// gzip, per message.
    Gzip,
}

impl Compression {
    /// The `connect-content-encoding` token, or `None` for identity.
    pub const fn header_value(self) -> Option<&'static str> {
        match self {
            Self::Identity => None,
            Self::Gzip => Some("gzip"),
        }
    }

    /// Reads a `connect-content-encoding` value; `None` means an encoding this crate lacks.
    pub fn from_header_value(value: &str) -> Option<Self> {
        match value.trim() {
            "" | "identity" => Some(Self::Identity),
            v if v.eq_ignore_ascii_case("gzip") => Some(Self::Gzip),
            _ => None,
        }
    }
}

/// Gunzips `input`, refusing output larger than `max` without producing it.
pub(crate) fn gunzip(input: &[u8], max: usize) -> Result<Bytes, EnvelopeError> {
    let mut out = Vec::new();
    // Read one byte past the bound so an oversize body is detected, not truncated.
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    GzDecoder::new(input)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|err| EnvelopeError::Decompress(err.to_string()))?;
    if out.len() > max {
        return Err(EnvelopeError::DecompressedTooLarge { max });
    }
    Ok(Bytes::from(out))
}

/// Gzips `input` into a fresh buffer.
pub(crate) fn gzip(input: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(input.len() / 2 + 32), Level::fast());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(input);
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_round_trips() {
        let data = b"abc".repeat(1000);
        assert_eq!(gunzip(&gzip(&data), data.len()).unwrap(), data);
    }

    #[test]
    fn gunzip_refuses_output_past_the_bound() {
        let data = vec![0u8; 10_000];
        assert_eq!(
            gunzip(&gzip(&data), 9_999),
            Err(EnvelopeError::DecompressedTooLarge { max: 9_999 })
        );
    }

    #[test]
    fn gunzip_of_garbage_is_an_error() {
        assert!(matches!(
            gunzip(b"not gzip", 100),
            Err(EnvelopeError::Decompress(_))
        ));
    }

    #[test]
    fn header_values_parse() {
        assert_eq!(
            Compression::from_header_value("gzip"),
            Some(Compression::Gzip)
        );
        assert_eq!(
            Compression::from_header_value("identity"),
            Some(Compression::Identity)
        );
        assert_eq!(Compression::from_header_value("br"), None);
    }
}
