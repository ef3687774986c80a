//! Classified failures of a Run.

use std::time::Duration;

use cursor_proto::ir::{ErrorInfo, ErrorKind};

/// Why a Run failed, or why the host's request to it was refused.
///
/// Every variant maps to one [`ErrorKind`] ([`AgentError::kind`]) and carries a concrete next
/// step ([`AgentError::next_step`]); [`ErrorInfo::from`] turns it into what hosts show.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The server sent a frame this version does not understand (fail closed).
    #[error("protocol drift: {what}")]
    ProtocolDrift {
        /// What was unexpected.
        what: String,
    },
    /// No work frame arrived in time (heartbeats do not count as work).
    #[error("no progress from Cursor for {}s ({})", waited.as_secs(), if *first_frame { "waiting for the first frame" } else { "between frames" })]
    Idle {
        /// The timeout that expired.
        waited: Duration,
        /// True when not even the first work frame of the leg arrived.
        first_frame: bool,
    },
    /// The stream ended without `turn_ended`.
    #[error("the Cursor stream ended before the turn did")]
    StreamEndedEarly,
    /// The stream ended with a classified error (Connect end-stream error or transport failure).
    #[error("{0}")]
    Remote(ErrorInfo),
    /// The model kept asking for things that are not pi tool calls (loop guard).
    #[error("the model made {misses} requests in a row that were not pi tool calls")]
    LoopGuard {
        /// How many unproductive requests the turn made.
        misses: u32,
        /// The model-facing name of the best pi tool for commands, if any tool is registered.
        suggested_tool: Option<String>,
    },
    /// The server asked for a blob this client never stored (fail closed, never answered empty).
    #[error("Cursor asked for blob {id_hex}, which this run does not have")]
    BlobMiss {
        /// The blob id as lower-case hex.
        id_hex: String,
    },
    /// A resumed run's blob is gone: the remote handle is stale and the conversation must be
    /// rebuilt from the transcript (see [`RunConfig::resume`](crate::RunConfig::resume)).
    #[error("resume is stale: Cursor asked for blob {id_hex}, which is no longer stored")]
    StaleResume {
        /// The blob id as lower-case hex.
        id_hex: String,
    },
    /// A blob is larger than the per-blob cap.
    #[error("blob of {len} bytes exceeds the {max}-byte cap")]
    BlobTooLarge {
        /// The blob's size.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// The blob store is full (there is no eviction: Cursor may still reference old blobs).
    #[error("blob store full: {needed} more bytes do not fit in {capacity}")]
    BlobStoreFull {
        /// The bytes that did not fit.
        needed: usize,
        /// The store's capacity.
        capacity: usize,
    },
    /// An image of the current user turn has a format Cursor does not accept.
    #[error("image type {mime} is not supported (png, jpeg, gif, webp or bmp)")]
    UnsupportedImage {
        /// The declared MIME type.
        mime: String,
    },
    /// An image of the current user turn is too large.
    #[error("image of {len} bytes exceeds the {max}-byte cap")]
    ImageTooLarge {
        /// The image's size.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// The conversation does not end with a user message, so there is no turn to ask.
    #[error("the conversation does not end with a user message")]
    NoUserTurn,
    /// The host submitted tool results while the run was not waiting for any.
    #[error("the run is not waiting for tool results")]
    NotAwaitingTools,
    /// The host submitted a result for a tool call this run never issued.
    #[error("no pending tool call has id {tool_call_id}")]
    UnknownToolResult {
        /// The id the host quoted.
        tool_call_id: String,
    },
    /// The run configuration is unusable.
    #[error("invalid run configuration: {0}")]
    Config(String),
}

impl AgentError {
    pub(crate) fn drift(what: impl Into<String>) -> Self {
        Self::ProtocolDrift { what: what.into() }
    }

    /// The classification hosts act on.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::ProtocolDrift { .. } | Self::BlobMiss { .. } => ErrorKind::ProtocolDrift,
            Self::Idle { .. } | Self::StreamEndedEarly => ErrorKind::Network,
            Self::Remote(info) => info.kind,
            // The backend's model refused to use the only tools this client allows.
            Self::LoopGuard { .. } => ErrorKind::RemoteRefusal,
            Self::StaleResume { .. }
            | Self::BlobTooLarge { .. }
            | Self::BlobStoreFull { .. }
            | Self::UnsupportedImage { .. }
            | Self::ImageTooLarge { .. }
            | Self::NoUserTurn
            | Self::NotAwaitingTools
            | Self::UnknownToolResult { .. }
            | Self::Config(_) => ErrorKind::Local,
        }
    }

    /// What the user (or the host) should do next.
    pub fn next_step(&self) -> String {
        match self {
            Self::ProtocolDrift { .. } | Self::BlobMiss { .. } => {
                "update the cursor crates; if it persists, report the frame with debug logs".into()
            }
            Self::Idle { .. } | Self::StreamEndedEarly => {
                "retry the message; if it keeps failing, check the network".into()
            }
            Self::Remote(info) => info.next_step.clone(),
            Self::LoopGuard {
                suggested_tool: Some(tool),
                ..
            } => format!(
                "ask again and tell the model to use the pi tool `{tool}` (Cursor native tools are disabled)"
            ),
            Self::LoopGuard {
                suggested_tool: None,
                ..
            } => "register a pi tool the model can use (for example bash), then ask again".into(),
            Self::StaleResume { .. } => "rebuild the conversation from the transcript".into(),
            Self::BlobTooLarge { .. } | Self::BlobStoreFull { .. } => {
                "start a new session or compact the conversation".into()
            }
            Self::UnsupportedImage { .. } => {
                "attach the image as png, jpeg, gif, webp or bmp".into()
            }
            Self::ImageTooLarge { .. } => "attach a smaller image (at most 16 MiB)".into(),
            Self::NoUserTurn => "send a user message".into(),
            Self::NotAwaitingTools | Self::UnknownToolResult { .. } => {
                "this is a host bug: submit results only for the tool calls of the last leg".into()
            }
            Self::Config(_) => "fix the provider configuration".into(),
        }
    }

    /// True when the failure means a resumed conversation must be rebuilt instead.
    pub fn is_stale_resume(&self) -> bool {
        matches!(self, Self::StaleResume { .. })
    }
}

