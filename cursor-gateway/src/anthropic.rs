//! `POST /v1/messages`: Anthropic's Messages request, validated and translated to the
//! host-neutral transcript, and the response and stream shapes. Claude Code is the client this
//! is shaped by: `system` as text blocks, context blocks before the prompt, `system`-role
//! entries inside `messages`, thinking blocks replayed with their signatures.

use base64::Engine as _;
use cursor_agent::ir::{
    AssistantContent, Conversation, Image, Message, Tool, ToolCall, ToolResult, ToolResultContent,
    Usage, UserContent,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::ApiError;
use crate::signature::ThinkingKey;

/// A Messages request. Fields that do not change what the answer means (`temperature`,
/// `top_p`, `top_k`, `context_management`, `output_config`, `thinking`) are accepted and
/// ignored; see `docs/ANTHROPIC-GATEWAY.md`.
#[derive(Debug, Deserialize)]
pub(crate) struct MessagesRequest {
    pub(crate) model: String,
    pub(crate) messages: Vec<InMessage>,
    #[serde(default)]
    pub(crate) system: Option<System>,
    pub(crate) max_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    #[serde(default)]
    pub(crate) tools: Option<Vec<Value>>,
    #[serde(default)]
    pub(crate) tool_choice: Option<ToolChoice>,
    #[serde(default)]
    pub(crate) stop_sequences: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) metadata: Option<Metadata>,
}

/// `count_tokens` takes the same body without `max_tokens`.
pub(crate) type CountRequest = MessagesRequest;

/// `system`: a string or text blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum System {
    Text(String),
    Blocks(Vec<Value>),
}

/// One entry of `messages`.
#[derive(Debug, Deserialize)]
pub(crate) struct InMessage {
    pub(crate) role: String,
    pub(crate) content: Content,
}

/// A message's content: a string or blocks (kept as JSON until checked one by one, so an
/// unknown block is a 400 that names it).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content {
    Text(String),
    Blocks(Vec<Value>),
}

/// `tool_choice`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ToolChoice {
    Auto {},
    Any {},
    Tool { name: String },
    None {},
}

/// `metadata`.
#[derive(Debug, Deserialize)]
pub(crate) struct Metadata {
    #[serde(default)]
    pub(crate) user_id: Option<String>,
}

/// The blocks this gateway reads.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    Image {
        source: ImageSource,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Option<Content>,
        #[serde(default)]
        is_error: bool,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {},
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ImageSource {
    Base64 { media_type: String, data: String },
    Url {},
}

/// What a request asked, translated.
#[derive(Debug)]
pub(crate) struct Translated {
    pub(crate) conversation: Conversation,
    /// `metadata.user_id`'s session (Claude Code puts a JSON object with `session_id` there).
    pub(crate) hint: Option<String>,
    /// Claude Code asking for a summary of the conversation (its compaction): answered in a
    /// conversation of its own so the main one is not advanced by it.
    pub(crate) compaction: bool,
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid_request_error", message)
}

/// Parses the body; malformed JSON and unknown shapes are 400s that say what is wrong.
pub(crate) fn parse(body: &[u8]) -> Result<MessagesRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("the body is not JSON: {e}")))?;
    serde_json::from_value(value)
        .map_err(|e| bad(format!("the request does not fit the Messages shape: {e}")))
}

fn block_of(value: &Value, at: &str) -> Result<Block, ApiError> {
    serde_json::from_value(value.clone()).map_err(|e| {
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("untyped");
        bad(format!(
            "{at}: a {kind} block is not supported here ({e}); text, image, tool_use, tool_result \
             and thinking blocks are"
        ))
    })
}

fn image_of(source: ImageSource, at: &str) -> Result<Image, ApiError> {
    match source {
        ImageSource::Base64 { media_type, data } => {
            if !media_type.starts_with("image/") {
                return Err(bad(format!("{at}: {media_type} is not an image type")));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| bad(format!("{at}: the image is not base64: {e}")))?;
            Ok(Image::new(media_type, bytes))
        }
        ImageSource::Url {} => Err(bad(format!(
            "{at}: only base64 images are accepted; the gateway fetches nothing"
        ))),
    }
}

