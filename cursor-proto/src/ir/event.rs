//! What a channel reports back while a turn runs.

use serde::{Deserialize, Serialize};

use super::{ErrorInfo, NextStep, ToolCall};

/// One output event of a model turn, in stream order.
///
/// A turn ends with exactly one of [`Event::Done`], [`Event::Error`] or [`Event::Aborted`].
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Event {
    /// More visible answer text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// More reasoning text.
    ThinkingDelta {
        /// The new text.
        text: String,
    },
    /// The model wants the host to run a tool; the result comes back in the next turn.
    ToolCall(ToolCall),
    /// Token counts so far (each report replaces the previous one).
    Usage(Usage),
    /// Everything streamed so far in this turn is void: the channel restarted the turn (for
    /// example a stale resume that had to rebuild), so the host drops its partial message.
    Reset,
    /// The turn ended normally.
    Done {
        /// Why it ended.
        reason: StopReason,
    },
    /// The turn failed; the info says who can fix it.
    Error(ErrorInfo),
    /// The host cancelled the turn.
    Aborted,
    /// The backend named the model that actually serves this turn, which may differ from the
    /// one requested (a router or an alias resolved it): the agent channel's
    /// `InteractionUpdate.routed_model`, the inference channel's `run_ready.resolved_model`.
    /// Informational; it never changes how the turn is handled.
    ModelResolved {
        /// The served model's name as the backend gave it (a display name or a slug).
        model: String,
    },
    /// Something went wrong that does not end the turn but costs the user later (a resume
    /// handle that could not be written, a corrupt one set aside): never swallowed silently.
    Warning(Warning),
}

/// A failure that does not end the turn.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Warning {
    /// What kind of trouble it is.
    pub code: WarningCode,
    /// What happened, for humans; never contains a token or conversation content.
    pub message: String,
    /// What to do about it, when anything helps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_step: Option<NextStep>,
}

impl Warning {
    /// A warning.
    pub fn new(code: WarningCode, message: impl Into<String>, next_step: Option<NextStep>) -> Self {
        Self {
            code,
            message: message.into(),
            next_step,
        }
    }
}

/// The kinds of [`Warning`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningCode {
    /// The resume handle of a completed turn could not be written: the next process rebuilds
    /// the conversation instead of resuming it.
    HandleNotSaved,
    /// A stored resume handle was unusable and was set aside: this turn rebuilds.
    HandleSetAside,
    /// A stale resume handle could not be removed: it will be found stale again.
    HandleNotRemoved,
    /// Handles are configured but the session has no id to store them under: it never
    /// resumes.
    NoResume,
    /// The session has no workspace root: Cursor is told the workspace is `file:///`.
    NoWorkspace,
    /// The transcript's trailing tool results do not answer the calls the waiting Run issued:
    /// that Run was cancelled and this turn opened a new one.
    ToolResultsMismatch,
    /// Another turn of this session was still streaming: the two Runs now race for one
    /// conversation (a session is one conversation; turns should follow each other).
    ConcurrentTurn,
}

/// Why a turn ended normally.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The model finished its answer.
    Stop,
    /// The model is waiting for tool results.
    ToolUse,
    /// The model hit its output limit.
    Length,
}

/// Token accounting for one turn.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens (server-reported, or estimated when [`Usage::input_estimated`]).
    pub input_tokens: u64,
    /// Generated tokens, reasoning included.
    pub output_tokens: u64,
    /// Prompt tokens served from cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to cache.
    pub cache_write_tokens: u64,
    /// The part of `output_tokens` spent on reasoning, when reported.
    pub reasoning_tokens: u64,
    /// True when `input_tokens` is a local estimate because the server reported none.
    pub input_estimated: bool,
}

impl Usage {
    /// Input plus output plus cache tokens: what hosts show as the total.
    pub const fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ErrorKind;
    use serde_json::json;

    #[test]
    fn events_serialize_with_a_type_tag() {
        let event = Event::Done {
            reason: StopReason::ToolUse,
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({"type": "done", "reason": "toolUse"})
        );
        let resolved = Event::ModelResolved {
            model: "Grok 4.7".into(),
        };
        assert_eq!(
            serde_json::to_value(&resolved).unwrap(),
            json!({"type": "modelResolved", "model": "Grok 4.7"})
        );
        let error = Event::Error(ErrorInfo::new(ErrorKind::Auth, "expired", NextStep::Login));
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            json!({"type": "error", "kind": "auth", "message": "expired", "nextStep": {"step": "login"}})
        );
    }

    #[test]
    fn total_tokens_adds_every_bucket() {
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 2,
            cache_write_tokens: 1,
            ..Usage::default()
        };
        assert_eq!(usage.total_tokens(), 18);
    }
}
