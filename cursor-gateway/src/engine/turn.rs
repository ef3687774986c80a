//! The life of one turn: admit it, find or start its conversation, run it on the
//! conversation's `AgentSession`, record where the history now ends, and let a waiting tool
//! round expire.

use std::borrow::Cow;
use std::sync::Arc;

use cursor_agent::ir::{Conversation, Event, Message, ToolCall};
use cursor_agent::session::AgentSession;
use cursor_agent::{AgentEvent, HandleRepository as _, HostProfile, Loaded};

use super::admission::{BodyPermit, TurnSlot, conversation_cost};
use super::conversations::{Advance, Claim, Conversations, DiskHits, Persist};
use super::{Engine, Leg, blocking};
use crate::ApiError;
use crate::history::{self, Api, HistoryFp, Scope};
use crate::metrics::{RunKind, RunSink};
use crate::state::index::Splice;

/// Conversations this large are fingerprinted on the blocking pool (hashing takes about a
/// millisecond per megabyte).
const HASH_OFF_RUNTIME: usize = 1 << 20;

impl Engine {
    fn new_session(&self, id: &str, sink: Arc<RunSink>, api: Api) -> AgentSession {
        let shared = &self.inner;
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
            shared.client.clone(),
            shared.agent_origin.clone(),
            Arc::clone(&shared.tokens),
        )
        .profile(profile)
        .workspace_uri(shared.workspace_uri.clone())
        .session_id(id)
        .handles(shared.handles.clone())
        .debug(sink)
        .build()
    }

    /// The fingerprints of every prefix of `conversation` within `scope`, off the async
    /// workers when the conversation is large.
    async fn prefixes(
        scope: &Scope,
        conversation: &Conversation,
    ) -> Result<Vec<HistoryFp>, ApiError> {
        if conversation_cost(conversation) < HASH_OFF_RUNTIME {
            return Ok(history::prefixes(scope, conversation));
        }
        let (scope, conversation) = (scope.clone(), conversation.clone());
        blocking::run(move || history::prefixes(&scope, &conversation)).await
    }

    /// Gives the new conversation `id`, a branch of `parent` (an edited or rewound history),
    /// `parent`'s checkpoint of the turn the history branched at and the turns before it,
    /// nothing of `parent`'s later turns; its Runs resume under a new remote conversation id
    /// (docs/PROTOCOL-AGENT.md §10.1). The copy lives in memory until the branch's first turn
    /// saves its own handle. Without a usable one the branch rebuilds.
    async fn seed_branch(&self, parent: &str, id: &str, conversation: &Conversation) {
        let handles = Arc::clone(&self.inner.handles);
        let parent = parent.to_owned();
        let messages = conversation.messages.clone();
        let copy = blocking::run(move || {
            let Ok(Loaded::Found(stored)) = handles.load(&parent) else {
                return None;
            };
            let completed =
                cursor_agent::Fingerprint::of_user_turns(history_before_turn(&messages));
            stored.branch_at(&completed, &messages)
        })
        .await;
        if let Ok(Some(copy)) = copy {
            self.inner.handles.seed(id, copy);
        }
    }

    /// What the index on disk knows of `prefixes`, when memory does not know where the
    /// conversation continues (read on the blocking pool).
    async fn disk_hits(
        &self,
        prefixes: &[HistoryFp],
        conversation: &Conversation,
    ) -> Result<DiskHits, ApiError> {
        let conversations = &self.inner.conversations;
        if conversations.knows(prefixes) || !answered_before(conversation) {
            return Ok(DiskHits::default());
        }
        let index = conversations.index().clone();
        let lookups = prefixes.to_vec();
        blocking::run(move || Conversations::look_up(&index, &lookups)).await
    }

    /// Tokens in `conversation` as Cursor counted them for the longest stored history it
    /// continues, plus an estimate of what came after; a whole estimate when nothing is known.
    pub(crate) async fn count_tokens(
        &self,
        scope: &Scope,
        conversation: &Conversation,
    ) -> Result<u64, ApiError> {
        let prefixes = Self::prefixes(scope, conversation).await?;
        let conversations = &self.inner.conversations;
        let disk = self.disk_hits(&prefixes, conversation).await?;
        let Some((unit, known)) = conversations.counted(&prefixes, &disk) else {
            return Ok(super::estimate::estimate_tokens(conversation));
        };
        let ends = history::unit_ends(&conversation.messages);
        let mut rest = Conversation::new("");
        rest.messages = conversation.messages[ends[unit]..].to_vec();
        Ok(known.saturating_add(super::estimate::estimate_tokens(&rest)))
    }

    /// Admits a turn of `scope` and takes the conversation `conversation` continues. Over a
    /// turn cap it is a 503 (gateway) or 429 (key) at once, never a wait.
    pub(crate) async fn begin(
        &self,
        scope: &Scope,
        conversation: &Conversation,
        permit: BodyPermit,
    ) -> Result<TurnGuard, ApiError> {
        let slot = self.inner.admission.turn_slot(&scope.namespace)?;
        let prefixes = Self::prefixes(scope, conversation).await?;
        let conversations = &self.inner.conversations;
        let disk = self.disk_hits(&prefixes, conversation).await?;
        let api = scope.api;
        let claim = conversations.claim(
            &scope.namespace,
            &prefixes,
            disk,
            |id, sink| self.new_session(id, sink, api),
            || RunSink::new(Arc::clone(&self.inner.metrics)),
        );
        let metrics = &self.inner.metrics;
        metrics.run_opened();
        let guard = TurnGuard {
            engine: self.clone(),
            claim,
            namespace: scope.namespace.clone(),
            prefix: prefixes.last().copied(),
            client_len: conversation.messages.len(),
            _slot: slot,
            _permit: permit,
            released: false,
        };
        if let Some(parent) = guard.claim.branched_from.clone() {
            self.seed_branch(&parent, &guard.claim.id, conversation)
                .await;
        }
        let continues = guard.claim.session.is_waiting_for_tools()
            && matches!(conversation.messages.last(), Some(Message::ToolResult(_)));
        if continues {
            metrics.run(RunKind::Continue);
        } else {
            let earlier_turns = conversation
                .messages
                .iter()
                .any(|m| matches!(m, Message::Assistant { .. }));
            guard.claim.sink.expect_fresh(!earlier_turns);
        }
        tracing::debug!(
            conversation = %guard.claim.id,
            found = guard.claim.found,
            branched_from = guard.claim.branched_from.as_deref(),
            continues,
            "turn"
        );
        Ok(guard)
    }
}

