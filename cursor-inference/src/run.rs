//! `InferenceRun`: one turn on RunInference as a sans-IO state machine.

use std::collections::VecDeque;
use std::time::Instant;

use cursor_proto::aiserver::v1::{
    InferenceStreamError, InferenceStreamErrorType, RunInferenceCancelInvocation,
    RunInferenceClientMessage, RunInferenceFinishRun, RunInferenceInvocationEnd,
    RunInferenceRunReady, RunInferenceServerMessage, inference_stream_response::Response,
    run_inference_client_message::Message as ClientArm,
    run_inference_server_message::Message as ServerArm,
};
use cursor_proto::ir::{Classify as _, Conversation, Event, StopReason, Usage};
use cursor_transport::CursorError;
use prost::Message as _;

use crate::error::StreamRefusal;
use crate::shape::{self, Shape};
use crate::tool_calls::ToolCallAssembler;
use crate::{InferenceConfig, InferenceError, request};

/// Where the turn stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// `run_request` sent; `invoke_model` waits for `run_ready`.
    AwaitingReady,
    /// `invoke_model` sent; no token yet.
    AwaitingFirstToken,
    /// Tokens flow.
    Streaming,
    /// Done, failed or canceled.
    Finished,
}

/// One RunInference turn: the conversation goes out as one model invocation, the answer comes
/// back as [`Event`]s.
///
/// Sans-IO: feed it what the server sent ([`handle_server_message`](Self::handle_server_message),
/// [`handle_end_of_stream`](Self::handle_end_of_stream),
/// [`handle_transport_error`](Self::handle_transport_error)) and the clock
/// ([`handle_timeout`](Self::handle_timeout) at [`poll_timeout`](Self::poll_timeout)); take
/// the frames to send from [`poll_transmit`](Self::poll_transmit) and the host events from
/// [`poll_event`](Self::poll_event). The turn ends with exactly one [`Event::Done`],
/// [`Event::Error`] or [`Event::Aborted`].
///
/// There is no exec branch: a tool call ends the turn with
/// [`StopReason::ToolUse`], and its result goes out as a TOOL message in the next turn's
/// conversation, on a new run.
#[derive(Debug)]
pub struct InferenceRun {
    config: InferenceConfig,
    phase: Phase,
    invoke: Option<RunInferenceClientMessage>,
    transmit: VecDeque<RunInferenceClientMessage>,
    events: VecDeque<Event>,
    deadline: Option<Instant>,
    tool_calls: ToolCallAssembler,
    asked_for_tools: bool,
    failure: Option<InferenceError>,
    resolved_model: Option<String>,
}

impl InferenceRun {
    /// A turn answering `conversation` with `config`, opened at `now`: the `run_request`
    /// frame is ready to send, and the `run_ready` watchdog starts.
    ///
    /// A conversation whose images the backend would not take
    /// ([`request::check_images`]) gives a turn that is already over: its one event is the
    /// error, and it has nothing to send (not even `finish_run`).
    pub fn open(config: InferenceConfig, conversation: &Conversation, now: Instant) -> Self {
        if let Err(error) = request::check_images(conversation) {
            return Self {
                config,
                phase: Phase::Finished,
                invoke: None,
                transmit: VecDeque::new(),
                events: VecDeque::from([Event::Error(error.to_info())]),
                deadline: None,
                tool_calls: ToolCallAssembler::default(),
                asked_for_tools: false,
                failure: Some(error),
                resolved_model: None,
            };
        }
        let run_request = request::run_request(&config, conversation);
        let deadline = Some(now + config.timers().run_ready);
        let invoke = request::invoke_model(&config, conversation);
        Self {
            config,
            phase: Phase::AwaitingReady,
            invoke: Some(invoke),
            transmit: VecDeque::from([run_request]),
            events: VecDeque::new(),
            deadline,
            tool_calls: ToolCallAssembler::default(),
            asked_for_tools: false,
            failure: None,
            resolved_model: None,
        }
    }

    /// The turn's settings.
    pub fn config(&self) -> &InferenceConfig {
        &self.config
    }

    /// The next frame to send, in order.
    pub fn poll_transmit(&mut self) -> Option<RunInferenceClientMessage> {
        self.transmit.pop_front()
    }

    /// The next event for the host, in order.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called next, if ever.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether the turn has ended (its last event may still wait in [`poll_event`](Self::poll_event)).
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    /// The model `run_ready` said serves the turn (its `resolved_model.model_id`, else its
    /// `routed_model_display_name`), once it arrived. `None` before `run_ready`, or when the
    /// server named none: live servers do (docs/PROTOCOL.md §6.5), but its absence is
    /// tolerated, never an error.
    pub fn resolved_model(&self) -> Option<&str> {
        self.resolved_model.as_deref()
    }

    /// Why the turn failed, if it did.
    pub fn failure(&self) -> Option<&InferenceError> {
        self.failure.as_ref()
    }

