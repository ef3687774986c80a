//! The remote handle of one host session, and its JSON file format.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use cursor_proto::ir::{Conversation, Message};
use serde::{Deserialize, Serialize};

use super::fingerprint::{Fingerprint, ToolsetKey, parse_hex32};
use crate::{AgentRun, BlobId, ResumePoint};

/// The version of the handle file format this crate writes. Version 1 files (one turn) are
/// still read, as a handle of that one turn.
pub const HANDLE_FORMAT_VERSION: u32 = 2;

/// How many earlier turns a [`Handle`] keeps besides its branch points (the most recent ones;
/// PROTOCOL-AGENT §10.1).
pub const KEPT_TURNS: usize = 64;

/// How many branch points (earlier turns a later request resumed from) a [`Handle`] keeps
/// besides [`KEPT_TURNS`] (the most recent ones). A handle holds at most
/// `1 + KEPT_TURNS + KEPT_BRANCH_POINTS` checkpoints.
pub const KEPT_BRANCH_POINTS: usize = 64;

/// What resuming a remote conversation needs (PROTOCOL-AGENT §10): its id, the last checkpoint
/// exactly as received, the blobs that run held, the fingerprint of the user turns it had
/// completed and the key of the tool set it registered. Since format version 2 it also keeps
/// the checkpoints of earlier turns ([`earlier`](Self::earlier)), so a host that branches (a
/// rewind, an edited message, a forked session) resumes from the turn it branched at instead of
/// rebuilding (PROTOCOL-AGENT §10.1).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handle {
    /// The remote conversation id.
    pub conversation_id: String,
    /// The last `conversation_checkpoint_update`, verbatim.
    pub checkpoint: Vec<u8>,
    /// The blobs of the last run (root prompt and whatever the server stored) and of the
    /// earlier turns kept, by id: blobs are content-addressed, so turns share them.
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
    /// The [`Fingerprint::of_history`] of the last turn's transcript, by which a handle store
    /// finds it from another host session (`None` in a version 1 file).
    pub history: Option<Fingerprint>,
    /// False when the remote conversation may have moved past [`checkpoint`](Self::checkpoint)
    /// elsewhere (a handle copied from another session's turn with [`branch_at`](Self::branch_at)):
    /// it then resumes under a new conversation id.
    pub owns_conversation: bool,
    /// The checkpoints of earlier completed turns, oldest first, within [`KEPT_TURNS`] and
    /// [`KEPT_BRANCH_POINTS`].
    pub earlier: Vec<TurnPoint>,
    /// The ids of the blobs the last turn's run held, when [`blobs`](Self::blobs) also holds
    /// earlier turns' (`None`: all of them are the last turn's).
    head_blobs: Option<Vec<BlobId>>,
}

/// The checkpoint one earlier completed turn ended with, and what matching it needs.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnPoint {
    /// The remote conversation the checkpoint belongs to.
    pub conversation_id: String,
    /// The checkpoint, verbatim.
    pub checkpoint: Vec<u8>,
    /// The ids of the blobs the turn's run held (their bytes are in [`Handle::blobs`]).
    pub blob_ids: Vec<BlobId>,
    /// The completed user turns up to and including this one.
    pub fingerprint: Fingerprint,
    /// [`Fingerprint::of_history`] of the turn's transcript (`None` when not known).
    pub history: Option<Fingerprint>,
    /// The tool set the conversation had registered.
    pub toolset_key: ToolsetKey,
    /// No later checkpoint of [`conversation_id`](Self::conversation_id) was received through
    /// this handle: resuming it may keep that id. Otherwise it resumes under a new one.
    pub tip: bool,
    /// Its conversation was left waiting for tool results: it never resumes under its own id.
    pub awaiting_tool_results: bool,
    /// A request resumed from it as a branch: kept under [`KEPT_BRANCH_POINTS`], not
    /// [`KEPT_TURNS`].
    pub branch_point: bool,
}

