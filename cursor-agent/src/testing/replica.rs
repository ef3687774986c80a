//! [`Replica`]: the shared state of the replica (its conversations, scripts, records and
//! settings), which every exchange reads; serving it is `server`'s part.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use cursor_transport::envelope::Compression;

use super::checkpoint::StoredConversation;
use super::model::ToolNaming;
use super::{RunRecord, Script, StateLoss};

type Sink = Arc<dyn Fn(&RunRecord) + Send + Sync>;

#[derive(Default)]
struct State {
    scripts: VecDeque<Script>,
    conversations: HashMap<String, StoredConversation>,
    /// Every checkpoint journal this backend sent, by its SHA-256, with when: a Run under a
    /// new conversation id may start from one (docs/PROTOCOL-AGENT.md §10.1).
    issued: HashMap<[u8; 32], (std::time::Instant, String)>,
    runs: Vec<RunRecord>,
    hold_open: HoldOpen,
    idle_heartbeat: Option<Duration>,
    compression: Compression,
    fail_auth: bool,
    sink: Option<Sink>,
    mcp_state: McpStateRequests,
    allowed_tools: AllowedTools,
    min_client_version: Option<String>,
    tool_naming: ToolNaming,
    checkpoint_ttl: Option<Duration>,
    /// Model families whose ids the backend takes in one form only.
    model_id_forms: Vec<(String, ModelIdForm)>,
    structured_history_limit: Option<usize>,
    check_image_ids: bool,
    interaction_probe: Option<Duration>,
    /// Bumped by each [`Replica::restart`]; a Run waiting for tool results across a bump lost
    /// its tool session.
    generation: u64,
}

/// The agent backend replica: its conversations, scripts and records. Cheap to clone; clones
/// share everything.
///
/// Serve it on a server of its own with [`Replica::start`] (or [`Replica::listen`] for a server
/// with a handler for plain HTTP requests), or on an existing
/// [`TestServer`](cursor_transport::testing::TestServer) with [`Replica::serve`], for example
/// a catalog fixture's, so the model
/// catalog and `Run` share one origin.
#[derive(Clone, Default)]
pub struct Replica {
    state: Arc<Mutex<State>>,
    restarted: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Replica")
            .field("conversations", &state.conversations.len())
            .field("runs", &state.runs.len())
            .field("scripts", &state.scripts)
            .field("hold_open", &state.hold_open)
            .field("idle_heartbeat", &state.idle_heartbeat)
            .field("compression", &state.compression)
            .field("fail_auth", &state.fail_auth)
            .field("mcp_state", &state.mcp_state)
            .field("allowed_tools", &state.allowed_tools)
            .field("min_client_version", &state.min_client_version)
            .field("tool_naming", &state.tool_naming)
            .field("checkpoint_ttl", &state.checkpoint_ttl)
            .field("model_id_forms", &state.model_id_forms)
            .field("structured_history_limit", &state.structured_history_limit)
            .field("check_image_ids", &state.check_image_ids)
            .field("interaction_probe", &state.interaction_probe)
            .field("generation", &state.generation)
            .finish()
    }
}

impl Replica {
    /// A replica with no conversations, not serving yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `script` for the next Run that has none yet.
    pub fn script(&self, script: Script) {
        self.lock().scripts.push_back(script);
    }

    /// How long every stream stays open after `turn_ended` (Cursor may keep the response
    /// open; a client must not let that hold its turn open or delay its handle).
    pub fn set_hold_open(&self, hold: HoldOpen) {
        self.lock().hold_open = hold;
    }

    /// Sends an `InteractionUpdate.heartbeat` every `every` while the replica waits for the
    /// client (during tool rounds and while holding a stream open), as Cursor does while idle.
    /// `None` (the default) sends none.
    pub fn set_idle_heartbeat(&self, every: Option<Duration>) {
        self.lock().idle_heartbeat = every;
    }

    /// Compresses the response messages of 1 KiB or more with `compression`, announced in the
    /// response head, as a Connect server may (the client asks for gzip). Identity, the
    /// default, compresses nothing.
    pub fn set_compression(&self, compression: Compression) {
        self.lock().compression = compression;
    }