fn texts(content: &Content, at: &str) -> Result<Vec<String>, ApiError> {
    match content {
        Content::Text(text) => Ok(vec![text.clone()]),
        Content::Blocks(blocks) => blocks
            .iter()
            .enumerate()
            .map(|(i, value)| match block_of(value, &format!("{at}[{i}]"))? {
                Block::Text { text } => Ok(text),
                _ => Err(bad(format!("{at}[{i}]: only text blocks are allowed here"))),
            })
            .collect(),
    }
}

/// The system prompt: `system`'s text blocks, joined.
fn system_text(system: Option<&System>) -> Result<String, ApiError> {
    match system {
        None => Ok(String::new()),
        Some(System::Text(text)) => Ok(text.clone()),
        Some(System::Blocks(blocks)) => {
            Ok(texts(&Content::Blocks(blocks.clone()), "system")?.join("\n"))
        }
    }
}

/// Translates the request: `system`-role entries join the user turn before them, as context
/// in front of its prompt (the first user turn when none is before), consecutive user entries
/// merge, thinking blocks must carry this gateway's signature, and tool results stay in order.
pub(crate) fn translate(
    request: &MessagesRequest,
    key: &ThinkingKey,
) -> Result<Translated, ApiError> {
    if request.max_tokens.is_none() {
        return Err(bad("max_tokens is required").with_param("max_tokens"));
    }
    let mut messages: Vec<Message> = Vec::new();
    let mut pending_system: Vec<String> = Vec::new();
    for (index, message) in request.messages.iter().enumerate() {
        let at = format!("messages[{index}].content");
        match message.role.as_str() {
            "system" => {
                // Context for the model, not the user's words: marked the way Claude Code marks
                // its own context, and placed before the turn's own prompt.
                let text = format!(
                    "<system-reminder>\n{}\n</system-reminder>",
                    texts(&message.content, &at)?.join("\n")
                );
                match messages.last_mut() {
                    Some(Message::User { content }) => {
                        let at = content
                            .iter()
                            .rposition(|block| matches!(block, UserContent::Text { .. }))
                            .unwrap_or(content.len());
                        content.insert(at, UserContent::Text { text });
                    }
                    Some(Message::ToolResult(result)) => {
                        result.content.push(ToolResultContent::Text { text });
                    }
                    _ => pending_system.push(text),
                }
            }
            "user" => user_entry(&mut messages, &mut pending_system, &message.content, &at)?,
            "assistant" => {
                let blocks = match &message.content {
                    Content::Text(text) => vec![json!({"type": "text", "text": text})],
                    Content::Blocks(blocks) => blocks.clone(),
                };
                let mut content = Vec::new();
                for (i, value) in blocks.iter().enumerate() {
                    let at = format!("{at}[{i}]");
                    match block_of(value, &at)? {
                        Block::Text { text } => content.push(AssistantContent::Text { text }),
                        Block::ToolUse { id, name, input } => {
                            content
                                .push(AssistantContent::ToolCall(ToolCall::new(id, name, input)));
                        }
                        Block::Thinking {
                            thinking,
                            signature,
                        } => {
                            if !key.verify(&thinking, &signature) {
                                return Err(bad(format!(
                                    "{at}: this thinking block's signature does not verify; send \
                                     thinking blocks back exactly as this gateway sent them"
                                ))
                                .with_param(at));
                            }
                            content.push(AssistantContent::Thinking {
                                text: thinking,
                                signature: Some(signature),
                            });
                        }
                        Block::RedactedThinking {} => {
                            return Err(bad(format!(
                                "{at}: redacted_thinking blocks come from another provider; this \
                                 gateway cannot verify them"
                            )));
                        }
                        _ => return Err(bad(format!("{at}: not allowed in an assistant message"))),
                    }
                }
                match messages.last_mut() {
                    Some(Message::Assistant { content: before }) => before.extend(content),
                    _ => messages.push(Message::Assistant { content }),
                }
            }
            other => {
                return Err(bad(format!("messages[{index}]: unknown role {other}"))
                    .with_param(format!("messages[{index}].role")));
            }
        }
    }
    if !pending_system.is_empty() {
        return Err(bad("the request has no user message"));
    }
    if !matches!(
        messages.last(),
        Some(Message::User { .. } | Message::ToolResult(_))
    ) {
        return Err(
            bad("the last message must be a user message (or tool results)").with_param("messages"),
        );
    }
    let compaction = is_compaction(&messages);
    let mut conversation = Conversation::new(system_text(request.system.as_ref())?);
    conversation.messages = messages;
    conversation.tools = tools(request)?;
    let hint = request
        .metadata
        .as_ref()
        .and_then(|m| m.user_id.as_deref())
        .map(|user| {
            // Claude Code: a JSON object whose `session_id` names the session.
            serde_json::from_str::<Value>(user)
                .ok()
                .and_then(|v| v.get("session_id")?.as_str().map(str::to_owned))
                .unwrap_or_else(|| user.to_owned())
        });
    Ok(Translated {
        conversation,
        hint,
        compaction,
    })
}

