//! pi's `streamSimple` context → the host-neutral [`Conversation`].

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use cursor_proto::ir::{
    AssistantContent, Conversation, Image, Message, Tool, ToolCall, ToolResult, ToolResultContent,
    UserContent,
};
use serde::Deserialize as _;
use serde_json::Value;

use super::CompatError;
use super::system::SystemState;
use super::wire::{WireContext, WireMessage, WireTool};

/// Maps the `context` pi passes to `streamSimple`, given as JSON text, to a [`Conversation`].
///
/// Accepts both of pi's shapes: the `TranscriptContext` of pi ≥ 0.86 (system messages carry the
/// prompt and tools; they are collapsed into one prompt and one tool set as pi's
/// `collapseSystemMessages` does) and the `{systemPrompt, messages, tools}` `Context` of
/// pi 0.73–0.85. This is the form to prefer: it keeps the order of the system prompt's
/// sections, which decides the prompt text.
///
/// # Errors
///
/// A [`CompatError`] (always a local error) when the JSON is malformed, a message has a role
/// or a block has a type that no tested pi version sends, a required field is missing, or an
/// image is not base64. No message or block is dropped silently; the fields the conversation
/// model has no place for are listed in the [module docs](super#what-does-not-cross).
pub fn conversation_from_json(json: &str) -> Result<Conversation, CompatError> {
    convert(serde_json::from_str(json).map_err(malformed)?)
}

/// Maps an already parsed pi context to a [`Conversation`]; see [`conversation_from_json`].
///
/// The system prompt's sections are rendered in the order the value's map yields them, which
/// is pi's order only when serde_json's `preserve_order` feature is on in the build (otherwise
/// the map is sorted by name). Prefer [`conversation_from_json`] when the text is at hand.
///
/// # Errors
///
/// As for [`conversation_from_json`].
pub fn conversation_from_value(value: &Value) -> Result<Conversation, CompatError> {
    convert(WireContext::deserialize(value).map_err(malformed)?)
}

fn malformed(error: serde_json::Error) -> CompatError {
    CompatError::Malformed {
        what: "context",
        detail: error.to_string(),
    }
}

fn convert(wire: WireContext) -> Result<Conversation, CompatError> {
    let mut system = SystemState::default();
    // pi ≤ 0.85 `Context`: the prompt and tools sit beside the messages. Reading them as a
    // leading system message is what pi ≥ 0.86's own `normalizeContext` does with this shape.
    if let Some(prompt) = wire.system_prompt {
        system.add_content(prompt);
    }
    for tool in wire.tools.unwrap_or_default() {
        system.add_tool(tool.into_ir());
    }

    let mut messages = Vec::with_capacity(wire.messages.len());
    for (index, message) in wire.messages.into_iter().enumerate() {
        match message.role.as_str() {
            "system" => apply_system(&mut system, index, message)?,
            "user" => messages.push(user(index, message.content)?),
            "assistant" => messages.push(assistant(index, message.content)?),
            "toolResult" => messages.push(tool_result(index, message)?),
            _ => {
                return Err(CompatError::UnknownRole {
                    index,
                    role: message.role,
                });
            }
        }
    }

    let (system_prompt, tools) = system.finish();
    let mut conversation = Conversation::new(system_prompt);
    conversation.messages = messages;
    conversation.tools = tools;
    Ok(conversation)
}

impl WireTool {
    fn into_ir(self) -> Tool {
        // `constrainedSampling` (pi ≥ 0.86) is a request hint for other APIs; Cursor has no slot.
        Tool::new(self.name, self.description, self.parameters)
    }
}

/// pi ≥ 0.86 `SystemMessage`: `content` is a string or text blocks.
fn apply_system(
    system: &mut SystemState,
    index: usize,
    message: WireMessage,
) -> Result<(), CompatError> {
    let mut text = String::new();
    for block in blocks(index, "system", message.content)? {
        match block {
            Block::Text(piece) => {
                // pi-ai `contentText`: text blocks joined by a newline.
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&piece);
            }
            Block::Other(kind, _) => return Err(unknown_block(index, "system", kind)),
        }
    }
    system.add_content(text);
    for (name, section) in message.sections.unwrap_or_default().0 {
        system.patch_section(name, section);
    }
    for removed in message.tools_removed.unwrap_or_default() {
        system.remove_tool(&removed.name);
    }
    for added in message.tools_added.unwrap_or_default() {
        system.add_tool(added.into_ir());
    }
    Ok(())
}

/// `UserMessage`: `content` is a string or text and image blocks.
fn user(index: usize, content: Option<Value>) -> Result<Message, CompatError> {
    let mut out = Vec::new();
    for block in blocks(index, "user", content)? {
        out.push(match block {
            Block::Text(text) => UserContent::Text { text },
            Block::Other(kind, value) if kind == "image" => {
                UserContent::Image(image(index, "user", &value)?)
            }
            Block::Other(kind, _) => return Err(unknown_block(index, "user", kind)),
        });
    }
    Ok(Message::User { content: out })
}

