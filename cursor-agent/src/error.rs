//! Classified failures of a Run.

use std::time::Duration;

use cursor_proto::ir::{Classify, ErrorInfo, ErrorKind, NextStep};
use cursor_transport::CursorError;
use cursor_transport::envelope::{Code, EnvelopeError};

/// Why a Run failed, or why the host's request to it was refused.
///
/// Every variant maps to one [`ErrorKind`] and carries a typed next step ([`Classify`]);
/// [`ErrorInfo::from`] turns it into what hosts show.
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
    #[error("no progress from Cursor for {waited:?} ({})", if *first_frame { "waiting for the first frame" } else { "between frames" })]
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
    /// The model kept asking for things that are not host tool calls (loop guard).
    #[error("the model made {misses} requests in a row that were not calls of the host's tools")]
    LoopGuard {
        /// How many unproductive requests the turn made.
        misses: u32,
        /// The model-facing name of the best host tool for commands, if any tool is registered.
        suggested_tool: Option<String>,
    },
    /// The server asked for a blob this client never stored (fail closed, never answered empty).
    #[error("Cursor asked for blob {id_hex}, which this run does not have")]
    BlobMiss {
        /// The blob id as lower-case hex.
        id_hex: String,
    },
    /// What a resumed run relies on is gone on Cursor's side (a blob, or the conversation): the
    /// remote handle is stale and the conversation must be rebuilt from the transcript (see
    /// [`RunConfig::resume`](crate::RunConfig::resume)).
    #[error("resume is stale: {missing}")]
    StaleResume {
        /// What Cursor no longer has.
        missing: RemoteMissing,
    },
    /// Cursor no longer has this conversation's server state (`Conversation data missing`, a
    /// blob it lost, a tool session gone after a restart, an expired checkpoint): the
    /// conversation must be rebuilt from the transcript (PROTOCOL-AGENT §13.3).
    #[error("Cursor lost this conversation's server state: {what}")]
    ServerStateLost {
        /// What the server said.
        what: String,
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
    /// The run configuration is unusable (a timer, a limit, the model slug).
    #[error("invalid run configuration: {0}")]
    Config(String),
    /// The operating system's random source failed (ids cannot be minted).
    #[error("the system random source failed: {0}")]
    RandomSource(String),
    /// A stored checkpoint does not decode or cannot take the resume overlay.
    #[error("the stored checkpoint is unusable: {0}")]
    UnusableCheckpoint(String),
    /// A reply the host produced is larger than a frame may be (the transport's limit).
    #[error("a reply of {len} bytes exceeds the {max}-byte frame limit")]
    ReplyTooLarge {
        /// The encoded reply's size.
        len: usize,
        /// The frame limit.
        max: usize,
    },
    /// The host broke the drain contract (see the crate docs), for example by feeding body
    /// bytes and decoded frames to one Run.
    #[error("the host broke the drain contract: {0}")]
    HostMisuse(&'static str),
    /// This crate broke one of its own rules (a bug: please report it).
    #[error("internal error: {0}")]
    Internal(String),
}

/// What a stale resume found missing on Cursor's side ([`AgentError::StaleResume`]).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RemoteMissing {
    /// Cursor asked for a blob of the resumed conversation that is no longer stored.
    #[error("Cursor asked for blob {id_hex}, which is no longer stored")]
    Blob {
        /// The blob id as lower-case hex.
        id_hex: String,
    },
    /// Cursor answered `not_found` for the conversation itself.
    #[error("Cursor no longer has conversation {conversation_id} ({message})")]
    Conversation {
        /// The remote conversation id the run resumed.
        conversation_id: String,
        /// The server's words.
        message: String,
    },
}

impl AgentError {
    pub(crate) fn drift(what: impl Into<String>) -> Self {
        Self::ProtocolDrift { what: what.into() }
    }

    /// True when the failure means a resumed conversation must be rebuilt instead.
    pub fn is_stale_resume(&self) -> bool {
        matches!(self, Self::StaleResume { .. })
    }

    /// True when Cursor lost the conversation's server state, resumed or rebuilt: it must be
    /// rebuilt from the transcript.
    pub fn is_server_state_lost(&self) -> bool {
        matches!(self, Self::ServerStateLost { .. })
    }
}

