//! The gateway's shared state and the life of one turn: find or start the conversation,
//! count it, run it on the conversation's `AgentSession`, record where its history now ends,
//! and let a waiting tool round expire.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use cursor_agent::ir::{
    Conversation, ErrorInfo, ErrorKind, Event, Message, NextStep, StopReason, ToolCall, Usage,
};
use cursor_agent::session::{AgentSession, Client, ModelChoice, Origin, TokenSource};
use cursor_agent::{AgentEvent, HandleStore, HostProfile, Loaded};
use cursor_catalog::{Catalog, ThinkingLevel};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::conversations::{Claim, Conversations};
use crate::history::{self, Api, HistoryFp, Scope};
use crate::honour::{Clip, Cut};
use crate::metrics::{Metrics, RunKind, RunSink};
use crate::serve::ConnectionCount;
use crate::{ApiError, ClientKeys, Limits};

/// What a gateway is built from.
#[non_exhaustive]
pub struct GatewayConfig {
    /// The HTTP/2 client every Run uses.
    pub client: Client,
    /// Where Runs go.
    pub agent_origin: Origin,
    /// Cursor credentials.
    pub tokens: Arc<dyn TokenSource>,
    /// Handles live in `state/handles`, the conversation index in `state/conversations`.
    pub state: PathBuf,
    /// The keys clients must send; each is its own namespace.
    pub keys: ClientKeys,
    /// Models the gateway lists and resolves.
    pub catalog: Catalog,
    /// The workspace native paths resolve in (`file://` URL).
    pub workspace_uri: String,
    /// Bounds and timeouts.
    pub limits: Limits,
    /// Extra model names (`NAME` → a catalog id), for the names a client sends on its own,
    /// such as Claude Code's main and small-fast model slots.
    pub model_aliases: Vec<(String, String)>,
}

impl GatewayConfig {
    /// A configuration with no client keys and the default [`Limits`].
    pub fn new(
        client: Client,
        agent_origin: Origin,
        tokens: Arc<dyn TokenSource>,
        state: PathBuf,
        catalog: Catalog,
        workspace_uri: impl Into<String>,
    ) -> Self {
        Self {
            client,
            agent_origin,
            tokens,
            state,
            keys: ClientKeys::default(),
            catalog,
            workspace_uri: workspace_uri.into(),
            limits: Limits::DEFAULT,
            model_aliases: Vec::new(),
        }
    }

    /// Adds model aliases (`NAME` → catalog id).
    #[must_use]
    pub fn with_model_aliases(mut self, aliases: Vec<(String, String)>) -> Self {
        self.model_aliases = aliases;
        self
    }

    /// Sets the client keys.
    #[must_use]
    pub fn with_keys(mut self, keys: ClientKeys) -> Self {
        self.keys = keys;
        self
    }

    /// Sets the limits.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

impl std::fmt::Debug for GatewayConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayConfig")
            .field("agent_origin", &self.agent_origin)
            .field("state", &self.state)
            .field("keys", &self.keys)
            .field("models", &self.catalog.rows.len())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// A running gateway's shared state; cheap to clone.
#[derive(Clone, Debug)]
pub struct Gateway {
    inner: Arc<Shared>,
}

struct Shared {
    config: GatewayConfig,
    thinking_key: crate::signature::ThinkingKey,
    handles: Arc<HandleStore>,
    conversations: Conversations,
    turns: Arc<Semaphore>,
    metrics: Arc<Metrics>,
    connections: Arc<ConnectionCount>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway over `config`; reads the conversation index under `config.state`.
    pub fn new(config: GatewayConfig) -> Self {
        let handles = Arc::new(HandleStore::new(config.state.join("handles")));
        let conversations = Conversations::open(
            config.state.join("conversations"),
            config.limits.max_conversations,
        );
        Self {
            inner: Arc::new(Shared {
                turns: Arc::new(Semaphore::new(config.limits.max_turns)),
                thinking_key: crate::signature::ThinkingKey::load_or_create(&config.state),
                config,
                handles,
                conversations,
                metrics: Arc::new(Metrics::default()),
                connections: Arc::new(ConnectionCount::default()),
            }),
        }
    }

