//! The Run's outgoing events: a queue whose last entry may be an open text or thinking delta
//! that later deltas of the same kind extend in place.
//!
//! The open delta's text is the `String` the host receives: it starts with room for a few
//! deltas, later deltas are copied onto its end, and it is handed over as it is when the delta
//! closes (another event is queued) or is polled. A delta costs a copy; one allocation serves
//! every delta merged into it. A host that polls by reference ([`EventQueue::pop_ref`]) is lent
//! the open delta's text instead, and the string's allocation serves the next delta too.

use std::borrow::Cow;
use std::collections::VecDeque;

use cursor_proto::ir::Event;

use crate::{AgentEvent, EventRef};

/// Bytes an open delta's string starts with: a few typical deltas, so short merges never
/// reallocate.
const OPEN_CAPACITY: usize = 64;

/// Which kind of streamed delta is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delta {
    Text,
    Thinking,
}

impl Delta {
    /// This kind of delta with `text` lent.
    #[inline(always)]
    pub(crate) fn lent(self, text: &str) -> EventRef<'_> {
        match self {
            Self::Text => EventRef::TextDelta(Cow::Borrowed(text)),
            Self::Thinking => EventRef::ThinkingDelta(Cow::Borrowed(text)),
        }
    }

    fn event(self, text: String) -> AgentEvent {
        AgentEvent::Ir(match self {
            Self::Text => Event::TextDelta { text },
            Self::Thinking => Event::ThinkingDelta { text },
        })
    }
}

#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    queued: VecDeque<AgentEvent>,
    /// The delta after everything in `queued`, while it may still grow.
    open: Option<Delta>,
    /// The open delta's text while a delta is open; otherwise empty, or (after a lend) the lent
    /// text, cleared when the next delta opens.
    text: String,
}

impl EventQueue {
    /// Whether nothing waits to be polled (no event, no open delta).
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.open.is_none() && self.queued.is_empty()
    }

    /// Queues `event` after everything queued so far (closing the open delta).
    pub(crate) fn push(&mut self, event: AgentEvent) {
        self.close();
        self.queued.push_back(event);
    }

    /// Queues a delta, appending it to the open delta when that is of the same kind.
    #[inline(always)]
    pub(crate) fn push_delta(&mut self, kind: Delta, text: &str) {
        if self.open == Some(kind) {
            self.text.push_str(text);
        } else {
            self.open_delta(kind, text);
        }
    }

    /// Closes the open delta and opens one of `kind` with `text`, in the lent string's
    /// allocation when the last delta was lent, else in a new one.
    #[inline(never)]
    fn open_delta(&mut self, kind: Delta, text: &str) {
        self.close();
        self.open = Some(kind);
        self.text.clear();
        self.text.reserve(text.len().max(OPEN_CAPACITY));
        self.text.push_str(text);
    }

    /// The next event, in order.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<AgentEvent> {
        if let Some(event) = self.queued.pop_front() {
            return Some(event);
        }
        let kind = self.open.take()?;
        Some(kind.event(std::mem::take(&mut self.text)))
    }

    /// The next event, in order, with the open delta's text lent rather than handed over.
    #[inline]
    pub(crate) fn pop_ref(&mut self) -> Option<EventRef<'_>> {
        if let Some(event) = self.queued.pop_front() {
            return Some(match event {
                AgentEvent::Ir(Event::TextDelta { text }) => EventRef::TextDelta(Cow::Owned(text)),
                AgentEvent::Ir(Event::ThinkingDelta { text }) => {
                    EventRef::ThinkingDelta(Cow::Owned(text))
                }
                other => EventRef::Other(other),
            });
        }
        Some(self.open.take()?.lent(&self.text))
    }

    fn close(&mut self) {
        if let Some(kind) = self.open.take() {
            let text = std::mem::take(&mut self.text);
            self.queued.push_back(kind.event(text));
        }
    }
}

/// `events` with adjacent deltas of one kind merged: what a host sees however often it drains.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn merged_deltas(events: &[AgentEvent]) -> Vec<AgentEvent> {
    let mut out: Vec<AgentEvent> = Vec::new();
    for event in events {
        match (out.last_mut(), event) {
            (
                Some(AgentEvent::Ir(Event::TextDelta { text: last })),
                AgentEvent::Ir(Event::TextDelta { text }),
            )
            | (
                Some(AgentEvent::Ir(Event::ThinkingDelta { text: last })),
                AgentEvent::Ir(Event::ThinkingDelta { text }),
            ) => last.push_str(text),
            _ => out.push(event.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(queue: &mut EventQueue) -> Vec<String> {
        std::iter::from_fn(|| queue.pop())
            .map(|event| match event {
                AgentEvent::Ir(Event::TextDelta { text }) => format!("t:{text}"),
                AgentEvent::Ir(Event::ThinkingDelta { text }) => format!("k:{text}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn deltas_of_one_kind_merge_until_another_kind_or_event_closes_them() {
        let mut queue = EventQueue::default();
        queue.push_delta(Delta::Text, "a");
        queue.push_delta(Delta::Text, "b");
        queue.push_delta(Delta::Thinking, "c");
        queue.push(AgentEvent::Ir(Event::Aborted));
        queue.push_delta(Delta::Thinking, "d");
        queue.push_delta(Delta::Thinking, "é");
        assert_eq!(texts(&mut queue), ["t:ab", "k:c", "Ir(Aborted)", "k:dé"]);
        assert!(queue.pop().is_none());
    }

    fn lent(queue: &mut EventQueue) -> Vec<String> {
        std::iter::from_fn(|| {
            queue.pop_ref().map(|event| match event {
                EventRef::TextDelta(text) => format!("t:{text}"),
                EventRef::ThinkingDelta(text) => format!("k:{text}"),
                EventRef::Other(other) => format!("{other:?}"),
            })
        })
        .collect()
    }

    #[test]
    fn lent_deltas_read_like_polled_ones_and_reuse_one_allocation() {
        let mut queue = EventQueue::default();
        queue.push_delta(Delta::Text, "a");
        queue.push_delta(Delta::Thinking, "b");
        queue.push_delta(Delta::Thinking, "c");
        assert_eq!(lent(&mut queue), ["t:a", "k:bc"]);
        let buffer = queue.text.as_ptr();
        queue.push_delta(Delta::Text, "d");
        assert_eq!(
            queue.text.as_ptr(),
            buffer,
            "the lent string's allocation is reused"
        );
        assert_eq!(lent(&mut queue), ["t:d"]);
        // Owned and lent polls mix: the text of a delta is handed out once either way.
        queue.push_delta(Delta::Text, "e");
        queue.push(AgentEvent::Ir(Event::Aborted));
        queue.push_delta(Delta::Text, "f");
        assert_eq!(
            queue.pop(),
            Some(AgentEvent::Ir(Event::TextDelta { text: "e".into() }))
        );
        assert_eq!(lent(&mut queue), ["Ir(Aborted)", "t:f"]);
        assert!(queue.pop().is_none() && queue.pop_ref().is_none());
    }

    #[test]
    fn a_polled_delta_is_closed_and_the_next_one_starts_fresh() {
        let mut queue = EventQueue::default();
        queue.push_delta(Delta::Text, "one");
        assert_eq!(texts(&mut queue), ["t:one"]);
        queue.push_delta(Delta::Text, "two");
        assert_eq!(texts(&mut queue), ["t:two"]);
    }
}
