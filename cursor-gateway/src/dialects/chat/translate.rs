//! A chat completions request in the engine's terms: validated and translated to the
//! host-neutral transcript.

use std::collections::HashMap;

use cursor_agent::ir::{
    AssistantContent, Conversation, Message, Tool, ToolCall, ToolResult, UserContent,
};
use serde_json::{Value, json};

use super::wire::{ChatContent, ChatMessage, ChatPart, ChatRequest, ChatRole};
use crate::ApiError;
use crate::dialects::openai::narrow;
use crate::engine::admission::value_cost;
use crate::engine::format::FormatSpec;

/// What the request asked, translated.
#[derive(Debug)]
pub(crate) struct Translated {
    pub(crate) conversation: Conversation,
    pub(crate) format: Option<FormatSpec>,
}

/// What the request's JSON trees (tool schemas, earlier calls' arguments, a format's schema)
/// will cost once built.
pub(crate) fn tree_cost(request: &ChatRequest) -> usize {
    let tools: usize = request
        .tools
        .iter()
        .flatten()
        .filter_map(|tool| tool.function.as_ref()?.parameters.as_ref())
        .map(|schema| schema.cost())
        .sum();
    let calls: usize = request
        .messages
        .iter()
        .flat_map(|message| message.tool_calls.iter().flatten())
        .map(|call| value_cost(&call.function.arguments))
        .sum();
    let format = request.response_format.as_ref().map_or(0, |f| f.cost());
    tools + calls + format
}

/// Fields that change the answer and that Cursor cannot honour: a 400 naming the first.
fn refuse_unsupported(request: &ChatRequest) -> Result<(), ApiError> {
    let refuse = |param: &str, why: &str| {
        Err(
            ApiError::bad_request("unsupported_parameter", format!("{param}: {why}"))
                .with_param(param),
        )
    };
    if request.n.is_some_and(|n| n != 1) {
        return Err(
            ApiError::bad_request("invalid_n", "n must be 1: Cursor answers one choice")
                .with_param("n"),
        );
    }
    if request.logprobs == Some(true) || request.top_logprobs.is_some_and(|n| n > 0) {
        return refuse("logprobs", "Cursor reports no token log probabilities");
    }
    if request.audio.0 {
        return refuse("audio", "Cursor answers text only");
    }
    if request
        .modalities
        .iter()
        .flatten()
        .any(|modality| modality != "text")
    {
        return refuse("modalities", "Cursor answers text only");
    }
    if request.prediction.0 {
        return refuse("prediction", "Cursor takes no predicted output");
    }
    if request.web_search_options.0 {
        return refuse(
            "web_search_options",
            "web search is a tool OpenAI's servers run; offer a function tool instead",
        );
    }
    if request.functions.0 {
        return refuse(
            "functions",
            "the legacy functions field is not supported; use tools",
        );
    }
    if request.logit_bias.0 > 0 {
        return refuse("logit_bias", "Cursor takes no token biases");
    }
    if request.stop.as_ref().is_some_and(|stop| stop.0.len() > 4) {
        return Err(
            ApiError::bad_request("invalid_stop", "stop takes at most 4 sequences")
                .with_param("stop"),
        );
    }
    Ok(())
}

/// The text of a message that takes text only (system, developer, assistant, tool), its parts
/// joined with newlines.
fn text_of(content: ChatContent, index: usize, what: &str) -> Result<String, ApiError> {
    let mut texts = Vec::new();
    for part in content.0 {
        match part {
            ChatPart::Text(run) => texts.push(run.newline_joined()),
            ChatPart::Image(_) => {
                return Err(ApiError::bad_request(
                    "invalid_content",
                    format!("messages[{index}]: {what} messages take text only, not image_url"),
                ));
            }
            ChatPart::Refused { index: part, why } => {
                return Err(ApiError::bad_request(
                    "invalid_content",
                    format!("messages[{index}].content[{part}]: {why}"),
                ));
            }
        }
    }
    Ok(texts.join("\n"))
}

