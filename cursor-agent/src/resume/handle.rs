//! The remote handle of one host session, and its JSON file format.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use cursor_proto::ir::Conversation;
use serde::{Deserialize, Serialize};

use super::fingerprint::{Fingerprint, ToolsetKey, parse_hex32};
use crate::{AgentRun, BlobId, ResumePoint};

/// The version of the handle file format this crate writes and reads.
pub const HANDLE_FORMAT_VERSION: u32 = 1;

/// What resuming a remote conversation needs (PROTOCOL-AGENT §10): its id, the last checkpoint
/// exactly as received, the blobs that run held, the fingerprint of the user turns it had
/// completed and the key of the tool set it registered.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handle {
    /// The remote conversation id.
    pub conversation_id: String,
    /// The last `conversation_checkpoint_update`, verbatim.
    pub checkpoint: Vec<u8>,
    /// The run's blobs (root prompt and whatever the server stored), by id.
    pub blobs: Vec<(BlobId, Vec<u8>)>,
    /// The completed user turns the remote conversation holds.
    pub fingerprint: Fingerprint,
    /// The tool set registered with the remote conversation.
    pub toolset_key: ToolsetKey,
    /// A later Run of this conversation ended a leg waiting for tool results that may never have
    /// been sent (the host aborted, or the process died): the backend may still wait for them, and
    /// a Run resuming the conversation would stall (docs/PROTOCOL-AGENT.md §12.5), so the next Run
    /// rebuilds instead.
    pub awaiting_tool_results: bool,
}

impl Handle {
    /// A handle from its parts.
    pub fn new(
        conversation_id: impl Into<String>,
        checkpoint: Vec<u8>,
        blobs: Vec<(BlobId, Vec<u8>)>,
        fingerprint: Fingerprint,
        toolset_key: ToolsetKey,
    ) -> Self {
        Self {
            conversation_id: conversation_id.into(),
            checkpoint,
            blobs,
            fingerprint,
            toolset_key,
            awaiting_tool_results: false,
        }
    }

    /// The handle to store after `run`, opened for `conversation`, received a checkpoint:
    /// `None` until one arrived (a handle without a checkpoint could not resume anything).
    ///
    /// The run's own user turn counts as completed: the server journaled it.
    pub fn capture(run: &AgentRun, conversation: &Conversation) -> Option<Self> {
        Some(Self::from_point(run.resume_point()?, conversation))
    }

    /// The handle for a completed turn's [`ResumePoint`], for `conversation` (the transcript
    /// the turn answered; its user turns all count as completed).
    pub fn from_point(point: ResumePoint, conversation: &Conversation) -> Self {
        Self {
            conversation_id: point.conversation_id,
            checkpoint: point.checkpoint,
            blobs: point.blobs,
            fingerprint: Fingerprint::of_user_turns(&conversation.messages),
            toolset_key: ToolsetKey::of(&conversation.tools),
            awaiting_tool_results: false,
        }
    }

    /// The handle as the JSON a [`HandleStore`](crate::HandleStore) writes.
    pub fn to_json(&self) -> Vec<u8> {
        let file = HandleFile {
            version: HANDLE_FORMAT_VERSION,
            conversation_id: self.conversation_id.clone(),
            checkpoint: STANDARD.encode(&self.checkpoint),
            fingerprint: self.fingerprint.to_hex(),
            toolset_key: self.toolset_key.to_hex(),
            awaiting_tool_results: self.awaiting_tool_results,
            blobs: self
                .blobs
                .iter()
                .map(|(id, data)| BlobEntry {
                    id: id.to_hex(),
                    data: STANDARD.encode(data),
                })
                .collect(),
        };
        // Serializing plain strings and numbers cannot fail.
        serde_json::to_vec(&file).unwrap_or_default()
    }