    /// Conversations in memory now.
    pub fn conversations(&self) -> usize {
        self.inner.conversations.counts().0
    }

    /// Runs waiting for a client's tool results now.
    pub fn waiting_tool_rounds(&self) -> usize {
        self.inner.conversations.counts().1
    }

    /// Turns that continued a stored conversation from its checkpoint (no history replayed).
    pub fn resumed_turns(&self) -> u64 {
        self.inner.metrics.runs_of(RunKind::Resume)
    }

    /// Turns that rebuilt a conversation from the transcript the client sent.
    pub fn rebuilt_turns(&self) -> u64 {
        self.inner.metrics.runs_of(RunKind::Rebuild)
    }

    /// Open client connections now.
    pub fn open_connections(&self) -> usize {
        self.inner.connections.get()
    }

    /// Turns streaming now.
    pub fn open_runs(&self) -> u64 {
        self.inner.metrics.open_runs()
    }

    /// The state directory (handles, conversations, stored responses).
    pub(crate) fn state_dir(&self) -> &std::path::Path {
        &self.inner.config.state
    }

    pub(crate) fn thinking_key(&self) -> &crate::signature::ThinkingKey {
        &self.inner.thinking_key
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.inner.config.limits
    }

    pub(crate) fn keys(&self) -> &ClientKeys {
        &self.inner.config.keys
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    pub(crate) fn connection_count(&self) -> &Arc<ConnectionCount> {
        &self.inner.connections
    }

    /// The `/metrics` text.
    pub(crate) fn metrics_text(&self) -> String {
        let (conversations, waiting) = self.inner.conversations.counts();
        self.inner
            .metrics
            .render(conversations, waiting, self.inner.connections.get())
    }

    /// Every model id the gateway answers to: catalog ids, then each effort variant's slug.
    pub(crate) fn model_ids(&self) -> Vec<String> {
        let mut ids = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for row in &self.inner.config.catalog.rows {
            let all = std::iter::once(row.id.as_str())
                .chain(row.thinking_levels.values().map(String::as_str))
                .chain(row.slugs.iter().map(String::as_str));
            for id in all {
                if seen.insert(id) {
                    ids.push(id.to_owned());
                }
            }
        }
        ids
    }

    /// The catalog id a model name stands for: a `--model-alias` name, or `claude-cursor-ID`
    /// (every model's Claude Code name), else the name itself.
    pub(crate) fn resolve_alias<'a>(&'a self, model: &'a str) -> &'a str {
        if let Some((_, id)) = self
            .inner
            .config
            .model_aliases
            .iter()
            .find(|(name, _)| name == model)
        {
            return id;
        }
        model.strip_prefix(CLAUDE_PREFIX).unwrap_or(model)
    }

    /// The `--model-alias` names.
    pub(crate) fn alias_names(&self) -> impl Iterator<Item = &str> {
        self.inner
            .config
            .model_aliases
            .iter()
            .map(|(name, _)| name.as_str())
    }

    /// The context window a request for `id` gets (the Max Mode window where the family runs
    /// only in Max Mode).
    pub(crate) fn context_window(&self, id: &str) -> u64 {
        self.inner
            .config
            .catalog
            .resolve(id, None)
            .map_or(cursor_catalog::DEFAULT_CONTEXT_WINDOW, |wire| {
                wire.context_window
            })
    }

    /// The catalog row of id `id`.
    pub(crate) fn row(&self, id: &str) -> Option<&cursor_catalog::ModelRow> {
        self.inner
            .config
            .catalog
            .rows
            .iter()
            .find(|row| row.id == id)
    }

    /// The slug for a request's `model` (an id or a published slug) and `reasoning_effort`.
    pub(crate) fn model_choice(
        &self,
        model: &str,
        effort: Option<&str>,
    ) -> Result<ModelChoice, ApiError> {
        let level = match effort {
            None => None,
            Some("none") => Some(ThinkingLevel::Off),
            Some(effort) => Some(ThinkingLevel::from_host_name(effort).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_reasoning_effort",
                    format!(
                        "reasoning_effort {effort} is not one of off, minimal, low, medium, high, xhigh, max"
                    ),
                )
            })?),
        };
        let catalog = &self.inner.config.catalog;
        catalog
            .resolve(model, level)
            .map(|wire| {
                // The other id form for one retry on not_found, and Max Mode where the family
                // runs only so (PROTOCOL-AGENT §13.7).
                ModelChoice::new(wire.slug)
                    .with_max_mode(wire.max_mode)
                    .with_alternate(wire.alternate)
                    .with_known_models(catalog.model_ids())
            })
            .map_err(|e| {
                ApiError::bad_request(
                    "model_not_found",
                    format!("{e}; GET /v1/models lists the ids"),
                )
                .with_param("model")
            })
    }

    fn new_session(&self, id: &str, sink: Arc<RunSink>, api: Api) -> AgentSession {
        let config = &self.inner.config;
        // Claude Code's tools (Bash, Read, Write, Edit, ...) are reached the same way as any
        // client's: by their schemas; the profile names the host to Cursor and the model.
        let profile = match api {
            Api::Anthropic => HostProfile::new("claude-code")
                .with_display_name("Claude Code")
                .with_continuation_prompt("Continue from the tool results above."),
            _ => HostProfile::new("cursor-gateway")
                .with_continuation_prompt("Continue from the tool results above."),
        };
        AgentSession::builder(
            config.client.clone(),
            config.agent_origin.clone(),
            Arc::clone(&config.tokens),
        )
        .profile(profile)
        .workspace_uri(config.workspace_uri.clone())
        .session_id(id)
        .handles(self.inner.handles.clone())
        .debug(sink)
        .build()
    }

    /// Gives the new conversation `id`, a branch of `parent` (an edited or rewound history),
    /// its own resume handle: `parent`'s checkpoint of the turn the history branched at and the
    /// turns before it, nothing of `parent`'s later turns; its Runs resume under a new remote
    /// conversation id (docs/PROTOCOL-AGENT.md §10.1). Without a usable one the branch rebuilds.
    fn seed_branch(&self, parent: &str, id: &str, conversation: &Conversation) {
        let handles = &self.inner.handles;
        let Ok(Loaded::Found(stored)) = handles.load(parent) else {
            return;
        };
        let completed =
            cursor_agent::Fingerprint::of_user_turns(history_before_turn(&conversation.messages));
        let Some(copy) = stored.branch_at(&completed, &conversation.messages) else {
            return;
        };
        if let Err(error) = handles.save(id, &copy) {
            tracing::warn!(conversation = %id, %error, "could not seed the branch's handle; it rebuilds");
        }
    }

    /// Tokens in `conversation` as Cursor counted them for the longest stored history it
    /// continues, plus an estimate of what came after; a whole estimate when nothing is known.
    pub(crate) fn count_tokens(&self, scope: &Scope, conversation: &Conversation) -> u64 {
        let prefixes = history::prefixes(scope, conversation);
        let Some((unit, known)) = self.inner.conversations.counted(&prefixes) else {
            return crate::anthropic::estimate_tokens(conversation);
        };
        let ends = history::unit_ends(&conversation.messages);
        let mut rest = Conversation::new("");
        rest.messages = conversation.messages[ends[unit]..].to_vec();
        known + crate::anthropic::estimate_tokens(&rest)
    }

    /// Takes a turn slot and the conversation `conversation` continues within `scope`.
    /// Over `--max-turns` it is a 503 at once, never a wait.
    pub(crate) fn begin(
        &self,
        scope: &Scope,
        conversation: &Conversation,
    ) -> Result<TurnGuard, ApiError> {
        let permit = Arc::clone(&self.inner.turns)
            .try_acquire_owned()
            .map_err(|_| {
                self.inner.metrics.overloaded();
                ApiError::overloaded("turns")
            })?;
        let prefixes = history::prefixes(scope, conversation);
        let claim = self.inner.conversations.claim(
            &prefixes,
            |id, sink| self.new_session(id, sink, scope.api),
            || RunSink::new(Arc::clone(&self.inner.metrics)),
        );
        if let Some(parent) = &claim.branched_from {
            self.seed_branch(parent, &claim.id, conversation);
        }
        let continues = claim.session.is_waiting_for_tools()
            && matches!(conversation.messages.last(), Some(Message::ToolResult(_)));
        if continues {
            self.inner.metrics.run(RunKind::Continue);
        } else {
            let earlier_turns = conversation
                .messages
                .iter()
                .any(|m| matches!(m, Message::Assistant { .. }));
            claim.sink.expect_fresh(!earlier_turns);
        }
        tracing::debug!(
            conversation = %claim.id,
            found = claim.found,
            branched_from = claim.branched_from.as_deref(),
            continues,
            "turn"
        );
        self.inner.metrics.run_opened();
        Ok(TurnGuard {
            gateway: self.clone(),
            claim,
            prefix: prefixes.last().copied(),
            _permit: permit,
            released: false,
        })
    }
}

