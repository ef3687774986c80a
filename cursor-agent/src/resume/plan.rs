//! Planning a Run from a stored handle: resume the remote conversation, or rebuild it from the
//! transcript (PROTOCOL-AGENT §0, §10; DESIGN §3.1, §5). Sans-IO: the caller loads and saves handles.

use std::time::Instant;

use cursor_proto::agent::v1::ConversationStateStructure;
use cursor_proto::ir::Conversation;
use prost::Message as _;
use sha2::{Digest, Sha256};

use super::fingerprint::{Fingerprint, ToolsetKey};
use super::handle::{Found, Handle};
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

/// Which stored turn a resumed Run continues from (PROTOCOL-AGENT §10.1).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResumeFrom {
    /// How many user turns the resumed checkpoint holds: the request's history is the history
    /// up to that turn, plus the new input.
    pub turn: usize,
    /// True when the checkpoint is not the latest of its remote conversation (the host branched
    /// at an earlier turn, or the handle was copied from another session): the Run resumes it
    /// under a new conversation id, so the other branch's remote conversation is left as it was.
    pub branch: bool,
    /// The stored turn's completed-user-turn fingerprint.
    pub fingerprint: Fingerprint,
}

impl StaleReason {
    /// The reason's name in debug records: `fingerprint`, `checkpoint`, `blobs`, `remote` or
    /// `abandonedToolRound`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::FingerprintMismatch => "fingerprint",
            Self::UnusableCheckpoint(_) => "checkpoint",
            Self::UnusableBlobs(_) => "blobs",
            Self::RemoteStale(_) => "remote",
            Self::AbandonedToolRound => "abandonedToolRound",
        }
    }
}

/// A planned Run: resume or rebuild, with everything needed to open it.
#[derive(Debug)]
pub struct Plan {
    label: RunLabel,
    from: Option<ResumeFrom>,
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

    /// The stored turn a resume continues from (`None` for a rebuild).
    pub fn resume_from(&self) -> Option<ResumeFrom> {
        self.from
    }

    /// How many user turns the resumed checkpoint holds (`None` for a rebuild).
    pub fn resumed_turn(&self) -> Option<usize> {
        self.from.map(|from| from.turn)
    }

    /// Why the stored handle was not resumed (`None` for a resume, or a first run).
    pub fn stale_reason(&self) -> Option<&StaleReason> {
        self.stale.as_ref()
    }

