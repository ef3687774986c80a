//! The host tool calls a Run has issued and not yet answered, and the ones the server aborted.

use std::collections::VecDeque;
use std::time::Instant;

use crate::translate::Translation;

/// One exec parked on a host tool call.
#[derive(Clone, Debug)]
pub(super) struct PendingCall {
    pub(super) id: u32,
    pub(super) exec_id: String,
    pub(super) tool_call_id: String,
    /// Handed to the host in a finished leg (so its result is due with the next submit).
    pub(super) yielded: bool,
    /// Set for a translated native exec: how to encode the host's result back.
    pub(super) translation: Option<Box<Translation>>,
    pub(super) issued_at: Instant,
    /// The exec's span, open until the host's result is sent.
    pub(super) span: tracing::Span,
}

/// The calls of the live phases: issued while streaming, yielded when a leg ends with
/// `ToolUse`, answered by the host's next submit.
#[derive(Clone, Debug, Default)]
pub(super) struct ToolCalls {
    pending: Vec<PendingCall>,
    /// Tool calls the server aborted after they were handed to the host (bounded): the host
    /// may still submit a result for them.
    aborted: VecDeque<String>,
}

impl ToolCalls {
    pub(super) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether exec `id` is parked on a host tool call.
    pub(super) fn holds_exec(&self, id: u32) -> bool {
        self.pending.iter().any(|p| p.id == id)
    }

    pub(super) fn push(&mut self, call: PendingCall) {
        self.pending.push(call);
    }

    /// The server aborted exec `id`: its call leaves the pending set, its tool call id is
    /// remembered (at most `cap` of them) so the host's result for it is still accepted.
    /// Returns whether a call was aborted.
    pub(super) fn abort(&mut self, id: u32, cap: usize) -> bool {
        let Some(index) = self.pending.iter().position(|p| p.id == id) else {
            return false;
        };
        let call = self.pending.remove(index);
        if self.aborted.len() >= cap {
            self.aborted.pop_front();
        }
        self.aborted.push_back(call.tool_call_id);
        true
    }

    /// Every pending call now belongs to a finished leg: its result is due with the next submit.
    pub(super) fn mark_yielded(&mut self) {
        for call in &mut self.pending {
            call.yielded = true;
        }
    }

    /// Whether a result for `tool_call_id` answers a call the host was handed.
    pub(super) fn issued(&self, tool_call_id: &str) -> bool {
        self.pending
            .iter()
            .any(|p| p.yielded && p.tool_call_id == tool_call_id)
            || self.aborted.iter().any(|id| id == tool_call_id)
    }

    /// Takes the yielded calls (the ones a submit answers) and forgets the aborted ids; calls
    /// issued since the leg ended stay pending.
    pub(super) fn take_answered(&mut self) -> Vec<PendingCall> {
        let (answered, still_pending) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| p.yielded);
        self.pending = still_pending;
        self.aborted.clear();
        answered
    }

    /// Whether a translated native exec is parked (and needs exec heartbeats).
    pub(super) fn any_translated(&self) -> bool {
        self.pending.iter().any(|p| p.translation.is_some())
    }

    /// The exec ids of the translated native execs parked on the host.
    pub(super) fn translated_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.pending
            .iter()
            .filter(|p| p.translation.is_some())
            .map(|p| p.id)
    }
}