fn user_content(content: ChatContent, index: usize) -> Result<Vec<UserContent>, ApiError> {
    content
        .0
        .into_iter()
        .map(|part| match part {
            ChatPart::Text(run) => Ok(UserContent::Text {
                text: run.newline_joined(),
            }),
            ChatPart::Image(image) => Ok(UserContent::Image(image)),
            ChatPart::Refused { index: part, why } => Err(ApiError::bad_request(
                "invalid_image_url",
                format!("messages[{index}].content[{part}]: {why}"),
            )),
        })
        .collect()
}

fn needs_content(content: Option<ChatContent>, index: usize) -> Result<ChatContent, ApiError> {
    content.ok_or_else(|| {
        ApiError::bad_request(
            "invalid_messages",
            format!("messages[{index}]: this message needs `content`"),
        )
        .with_param(format!("messages[{index}].content"))
    })
}

/// The host-neutral transcript of `request`, validated: the tools `tool_choice` allows, the
/// system text, user turns with images, assistant tool calls and their results. Consumes the
/// request: its texts move into the transcript rather than being copied.
pub(crate) fn translate(mut request: ChatRequest) -> Result<Translated, ApiError> {
    refuse_unsupported(&request)?;
    let format = match request.response_format.take() {
        Some(format) => format.spec("response_format")?,
        None => None,
    };
    let tools = tools(&mut request)?;
    let mut system = Vec::new();
    let mut messages = Vec::new();
    // Call id -> tool name, for every call an assistant message made so far.
    let mut calls: HashMap<String, String> = HashMap::new();
    for (index, message) in std::mem::take(&mut request.messages)
        .into_iter()
        .enumerate()
    {
        let ChatMessage {
            role,
            content,
            tool_calls,
            tool_call_id,
        } = message;
        match role {
            ChatRole::System | ChatRole::Developer => {
                system.push(text_of(needs_content(content, index)?, index, "system")?);
            }
            ChatRole::User => messages.push(Message::User {
                content: user_content(needs_content(content, index)?, index)?,
            }),
            ChatRole::Assistant => {
                let mut blocks = Vec::new();
                if let Some(content) = content {
                    let text = text_of(content, index, "assistant")?;
                    if !text.is_empty() {
                        blocks.push(AssistantContent::Text { text });
                    }
                }
                for call in tool_calls.into_iter().flatten() {
                    let arguments: Value = if call.function.arguments.trim().is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(&call.function.arguments).map_err(|e| {
                            ApiError::bad_request(
                                "invalid_tool_call",
                                format!(
                                    "messages[{index}].tool_calls: the arguments of {} are not JSON: {e}",
                                    call.id
                                ),
                            )
                        })?
                    };
                    calls.insert(call.id.clone(), call.function.name.clone());
                    blocks.push(AssistantContent::ToolCall(ToolCall::new(
                        call.id,
                        call.function.name,
                        arguments,
                    )));
                }
                messages.push(Message::Assistant { content: blocks });
            }
            ChatRole::Tool => {
                let tool_call_id = tool_call_id.unwrap_or_default();
                let name = calls.get(&tool_call_id).ok_or_else(|| {
                    ApiError::bad_request(
                        "unknown_tool_call_id",
                        format!(
                            "messages[{index}] answers tool_call_id {tool_call_id}, which no earlier \
                             assistant message called"
                        ),
                    )
                    .with_param(format!("messages[{index}].tool_call_id"))
                })?;
                let text = text_of(needs_content(content, index)?, index, "tool")?;
                messages.push(Message::ToolResult(ToolResult::text(
                    tool_call_id.clone(),
                    name.clone(),
                    text,
                    false,
                )));
            }
        }
    }
    match messages.last() {
        Some(Message::User { .. } | Message::ToolResult(_)) => {}
        _ => {
            return Err(ApiError::bad_request(
                "invalid_messages",
                "the last message must be a user message or a tool result",
            )
            .with_param("messages"));
        }
    }
    if !messages.iter().any(|m| matches!(m, Message::User { .. })) {
        return Err(
            ApiError::bad_request("invalid_messages", "the request has no user message")
                .with_param("messages"),
        );
    }
    let mut conversation = Conversation::new(system.join("\n\n"));
    conversation.messages = messages;
    conversation.tools = tools;
    Ok(Translated {
        conversation,
        format,
    })
}

