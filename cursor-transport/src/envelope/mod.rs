//! The Connect envelope: `[flags: u8][length: u32 big-endian][payload]`, sans-IO.
//!
//! Nothing in this module performs I/O or knows about tokio: bytes go in, frames come out.
//! [`Decoder`] accepts bytes in any chunking; [`Encoder`] frames outgoing messages;
//! [`EndStream`] is the typed JSON payload of the final frame of a streaming response.
//!
//! ```
//! use cursor_transport::envelope::{Compression, Decoder, Encoder, Frame};
//!
//! let mut wire = bytes::BytesMut::new();
//! Encoder::new(Compression::Identity).encode(b"hello", &mut wire)?;
//! wire.extend_from_slice(&[0x02, 0, 0, 0, 2, b'{', b'}']);
//!
//! let mut decoder = Decoder::new(Compression::Identity);
//! for byte in wire.iter() {
//!     decoder.push(&[*byte]); // any chunking works
//! }
//! assert_eq!(decoder.next_frame()?, Some(Frame::Message(bytes::Bytes::from_static(b"hello"))));
//! assert!(matches!(decoder.next_frame()?, Some(Frame::End(end)) if end.error.is_none()));
//! decoder.finish()?;
//! # Ok::<(), cursor_transport::envelope::EnvelopeError>(())
//! ```

mod code;
pub(crate) mod compression;
mod decoder;
mod encoder;
mod end_stream;
mod error;

pub use code::Code;
pub use compression::Compression;
pub use decoder::{Decoder, Frame, FrameRef};
pub use encoder::Encoder;
pub use end_stream::{ConnectError, EndStream, ErrorDetail, Metadata};
pub use error::EnvelopeError;

/// Length of the envelope prefix: one flag byte and a four-byte big-endian length.
pub const HEADER_LEN: usize = 5;

/// Default bound on one message, compressed or not: 16 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// Smallest payload the encoder compresses when gzip is negotiated; smaller ones go as-is.
pub const MIN_COMPRESS_SIZE: usize = 1024;

/// Flag bits of the envelope prefix.
pub mod flags {
    /// The payload is compressed with the negotiated `connect-content-encoding`.
    pub const COMPRESSED: u8 = 0x01;
    /// The frame is the end-of-stream frame; its payload is JSON.
    pub const END_STREAM: u8 = 0x02;
    /// Every bit this implementation understands; the others are reserved and refused.
    pub const KNOWN: u8 = COMPRESSED | END_STREAM;
}
