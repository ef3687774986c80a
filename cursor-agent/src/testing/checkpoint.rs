//! The replica's checkpoints: a `ConversationStateStructure` whose turns are the conversation
//! so far, one JSON object per turn.

use cursor_proto::agent::v1::conversation_action::Action;
use cursor_proto::agent::v1::{AgentRunRequest, ConversationStateStructure};
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
    /// The images this conversation was sent: the SHA-256 of each one's bytes (hex) and the
    /// id it came under.
    pub(super) images: std::collections::HashMap<String, String>,
    /// An image came under a second id: every later Run of it fails `Image not found`.
    pub(super) poisoned: bool,
}

impl StoredConversation {
    /// The encoded turns as the last checkpoint carried them.
    pub(super) fn journal(&self) -> Vec<Vec<u8>> {
        self.turns.iter().map(Turn::encode).collect()
    }

    /// A conversation starting from a checkpoint's journal (its turns as sent; no tool
    /// registration, no images).
    pub(super) fn from_journal(journal: &[Vec<u8>]) -> Self {
        Self {
            turns: journal
                .iter()
                .filter_map(|turn| serde_json::from_slice(turn).ok())
                .collect(),
            ..Self::default()
        }
    }

    /// Registers the run request's images; false when one cannot be matched: this
    /// conversation is poisoned, a known image came under a new id, or an id without data
    /// was never sent.
    pub(super) fn check_images(&mut self, request: &AgentRunRequest) -> bool {
        use sha2::{Digest, Sha256};
        if self.poisoned {
            return false;
        }
        let images = request
            .action
            .as_ref()
            .and_then(|a| a.action.as_ref())
            .and_then(|Action::UserMessageAction(action)| action.user_message.as_ref())
            .and_then(|m| m.selected_context.as_ref())
            .map(|c| c.selected_images.as_slice())
            .unwrap_or_default();
        for image in images {
            if image.data.is_empty() {
                if !self.images.values().any(|id| *id == image.uuid) {
                    return false;
                }
                continue;
            }
            let key = cursor_proto::hex::encode(&Sha256::digest(&image.data));
            match self.images.get(&key) {
                Some(id) if *id != image.uuid => return false,
                Some(_) => {}
                None => {
                    self.images.insert(key, image.uuid.clone());
                }
            }
        }
        true
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
