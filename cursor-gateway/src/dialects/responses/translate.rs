//! A Responses request in the engine's terms: input items (messages, function calls, function
//! call outputs) become the same transcript the chat endpoint builds, after the stored
//! transcript a `previous_response_id` names.

use std::collections::HashMap;

use cursor_agent::ir::{
    AssistantContent, Conversation, Message, Tool, ToolCall, ToolResult, UserContent,
};
use serde_json::{Value, json};

use super::wire::{Item, Part, Parts, ResponsesRequest};
use crate::ApiError;
use crate::dialects::openai::{ToolChoice, narrow};
use crate::engine::admission::value_cost;
use crate::engine::format::FormatSpec;
use crate::state::responses::Stored;

/// What a Responses request asked, translated.
#[derive(Debug)]
pub(crate) struct Translated {
    pub(crate) conversation: Conversation,
    /// `prompt_cache_key` (Codex names its session there), else `user`, else the stored one.
    pub(crate) hint: Option<String>,
    /// Hosted tools offered and left out.
    pub(crate) ignored_tools: Vec<String>,
    /// The system prompt before a format's instruction, as stored.
    pub(crate) system_prompt: String,
    pub(crate) format: Option<FormatSpec>,
    /// How many of the transcript's messages came from the stored response.
    pub(crate) prior_len: usize,
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid_request", message)
}

/// What the request's JSON trees will cost once built.
pub(crate) fn tree_cost(request: &ResponsesRequest) -> usize {
    let tools: usize = request
        .tools
        .iter()
        .filter_map(|tool| tool.parameters.as_ref())
        .map(|schema| schema.cost())
        .sum();
    let calls: usize = request
        .input
        .0
        .iter()
        .map(|item| match item {
            Item::FunctionCall { arguments, .. } => value_cost(arguments),
            _ => 0,
        })
        .sum();
    let format = request
        .text
        .as_ref()
        .and_then(|text| text.format.as_ref())
        .map_or(0, |f| f.cost());
    tools + calls + format
}

/// The text of `parts`, which may hold text only, joined with newlines.
fn text_of(parts: Parts, at: &str) -> Result<String, ApiError> {
    let mut texts = Vec::new();
    for part in parts.0 {
        match part {
            Part::Text(run) => texts.push(run.newline_joined()),
            Part::Image(_) => {
                return Err(bad(format!(
                    "{at}: an input_image part is not allowed here"
                )));
            }
            Part::Refused { index, why } => {
                return Err(bad(format!("{at}.content[{index}]: {why}")));
            }
        }
    }
    Ok(texts.join("\n"))
}

fn user_content(parts: Parts, at: &str) -> Result<Vec<UserContent>, ApiError> {
    parts
        .0
        .into_iter()
        .map(|part| match part {
            Part::Text(run) => Ok(UserContent::Text {
                text: run.newline_joined(),
            }),
            Part::Image(image) => Ok(UserContent::Image(image)),
            Part::Refused { index, why } => Err(bad(format!("{at}.content[{index}]: {why}"))),
        })
        .collect()
}

/// Appends `block` to the trailing assistant message, or starts one.
fn push_assistant(messages: &mut Vec<Message>, block: AssistantContent) {
    if let Some(Message::Assistant { content }) = messages.last_mut() {
        content.push(block);
    } else {
        messages.push(Message::Assistant {
            content: vec![block],
        });
    }
}

