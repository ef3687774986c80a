//! What the agent and inference drivers share: the bounded outlet to the host's event queue
//! (backpressure), the deadline sleep, and how a stream closes after its turn.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::BidiCall;

/// How long a stream whose turn finished cleanly waits, after the half-close, for the server
/// to end its side before it is reset.
pub const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// The host's bounded event queue, and the one event taken from a state machine that the queue
/// had no room for: while that event waits, a driver reads no more of the response
/// (backpressure through HTTP/2 flow control, not buffering).
#[derive(Debug)]
pub struct Outlet<E> {
    sender: mpsc::Sender<E>,
    pending: Option<E>,
    listening: bool,
}

impl<E> Outlet<E> {
    /// An outlet into `sender`'s queue.
    pub fn new(sender: mpsc::Sender<E>) -> Self {
        Self {
            sender,
            pending: None,
            listening: true,
        }
    }

    /// True while an event waits for room: the driver must not read the response.
    pub fn is_blocked(&self) -> bool {
        self.pending.is_some()
    }

    /// True while the host still reads the events.
    pub fn is_listening(&self) -> bool {
        self.listening
    }

    /// Notes that nobody reads the events any more.
    pub fn stop_listening(&mut self) {
        self.listening = false;
        self.pending = None;
    }

    /// Hands events from `next` to the host until its queue is full (the event that did not
    /// fit waits) or `next` has none. Once nobody listens, the events are taken and dropped.
    /// `next` is called once per event taken, so a driver can note what passes.
    pub fn forward(&mut self, mut next: impl FnMut() -> Option<E>) {
        while self.listening {
            let Some(event) = self.pending.take().or_else(&mut next) else {
                return;
            };
            match self.sender.try_send(event) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(event)) => {
                    self.pending = Some(event);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => self.listening = false,
            }
        }
        self.pending = None;
        while next().is_some() {}
    }

    /// Waits until the host's queue has room for the waiting event; the listener is gone when
    /// it returns false. (The slot is not held: the driver is the only sender, so its next
    /// `forward` gets it.)
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it reserves nothing it could lose (use it in `select!`).
    pub async fn has_room(&self) -> bool {
        self.sender.reserve().await.is_ok()
    }

    /// Resolves once the host dropped its end of the queue.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only waits.
    pub async fn closed(&self) {
        self.sender.closed().await;
    }

    /// Forwards every event `next` yields, waiting for room as needed, until none is left or
    /// nobody listens.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: an event taken but not yet delivered waits in the outlet for the next
    /// `forward` or `flush`.
    pub async fn flush(&mut self, mut next: impl FnMut() -> Option<E>) {
        loop {
            self.forward(&mut next);
            if !self.is_blocked() || !self.listening {
                return;
            }
            if !self.has_room().await {
                self.listening = false;
            }
        }
    }

    /// Ends the host's event stream now (queued events stay readable).
    pub fn close(&mut self) {
        let (closed, _) = mpsc::channel(1);
        drop(std::mem::replace(&mut self.sender, closed));
        self.listening = false;
    }
}

/// Sleeps until `deadline` on tokio's clock, forever when there is none.
///
/// # Cancel safety
///
/// Cancel-safe: it only waits.
pub async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

/// Ends `call` after a turn that finished cleanly: half-closes, gives the server
/// [`CLOSE_GRACE`] to end its side (anything it still sends is not part of the turn), then
/// resets the stream if it has not ended.
///
/// # Cancel safety
///
/// Not cancel-safe: dropped during the grace period, the stream is left half-closed (dropping
/// the call then resets it).
pub async fn close_gracefully(call: &mut BidiCall) {
    if call.close_send().is_err() {
        call.cancel();
        return;
    }
    let drained = tokio::time::timeout(CLOSE_GRACE, call.discard_rest()).await;
    if drained.is_err() {
        call.cancel();
    }
}
