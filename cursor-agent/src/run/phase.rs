//! Where a Run is, with the data each phase owns.

use std::collections::VecDeque;

use cursor_proto::ir::{ErrorInfo, Event};

use super::calls::ToolCalls;

/// The phase of a Run. The tool calls live in the two live phases; what only a tool round has
/// (events held back, a `turn_ended` seen meanwhile) lives in [`ToolRound`]; how the Run ended
/// lives in [`Ending`].
#[derive(Debug)]
pub(super) enum Phase {
    /// The server is producing the current leg; host tool calls issued in it wait for the
    /// debounce to end the leg.
    Streaming(ToolCalls),
    /// The leg ended with `ToolUse`; the stream stays open until the host's results arrive.
    AwaitingTools(ToolRound),
    /// Done, failed or cancelled: the driver may close the stream.
    Finished(Ending),
}

/// A tool round: the host runs the tools of a leg that ended with `ToolUse`.
#[derive(Debug)]
pub(super) struct ToolRound {
    pub(super) calls: ToolCalls,
    /// Host events that arrived while the host runs tools; released with the next leg.
    pub(super) deferred: VecDeque<Event>,
    /// `turn_ended` arrived while the host ran tools: the next leg ends at once.
    pub(super) turn_ended: bool,
}

/// How a Run ended.
#[derive(Debug)]
pub(super) enum Ending {
    /// The turn ended (`Done` with a final stop reason).
    Done,
    /// Failed; the host saw the error.
    Failed,
    /// Failed while the host ran tools: the leg had already ended, so the failure is reported
    /// as the next leg's end, when the host comes back.
    FailedWhileParked(ErrorInfo),
    /// The host cancelled, or stopped listening.
    Cancelled,
}

impl Phase {
    #[inline]
    pub(super) fn is_streaming(&self) -> bool {
        matches!(self, Self::Streaming(_))
    }

    #[inline]
    pub(super) fn is_awaiting_tools(&self) -> bool {
        matches!(self, Self::AwaitingTools(_))
    }

    #[inline]
    pub(super) fn is_finished(&self) -> bool {
        matches!(self, Self::Finished(_))
    }

    /// The tool calls of a live phase.
    pub(super) fn calls(&self) -> Option<&ToolCalls> {
        match self {
            Self::Streaming(calls) | Self::AwaitingTools(ToolRound { calls, .. }) => Some(calls),
            Self::Finished(_) => None,
        }
    }

    /// The tool calls of a live phase.
    pub(super) fn calls_mut(&mut self) -> Option<&mut ToolCalls> {
        match self {
            Self::Streaming(calls) | Self::AwaitingTools(ToolRound { calls, .. }) => Some(calls),
            Self::Finished(_) => None,
        }
    }

    /// Ends the Run, returning the phase it left.
    pub(super) fn end(&mut self, ending: Ending) -> Self {
        std::mem::replace(self, Self::Finished(ending))
    }
}
