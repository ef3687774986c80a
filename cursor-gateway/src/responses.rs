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

use crate::gateway::{Gateway, Leg, Meta, TurnGuard, stale_after_answer, turn_vanished};
use crate::history::Scope;
use crate::honour::{Clip, Format, answer_whole};
use crate::outlet::{self, Outlet};
use crate::responses_wire::{
    FunctionCallItem, FunctionCallOutputItem, FunctionTool, Input, MessageItem, OutputItem,
    ResponseObject, ResponsesRequest,
};
use crate::stored::{self, Stored};
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
    /// `store` not false: the completed answer is kept for `previous_response_id`.
    store: bool,
    /// The system prompt before a format's instruction, as stored.
    system_prompt: String,
    format: Option<Format>,
    clip: Clip,
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

/// Parses and validates a Responses request body; `prior` loads the stored response a
/// `previous_response_id` names, whose transcript goes before `input`.
pub(crate) fn translate(
    body: &[u8],
    prior: impl FnOnce(&str) -> Result<Stored, ApiError>,
) -> Result<Translated, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("the body is not JSON: {e}")))?;
    let request: ResponsesRequest = serde_json::from_value(value)
        .map_err(|e| bad(format!("the request does not fit the Responses shape: {e}")))?;
    refuse_unsupported(&request)?;
    let prior = match &request.previous_response_id {
        None => None,
        Some(id) => Some(prior(id)?),
    };
    let format = request.text.as_ref().and_then(|text| text.format.clone());
    let format = Format::from_spec(format, "text.format")?;
    let mut system: Vec<String> = request.instructions.iter().cloned().collect();
    let items = match &request.input {
        Input::Text(text) => vec![json!({"type": "message", "role": "user", "content": text})],
        Input::Items(items) => items.clone(),
    };
    let mut messages = prior
        .as_ref()
        .map(|p| p.messages.clone())
        .unwrap_or_default();
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
                let MessageItem { role, content } = typed(item, &at)?;
                match role.as_str() {
                    "system" | "developer" => system.push(content_text(&content, &at)?),
                    "user" => messages.push(Message::User {
                        content: user_content(&content, &at)?,
                    }),
                    "assistant" => {
                        let text = content_text(&content, &at)?;
                        if !text.is_empty() {
                            push_assistant(&mut messages, AssistantContent::Text { text });
                        }
                    }
                    role => return Err(bad(format!("{at}: unknown role {role}"))),
                }
            }
            "function_call" => {
                let FunctionCallItem {
                    call_id,
                    name,
                    arguments,
                } = typed(item, &at)?;
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
            "function_call_output" => {
                let FunctionCallOutputItem { call_id, output } = typed(item, &at)?;
                let name = calls.get(&call_id).ok_or_else(|| {
                    ApiError::bad_request(
                        "unknown_tool_call_id",
                        format!(
                            "{at} answers call_id {call_id}, which no earlier function_call made"
                        ),
                    )
                })?;
                let output = match output {
                    Value::String(text) => text,
                    other @ Value::Array(_) => content_text(&other, &at)?,
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
    // Without instructions of its own, a continuation keeps the stored system prompt, so the
    // history is the stored one and its conversation resumes.
    let system_prompt = match &prior {
        Some(prior) if system.is_empty() => prior.system_prompt.clone(),
        _ => system.join("\n\n"),
    };
    let mut conversation = Conversation::new(system_prompt.clone());
    conversation.messages = messages;
    conversation.tools = tools(&request)?;
    if let Some(format) = &format {
        format.instruct(&mut conversation);
    }
    // Codex names its session in `prompt_cache_key`: two sessions that start alike stay apart.
    let mut hint = request
        .prompt_cache_key
        .clone()
        .or_else(|| request.user.clone());
    if let Some(prior) = prior {
        match (&hint, prior.hint) {
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
        store: request.store != Some(false),
        system_prompt,
        format,
        clip: Clip::new(Vec::new(), request.max_output_tokens),
        ignored_tools: hosted_tools(&request),
        conversation,
        hint,
        effort: request.reasoning.and_then(|r| r.effort),
        stream: request.stream.unwrap_or(false),
        model: request.model,
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
    if request.conversation.as_ref().is_some_and(|v| !v.is_null()) {
        return unsupported(
            "conversation",
            "this gateway keeps no Conversations objects; use previous_response_id or send the \
             whole conversation in `input`",
        );
    }
    if request.prompt.as_ref().is_some_and(|v| !v.is_null()) {
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
    let forced = request
        .tool_choice
        .as_ref()
        .and_then(|choice| choice.get("type"))
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

/// An input item as its typed shape; a 400 naming the item when it does not fit.
fn typed<T: serde::de::DeserializeOwned>(item: &Value, at: &str) -> Result<T, ApiError> {
    serde_json::from_value(item.clone()).map_err(|e| bad(format!("{at}: {e}")))
}

/// The hosted tools a request offers. Offering one is not a demand (Codex offers `web_search`
/// in every request): they are left out, named in the `x-gateway-ignored-tools` header and the
/// log; forcing one with `tool_choice` is a 400.
fn hosted_tools(request: &ResponsesRequest) -> Vec<String> {
    request
        .tools
        .iter()
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
fn tools(request: &ResponsesRequest) -> Result<Vec<Tool>, ApiError> {
    let mut tools = Vec::new();
    for (index, tool) in request.tools.iter().enumerate() {
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            continue;
        }
        let FunctionTool {
            name,
            description,
            parameters,
        } = typed(tool, &format!("tools[{index}]"))?;
        tools.push(Tool::new(
            name,
            description.unwrap_or_default(),
            parameters.unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        ));
    }
    chat::narrow(tools, request.tool_choice.as_ref())
}

fn message_item(id: &str, text: &str) -> OutputItem {
    OutputItem::message(id, text)
}

fn call_item(call: &ToolCall) -> OutputItem {
    OutputItem::call(call)
}

fn response_json(meta: &Meta, status: &str, output: &[OutputItem], usage: Option<&Usage>) -> Value {
    json!(ResponseObject::new(meta, status, output, usage))
}

/// What to store once the answer completed (`None` for `store: false`).
#[derive(Debug)]
struct Keep {
    state: std::path::PathBuf,
    retention: std::time::Duration,
    id: String,
    stored: Stored,
}

impl Keep {
    fn new(gateway: &Gateway, scope: &Scope, translated: &Translated, id: &str) -> Option<Self> {
        translated.store.then(|| Self {
            state: gateway.state_dir().to_owned(),
            retention: gateway.limits().response_retention,
            id: id.to_owned(),
            stored: Stored {
                namespace: scope.namespace.clone(),
                hint: scope.hint.clone(),
                system_prompt: translated.system_prompt.clone(),
                messages: translated.conversation.messages.clone(),
            },
        })
    }

    /// Stores the transcript with `leg`'s answer last.
    fn save(mut self, leg: &Leg) {
        let mut content = Vec::new();
        if !leg.text.is_empty() {
            content.push(AssistantContent::Text {
                text: leg.text.clone(),
            });
        }
        content.extend(leg.calls.iter().cloned().map(AssistantContent::ToolCall));
        self.stored.messages.push(Message::Assistant { content });
        stored::save(&self.state, &self.id, &self.stored, self.retention);
    }
}

/// Answers one Responses request from `namespace` (its client key's).
pub(crate) async fn handle(
    gateway: &Gateway,
    namespace: &str,
    header_hint: Option<String>,
    body: &[u8],
) -> Result<Response, ApiError> {
    let translated = translate(body, |id| {
        stored::load(
            gateway.state_dir(),
            id,
            namespace,
            gateway.limits().response_retention,
        )
    })?;
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
    let meta = Meta::new("resp", &translated.model);
    let keep = Keep::new(gateway, &scope, &translated, &meta.id);
    if translated.stream && translated.format.is_none() {
        let guard = gateway.begin(&scope, &translated.conversation)?;
        return outlet::respond(move |outlet| {
            stream(
                guard,
                translated.conversation,
                model,
                meta,
                translated.clip,
                keep,
                outlet,
            )
        })
        .await;
    }
    let (leg, cut) = answer_whole(
        gateway,
        &scope,
        &translated.conversation,
        &model,
        &translated.clip,
        translated.format.as_ref(),
    )
    .await?;
    let status = if cut.is_some() {
        "incomplete"
    } else {
        "completed"
    };
    if cut.is_none()
        && let Some(keep) = keep
    {
        keep.save(&leg);
    }
    if translated.stream {
        // A checked format streams once checked: the whole reply as one delta.
        let frames = whole_events(&meta, &leg, status);
        let (tx, rx) = tokio::sync::mpsc::channel(frames.len().max(1));
        for frame in frames {
            let _ = tx.try_send(frame);
        }
        return Ok(outlet::sse_response(rx));
    }
    let mut output = Vec::new();
    if !leg.text.is_empty() {
        output.push(message_item(&format!("msg_{}", meta.id), &leg.text));
    }
    output.extend(leg.calls.iter().map(call_item));
    Ok(Json(response_json(&meta, status, &output, leg.usage.as_ref())).into_response())
}

/// The events of an answer already complete, its text as one delta.
fn whole_events(meta: &Meta, leg: &Leg, status: &str) -> Vec<Bytes> {
    let mut sequence = 0u64;
    let mut next = |kind: &str, mut data: Value| {
        data["sequence_number"] = json!(sequence);
        sequence += 1;
        event(kind, data)
    };
    let created = response_json(meta, "in_progress", &[], None);
    let mut frames = vec![
        next("response.created", json!({"response": created})),
        next("response.in_progress", json!({"response": created})),
    ];
    let mut output = Vec::new();
    let message_id = format!("msg_{}", meta.id);
    if !leg.text.is_empty() {
        frames.push(next("response.output_item.added", json!({"output_index": 0, "item": {
            "id": message_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []
        }})));
        frames.push(next("response.content_part.added", json!({"item_id": message_id, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})));
        frames.push(next("response.output_text.delta", json!({"item_id": message_id, "output_index": 0, "content_index": 0, "delta": leg.text})));
        let mut text = Some((leg.text.clone(), 0));
        close_text(&mut frames, &mut output, &mut text, &message_id, &mut next);
    }
    for call in &leg.calls {
        let index = output.len();
        let item = call_item(call);
        frames.push(next(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        ));
        frames.push(next(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        output.push(item);
    }
    let kind = if status == "completed" {
        "response.completed"
    } else {
        "response.incomplete"
    };
    frames.push(next(
        kind,
        json!({"response": response_json(meta, status, &output, leg.usage.as_ref())}),
    ));
    frames
}

/// Ends the open text item, if any: its done events, and the item into `output`.
fn close_text(
    frames: &mut Vec<Bytes>,
    output: &mut Vec<OutputItem>,
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
        part["part"] = json!(crate::responses_wire::OutputText::new(&body));
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

/// Adds `delta` to the open text item, opening one first if none is.
fn push_delta(
    frames: &mut Vec<Bytes>,
    output_len: usize,
    text: &mut Option<(String, usize)>,
    message_id: &str,
    next: &mut dyn FnMut(&str, Value) -> Bytes,
    delta: &str,
) {
    if delta.is_empty() {
        return;
    }
    if text.is_none() {
        let index = output_len;
        frames.push(next("response.output_item.added", json!({"output_index": index, "item": {
            "id": message_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []
        }})));
        frames.push(next("response.content_part.added", json!({"item_id": message_id, "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})));
        *text = Some((String::new(), index));
    }
    if let Some((body, index)) = text.as_mut() {
        body.push_str(delta);
        frames.push(next("response.output_text.delta", json!({"item_id": message_id, "output_index": *index, "content_index": 0, "delta": delta})));
    }
}

/// Streams one leg as Responses events, cut at `clip`'s limit; the HTTP head waits for the
/// first output so a failure before it keeps its status, and the Run stops once the client is
/// gone. A completed answer is stored (`keep`) before its last event goes out.
#[allow(clippy::too_many_arguments)]
async fn stream(
    guard: TurnGuard,
    conversation: Conversation,
    model: ModelChoice,
    meta: Meta,
    mut clip: Clip,
    keep: Option<Keep>,
    mut outlet: Outlet,
) {
    let mut turn = guard.session().turn(&conversation, &model);
    let mut leg = Leg::default();
    let mut output: Vec<OutputItem> = Vec::new();
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
        let mut cut = None;
        match &ir {
            Event::Reset => clip.reset(),
            Event::TextDelta { text: delta } => {
                let (out, at) = clip.push(delta);
                cut = at;
                push_delta(
                    &mut frames,
                    output.len(),
                    &mut text,
                    &message_id,
                    &mut next,
                    &out,
                );
            }
            Event::ToolCall(call) => {
                close_text(&mut frames, &mut output, &mut text, &message_id, &mut next);
                let index = output.len();
                let item = call_item(call);
                frames.push(next(
                    "response.output_item.added",
                    json!({"output_index": index, "item": item}),
                ));
                frames.push(next("response.function_call_arguments.done", json!({"item_id": item.id(), "output_index": index, "arguments": call.arguments.to_string()})));
                frames.push(next(
                    "response.output_item.done",
                    json!({"output_index": index, "item": item}),
                ));
                output.push(item);
            }
            Event::Done { .. } => {
                let rest = clip.flush();
                push_delta(
                    &mut frames,
                    output.len(),
                    &mut text,
                    &message_id,
                    &mut next,
                    &rest,
                );
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
        if cut.is_some() {
            close_text(&mut frames, &mut output, &mut text, &message_id, &mut next);
            let response = response_json(&meta, "incomplete", &output, leg.usage.as_ref());
            frames.push(next("response.incomplete", json!({"response": response})));
        }
        let opening = || {
            let created = response_json(&meta, "in_progress", &[], None);
            vec![
                next("response.created", json!({"response": created})),
                next("response.in_progress", json!({"response": created})),
            ]
        };
        if cut.is_some() {
            // Cut here: the Run is cancelled (dropped) and the conversation handed back
            // unrecorded, as when a client goes; nothing is stored.
            drop(turn);
            let _ = outlet.send(frames, opening).await;
            return;
        }
        if leg.stop.is_some() {
            // Recorded before the client reads the end, so its next request finds it.
            drop(turn);
            guard.finish(&leg);
            if let Some(keep) = keep {
                keep.save(&leg);
            }
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
        let translated = translate(body.to_string().as_bytes(), |_| unreachable!()).unwrap();
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
        let error = translate(body.to_string().as_bytes(), |_| unreachable!()).unwrap_err();
        assert_eq!(error.status, 400);
        assert!(error.message.contains("ghost"), "{}", error.message);
    }
}
