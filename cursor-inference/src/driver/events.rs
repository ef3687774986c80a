//! The host side of a turn: its events, in order.

use std::pin::Pin;
use std::task::{Context, Poll};

use cursor_proto::ir::Event;
use futures::Stream;
use tokio::sync::mpsc;

/// The events of one turn. Ends after the turn's last event; dropping it cancels the turn.
///
/// A host that stops reading stops the turn reading the stream once
/// [`EVENT_QUEUE`](super::EVENT_QUEUE) events wait (backpressure, not buffering).
#[derive(Debug)]
pub struct InferenceEvents {
    receiver: mpsc::Receiver<Event>,
}

impl InferenceEvents {
    pub(crate) fn new(receiver: mpsc::Receiver<Event>) -> Self {
        Self { receiver }
    }
}

impl Stream for InferenceEvents {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.receiver.poll_recv(cx)
    }
}