/// The function tools the request offers, narrowed by `tool_choice`.
fn tools(request: &mut ChatRequest) -> Result<Vec<Tool>, ApiError> {
    let mut tools = Vec::new();
    for (index, spec) in request.tools.take().into_iter().flatten().enumerate() {
        let function = match (spec.kind.as_str(), spec.function) {
            ("function", Some(function)) => function,
            (kind, _) => {
                return Err(ApiError::bad_request(
                    "invalid_tools",
                    format!("tools[{index}]: only function tools are supported, not {kind}"),
                ));
            }
        };
        tools.push(Tool::new(
            function.name,
            function.description.unwrap_or_default(),
            function.parameters.map_or_else(
                || json!({"type": "object", "properties": {}}),
                |p| p.build(),
            ),
        ));
    }
    narrow(tools, request.tool_choice.as_ref())
}

#[cfg(test)]
mod tests {
    use super::super::wire::parse;
    use super::*;

    fn translate_json(value: Value) -> Result<Translated, ApiError> {
        let request = parse(value.to_string().as_bytes())
            .map_err(|e| ApiError::bad_request("invalid_request", e.to_string()))?;
        translate(request)
    }

    #[test]
    fn a_tool_round_translates_to_calls_and_results() {
        let translated = translate_json(json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "be terse"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "2"}
            ],
            "tools": [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
        }))
        .unwrap();
        let conversation = translated.conversation;
        assert_eq!(conversation.system_prompt, "be terse");
        assert_eq!(conversation.tools.len(), 1);
        assert_eq!(
            conversation.messages[1],
            Message::assistant_tool_calls(vec![ToolCall::new("c1", "add", json!({"a": 1}))])
        );
        assert_eq!(
            conversation.messages[2],
            Message::ToolResult(ToolResult::text("c1", "add", "2", false))
        );
    }

    #[test]
    fn parallel_calls_and_their_results_keep_their_order() {
        let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "add", "arguments": "{}"}});
        let translated = translate_json(json!({
            "model": "m",
            "messages": [
                {"role": "user", "content": "both"},
                {"role": "assistant", "content": "two at once", "tool_calls": [call("a"), call("b")]},
                {"role": "tool", "tool_call_id": "b", "content": "B"},
                {"role": "tool", "tool_call_id": "a", "content": "A"}
            ]
        }))
        .unwrap();
        let messages = translated.conversation.messages;
        assert_eq!(
            messages[1],
            Message::Assistant {
                content: vec![
                    AssistantContent::Text {
                        text: "two at once".into()
                    },
                    AssistantContent::ToolCall(ToolCall::new("a", "add", json!({}))),
                    AssistantContent::ToolCall(ToolCall::new("b", "add", json!({}))),
                ]
            }
        );
        assert_eq!(
            messages[2..],
            [
                Message::ToolResult(ToolResult::text("b", "add", "B", false)),
                Message::ToolResult(ToolResult::text("a", "add", "A", false)),
            ]
        );
    }

    #[test]
    fn bad_input_is_a_400_that_names_the_problem() {
        let cases = [
            (
                json!({"model": "m", "messages": [{"role": "narrator", "content": "x"}]}),
                "narrator",
            ),
            (
                json!({"model": "m", "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "tool", "tool_call_id": "nope", "content": "r"}
                ]}),
                "nope",
            ),
            (
                json!({"model": "m", "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://127.0.0.1/y.png"}}]}
                ]}),
                "data: URLs",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "function", "function": {"name": "ghost"}}}),
                "ghost",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}),
                "last message",
            ),
            (
                json!({"model": "m", "n": 2, "messages": [{"role": "user", "content": "x"}]}),
                "n must be 1",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user"}]}),
                "needs `content`",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": {"50256": -100}}),
                "logit_bias",
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
        assert!(translate_json(json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": {}})).is_ok());
    }

    #[test]
    fn text_parts_join_as_cursor_joins_them() {
        let translated = translate_json(json!({"model": "m", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "text", "text": "c"}]}
        ]}))
        .unwrap();
        let Message::User { content } = &translated.conversation.messages[0] else {
            panic!()
        };
        assert_eq!(content.len(), 3);
        assert_eq!(
            content[0],
            UserContent::Text {
                text: "a\nb".into()
            }
        );
    }
}
