//! `InferenceError`: every way a RunInference turn fails, classified for the host.

use std::time::Duration;

use cursor_proto::ir::{ErrorInfo, ErrorKind};
use cursor_transport::CursorError;

/// Next step of every authentication failure.
pub const LOGIN_NEXT_STEP: &str = "run /login cursor";

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
    pub const fn next_step(self) -> &'static str {
        match self {
            Self::InputTokenLimit => {
                "the conversation is longer than the model's context window: compact it or pick a model with a larger window"
            }
            Self::RateLimit => "Cursor is rate limiting this account: wait a minute and retry",
            Self::Permission => {
                "this account may not use this model on the inference channel: pick another model or unset CURSOR_PROVIDER_CHANNEL"
            }
            Self::Overloaded => {
                "the model is overloaded right now: retry in a little while or pick another model"
            }
            Self::ContentFilter => "the provider's content filter refused this turn: rephrase it",
            Self::Other => "the model stream failed; its message says why",
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
    /// The request could not be built from the input.
    #[error("invalid request: {message}")]
    InvalidRequest {
        /// What was wrong.
        message: String,
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

    /// The classification.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Transport(error) => error.kind(),
            Self::StreamAuth { .. } => ErrorKind::Auth,
            Self::Stream { .. } => ErrorKind::RemoteRefusal,
            Self::InvocationEnd { code, .. } => invocation_code_kind(*code),
            Self::ProtocolDrift { .. } => ErrorKind::ProtocolDrift,
            Self::Timeout { .. } => ErrorKind::Network,
            Self::InvalidRequest { .. } => ErrorKind::Local,
        }
    }

    /// What the user should do next.
    pub fn next_step(&self) -> &'static str {
        match self {
            Self::Transport(error) => error.next_step(),
            Self::StreamAuth { .. } => LOGIN_NEXT_STEP,
            Self::Stream { refusal, .. } => refusal.next_step(),
            Self::InvocationEnd { code, .. } => match invocation_code_kind(*code) {
                ErrorKind::Auth => LOGIN_NEXT_STEP,
                ErrorKind::Network => "retry the turn",
                _ => "the server refused the model call; its message says why",
            },
            Self::ProtocolDrift { .. } => {
                "Cursor's inference protocol changed: upgrade the cursor crates, or unset CURSOR_PROVIDER_CHANNEL to use the agent channel"
            }
            Self::Timeout { .. } => "the server went silent: retry the turn",
            Self::InvalidRequest { .. } => "fix the request (model, conversation or tools)",
        }
    }

    /// The host-neutral form.
    pub fn to_info(&self) -> ErrorInfo {
        ErrorInfo::new(self.kind(), self.to_string(), self.next_step())
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
        assert_eq!(end(16).next_step(), LOGIN_NEXT_STEP);
        assert_eq!(end(14).kind(), ErrorKind::Network);
        assert_eq!(end(8).kind(), ErrorKind::RemoteRefusal);
    }

    #[test]
    fn rate_limit_and_overload_give_different_next_steps() {
        assert_ne!(
            StreamRefusal::RateLimit.next_step(),
            StreamRefusal::Overloaded.next_step()
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