/// A user entry: text and images join a user message; tool results become results (text
/// blocks beside them join the last result, so the turn still ends with the results).
fn user_entry(
    messages: &mut Vec<Message>,
    pending_system: &mut Vec<String>,
    content: &Content,
    at: &str,
) -> Result<(), ApiError> {
    let blocks = match content {
        Content::Text(text) => vec![json!({"type": "text", "text": text})],
        Content::Blocks(blocks) => blocks.clone(),
    };
    let mut user: Vec<UserContent> = pending_system
        .drain(..)
        .map(|text| UserContent::Text { text })
        .collect();
    let mut results: Vec<ToolResult> = Vec::new();
    for (i, value) in blocks.iter().enumerate() {
        let at = format!("{at}[{i}]");
        match block_of(value, &at)? {
            Block::Text { text } => match results.last_mut() {
                Some(result) => result.content.push(ToolResultContent::Text { text }),
                None => user.push(UserContent::Text { text }),
            },
            Block::Image { source } => {
                let image = image_of(source, &at)?;
                match results.last_mut() {
                    Some(result) => result.content.push(ToolResultContent::Image(image)),
                    None => user.push(UserContent::Image(image)),
                }
            }
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let name = called(messages, &tool_use_id).ok_or_else(|| {
                    ApiError::bad_request(
                        "invalid_request_error",
                        format!(
                            "{at}: tool_result for {tool_use_id}, which no earlier tool_use made"
                        ),
                    )
                })?;
                let mut result = ToolResult::text(tool_use_id, name, "", is_error);
                result.content = match content {
                    None => Vec::new(),
                    Some(Content::Text(text)) => vec![ToolResultContent::Text { text }],
                    Some(Content::Blocks(parts)) => {
                        let mut out = Vec::new();
                        for (j, part) in parts.iter().enumerate() {
                            let at = format!("{at}.content[{j}]");
                            match block_of(part, &at)? {
                                Block::Text { text } => out.push(ToolResultContent::Text { text }),
                                Block::Image { source } => {
                                    out.push(ToolResultContent::Image(image_of(source, &at)?));
                                }
                                _ => return Err(bad(format!("{at}: text and image only"))),
                            }
                        }
                        out
                    }
                };
                results.push(result);
            }
            _ => return Err(bad(format!("{at}: not allowed in a user message"))),
        }
    }
    if !results.is_empty() {
        if !user.is_empty() {
            // Text before the results (rare): keep it, in front of the first result.
            let first = &mut results[0].content;
            let mut lead: Vec<ToolResultContent> = user
                .into_iter()
                .map(|block| match block {
                    UserContent::Image(image) => ToolResultContent::Image(image),
                    UserContent::Text { text } => ToolResultContent::Text { text },
                    _ => ToolResultContent::Text {
                        text: String::new(),
                    },
                })
                .collect();
            lead.append(first);
            *first = lead;
        }
        messages.extend(results.into_iter().map(Message::ToolResult));
        return Ok(());
    }
    match messages.last_mut() {
        Some(Message::User { content }) => content.extend(user),
        _ => messages.push(Message::User { content: user }),
    }
    Ok(())
}

