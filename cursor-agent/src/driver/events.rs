//! [`RunEvents`]: the run's events as an async stream.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;

use crate::{AgentError, AgentEvent};

/// The events of one driven Run, in order, across every leg of its turn.
///
/// Each leg ends with exactly one `Done`, `Error` or `Aborted`; after `Done { reason: ToolUse }`
/// the next leg's events follow once the host submitted its results. The stream ends when the
/// run is finished. Dropping it cancels the run.
#[derive(Debug)]
pub struct RunEvents {
    receiver: mpsc::Receiver<AgentEvent>,
    failure: Arc<OnceLock<AgentError>>,
}

impl RunEvents {
    pub(crate) fn new(
        receiver: mpsc::Receiver<AgentEvent>,
        failure: Arc<OnceLock<AgentError>>,
    ) -> Self {
        Self { receiver, failure }
    }

    /// The typed failure behind the run's `Error` event: set before that event is queued, so
    /// a host holding the event can ask what it was (for instance
    /// [`AgentError::is_stale_resume`]) without waiting for the [`RunTask`](super::RunTask).
    /// `None` before an `Error` event and for runs that did not fail.
    pub fn failure(&self) -> Option<&AgentError> {
        self.failure.get()
    }

    /// The next event, `None` once the run is finished and everything was delivered.
    ///
    /// A host that stops calling it stops the Run reading the stream once
    /// [`EVENT_QUEUE`](super::EVENT_QUEUE) events wait (backpressure, not buffering).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a dropped call loses no event.
    pub async fn recv(&mut self) -> Option<AgentEvent> {
        self.receiver.recv().await
    }
}

impl Stream for RunEvents {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        self.receiver.poll_recv(cx)
    }
}
