//! What a stored handle must still match: the completed user turns and the tool set.

use cursor_proto::ir::{Message, Tool, UserContent};
use sha2::{Digest, Sha256};

/// SHA-256 over the completed user turns: every user message's texts and image payloads, in
/// order (PROTOCOL-AGENT §10). Assistant wording and tool results are left out, so a differently
/// worded answer never makes a handle stale; an edited text, a rewind or a swapped image does.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of the user messages among `messages`.
    pub fn of_user_turns(messages: &[Message]) -> Self {
        let mut hasher = Sha256::new();
        for message in messages {
            let Message::User { content } = message else {
                continue;
            };
            hasher.update(b"U");
            for block in content {
                match block {
                    UserContent::Text { text } => field(&mut hasher, b'T', text.as_bytes()),
                    UserContent::Image(image) => {
                        field(&mut hasher, b'M', image.mime_type.as_bytes());
                        field(&mut hasher, b'I', &image.data);
                    }
                    // A future content kind is hashed by its JSON so it still counts.
                    other => field(
                        &mut hasher,
                        b'O',
                        serde_json::to_string(other).unwrap_or_default().as_bytes(),
                    ),
                }
            }
        }
        Self(hasher.finalize().into())
    }

    /// Lower-case hex.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Parses [`to_hex`](Self::to_hex) output.
    pub fn from_hex(text: &str) -> Option<Self> {
        parse_hex32(text).map(Self)
    }
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fingerprint({})", self.to_hex())
    }
}

/// SHA-256 over the tool set: every tool's name and JSON Schema, in registration order. When it
/// matches the stored key, a resume omits `mcp_tools` (the server kept the registration).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ToolsetKey([u8; 32]);

impl ToolsetKey {
    /// The key of `tools`.
    pub fn of(tools: &[Tool]) -> Self {
        let mut hasher = Sha256::new();
        for tool in tools {
            field(&mut hasher, b'N', tool.name.as_bytes());
            field(&mut hasher, b'S', tool.parameters.to_string().as_bytes());
        }
        Self(hasher.finalize().into())
    }

    /// Lower-case hex.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Parses [`to_hex`](Self::to_hex) output.
    pub fn from_hex(text: &str) -> Option<Self> {
        parse_hex32(text).map(Self)
    }
}

impl std::fmt::Debug for ToolsetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ToolsetKey({})", self.to_hex())
    }
}

/// A tagged, length-prefixed field, so no two inputs hash the same byte stream.
fn field(hasher: &mut Sha256, tag: u8, bytes: &[u8]) {
    hasher.update([tag]);
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}

pub(crate) use cursor_proto::hex::encode as hex;

pub(crate) fn parse_hex32(text: &str) -> Option<[u8; 32]> {
    cursor_proto::hex::decode_array(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_proto::ir::Image;
    use serde_json::json;

    fn user_with_image(text: &str, data: &[u8]) -> Message {
        Message::User {
            content: vec![
                UserContent::Text { text: text.into() },
                UserContent::Image(Image::new("image/png", data.to_vec())),
            ],
        }
    }

    #[test]
    fn assistant_wording_does_not_change_the_fingerprint() {
        let a = [Message::user_text("hi"), Message::assistant_text("hello")];
        let b = [
            Message::user_text("hi"),
            Message::assistant_text("hey there"),
        ];
        assert_eq!(
            Fingerprint::of_user_turns(&a),
            Fingerprint::of_user_turns(&b)
        );
    }

    #[test]
    fn edited_text_and_swapped_images_do() {
        let base = Fingerprint::of_user_turns(&[user_with_image("look", &[1, 2])]);
        assert_ne!(
            base,
            Fingerprint::of_user_turns(&[user_with_image("look!", &[1, 2])])
        );
        assert_ne!(
            base,
            Fingerprint::of_user_turns(&[user_with_image("look", &[1, 3])])
        );
        // Moving text across a message boundary is a different history.
        assert_ne!(
            Fingerprint::of_user_turns(&[Message::user_text("ab")]),
            Fingerprint::of_user_turns(&[Message::user_text("a"), Message::user_text("b")])
        );
    }

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        let key = ToolsetKey::of(&[Tool::new("bash", "", json!({"type": "object"}))]);
        assert_eq!(ToolsetKey::from_hex(&key.to_hex()), Some(key));
        assert_eq!(ToolsetKey::from_hex("zz"), None);
        assert_ne!(key, ToolsetKey::of(&[Tool::new("bash", "", json!({}))]));
    }
}