/// A turn in progress: holds its conversation, a turn slot and the request's share of the body
/// budget. [`finish`](Self::finish) records where the conversation's history now ends; dropped
/// unfinished (a failure, a client gone), the conversation is handed back where it was found,
/// and a branch's seeded handle is forgotten.
pub(crate) struct TurnGuard {
    engine: Engine,
    claim: Claim,
    namespace: String,
    /// The fingerprint of the request's whole history.
    prefix: Option<HistoryFp>,
    /// How many messages the client's history has.
    client_len: usize,
    _slot: TurnSlot,
    _permit: BodyPermit,
    released: bool,
}

impl TurnGuard {
    pub(crate) fn session(&self) -> &AgentSession {
        &self.claim.session
    }

    /// The transcript the remote conversation holds for `conversation` (the client's): with
    /// the exchanges the client never saw put back where they happened.
    pub(crate) fn agent_view<'a>(&self, conversation: &'a Conversation) -> Cow<'a, Conversation> {
        if self.claim.splices.is_empty() {
            return Cow::Borrowed(conversation);
        }
        let mut view = conversation.clone();
        let mut splices: Vec<&Splice> = self.claim.splices.iter().collect();
        splices.sort_by_key(|splice| std::cmp::Reverse(splice.at));
        for splice in splices {
            if splice.at <= view.messages.len() {
                let tail = view.messages.split_off(splice.at);
                view.messages.extend(splice.messages.iter().cloned());
                view.messages.extend(tail);
            }
        }
        Cow::Owned(view)
    }

    /// The turn answered `leg`, and the client saw `text` and `calls` of it: the conversation's
    /// history now ends there (with `hidden`, an exchange the client did not see, spliced in
    /// before the answer). The record is written before this returns, so the client's next
    /// request finds it from any process. A Run left waiting for tool results gets its
    /// deadline, and the key's parked rounds are held to their caps.
    pub(crate) async fn finish(
        mut self,
        leg: &Leg,
        text: &str,
        calls: &[ToolCall],
        hidden: Option<Vec<Message>>,
    ) {
        self.released = true;
        let at = self
            .prefix
            .map(|prefix| history::extend(prefix, text, calls));
        let tokens = leg.usage.as_ref().map(super::turn_request::total_tokens);
        let advance = at.map(|at| Advance {
            at,
            tokens,
            splice: hidden.map(|messages| Splice {
                at: self.client_len,
                messages,
            }),
        });
        let shared = &self.engine.inner;
        if let Some(Persist {
            id,
            record,
            dropped,
        }) = shared.conversations.release(&self.claim, advance)
        {
            shared.writer.save(id, record, dropped).await;
        }
        if self.claim.session.is_waiting_for_tools() {
            shared
                .conversations
                .enforce_parked_caps(&self.claim, &self.namespace);
            let engine = self.engine.clone();
            let ticket = self.claim.ticket();
            let deadline = shared.limits.tool_round;
            drop(tokio::spawn(async move {
                tokio::time::sleep(deadline).await;
                if engine.inner.conversations.expire_round(&ticket) {
                    engine.inner.metrics.round_expired();
                    tracing::info!(
                        conversation = %ticket.id,
                        after_s = deadline.as_secs_f64(),
                        "tool round expired: its Run is cancelled; late results rebuild"
                    );
                }
            }));
        }
    }

    /// Counts a failed turn by its classification.
    pub(crate) fn failed(&self, error: &ApiError) {
        self.engine.inner.metrics.error(error.class());
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
        let shared = &self.engine.inner;
        if !self.released {
            shared.conversations.release(&self.claim, None);
            if self.claim.branched_from.is_some() {
                // The branch never completed a turn: its seeded handle goes with it.
                shared.handles.unseed(&self.claim.id);
            }
        }
        shared.metrics.run_closed();
    }
}

/// Whether `conversation` holds an earlier answer: a turn of a stored conversation ends after
/// an answer, so a history without one continues nothing stored and is not looked up on disk.
fn answered_before(conversation: &Conversation) -> bool {
    conversation
        .messages
        .iter()
        .any(|m| matches!(m, Message::Assistant { .. }))
}

/// The messages before the trailing user turn (all of them when the last is not a user message).
fn history_before_turn(messages: &[Message]) -> &[Message] {
    match messages.split_last() {
        Some((Message::User { .. }, history)) => history,
        _ => messages,
    }
}