impl From<AgentError> for ErrorInfo {
    fn from(error: AgentError) -> Self {
        if let AgentError::Remote(info) = error {
            return info;
        }
        Self::new(error.kind(), error.to_string(), error.next_step())
    }
}

impl From<prost::DecodeError> for AgentError {
    fn from(error: prost::DecodeError) -> Self {
        Self::drift(format!("undecodable server frame: {error}"))
    }
}

/// How the server side of the Run stream ended, as the transport saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamOutcome {
    /// The stream ended cleanly (Connect end-stream without an error).
    Ok,
    /// The stream ended with a classified error (Connect error, HTTP status, transport failure).
    Err(ErrorInfo),
    /// The server answered Connect `not_found`: the remote conversation is gone. On a resumed
    /// Run this is a stale resume ([`AgentError::StaleResume`]); otherwise like [`Self::Err`].
    NotFound(ErrorInfo),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_converts_to_info_with_its_kind_and_next_step() {
        let idle = AgentError::Idle {
            waited: Duration::from_secs(120),
            first_frame: false,
        };
        let info = ErrorInfo::from(idle.clone());
        assert_eq!(info.kind, ErrorKind::Network);
        assert_eq!(info.message, idle.to_string());
        assert!(info.message.contains("120s"));
        assert_eq!(info.next_step, idle.next_step());
    }

    #[test]
    fn remote_errors_pass_through_unchanged() {
        let remote = ErrorInfo::new(ErrorKind::Auth, "token expired", "run /login cursor");
        assert_eq!(ErrorInfo::from(AgentError::Remote(remote.clone())), remote);
    }

    #[test]
    fn loop_guard_names_the_suggested_tool() {
        let error = AgentError::LoopGuard {
            misses: 8,
            suggested_tool: Some("mcp_pi_bash".into()),
        };
        assert_eq!(error.kind(), ErrorKind::RemoteRefusal);
        assert!(error.next_step().contains("`mcp_pi_bash`"));
    }

    #[test]
    fn stale_resume_is_distinguishable_from_a_miss() {
        assert!(
            AgentError::StaleResume {
                id_hex: "ab".into()
            }
            .is_stale_resume()
        );
        assert!(
            !AgentError::BlobMiss {
                id_hex: "ab".into()
            }
            .is_stale_resume()
        );
    }
}
