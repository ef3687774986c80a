//! Events that arrive together reach JS in one callback: the runtime appends each event's JSON
//! to a shared array and schedules a JS call only when the array was empty; the call takes
//! whatever has accumulated by the time the JS thread runs it.
//!
//! The array is bounded like the drivers' event queues: while [`MAX_PENDING`] bytes wait for a
//! busy JS thread, the turn pulls no more events from its channel, so the channel's own bounded
//! queue fills and HTTP/2 flow control holds the server back.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use cursor_proto::ir::Event;
use futures::stream::{self, BoxStream, StreamExt as _};
use napi::Status;
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use tokio::sync::Notify;

use crate::provider::{Channel, ChannelKind, Turn};

/// Bytes of event JSON that may wait for the JS thread before the turn stops pulling events
/// (one event's JSON more at most: the check comes before each pull).
pub(crate) const MAX_PENDING: usize = 1 << 20;

/// JSON text of the events not yet handed to JS: `[` and comma-separated events, unclosed.
#[derive(Debug, Default)]
struct Pending {
    text: Mutex<String>,
    /// Signalled when JS took the array, or when it never will.
    taken: Notify,
    /// The JS environment refused a call: nothing will be taken again.
    closed: AtomicBool,
}

impl Pending {
    /// Appends one event; true when the array was empty (a JS call must be scheduled).
    fn push(&self, event: &str) -> bool {
        let mut text = self.lock();
        let first = text.is_empty();
        text.push(if first { '[' } else { ',' });
        text.push_str(event);
        first
    }

    /// Everything accumulated, as a JSON array (`[]` if nothing).
    fn take(&self) -> String {
        let mut text = std::mem::take(&mut *self.lock());
        self.taken.notify_waiters();
        if text.is_empty() {
            text.push('[');
        }
        text.push(']');
        text
    }

    /// JS will take nothing more: nobody waits for room again.
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.taken.notify_waiters();
    }

    /// Resolves once fewer than `bound` bytes wait for JS, or JS will never take them.
    async fn room(&self, bound: usize) {
        loop {
            let taken = self.taken.notified();
            tokio::pin!(taken);
            // Registered before the check, so a take between the two is not missed.
            taken.as_mut().enable();
            if self.lock().len() < bound || self.closed.load(Ordering::Acquire) {
                return;
            }
            taken.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, String> {
        self.text.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `events`, pulled only while fewer than [`MAX_PENDING`] bytes wait for JS in `pending`.
fn paced(events: BoxStream<'static, Event>, pending: Arc<Pending>) -> BoxStream<'static, Event> {
    stream::unfold((events, pending), |(mut events, pending)| async move {
        pending.room(MAX_PENDING).await;
        let event = events.next().await?;
        Some((event, (events, pending)))
    })
    .boxed()
}

/// A JS `(eventsJson) => void` callback fed in batches (`eventsJson` is a JSON array).
pub(crate) struct EventBatch {
    pending: Arc<Pending>,
    wake: ThreadsafeFunction<(), (), String, Status, false>,
}

impl fmt::Debug for EventBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
            // A closing environment refuses the call; there is nobody left to tell, and
            // nobody to wait for.
            if self.wake.call((), ThreadsafeFunctionCallMode::NonBlocking) != Status::Ok {
                self.pending.close();
            }
        }
    }

    /// `channel`, its turns' events pulled only while this batch has room.
    pub(crate) fn paced(&self, channel: Arc<dyn Channel>) -> Arc<dyn Channel> {
        Arc::new(Paced {
            channel,
            pending: Arc::clone(&self.pending),
        })
    }
}

/// A channel whose events wait for room in the JS batch.
struct Paced {
    channel: Arc<dyn Channel>,
    pending: Arc<Pending>,
}

impl fmt::Debug for Paced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Transparent: what the turn talks to is the wrapped channel.
        fmt::Debug::fmt(&self.channel, f)
    }
}

impl Channel for Paced {
    fn kind(&self) -> ChannelKind {
        self.channel.kind()
    }

    fn open(&self, turn: Turn) -> BoxStream<'static, Event> {
        paced(self.channel.open(turn), Arc::clone(&self.pending))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

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

    /// An endless turn whose events the JS thread stops taking: the turn stops pulling once
    /// about `MAX_PENDING` bytes wait, and pulls again once JS took the batch.
    #[tokio::test]
    async fn a_js_thread_that_stops_taking_batches_holds_the_turn_back() {
        let pending = Arc::new(Pending::default());
        let pulled = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&pulled);
        let endless = stream::repeat_with(move || {
            counter.fetch_add(1, Ordering::Relaxed);
            Event::TextDelta {
                text: "x".repeat(1000),
            }
        });
        let mut events = paced(endless.boxed(), Arc::clone(&pending));
        let wait = Duration::from_millis(50);
        while let Ok(Some(event)) = tokio::time::timeout(wait, events.next()).await {
            let Event::TextDelta { text } = event else {
                unreachable!()
            };
            pending.push(&text);
            assert!(
                pulled.load(Ordering::Relaxed) < 10 * MAX_PENDING / 1000,
                "nothing held the turn back"
            );
        }
        let held = pending.lock().len();
        assert!(
            (MAX_PENDING..MAX_PENDING + 1002).contains(&held),
            "{held} bytes wait"
        );
        let before = pulled.load(Ordering::Relaxed);
        assert!(pending.take().len() > MAX_PENDING);
        assert!(tokio::time::timeout(wait, events.next()).await.is_ok());
        assert_eq!(pulled.load(Ordering::Relaxed), before + 1);
    }

    #[tokio::test]
    async fn a_closed_js_environment_never_holds_the_turn() {
        let pending = Pending::default();
        pending.push(&"x".repeat(MAX_PENDING));
        pending.close();
        tokio::time::timeout(Duration::from_millis(50), pending.room(MAX_PENDING))
            .await
            .expect("no wait once JS is gone");
    }
}
