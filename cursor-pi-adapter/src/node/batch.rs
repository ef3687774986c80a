//! Events that arrive together reach JS in one callback: the runtime appends each event's JSON
//! to a shared array and schedules a JS call only when the array was empty; the call takes
//! whatever has accumulated by the time the JS thread runs it.

use std::sync::{Arc, Mutex, PoisonError};

use napi::Status;
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};

/// JSON text of the events not yet handed to JS: `[` and comma-separated events, unclosed.
#[derive(Debug, Default)]
struct Pending(Mutex<String>);

impl Pending {
    /// Appends one event; true when the array was empty (a JS call must be scheduled).
    fn push(&self, event: &str) -> bool {
        let mut text = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let first = text.is_empty();
        text.push(if first { '[' } else { ',' });
        text.push_str(event);
        first
    }

    /// Everything accumulated, as a JSON array (`[]` if nothing).
    fn take(&self) -> String {
        let mut text = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        if text.is_empty() {
            text.push('[');
        }
        text.push(']');
        text
    }
}

/// A JS `(eventsJson) => void` callback fed in batches (`eventsJson` is a JSON array).
pub(crate) struct EventBatch {
    pending: Arc<Pending>,
    wake: ThreadsafeFunction<(), (), String, Status, false>,
}

impl std::fmt::Debug for EventBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBatch")
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl EventBatch {
    /// Wraps `callback` (on the JS thread, while the export runs).
    pub(crate) fn new(callback: &Function<'_, String, ()>) -> napi::Result<Self> {
        let pending = Arc::new(Pending::default());
        let taker = Arc::clone(&pending);
        let wake = callback
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .build_callback(move |_| Ok(taker.take()))?;
        Ok(Self { pending, wake })
    }

    /// Queues one event's JSON for JS.
    pub(crate) fn send(&self, event: &str) {
        if self.pending.push(event) {
            // A closing environment refuses the call; there is nobody left to tell.
            let _status = self.wake.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pushed_before_a_take_arrive_as_one_array_and_only_the_first_schedules() {
        let pending = Pending::default();
        assert!(pending.push(r#"{"type":"start"}"#));
        assert!(!pending.push(r#"{"type":"text_delta"}"#));
        assert_eq!(
            pending.take(),
            r#"[{"type":"start"},{"type":"text_delta"}]"#
        );
        assert_eq!(pending.take(), "[]");
        assert!(pending.push("{}"), "an emptied batch schedules again");
    }
}