/// `AssistantMessage`: text, thinking and tool-call blocks. Its bookkeeping fields (`usage`,
/// `stopReason`, `api`, `model`, `errorMessage`, ...) have no place in the conversation model.
fn assistant(index: usize, content: Option<Value>) -> Result<Message, CompatError> {
    const ROLE: &str = "assistant";
    let mut out = Vec::new();
    for block in blocks(index, ROLE, content)? {
        out.push(match block {
            Block::Text(text) => AssistantContent::Text { text },
            Block::Other(kind, value) => match kind.as_str() {
                // `redacted` thinking (pi ≥ 0.80) travels the same way: its payload is opaque.
                "thinking" => AssistantContent::Thinking {
                    text: required_str(&value, "thinking", index, ROLE)?.to_owned(),
                    signature: value
                        .get("thinkingSignature")
                        .and_then(Value::as_str)
                        .map(Into::into),
                },
                "toolCall" => {
                    let id = required_str(&value, "id", index, ROLE)?;
                    let name = required_str(&value, "name", index, ROLE)?;
                    let arguments = match value.get("arguments") {
                        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
                        Some(arguments) => arguments.clone(),
                    };
                    AssistantContent::ToolCall(ToolCall::new(id, name, arguments))
                }
                _ => return Err(unknown_block(index, ROLE, kind)),
            },
        });
    }
    Ok(Message::Assistant { content: out })
}

/// `ToolResultMessage`: text and image blocks plus the call it answers.
fn tool_result(index: usize, message: WireMessage) -> Result<Message, CompatError> {
    const ROLE: &str = "toolResult";
    let missing = |field| CompatError::MissingField {
        index,
        role: ROLE,
        field,
    };
    let tool_call_id = message.tool_call_id.ok_or_else(|| missing("toolCallId"))?;
    let tool_name = message.tool_name.ok_or_else(|| missing("toolName"))?;
    let mut content = Vec::new();
    for block in blocks(index, ROLE, message.content)? {
        content.push(match block {
            Block::Text(text) => ToolResultContent::Text { text },
            Block::Other(kind, value) if kind == "image" => {
                ToolResultContent::Image(image(index, ROLE, &value)?)
            }
            Block::Other(kind, _) => return Err(unknown_block(index, ROLE, kind)),
        });
    }
    let mut result = ToolResult::text(
        tool_call_id,
        tool_name,
        "",
        message.is_error.unwrap_or(false),
    );
    result.content = content;
    Ok(Message::ToolResult(result))
}

/// One content block: text (the common case) or any other typed block, still as JSON.
enum Block {
    Text(String),
    Other(String, Value),
}

/// Splits `content` into blocks: a string is one text block; `null` or absent is no block
/// (pi-ai itself normalizes null content to `[]` before providers see it).
fn blocks(
    index: usize,
    role: &'static str,
    content: Option<Value>,
) -> Result<Vec<Block>, CompatError> {
    let items = match content {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(text)) => return Ok(vec![Block::Text(text)]),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(CompatError::MissingField {
                index,
                role,
                field: "content",
            });
        }
    };
    items
        .into_iter()
        .map(|item| {
            let kind = item
                .get("type")
                .and_then(Value::as_str)
                .ok_or(CompatError::MissingField {
                    index,
                    role,
                    field: "type",
                })?
                .to_owned();
            if kind == "text" {
                Ok(Block::Text(
                    required_str(&item, "text", index, role)?.to_owned(),
                ))
            } else {
                Ok(Block::Other(kind, item))
            }
        })
        .collect()
}

fn required_str<'a>(
    value: &'a Value,
    field: &'static str,
    index: usize,
    role: &'static str,
) -> Result<&'a str, CompatError> {
    value
        .get(field)
        .and_then(Value::as_str)
        .ok_or(CompatError::MissingField { index, role, field })
}

fn unknown_block(index: usize, role: &'static str, block_type: String) -> CompatError {
    CompatError::UnknownBlock {
        index,
        role,
        block_type,
    }
}

/// `ImageContent`: `{data: base64, mimeType}`.
fn image(index: usize, role: &'static str, value: &Value) -> Result<Image, CompatError> {
    // Node's Buffer base64 is padded; accept unpadded too rather than fail on a cosmetic detail.
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let data = required_str(value, "data", index, role)?;
    let mime_type = required_str(value, "mimeType", index, role)?;
    let bytes = LENIENT
        .decode(data)
        .map_err(|error| CompatError::InvalidImage {
            index,
            reason: error.to_string(),
        })?;
    Ok(Image::new(mime_type, bytes))
}
