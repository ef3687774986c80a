//! Envelope encoding.

use bytes::{BufMut, Bytes, BytesMut};

use super::{
    Compression, DEFAULT_MAX_MESSAGE_SIZE, EndStream, EnvelopeError, HEADER_LEN, MIN_COMPRESS_SIZE,
    compression, flags,
};

/// Frames outgoing messages.
///
/// With [`Compression::Gzip`] a payload of at least [`MIN_COMPRESS_SIZE`] bytes is gzipped
/// and flagged; smaller ones are sent plain (Cursor's RunInference rule). With
/// [`Compression::Identity`] nothing is ever compressed (AgentService/Run must stay plain).
#[derive(Clone, Copy, Debug)]
pub struct Encoder {
    compression: Compression,
    max_message_size: usize,
}

impl Encoder {
    /// An encoder for a call that negotiated `compression`, with the default 16 MiB bound.
    pub fn new(compression: Compression) -> Self {
        Self {
            compression,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
        }
    }

    /// Sets the bound on one outgoing message.
    #[must_use]
    pub fn with_max_message_size(mut self, max: usize) -> Self {
        self.max_message_size = max;
        self
    }

    /// The compression this encoder applies.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Appends one message frame for `payload` to `dst`.
    pub fn encode(&self, payload: &[u8], dst: &mut BytesMut) -> Result<(), EnvelopeError> {
        self.check_len(payload.len())?;
        if self.compression == Compression::Gzip && payload.len() >= MIN_COMPRESS_SIZE {
            let packed = compression::gzip(payload);
            put_frame(dst, flags::COMPRESSED, &packed);
        } else {
            put_frame(dst, 0, payload);
        }
        Ok(())
    }

    /// One message frame for `payload`, as its own buffer.
    pub fn encode_to_bytes(&self, payload: &[u8]) -> Result<Bytes, EnvelopeError> {
        let mut dst = BytesMut::with_capacity(HEADER_LEN + payload.len());
        self.encode(payload, &mut dst)?;
        Ok(dst.freeze())
    }

    /// Appends an end-of-stream frame (server side only: clients never send one).
    pub fn encode_end_stream(
        &self,
        end: &EndStream,
        dst: &mut BytesMut,
    ) -> Result<(), EnvelopeError> {
        let json = end.to_json();
        self.check_len(json.len())?;
        put_frame(dst, flags::END_STREAM, json.as_bytes());
        Ok(())
    }

    fn check_len(&self, len: usize) -> Result<(), EnvelopeError> {
        if len > self.max_message_size || u32::try_from(len).is_err() {
            return Err(EnvelopeError::MessageTooLarge {
                len,
                max: self.max_message_size,
            });
        }
        Ok(())
    }
}

fn put_frame(dst: &mut BytesMut, flag_byte: u8, payload: &[u8]) {
    dst.reserve(HEADER_LEN + payload.len());
    dst.put_u8(flag_byte);
    // check_len guarantees the length fits in u32.
    dst.put_u32(u32::try_from(payload.len()).unwrap_or(u32::MAX));
    dst.put_slice(payload);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_never_compresses_even_large_payloads() {
        let bytes = Encoder::new(Compression::Identity)
            .encode_to_bytes(&[0u8; 100_000])
            .unwrap();
        assert_eq!(bytes[0], 0);
        assert_eq!(bytes.len(), HEADER_LEN + 100_000);
    }

    #[test]
    fn gzip_leaves_payloads_under_1024_bytes_plain() {
        let bytes = Encoder::new(Compression::Gzip)
            .encode_to_bytes(&[0u8; 1023])
            .unwrap();
        assert_eq!(bytes[0], 0);
        assert_eq!(bytes.len(), HEADER_LEN + 1023);
    }

    #[test]
    fn gzip_compresses_payloads_of_1024_bytes_and_more() {
        let bytes = Encoder::new(Compression::Gzip)
            .encode_to_bytes(&[0u8; 1024])
            .unwrap();
        assert_eq!(bytes[0], flags::COMPRESSED);
        assert!(bytes.len() < HEADER_LEN + 1024);
    }

    #[test]
    fn oversize_messages_are_refused() {
        let encoder = Encoder::new(Compression::Identity).with_max_message_size(4);
        assert_eq!(
            encoder.encode_to_bytes(b"12345"),
            Err(EnvelopeError::MessageTooLarge { len: 5, max: 4 })
        );
    }

    #[test]
    fn header_is_flag_then_big_endian_length() {
        let bytes = Encoder::new(Compression::Identity)
            .encode_to_bytes(&[1u8; 258])
            .unwrap();
        assert_eq!(&bytes[..5], &[0, 0, 0, 1, 2]);
    }
}
