//! [`AgentRun`]: the sans-IO state machine of one `agent.v1.AgentService/Run` stream.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;
use cursor_proto::agent::v1::{
    self as wire, AgentClientMessage, AgentServerMessage, McpArgs, McpToolDefinition,
    TurnEndedUpdate, agent_server_message::Message as Server,
    exec_client_message::Message as Reply, interaction_update::Message as Update,
};
use cursor_proto::ir::{
    Conversation, ErrorInfo, Event, StopReason, Tool, ToolCall, ToolResult, Usage,
};
use cursor_transport::CursorError;
use cursor_transport::envelope::{Compression, Decoder, FrameRef};
use prost::Message as _;

use crate::blobs::{BlobId, BlobStore};
use crate::error::outcome_of;
use crate::event::{ExecAudit, ExecOutcome, ResumePoint};
use crate::event_queue::{Delta, EventQueue};
use crate::hot::Hot;
use crate::ids::IdSource;
use crate::intent::Intent;
use crate::policy::{Decision, ExecArm, Refusal, decide};
use crate::redirect::Redirector;
use crate::request::ResumeSeed;
use crate::text_window::TextWindow;
use crate::trace;
use crate::translate::{self, Translation};
use crate::{
    AgentError, AgentEvent, RemoteMissing, RunConfig, StreamOutcome, frames, interaction, mcp,
};
use crate::{ranking, request, usage};

mod exec;
mod input;
mod timers;
mod tool_round;

use timers::WorkDeadline;

/// The sans-IO state machine of one Run: no sockets, no runtime, no clock.
///
/// Methods come in four groups (the quinn-proto shape):
///
/// - getters (`&self`): [`conversation_id`](Self::conversation_id), [`blobs`](Self::blobs),
///   [`checkpoint`](Self::checkpoint), [`is_finished`](Self::is_finished), ...;
/// - handlers for what the network and the clock did, named `handle_*`;
/// - commands from the host: [`submit_tool_results`](Self::submit_tool_results),
///   [`update_tools`](Self::update_tools), [`cancel`](Self::cancel);
/// - pollers for what the caller must do, named `poll_*`.
///
/// After every handler or command, drain [`poll_transmit`](Self::poll_transmit) (write each
/// frame to the stream, in order) and [`poll_event`](Self::poll_event) (hand each event to the
/// host) until both return `None`, then wait until [`poll_timeout`](Self::poll_timeout), the next
/// server frame or the next host command, whichever comes first. Time only moves when the caller
/// passes a later `now`; spurious [`handle_timeout`](Self::handle_timeout) calls are no-ops.
#[derive(Debug)]
pub struct AgentRun {
    config: RunConfig,
    /// `mcp_<provider>_`: the prefix Cursor puts before host tool names.
    prefix: String,
    conversation_id: String,
    blobs: BlobStore,
    /// The tools advertised in the run request (frozen: the protocol has no mid-run update).
    catalog: Vec<Tool>,
    /// The host's live registry; the gate admits it too (tools can register mid-run).
    live_tools: Vec<Tool>,
    definitions: Vec<McpToolDefinition>,
    transmits: VecDeque<AgentClientMessage>,
    events: EventQueue,
    /// Host events that arrive while the host runs tools; released with the next leg.
    deferred: VecDeque<Event>,
    phase: Phase,
    pending: Vec<PendingCall>,
    /// Tool calls the server aborted after they were handed to the host (bounded).
    aborted: VecDeque<String>,
    debounce_at: Option<Instant>,
    work_deadline: Option<WorkDeadline>,
    heartbeat_at: Option<Instant>,
    misses: u32,
    output_tokens: u64,
    server_usage: Option<TurnEndedUpdate>,
    input_estimate: u64,
    /// A failure that happened while the host ran tools; reported as the next leg's end.
    parked_failure: Option<ErrorInfo>,
    /// `turn_ended` arrived while the host ran tools.
    ended_while_parked: bool,
    checkpoint: Option<Vec<u8>>,
    /// When translated execs parked on the host are next kept alive (`ExecClientHeartbeat`).
    exec_heartbeat_at: Option<Instant>,
    /// A resumed run's `conversation_state` as raw bytes (the overlaid checkpoint), spliced
    /// into the run request by [`poll_transmit_bytes`](Self::poll_transmit_bytes).
    raw_state: Option<Vec<u8>>,
    /// Why the run failed, typed, so callers can tell a stale resume from other failures.
    failure: Option<AgentError>,
    /// The response body's Connect envelopes, for [`handle_server_data`](Self::handle_server_data).
    body: Decoder,
    /// How the host has fed the response body so far.
    input: Input,
    /// The served model the server last named (`routed_model`), reported once per change.
    routed_model: Option<String>,
    /// This Run's `tracing` span (see [`span`](Self::span)).
    span: tracing::Span,
}