/// The tool name of call `id` in the transcript so far.
fn called(messages: &[Message], id: &str) -> Option<String> {
    messages.iter().rev().find_map(|m| match m {
        Message::Assistant { content } => content.iter().find_map(|block| match block {
            AssistantContent::ToolCall(call) if call.id == id => Some(call.name.clone()),
            _ => None,
        }),
        _ => None,
    })
}

/// Claude Code's compaction asks, in the last user turn, for a detailed summary of the
/// conversation so far.
fn is_compaction(messages: &[Message]) -> bool {
    let Some(Message::User { content }) = messages.last() else {
        return false;
    };
    content.iter().any(|block| match block {
        UserContent::Text { text } => {
            let lower = text.to_ascii_lowercase();
            lower.contains("summary of the conversation") && lower.contains("summar")
        }
        _ => false,
    })
}

/// Server-run tool types: the model cannot use them through Cursor.
const SERVER_TOOLS: [&str; 6] = [
    "web_search",
    "web_fetch",
    "code_execution",
    "computer",
    "bash_",
    "text_editor",
];

/// The client tools offered, narrowed by `tool_choice`. A server tool is a 400 naming it.
fn tools(request: &MessagesRequest) -> Result<Vec<Tool>, ApiError> {
    let mut tools = Vec::new();
    for (index, tool) in request.tools.iter().flatten().enumerate() {
        let kind = tool.get("type").and_then(Value::as_str).unwrap_or("custom");
        if kind != "custom" {
            let server = SERVER_TOOLS.iter().any(|s| kind.starts_with(s));
            return Err(bad(format!(
                "tools[{index}]: {kind} is {}; Cursor can only call tools the client runs (custom tools with an input_schema)",
                if server { "a tool Anthropic's servers run" } else { "not a custom tool" }
            ))
            .with_param(format!("tools[{index}]")));
        }
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("tools[{index}]: a tool needs a name")))?;
        tools.push(Tool::new(
            name,
            tool.get("description")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            tool.get("input_schema")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        ));
    }
    Ok(match &request.tool_choice {
        None | Some(ToolChoice::Auto {} | ToolChoice::Any {}) => tools,
        Some(ToolChoice::None {}) => Vec::new(),
        Some(ToolChoice::Tool { name }) => {
            let named: Vec<Tool> = tools.into_iter().filter(|t| t.name == *name).collect();
            if named.is_empty() {
                return Err(bad(format!(
                    "tool_choice names {name}, which tools does not list"
                ))
                .with_param("tool_choice"));
            }
            named
        }
    })
}

/// Anthropic's usage object from Cursor's token counts.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub(crate) struct UsageOut {
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) cache_read_input_tokens: u64,
    pub(crate) cache_creation_input_tokens: u64,
}

impl From<&Usage> for UsageOut {
    fn from(usage: &Usage) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_input_tokens: usage.cache_read_tokens,
            cache_creation_input_tokens: usage.cache_write_tokens,
        }
    }
}

/// A content block of the answer.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum OutBlock<'a> {
    Thinking {
        thinking: &'a str,
        signature: String,
    },
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
}

/// The answer (`type: message`), whole or as `message_start`'s skeleton.
#[derive(Debug, Serialize)]
pub(crate) struct MessageOut<'a> {
    pub(crate) id: &'a str,
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) role: &'static str,
    pub(crate) model: &'a str,
    pub(crate) content: Vec<OutBlock<'a>>,
    pub(crate) stop_reason: Option<&'static str>,
    pub(crate) stop_sequence: Option<&'a str>,
    pub(crate) usage: UsageOut,
}

