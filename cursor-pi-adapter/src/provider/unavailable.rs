//! A channel that refuses every turn: what a channel that cannot be built answers.

use cursor_proto::ir::{ErrorInfo, Event};
use futures::stream::{self, BoxStream, StreamExt};

use super::{Channel, ChannelKind, Turn};

/// A channel that cannot answer in this build or configuration: every turn fails at once with
/// the same classified error, before any I/O.
#[derive(Clone, Debug)]
pub struct UnavailableChannel {
    kind: ChannelKind,
    reason: ErrorInfo,
}

impl UnavailableChannel {
    /// A channel of `kind` whose every turn fails with `reason`.
    pub fn new(kind: ChannelKind, reason: ErrorInfo) -> Self {
        Self { kind, reason }
    }

    /// Why every turn fails.
    pub fn reason(&self) -> &ErrorInfo {
        &self.reason
    }
}

impl Channel for UnavailableChannel {
    fn kind(&self) -> ChannelKind {
        self.kind
    }

    fn open(&self, _turn: Turn) -> BoxStream<'static, Event> {
        stream::iter([Event::Error(self.reason.clone())]).boxed()
    }
}

#[cfg(test)]
mod tests {
    use cursor_proto::ir::{Conversation, ErrorKind};
    use futures::executor::block_on;

    use super::*;
    use crate::compat::ModelInfo;
    use crate::provider::TurnOptions;

    #[test]
    fn an_unavailable_channel_answers_every_turn_with_its_reason_only() {
        let reason = ErrorInfo::new(
            ErrorKind::Local,
            "no machine id",
            cursor_proto::ir::NextStep::fix_config("unset the channel"),
        );
        let channel = UnavailableChannel::new(ChannelKind::Inference, reason.clone());
        assert_eq!(channel.kind(), ChannelKind::Inference);
        assert_eq!(channel.reason(), &reason);
        let turn = Turn::new(
            ModelInfo::new("cursor-agent", "cursor", "auto"),
            Conversation::new(""),
            TurnOptions::default(),
        );
        let events: Vec<Event> = block_on(channel.open(turn).collect());
        assert_eq!(events, [Event::Error(reason)]);
    }
}