/// A turn in progress: holds its conversation and a turn slot. [`finish`](Self::finish)
/// records where the conversation's history now ends; dropped unfinished (a failure, a client
/// gone), the conversation is handed back where it was found.
pub(crate) struct TurnGuard {
    gateway: Gateway,
    claim: Claim,
    prefix: Option<HistoryFp>,
    _permit: OwnedSemaphorePermit,
    released: bool,
}

impl TurnGuard {
    pub(crate) fn session(&self) -> &AgentSession {
        &self.claim.session
    }

    /// The turn answered `leg`: the conversation's history now ends with that answer. A Run
    /// left waiting for tool results gets its deadline.
    pub(crate) fn finish(mut self, leg: &Leg) {
        self.released = true;
        let at = self
            .prefix
            .map(|prefix| history::extend(prefix, &leg.text, &leg.calls));
        let shared = &self.gateway.inner;
        let tokens = leg
            .usage
            .as_ref()
            .map(|u| u.input_tokens + u.cache_read_tokens + u.cache_write_tokens + u.output_tokens);
        shared
            .conversations
            .release_counted(&self.claim, at, tokens);
        if self.claim.session.is_waiting_for_tools() {
            let gateway = self.gateway.clone();
            let claim = self.claim.ticket();
            let deadline = shared.config.limits.tool_round;
            drop(tokio::spawn(async move {
                tokio::time::sleep(deadline).await;
                if gateway.inner.conversations.expire_round(&claim) {
                    gateway.inner.metrics.round_expired();
                    tracing::info!(
                        conversation = %claim.id,
                        after_s = deadline.as_secs_f64(),
                        "tool round expired: its Run is cancelled; late results rebuild"
                    );
                }
            }));
        }
    }

