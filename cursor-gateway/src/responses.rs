//! `POST /v1/responses`: the subset Codex CLI uses. Input items (messages, function calls,
//! function call outputs) become the same transcript the chat endpoint builds; the answer
//! streams as Responses events (`response.created`, output items, text deltas,
//! `response.completed` with usage).

use std::collections::HashMap;

use axum::Json;
use axum::response::{IntoResponse as _, Response};
use bytes::Bytes;
use cursor_agent::AgentEvent;
use cursor_agent::ir::{
    AssistantContent, Conversation, Event, Message, Tool, ToolCall, ToolResult, Usage, UserContent,
};
use cursor_agent::session::ModelChoice;
use serde_json::{Value, json};

use crate::gateway::{Gateway, Leg, Meta, TurnGuard, collect, stale_after_answer, turn_vanished};
use crate::history::Scope;
use crate::outlet::{self, Outlet};
use crate::{ApiError, chat};

/// What a Responses request asked, translated.
#[derive(Debug)]
pub(crate) struct Translated {
    conversation: Conversation,
    /// `prompt_cache_key` (Codex names its session there), else `user`.
    hint: Option<String>,
    /// Hosted tools offered and left out.
    ignored_tools: Vec<String>,
    model: String,
    effort: Option<String>,
    stream: bool,
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid_request", message)
}

fn str_field<'a>(item: &'a Value, name: &str, at: &str) -> Result<&'a str, ApiError> {
    item.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("{at}: `{name}` must be a string")))
}

/// The text of a message's `content` (a string, or parts of `input_text` / `output_text`).
fn content_text(content: &Value, at: &str) -> Result<String, ApiError> {
    match content {
        Value::String(text) => Ok(text.clone()),
        Value::Array(parts) => {
            let mut texts = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                match part.get("type").and_then(Value::as_str) {
                    Some("input_text" | "output_text" | "text") => {
                        texts.push(str_field(part, "text", &format!("{at}.content[{i}]"))?);
                    }
                    other => {
                        return Err(bad(format!(
                            "{at}.content[{i}]: a {} part is not allowed here",
                            other.unwrap_or("untyped")
                        )));
                    }
                }
            }
            Ok(texts.join("\n"))
        }
        _ => Err(bad(format!(
            "{at}.content must be a string or a list of parts"
        ))),
    }
}