/// How the host feeds the response body: the drain contract allows one way per Run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Input {
    Unset,
    /// `handle_response_head` came, no bytes yet.
    Head,
    /// Body bytes (`handle_server_data`).
    Data,
    /// Decoded frames (`handle_server_message`, `handle_server_bytes`).
    Frames,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The server is producing the current leg.
    Streaming,
    /// The leg ended with `ToolUse`; the stream stays open until the host's results arrive.
    AwaitingTools,
    /// Done, failed or cancelled: the driver may close the stream.
    Finished,
}

#[derive(Clone, Debug)]
struct PendingCall {
    id: u32,
    exec_id: String,
    tool_call_id: String,
    /// Handed to the host in a finished leg (so its result is due with the next submit).
    yielded: bool,
    /// Set for a translated native exec: how to encode the host's result back.
    translation: Option<Box<Translation>>,
    issued_at: Instant,
    /// The exec's span, open until the host's result is sent.
    span: tracing::Span,
}

impl AgentRun {
    /// Opens a Run for the conversation's last user message, storing its root prompt blobs in a
    /// fresh store. The first [`poll_transmit`](Self::poll_transmit) is the run request.
    pub fn new(
        config: RunConfig,
        conversation: &Conversation,
        now: Instant,
    ) -> Result<Self, AgentError> {
        let blobs = BlobStore::new(&config.limits);
        Self::with_blobs(config, conversation, blobs, now)
    }

    /// Like [`new`](Self::new), but starting from an existing blob store (a resumed
    /// conversation's blobs, which Cursor may still ask for).
    pub fn with_blobs(
        config: RunConfig,
        conversation: &Conversation,
        blobs: BlobStore,
        now: Instant,
    ) -> Result<Self, AgentError> {
        Self::open(config, conversation, blobs, None, false, now)
    }

    /// Opens a Run; `seed` resumes a stored conversation, `reset` first tells the host to drop
    /// what an earlier failed attempt streamed.
    pub(crate) fn open(
        config: RunConfig,
        conversation: &Conversation,
        mut blobs: BlobStore,
        seed: Option<&ResumeSeed>,
        reset: bool,
        now: Instant,
    ) -> Result<Self, AgentError> {
        config.validate()?;
        let mut ids = IdSource::new(config.id_seed.bytes());
        let conversation_id = config
            .conversation_id
            .clone()
            .unwrap_or_else(|| ids.next_uuid());
        let opening = request::build(
            conversation,
            &config,
            &conversation_id,
            &mut ids,
            &mut blobs,
            seed,
        )?;
        let input_estimate = usage::estimate_input(conversation, &opening.rules_text);
        let mut transmits = VecDeque::new();
        transmits.push_back(frames::client(
            wire::agent_client_message::Message::RunRequest(opening.request),
        ));
        let span = trace::run_span(&conversation_id, &config.model, seed.is_some());
        let mut events = EventQueue::default();
        if reset {
            events.push(AgentEvent::Ir(Event::Reset));
        }
        Ok(Self {
            work_deadline: Some(WorkDeadline {
                since: now,
                first_frame: true,
            }),
            heartbeat_at: Some(now + config.timers.heartbeat_interval),
            prefix: config.tool_prefix(),
            config,
            conversation_id,
            blobs,
            catalog: conversation.tools.clone(),
            live_tools: conversation.tools.clone(),
            definitions: opening.definitions,
            transmits,
            events,
            deferred: VecDeque::new(),
            phase: Phase::Streaming,
            pending: Vec::new(),
            aborted: VecDeque::new(),
            debounce_at: None,
            misses: 0,
            output_tokens: 0,
            server_usage: None,
            input_estimate,
            parked_failure: None,
            ended_while_parked: false,
            checkpoint: None,
            exec_heartbeat_at: None,
            raw_state: opening.raw_state,
            failure: None,
            body: Decoder::new(Compression::Identity),
            input: Input::Unset,
            span,
            routed_model: None,
        })
    }

    /// This Run's `tracing` span (`cursor_agent.run`: conversation id, model, whether it
    /// resumed, and its outcome once finished); each exec request opens a child span. The
    /// driver runs under it; a sans-IO caller can enter it around its own I/O.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// The remote conversation id this Run sent (minted when the config had none).
    pub fn conversation_id(&self) -> &str {
        &self.conversation_id
    }

    /// The blob store (root prompt blobs plus whatever the server stored): what a resume handle
    /// persists beside the checkpoint.
    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    /// The latest checkpoint the server sent, if any.
    pub fn checkpoint(&self) -> Option<&[u8]> {
        self.checkpoint.as_deref()
    }

    /// What a resume handle needs, once a checkpoint arrived: the conversation id, the
    /// checkpoint and the blobs (sorted by id).
    pub fn resume_point(&self) -> Option<ResumePoint> {
        let checkpoint = self.checkpoint.clone()?;
        let mut blobs: Vec<(BlobId, Vec<u8>)> = self
            .blobs
            .iter()
            .map(|(id, data)| (*id, data.to_vec()))
            .collect();
        blobs.sort_by_key(|(id, _)| *id);
        Some(ResumePoint {
            conversation_id: self.conversation_id.clone(),
            checkpoint,
            blobs,
        })
    }