    /// Feeds one serialized server message.
    ///
    /// The raw frame is checked first: an arm this version does not know, at either level, is
    /// protocol drift naming its field numbers; arms known to carry nothing (docs/PROTOCOL.md
    /// §6.3: 4, 6, 10) are skipped.
    pub fn handle_server_bytes(&mut self, bytes: &[u8], now: Instant) {
        if self.is_finished() {
            return;
        }
        let skipped = match shape::check(bytes) {
            Ok(shape) => shape == Shape::Skipped,
            Err(message) => return self.fail(InferenceError::drift(message)),
        };
        match decode_server(bytes) {
            Ok(message) => self.handle(message, now, skipped),
            Err(error) => self.fail(error),
        }
    }

    /// Feeds one server message received at `now`. An invocation response without an arm is
    /// protocol drift (a typed message cannot say which unknown arm it lost; feed the bytes
    /// through [`handle_server_bytes`](Self::handle_server_bytes) to skip the known empty ones).
    pub fn handle_server_message(&mut self, message: RunInferenceServerMessage, now: Instant) {
        self.handle(message, now, false);
    }

    /// `skipped`: the raw frame's response arm is one known to carry nothing.
    fn handle(&mut self, message: RunInferenceServerMessage, now: Instant, skipped: bool) {
        if self.is_finished() {
            return;
        }
        match message.message {
            Some(ServerArm::Heartbeat(_)) => {}
            Some(ServerArm::RunReady(ready)) => self.on_run_ready(ready, now),
            Some(ServerArm::InvocationResponse(response)) => {
                if let Err(error) = self.check_invocation(&response.invocation_id) {
                    return self.fail(error);
                }
                match response.response.and_then(|r| r.response) {
                    Some(arm) => self.on_response(arm, now),
                    // Response info, provider metadata, image descriptions: no part of the
                    // answer, but the stream is alive and working.
                    None if skipped => self.touch(now, false),
                    None => self.fail(InferenceError::drift(
                        "an invocation_response (field 3) with no response arm (field 3.2)",
                    )),
                }
            }
            Some(ServerArm::InvocationEnd(end)) => self.on_invocation_end(end),
            None => self.fail(InferenceError::drift(
                "a RunInference server message with no arm (fields 1-4 absent)",
            )),
        }
    }

    /// The server ended the stream (successfully) at `now`.
    pub fn handle_end_of_stream(&mut self, _now: Instant) {
        if !self.is_finished() {
            self.fail(InferenceError::drift(
                "the server ended RunInference before the invocation ended",
            ));
        }
    }

    /// The call failed in the transport (network, 401, Connect error).
    pub fn handle_transport_error(&mut self, error: CursorError) {
        if !self.is_finished() {
            self.fail(InferenceError::Transport(error));
        }
    }

    /// The clock reached `now`: a watchdog whose deadline passed fails the turn.
    pub fn handle_timeout(&mut self, now: Instant) {
        let Some(deadline) = self.deadline else {
            return;
        };
        if now < deadline || self.is_finished() {
            return;
        }
        let timers = self.config.timers();
        let (waiting_for, limit) = match self.phase {
            Phase::AwaitingReady => ("run_ready", timers.run_ready),
            Phase::AwaitingFirstToken => ("first token", timers.first_token),
            Phase::Streaming | Phase::Finished => ("model output", timers.idle),
        };
        self.cancel_invocation();
        self.fail(InferenceError::Timeout { waiting_for, limit });
    }

    /// The host gave up on the turn: the invocation is canceled and the run finished, and the
    /// turn ends with [`Event::Aborted`].
    pub fn cancel(&mut self) {
        if self.is_finished() {
            return;
        }
        self.cancel_invocation();
        self.events.push_back(Event::Aborted);
        self.finish();
    }

    fn on_run_ready(&mut self, ready: RunInferenceRunReady, now: Instant) {
        match (self.phase, self.invoke.take()) {
            (Phase::AwaitingReady, Some(invoke)) => {
                let model = ready
                    .resolved_model
                    .map(|model| model.model_id)
                    .filter(|id| !id.is_empty())
                    .or(ready.routed_model_display_name)
                    .filter(|name| !name.is_empty());
                if let Some(model) = &model {
                    self.events.push_back(Event::ModelResolved {
                        model: model.clone(),
                    });
                }
                self.resolved_model = model;
                self.transmit.push_back(invoke);
                self.phase = Phase::AwaitingFirstToken;
                self.deadline = Some(now + self.config.timers().first_token);
            }
            _ => self.fail(InferenceError::drift("run_ready arrived twice")),
        }
    }

    fn check_invocation(&self, id: &str) -> Result<(), InferenceError> {
        if self.phase == Phase::AwaitingReady {
            return Err(InferenceError::drift(
                "an invocation frame arrived before run_ready",
            ));
        }
        if !id.is_empty() && id != self.config.invocation_id {
            return Err(InferenceError::drift(format!(
                "a frame for invocation {id:?}, which this run never started"
            )));
        }
        Ok(())
    }

    /// Moves the watchdog: a token leaves the first-token wait; any work frame resets idle.
    fn touch(&mut self, now: Instant, token: bool) {
        if token {
            self.phase = Phase::Streaming;
        }
        if self.phase == Phase::Streaming {
            self.deadline = Some(now + self.config.timers().idle);
        }
    }

