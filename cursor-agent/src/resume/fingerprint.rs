//! What a stored handle must still match: the completed user turns and the tool set.

use cursor_proto::ir::{AssistantContent, Message, Tool, ToolResultContent, UserContent};
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
            user_content(&mut hasher, content);
        }
        Self(hasher.finalize().into())
    }

    /// The fingerprint after each user message among `messages`: element `j` is the
    /// [`of_user_turns`](Self::of_user_turns) of everything up to the `j + 1`-th user message.
    pub fn user_prefixes(messages: &[Message]) -> Vec<Self> {
        let mut hasher = Sha256::new();
        let mut out = Vec::new();
        for message in messages {
            let Message::User { content } = message else {
                continue;
            };
            hasher.update(b"U");
            user_content(&mut hasher, content);
            out.push(Self(hasher.clone().finalize().into()));
        }
        out
    }

    /// The digest a handle store indexes a turn by, to find it from another host session (a
    /// forked or copied session file; PROTOCOL-AGENT §10.1): the user turns as in
    /// [`of_user_turns`](Self::of_user_turns), plus every tool call's name and arguments and
    /// every tool result's content, in order. Assistant wording and thinking are left out (a
    /// host may store them differently); the tool traffic is in, so two sessions that only
    /// share their user texts never share a checkpoint that read different files. Trailing
    /// assistant messages are left out too: a completed turn's transcript, as the host sends it
    /// with its next turn, ends with the answer the checkpoint already holds.
    pub fn of_history(messages: &[Message]) -> Self {
        let end = messages
            .iter()
            .rposition(|m| !matches!(m, Message::Assistant { .. }))
            .map_or(0, |i| i + 1);
        let mut hasher = Sha256::new();
        hasher.update(b"history-v1");
        for message in &messages[..end] {
            match message {
                Message::User { content } => {
                    hasher.update(b"U");
                    user_content(&mut hasher, content);
                }
                Message::Assistant { content } => {
                    for block in content {
                        if let AssistantContent::ToolCall(call) = block {
                            field(&mut hasher, b'C', call.name.as_bytes());
                            field(&mut hasher, b'A', call.arguments.to_string().as_bytes());
                        }
                    }
                }
                Message::ToolResult(result) => {
                    hasher.update(if result.is_error { b"E" } else { b"R" });
                    for block in &result.content {
                        match block {
                            ToolResultContent::Text { text } => {
                                field(&mut hasher, b'T', text.as_bytes());
                            }
                            ToolResultContent::Image(image) => {
                                field(&mut hasher, b'M', image.mime_type.as_bytes());
                                field(&mut hasher, b'I', &image.data);
                            }
                            other => field(
                                &mut hasher,
                                b'O',
                                serde_json::to_string(other).unwrap_or_default().as_bytes(),
                            ),
                        }
                    }
                }
                other => field(
                    &mut hasher,
                    b'X',
                    serde_json::to_string(other).unwrap_or_default().as_bytes(),
                ),
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

fn user_content(hasher: &mut Sha256, content: &[UserContent]) {
    for block in content {
        match block {
            UserContent::Text { text } => field(hasher, b'T', text.as_bytes()),
            UserContent::Image(image) => {
                field(hasher, b'M', image.mime_type.as_bytes());
                field(hasher, b'I', &image.data);
            }
            // A future content kind is hashed by its JSON so it still counts.
            other => field(
                hasher,
                b'O',
                serde_json::to_string(other).unwrap_or_default().as_bytes(),
            ),
        }
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
    fn user_prefixes_are_the_fingerprints_of_each_prefix() {
        let messages = [
            Message::user_text("a"),
            Message::assistant_text("x"),
            Message::user_text("b"),
            Message::assistant_text("y"),
        ];
        let prefixes = Fingerprint::user_prefixes(&messages);
        assert_eq!(prefixes.len(), 2);
        assert_eq!(prefixes[0], Fingerprint::of_user_turns(&messages[..1]));
        assert_eq!(prefixes[1], Fingerprint::of_user_turns(&messages));
    }

    #[test]
    fn the_history_digest_covers_tool_traffic_but_not_trailing_answers() {
        use cursor_proto::ir::{ToolCall, ToolResult};
        let call = |args: serde_json::Value| Message::Assistant {
            content: vec![AssistantContent::ToolCall(ToolCall::new(
                "c1", "read", args,
            ))],
        };
        let base = vec![
            Message::user_text("read it"),
            call(json!({"path": "a"})),
            Message::ToolResult(ToolResult::text("c1", "read", "secret A", false)),
        ];
        let mut answered = base.clone();
        answered.push(Message::assistant_text("done"));
        assert_eq!(
            Fingerprint::of_history(&base),
            Fingerprint::of_history(&answered)
        );
        let mut other = base.clone();
        other[2] = Message::ToolResult(ToolResult::text("c1", "read", "secret B", false));
        assert_ne!(
            Fingerprint::of_history(&base),
            Fingerprint::of_history(&other)
        );
        let mut moved = base.clone();
        moved[1] = call(json!({"path": "b"}));
        assert_ne!(
            Fingerprint::of_history(&base),
            Fingerprint::of_history(&moved)
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
