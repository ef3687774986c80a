//! Input-token estimation: AgentService never reports input tokens, and reporting zero makes a
//! host undercount its context by the whole history (PROTOCOL-AGENT §4.1).

use cursor_proto::ir::{
    AssistantContent, Conversation, Message, ToolResult, ToolResultContent, UserContent,
};

/// What one image is assumed to cost (the estimate coding-agent hosts commonly use).
pub(crate) const IMAGE_TOKENS: u64 = 1200;

/// Estimated prompt tokens: characters / 4 over the rules (system prompt, policy, tool
/// contracts), the transcript and the tool declarations, plus [`IMAGE_TOKENS`] per image.
pub(crate) fn estimate_input(conversation: &Conversation, rules_text: &str) -> u64 {
    let mut chars = rules_text.chars().count() as u64;
    let mut images = 0u64;
    for message in &conversation.messages {
        match message {
            Message::User { content } => {
                for block in content {
                    match block {
                        UserContent::Text { text } => chars += count(text),
                        UserContent::Image(_) => images += 1,
                        _ => {}
                    }
                }
            }
            Message::Assistant { content } => {
                for block in content {
                    match block {
                        AssistantContent::Text { text }
                        | AssistantContent::Thinking { text, .. } => chars += count(text),
                        AssistantContent::ToolCall(call) => {
                            chars += count(&call.name) + count(&call.arguments.to_string());
                        }
                        _ => {}
                    }
                }
            }
            Message::ToolResult(result) => {
                let (c, i) = result_size(result);
                chars += c;
                images += i;
            }
            _ => {}
        }
    }
    for tool in &conversation.tools {
        chars += count(&tool.name) + count(&tool.description) + count(&tool.parameters.to_string());
    }
    chars.div_ceil(4) + images * IMAGE_TOKENS
}

/// Estimated tokens a host result adds to the prompt of the next leg.
pub(crate) fn estimate_result(result: &ToolResult) -> u64 {
    let (chars, images) = result_size(result);
    chars.div_ceil(4) + images * IMAGE_TOKENS
}

fn result_size(result: &ToolResult) -> (u64, u64) {
    let mut chars = 0;
    let mut images = 0;
    for block in &result.content {
        match block {
            ToolResultContent::Text { text } => chars += count(text),
            ToolResultContent::Image(_) => images += 1,
            _ => {}
        }
    }
    (chars, images)
}

fn count(text: &str) -> u64 {
    text.chars().count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_proto::ir::{Image, Tool};
    use serde_json::json;

    #[test]
    fn estimate_counts_text_tools_and_images() {
        let conversation = Conversation::new("")
            .with_tool(Tool::new("ab", "cd", json!({})))
            .with_message(Message::User {
                content: vec![
                    UserContent::Text {
                        text: "12345678".into(),
                    },
                    UserContent::Image(Image::new("image/png", vec![0])),
                ],
            });
        // rules 4 + text 8 + tool 2 + 2 + 2 ("{}") = 18 chars -> 5 tokens, + one image.
        assert_eq!(estimate_input(&conversation, "rule"), 5 + IMAGE_TOKENS);
    }

    #[test]
    fn result_estimate_rounds_up() {
        assert_eq!(
            estimate_result(&ToolResult::text("c", "t", "12345", false)),
            2
        );
    }
}
