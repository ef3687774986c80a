//! Channels that refuse every turn, and the reasons this version gives.

use cursor_proto::ir::{ErrorInfo, ErrorKind, Event};
use futures::stream::{self, BoxStream, StreamExt};

use super::{CHANNEL_ENV, Channel, ChannelKind, Turn};

/// Why `CURSOR_PROVIDER_CHANNEL=inference` fails in this version. The turn is refused, never
/// sent to the agent channel instead.
pub fn inference_unavailable() -> ErrorInfo {
    ErrorInfo::new(
        ErrorKind::Local,
        format!(
            "{CHANNEL_ENV}=inference selects the RunInference channel, which this version of the cursor provider does not include; the turn was not sent to any other channel"
        ),
        format!("unset {CHANNEL_ENV} or set it to agent, to use the agent channel"),
    )
}

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
    use cursor_proto::ir::Conversation;
    use futures::executor::block_on;

    use super::*;
    use crate::compat::ModelInfo;
    use crate::provider::TurnOptions;

    #[test]
    fn an_unavailable_channel_answers_every_turn_with_its_reason_only() {
        let channel = UnavailableChannel::new(ChannelKind::Inference, inference_unavailable());
        let turn = Turn::new(
            ModelInfo::new("cursor-agent", "cursor", "auto"),
            Conversation::new(""),
            TurnOptions::default(),
        );
        let events: Vec<Event> = block_on(channel.open(turn).collect());
        assert_eq!(events, [Event::Error(inference_unavailable())]);
    }

    #[test]
    fn the_inference_refusal_says_there_is_no_fallback_and_how_to_switch() {
        let reason = inference_unavailable();
        assert_eq!(reason.kind, ErrorKind::Local);
        assert!(
            reason.message.contains("not sent to any other channel"),
            "{reason}"
        );
        assert!(reason.next_step.contains(CHANNEL_ENV), "{reason}");
    }
}