    /// Answers every Run with HTTP 401 (an expired or revoked token).
    pub fn set_fail_auth(&self, fail: bool) {
        self.lock().fail_auth = fail;
    }

    /// Which Runs ask for the host's MCP state (exec arm 36) before they use a tool, and then
    /// call a tool only when that state lists it (docs/PROTOCOL-AGENT.md §12.1: Grok models since
    /// 2026-09-21). Default: [`McpStateRequests::GrokModels`].
    pub fn set_mcp_state_requests(&self, requests: McpStateRequests) {
        self.lock().mcp_state = requests;
    }

    /// Whether the model respects the client's `x-cursor-agent-allowed-tools` header
    /// (docs/PROTOCOL-AGENT.md §12.3). Default: [`AllowedTools::Honour`].
    pub fn set_allowed_tools(&self, allowed: AllowedTools) {
        self.lock().allowed_tools = allowed;
    }

    /// Refuses every Run whose `x-cursor-client-version` sorts below `version` the way Cursor
    /// refuses a stale client: HTTP 200 and an end-of-stream `resource_exhausted` asking to
    /// update (docs/PROTOCOL-AGENT.md §12.4). `None` (the default) accepts every version.
    pub fn set_min_client_version(&self, version: Option<String>) {
        self.lock().min_client_version = version;
    }

    /// How the model names a host tool when it calls it (`mcp_args.name` and `tool_name`).
    /// Live servers use all three forms of [`ToolNaming`]; default: [`ToolNaming::Bare`].
    pub fn set_tool_naming(&self, naming: ToolNaming) {
        self.lock().tool_naming = naming;
    }

    /// True when the replica holds `conversation_id` waiting for a tool result its client
    /// never sent (an abandoned tool round): every later Run of it stalls (docs/PROTOCOL-AGENT.md
    /// §12.5).
    pub fn owes_tool_result(&self, conversation_id: &str) -> bool {
        self.lock()
            .conversations
            .get(conversation_id)
            .is_some_and(|c| c.owes_tool_result)
    }

    /// Expires checkpoints older than `ttl`, as the backend does after about 30 minutes: a Run
    /// resuming one fails with `Conversation data missing`. `None` (the default) keeps them.
    pub fn set_checkpoint_ttl(&self, ttl: Option<Duration>) {
        self.lock().checkpoint_ttl = ttl;
    }

    /// Takes the model family `base` (`grok-4.7`, `kimi-k3`) only in `form`: a Run asking for it
    /// in the other form ends with Connect `not_found` before any frame, as Cursor answers
    /// an id it does not serve (PROTOCOL-AGENT §13.7). Families never named here are taken in
    /// any form. Setting a family again replaces its form.
    pub fn set_model_id_form(&self, base: impl Into<String>, form: ModelIdForm) {
        let base = base.into();
        let mut state = self.lock();
        state.model_id_forms.retain(|(b, _)| *b != base);
        state.model_id_forms.push((base, form));
    }

    /// Whether the backend refuses the model id `slug` (see [`Replica::set_model_id_form`]).
    pub(super) fn refuses_model(&self, slug: &str) -> bool {
        self.lock().model_id_forms.iter().any(|(base, form)| {
            let suffixed = slug
                .strip_prefix(base.as_str())
                .is_some_and(|rest| rest.starts_with('-'));
            match form {
                ModelIdForm::BareOnly => suffixed,
                ModelIdForm::SuffixedOnly => slug == base,
            }
        })
    }

    /// Resets the stream of a rebuilt Run whose structured history (the root prompt's JSON
    /// messages besides the rules and a `<conversation_archive>`) holds more than `limit`
    /// bytes, as the backend does at about 64 KiB (docs/PROTOCOL-AGENT.md §13.4). `None` (the
    /// default) takes any size.
    pub fn set_structured_history_limit(&self, limit: Option<usize>) {
        self.lock().structured_history_limit = limit;
    }

