//! `InferenceError`: every way a RunInference turn fails, classified for the host.

use std::time::Duration;

use cursor_proto::ir::{Classify, ErrorInfo, ErrorKind, NextStep};
use cursor_transport::CursorError;

/// Why the model stream refused a request, from `InferenceStreamError.error_type` or the
/// token-limit flags beside it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamRefusal {
    /// The prompt does not fit the model's context window.
    InputTokenLimit,
    /// Rate limited for this account.
    RateLimit,
    /// The account may not use this model or RPC.
    Permission,
    /// The model provider is out of capacity.
    Overloaded,
    /// The provider's content filter refused the prompt or the answer.
    ContentFilter,
    /// Unspecified or unknown: the message says why.
    Other,
}

impl StreamRefusal {
    /// What the user should do about it.
    pub fn next_step(self) -> NextStep {
        match self {
            // The same step as the agent channel's context overflow (PROTOCOL-AGENT §13.2), so a
            // host compacts and retries whichever channel refused.
            Self::InputTokenLimit => NextStep::CompactConversation,
            Self::RateLimit | Self::Overloaded => NextStep::WaitAndRetry,
            Self::Permission => NextStep::SwitchModel,
            Self::ContentFilter => {
                NextStep::fix_input("the provider's content filter refused this turn: rephrase it")
            }
            Self::Other => NextStep::ReadServerMessage,
        }
    }
}

/// What went wrong on a RunInference turn.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum InferenceError {
    /// The transport failed, or the server ended the call with a Connect error (a 401 lands
    /// here as [`ErrorKind::Auth`]).
    #[error(transparent)]
    Transport(#[from] CursorError),
    /// The stream reported a model error of an authentication type.
    #[error("the model stream refused the credentials: {message}")]
    StreamAuth {
        /// The server's message.
        message: String,
    },
    /// The stream reported a model error the user can act on.
    #[error("the model stream failed ({refusal:?}): {message}")]
    Stream {
        /// The classified reason.
        refusal: StreamRefusal,
        /// The server's message.
        message: String,
    },
    /// `invocation_end` carried an error.
    #[error("the invocation ended with error code {code}: {message}")]
    InvocationEnd {
        /// The error code as sent (gRPC numbering).
        code: i32,
        /// The server's message.
        message: String,
    },
    /// The server sent something this version does not understand.
    #[error("protocol drift: {message}")]
    ProtocolDrift {
        /// What was unexpected.
        message: String,
    },
    /// A watchdog fired: the server stayed silent too long.
    #[error("no {waiting_for} within {}s", limit.as_secs())]
    Timeout {
        /// What never came (`run_ready`, the first token, the next frame).
        waiting_for: &'static str,
        /// The limit that passed.
        limit: Duration,
    },
    /// A setting is unusable (a zero or absurd timeout).
    #[error("invalid inference configuration: {message}")]
    Config {
        /// What was wrong.
        message: String,
    },
    /// The request could not be built from the input.
    #[error("invalid request: {message}")]
    InvalidRequest {
        /// What was wrong.
        message: String,
    },
    /// An image of the conversation has a format the backend does not take, or bytes that
    /// are not the format its MIME type declares. Nothing was sent.
    #[error("image type {mime} is not supported{}", if *mismatch { " (its bytes are of another format)" } else { " (png, jpeg, gif, webp or bmp)" })]
    UnsupportedImage {
        /// The declared MIME type.
        mime: String,
        /// Whether the type is supported but the bytes are not of it.
        mismatch: bool,
    },
    /// The conversation's images are more than one model call carries. Nothing was sent.
    #[error(
        "the conversation's images take {len} bytes, over the {max}-byte cap of one model call"
    )]
    ImagesTooLarge {
        /// Their bytes (raw, before base64).
        len: usize,
        /// The cap ([`MAX_IMAGE_BYTES`](crate::request::MAX_IMAGE_BYTES)).
        max: usize,
    },
}