/// Translates `request`, whose `previous_response_id` (if any) named `prior`.
pub(crate) fn translate(
    mut request: ResponsesRequest,
    prior: Option<Stored>,
) -> Result<Translated, ApiError> {
    refuse_unsupported(&request)?;
    let format = match request.text.take().and_then(|text| text.format) {
        Some(format) => format.spec("text.format")?,
        None => None,
    };
    let ignored_tools = hosted_tools(&request);
    let tools = tools(&mut request)?;
    let mut system: Vec<String> = request.instructions.take().into_iter().collect();
    let (mut messages, prior_hint, prior_system) = match prior {
        Some(prior) => (prior.messages, prior.hint, Some(prior.system_prompt)),
        None => (Vec::new(), None, None),
    };
    let prior_len = messages.len();
    // Outputs in `input` may answer calls the stored response made.
    let mut calls: HashMap<String, String> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { content } => Some(content),
            _ => None,
        })
        .flatten()
        .filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some((call.id.clone(), call.name.clone())),
            _ => None,
        })
        .collect();
    for (index, item) in std::mem::take(&mut request.input.0).into_iter().enumerate() {
        let at = format!("input[{index}]");
        match item {
            Item::Message { role, content } => match role.as_str() {
                "system" | "developer" => system.push(text_of(content, &at)?),
                "user" => messages.push(Message::User {
                    content: user_content(content, &at)?,
                }),
                "assistant" => {
                    let text = text_of(content, &at)?;
                    if !text.is_empty() {
                        push_assistant(&mut messages, AssistantContent::Text { text });
                    }
                }
                role => return Err(bad(format!("{at}: unknown role {role}"))),
            },
            Item::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                let arguments: Value = if arguments.trim().is_empty() {
                    json!({})
                } else {
                    serde_json::from_str(&arguments)
                        .map_err(|e| bad(format!("{at}: the arguments are not JSON: {e}")))?
                };
                calls.insert(call_id.clone(), name.clone());
                push_assistant(
                    &mut messages,
                    AssistantContent::ToolCall(ToolCall::new(call_id, name, arguments)),
                );
            }
            Item::FunctionCallOutput { call_id, output } => {
                let name = calls.get(&call_id).ok_or_else(|| {
                    ApiError::bad_request(
                        "unknown_tool_call_id",
                        format!(
                            "{at} answers call_id {call_id}, which no earlier function_call made"
                        ),
                    )
                })?;
                let output = text_of(output, &at)?;
                messages.push(Message::ToolResult(ToolResult::text(
                    call_id,
                    name.clone(),
                    output,
                    false,
                )));
            }
            Item::Reasoning => {}
            Item::Refused { index, why } => return Err(bad(format!("input[{index}]: {why}"))),
        }
    }
    if !matches!(
        messages.last(),
        Some(Message::User { .. } | Message::ToolResult(_))
    ) {
        return Err(bad(
            "the last input item must be a user message or a function_call_output",
        ));
    }
    if !messages.iter().any(|m| matches!(m, Message::User { .. })) {
        return Err(bad("the input has no user message"));
    }
    // Without instructions of its own, a continuation keeps the stored system prompt, so the
    // history is the stored one and its conversation resumes.
    let system_prompt = match prior_system {
        Some(stored) if system.is_empty() => stored,
        _ => system.join("\n\n"),
    };
    let mut conversation = Conversation::new(system_prompt.clone());
    conversation.messages = messages;
    conversation.tools = tools;
    // Codex names its session in `prompt_cache_key`: two sessions that start alike stay apart.
    let mut hint = request
        .prompt_cache_key
        .take()
        .or_else(|| request.user.take());
    if request.previous_response_id.is_some() {
        match (&hint, prior_hint) {
            (Some(asked), Some(stored)) if *asked != stored => {
                return Err(
                    bad("previous_response_id names a response of another session \
                     (prompt_cache_key / user differ)")
                    .with_param("previous_response_id"),
                );
            }
            (None, stored) => hint = stored,
            _ => {}
        }
    }
    Ok(Translated {
        conversation,
        hint,
        ignored_tools,
        system_prompt,
        format,
        prior_len,
    })
}

/// Fields that would change what the answer is if honoured, which this gateway cannot
/// honour: a 400 naming them rather than an answer that silently ignores them.
fn refuse_unsupported(request: &ResponsesRequest) -> Result<(), ApiError> {
    let unsupported = |param: &str, why: &str| {
        Err(
            ApiError::bad_request("unsupported_parameter", format!("{param}: {why}"))
                .with_param(param),
        )
    };
    if request.conversation.0 {
        return unsupported(
            "conversation",
            "this gateway keeps no Conversations objects; use previous_response_id or send the \
             whole conversation in `input`",
        );
    }
    if request.prompt.0 {
        return unsupported("prompt", "stored prompt templates are not supported");
    }
    if request.top_logprobs.is_some_and(|n| n > 0)
        || request.include.iter().any(|i| i.contains("logprobs"))
    {
        return unsupported("top_logprobs", "Cursor reports no token log probabilities");
    }
    if request.background == Some(true) {
        return unsupported("background", "background responses are not supported");
    }
    if let Some(ToolChoice::Named {
        kind: Some(forced), ..
    }) = &request.tool_choice
        && is_hosted(forced)
    {
        return unsupported(
            "tool_choice",
            &format!(
                "{forced} is a tool OpenAI's servers run; Cursor can only call the client's function tools"
            ),
        );
    }
    Ok(())
}

