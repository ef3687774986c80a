//! One pi `streamSimple` call, end to end: parse, pick the channel, stream, map, finish.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use cursor_proto::ir::{ErrorInfo, Event};
use futures::StreamExt;
use serde_json::Value;

use crate::compat::{EventMapper, ModelInfo, conversation_from_json};

use super::unavailable::UnavailableChannel;
use super::{API, AbortSignal, Channel, ChannelKind, PROVIDER_ID, Turn, TurnLog, TurnOptions};

/// The `cursor` provider: answers pi's `streamSimple` calls on the one channel it was built
/// with.
///
/// The channel is fixed when the provider is made. A failure on it is that turn's error,
/// worded for pi with a next step ([`for_pi`](super::for_pi)); the turn is never re-sent on the
/// other channel.
#[derive(Clone, Debug)]
pub struct Provider {
    channel: Arc<dyn Channel>,
    log: Option<TurnLog>,
}

impl Provider {
    /// A provider answering on `channel`.
    pub fn new(channel: Arc<dyn Channel>) -> Self {
        Self { channel, log: None }
    }

    /// The provider for a `CURSOR_PROVIDER_CHANNEL` choice ([`ChannelKind::from_env`]):
    /// `agent` answers on the channel `agent` builds, `inference` on the one `inference`
    /// builds, and a malformed choice refuses every turn with the parse error. Only the chosen
    /// channel is built, so a turn can never reach the other one.
    pub fn select(
        choice: Result<ChannelKind, ErrorInfo>,
        agent: impl FnOnce() -> Arc<dyn Channel>,
        inference: impl FnOnce() -> Arc<dyn Channel>,
    ) -> Self {
        let channel: Arc<dyn Channel> = match choice {
            Ok(ChannelKind::Agent) => agent(),
            Ok(ChannelKind::Inference) => inference(),
            Err(reason) => Arc::new(UnavailableChannel::new(ChannelKind::Agent, reason)),
        };
        Self::new(channel)
    }

    /// Records every turn's model, served model and end in `log` (for `/cursor-doctor`).
    #[must_use]
    pub fn with_turn_log(mut self, log: TurnLog) -> Self {
        self.log = Some(log);
        self
    }

    /// The channel turns go to.
    pub fn channel(&self) -> &dyn Channel {
        self.channel.as_ref()
    }

    /// Answers one `streamSimple(model, context, options)` call, handing each pi
    /// `AssistantMessageEvent` object to `emit` as soon as it exists.
    ///
    /// `model_json` and `context_json` are pi's objects as JSON; `options_json` is the
    /// [`TurnOptions`] object. Exactly one `done` or `error` event is emitted last, whatever
    /// happens: malformed input becomes an `error` before `start`, an `abort` becomes an
    /// `error` with reason `aborted`, and a channel that stops early becomes an `error`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future ends the turn without its final `done` or `error` event (the Run is
    /// cancelled, its stream reset); to stop a turn and still get the `aborted` error, fire the
    /// [`AbortSignal`]'s handle instead.
    pub async fn stream(
        &self,
        model_json: &str,
        context_json: &str,
        options_json: &str,
        abort: AbortSignal,
        emit: impl FnMut(Value),
    ) {
        let mapper = |model| EventMapper::new(model, unix_time_ms());
        self.stream_with(mapper, model_json, context_json, options_json, abort, emit)
            .await;
    }

    /// Like [`stream`](Self::stream), but each event carries a `patch` for the binding's live
    /// message instead of a snapshot ([`EventMapper::with_patches`]): O(1) per event.
    ///
    /// # Cancel safety
    ///
    /// As for [`stream`](Self::stream).
    pub async fn stream_patched(
        &self,
        model_json: &str,
        context_json: &str,
        options_json: &str,
        abort: AbortSignal,
        emit: impl FnMut(Value),
    ) {
        let mapper = |model| EventMapper::with_patches(model, unix_time_ms());
        self.stream_with(mapper, model_json, context_json, options_json, abort, emit)
            .await;
    }

    async fn stream_with(
        &self,
        mapper: impl FnOnce(ModelInfo) -> EventMapper,
        model_json: &str,
        context_json: &str,
        options_json: &str,
        abort: AbortSignal,
        mut emit: impl FnMut(Value),
    ) {
        let mut abort = abort;
        let model = model_info(model_json);
        let quoted = model
            .clone()
            .unwrap_or_else(|_| ModelInfo::new(API, PROVIDER_ID, "unknown"));
        let mut mapper = mapper(quoted);
        let log = self.log.clone();
        if let (Some(log), Ok(model)) = (&log, &model) {
            log.begin(&model.id);
        }
        let mut send = |mapper: &mut EventMapper, event: Event| {
            if let Some(log) = &log {
                log.note(&event);
            }
            mapper.map(event).into_iter().for_each(&mut emit);
        };

        let turn = model.and_then(|model| {
            let conversation = conversation_from_json(context_json).map_err(ErrorInfo::from)?;
            let options = TurnOptions::from_json(options_json)?;
            Ok(Turn::new(model, conversation, options))
        });
        let turn = match turn {
            Ok(turn) => turn,
            Err(info) => return send(&mut mapper, Event::Error(info)),
        };
        if abort.is_aborted() {
            return send(&mut mapper, Event::Aborted);
        }

        let mut events = self.channel.open(turn);
        while !mapper.is_finished() {
            let event = tokio::select! {
                biased;
                () = abort.aborted() => Event::Aborted,
                next = events.next() => match next {
                    Some(event) => event,
                    None => break,
                },
            };
            send(&mut mapper, event);
        }
        // Dropping the stream is what cancels the channel's work on abort.
        drop(events);
        mapper.finish().into_iter().for_each(&mut emit);
    }

    /// The single `error` event for a call that failed outside [`Provider::stream`] (a panic
    /// caught at the binding's boundary), quoting the model of `model_json` when it parses.
    pub fn failure_event(model_json: &str, info: ErrorInfo) -> Value {
        let quoted =
            model_info(model_json).unwrap_or_else(|_| ModelInfo::new(API, PROVIDER_ID, "unknown"));
        let mut mapper = EventMapper::new(quoted, unix_time_ms());
        let mut events = mapper.map(Event::Error(info));
        events.pop().unwrap_or(Value::Null)
    }
}

fn model_info(model_json: &str) -> Result<ModelInfo, ErrorInfo> {
    let value: Value = serde_json::from_str(model_json).map_err(|error| {
        ErrorInfo::from(crate::compat::CompatError::Malformed {
            what: "model",
            detail: error.to_string(),
        })
    })?;
    ModelInfo::from_pi_model(&value).map_err(ErrorInfo::from)
}

fn unix_time_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
