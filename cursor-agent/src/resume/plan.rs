//! Planning a Run from a stored handle: resume the remote conversation, or rebuild it from the
//! transcript (PROTOCOL-AGENT §0, §10; DESIGN §3.1, §5). Sans-IO: the caller loads and saves handles.

use std::time::Instant;

use cursor_proto::agent::v1::ConversationStateStructure;
use cursor_proto::ir::Conversation;
use prost::Message as _;
use sha2::{Digest, Sha256};

use super::fingerprint::{Fingerprint, ToolsetKey};
use super::handle::Handle;
use crate::request::ResumeSeed;
use crate::root_prompt::history_of;
use crate::{AgentError, AgentRun, BlobStore, IdSeed, RunConfig};

/// How a Run continues the conversation; debug records carry it as [`RunLabel::as_str`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunLabel {
    /// Same remote conversation, checkpoint overlaid, no history replay.
    Resume,
    /// A new remote conversation with the full transcript as its root prompt.
    Rebuild,
}

impl RunLabel {
    /// `agent-resume` or `agent-rebuild`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Resume => "agent-resume",
            Self::Rebuild => "agent-rebuild",
        }
    }
}

/// Why a stored handle could not be resumed.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StaleReason {
    /// The completed user turns changed (edited text, rewind, swapped image).
    FingerprintMismatch,
    /// The checkpoint cannot be used as conversation state.
    UnusableCheckpoint(String),
    /// The handle's blobs do not fit the run's blob store.
    UnusableBlobs(String),
    /// A resumed Run found the remote side gone (blob miss or `not_found`), or a Run found
    /// its server state lost (PROTOCOL-AGENT §13.3).
    RemoteStale(String),
    /// A tool round of the remote conversation was abandoned while the backend waited for its
    /// results ([`Handle::awaiting_tool_results`]); resuming it would stall.
    AbandonedToolRound,
}

/// A planned Run: resume or rebuild, with everything needed to open it.
#[derive(Debug)]
pub struct Plan {
    label: RunLabel,
    config: RunConfig,
    blobs: BlobStore,
    seed: Option<ResumeSeed>,
    stale: Option<StaleReason>,
    reset: bool,
}

impl Plan {
    /// Resume or rebuild.
    pub fn label(&self) -> RunLabel {
        self.label
    }

    /// Why the stored handle was not resumed (`None` for a resume, or a first run).
    pub fn stale_reason(&self) -> Option<&StaleReason> {
        self.stale.as_ref()
    }

    /// True when the stored handle must be removed before the Run opens.
    pub fn drops_handle(&self) -> bool {
        self.stale.is_some()
    }

    /// True when the run request carries `mcp_tools` (always on a rebuild; on a resume only
    /// when the tool set changed or re-sending was forced).
    pub fn sends_mcp_tools(&self) -> bool {
        self.seed.as_ref().is_none_or(|seed| seed.send_mcp_tools)
    }

    /// True when the Run first emits [`Event::Reset`](cursor_proto::ir::Event::Reset): what an
    /// earlier attempt streamed in this turn is void.
    pub fn emits_reset(&self) -> bool {
        self.reset
    }

    /// The configuration the Run opens with (conversation id and resume flag set).
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// A redacted one-line debug record (no tokens, no content): the label, the stale reason,
    /// whether `mcp_tools` is sent and how many blobs were loaded.
    pub fn debug_record(&self) -> String {
        let stale = match &self.stale {
            None => "none",
            Some(StaleReason::FingerprintMismatch) => "fingerprint",
            Some(StaleReason::UnusableCheckpoint(_)) => "checkpoint",
            Some(StaleReason::UnusableBlobs(_)) => "blobs",
            Some(StaleReason::RemoteStale(_)) => "remote",
            Some(StaleReason::AbandonedToolRound) => "abandonedToolRound",
        };
        format!(
            "{{\"run\":\"{}\",\"stale\":\"{stale}\",\"mcpTools\":{},\"resumedBlobs\":{},\"reset\":{}}}",
            self.label.as_str(),
            self.sends_mcp_tools(),
            if self.seed.is_some() {
                self.blobs.len()
            } else {
                0
            },
            self.reset
        )
    }

    /// How many stored blobs a resume loads (0 on a rebuild).
    #[cfg(feature = "driver")]
    pub(crate) fn resumed_blobs(&self) -> usize {
        if self.seed.is_some() {
            self.blobs.len()
        } else {
            0
        }
    }

    /// Opens the planned Run for `conversation` (which must end with the user turn to ask).
    pub fn open(self, conversation: &Conversation, now: Instant) -> Result<AgentRun, AgentError> {
        AgentRun::open(
            self.config,
            conversation,
            self.blobs,
            self.seed.as_ref(),
            self.reset,
            now,
        )
    }
}