    /// True when the stored handle must be removed before the Run opens. A history that
    /// matches none of the handle's turns keeps it: its turns still resume the branches they
    /// belong to (PROTOCOL-AGENT §10.1).
    pub fn drops_handle(&self) -> bool {
        self.stale
            .as_ref()
            .is_some_and(|stale| *stale != StaleReason::FingerprintMismatch)
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
    /// whether `mcp_tools` is sent, how many blobs were loaded, and for a resume the turn it
    /// continues from and whether it branches (`"turn":3,"branch":true`).
    pub fn debug_record(&self) -> String {
        let stale = self.stale.as_ref().map_or("none", StaleReason::as_str);
        let from = self.from.map_or_else(String::new, |from| {
            format!(",\"turn\":{},\"branch\":{}", from.turn, from.branch)
        });
        format!(
            "{{\"run\":\"{}\",\"stale\":\"{stale}\",\"mcpTools\":{},\"resumedBlobs\":{},\"reset\":{}{from}}}",
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
        let Some(mut handle) = handle.filter(|_| !continues) else {
            return self.rebuild(None, false);
        };
        let completed = Fingerprint::of_user_turns(history_of(&conversation.messages));
        let found = handle.find(&completed);
        if found == Some(Found::Head) && handle.awaiting_tool_results && handle.owns_conversation {
            return self.rebuild(
                Some((StaleReason::AbandonedToolRound, handle.conversation_id)),
                false,
            );
        }
        let Some(found) = found else {
            return self.rebuild(
                Some((StaleReason::FingerprintMismatch, handle.conversation_id)),
                false,
            );
        };
        let head_id = handle.conversation_id.clone();
        let head_blob_ids = handle.head_blob_ids();
        // The turn's checkpoint, its blobs, and whether it may keep its conversation id: only
        // the latest checkpoint of a remote conversation this handle owns resumes under its id;
        // any other resumes under a new one (PROTOCOL-AGENT §10.1).
        let (conversation_id, checkpoint, blob_ids, toolset_key, own_id) = match found {
            Found::Head => (
                handle.conversation_id,
                handle.checkpoint,
                Some(head_blob_ids),
                handle.toolset_key,
                handle.owns_conversation,
            ),
            Found::Earlier(i) => {
                let turn = handle.earlier.swap_remove(i);
                let own_id =
                    turn.tip && !turn.awaiting_tool_results && turn.conversation_id != head_id;
                (
                    turn.conversation_id,
                    turn.checkpoint,
                    Some(turn.blob_ids),
                    turn.toolset_key,
                    own_id,
                )
            }
        };
        if let Err(e) = ConversationStateStructure::decode(checkpoint.as_slice()) {
            let reason = StaleReason::UnusableCheckpoint(e.to_string());
            return self.rebuild(Some((reason, head_id)), false);
        }
        let mut blobs = BlobStore::new(&self.config.limits);
        for (id, data) in handle.blobs {
            if blob_ids.as_ref().is_some_and(|ids| !ids.contains(&id)) {
                continue;
            }
            if let Err(e) = blobs.insert_with_id(id, data) {
                let reason = StaleReason::UnusableBlobs(e.to_string());
                return self.rebuild(Some((reason, head_id)), false);
            }
        }
        // A new conversation id has no tool registration on the server yet.
        let send_mcp_tools = self.resend_mcp_on_resume
            || !own_id
            || ToolsetKey::of(&conversation.tools) != toolset_key;
        let mut config = self.config.clone();
        if own_id {
            config.conversation_id = Some(conversation_id.clone());
        } else {
            config.conversation_id = None;
            config.id_seed = derived_seed(&config.id_seed, b"branch", &conversation_id);
        }
        config.resume = true;
        self.current = Some(RunLabel::Resume);
        self.previous_id = Some(conversation_id);
        let turn = history_of(&conversation.messages)
            .iter()
            .filter(|m| matches!(m, cursor_proto::ir::Message::User { .. }))
            .count();
        Plan {
            label: RunLabel::Resume,
            from: Some(ResumeFrom {
                turn,
                branch: !own_id,
                fingerprint: completed,
            }),
            config,
            blobs,
            seed: Some(ResumeSeed::new(checkpoint, send_mcp_tools)),
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
            config.id_seed = derived_seed(&config.id_seed, b"rebuild", &previous);
            reason
        });
        self.current = Some(RunLabel::Rebuild);
        Plan {
            label: RunLabel::Rebuild,
            from: None,
            blobs: BlobStore::new(&config.limits),
            config,
            seed: None,
            stale,
            reset,
        }
    }
}

/// A seed for a new conversation id that differs from `previous` even under a fixed test seed.
fn derived_seed(seed: &IdSeed, why: &[u8], previous: &str) -> IdSeed {
    let mut hasher = Sha256::new();
    hasher.update(seed.bytes());
    hasher.update(why);
    hasher.update(previous.as_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0; 16];
    bytes.copy_from_slice(&digest[..16]);
    IdSeed::fixed(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ResumePoint;
    use crate::resume::handle::{KEPT_BRANCH_POINTS, KEPT_TURNS};
    use cursor_proto::ir::Message;

    fn config() -> RunConfig {
        RunConfig::new("composer-2.5", "file:///work", IdSeed::fixed([7; 16]))
    }

    /// The checkpoint node `n`'s turn ended with.
    fn checkpoint_of(n: usize) -> Vec<u8> {
        ConversationStateStructure {
            turns: vec![n.to_le_bytes().to_vec()],
            ..Default::default()
        }
        .encode_to_vec()
    }

    /// The transcript of the path to `node` (user and assistant message per turn).
    fn path_to(parents: &[Option<usize>], node: Option<usize>) -> Vec<Message> {
        let mut nodes = Vec::new();
        let mut at = node;
        while let Some(n) = at {
            nodes.push(n);
            at = parents[n];
        }
        nodes
            .into_iter()
            .rev()
            .flat_map(|n| {
                [
                    Message::user_text(format!("turn {n}")),
                    Message::assistant_text(format!("answer {n}")),
                ]
            })
            .collect()
    }

    fn depth(parents: &[Option<usize>], node: Option<usize>) -> usize {
        let mut depth = 0;
        let mut at = node;
        while let Some(n) = at {
            depth += 1;
            at = parents[n];
        }
        depth
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// Random trees of turns, each new turn a child of a random earlier turn (or a new
        /// root): the turn resumes from its parent's checkpoint whenever the handle still holds
        /// it, which it must for every parent among the last `KEPT_TURNS + 1` turns and every
        /// branch point among the last `KEPT_BRANCH_POINTS`; a root turn rebuilds; the handle
        /// never exceeds its bound; and only a parent that is not its conversation's latest
        /// checkpoint resumes under a new conversation id.
        #[test]
        fn every_branch_resumes_from_its_deepest_checkpoint(
            picks in proptest::collection::vec((0_usize..1000, 0_u8..10), 1..220),
        ) {
            let mut parents: Vec<Option<usize>> = Vec::new();
            let mut handle: Option<Handle> = None;
            // Per node: its conversation id.
            let mut ids: Vec<String> = Vec::new();
            let mut branch_points: Vec<usize> = Vec::new();
            for (n, (pick, root)) in picks.into_iter().enumerate() {
                let parent = (n > 0 && root != 0).then(|| pick % n);
                let mut messages = path_to(&parents, parent);
                messages.push(Message::user_text(format!("turn {n}")));
                let mut conversation = Conversation::new("");
                conversation.messages = messages.clone();
                let plan = ResumePlanner::new(config()).plan(handle.clone(), &conversation);
                let held = match (&handle, parent) {
                    (Some(h), Some(p)) => {
                        let completed = Fingerprint::of_user_turns(&path_to(&parents, Some(p)));
                        h.find(&completed).is_some()
                    }
                    _ => false,
                };
                if let Some(p) = parent {
                    let recent = n - p <= KEPT_TURNS + 1;
                    let pinned = branch_points.iter().rev().take(KEPT_BRANCH_POINTS).any(|b| *b == p);
                    proptest::prop_assert!(held || !(recent || pinned), "node {n}: parent {p} was dropped");
                }
                let id = if held {
                    let p = parent.unwrap();
                    proptest::prop_assert_eq!(plan.label(), RunLabel::Resume);
                    let from = plan.resume_from().unwrap();
                    proptest::prop_assert_eq!(from.turn, depth(&parents, parent));
                    let seed = plan.seed.as_ref().unwrap();
                    let expected = checkpoint_of(p);
                    proptest::prop_assert_eq!(seed.checkpoint(), expected.as_slice());
                    // The parent's id is kept only when nothing later was said under it.
                    let later_under_it = (p + 1..n).any(|m| ids[m] == ids[p]);
                    proptest::prop_assert_eq!(from.branch, later_under_it);
                    if from.branch {
                        branch_points.push(p);
                        format!("conv-{n}")
                    } else {
                        proptest::prop_assert_eq!(plan.config().conversation_id.as_deref(), Some(ids[p].as_str()));
                        ids[p].clone()
                    }
                } else {
                    proptest::prop_assert_eq!(plan.label(), RunLabel::Rebuild);
                    format!("conv-{n}")
                };
                let branched_from = plan.resume_from().filter(|f| f.branch).map(|f| f.fingerprint);
                let point = ResumePoint {
                    conversation_id: id.clone(),
                    checkpoint: checkpoint_of(n),
                    blobs: vec![(crate::BlobId::of(format!("blob {n}").as_bytes()), format!("blob {n}").into_bytes())],
                };
                let next = Handle::from_point(point, &conversation);
                handle = Some(match handle {
                    Some(stored) => stored.advance(next, branched_from.as_ref()),
                    None => next,
                });
                let stored = handle.as_ref().unwrap();
                proptest::prop_assert!(stored.turns() <= 1 + KEPT_TURNS + KEPT_BRANCH_POINTS);
                proptest::prop_assert!(stored.blobs.len() <= stored.turns());
                parents.push(parent);
                ids.push(id);
            }
        }
    }
}
