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
use crate::{AgentError, AgentEvent, RunConfig, StreamOutcome, frames, interaction, mcp};
use crate::{ranking, request, usage};

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

/// The idle watchdog: armed at `since` (the last work, or a leg's start). Its deadline is
/// computed when polled, so marking work on every frame is one store.
#[derive(Clone, Copy, Debug)]
struct WorkDeadline {
    since: Instant,
    first_frame: bool,
}

impl WorkDeadline {
    fn waits(self, timers: &crate::Timers) -> std::time::Duration {
        if self.first_frame {
            timers.first_frame_timeout
        } else {
            timers.idle_timeout
        }
    }

    fn at(self, timers: &crate::Timers) -> Instant {
        self.since + self.waits(timers)
    }
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

    // ---- getters ----------------------------------------------------------------------------

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

    // ---- pollers ----------------------------------------------------------------------------

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

    /// When [`handle_timeout`](Self::handle_timeout) must be called next; `None` once finished.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.phase == Phase::Finished {
            return None;
        }
        let debounce = self.debounce_at.filter(|_| self.phase == Phase::Streaming);
        [
            debounce,
            self.work_deadline.map(|d| d.at(&self.config.timers)),
            self.heartbeat_at,
            self.exec_heartbeat_at,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    // ---- handlers ---------------------------------------------------------------------------

    /// One decoded server frame.
    ///
    /// A Run takes body bytes ([`handle_server_data`](Self::handle_server_data)) or frames,
    /// never both: frames after body bytes fail the Run as [`AgentError::HostMisuse`].
    pub fn handle_server_message(&mut self, message: AgentServerMessage, now: Instant) {
        if self.admit(Input::Frames) {
            self.on_message(message, now);
        }
    }

    fn on_message(&mut self, message: AgentServerMessage, now: Instant) {
        if self.phase == Phase::Finished {
            return;
        }
        if let Err(error) = self.dispatch(message, now) {
            self.fail(error);
        }
    }

    /// One server frame's protobuf bytes (an undecodable frame is protocol drift).
    ///
    /// Frames after body bytes fail the Run as [`AgentError::HostMisuse`], as for
    /// [`handle_server_message`](Self::handle_server_message).
    pub fn handle_server_bytes(&mut self, bytes: &[u8], now: Instant) {
        if self.admit(Input::Frames) {
            self.on_bytes(bytes, now);
        }
    }

    /// Checks the host feeds the body one way only (the drain contract); a misuse fails the
    /// Run with a host-bug error instead of mixing two framings of one stream.
    fn admit(&mut self, input: Input) -> bool {
        let misuse = match (self.input, input) {
            (Input::Data, Input::Frames) => Some("frames after body bytes (feed one or the other)"),
            (Input::Frames, Input::Data) => Some("body bytes after frames (feed one or the other)"),
            (Input::Data, Input::Head) => Some("the response head after body bytes"),
            _ => None,
        };
        if let Some(what) = misuse {
            if self.phase != Phase::Finished {
                self.fail(AgentError::HostMisuse(what));
            }
            return false;
        }
        if input != Input::Head || self.input == Input::Unset {
            self.input = input;
        }
        true
    }

    fn on_bytes(&mut self, bytes: &[u8], now: Instant) {
        if self.phase == Phase::Finished {
            return;
        }
        // The commonest frame, a bare text or thinking delta, is matched byte for byte here
        // (inlined); the other frequent arms skip prost's generic decode; prost decodes the rest.
        if let Some((kind, text)) = crate::hot::bare_delta(bytes)
            && self.phase == Phase::Streaming
        {
            self.stream_delta(kind, text, now);
            return;
        }
        if let Some(frame) = crate::hot::decode_general(bytes) {
            if let Err(error) = self.on_hot(frame.arm, now) {
                self.fail(error);
            }
            return;
        }
        match AgentServerMessage::decode(bytes) {
            Ok(message) => self.on_message(message, now),
            Err(error) => self.fail(error.into()),
        }
    }

    /// The response head, for [`handle_server_data`]: the body's `connect-content-encoding`
    /// (compressed frames are inflated with it) and the largest message to accept. Call it
    /// before the body's first bytes; without it frames must be uncompressed and at most
    /// [`DEFAULT_MAX_MESSAGE_SIZE`](cursor_transport::envelope::DEFAULT_MAX_MESSAGE_SIZE).
    ///
    /// [`handle_server_data`]: Self::handle_server_data
    ///
    /// After body bytes it fails the Run as [`AgentError::HostMisuse`] (the bytes were already
    /// read under the defaults).
    pub fn handle_response_head(&mut self, compression: Compression, max_message_size: usize) {
        if self.admit(Input::Head) {
            self.body = Decoder::new(compression).with_max_message_size(max_message_size);
        }
    }

    /// Bytes of the response body as they arrive, in any chunking (HTTP/2 DATA frames as
    /// they come): the Run takes the Connect envelopes apart itself, handles every whole
    /// frame, and ends the stream at the end-of-stream frame as
    /// [`handle_end_of_stream`](Self::handle_end_of_stream) would with the outcome it carries.
    ///
    /// This is the fast way in: deltas inside one chunk are sliced out of it as text that was
    /// validated once for the whole chunk, with SIMD. Feed a Run either body bytes or frames
    /// ([`handle_server_bytes`](Self::handle_server_bytes),
    /// [`handle_server_message`](Self::handle_server_message)), not both. A malformed
    /// envelope fails the Run as protocol drift. When the body ends, call
    /// `handle_end_of_stream` with how it ended (a no-op after the end-of-stream frame).
    ///
    /// ```
    /// # use cursor_agent::{AgentRun, RunConfig, IdSeed};
    /// # use cursor_proto::ir::{Conversation, Message};
    /// use cursor_transport::envelope::{Compression, Encoder};
    /// # let now = std::time::Instant::now();
    /// # let config = RunConfig::new("m", "file:///w", IdSeed::fixed([1; 16]));
    /// # let conversation = Conversation::new("c").with_message(Message::user_text("hi"));
    /// let mut run = AgentRun::new(config, &conversation, now)?;
    /// // interaction_update.text_delta "hi", enveloped, arriving in two pieces.
    /// let wire = Encoder::new(Compression::Identity).encode_to_bytes(&[0x0a, 6, 0x0a, 4, 0x0a, 2, b'h', b'i'])?;
    /// run.handle_server_data(wire.slice(..3), now);
    /// run.handle_server_data(wire.slice(3..), now);
    /// let texts: Vec<_> = std::iter::from_fn(|| run.poll_event()).collect();
    /// assert!(format!("{texts:?}").contains("TextDelta { text: \"hi\" }"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle_server_data(&mut self, data: Bytes, now: Instant) {
        if self.phase == Phase::Finished || !self.admit(Input::Data) {
            return;
        }
        // The decoder leaves `self` while its frames are lent, so handlers can borrow `self`.
        let mut body = std::mem::replace(&mut self.body, Decoder::new(Compression::Identity));
        body.push_bytes(data.clone());
        let mut window = TextWindow::new(&data);
        while self.phase != Phase::Finished {
            match body.next_frame_ref() {
                Ok(None) => break,
                Ok(Some(FrameRef::Message(frame))) => self.on_frame(frame, &mut window, now),
                Ok(Some(FrameRef::End(end))) => {
                    let outcome = match end.error {
                        None => StreamOutcome::Ok,
                        Some(error) => outcome_of(&CursorError::connect(error, None)),
                    };
                    self.handle_end_of_stream(outcome, now);
                    break;
                }
                Err(error) => {
                    self.handle_end_of_stream(outcome_of(&CursorError::from(error)), now);
                    break;
                }
            }
        }
        self.body = body;
    }

    /// One whole frame of [`handle_server_data`](Self::handle_server_data): a bare delta whose
    /// text the chunk's window knows is valid goes straight to the queue.
    #[inline]
    fn on_frame(&mut self, frame: &[u8], window: &mut TextWindow<'_>, now: Instant) {
        if let Some((kind, text)) = crate::hot::bare_delta_bytes(frame)
            && self.phase == Phase::Streaming
            && let Some(text) = window.str_of(text)
        {
            self.stream_delta(kind, text, now);
            return;
        }
        self.on_bytes(frame, now);
    }

    /// What `on_delta` does with a delta while streaming, without its layers (the hot path).
    #[inline(always)]
    fn stream_delta(&mut self, kind: Delta, text: &str, now: Instant) {
        self.work_deadline = Some(WorkDeadline {
            since: now,
            first_frame: false,
        });
        self.events.push_delta(kind, text);
    }

    /// The server side of the stream ended. Before `turn_ended` that is a failure: the
    /// outcome's error when it carries one, a network error otherwise.
    pub fn handle_end_of_stream(&mut self, outcome: StreamOutcome, _now: Instant) {
        if self.phase == Phase::Finished {
            return;
        }
        self.fail(match outcome {
            StreamOutcome::Ok => AgentError::StreamEndedEarly,
            // The remote conversation is gone: a resumed run must rebuild (§10).
            StreamOutcome::NotFound(info) if self.config.resume => AgentError::StaleResume {
                id_hex: format!("conversation {}: {}", self.conversation_id, info.message),
            },
            StreamOutcome::Err(info) | StreamOutcome::NotFound(info) => AgentError::Remote(info),
        });
    }

    /// Time passed: ends a debounced tool-call burst, fires the idle watchdog, sends heartbeats.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.phase == Phase::Finished {
            return;
        }
        if self.phase == Phase::Streaming
            && self.debounce_at.is_some_and(|at| now >= at)
            && !self.pending.is_empty()
        {
            self.yield_tool_use();
        }
        let timers = &self.config.timers;
        if let Some(deadline) = self.work_deadline.filter(|d| now >= d.at(timers)) {
            self.fail(AgentError::Idle {
                waited: deadline.waits(timers),
                first_frame: deadline.first_frame,
            });
            return;
        }
        if self.heartbeat_at.is_some_and(|at| now >= at) {
            self.transmits.push_back(frames::heartbeat());
            self.heartbeat_at = Some(now + self.config.timers.heartbeat_interval);
        }
        if self.exec_heartbeat_at.is_some_and(|at| now >= at) {
            let parked: Vec<u32> = self
                .pending
                .iter()
                .filter(|p| p.translation.is_some())
                .map(|p| p.id)
                .collect();
            for id in &parked {
                self.transmits.push_back(frames::exec_heartbeat(*id));
            }
            self.exec_heartbeat_at =
                (!parked.is_empty()).then(|| now + self.config.timers.exec_heartbeat_interval);
        }
    }

    // ---- host commands ----------------------------------------------------------------------

    /// The host's results for the tool calls of the leg that ended with `ToolUse`. Writes one
    /// `mcp_result` plus `stream_close` per call on the same stream (a call the host returned
    /// nothing for gets an error result), starts the next leg and re-arms the first-frame
    /// watchdog.
    ///
    /// Fails without changing anything when the run is not waiting for results or a result
    /// names a call it never issued. If the stream failed while the host ran its tools, that
    /// failure is reported now, as the new leg's end.
    pub fn submit_tool_results(
        &mut self,
        results: Vec<ToolResult>,
        now: Instant,
    ) -> Result<(), AgentError> {
        if self.phase == Phase::Finished {
            let info = self
                .parked_failure
                .take()
                .ok_or(AgentError::NotAwaitingTools)?;
            self.events.push(AgentEvent::Ir(Event::Error(info)));
            return Ok(());
        }
        if self.phase != Phase::AwaitingTools {
            return Err(AgentError::NotAwaitingTools);
        }
        for result in &results {
            let issued = self
                .pending
                .iter()
                .any(|p| p.yielded && p.tool_call_id == result.tool_call_id)
                || self.aborted.contains(&result.tool_call_id);
            if !issued {
                return Err(AgentError::UnknownToolResult {
                    tool_call_id: result.tool_call_id.clone(),
                });
            }
        }
        let (answered, still_pending): (Vec<PendingCall>, Vec<PendingCall>) =
            std::mem::take(&mut self.pending)
                .into_iter()
                .partition(|p| p.yielded);
        self.pending = still_pending;
        let root = translate::workspace_root(&self.config.workspace_uris);
        for call in answered {
            let result = results.iter().find(|r| r.tool_call_id == call.tool_call_id);
            call.span.record("answered", result.is_some());
            if let Some(translation) = &call.translation {
                let replies = match result {
                    Some(result) => {
                        self.input_estimate += usage::estimate_result(result);
                        let elapsed = now.saturating_duration_since(call.issued_at);
                        let cap = mcp::TextCap::of(&self.config);
                        translation.encode(result, elapsed, &root, &cap)
                    }
                    None => translation.encode_missing(&root, &self.config.profile.display_name),
                };
                for reply in replies {
                    self.transmits
                        .push_back(frames::exec_reply(call.id, &call.exec_id, reply));
                }
                self.transmits.push_back(frames::stream_close(call.id));
                continue;
            }
            let encoded = match result {
                Some(result) => {
                    self.input_estimate += usage::estimate_result(result);
                    mcp::success(
                        result,
                        &self.config.limits,
                        &self.config.profile.display_name,
                    )
                }
                None => mcp::missing_result(&self.config.profile.display_name),
            };
            self.transmits.push_back(frames::exec_reply(
                call.id,
                &call.exec_id,
                Reply::McpResult(encoded),
            ));
            self.transmits.push_back(frames::stream_close(call.id));
        }
        self.aborted.clear();
        if !self.pending.iter().any(|p| p.translation.is_some()) {
            self.exec_heartbeat_at = None;
        }
        self.phase = Phase::Streaming;
        self.output_tokens = 0;
        self.server_usage = None;
        self.work_deadline = Some(WorkDeadline {
            since: now,
            first_frame: true,
        });
        for event in self.deferred.drain(..) {
            self.events.push(AgentEvent::Ir(event));
        }
        if !self.pending.is_empty() {
            self.debounce_at = Some(now + self.config.timers.tool_call_debounce);
        } else if std::mem::take(&mut self.ended_while_parked) {
            self.finish(StopReason::Stop);
        }
        self.ended_while_parked = false;
        Ok(())
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

    // ---- internals --------------------------------------------------------------------------

    fn dispatch(&mut self, message: AgentServerMessage, now: Instant) -> Result<(), AgentError> {
        match message.message {
            // A frame carrying only `ttft_breakdown` (beside the oneof) is ignored (§4).
            None if message.ttft_breakdown.is_some() => Ok(()),
            None => Err(AgentError::drift(
                "server frame with an unknown or empty arm",
            )),
            Some(Server::InteractionUpdate(update)) => self.on_update(update.message, now),
            Some(Server::ExecServerMessage(exec)) => {
                self.work(now);
                self.on_exec(exec, now)
            }
            Some(Server::ConversationCheckpointUpdate(bytes)) => {
                self.checkpoint = Some(bytes.clone());
                self.events.push(AgentEvent::Checkpoint(bytes));
                Ok(())
            }
            Some(Server::KvServerMessage(kv)) => {
                self.work(now);
                self.on_kv(kv)
            }
            Some(Server::ExecServerControlMessage(control)) => self.on_exec_control(control),
            Some(Server::InteractionQuery(query)) => {
                self.work(now);
                let answer = interaction::answer(query.query, &self.config.profile.display_name)?;
                self.transmits
                    .push_back(frames::interaction(query.id, answer));
                Ok(())
            }
        }
    }

    /// A work frame arrived: the idle watchdog restarts (heartbeats never call this).
    #[inline]
    fn work(&mut self, now: Instant) {
        if self.phase == Phase::Streaming {
            self.work_deadline = Some(WorkDeadline {
                since: now,
                first_frame: false,
            });
        }
    }

    fn on_update(&mut self, update: Option<Update>, now: Instant) -> Result<(), AgentError> {
        match update {
            Some(Update::TextDelta(delta)) => self.on_delta(Delta::Text, delta.text, now),
            Some(Update::ThinkingDelta(delta)) => self.on_delta(Delta::Thinking, delta.text, now),
            Some(Update::TokenDelta(delta)) => {
                self.on_tokens(delta.tokens);
                Ok(())
            }
            Some(Update::TurnEnded(ended)) => {
                self.on_turn_ended(ended);
                Ok(())
            }
            // The model that actually served the turn (field-reports §2); reported once per
            // change, and never when the server names none.
            Some(Update::RoutedModel(routed)) => {
                if routed.display_name.is_empty()
                    || self.routed_model.as_deref() == Some(routed.display_name.as_str())
                {
                    return Ok(());
                }
                self.routed_model = Some(routed.display_name.clone());
                self.emit(Event::ModelResolved {
                    model: routed.display_name,
                })
            }
            // Liveness, informational and unknown update arms are ignored (§4.1); heartbeats
            // are explicitly not work.
            _ => Ok(()),
        }
    }

    /// The hot decoder's frames, handled exactly as `dispatch` handles their prost form.
    #[inline]
    fn on_hot(&mut self, frame: Hot<'_>, now: Instant) -> Result<(), AgentError> {
        match frame {
            Hot::Text(text) => self.on_delta(Delta::Text, text, now),
            Hot::Thinking(text) => self.on_delta(Delta::Thinking, text, now),
            Hot::Tokens(tokens) => {
                self.on_tokens(tokens);
                Ok(())
            }
            Hot::TurnEnded(ended) => {
                self.on_turn_ended(*ended);
                Ok(())
            }
            Hot::Kv(kv) => {
                self.work(now);
                self.on_kv(*kv)
            }
            Hot::Heartbeat | Hot::NoArm => Ok(()),
        }
    }

    /// A text or thinking delta: work (the idle watchdog restarts), then queued.
    #[inline]
    fn on_delta<T: AsRef<str> + Into<String>>(
        &mut self,
        kind: Delta,
        text: T,
        now: Instant,
    ) -> Result<(), AgentError> {
        self.work(now);
        self.emit_delta(kind, text)
    }

    /// A text or thinking delta. While the host has not yet polled the delta of the same
    /// kind queued last, this one extends it: a host polling after every frame sees every
    /// delta, one that polls later sees fewer, longer deltas with the same text, and no
    /// string is allocated per frame. Deltas parked while the host runs tools stay one per
    /// frame (their count is what `max_deferred_events` bounds).
    #[inline]
    fn emit_delta<T: AsRef<str> + Into<String>>(
        &mut self,
        kind: Delta,
        text: T,
    ) -> Result<(), AgentError> {
        if self.phase != Phase::AwaitingTools {
            self.events.push_delta(kind, text.as_ref());
            return Ok(());
        }
        let text = text.into();
        self.emit(match kind {
            Delta::Text => Event::TextDelta { text },
            Delta::Thinking => Event::ThinkingDelta { text },
        })
    }

    fn on_tokens(&mut self, tokens: i32) {
        self.output_tokens += u64::try_from(tokens).unwrap_or(0);
    }

    fn on_turn_ended(&mut self, ended: TurnEndedUpdate) {
        self.server_usage = Some(ended);
        if !self.pending.is_empty() {
            // Not terminal while a host tool call is pending: the debounce ends the leg.
            return;
        }
        match self.phase {
            Phase::Streaming => self.finish(StopReason::Stop),
            Phase::AwaitingTools => self.ended_while_parked = true,
            Phase::Finished => {}
        }
    }

    fn on_exec(&mut self, exec: wire::ExecServerMessage, now: Instant) -> Result<(), AgentError> {
        let id = exec.id;
        if self.pending.iter().any(|p| p.id == id) {
            return Err(AgentError::drift(format!(
                "exec id {id} reused while pending"
            )));
        }
        let (arm, decision) = decide(exec.message);
        let exec_id = exec.exec_id;
        match decision {
            // Native translation: a host tool call when a host tool can serve the request,
            // the typed refusal otherwise (§5.1).
            Decision::Translate { native, refusal } => {
                match translate::plan(&native, &self.live_tools) {
                    Some(translation) => self.translate(id, exec_id, arm, translation, now),
                    None => self.refuse(id, &exec_id, arm, refusal, &native.intent()),
                }
            }
            Decision::Refuse { refusal, intent } => {
                self.refuse(id, &exec_id, arm, refusal, &intent)
            }
            Decision::Throw { intent } => self.throw(id, arm, &intent),
            Decision::ReportContext => {
                self.transmits.push_back(frames::exec_reply(
                    id,
                    &exec_id,
                    Reply::RequestContextResult(self.request_context()),
                ));
                self.transmits.push_back(frames::stream_close(id));
                self.audit(id, arm, ExecOutcome::ContextReported);
                Ok(())
            }
            Decision::ReportMcpState(args) => {
                let (result, servers, tools) =
                    mcp::state(&args, &self.config.profile, &self.definitions);
                self.transmits.push_back(frames::exec_reply(
                    id,
                    &exec_id,
                    Reply::McpStateExecResult(result),
                ));
                self.transmits.push_back(frames::stream_close(id));
                self.audit(id, arm, ExecOutcome::McpStateReported { servers, tools });
                Ok(())
            }
            Decision::Lift(args) => self.lift(id, exec_id, &args, now),
        }
    }

    fn refuse(
        &mut self,
        id: u32,
        exec_id: &str,
        arm: ExecArm,
        refusal: Refusal,
        intent: &Intent,
    ) -> Result<(), AgentError> {
        let hardened = self.miss()?;
        let reason = self.redirector().text(arm.native_name(), intent, hardened);
        self.transmits
            .push_back(frames::exec_reply(id, exec_id, refusal.reply(reason)));
        self.transmits.push_back(frames::stream_close(id));
        self.audit(id, arm, ExecOutcome::Refused);
        Ok(())
    }

    fn throw(&mut self, id: u32, arm: ExecArm, intent: &Intent) -> Result<(), AgentError> {
        let hardened = self.miss()?;
        let reason = self.redirector().text(arm.native_name(), intent, hardened);
        self.transmits.push_back(frames::throw(id, reason));
        self.transmits.push_back(frames::stream_close(id));
        self.audit(id, arm, ExecOutcome::Thrown);
        Ok(())
    }

    fn lift(
        &mut self,
        id: u32,
        exec_id: String,
        args: &McpArgs,
        now: Instant,
    ) -> Result<(), AgentError> {
        let name = mcp::requested_name(args, &self.prefix).to_owned();
        let registered = |tools: &[Tool]| tools.iter().any(|tool| tool.name == name);
        let admitted = !mcp::foreign_provider(args, &self.config.profile.provider_identifier)
            && (registered(&self.catalog) || registered(&self.live_tools));
        if !admitted {
            self.miss()?;
            let available = ranking::rank_by_shared_words(&self.live_tools, &name);
            self.transmits.push_back(frames::exec_reply(
                id,
                &exec_id,
                Reply::McpResult(mcp::not_found(&name, available)),
            ));
            self.transmits.push_back(frames::stream_close(id));
            self.audit(id, ExecArm::Mcp, ExecOutcome::ToolNotFound { name });
            return Ok(());
        }
        if self.pending.len() >= self.config.limits.max_pending_tool_calls {
            return Err(AgentError::drift(
                "more concurrent tool calls than the run allows",
            ));
        }
        // The model did the right thing: the loop guard starts over.
        self.misses = 0;
        let call = mcp::tool_call(args, &name, format!("exec-{id}"));
        let span = self.audit(
            id,
            ExecArm::Mcp,
            ExecOutcome::HostToolCall {
                tool_call_id: call.id.clone(),
            },
        );
        self.pending.push(PendingCall {
            id,
            exec_id,
            tool_call_id: call.id.clone(),
            yielded: false,
            translation: None,
            issued_at: now,
            span,
        });
        self.emit(Event::ToolCall(call))?;
        if self.phase == Phase::Streaming {
            self.debounce_at = Some(now + self.config.timers.tool_call_debounce);
        }
        Ok(())
    }

    /// Hands a translated native request to the host as an ordinary tool call; its result is
    /// encoded back into the native shape, and heartbeats keep the exec alive meanwhile.
    fn translate(
        &mut self,
        id: u32,
        exec_id: String,
        arm: ExecArm,
        translation: Translation,
        now: Instant,
    ) -> Result<(), AgentError> {
        if self.pending.len() >= self.config.limits.max_pending_tool_calls {
            return Err(AgentError::drift(
                "more concurrent tool calls than the run allows",
            ));
        }
        // A real host tool call, like an MCP lift: the loop guard starts over.
        self.misses = 0;
        let call = ToolCall::new(
            format!("exec-{id}"),
            translation.tool.clone(),
            translation.arguments.clone(),
        );
        let span = self.audit(
            id,
            arm,
            ExecOutcome::Translated {
                tool_call_id: call.id.clone(),
                tool: translation.tool.clone(),
            },
        );
        self.pending.push(PendingCall {
            id,
            exec_id,
            tool_call_id: call.id.clone(),
            yielded: false,
            translation: Some(Box::new(translation)),
            issued_at: now,
            span,
        });
        if self.exec_heartbeat_at.is_none() {
            self.exec_heartbeat_at = Some(now + self.config.timers.exec_heartbeat_interval);
        }
        self.emit(Event::ToolCall(call))?;
        if self.phase == Phase::Streaming {
            self.debounce_at = Some(now + self.config.timers.tool_call_debounce);
        }
        Ok(())
    }

    fn on_kv(&mut self, kv: wire::KvServerMessage) -> Result<(), AgentError> {
        use wire::kv_server_message::Message as Kv;
        match kv.message {
            Some(Kv::GetBlobArgs(get)) => {
                let found = BlobId::from_slice(&get.blob_id).and_then(|id| self.blobs.get(&id));
                let Some(data) = found else {
                    // Never answered with empty data: that would read as an empty blob.
                    let id_hex = hex(&get.blob_id);
                    return Err(if self.config.resume {
                        AgentError::StaleResume { id_hex }
                    } else {
                        AgentError::BlobMiss { id_hex }
                    });
                };
                self.transmits.push_back(frames::blob(kv.id, data.to_vec()));
                Ok(())
            }
            Some(Kv::SetBlobArgs(set)) => {
                // A set without data is a dedup reference: acknowledge, store nothing (§5.1).
                if let Some(data) = set.blob_data {
                    let id = BlobId::from_slice(&set.blob_id)
                        .ok_or_else(|| AgentError::drift("blob id is not 32 bytes"))?;
                    self.blobs.insert_with_id(id, data)?;
                }
                self.transmits.push_back(frames::blob_stored(kv.id));
                Ok(())
            }
            None => Err(AgentError::drift("unknown kv request arm")),
        }
    }

    fn on_exec_control(
        &mut self,
        control: wire::ExecServerControlMessage,
    ) -> Result<(), AgentError> {
        match control.message {
            Some(wire::exec_server_control_message::Message::Abort(abort)) => {
                if let Some(index) = self.pending.iter().position(|p| p.id == abort.id) {
                    let call = self.pending.remove(index);
                    if self.aborted.len() >= self.config.limits.max_pending_tool_calls {
                        self.aborted.pop_front();
                    }
                    self.aborted.push_back(call.tool_call_id);
                    if self.pending.is_empty() {
                        self.debounce_at = None;
                    }
                }
                Ok(())
            }
            None => Err(AgentError::drift("unknown exec control arm")),
        }
    }

    fn request_context(&self) -> wire::RequestContextResult {
        wire::RequestContextResult {
            result: Some(wire::request_context_result::Result::Success(
                wire::RequestContextSuccess {
                    request_context: Some(wire::RequestContext {
                        env: Some(wire::RequestContextEnv {
                            workspace_paths: self.config.workspace_uris.clone(),
                            ..wire::RequestContextEnv::default()
                        }),
                        tools: self.definitions.clone(),
                    }),
                },
            )),
        }
    }

    /// Counts one unproductive request. Returns whether texts must harden; at the budget the
    /// run fails closed.
    fn miss(&mut self) -> Result<bool, AgentError> {
        self.misses = self.misses.saturating_add(1);
        let limits = &self.config.limits;
        if self.misses >= limits.miss_budget {
            return Err(AgentError::LoopGuard {
                misses: self.misses,
                suggested_tool: self.redirector().command_tool(),
            });
        }
        Ok(self.misses >= limits.escalate_after)
    }

    fn redirector(&self) -> Redirector<'_> {
        Redirector {
            tools: &self.live_tools,
            prefix: &self.prefix,
            host: &self.config.profile.display_name,
        }
    }

    /// Queues the audit record of an answered exec and opens its span (closed when the
    /// returned span is dropped: at once, or when the host's result is sent).
    fn audit(&mut self, id: u32, arm: ExecArm, outcome: ExecOutcome) -> tracing::Span {
        let span = trace::exec_span(&self.span, id, arm, &outcome);
        self.events
            .push(AgentEvent::Exec(ExecAudit { id, arm, outcome }));
        span
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

    fn yield_tool_use(&mut self) {
        self.debounce_at = None;
        for call in &mut self.pending {
            call.yielded = true;
        }
        self.push_usage();
        self.events.push(AgentEvent::Ir(Event::Done {
            reason: StopReason::ToolUse,
        }));
        self.phase = Phase::AwaitingTools;
        // The host may take as long as it needs; heartbeats keep the stream warm meanwhile.
        self.work_deadline = None;
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().take(64).map(|b| format!("{b:02x}")).collect()
}
