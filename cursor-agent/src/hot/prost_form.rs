//! The hot decoder's frames in prost's form: what the property tests and the `hot_decoder`
//! fuzz target compare against prost (never on the hot path itself).

use cursor_proto::agent::v1::{
    AgentServerMessage, HeartbeatUpdate, InteractionUpdate, TextDeltaUpdate, ThinkingDeltaUpdate,
    TokenDeltaUpdate, agent_server_message::Message as Server,
    interaction_update::Message as Update,
};

use super::{Hot, HotFrame, bare_delta, decode_general};
use crate::event_queue::Delta;

impl HotFrame<'_> {
    /// The message prost decodes from the same bytes (the contract the tests check).
    pub(crate) fn into_message(self) -> AgentServerMessage {
        let update = |message| {
            Server::InteractionUpdate(InteractionUpdate {
                message,
                message_started_at_ms: self.message_started_at_ms,
            })
        };
        let message = match self.arm {
            Hot::Text(text) => update(Some(Update::TextDelta(TextDeltaUpdate {
                text: text.to_owned(),
            }))),
            Hot::Thinking(text) => update(Some(Update::ThinkingDelta(ThinkingDeltaUpdate {
                text: text.to_owned(),
            }))),
            Hot::Tokens(tokens) => update(Some(Update::TokenDelta(TokenDeltaUpdate { tokens }))),
            Hot::Heartbeat => update(Some(Update::Heartbeat(HeartbeatUpdate {}))),
            Hot::NoArm => update(None),
            Hot::TurnEnded(ended) => update(Some(Update::TurnEnded(*ended))),
            Hot::Kv(kv) => Server::KvServerMessage(*kv),
        };
        AgentServerMessage {
            message: Some(message),
            ..AgentServerMessage::default()
        }
    }
}

/// The frame as prost would decode it, when it is one of the hot shapes.
pub(crate) fn decode(frame: &[u8]) -> Option<AgentServerMessage> {
    decode_view(frame).map(HotFrame::into_message)
}

/// The frame when it is one of the hot shapes, `None` to fall back to prost. A frame that
/// only carries fields beside the oneof (`ttft_breakdown`) also falls back.
pub(crate) fn decode_view(frame: &[u8]) -> Option<HotFrame<'_>> {
    if let Some((kind, text)) = bare_delta(frame) {
        return Some(HotFrame {
            arm: match kind {
                Delta::Text => Hot::Text(text),
                Delta::Thinking => Hot::Thinking(text),
            },
            message_started_at_ms: None,
        });
    }
    decode_general(frame)
}