    /// Why the run failed, if it did: the typed error behind the [`Event::Error`] the host saw.
    ///
    /// A driver hands the finished run back, so a host can ask
    /// [`AgentError::is_stale_resume`] and let a resume planner rebuild once.
    pub fn failure(&self) -> Option<&AgentError> {
        self.failure.as_ref()
    }

    /// True once the Run is done, failed or cancelled: the driver may close the stream after
    /// draining [`poll_transmit`](Self::poll_transmit). A server that keeps the stream open
    /// after `turn_ended` does not hold the turn open.
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    /// True while the host owes results for tool calls of a finished leg.
    pub fn is_awaiting_tool_results(&self) -> bool {
        self.phase == Phase::AwaitingTools
    }

    /// Requests in this model turn that did not become host tool calls (the loop guard's count).
    pub fn misses(&self) -> u32 {
        self.misses
    }

    /// The next client frame to write, in order, as the protobuf bytes of an
    /// `AgentClientMessage` (wrap it in a Connect envelope). The first one is the run request.
    ///
    /// On a resumed Run the run request's `conversation_state` is the overlaid checkpoint
    /// spliced in byte for byte, so fields of the checkpoint this version does not know reach
    /// the server unchanged (a decoded view would drop them).
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        let frame = self.transmits.pop_front()?;
        if let (Some(raw), Some(wire::agent_client_message::Message::RunRequest(request))) =
            (&self.raw_state, &frame.message)
        {
            return Some(cursor_proto::checkpoint::encode_client_run_request(
                request.clone(),
                raw,
            ));
        }
        Some(frame.encode_to_vec())
    }

    /// The next event for the host.
    ///
    /// Text and thinking deltas that arrive while the last queued event is an undrained delta
    /// of the same kind are appended to it, so a host that drains less often gets fewer,
    /// longer deltas carrying the same text in the same order.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<AgentEvent> {
        self.events.pop()
    }

    /// Replaces the host's live tool registry (tools registered mid-run become callable; the
    /// advertised catalog stays admitted too).
    pub fn update_tools(&mut self, tools: Vec<Tool>) {
        self.live_tools = tools;
    }

    /// The host cancelled: nothing more is written, the leg ends with `Aborted`.
    pub fn cancel(&mut self, _now: Instant) {
        if self.phase == Phase::Finished && self.parked_failure.take().is_none() {
            return;
        }
        self.transmits.clear();
        self.deferred.clear();
        self.events.push(AgentEvent::Ir(Event::Aborted));
        self.phase = Phase::Finished;
        self.span.record("outcome", "cancelled");
    }

    /// Queues a host event, or holds it for the next leg while the host runs tools.
    fn emit(&mut self, event: Event) -> Result<(), AgentError> {
        if self.phase == Phase::AwaitingTools {
            if self.deferred.len() >= self.config.limits.max_deferred_events {
                return Err(AgentError::drift(
                    "server kept streaming while the host ran tools",
                ));
            }
            self.deferred.push_back(event);
        } else {
            self.events.push(AgentEvent::Ir(event));
        }
        Ok(())
    }

    fn finish(&mut self, reason: StopReason) {
        self.push_usage();
        if let Some(point) = self.resume_point() {
            self.events.push(AgentEvent::Resumable(Box::new(point)));
        }
        self.events.push(AgentEvent::Ir(Event::Done { reason }));
        self.phase = Phase::Finished;
        self.span.record("outcome", "done");
    }

    fn push_usage(&mut self) {
        let mut usage = Usage::default();
        let reported = self.server_usage.as_ref();
        let positive = |value: Option<i64>| value.and_then(|v| u64::try_from(v).ok());
        match reported.and_then(|u| positive(u.input_tokens)) {
            Some(input) => usage.input_tokens = input,
            None => {
                usage.input_tokens = self.input_estimate;
                usage.input_estimated = true;
            }
        }
        usage.output_tokens = reported
            .and_then(|u| positive(u.output_tokens))
            .unwrap_or(self.output_tokens);
        if let Some(reported) = reported {
            usage.cache_read_tokens = positive(reported.cache_read_tokens).unwrap_or(0);
            usage.cache_write_tokens = positive(reported.cache_write_tokens).unwrap_or(0);
            usage.reasoning_tokens = positive(reported.reasoning_tokens).unwrap_or(0);
        }
        self.events.push(AgentEvent::Ir(Event::Usage(usage)));
    }

    /// Ends the run with `error`. Nothing more is written. While the host runs tools the leg
    /// already ended, so the failure waits for the host's next call.
    fn fail(&mut self, error: AgentError) {
        let info = ErrorInfo::from(error.clone());
        self.span.record("outcome", info.kind.as_str());
        self.failure = Some(error);
        self.transmits.clear();
        self.deferred.clear();
        if self.phase == Phase::AwaitingTools {
            self.parked_failure = Some(info);
        } else {
            self.events.push(AgentEvent::Ir(Event::Error(info)));
        }
        self.phase = Phase::Finished;
    }
}

/// At most the first 64 bytes of `bytes` as hex, for error messages.
fn hex(bytes: &[u8]) -> String {
    cursor_proto::hex::encode(&bytes[..bytes.len().min(64)])
}
