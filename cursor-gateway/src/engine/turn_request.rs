//! A turn in the engine's terms, whatever API asked for it, and what a turn produces.

use std::time::{SystemTime, UNIX_EPOCH};

use cursor_agent::ir::{
    Conversation, ErrorInfo, ErrorKind, Event, NextStep, StopReason, ToolCall, Usage,
};
use cursor_agent::session::ModelChoice;

use super::admission::BodyPermit;
use super::clip::{Clip, Cut};
use super::format::FormatSpec;
use crate::ApiError;
use crate::history::Scope;

/// Everything the engine needs to run one turn. A dialect builds it from its request.
#[derive(Debug)]
pub(crate) struct TurnRequest {
    /// Who asks, for finding the conversation.
    pub(crate) scope: Scope,
    /// The transcript as the client sent it.
    pub(crate) conversation: Conversation,
    /// The model and effort, resolved.
    pub(crate) model: ModelChoice,
    /// Stop sequences and output limit.
    pub(crate) clip: Clip,
    /// A reply format to ask for and check, with the request field that named it.
    pub(crate) format: Option<(FormatSpec, &'static str)>,
    /// The request's share of the body budget, held while the turn runs.
    pub(crate) permit: BodyPermit,
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
        Self {
            id: crate::ids::response_id(prefix),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            model: model.to_owned(),
        }
    }
}

/// What one leg of a turn produced, collected.
#[derive(Clone, Debug, Default)]
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

/// Why an answer ended, in the engine's words; each dialect names it its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    /// The model finished its answer.
    EndTurn,
    /// The model called tools; their results continue the turn.
    ToolUse,
    /// The output limit (Cursor's, or the request's, which the gateway enforces).
    Length,
    /// A stop sequence of the request appeared; the text ends before it.
    StopSequence,
}

impl Finish {
    /// How a leg ended: the gateway's cut, else Cursor's reason.
    pub(crate) fn of(leg: &Leg, cut: Option<Cut>) -> Self {
        match (cut, leg.stop) {
            (Some(Cut::Stop), _) => Self::StopSequence,
            (Some(Cut::Length), _) | (None, Some(StopReason::Length)) => Self::Length,
            (None, Some(StopReason::ToolUse)) => Self::ToolUse,
            _ => Self::EndTurn,
        }
    }
}

/// A complete answer: the leg, why it ended, and the stop sequence that ended it.
#[derive(Clone, Debug)]
pub(crate) struct Whole {
    pub(crate) leg: Leg,
    pub(crate) finish: Finish,
    pub(crate) stop_sequence: Option<String>,
}

impl Whole {
    /// True when the gateway cut the reply short (a stop sequence or the output limit it
    /// enforces): the conversation was handed back unrecorded.
    pub(crate) fn was_cut(&self) -> bool {
        self.finish == Finish::StopSequence
            || (self.finish == Finish::Length && self.leg.stop != Some(StopReason::Length))
    }
}

/// A turn that went stale (and rebuilt) after its answer had begun streaming: the client has
/// seen part of an answer the rebuilt conversation does not continue.
pub(crate) fn stale_after_answer() -> ApiError {
    ApiError::from_info(&ErrorInfo::new(
        ErrorKind::Network,
        "the remote conversation went stale after the answer began",
        NextStep::Retry,
    ))
}

/// A turn whose event stream ended without `Done`.
pub(crate) fn turn_vanished() -> ApiError {
    ApiError::from_info(&ErrorInfo::new(
        ErrorKind::Network,
        "the turn ended without an answer",
        NextStep::Retry,
    ))
}

/// Token sums that cannot overflow, whatever the counts Cursor sends.
pub(crate) fn input_tokens(usage: &Usage) -> u64 {
    usage
        .input_tokens
        .saturating_add(usage.cache_read_tokens)
        .saturating_add(usage.cache_write_tokens)
}

/// Input and output tokens together, saturating.
pub(crate) fn total_tokens(usage: &Usage) -> u64 {
    input_tokens(usage).saturating_add(usage.output_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_sums_saturate_instead_of_overflowing() {
        let mut usage = Usage::default();
        usage.input_tokens = u64::MAX;
        usage.cache_read_tokens = 7;
        usage.output_tokens = u64::MAX;
        assert_eq!(input_tokens(&usage), u64::MAX);
        assert_eq!(total_tokens(&usage), u64::MAX);
    }
}
