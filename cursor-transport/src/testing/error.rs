//! What can go wrong on the server side of a scripted call.

use crate::envelope::EnvelopeError;

/// A failure seen by the test server while serving one call.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The client's frames were malformed.
    #[error("client sent a malformed stream: {0}")]
    Envelope(#[from] EnvelopeError),
    /// The stream failed: reset by the client (`reason` is its HTTP/2 error code), or the
    /// connection went away.
    #[error("stream failed: {message}")]
    Stream {
        /// What happened.
        message: String,
        /// The HTTP/2 reset code, when the client reset the stream.
        reason: Option<u32>,
    },
    /// The script used the call out of order (for example sending after finishing).
    #[error("misuse of the scripted call: {0}")]
    Misuse(&'static str),
}

impl ServerError {
    pub(crate) fn from_h2(err: h2::Error) -> Self {
        Self::Stream {
            reason: err.reason().map(u32::from),
            message: err.to_string(),
        }
    }

    /// The HTTP/2 reset code the client sent, if this is a reset.
    pub fn reset_reason(&self) -> Option<u32> {
        match self {
            Self::Stream { reason, .. } => *reason,
            _ => None,
        }
    }
}