/// The hosted tools a request offers. Offering one is not a demand (Codex offers `web_search`
/// in every request): they are left out, named in the `x-gateway-ignored-tools` header and the
/// log; forcing one with `tool_choice` is a 400.
fn hosted_tools(request: &ResponsesRequest) -> Vec<String> {
    request
        .tools
        .iter()
        .map(|tool| tool.kind.as_str())
        .filter(|kind| is_hosted(kind))
        .map(str::to_owned)
        .collect()
}

fn is_hosted(kind: &str) -> bool {
    HOSTED_TOOLS.iter().any(|hosted| kind.starts_with(hosted))
}

/// Tool types a provider runs on its own servers.
const HOSTED_TOOLS: [&str; 6] = [
    "web_search",
    "file_search",
    "code_interpreter",
    "computer_use",
    "image_generation",
    "mcp",
];

/// Function tools (Responses shape: name at the top level). Client-run tools of other shapes
/// (local shell, freeform) are left out: Cursor can only call functions with a JSON schema.
fn tools(request: &mut ResponsesRequest) -> Result<Vec<Tool>, ApiError> {
    let mut tools = Vec::new();
    for (index, tool) in std::mem::take(&mut request.tools).into_iter().enumerate() {
        if tool.kind != "function" {
            continue;
        }
        let name = tool
            .name
            .ok_or_else(|| bad(format!("tools[{index}]: a function tool needs a `name`")))?;
        tools.push(Tool::new(
            name,
            tool.description.unwrap_or_default(),
            tool.parameters.map_or_else(
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

    fn translate_json(body: Value) -> Result<Translated, ApiError> {
        let request = parse(body.to_string().as_bytes()).map_err(|e| bad(e.to_string()))?;
        translate(request, None)
    }

    #[test]
    fn codex_shaped_input_translates_calls_outputs_and_instructions() {
        let body = json!({
            "model": "composer-2.5",
            "instructions": "You are Codex.",
            "prompt_cache_key": "session-1",
            "input": [
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox: read-only"}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
                {"type": "reasoning", "summary": []},
                {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}"},
                {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}
            ],
            "tools": [
                {"type": "function", "name": "shell", "parameters": {"type": "object"}},
                {"type": "local_shell"},
                {"type": "web_search"}
            ],
            "stream": true
        });
        let translated = translate_json(body).unwrap();
        let conversation = &translated.conversation;
        assert_eq!(
            conversation.system_prompt,
            "You are Codex.\n\nsandbox: read-only"
        );
        assert_eq!(
            conversation.tools.len(),
            1,
            "only function tools reach Cursor"
        );
        assert_eq!(conversation.messages.len(), 3);
        assert_eq!(
            conversation.messages[2],
            Message::ToolResult(ToolResult::text("c1", "shell", "a.txt", false))
        );
        assert_eq!(translated.hint.as_deref(), Some("session-1"));
        assert_eq!(translated.ignored_tools, ["web_search"]);
    }

    #[test]
    fn an_output_for_an_unknown_call_is_a_400() {
        let body = json!({"model": "m", "input": [
            {"type": "message", "role": "user", "content": "x"},
            {"type": "function_call_output", "call_id": "ghost", "output": "r"}
        ]});
        let error = translate_json(body).unwrap_err();
        assert_eq!(error.status, 400);
        assert!(error.message.contains("ghost"), "{}", error.message);
    }

    #[test]
    fn forcing_a_hosted_tool_and_unknown_items_are_400s() {
        let forced =
            json!({"model": "m", "input": "x", "tool_choice": {"type": "web_search_preview"}});
        assert!(
            translate_json(forced)
                .unwrap_err()
                .message
                .contains("web_search_preview")
        );
        let odd = json!({"model": "m", "input": [{"type": "computer_call_output"}]});
        assert!(
            translate_json(odd)
                .unwrap_err()
                .message
                .contains("computer_call_output")
        );
    }
}