/// Plans the Runs of one host session across turns and processes: resume while the stored
/// handle matches, rebuild when it is stale, and recover from a stale resume exactly once.
///
/// ```
/// use cursor_agent::{RunConfig, RunLabel, ResumePlanner};
/// use cursor_agent::ir::{Conversation, Message};
///
/// let conversation = Conversation::new("").with_message(Message::user_text("hi"));
/// let mut session = ResumePlanner::new(RunConfig::new("composer-2.5", "file:///work", cursor_agent::IdSeed::fixed([1; 16])));
/// // No handle stored yet: the first turn is a rebuild with the full transcript.
/// let plan = session.plan(None, &conversation);
/// assert_eq!(plan.label(), RunLabel::Rebuild);
/// assert!(!plan.drops_handle());
/// ```
#[derive(Clone, Debug)]
pub struct ResumePlanner {
    config: RunConfig,
    resend_mcp_on_resume: bool,
    current: Option<RunLabel>,
    previous_id: Option<String>,
}

impl ResumePlanner {
    /// A session whose Runs use `config` (its `conversation_id` and `resume` are set per plan).
    pub fn new(config: RunConfig) -> Self {
        Self {
            config,
            resend_mcp_on_resume: false,
            current: None,
            previous_id: None,
        }
    }

    /// Always re-send `mcp_tools` on resume, even when the tool set is unchanged.
    #[must_use]
    pub fn with_resend_mcp_on_resume(mut self, resend: bool) -> Self {
        self.resend_mcp_on_resume = resend;
        self
    }

    /// Plans the Run for `conversation`'s trailing user turn from the stored `handle`.
    ///
    /// A transcript that ends with tool results (the turn already ran tools, in a process that
    /// is gone) is always rebuilt: a resume replays no history, so the results would be lost.
    pub fn plan(&mut self, handle: Option<Handle>, conversation: &Conversation) -> Plan {
        let continues = matches!(
            crate::request::Turn::of(conversation),
            Ok(crate::request::Turn::Continue)
        );
        let Some(handle) = handle.filter(|_| !continues) else {
            return self.rebuild(None, false);
        };
        if handle.awaiting_tool_results {
            return self.rebuild(
                Some((StaleReason::AbandonedToolRound, handle.conversation_id)),
                false,
            );
        }
        let completed = Fingerprint::of_user_turns(history_of(&conversation.messages));
        if completed != handle.fingerprint {
            return self.rebuild(
                Some((StaleReason::FingerprintMismatch, handle.conversation_id)),
                false,
            );
        }
        if let Err(e) = ConversationStateStructure::decode(handle.checkpoint.as_slice()) {
            let reason = StaleReason::UnusableCheckpoint(e.to_string());
            return self.rebuild(Some((reason, handle.conversation_id)), false);
        }
        let mut blobs = BlobStore::new(&self.config.limits);
        for (id, data) in handle.blobs {
            if let Err(e) = blobs.insert_with_id(id, data) {
                let reason = StaleReason::UnusableBlobs(e.to_string());
                return self.rebuild(Some((reason, handle.conversation_id)), false);
            }
        }
        let send_mcp_tools =
            self.resend_mcp_on_resume || ToolsetKey::of(&conversation.tools) != handle.toolset_key;
        let mut config = self.config.clone();
        config.conversation_id = Some(handle.conversation_id.clone());
        config.resume = true;
        self.current = Some(RunLabel::Resume);
        self.previous_id = Some(handle.conversation_id);
        Plan {
            label: RunLabel::Resume,
            config,
            blobs,
            seed: Some(ResumeSeed::new(handle.checkpoint, send_mcp_tools)),
            stale: None,
            reset: false,
        }
    }

    /// After the planned Run failed with `error`: when a resume went stale (blob miss or remote
    /// `not_found`), the rebuild to run instead, once, starting with a `Reset`; the caller drops
    /// the handle. Anything else, including a miss during a rebuild, fails closed with `error`.
    ///
    /// Cursor losing the conversation's server state (PROTOCOL-AGENT §13.3) is recovered the
    /// same way whether the Run resumed or rebuilt.
    pub fn recover(&mut self, error: &AgentError) -> Result<Plan, AgentError> {
        let stale = error.is_stale_resume() && self.current == Some(RunLabel::Resume);
        if !stale && !error.is_server_state_lost() {
            return Err(error.clone());
        }
        let previous = self.previous_id.clone().unwrap_or_default();
        Ok(self.rebuild(
            Some((StaleReason::RemoteStale(error.to_string()), previous)),
            true,
        ))
    }

    fn rebuild(&mut self, stale: Option<(StaleReason, String)>, reset: bool) -> Plan {
        let mut config = self.config.clone();
        config.conversation_id = None;
        config.resume = false;
        let stale = stale.map(|(reason, previous)| {
            // A fresh id must differ from the stale one even under a fixed test seed.
            let mut hasher = Sha256::new();
            hasher.update(config.id_seed.bytes());
            hasher.update(b"rebuild");
            hasher.update(previous.as_bytes());
            let digest = hasher.finalize();
            let mut seed = [0; 16];
            seed.copy_from_slice(&digest[..16]);
            config.id_seed = IdSeed::fixed(seed);
            reason
        });
        self.current = Some(RunLabel::Rebuild);
        Plan {
            label: RunLabel::Rebuild,
            blobs: BlobStore::new(&config.limits),
            config,
            seed: None,
            stale,
            reset,
        }
    }
}
