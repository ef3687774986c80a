//! The replica's checkpoints: a `ConversationStateStructure` whose turns are the conversation
//! so far, one JSON object per turn.

use cursor_proto::agent::v1::ConversationStateStructure;
use prost::Message as _;
use serde::{Deserialize, Serialize};

/// One completed turn as the replica journals it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Turn {
    pub(super) user: String,
    pub(super) assistant: String,
}

impl Turn {
    pub(super) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// What the replica keeps per conversation id.
#[derive(Clone, Debug, Default)]
pub(super) struct StoredConversation {
    pub(super) turns: Vec<Turn>,
    /// The MCP provider the host registered its tools under (kept across resumes, which may
    /// omit `mcp_tools`, as the backend keeps the registration).
    pub(super) provider: String,
    /// The names of the host tools registered (kept across resumes like `provider`).
    pub(super) tools: Vec<String>,
    /// A Run of this conversation asked for a tool result and its client went away before
    /// sending it: the backend still waits for it, and every later Run stalls.
    pub(super) owes_tool_result: bool,
    /// When the last checkpoint was written (the backend expires old ones).
    pub(super) checkpointed_at: Option<std::time::Instant>,
    /// The backend lost this conversation's state this way: its next Run fails so.
    pub(super) lost: Option<super::StateLoss>,
}

impl StoredConversation {
    /// The encoded turns as the last checkpoint carried them.
    pub(super) fn journal(&self) -> Vec<Vec<u8>> {
        self.turns.iter().map(Turn::encode).collect()
    }

    /// The checkpoint after `turns`: the state as received with the journal replaced.
    pub(super) fn checkpoint(&self, received: &ConversationStateStructure) -> Vec<u8> {
        ConversationStateStructure {
            turns: self.journal(),
            ..received.clone()
        }
        .encode_to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_carry_every_turn_and_keep_the_root_prompt() {
        let stored = StoredConversation {
            turns: vec![Turn {
                user: "ping".into(),
                assistant: "pong".into(),
            }],
            provider: "acme".into(),
            ..StoredConversation::default()
        };
        let received = ConversationStateStructure {
            root_prompt_messages_json: vec![vec![1; 32]],
            ..Default::default()
        };
        let bytes = stored.checkpoint(&received);
        let decoded = ConversationStateStructure::decode(bytes.as_slice()).unwrap();
        assert_eq!(decoded.root_prompt_messages_json, vec![vec![1; 32]]);
        assert_eq!(decoded.turns, stored.journal());
        let turn: Turn = serde_json::from_slice(&decoded.turns[0]).unwrap();
        assert_eq!(turn.assistant, "pong");
    }
}