    /// Parses a handle file; the error says what is wrong with it.
    pub fn from_json(bytes: &[u8]) -> Result<Self, HandleFileError> {
        let file: HandleFile = serde_json::from_slice(bytes).map_err(HandleFileError::Json)?;
        if file.version != HANDLE_FORMAT_VERSION {
            return Err(HandleFileError::Version(file.version));
        }
        if file.conversation_id.is_empty() {
            return Err(HandleFileError::EmptyConversationId);
        }
        let base64 = |what: &'static str, text: &str| {
            STANDARD
                .decode(text)
                .map_err(|source| HandleFileError::Base64 { what, source })
        };
        let mut blobs = Vec::with_capacity(file.blobs.len());
        for entry in &file.blobs {
            let id =
                parse_hex32(&entry.id).ok_or_else(|| HandleFileError::BlobId(entry.id.clone()))?;
            blobs.push((BlobId::from_array(id), base64("blob data", &entry.data)?));
        }
        Ok(Self {
            conversation_id: file.conversation_id,
            checkpoint: base64("checkpoint", &file.checkpoint)?,
            blobs,
            fingerprint: Fingerprint::from_hex(&file.fingerprint)
                .ok_or(HandleFileError::Digest("fingerprint"))?,
            toolset_key: ToolsetKey::from_hex(&file.toolset_key)
                .ok_or(HandleFileError::Digest("tool-set key"))?,
            awaiting_tool_results: file.awaiting_tool_results,
        })
    }
}

impl cursor_proto::ir::Classify for HandleFileError {
    /// A damaged or foreign file on this machine.
    fn kind(&self) -> cursor_proto::ir::ErrorKind {
        cursor_proto::ir::ErrorKind::Local
    }

    fn next_step(&self) -> cursor_proto::ir::NextStep {
        cursor_proto::ir::NextStep::fix_local(
            "nothing is lost: the file is set aside and the conversation rebuilt from the transcript",
        )
    }
}

/// Why a handle file could not be read.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum HandleFileError {
    /// Not JSON of the handle file's shape.
    #[error("not a handle file: {0}")]
    Json(#[source] serde_json::Error),
    /// A format version this crate does not read.
    #[error("unsupported handle format version {0}")]
    Version(u32),
    /// The conversation id is empty.
    #[error("empty conversation id")]
    EmptyConversationId,
    /// A byte field is not base64.
    #[error("{what} is not base64: {source}")]
    Base64 {
        /// Which field.
        what: &'static str,
        /// The decoder's complaint.
        #[source]
        source: base64::DecodeError,
    },
    /// A blob id is not 64 hex digits.
    #[error("blob id {0:?} is not 64 hex digits")]
    BlobId(String),
    /// A digest field is not 64 hex digits.
    #[error("{0} is not 64 hex digits")]
    Digest(&'static str),
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HandleFile {
    version: u32,
    conversation_id: String,
    checkpoint: String,
    fingerprint: String,
    toolset_key: String,
    /// Written only when true, so files without it (every file before it existed) read as
    /// false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    awaiting_tool_results: bool,
    blobs: Vec<BlobEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BlobEntry {
    id: String,
    data: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_proto::ir::Message;

    fn handle() -> Handle {
        Handle::new(
            "conv-1",
            vec![0x0a, 0x01, 0x01],
            vec![(BlobId::of(b"x"), b"x".to_vec())],
            Fingerprint::of_user_turns(&[Message::user_text("hi")]),
            ToolsetKey::of(&[]),
        )
    }

    #[test]
    fn json_round_trips_with_base64_bytes_and_a_version() {
        let handle = handle();
        let json = handle.to_json();
        let text = String::from_utf8(json.clone()).unwrap();
        assert!(text.contains("\"version\":1"), "{text}");
        assert!(text.contains("\"checkpoint\":\"CgEB\""), "{text}");
        assert_eq!(Handle::from_json(&json).unwrap(), handle);
        assert!(!text.contains("awaitingToolResults"), "{text}");
        let waiting = Handle {
            awaiting_tool_results: true,
            ..handle
        };
        let text = String::from_utf8(waiting.to_json()).unwrap();
        assert!(text.contains("\"awaitingToolResults\":true"), "{text}");
        assert_eq!(Handle::from_json(text.as_bytes()).unwrap(), waiting);
    }

    #[test]
    fn damaged_files_are_classified() {
        assert!(
            Handle::from_json(b"{")
                .unwrap_err()
                .to_string()
                .contains("not a handle file")
        );
        let text = String::from_utf8(handle().to_json()).unwrap();
        let future = text.replace("\"version\":1", "\"version\":9");
        assert!(
            Handle::from_json(future.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("version 9")
        );
        let bad = text.replace("\"checkpoint\":\"CgEB\"", "\"checkpoint\":\"***\"");
        assert!(
            Handle::from_json(bad.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("base64")
        );
    }
}