impl InferenceError {
    pub(crate) fn drift(message: impl Into<String>) -> Self {
        Self::ProtocolDrift {
            message: message.into(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidRequest {
            message: message.into(),
        }
    }
}

impl Classify for InferenceError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Transport(error) => error.kind(),
            Self::StreamAuth { .. } => ErrorKind::Auth,
            Self::Stream { .. } => ErrorKind::RemoteRefusal,
            Self::InvocationEnd { code, .. } => invocation_code_kind(*code),
            Self::ProtocolDrift { .. } => ErrorKind::ProtocolDrift,
            Self::Timeout { .. } => ErrorKind::Network,
            Self::InvalidRequest { .. }
            | Self::Config { .. }
            | Self::UnsupportedImage { .. }
            | Self::ImagesTooLarge { .. } => ErrorKind::Local,
        }
    }

    fn next_step(&self) -> NextStep {
        match self {
            Self::Transport(error) => error.next_step(),
            Self::StreamAuth { .. } => NextStep::Login,
            Self::Stream { refusal, .. } => refusal.next_step(),
            Self::InvocationEnd { code, .. } => match invocation_code_kind(*code) {
                ErrorKind::Auth => NextStep::Login,
                ErrorKind::Network => NextStep::Retry,
                _ => NextStep::ReadServerMessage,
            },
            Self::ProtocolDrift { .. } => NextStep::UpdateCrates,
            Self::Timeout { .. } => NextStep::Retry,
            Self::InvalidRequest { .. } => {
                NextStep::fix_input("fix the request (model, conversation or tools)")
            }
            Self::Config { .. } => NextStep::fix_config("fix the timeout named in the message"),
            Self::UnsupportedImage { .. } => {
                NextStep::fix_input("attach the image as png, jpeg, gif, webp or bmp")
            }
            Self::ImagesTooLarge { max, .. } => NextStep::fix_input(format!(
                "attach fewer or smaller images (at most {} MiB in all)",
                max >> 20
            )),
        }
    }

    fn connect_code(&self) -> Option<&str> {
        match self {
            Self::Transport(error) => error.connect_code(),
            _ => None,
        }
    }

    fn http_status(&self) -> Option<u16> {
        match self {
            Self::Transport(error) => error.http_status(),
            _ => None,
        }
    }
}

impl From<InferenceError> for ErrorInfo {
    fn from(error: InferenceError) -> Self {
        error.to_info()
    }
}

/// The kind for an `invocation_end` error code (gRPC numbering, as Connect uses).
fn invocation_code_kind(code: i32) -> ErrorKind {
    match code {
        16 => ErrorKind::Auth,
        4 | 14 => ErrorKind::Network,
        _ => ErrorKind::RemoteRefusal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invocation_end_codes_are_classified_by_who_can_fix_them() {
        let end = |code| InferenceError::InvocationEnd {
            code,
            message: "m".into(),
        };
        assert_eq!(end(16).kind(), ErrorKind::Auth);
        assert_eq!(end(16).next_step(), NextStep::Login);
        assert_eq!(end(14).kind(), ErrorKind::Network);
        assert_eq!(end(8).kind(), ErrorKind::RemoteRefusal);
    }

    #[test]
    fn refusals_map_to_typed_next_steps() {
        assert_eq!(StreamRefusal::RateLimit.next_step(), NextStep::WaitAndRetry);
        assert_eq!(StreamRefusal::Permission.next_step(), NextStep::SwitchModel);
        assert_eq!(
            StreamRefusal::InputTokenLimit.next_step(),
            NextStep::CompactConversation
        );
    }

    #[test]
    fn a_timeout_names_what_it_waited_for() {
        let error = InferenceError::Timeout {
            waiting_for: "run_ready",
            limit: Duration::from_secs(65),
        };
        assert_eq!(error.to_string(), "no run_ready within 65s");
        assert_eq!(error.to_info().kind, ErrorKind::Network);
    }
}