/// Which stored checkpoint a request's history matches (see [`Handle::find`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// The last turn.
    Head,
    /// `earlier[i]`.
    Earlier(usize),
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
            history: None,
            owns_conversation: true,
            earlier: Vec::new(),
            head_blobs: None,
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
            history: Some(Fingerprint::of_history(&conversation.messages)),
            owns_conversation: true,
            earlier: Vec::new(),
            head_blobs: None,
        }
    }

    /// This handle with `next` (the handle of the turn just completed, one turn, e.g. from
    /// [`from_point`](Self::from_point)) as its last turn and the current last turn kept as an
    /// earlier one. `branched_from` is the fingerprint of the earlier turn the completed one
    /// resumed from as a branch, if any: it is kept as a branch point. Earlier turns with
    /// `next`'s fingerprint are replaced (the same user turns: a regenerated answer); then the
    /// oldest turns beyond [`KEPT_TURNS`] and branch points beyond [`KEPT_BRANCH_POINTS`] are
    /// dropped, with the blobs no kept turn holds.
    #[must_use]
    pub fn advance(self, next: Self, branched_from: Option<&Fingerprint>) -> Self {
        let head_blob_ids = self.head_blob_ids();
        let mut earlier = self.earlier;
        let head_tip = self.owns_conversation && self.conversation_id != next.conversation_id;
        earlier.push(TurnPoint {
            blob_ids: head_blob_ids,
            conversation_id: self.conversation_id,
            checkpoint: self.checkpoint,
            fingerprint: self.fingerprint,
            history: self.history,
            toolset_key: self.toolset_key,
            tip: head_tip,
            awaiting_tool_results: self.awaiting_tool_results,
            branch_point: false,
        });
        for turn in &mut earlier {
            if turn.conversation_id == next.conversation_id {
                // `next` is a later checkpoint of that conversation.
                turn.tip = false;
            }
            if branched_from == Some(&turn.fingerprint) {
                turn.branch_point = true;
            }
        }
        earlier.retain(|turn| turn.fingerprint != next.fingerprint);
        let earlier = prune(earlier);
        let next_ids = next.head_blob_ids();
        let mut blobs: Vec<(BlobId, Vec<u8>)> = next
            .blobs
            .into_iter()
            .filter(|(id, _)| next_ids.contains(id))
            .collect();
        let mut held: std::collections::HashSet<BlobId> = blobs.iter().map(|(id, _)| *id).collect();
        let wanted: std::collections::HashSet<BlobId> = earlier
            .iter()
            .flat_map(|turn| turn.blob_ids.iter().copied())
            .collect();
        for (id, data) in self.blobs {
            if wanted.contains(&id) && held.insert(id) {
                blobs.push((id, data));
            }
        }
        blobs.sort_by_key(|(id, _)| *id);
        let head_blobs = (blobs.len() != next_ids.len()).then_some(next_ids);
        Self {
            blobs,
            earlier,
            head_blobs,
            ..next
        }
    }

    /// The ids of the blobs the last turn's run held.
    pub fn head_blob_ids(&self) -> Vec<BlobId> {
        self.head_blobs
            .clone()
            .unwrap_or_else(|| self.blobs.iter().map(|(id, _)| *id).collect())
    }

    /// How many checkpoints the handle holds (the last turn and the earlier ones).
    pub fn turns(&self) -> usize {
        1 + self.earlier.len()
    }

    /// The stored turn whose completed user turns are `fingerprint`: the last turn first, then
    /// the most recent earlier one.
    pub(crate) fn find(&self, fingerprint: &Fingerprint) -> Option<Found> {
        if self.fingerprint == *fingerprint {
            return Some(Found::Head);
        }
        self.earlier
            .iter()
            .rposition(|turn| turn.fingerprint == *fingerprint)
            .map(Found::Earlier)
    }

    /// The stored turn whose [`history`](TurnPoint::history) digest is `history`.
    pub fn find_history(&self, history: &Fingerprint) -> Option<&Fingerprint> {
        if self.history.as_ref() == Some(history) {
            return Some(&self.fingerprint);
        }
        self.earlier
            .iter()
            .rev()
            .find(|turn| turn.history.as_ref() == Some(history))
            .map(|turn| &turn.fingerprint)
    }

    /// A handle for another host session that branched from this one at the turn whose
    /// completed user turns are `fingerprint` (PROTOCOL-AGENT §10.1): that turn becomes its last
    /// turn, the earlier turns of `messages` (the branch's transcript: turns whose fingerprint is
    /// one of its user-turn prefixes) are copied, and nothing of this handle's later turns or
    /// other branches is. The copy does not own the remote conversation: its Runs resume under
    /// new conversation ids, so the two sessions never write into one remote conversation.
    pub fn branch_at(&self, fingerprint: &Fingerprint, messages: &[Message]) -> Option<Self> {
        let found = self.find(fingerprint)?;
        let ancestors: std::collections::HashSet<Fingerprint> =
            Fingerprint::user_prefixes(messages).into_iter().collect();
        let (head, before) = match found {
            Found::Head => (self.head_point(), self.earlier.as_slice()),
            Found::Earlier(i) => (self.earlier[i].clone(), &self.earlier[..i]),
        };
        let earlier: Vec<TurnPoint> = before
            .iter()
            .filter(|turn| {
                ancestors.contains(&turn.fingerprint) && turn.fingerprint != *fingerprint
            })
            .map(|turn| TurnPoint {
                tip: false,
                branch_point: false,
                ..turn.clone()
            })
            .collect();
        let earlier = prune(earlier);
        let wanted: std::collections::HashSet<BlobId> = earlier
            .iter()
            .chain(std::iter::once(&head))
            .flat_map(|turn| turn.blob_ids.iter().copied())
            .collect();
        let blobs: Vec<(BlobId, Vec<u8>)> = self
            .blobs
            .iter()
            .filter(|(id, _)| wanted.contains(id))
            .cloned()
            .collect();
        Some(Self {
            conversation_id: head.conversation_id,
            checkpoint: head.checkpoint,
            head_blobs: (blobs.len() != head.blob_ids.len()).then_some(head.blob_ids),
            blobs,
            fingerprint: head.fingerprint,
            toolset_key: head.toolset_key,
            awaiting_tool_results: false,
            history: head.history,
            owns_conversation: false,
            earlier,
        })
    }

    /// The last turn as a [`TurnPoint`].
    fn head_point(&self) -> TurnPoint {
        TurnPoint {
            conversation_id: self.conversation_id.clone(),
            checkpoint: self.checkpoint.clone(),
            blob_ids: self.head_blob_ids(),
            fingerprint: self.fingerprint,
            history: self.history,
            toolset_key: self.toolset_key,
            tip: self.owns_conversation,
            awaiting_tool_results: self.awaiting_tool_results,
            branch_point: false,
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
            history: self.history.map(|h| h.to_hex()),
            shared_conversation: !self.owns_conversation,
            head_blobs: self
                .head_blobs
                .as_ref()
                .map(|ids| ids.iter().map(BlobId::to_hex).collect()),
            blobs: self
                .blobs
                .iter()
                .map(|(id, data)| BlobEntry {
                    id: id.to_hex(),
                    data: STANDARD.encode(data),
                })
                .collect(),
            earlier: self
                .earlier
                .iter()
                .map(|turn| TurnEntry {
                    conversation_id: turn.conversation_id.clone(),
                    checkpoint: STANDARD.encode(&turn.checkpoint),
                    blobs: turn.blob_ids.iter().map(BlobId::to_hex).collect(),
                    fingerprint: turn.fingerprint.to_hex(),
                    history: turn.history.map(|h| h.to_hex()),
                    toolset_key: turn.toolset_key.to_hex(),
                    tip: turn.tip,
                    awaiting_tool_results: turn.awaiting_tool_results,
                    branch_point: turn.branch_point,
                })
                .collect(),
        };
        // Serializing plain strings and numbers cannot fail.
        serde_json::to_vec(&file).unwrap_or_default()
    }

    /// Parses a handle file (format version 1 or 2); the error says what is wrong with it.
    pub fn from_json(bytes: &[u8]) -> Result<Self, HandleFileError> {
        let file: HandleFile = serde_json::from_slice(bytes).map_err(HandleFileError::Json)?;
        if !(1..=HANDLE_FORMAT_VERSION).contains(&file.version) {
            return Err(HandleFileError::Version(file.version));
        }
        if file.version == 1
            && (file.history.is_some()
                || file.shared_conversation
                || file.head_blobs.is_some()
                || !file.earlier.is_empty())
        {
            return Err(HandleFileError::Version1Fields);
        }
        if file.conversation_id.is_empty() {
            return Err(HandleFileError::EmptyConversationId);
        }
        let base64 = |what: &'static str, text: &str| {
            STANDARD
                .decode(text)
                .map_err(|source| HandleFileError::Base64 {
                    what,
                    source: Box::new(source),
                })
        };
        let blob_id = |text: &String| {
            parse_hex32(text)
                .map(BlobId::from_array)
                .ok_or_else(|| HandleFileError::BlobId(text.clone()))
        };
        let digest = |what: &'static str, text: &str| {
            Fingerprint::from_hex(text).ok_or(HandleFileError::Digest(what))
        };
        let mut blobs = Vec::with_capacity(file.blobs.len());
        for entry in &file.blobs {
            blobs.push((blob_id(&entry.id)?, base64("blob data", &entry.data)?));
        }
        let held: std::collections::HashSet<BlobId> = blobs.iter().map(|(id, _)| *id).collect();
        let held_ids = |ids: &[String]| -> Result<Vec<BlobId>, HandleFileError> {
            let ids = ids.iter().map(blob_id).collect::<Result<Vec<_>, _>>()?;
            match ids.iter().find(|id| !held.contains(id)) {
                Some(missing) => Err(HandleFileError::BlobId(missing.to_hex())),
                None => Ok(ids),
            }
        };
        let head_blobs = file.head_blobs.as_deref().map(held_ids).transpose()?;
        let mut earlier = Vec::with_capacity(file.earlier.len());
        for entry in &file.earlier {
            if entry.conversation_id.is_empty() {
                return Err(HandleFileError::EmptyConversationId);
            }
            let blob_ids = held_ids(&entry.blobs)?;
            earlier.push(TurnPoint {
                conversation_id: entry.conversation_id.clone(),
                checkpoint: base64("checkpoint", &entry.checkpoint)?,
                blob_ids,
                fingerprint: digest("fingerprint", &entry.fingerprint)?,
                history: entry
                    .history
                    .as_deref()
                    .map(|h| digest("history", h))
                    .transpose()?,
                toolset_key: ToolsetKey::from_hex(&entry.toolset_key)
                    .ok_or(HandleFileError::Digest("tool-set key"))?,
                tip: entry.tip,
                awaiting_tool_results: entry.awaiting_tool_results,
                branch_point: entry.branch_point,
            });
        }
        Ok(Self {
            conversation_id: file.conversation_id,
            checkpoint: base64("checkpoint", &file.checkpoint)?,
            blobs,
            fingerprint: digest("fingerprint", &file.fingerprint)?,
            toolset_key: ToolsetKey::from_hex(&file.toolset_key)
                .ok_or(HandleFileError::Digest("tool-set key"))?,
            awaiting_tool_results: file.awaiting_tool_results,
            history: file
                .history
                .as_deref()
                .map(|h| digest("history", h))
                .transpose()?,
            owns_conversation: !file.shared_conversation,
            earlier,
            head_blobs,
        })
    }
}

