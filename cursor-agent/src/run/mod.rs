//! [`AgentRun`]: the sans-IO state machine of one `agent.v1.AgentService/Run` stream.

use std::collections::VecDeque;
use std::time::Instant;

use cursor_proto::agent::v1::{self as wire, AgentClientMessage, McpToolDefinition};
use cursor_proto::ir::{Conversation, ErrorInfo, Event, StopReason, Tool};
use cursor_transport::envelope::{Compression, Decoder};
use prost::Message as _;

use crate::blobs::{BlobId, BlobStore};
use crate::event::ResumePoint;
use crate::event_queue::EventQueue;
use crate::ids::IdSource;
use crate::request::ResumeSeed;
use crate::{AgentError, AgentEvent, EventRef, RunConfig, frames, request, trace, usage};

mod calls;
mod exec;
mod input;
mod phase;
mod tally;
mod timers;
mod tool_round;

use calls::ToolCalls;
use input::Input;
use phase::{Ending, Phase};
use tally::Tally;
use timers::TimerTable;

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
    /// Where the Run is, with the tool calls, the tool round or the ending it owns.
    phase: Phase,
    /// Every deadline: watchdog, heartbeats, exec heartbeats, debounce.
    deadlines: TimerTable,
    misses: u32,
    /// Token accounting for the usage each leg reports.
    tally: Tally,
    checkpoint: Option<Vec<u8>>,
    /// A resumed run's `conversation_state` as raw bytes (the overlaid checkpoint), spliced
    /// into the run request by [`poll_transmit`](Self::poll_transmit).
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
            deadlines: TimerTable::new(now, &config.timers),
            prefix: config.tool_prefix(),
            config,
            conversation_id,
            blobs,
            catalog: conversation.tools.clone(),
            live_tools: conversation.tools.clone(),
            definitions: opening.definitions,
            transmits,
            events,
            phase: Phase::Streaming(ToolCalls::default()),
            misses: 0,
            tally: Tally::new(input_estimate),
            checkpoint: None,
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
        self.phase.is_finished()
    }

    /// True while the host owes results for tool calls of a finished leg.
    pub fn is_awaiting_tool_results(&self) -> bool {
        self.phase.is_awaiting_tools()
    }

    /// True while the host is owed the end of a leg: it is running the tools of a leg that
    /// ended with `ToolUse`, or the stream failed meanwhile and the failure waits for the
    /// host's next call. A driver keeps the event stream open until then.
    #[cfg(feature = "driver")]
    pub(crate) fn owes_leg_end(&self) -> bool {
        matches!(
            self.phase,
            Phase::AwaitingTools(_) | Phase::Finished(Ending::FailedWhileParked(_))
        )
    }

    /// True once the Run finished with `Done` (rather than failing or being cancelled): a
    /// driver half-closes the stream politely instead of resetting it.
    #[cfg(feature = "driver")]
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Finished(Ending::Done))
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
    #[inline]
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        // Polled after every frame and mostly empty: that answer stays a load and a compare.
        if self.transmits.is_empty() {
            return None;
        }
        self.encode_transmit()
    }

    fn encode_transmit(&mut self) -> Option<Vec<u8>> {
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

    /// The next event for the host, as [`poll_event`](Self::poll_event) gives it, except that a
    /// text or thinking delta still open in the Run's buffer is lent instead of handed over:
    /// a host that copies it into its own buffer allocates nothing per delta, and the Run
    /// reuses the string for the next one.
    ///
    /// ```
    /// # use cursor_agent::{AgentRun, RunConfig, IdSeed, EventRef};
    /// # use cursor_agent::ir::{Conversation, Message};
    /// # let now = std::time::Instant::now();
    /// # let config = RunConfig::new("m", "file:///w", IdSeed::fixed([1; 16]));
    /// # let conversation = Conversation::new("c").with_message(Message::user_text("hi"));
    /// let mut run = AgentRun::new(config, &conversation, now)?;
    /// // interaction_update.text_delta "hi"
    /// run.handle_server_bytes(&[0x0a, 6, 0x0a, 4, 0x0a, 2, b'h', b'i'], now);
    /// let mut answer = String::new();
    /// while let Some(event) = run.poll_event_ref() {
    ///     if let EventRef::TextDelta(text) = event {
    ///         answer.push_str(&text);
    ///     }
    /// }
    /// assert_eq!(answer, "hi");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    #[inline]
    pub fn poll_event_ref(&mut self) -> Option<EventRef<'_>> {
        self.events.pop_ref()
    }

    /// Replaces the host's live tool registry (tools registered mid-run become callable; the
    /// advertised catalog stays admitted too).
    pub fn update_tools(&mut self, tools: Vec<Tool>) {
        self.live_tools = tools;
    }

    /// The host cancelled: nothing more is written, the leg ends with `Aborted`.
    pub fn cancel(&mut self, _now: Instant) {
        if matches!(
            self.phase,
            Phase::Finished(Ending::Done | Ending::Failed | Ending::Cancelled)
        ) {
            return;
        }
        self.transmits.clear();
        self.phase.end(Ending::Cancelled);
        self.events.push(AgentEvent::Ir(Event::Aborted));
        self.span.record("outcome", "cancelled");
    }

    /// Queues a host event, or holds it for the next leg while the host runs tools.
    fn emit(&mut self, event: Event) -> Result<(), AgentError> {
        if let Phase::AwaitingTools(round) = &mut self.phase {
            if round.deferred.len() >= self.config.limits.max_deferred_events {
                return Err(AgentError::drift(
                    "server kept streaming while the host ran tools",
                ));
            }
            round.deferred.push_back(event);
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
        self.phase.end(Ending::Done);
        self.span.record("outcome", "done");
    }

    fn push_usage(&mut self) {
        self.events
            .push(AgentEvent::Ir(Event::Usage(self.tally.usage())));
    }

    /// Ends the run with `error`. Nothing more is written. While the host runs tools the leg
    /// already ended, so the failure waits for the host's next call.
    fn fail(&mut self, error: AgentError) {
        let info = ErrorInfo::from(error.clone());
        self.span.record("outcome", info.kind.as_str());
        self.failure = Some(error);
        self.transmits.clear();
        if self.phase.is_awaiting_tools() {
            self.phase.end(Ending::FailedWhileParked(info));
        } else {
            self.events.push(AgentEvent::Ir(Event::Error(info)));
            self.phase.end(Ending::Failed);
        }
    }
}

/// At most the first 64 bytes of `bytes` as hex, for error messages.
fn hex(bytes: &[u8]) -> String {
    cursor_proto::hex::encode(&bytes[..bytes.len().min(64)])
}
