//! What the server sent: response head, body bytes, frames (hot path and general), interaction
//! updates, KV blob requests, and the end of the stream.

use std::time::Instant;

use bytes::Bytes;
use cursor_proto::agent::v1::{
    self as wire, AgentServerMessage, TurnEndedUpdate, agent_server_message::Message as Server,
    interaction_update::Message as Update,
};
use cursor_proto::ir::{ErrorInfo, Event, StopReason};
use cursor_transport::CursorError;
use cursor_transport::envelope::{Compression, Decoder, FrameRef};
use prost::Message as _;

use super::phase::Phase;
use super::timers::Watchdog;
use super::{AgentRun, hex};
use crate::blobs::BlobId;
use crate::error::outcome_of;
use crate::event_queue::Delta;
use crate::hot::Hot;
use crate::text_window::TextWindow;
use crate::{AgentError, AgentEvent, EventRef, RemoteMissing, StreamOutcome, frames, interaction};

/// How the host feeds the response body: the drain contract allows one way per Run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Input {
    Unset,
    /// `handle_response_head` came, no bytes yet.
    Head,
    /// Body bytes (`handle_server_data`).
    Data,
    /// Decoded frames (`handle_server_message`, `handle_server_bytes`).
    Frames,
}

impl AgentRun {
    /// One decoded server frame.
    ///
    /// A Run takes body bytes ([`handle_server_data`](Self::handle_server_data)) or frames,
    /// never both: frames after body bytes fail the Run as [`AgentError::HostMisuse`].
    pub fn handle_server_message(&mut self, message: AgentServerMessage, now: Instant) {
        if self.admit(Input::Frames) {
            self.on_message(message, now);
        }
    }