    /// Keeps image ids per conversation as the backend does (docs/PROTOCOL-AGENT.md §13.5): an
    /// image it was sent before, under a new id, or an id without data it never saw, fails the
    /// Run with `Image not found [internal]` and poisons the conversation (every later Run of
    /// it fails so). Off by default.
    pub fn set_check_image_ids(&self, check: bool) {
        self.lock().check_image_ids = check;
    }

    /// Before the model answers, sends every Run one `InteractionQuery` of each kind the
    /// backend sends (web search and fetch, Exa search and fetch, a question, a mode switch, a
    /// plan, a VM setup) and resets the stream when one is not answered, with its own arm,
    /// within `idle`: the backend does so after about 90 s (docs/PROTOCOL-AGENT.md §13.6).
    /// `None` (the default) sends none.
    pub fn set_interaction_probe(&self, idle: Option<Duration>) {
        self.lock().interaction_probe = idle;
    }

    /// Poisons `conversation_id` the way an image under a second id does: every later Run of
    /// it fails `Image not found [internal]` while image ids are checked
    /// ([`Replica::set_check_image_ids`]).
    pub fn poison(&self, conversation_id: &str) {
        if let Some(conversation) = self.lock().conversations.get_mut(conversation_id) {
            conversation.poisoned = true;
        }
    }

    /// Loses `conversation_id`'s server state this way: the next Run of it fails so (and the
    /// conversation is gone afterwards).
    pub fn lose(&self, conversation_id: &str, loss: StateLoss) {
        if let Some(conversation) = self.lock().conversations.get_mut(conversation_id) {
            conversation.lost = Some(loss);
        }
    }

    /// Restarts the backend: every conversation is gone, and a Run waiting for tool results
    /// ends with `tool session not found` (where the results would have gone).
    pub fn restart(&self) {
        {
            let mut state = self.lock();
            state.conversations.clear();
            state.issued.clear();
            state.generation += 1;
        }
        self.restarted.notify_waiters();
    }

    /// Calls `sink` with each Run's record as the Run ends (for logs).
    pub fn set_record_sink(&self, sink: impl Fn(&RunRecord) + Send + Sync + 'static) {
        self.lock().sink = Some(Arc::new(sink));
    }

    /// The records of every Run that ended so far, in the order they ended.
    pub fn runs(&self) -> Vec<RunRecord> {
        self.lock().runs.clone()
    }

    /// How many completed turns the replica holds for `conversation_id`.
    pub fn turns(&self, conversation_id: &str) -> Option<usize> {
        self.lock()
            .conversations
            .get(conversation_id)
            .map(|c| c.turns.len())
    }

    /// Drops a conversation, as the backend does when it expires one: resuming it then ends
    /// with `not_found`.
    pub fn forget(&self, conversation_id: &str) {
        let mut state = self.lock();
        state.conversations.remove(conversation_id);
        // Its checkpoints are gone too: no new id starts from one (§10.1).
        state.issued.retain(|_, (_, id)| id != conversation_id);
    }

    pub(super) fn next_script(&self) -> Script {
        self.lock().scripts.pop_front().unwrap_or(Script::Model)
    }

    pub(super) fn fail_auth(&self) -> bool {
        self.lock().fail_auth
    }

    pub(super) fn hold_open(&self) -> HoldOpen {
        self.lock().hold_open
    }

    pub(super) fn idle_heartbeat(&self) -> Option<Duration> {
        self.lock().idle_heartbeat
    }

    pub(super) fn compression(&self) -> Compression {
        self.lock().compression
    }

    pub(super) fn mcp_state_requests(&self) -> McpStateRequests {
        self.lock().mcp_state
    }

    pub(super) fn allowed_tools(&self) -> AllowedTools {
        self.lock().allowed_tools
    }

    pub(super) fn tool_naming(&self) -> ToolNaming {
        self.lock().tool_naming
    }

    pub(super) fn min_client_version(&self) -> Option<String> {
        self.lock().min_client_version.clone()
    }