    /// Counts a failed turn by its classification.
    pub(crate) fn failed(&self, error: &ApiError) {
        self.gateway.inner.metrics.error(error.class());
    }

    /// Logs an exec audit record or a warning of this turn.
    pub(crate) fn side_event(&self, event: &AgentEvent) {
        let id = &self.claim.id;
        match event {
            AgentEvent::Ir(Event::Warning(warning)) => {
                tracing::warn!(conversation = %id, code = ?warning.code, "{}", warning.message);
            }
            AgentEvent::Exec(audit) => {
                tracing::info!(
                    conversation = %id,
                    arm = ?audit.arm,
                    outcome = ?audit.outcome,
                    "Cursor asked for a native exec; answered, nothing ran here"
                );
            }
            _ => {}
        }
    }
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        if !self.released {
            self.gateway.inner.conversations.release(&self.claim, None);
        }
        self.gateway.inner.metrics.run_closed();
    }
}

/// The prefix of every model's Claude Code name: Claude Code lists only ids that start with
/// `claude` (or `anthropic`).
pub(crate) const CLAUDE_PREFIX: &str = "claude-cursor-";

/// A turn that went stale (and rebuilt) after its answer had begun streaming: the client has
/// seen part of an answer the rebuilt conversation does not continue.
pub(crate) fn stale_after_answer() -> ApiError {
    ApiError::from_info(&ErrorInfo::new(
        ErrorKind::Network,
        "the remote conversation went stale after the answer began",
        NextStep::Retry,
    ))
}

