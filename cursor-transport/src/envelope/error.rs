//! Why a byte stream is not a valid sequence of Connect envelopes.

/// A malformed or refused envelope stream. Every variant is protocol drift to callers.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// A frame declared a payload longer than the configured maximum (checked before allocating).
    #[error("frame declares {declared} bytes, more than the {max}-byte limit")]
    FrameTooLarge {
        /// The length the frame header declared.
        declared: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The stream ended inside a frame.
    #[error("stream ended inside a frame ({buffered} bytes of a {expected}-byte frame)")]
    TruncatedFrame {
        /// Bytes received of the partial frame, header included.
        buffered: usize,
        /// Bytes the frame needed, header included (5 while the header itself is partial).
        expected: usize,
    },
    /// A frame carried the compressed flag although the call negotiated no compression.
    #[error("compressed frame on a call that negotiated no compression")]
    UnexpectedCompression,
    /// A frame set flag bits that Connect reserves.
    #[error("frame sets reserved flag bits {0:#04x}")]
    ReservedFlags(u8),
    /// A compressed payload failed to decompress.
    #[error("compressed frame does not decompress: {0}")]
    Decompress(String),
    /// A compressed payload inflates past the configured maximum.
    #[error("compressed frame inflates past the {max}-byte limit")]
    DecompressedTooLarge {
        /// The configured maximum.
        max: usize,
    },
    /// Bytes followed the end-of-stream frame.
    #[error("data after the end-of-stream frame")]
    DataAfterEndStream,
    /// The end-of-stream payload is not the JSON Connect defines.
    #[error("end-of-stream payload is not valid Connect JSON: {0}")]
    EndStreamJson(String),
    /// An outgoing message is larger than the configured maximum.
    #[error("message of {len} bytes exceeds the {max}-byte limit")]
    MessageTooLarge {
        /// The message length.
        len: usize,
        /// The configured maximum.
        max: usize,
    },
}