    pub(super) fn conversation(&self, id: &str) -> Option<StoredConversation> {
        self.lock().conversations.get(id).cloned()
    }

    pub(super) fn checkpoint_ttl(&self) -> Option<Duration> {
        self.lock().checkpoint_ttl
    }

    pub(super) fn interaction_probe(&self) -> Option<Duration> {
        self.lock().interaction_probe
    }

    pub(super) fn check_image_ids(&self) -> bool {
        self.lock().check_image_ids
    }

    pub(super) fn structured_history_limit(&self) -> Option<usize> {
        self.lock().structured_history_limit
    }

    pub(super) fn generation(&self) -> u64 {
        self.lock().generation
    }

    pub(super) fn restarted(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.restarted)
    }

    /// Remembers that a checkpoint with `journal` was sent.
    pub(super) fn issue(&self, conversation_id: &str, journal: &[Vec<u8>]) {
        let digest = journal_digest(journal);
        self.lock().issued.insert(
            digest,
            (std::time::Instant::now(), conversation_id.to_owned()),
        );
    }

    /// When a checkpoint with `journal` was sent, if one was.
    pub(super) fn issued_at(&self, journal: &[Vec<u8>]) -> Option<std::time::Instant> {
        self.lock()
            .issued
            .get(&journal_digest(journal))
            .map(|(at, _)| *at)
    }

    pub(super) fn store(&self, id: &str, conversation: StoredConversation) {
        self.lock()
            .conversations
            .insert(id.to_owned(), conversation);
    }

    pub(super) fn record(&self, record: RunRecord) {
        let sink = {
            let mut state = self.lock();
            state.runs.push(record.clone());
            state.sink.clone()
        };
        if let Some(sink) = sink {
            sink(&record);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Which Runs ask for the host's MCP state before using a tool (see
/// [`Replica::set_mcp_state_requests`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum McpStateRequests {
    /// Never (the September behaviour).
    Never,
    /// Runs of models whose slug starts with `grok`, as the live backend does since
    /// 2026-09-21.
    #[default]
    GrokModels,
    /// Every Run.
    Always,
}

impl McpStateRequests {
    /// Whether a Run of `model` asks.
    pub(super) fn asks(self, model: &str) -> bool {
        match self {
            Self::Never => false,
            Self::GrokModels => model.to_ascii_lowercase().starts_with("grok"),
            Self::Always => true,
        }
    }
}

/// The one id form the backend takes for a model family (see [`Replica::set_model_id_form`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelIdForm {
    /// Only the bare id (`grok-4.7`); `grok-4.7-high` or `grok-4.7-fast` is `not_found`
    /// (jcode #1377).
    BareOnly,
    /// Only ids with a suffix (`kimi-k3-low`, `kimi-k3-high`, `kimi-k3-max`); the bare id is
    /// `not_found` (opencodex #646).
    SuffixedOnly,
}

/// Whether the replica's model respects `x-cursor-agent-allowed-tools` (see
/// [`Replica::set_allowed_tools`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AllowedTools {
    /// A `run:` turn under a header that does not allow `shell_tool_call` uses the host's MCP
    /// command tool instead of a native shell exec, as the SDK documents the header.
    #[default]
    Honour,
    /// Native execs are sent whatever the header says (a public gateway saw `todo_write` arrive
    /// despite the list, docs/PROTOCOL-AGENT.md §12.3): the audit guarantee must not rest on the
    /// header.
    Ignore,
}

/// What the replica does with a stream after `turn_ended`.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HoldOpen {
    /// End the response at once (the convenient server).
    #[default]
    Close,
    /// Keep it open until the client closes or resets it.
    Forever,
    /// Keep it open this long, then end it.
    For(Duration),
}

fn journal_digest(journal: &[Vec<u8>]) -> [u8; 32] {
    use sha2::{Digest as _, Sha256};
    let mut hasher = Sha256::new();
    for turn in journal {
        hasher.update((turn.len() as u64).to_le_bytes());
        hasher.update(turn);
    }
    hasher.finalize().into()
}