    fn on_response(&mut self, arm: Response, now: Instant) {
        match arm {
            Response::TextPart(part) => {
                self.touch(now, true);
                if !part.text.is_empty() {
                    self.events.push_back(Event::TextDelta { text: part.text });
                }
            }
            Response::ThinkingPart(part) => {
                self.touch(now, true);
                if !part.text.is_empty() {
                    self.events
                        .push_back(Event::ThinkingDelta { text: part.text });
                }
            }
            Response::ToolCallPart(part) => {
                self.touch(now, true);
                match self.tool_calls.push(part) {
                    Ok(Some(call)) => {
                        self.asked_for_tools = true;
                        self.events.push_back(Event::ToolCall(call));
                    }
                    Ok(None) => {}
                    Err(error) => self.fail(error),
                }
            }
            Response::Usage(usage) => {
                self.touch(now, false);
                let mut report = Usage::default();
                report.input_tokens = count(usage.prompt_tokens);
                report.output_tokens = count(usage.completion_tokens);
                self.events.push_back(Event::Usage(report));
            }
            Response::ExtendedUsage(usage) => {
                self.touch(now, false);
                let mut report = Usage::default();
                report.input_tokens = count(usage.input_tokens);
                report.output_tokens = count(usage.output_tokens);
                report.cache_read_tokens = count(usage.cache_read_tokens);
                report.cache_write_tokens = count(usage.cache_write_tokens);
                self.events.push_back(Event::Usage(report));
            }
            Response::InvocationId(_) => self.touch(now, false),
            Response::Error(error) => self.on_stream_error(error),
        }
    }

    fn on_stream_error(&mut self, error: InferenceStreamError) {
        let kind = InferenceStreamErrorType::try_from(error.error_type)
            .unwrap_or(InferenceStreamErrorType::Unknown);
        if error.is_output_token_limit_error || kind == InferenceStreamErrorType::OutputTokenLimit {
            // The answer so far stands; the model ran out of output budget.
            return self.done(StopReason::Length);
        }
        let refusal = if error.is_input_token_limit_error {
            StreamRefusal::InputTokenLimit
        } else {
            match kind {
                InferenceStreamErrorType::Authentication => {
                    return self.fail(InferenceError::StreamAuth {
                        message: error.message,
                    });
                }
                InferenceStreamErrorType::InputTokenLimit => StreamRefusal::InputTokenLimit,
                InferenceStreamErrorType::RateLimit => StreamRefusal::RateLimit,
                InferenceStreamErrorType::Permission => StreamRefusal::Permission,
                InferenceStreamErrorType::Overloaded => StreamRefusal::Overloaded,
                InferenceStreamErrorType::ContentFilter => StreamRefusal::ContentFilter,
                _ => StreamRefusal::Other,
            }
        };
        let message = if error.code.is_empty() {
            error.message
        } else {
            format!("{} ({})", error.message, error.code)
        };
        self.fail(InferenceError::Stream { refusal, message });
    }

    fn on_invocation_end(&mut self, end: RunInferenceInvocationEnd) {
        if let Err(error) = self.check_invocation(&end.invocation_id) {
            return self.fail(error);
        }
        if let Some(error) = end.error {
            return self.fail(InferenceError::InvocationEnd {
                code: error.code,
                message: error.message,
            });
        }
        if self.tool_calls.has_open_calls() {
            return self.fail(InferenceError::drift(
                "the invocation ended with a tool call still incomplete",
            ));
        }
        let reason = if self.asked_for_tools {
            StopReason::ToolUse
        } else {
            StopReason::Stop
        };
        self.done(reason);
    }

    fn done(&mut self, reason: StopReason) {
        self.events.push_back(Event::Done { reason });
        self.finish();
    }

    fn fail(&mut self, error: InferenceError) {
        if self.is_finished() {
            return;
        }
        self.events.push_back(Event::Error(error.to_info()));
        self.failure = Some(error);
        self.finish();
    }

    /// Ends the run politely: the server is told no more invocations follow.
    fn finish(&mut self) {
        self.transmit.push_back(RunInferenceClientMessage {
            message: Some(ClientArm::FinishRun(RunInferenceFinishRun {})),
        });
        self.phase = Phase::Finished;
        self.deadline = None;
    }

    fn cancel_invocation(&mut self) {
        if matches!(self.phase, Phase::AwaitingFirstToken | Phase::Streaming) {
            self.transmit.push_back(RunInferenceClientMessage {
                message: Some(ClientArm::CancelInvocation(RunInferenceCancelInvocation {
                    invocation_id: self.config.invocation_id.clone(),
                })),
            });
        }
    }
}

/// A server count as `u64`; a negative count is read as none.
fn count(value: i32) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// Decodes one server message; bytes that do not decode are drift.
fn decode_server(bytes: &[u8]) -> Result<RunInferenceServerMessage, InferenceError> {
    RunInferenceServerMessage::decode(bytes).map_err(|error| {
        InferenceError::drift(format!(
            "a RunInference server message does not decode: {error}"
        ))
    })
}