impl Classify for AgentError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::ProtocolDrift { .. } | Self::BlobMiss { .. } => ErrorKind::ProtocolDrift,
            Self::Idle { .. } | Self::StreamEndedEarly => ErrorKind::Network,
            Self::Remote(info) => info.kind,
            // The backend's model refused to use the only tools this client allows.
            Self::LoopGuard { .. } | Self::ServerStateLost { .. } => ErrorKind::RemoteRefusal,
            Self::StaleResume { .. }
            | Self::BlobTooLarge { .. }
            | Self::BlobStoreFull { .. }
            | Self::UnsupportedImage { .. }
            | Self::ImageTooLarge { .. }
            | Self::NoUserTurn
            | Self::NotAwaitingTools
            | Self::UnknownToolResult { .. }
            | Self::Config(_)
            | Self::RandomSource(_)
            | Self::UnusableCheckpoint(_)
            | Self::ReplyTooLarge { .. }
            | Self::HostMisuse(_)
            | Self::Internal(_) => ErrorKind::Local,
        }
    }

    fn next_step(&self) -> NextStep {
        match self {
            Self::ProtocolDrift { .. } | Self::BlobMiss { .. } => NextStep::UpdateCrates,
            Self::Idle { .. } | Self::StreamEndedEarly => NextStep::Retry,
            Self::Remote(info) => info.next_step.clone(),
            Self::LoopGuard {
                suggested_tool: Some(tool),
                ..
            } => NextStep::UseTool { tool: tool.clone() },
            Self::LoopGuard {
                suggested_tool: None,
                ..
            } => NextStep::RegisterTool,
            Self::StaleResume { .. } => {
                NextStep::host_bug("rebuild the conversation from the transcript")
            }
            // A new turn plans from no handle, so it rebuilds from the transcript.
            Self::ServerStateLost { .. } => NextStep::Retry,
            Self::BlobTooLarge { .. } | Self::BlobStoreFull { .. } => NextStep::StartNewSession,
            Self::UnsupportedImage { .. } => {
                NextStep::fix_input("attach the image as png, jpeg, gif, webp or bmp")
            }
            Self::ImageTooLarge { max, .. } => NextStep::fix_input(format!(
                "attach a smaller image (at most {})",
                human_bytes(*max)
            )),
            Self::NoUserTurn => NextStep::SendUserMessage,
            Self::NotAwaitingTools | Self::UnknownToolResult { .. } => {
                NextStep::host_bug("submit results only for the tool calls of the last leg")
            }
            Self::Config(_) => {
                NextStep::fix_config("fix the run configuration named in the message")
            }
            Self::RandomSource(_) => {
                NextStep::fix_local("check the operating system's random source (getrandom)")
            }
            Self::UnusableCheckpoint(_) => NextStep::StartNewSession,
            Self::ReplyTooLarge { .. } => NextStep::fix_input(
                "return less from the tool (or lower Limits::max_tool_result_bytes)",
            ),
            Self::HostMisuse(_) => NextStep::host_bug(
                "feed a Run either body bytes (after the response head) or decoded frames, never both",
            ),
            Self::Internal(_) => NextStep::host_bug("report this bug to the cursor-agent crate"),
        }
    }

    fn connect_code(&self) -> Option<&str> {
        match self {
            Self::Remote(info) => info.code.as_deref(),
            _ => None,
        }
    }

    fn http_status(&self) -> Option<u16> {
        match self {
            Self::Remote(info) => info.http_status,
            _ => None,
        }
    }

    fn to_info(&self) -> ErrorInfo {
        if let Self::Remote(info) = self {
            return info.clone();
        }
        ErrorInfo::new(self.kind(), self.to_string(), self.next_step())
    }
}

/// `bytes` as a short human size (`16 MiB`, `512 KiB`, `700 bytes`).
pub(crate) fn human_bytes(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

impl From<AgentError> for ErrorInfo {
    fn from(error: AgentError) -> Self {
        error.to_info()
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

/// True when the server's words say it lost the conversation's state (PROTOCOL-AGENT §13.3).
pub(crate) fn says_state_lost(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [
        "conversation data missing",
        "blob not found",
        "tool session not found",
        // An image under a new id poisons the conversation (§13.5).
        "image not found",
    ]
    .iter()
    .any(|cue| message.contains(cue))
}

/// How the transport's failure ends the stream for the run.
pub(crate) fn outcome_of(error: &CursorError) -> StreamOutcome {
    if let CursorError::Envelope(EnvelopeError::MessageTooLarge { len, max }) = error {
        let too_large = AgentError::ReplyTooLarge {
            len: *len,
            max: *max,
        };
        return StreamOutcome::Err(too_large.to_info());
    }
    match error.code() {
        Some(Code::NotFound) => StreamOutcome::NotFound(error.to_info()),
        _ => StreamOutcome::Err(error.to_info()),
    }
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
        let remote = ErrorInfo::new(ErrorKind::Auth, "token expired", NextStep::Login)
            .with_wire(Some("unauthenticated"), Some(401));
        let error = AgentError::Remote(remote.clone());
        assert_eq!(error.http_status(), Some(401));
        assert_eq!(error.connect_code(), Some("unauthenticated"));
        assert_eq!(ErrorInfo::from(error), remote);
    }

    #[test]
    fn loop_guard_names_the_suggested_tool() {
        let error = AgentError::LoopGuard {
            misses: 8,
            suggested_tool: Some("mcp_pi_bash".into()),
        };
        assert_eq!(error.kind(), ErrorKind::RemoteRefusal);
        assert_eq!(
            error.next_step(),
            NextStep::UseTool {
                tool: "mcp_pi_bash".into()
            }
        );
    }

    #[test]
    fn stale_resume_is_distinguishable_from_a_miss() {
        for missing in [
            RemoteMissing::Blob {
                id_hex: "ab".into(),
            },
            RemoteMissing::Conversation {
                conversation_id: "c-1".into(),
                message: "gone".into(),
            },
        ] {
            let stale = AgentError::StaleResume { missing };
            assert!(stale.is_stale_resume());
            assert_eq!(stale.kind(), ErrorKind::Local);
            assert!(matches!(stale.next_step(), NextStep::HostBug { .. }));
        }
        assert!(
            !AgentError::BlobMiss {
                id_hex: "ab".into()
            }
            .is_stale_resume()
        );
    }
}
