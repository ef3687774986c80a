//! [`RunEvents`]: the run's events as an async stream.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;

use crate::AgentEvent;

/// The events of one driven Run, in order, across every leg of its turn.
///
/// Each leg ends with exactly one `Done`, `Error` or `Aborted`; after `Done { reason: ToolUse }`
/// the next leg's events follow once the host submitted its results. The stream ends when the
/// run is finished. Dropping it cancels the run.
#[derive(Debug)]
pub struct RunEvents {
    receiver: mpsc::Receiver<AgentEvent>,
}

impl RunEvents {
    pub(crate) fn new(receiver: mpsc::Receiver<AgentEvent>) -> Self {
        Self { receiver }
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
