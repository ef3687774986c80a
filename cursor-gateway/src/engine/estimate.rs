//! Token estimates for what Cursor has not counted: a token per four bytes of text and JSON,
//! and a flat 1 600 per image (Anthropic's own rule of thumb for a mid-size image).

use cursor_agent::ir::{AssistantContent, Conversation, Message, ToolResultContent, UserContent};

/// A rough token count of `conversation`; never zero for non-empty input.
pub(crate) fn estimate_tokens(conversation: &Conversation) -> u64 {
    let mut bytes = conversation.system_prompt.len();
    let mut images = 0u64;
    for tool in &conversation.tools {
        bytes += tool.name.len() + tool.description.len() + tool.parameters.to_string().len();
    }
    for message in &conversation.messages {
        match message {
            Message::User { content } => {
                for block in content {
                    match block {
                        UserContent::Text { text } => bytes += text.len(),
                        _ => images += 1,
                    }
                }
            }
            Message::Assistant { content } => {
                for block in content {
                    match block {
                        AssistantContent::Text { text }
                        | AssistantContent::Thinking { text, .. } => {
                            bytes += text.len();
                        }
                        AssistantContent::ToolCall(call) => {
                            bytes += call.name.len() + call.arguments.to_string().len();
                        }
                        _ => {}
                    }
                }
            }
            Message::ToolResult(result) => {
                for block in &result.content {
                    match block {
                        ToolResultContent::Text { text } => bytes += text.len(),
                        _ => images += 1,
                    }
                }
            }
            _ => {}
        }
    }
    let tokens = (bytes as u64)
        .div_ceil(4)
        .saturating_add(images.saturating_mul(1_600));
    tokens.max(u64::from(bytes > 0 || images > 0))
}
