//! The seam between orchestration and a Cursor channel.

use std::fmt;

use cursor_proto::ir::Event;
use futures::stream::BoxStream;

use super::{ChannelKind, Turn};

/// A Cursor channel: answers one turn as a stream of conversation-model events.
///
/// The stream should end with exactly one [`Event::Done`], [`Event::Error`] or
/// [`Event::Aborted`]; if it stops without one, the turn fails as a cut-off stream. Dropping the
/// stream cancels the turn (that is how a host abort reaches the channel), so implementations
/// release their connection on drop.
pub trait Channel: Send + Sync + fmt::Debug {
    /// Which channel this is.
    fn kind(&self) -> ChannelKind;

    /// Starts answering `turn`.
    fn open(&self, turn: Turn) -> BoxStream<'static, Event>;
}