/// The most recent [`KEPT_TURNS`] plain turns and [`KEPT_BRANCH_POINTS`] branch points, in
/// their order.
fn prune(earlier: Vec<TurnPoint>) -> Vec<TurnPoint> {
    let plain = earlier.iter().filter(|t| !t.branch_point).count();
    let points = earlier.len() - plain;
    let mut drop_plain = plain.saturating_sub(KEPT_TURNS);
    let mut drop_points = points.saturating_sub(KEPT_BRANCH_POINTS);
    earlier
        .into_iter()
        .filter(|turn| {
            let budget = if turn.branch_point {
                &mut drop_points
            } else {
                &mut drop_plain
            };
            if *budget > 0 {
                *budget -= 1;
                false
            } else {
                true
            }
        })
        .collect()
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
        /// The decoder's complaint (boxed: the base64 crate is not part of this crate's API).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A blob id is not 64 hex digits.
    #[error("blob id {0:?} is not 64 hex digits")]
    BlobId(String),
    /// A digest field is not 64 hex digits.
    #[error("{0} is not 64 hex digits")]
    Digest(&'static str),
    /// A version 1 file carries fields only version 2 has.
    #[error("a version 1 handle file with version 2 fields")]
    Version1Fields,
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
    /// Version 2: the last turn's history digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history: Option<String>,
    /// Version 2: the handle was copied from another session's turn (written only when true).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    shared_conversation: bool,
    blobs: Vec<BlobEntry>,
    /// Version 2: the ids of the last turn's blobs, when `blobs` holds earlier turns' too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    head_blobs: Option<Vec<String>>,
    /// Version 2: earlier turns, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    earlier: Vec<TurnEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TurnEntry {
    conversation_id: String,
    checkpoint: String,
    /// Ids of blobs in the file's `blobs`.
    blobs: Vec<String>,
    fingerprint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history: Option<String>,
    toolset_key: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    tip: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    awaiting_tool_results: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    branch_point: bool,
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
        assert!(text.contains("\"version\":2"), "{text}");
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
        let future = text.replace("\"version\":2", "\"version\":9");
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

    fn turn(handle: &Handle, texts: &[&str], id: &str, blob: &[u8]) -> Handle {
        let messages: Vec<Message> = texts.iter().map(|t| Message::user_text(*t)).collect();
        let _ = handle;
        Handle {
            history: Some(Fingerprint::of_history(&messages)),
            ..Handle::new(
                id,
                texts.join("|").into_bytes(),
                vec![(BlobId::of(blob), blob.to_vec())],
                Fingerprint::of_user_turns(&messages),
                ToolsetKey::of(&[]),
            )
        }
    }

    #[test]
    fn version_1_files_read_as_a_one_turn_handle() {
        let v1 = format!(
            "{{\"version\":1,\"conversationId\":\"conv-1\",\"checkpoint\":\"CgEB\",\"fingerprint\":\"{}\",\"toolsetKey\":\"{}\",\"blobs\":[]}}",
            Fingerprint::of_user_turns(&[Message::user_text("hi")]).to_hex(),
            ToolsetKey::of(&[]).to_hex()
        );
        let handle = Handle::from_json(v1.as_bytes()).unwrap();
        assert_eq!(handle.turns(), 1);
        assert!(handle.owns_conversation);
        assert_eq!(handle.history, None);
        assert_eq!(handle.checkpoint, vec![0x0a, 0x01, 0x01]);
        let with_v2_fields = v1.replace("\"blobs\":[]", "\"blobs\":[],\"sharedConversation\":true");
        assert!(matches!(
            Handle::from_json(with_v2_fields.as_bytes()),
            Err(HandleFileError::Version1Fields)
        ));
    }

    #[test]
    fn advancing_keeps_earlier_turns_and_shares_blobs() {
        let one = turn(&handle(), &["a"], "conv-1", b"root");
        let two = one
            .clone()
            .advance(turn(&one, &["a", "b"], "conv-1", b"root"), None);
        let three = two
            .clone()
            .advance(turn(&two, &["a", "b", "c"], "conv-1", b"b2"), None);
        assert_eq!(three.turns(), 3);
        // One copy of the shared blob, one of the new one.
        assert_eq!(three.blobs.len(), 2);
        // Earlier checkpoints of the same remote conversation are not its tip any more.
        assert!(three.earlier.iter().all(|t| !t.tip));
        let json = three.to_json();
        assert_eq!(Handle::from_json(&json).unwrap(), three);
        // A branch from turn 1 under a new id: turn 1 is a branch point, the old head stays a
        // tip of conv-1.
        let branched = three.clone().advance(
            turn(&three, &["a", "x"], "conv-2", b"x"),
            Some(&one.fingerprint),
        );
        assert_eq!(branched.turns(), 4);
        assert!(branched.earlier[0].branch_point);
        assert!(branched.earlier.last().unwrap().tip);
        assert_eq!(Handle::from_json(&branched.to_json()).unwrap(), branched);
    }

    #[test]
    fn the_bound_holds_and_branch_points_outlive_plain_turns() {
        let mut texts = vec!["t0".to_owned()];
        let mut handle = turn(&handle(), &["t0"], "conv-1", b"r");
        let first = handle.fingerprint;
        for i in 1..200 {
            texts.push(format!("t{i}"));
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let next = turn(&handle, &refs, "conv-1", format!("b{i}").as_bytes());
            let from = (i == 2).then_some(&first);
            handle = handle.advance(next, from);
            assert!(handle.turns() <= 1 + KEPT_TURNS + KEPT_BRANCH_POINTS);
        }
        assert_eq!(handle.turns(), 1 + KEPT_TURNS + 1);
        assert_eq!(handle.earlier[0].fingerprint, first);
        // Only the blobs of kept turns remain.
        let wanted: std::collections::HashSet<BlobId> = handle
            .earlier
            .iter()
            .flat_map(|t| t.blob_ids.iter().copied())
            .chain([BlobId::of(b"b199")])
            .collect();
        assert_eq!(handle.blobs.len(), wanted.len());
    }

    #[test]
    fn a_branch_copies_only_the_turns_up_to_its_point() {
        let a = turn(&handle(), &["a"], "conv-1", b"1");
        let ab = a
            .clone()
            .advance(turn(&a, &["a", "b"], "conv-1", b"2"), None);
        let abc = ab
            .clone()
            .advance(turn(&ab, &["a", "b", "c"], "conv-1", b"3"), None);
        let messages = [
            Message::user_text("a"),
            Message::user_text("b"),
            Message::user_text("new"),
        ];
        let copy = abc.branch_at(&ab.fingerprint, &messages).unwrap();
        assert_eq!(copy.fingerprint, ab.fingerprint);
        assert_eq!(copy.checkpoint, b"a|b".to_vec());
        assert_eq!(copy.earlier.len(), 1);
        assert!(!copy.owns_conversation);
        assert!(copy.earlier.iter().all(|t| !t.tip));
        assert!(copy.blobs.iter().all(|(id, _)| *id != BlobId::of(b"3")));
        assert_eq!(Handle::from_json(&copy.to_json()).unwrap(), copy);
    }
}