fn user_content(content: &Value, at: &str) -> Result<Vec<UserContent>, ApiError> {
    let Value::Array(parts) = content else {
        return Ok(vec![UserContent::Text {
            text: content_text(content, at)?,
        }]);
    };
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| match part.get("type").and_then(Value::as_str) {
            Some("input_text" | "text") => Ok(UserContent::Text {
                text: str_field(part, "text", &format!("{at}.content[{i}]"))?.to_owned(),
            }),
            Some("input_image") => {
                let url = part
                    .get("image_url")
                    .and_then(|u| u.as_str().or_else(|| u.get("url")?.as_str()))
                    .ok_or_else(|| {
                        bad(format!("{at}.content[{i}]: input_image needs image_url"))
                    })?;
                chat::image_of(url).map(UserContent::Image)
            }
            other => Err(bad(format!(
                "{at}.content[{i}]: a {} part is not allowed in a user message",
                other.unwrap_or("untyped")
            ))),
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

/// Parses and validates a Responses request body.
pub(crate) fn translate(body: &[u8]) -> Result<Translated, ApiError> {
    let request: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("the body is not JSON: {e}")))?;
    let model = str_field(&request, "model", "the request")?.to_owned();
    refuse_unsupported(&request)?;
    let mut system: Vec<String> = Vec::new();
    if let Some(instructions) = request.get("instructions").and_then(Value::as_str) {
        system.push(instructions.to_owned());
    }
    let items = match request.get("input") {
        Some(Value::String(text)) => {
            vec![json!({"type": "message", "role": "user", "content": text})]
        }
        Some(Value::Array(items)) => items.clone(),
        _ => return Err(bad("`input` must be a string or a list of items")),
    };
    let mut messages = Vec::new();
    let mut calls: HashMap<String, String> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("input[{index}]");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_else(|| {
            if item.get("role").is_some() {
                "message"
            } else {
                ""
            }
        });
        match kind {
            "message" => {
                let content = item.get("content").unwrap_or(&Value::Null);
                match str_field(item, "role", &at)? {
                    "system" | "developer" => system.push(content_text(content, &at)?),
                    "user" => messages.push(Message::User {
                        content: user_content(content, &at)?,
                    }),
                    "assistant" => {
                        let text = content_text(content, &at)?;
                        if !text.is_empty() {
                            push_assistant(&mut messages, AssistantContent::Text { text });
                        }
                    }
                    role => return Err(bad(format!("{at}: unknown role {role}"))),
                }
            }
            "function_call" => {
                let call_id = str_field(item, "call_id", &at)?.to_owned();
                let name = str_field(item, "name", &at)?.to_owned();
                let arguments = str_field(item, "arguments", &at)?;
                let arguments: Value = if arguments.trim().is_empty() {
                    json!({})
                } else {
                    serde_json::from_str(arguments)
                        .map_err(|e| bad(format!("{at}: the arguments are not JSON: {e}")))?
                };
                calls.insert(call_id.clone(), name.clone());
                push_assistant(
                    &mut messages,
                    AssistantContent::ToolCall(ToolCall::new(call_id, name, arguments)),
                );
            }
            "function_call_output" => {
                let call_id = str_field(item, "call_id", &at)?;
                let name = calls.get(call_id).ok_or_else(|| {
                    ApiError::bad_request(
                        "unknown_tool_call_id",
                        format!(
                            "{at} answers call_id {call_id}, which no earlier function_call made"
                        ),
                    )
                })?;
                let output = match item.get("output") {
                    Some(Value::String(text)) => text.clone(),
                    Some(other @ Value::Array(_)) => content_text(other, &at)?,
                    _ => return Err(bad(format!("{at}: `output` must be a string or parts"))),
                };
                messages.push(Message::ToolResult(ToolResult::text(
                    call_id,
                    name.clone(),
                    output,
                    false,
                )));
            }
            // Reasoning items carry nothing Cursor can take back.
            "reasoning" => {}
            other => {
                return Err(bad(format!(
                    "{at}: input items of type {} are not supported (message, function_call, \
                     function_call_output, reasoning are)",
                    if other.is_empty() { "(none)" } else { other }
                )));
            }
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
    let mut conversation = Conversation::new(system.join("\n\n"));
    conversation.messages = messages;
    conversation.tools = tools(&request)?;
    // Codex names its session in `prompt_cache_key`: two sessions that start alike stay apart.
    let hint = ["prompt_cache_key", "user"]
        .iter()
        .find_map(|name| request.get(*name).and_then(Value::as_str))
        .map(str::to_owned);
    Ok(Translated {
        ignored_tools: hosted_tools(&request),
        conversation,
        hint,
        model,
        effort: request
            .pointer("/reasoning/effort")
            .and_then(Value::as_str)
            .map(str::to_owned),
        stream: request
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// Fields that would change what the answer is if honoured, which this gateway cannot
/// honour: a 400 naming them rather than an answer that silently ignores them.
fn refuse_unsupported(request: &Value) -> Result<(), ApiError> {
    let unsupported = |param: &str, why: &str| {
        Err(
            ApiError::bad_request("unsupported_parameter", format!("{param}: {why}"))
                .with_param(param),
        )
    };
    if request
        .get("previous_response_id")
        .is_some_and(|v| !v.is_null())
    {
        return unsupported(
            "previous_response_id",
            "this gateway does not store responses; send the whole conversation in `input`",
        );
    }
    if request.get("background").and_then(Value::as_bool) == Some(true) {
        return unsupported("background", "background responses are not supported");
    }
    let forced = request
        .pointer("/tool_choice/type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if is_hosted(forced) {
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
fn hosted_tools(request: &Value) -> Vec<String> {
    request
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|tool| tool.get("type").and_then(Value::as_str))
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
fn tools(request: &Value) -> Result<Vec<Tool>, ApiError> {
    let mut tools = Vec::new();
    for (index, tool) in request
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            continue;
        }
        let name = str_field(tool, "name", &format!("tools[{index}]"))?;
        tools.push(Tool::new(
            name,
            tool.get("description")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            tool.get("parameters")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        ));
    }
    chat::narrow(tools, request.get("tool_choice"))
}

fn usage_json(usage: Option<&Usage>) -> Value {
    let Some(usage) = usage else {
        return Value::Null;
    };
    let input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
    let mut value = json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": input + usage.output_tokens,
    });
    if usage.input_estimated {
        value["estimated"] = json!(true);
    }
    value
}

fn message_item(id: &str, text: &str) -> Value {
    json!({
        "id": id, "type": "message", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

fn call_item(call: &ToolCall) -> Value {
    json!({
        "id": format!("fc_{}", call.id), "type": "function_call", "status": "completed",
        "call_id": call.id, "name": call.name, "arguments": call.arguments.to_string(),
    })
}

fn response_json(meta: &Meta, status: &str, output: &[Value], usage: Option<&Usage>) -> Value {
    let text: String = output
        .iter()
        .filter(|item| item["type"] == "message")
        .filter_map(|item| item["content"][0]["text"].as_str())
        .collect();
    json!({
        "id": meta.id, "object": "response", "created_at": meta.created, "status": status,
        "model": meta.model, "output": output, "output_text": text,
        "usage": usage_json(usage), "error": null,
    })
}

/// Answers one Responses request from `namespace` (its client key's).
pub(crate) async fn handle(
    gateway: &Gateway,
    namespace: &str,
    header_hint: Option<String>,
    body: &[u8],
) -> Result<Response, ApiError> {
    let translated = translate(body)?;
    let ignored = translated.ignored_tools.join(",");
    if !ignored.is_empty() {
        tracing::info!(tools = %ignored, "hosted tools offered and left out");
    }
    let mut response = answer(gateway, namespace, header_hint, translated).await?;
    if let Ok(value) = http::HeaderValue::from_str(&ignored)
        && !ignored.is_empty()
    {
        response
            .headers_mut()
            .insert("x-gateway-ignored-tools", value);
    }
    Ok(response)
}

async fn answer(
    gateway: &Gateway,
    namespace: &str,
    header_hint: Option<String>,
    translated: Translated,
) -> Result<Response, ApiError> {
    let model = gateway.model_choice(&translated.model, translated.effort.as_deref())?;
    let scope = Scope::new(namespace, translated.hint.clone().or(header_hint));
    let guard = gateway.begin(&scope, &translated.conversation)?;
    let meta = Meta::new("resp", &translated.model);
    if !translated.stream {
        let leg = collect(guard, &translated.conversation, &model).await?;
        let mut output = Vec::new();
        if !leg.text.is_empty() {
            output.push(message_item(&format!("msg_{}", meta.id), &leg.text));
        }
        output.extend(leg.calls.iter().map(call_item));
        return Ok(Json(response_json(
            &meta,
            "completed",
            &output,
            leg.usage.as_ref(),
        ))
        .into_response());
    }
    outlet::respond(move |outlet| stream(guard, translated.conversation, model, meta, outlet)).await
}

/// Ends the open text item, if any: its done events, and the item into `output`.
fn close_text(
    frames: &mut Vec<Bytes>,
    output: &mut Vec<Value>,
    text: &mut Option<(String, usize)>,
    message_id: &str,
    next: &mut dyn FnMut(&str, Value) -> Bytes,
) {
    if let Some((body, index)) = text.take() {
        let item = message_item(message_id, &body);
        let at = json!({"item_id": message_id, "output_index": index, "content_index": 0});
        let mut done = at.clone();
        done["text"] = json!(body);
        frames.push(next("response.output_text.done", done));
        let mut part = at;
        part["part"] = item["content"][0].clone();
        frames.push(next("response.content_part.done", part));
        frames.push(next(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        output.push(item);
    }
}

fn event(kind: &str, mut data: Value) -> Bytes {
    data["type"] = json!(kind);
    Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
}

/// Streams one leg as Responses events; the HTTP head waits for the first output so a
/// failure before it keeps its status, and the Run stops once the client is gone.
async fn stream(
    guard: TurnGuard,
    conversation: Conversation,
    model: ModelChoice,
    meta: Meta,
    mut outlet: Outlet,
) {
    let mut turn = guard.session().turn(&conversation, &model);
    let mut leg = Leg::default();
    let mut output: Vec<Value> = Vec::new();
    let mut text: Option<(String, usize)> = None;
    let message_id = format!("msg_{}", meta.id);
    let mut sequence = 0u64;
    let mut next = |kind: &str, mut data: Value| {
        data["sequence_number"] = json!(sequence);
        sequence += 1;
        event(kind, data)
    };
    loop {
        let agent_event = tokio::select! {
            event = turn.next() => event,
            () = outlet.closed() => return,
        };
        let Some(agent_event) = agent_event else {
            break;
        };
        let ir = match agent_event {
            AgentEvent::Ir(ir) => ir,
            other => {
                guard.side_event(&other);
                continue;
            }
        };
        let failure = if matches!(ir, Event::Reset) && outlet.started() {
            Some(stale_after_answer())
        } else {
            leg.absorb(&ir)
        };
        if let Some(error) = failure {
            guard.failed(&error);
            let failed = |error: &ApiError| {
                let mut response = response_json(&meta, "failed", &output, leg.usage.as_ref());
                response["error"] = json!({"code": error.code, "message": error.message});
                next("response.failed", json!({"response": response}))
            };
            return outlet.fail(error, failed).await;
        }
        let mut frames = Vec::new();
        match &ir {
            Event::TextDelta { text: delta } => {
                if text.is_none() {
                    let index = output.len();
                    frames.push(next("response.output_item.added", json!({"output_index": index, "item": {
                        "id": message_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []
                    }})));
                    frames.push(next("response.content_part.added", json!({"item_id": message_id, "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})));
                    text = Some((String::new(), index));
                }
                if let Some((body, index)) = text.as_mut() {
                    body.push_str(delta);
                    frames.push(next("response.output_text.delta", json!({"item_id": message_id, "output_index": *index, "content_index": 0, "delta": delta})));
                }
            }
            Event::ToolCall(call) => {
                close_text(&mut frames, &mut output, &mut text, &message_id, &mut next);
                let index = output.len();
                let item = call_item(call);
                frames.push(next(
                    "response.output_item.added",
                    json!({"output_index": index, "item": item}),
                ));
                frames.push(next("response.function_call_arguments.done", json!({"item_id": item["id"], "output_index": index, "arguments": item["arguments"]})));
                frames.push(next(
                    "response.output_item.done",
                    json!({"output_index": index, "item": item}),
                ));
                output.push(item);
            }
            Event::Done { .. } => {
                close_text(&mut frames, &mut output, &mut text, &message_id, &mut next);
                frames.push(next(
                    "response.completed",
                    json!({
                        "response": response_json(&meta, "completed", &output, leg.usage.as_ref())
                    }),
                ));
            }
            _ => {}
        }
        let opening = || {
            let created = response_json(&meta, "in_progress", &[], None);
            vec![
                next("response.created", json!({"response": created})),
                next("response.in_progress", json!({"response": created})),
            ]
        };
        if leg.stop.is_some() {
            // Recorded before the client reads the end, so its next request finds it.
            drop(turn);
            guard.finish(&leg);
            let _ = outlet.send(frames, opening).await;
            return;
        }
        if !outlet.send(frames, opening).await {
            return;
        }
    }
    let error = turn_vanished();
    guard.failed(&error);
    outlet.fail(error, |_| Bytes::new()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

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
                {"type": "local_shell"}
            ],
            "stream": true
        });
        let translated = translate(body.to_string().as_bytes()).unwrap();
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
        assert!(translated.stream);
        assert_eq!(translated.hint.as_deref(), Some("session-1"));
    }

    #[test]
    fn an_output_for_an_unknown_call_is_a_400() {
        let body = json!({"model": "m", "input": [
            {"type": "message", "role": "user", "content": "x"},
            {"type": "function_call_output", "call_id": "ghost", "output": "r"}
        ]});
        let error = translate(body.to_string().as_bytes()).unwrap_err();
        assert_eq!(error.status, 400);
        assert!(error.message.contains("ghost"), "{}", error.message);
    }
}