    pub(super) fn on_message(&mut self, message: AgentServerMessage, now: Instant) {
        if self.phase.is_finished() {
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
        // After the first frame the check is one compare.
        if self.input == Input::Frames || self.admit(Input::Frames) {
            self.on_bytes(bytes, now);
        }
    }

    /// [`handle_server_bytes`](Self::handle_server_bytes) for a host that takes each frame's
    /// events before the next frame: a streamed text or thinking delta with nothing queued
    /// before it is returned, its text lent from `bytes`, instead of being copied into the Run's
    /// queue. A host that appends it to its own buffer copies each delta once, as a hand-written
    /// decoder would. Any other frame, and a delta behind queued events (it must keep its
    /// place), is handled as `handle_server_bytes` handles it, and `None` says to poll.
    ///
    /// ```
    /// # use cursor_agent::{AgentRun, RunConfig, IdSeed, EventRef};
    /// # use cursor_agent::ir::{Conversation, Message};
    /// # let now = std::time::Instant::now();
    /// # let config = RunConfig::new("m", "file:///w", IdSeed::fixed([1; 16]));
    /// # let conversation = Conversation::new("c").with_message(Message::user_text("hi"));
    /// let mut run = AgentRun::new(config, &conversation, now)?;
    /// let mut answer = String::new();
    /// // interaction_update.text_delta "hi", twice
    /// for frame in [[0x0a, 6, 0x0a, 4, 0x0a, 2, b'h', b'i']; 2] {
    ///     if let Some(EventRef::TextDelta(text)) = run.handle_server_bytes_ref(&frame, now) {
    ///         answer.push_str(&text);
    ///     }
    ///     while let Some(event) = run.poll_event_ref() {
    ///         if let EventRef::TextDelta(text) = event {
    ///             answer.push_str(&text);
    ///         }
    ///     }
    /// }
    /// assert_eq!(answer, "hihi");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    #[must_use = "a returned delta is not queued: dropping it loses its text"]
    pub fn handle_server_bytes_ref<'a>(
        &mut self,
        bytes: &'a [u8],
        now: Instant,
    ) -> Option<EventRef<'a>> {
        if !(self.input == Input::Frames || self.admit(Input::Frames)) {
            return None;
        }
        if self.events.is_empty()
            && self.phase.is_streaming()
            && let Some((kind, text)) = crate::hot::bare_delta(bytes)
        {
            self.deadlines.arm_watchdog(now, Watchdog::Idle);
            return Some(kind.lent(text));
        }
        self.on_bytes(bytes, now);
        None
    }

    /// Checks the host feeds the body one way only (the drain contract); a misuse fails the
    /// Run with a host-bug error instead of mixing two framings of one stream.
    pub(super) fn admit(&mut self, input: Input) -> bool {
        let misuse = match (self.input, input) {
            (Input::Data, Input::Frames) => Some("frames after body bytes (feed one or the other)"),
            (Input::Frames, Input::Data) => Some("body bytes after frames (feed one or the other)"),
            (Input::Data, Input::Head) => Some("the response head after body bytes"),
            _ => None,
        };
        if let Some(what) = misuse {
            if !self.phase.is_finished() {
                self.fail(AgentError::HostMisuse(what));
            }
            return false;
        }
        if input != Input::Head || self.input == Input::Unset {
            self.input = input;
        }
        true
    }

    pub(super) fn on_bytes(&mut self, bytes: &[u8], now: Instant) {
        if self.phase.is_finished() {
            return;
        }
        // The commonest frame, a bare text or thinking delta, is matched byte for byte here
        // (inlined); the other frequent arms skip prost's generic decode; prost decodes the rest.
        if let Some((kind, text)) = crate::hot::bare_delta(bytes)
            && self.phase.is_streaming()
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
    /// # use cursor_agent::ir::{Conversation, Message};
    /// # let now = std::time::Instant::now();
    /// # let config = RunConfig::new("m", "file:///w", IdSeed::fixed([1; 16]));
    /// # let conversation = Conversation::new("c").with_message(Message::user_text("hi"));
    /// let mut run = AgentRun::new(config, &conversation, now)?;
    /// // interaction_update.text_delta "hi" in a Connect envelope (flags 0, a big-endian
    /// // length, the message), arriving in two pieces.
    /// let wire = cursor_agent::Bytes::from_static(&[0, 0, 0, 0, 8, 0x0a, 6, 0x0a, 4, 0x0a, 2, b'h', b'i']);
    /// run.handle_server_data(wire.slice(..3), now);
    /// run.handle_server_data(wire.slice(3..), now);
    /// let texts: Vec<_> = std::iter::from_fn(|| run.poll_event()).collect();
    /// assert!(format!("{texts:?}").contains("TextDelta { text: \"hi\" }"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle_server_data(&mut self, data: Bytes, now: Instant) {
        if self.phase.is_finished() || !self.admit(Input::Data) {
            return;
        }
        // The decoder leaves `self` while its frames are lent, so handlers can borrow `self`.
        let mut body = std::mem::replace(&mut self.body, Decoder::new(Compression::Identity));
        body.push_bytes(data.clone());
        let mut window = TextWindow::new(&data);
        while !self.phase.is_finished() {
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
    pub(super) fn on_frame(&mut self, frame: &[u8], window: &mut TextWindow<'_>, now: Instant) {
        if let Some((kind, text)) = crate::hot::bare_delta_bytes(frame)
            && self.phase.is_streaming()
            && let Some(text) = window.str_of(text)
        {
            self.stream_delta(kind, text, now);
            return;
        }
        self.on_bytes(frame, now);
    }

    /// What `on_delta` does with a delta while streaming, without its layers (the hot path).
    #[inline(always)]
    pub(super) fn stream_delta(&mut self, kind: Delta, text: &str, now: Instant) {
        self.deadlines.arm_watchdog(now, Watchdog::Idle);
        self.events.push_delta(kind, text);
    }

    /// The server side of the stream ended. Before `turn_ended` that is a failure: the
    /// outcome's error when it carries one, a network error otherwise.
    pub fn handle_end_of_stream(&mut self, outcome: StreamOutcome, _now: Instant) {
        if self.phase.is_finished() {
            return;
        }
        self.fail(match outcome {
            StreamOutcome::Ok => AgentError::StreamEndedEarly,
            StreamOutcome::Err(info) | StreamOutcome::NotFound(info)
                if crate::error::says_state_lost(&info.message) =>
            {
                AgentError::ServerStateLost { what: info.message }
            }
            // The remote conversation is gone: a resumed run must rebuild (§10).
            StreamOutcome::NotFound(info) if self.config.resume => AgentError::StaleResume {
                missing: RemoteMissing::Conversation {
                    conversation_id: self.conversation_id.clone(),
                    message: info.message,
                },
            },
            StreamOutcome::Err(info) if info.code.as_deref() == Some("resource_exhausted") => {
                AgentError::Remote(self.exhausted(info))
            }
            StreamOutcome::Err(info) | StreamOutcome::NotFound(info) => AgentError::Remote(info),
        });
    }

    /// A `resource_exhausted` read with what only the Run knows: a bare one before any token
    /// is a context overflow, not a spent quota (PROTOCOL-AGENT §13.2).
    fn exhausted(&self, mut info: ErrorInfo) -> ErrorInfo {
        let meaning = cursor_transport::Refusal::of_resource_exhausted(
            &info.message,
            Some(self.tally.output_tokens),
        );
        if meaning == cursor_transport::Refusal::ContextOverflow {
            info.message = format!(
                "{}: Cursor refused the turn before any token, as it does when the prompt is too long for the model's context window",
                info.message
            );
            info.next_step = meaning.next_step();
            info.quota_resets = None;
        }
        info
    }

    pub(super) fn dispatch(
        &mut self,
        message: AgentServerMessage,
        now: Instant,
    ) -> Result<(), AgentError> {
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
    pub(super) fn work(&mut self, now: Instant) {
        if self.phase.is_streaming() {
            self.deadlines.arm_watchdog(now, Watchdog::Idle);
        }
    }

    pub(super) fn on_update(
        &mut self,
        update: Option<Update>,
        now: Instant,
    ) -> Result<(), AgentError> {
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
            // The model that actually served the turn (docs/PROTOCOL-AGENT.md §12.2); reported once
            // per change, and never when the server names none.
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
    pub(super) fn on_hot(&mut self, frame: Hot<'_>, now: Instant) -> Result<(), AgentError> {
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
    pub(super) fn on_delta<T: AsRef<str> + Into<String>>(
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
    pub(super) fn emit_delta<T: AsRef<str> + Into<String>>(
        &mut self,
        kind: Delta,
        text: T,
    ) -> Result<(), AgentError> {
        if !self.phase.is_awaiting_tools() {
            self.events.push_delta(kind, text.as_ref());
            return Ok(());
        }
        let text = text.into();
        self.emit(match kind {
            Delta::Text => Event::TextDelta { text },
            Delta::Thinking => Event::ThinkingDelta { text },
        })
    }

    #[inline]
    pub(super) fn on_tokens(&mut self, tokens: i32) {
        self.tally.on_tokens(tokens);
    }

    pub(super) fn on_turn_ended(&mut self, ended: TurnEndedUpdate) {
        self.tally.server_usage = Some(ended);
        match &mut self.phase {
            // Not terminal while a host tool call is pending: the debounce ends the leg.
            Phase::Streaming(calls) if calls.is_empty() => self.finish(StopReason::Stop),
            Phase::AwaitingTools(round) if round.calls.is_empty() => round.turn_ended = true,
            _ => {}
        }
    }

    pub(super) fn on_kv(&mut self, kv: wire::KvServerMessage) -> Result<(), AgentError> {
        use wire::kv_server_message::Message as Kv;
        match kv.message {
            Some(Kv::GetBlobArgs(get)) => {
                let found = BlobId::from_slice(&get.blob_id).and_then(|id| self.blobs.get(&id));
                let Some(data) = found else {
                    // Never answered with empty data: that would read as an empty blob.
                    let id_hex = hex(&get.blob_id);
                    return Err(if self.config.resume {
                        AgentError::StaleResume {
                            missing: RemoteMissing::Blob { id_hex },
                        }
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
}