pub(crate) fn turn_vanished() -> ApiError {
    ApiError::from_info(&ErrorInfo::new(
        ErrorKind::Network,
        "the turn ended without an answer",
        NextStep::Retry,
    ))
}

/// An id and timestamp for one response.
#[derive(Clone, Debug)]
pub(crate) struct Meta {
    pub(crate) id: String,
    pub(crate) created: u64,
    pub(crate) model: String,
}

impl Meta {
    pub(crate) fn new(prefix: &str, model: &str) -> Self {
        let mut bytes = [0u8; 12];
        let _ = getrandom::fill(&mut bytes);
        let hex = cursor_proto::hex::encode(&bytes);
        Self {
            id: format!("{prefix}-{hex}"),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            model: model.to_owned(),
        }
    }
}

/// What one leg produced, collected.
#[derive(Debug, Default)]
pub(crate) struct Leg {
    pub(crate) text: String,
    pub(crate) thinking: String,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) usage: Option<Usage>,
    pub(crate) stop: Option<StopReason>,
}

impl Leg {
    /// Folds one event in; `Some` for the event that ends the leg with a failure.
    pub(crate) fn absorb(&mut self, event: &Event) -> Option<ApiError> {
        match event {
            Event::TextDelta { text } => self.text.push_str(text),
            Event::ThinkingDelta { text } => self.thinking.push_str(text),
            Event::ToolCall(call) => self.calls.push(call.clone()),
            Event::Usage(usage) => self.usage = Some(*usage),
            // A rebuild after a stale resume starts over: what streamed before is void.
            Event::Reset => *self = Self::default(),
            Event::Done { reason } => self.stop = Some(*reason),
            Event::Error(info) => return Some(ApiError::from_info(info)),
            Event::Aborted => return Some(turn_vanished()),
            _ => {}
        }
        None
    }
}

pub(crate) fn finish_reason(stop: Option<StopReason>) -> &'static str {
    match stop {
        Some(StopReason::ToolUse) => "tool_calls",
        Some(StopReason::Length) => "length",
        _ => "stop",
    }
}

/// Runs one leg to its end and collects it, cut by `clip`; an `Error` or `Aborted` is the
/// leg's failure. A cut cancels the Run and hands the conversation back where it was found
/// (as a client gone does): the client's next request, with the cut text, rebuilds.
pub(crate) async fn collect(
    turn_guard: TurnGuard,
    conversation: &Conversation,
    model: &ModelChoice,
    mut clip: Clip,
) -> Result<(Leg, Option<Cut>), ApiError> {
    let mut turn = turn_guard.session().turn(conversation, model);
    let mut leg = Leg::default();
    while let Some(event) = turn.next().await {
        match &event {
            AgentEvent::Ir(ir) => {
                if let Some(error) = leg.absorb(ir) {
                    turn_guard.failed(&error);
                    return Err(error);
                }
                match ir {
                    Event::Reset => clip.reset(),
                    Event::TextDelta { text } => {
                        if let (_, Some(cut)) = clip.push(text) {
                            leg.text = clip.text().to_owned();
                            return Ok((leg, Some(cut)));
                        }
                    }
                    _ => {}
                }
            }
            other => turn_guard.side_event(other),
        }
    }
    if leg.stop.is_none() {
        let error = turn_vanished();
        turn_guard.failed(&error);
        return Err(error);
    }
    drop(turn);
    turn_guard.finish(&leg);
    Ok((leg, None))
}

/// The messages before the trailing user turn (all of them when the last is not a user message).
fn history_before_turn(messages: &[Message]) -> &[Message] {
    match messages.split_last() {
        Some((Message::User { .. }, history)) => history,
        _ => messages,
    }
}
