//! The conversation a host hands to a channel: system prompt, history and tools.

use serde::{Deserialize, Serialize};

use super::Image;

/// Everything a channel needs to run one model turn.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    /// The host's system prompt (empty when the host sent none).
    #[serde(default)]
    pub system_prompt: String,
    /// The transcript, oldest first; the last user message is the turn being asked.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// The tools the host registered, in registration order (ranking falls back to it).
    #[serde(default)]
    pub tools: Vec<Tool>,
}

impl Conversation {
    /// A conversation with a system prompt and nothing else.
    pub fn new(system_prompt: impl Into<String>) -> Self {
        Self {
            system_prompt: system_prompt.into(),
            ..Self::default()
        }
    }

    /// Appends a message.
    #[must_use]
    pub fn with_message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    /// Appends a tool.
    #[must_use]
    pub fn with_tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }
}

/// One transcript entry.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// What the user said, with any images.
    User {
        /// Text and images in order.
        content: Vec<UserContent>,
    },
    /// What the model answered earlier.
    Assistant {
        /// Text, thinking and tool calls in order.
        content: Vec<AssistantContent>,
    },
    /// The host's result for one tool call.
    ToolResult(ToolResult),
}

impl Message {
    /// A user message made of one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::User {
            content: vec![UserContent::Text { text: text.into() }],
        }
    }

    /// An assistant message made of one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::Assistant {
            content: vec![AssistantContent::Text { text: text.into() }],
        }
    }

    /// An assistant message requesting these tool calls.
    pub fn assistant_tool_calls(calls: Vec<ToolCall>) -> Self {
        Self::Assistant {
            content: calls.into_iter().map(AssistantContent::ToolCall).collect(),
        }
    }
}

/// A block of a user message.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum UserContent {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An attached image.
    Image(Image),
}

/// A block of an assistant message.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantContent {
    /// Visible answer text.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning the model exposed.
    Thinking {
        /// The reasoning text.
        text: String,
        /// An opaque provider signature that must travel back unchanged, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// A request to run one host tool.
    ToolCall(ToolCall),
}

/// A model's request to run one host tool.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The id the result must quote back.
    pub id: String,
    /// The host tool's registered name.
    pub name: String,
    /// The arguments as a JSON value (an object for every real tool).
    pub arguments: serde_json::Value,
}

impl ToolCall {
    /// Builds a tool call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// The host's answer to one [`ToolCall`].
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The [`ToolCall::id`] this answers.
    pub tool_call_id: String,
    /// The tool's name, as called.
    pub tool_name: String,
    /// Text and images the tool produced.
    pub content: Vec<ToolResultContent>,
    /// Whether the tool failed (or the host refused to run it).
    #[serde(default)]
    pub is_error: bool,
}

impl ToolResult {
    /// A result made of one text block.
    pub fn text(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            content: vec![ToolResultContent::Text { text: text.into() }],
            is_error,
        }
    }

    /// All text blocks joined with newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                ToolResultContent::Text { text } => Some(text.as_str()),
                ToolResultContent::Image(_) => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// A block of a tool result.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ToolResultContent {
    /// Text output.
    Text {
        /// The text.
        text: String,
    },
    /// An image output.
    Image(Image),
}

/// A tool the host offers the model.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The registered name, unique within the host.
    pub name: String,
    /// What the tool does, as the host describes it.
    #[serde(default)]
    pub description: String,
    /// The arguments' JSON Schema, passed through unchanged.
    pub parameters: serde_json::Value,
}

impl Tool {
    /// Builds a tool declaration.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_are_tagged_by_role_and_blocks_by_type() {
        let message = Message::Assistant {
            content: vec![
                AssistantContent::Thinking {
                    text: "hm".into(),
                    signature: None,
                },
                AssistantContent::ToolCall(ToolCall::new("c1", "bash", json!({"command": "ls"}))),
            ],
        };
        let value = serde_json::to_value(&message).unwrap();
        assert_eq!(
            value,
            json!({"role": "assistant", "content": [
                {"type": "thinking", "text": "hm"},
                {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}
            ]})
        );
        assert_eq!(serde_json::from_value::<Message>(value).unwrap(), message);
    }

    #[test]
    fn tool_result_joins_only_text_blocks() {
        let mut result = ToolResult::text("c1", "read", "a", false);
        result
            .content
            .push(ToolResultContent::Image(Image::new("image/png", vec![1])));
        result
            .content
            .push(ToolResultContent::Text { text: "b".into() });
        assert_eq!(result.joined_text(), "a\nb");
    }

    #[test]
    fn unknown_role_is_rejected() {
        let bad = json!({"role": "narrator", "content": []});
        assert!(serde_json::from_value::<Message>(bad).is_err());
    }
}