/// A rough token count: a token per four bytes of text and JSON, and a flat 1 600 per image
/// (Anthropic's own rule of thumb for a mid-size image). Never zero for non-empty input.
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
    let tokens = (bytes as u64).div_ceil(4) + images * 1_600;
    tokens.max(u64::from(bytes > 0 || images > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ThinkingKey {
        ThinkingKey::fixed([3; 32])
    }

    fn translate_json(value: Value) -> Result<Translated, ApiError> {
        translate(&parse(value.to_string().as_bytes())?, &key())
    }

    #[test]
    fn claude_code_shaped_requests_keep_their_turns_in_place() {
        let translated = translate_json(json!({
            "model": "claude-cursor-composer-2.5", "max_tokens": 32000,
            "system": [{"type": "text", "text": "billing"}, {"type": "text", "text": "You are Claude Code."}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "<system-reminder>r</system-reminder>"}, {"type": "text", "text": "say hi"}]},
                {"role": "system", "content": [{"type": "text", "text": "# Environment"}]}
            ],
            "metadata": {"user_id": "{\"device_id\":\"d\",\"session_id\":\"s-1\"}"},
            "thinking": {"type": "adaptive"}, "output_config": {"effort": "high"},
            "context_management": {"edits": []}
        }))
        .unwrap();
        let conversation = translated.conversation;
        assert_eq!(conversation.system_prompt, "billing\nYou are Claude Code.");
        assert_eq!(
            conversation.messages.len(),
            1,
            "the system entry joined the user turn"
        );
        let Message::User { content } = &conversation.messages[0] else {
            panic!()
        };
        assert_eq!(content.len(), 3);
        assert_eq!(translated.hint.as_deref(), Some("s-1"));
        assert!(!translated.compaction);
    }

    #[test]
    fn a_tool_round_with_text_beside_the_results_ends_with_the_results() {
        let translated = translate_json(json!({
            "model": "m", "max_tokens": 10,
            "messages": [
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Listing."},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pwd"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "/w"}], "is_error": true},
                    {"type": "text", "text": "<system-reminder>x</system-reminder>"}
                ]}
            ]
        }))
        .unwrap();
        let messages = translated.conversation.messages;
        assert_eq!(messages.len(), 4);
        let Message::ToolResult(last) = &messages[3] else {
            panic!("{messages:?}")
        };
        assert_eq!(last.tool_call_id, "t2");
        assert!(last.is_error);
        assert_eq!(last.content.len(), 2);
    }

    #[test]
    fn thinking_must_carry_this_gateways_signature() {
        let thinking = |signature: &str| {
            json!({"model": "m", "max_tokens": 10, "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": signature},
                    {"type": "text", "text": "a"}
                ]},
                {"role": "user", "content": "more"}
            ]})
        };
        assert!(translate_json(thinking(&key().sign("hmm"))).is_ok());
        let error = translate_json(thinking(&key().sign("hmm!"))).unwrap_err();
        assert_eq!(error.status, 400);
        assert!(
            error.message.contains("signature does not verify"),
            "{}",
            error.message
        );
    }

    #[test]
    fn bad_input_is_a_400_that_names_the_problem() {
        let cases = [
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}),
                "max_tokens",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
                "tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
                "web_search_20250305",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}]}),
                "fetches nothing",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
                {"type": "document", "source": {}}]}]}),
                "document",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "ghost", "content": "r"}]}]}),
                "ghost",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
                "tool_choice": {"type": "tool", "name": "nope"}}),
                "nope",
            ),
        ];
        for (body, needle) in cases {
            let error = translate_json(body.clone()).unwrap_err();
            assert_eq!(error.status, 400, "{body}");
            assert!(
                error.message.contains(needle),
                "{needle} not in {}",
                error.message
            );
        }
    }

    #[test]
    fn a_summary_request_is_recognised_as_compaction() {
        let translated = translate_json(json!({"model": "m", "max_tokens": 1, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "Your task is to create a detailed summary of the conversation so far."}
        ]}))
        .unwrap();
        assert!(translated.compaction);
    }

    #[test]
    fn token_estimates_are_never_zero_for_input() {
        let mut conversation = Conversation::new("");
        conversation.messages = vec![Message::user_text("a")];
        assert_eq!(estimate_tokens(&conversation), 1);
        conversation.messages = vec![Message::user_text("x".repeat(4000))];
        assert_eq!(estimate_tokens(&conversation), 1000);
    }
}
