//! `POST /v1/chat/completions`: the request shape, its translation to the host-neutral
//! transcript, and the response and SSE chunk shapes.

use std::collections::HashMap;

use base64::Engine as _;
use cursor_agent::ir::{
    AssistantContent, Conversation, Image, Message, Tool, ToolCall, ToolResult, UserContent,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ApiError;
use crate::honour::{Clip, Format, FormatSpec};

/// A chat completions request (fields this gateway does not use are ignored).
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    pub(crate) model: String,
    pub(crate) messages: Vec<ChatMessage>,
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    #[serde(default)]
    pub(crate) stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub(crate) tools: Option<Vec<ToolSpec>>,
    #[serde(default)]
    pub(crate) tool_choice: Option<Value>,
    #[serde(default)]
    pub(crate) reasoning_effort: Option<String>,
    #[serde(default)]
    pub(crate) n: Option<u32>,
    /// The caller's end-user id: a session hint that keeps conversations apart.
    #[serde(default)]
    pub(crate) user: Option<String>,
    #[serde(default)]
    pub(crate) stop: Option<Stop>,
    #[serde(default)]
    pub(crate) max_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) max_completion_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) response_format: Option<FormatSpec>,
    /// Fields that would change the answer and cannot be honoured: present, they are a 400.
    #[serde(default)]
    pub(crate) logprobs: Option<bool>,
    #[serde(default)]
    pub(crate) top_logprobs: Option<u32>,
    #[serde(default)]
    pub(crate) audio: Option<Value>,
    #[serde(default)]
    pub(crate) modalities: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) prediction: Option<Value>,
    #[serde(default)]
    pub(crate) web_search_options: Option<Value>,
    #[serde(default)]
    pub(crate) functions: Option<Value>,
    #[serde(default)]
    pub(crate) logit_bias: Option<HashMap<String, f64>>,
}

/// `stop`: one sequence or up to four.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Stop {
    One(String),
    Many(Vec<String>),
}

impl ChatRequest {
    /// The stop sequences and output limit, for [`Clip`].
    pub(crate) fn clip(&self) -> Clip {
        let stops = match &self.stop {
            None => Vec::new(),
            Some(Stop::One(stop)) => vec![stop.clone()],
            Some(Stop::Many(stops)) => stops.clone(),
        };
        Clip::new(stops, self.max_completion_tokens.or(self.max_tokens))
    }

    /// Fields that change the answer and that Cursor cannot honour: a 400 naming the first.
    fn refuse_unsupported(&self) -> Result<(), ApiError> {
        let refuse = |param: &str, why: &str| {
            Err(
                ApiError::bad_request("unsupported_parameter", format!("{param}: {why}"))
                    .with_param(param),
            )
        };
        if self.n.is_some_and(|n| n != 1) {
            return Err(ApiError::bad_request(
                "invalid_n",
                "n must be 1: Cursor answers one choice",
            )
            .with_param("n"));
        }
        if self.logprobs == Some(true) || self.top_logprobs.is_some_and(|n| n > 0) {
            return refuse("logprobs", "Cursor reports no token log probabilities");
        }
        if self.audio.as_ref().is_some_and(|v| !v.is_null()) {
            return refuse("audio", "Cursor answers text only");
        }
        if self
            .modalities
            .iter()
            .flatten()
            .any(|modality| modality != "text")
        {
            return refuse("modalities", "Cursor answers text only");
        }
        if self.prediction.as_ref().is_some_and(|v| !v.is_null()) {
            return refuse("prediction", "Cursor takes no predicted output");
        }
        if self
            .web_search_options
            .as_ref()
            .is_some_and(|v| !v.is_null())
        {
            return refuse(
                "web_search_options",
                "web search is a tool OpenAI's servers run; offer a function tool instead",
            );
        }
        if self.functions.as_ref().is_some_and(|v| !v.is_null()) {
            return refuse(
                "functions",
                "the legacy functions field is not supported; use tools",
            );
        }
        if self
            .logit_bias
            .as_ref()
            .is_some_and(|bias| !bias.is_empty())
        {
            return refuse("logit_bias", "Cursor takes no token biases");
        }
        if let Some(Stop::Many(stops)) = &self.stop
            && stops.len() > 4
        {
            return Err(
                ApiError::bad_request("invalid_stop", "stop takes at most 4 sequences")
                    .with_param("stop"),
            );
        }
        Ok(())
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct StreamOptions {
    #[serde(default)]
    pub(crate) include_usage: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum ChatMessage {
    System {
        content: Content,
    },
    Developer {
        content: Content,
    },
    User {
        content: Content,
    },
    Assistant {
        #[serde(default)]
        content: Option<Content>,
        #[serde(default)]
        tool_calls: Option<Vec<ToolCallSpec>>,
    },
    Tool {
        content: Content,
        tool_call_id: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Deserialize)]
pub(crate) struct ImageUrl {
    pub(crate) url: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallSpec {
    pub(crate) id: String,
    pub(crate) function: FunctionCall,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionCall {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) arguments: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ToolSpec {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) function: FunctionSpec,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionSpec {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) parameters: Option<Value>,
}

/// What the request asked, translated.
#[derive(Debug)]
pub(crate) struct Translated {
    /// The transcript, the format's instruction at the end of its system prompt.
    pub(crate) conversation: Conversation,
    pub(crate) format: Option<Format>,
}

/// Parses the body; malformed JSON and unknown shapes are 400s that say what is wrong.
pub(crate) fn parse(body: &[u8]) -> Result<ChatRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("the body is not JSON: {e}")))?;
    serde_json::from_value(value).map_err(|e| {
        ApiError::bad_request(
            "invalid_request",
            format!("the request does not fit the chat completions shape: {e}"),
        )
    })
}

fn text_of(content: &Content, what: &str) -> Result<String, ApiError> {
    match content {
        Content::Text(text) => Ok(text.clone()),
        Content::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                Part::Text { text } => Ok(text.as_str()),
                Part::ImageUrl { .. } => Err(ApiError::bad_request(
                    "invalid_content",
                    format!("{what} messages take text only, not image_url"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|texts| texts.join("\n")),
    }
}

/// A `data:` URL's image; remote URLs are refused (the gateway fetches nothing).
pub(crate) fn image_of(url: &str) -> Result<Image, ApiError> {
    let bad = |why: &str| ApiError::bad_request("invalid_image_url", format!("image_url: {why}"));
    let rest = url.strip_prefix("data:").ok_or_else(|| {
        bad("only data: URLs are accepted (data:image/png;base64,...); the gateway fetches nothing")
    })?;
    let (meta, data) = rest
        .split_once(',')
        .ok_or_else(|| bad("a data URL needs a comma"))?;
    let mime = meta
        .strip_suffix(";base64")
        .ok_or_else(|| bad("the data URL must be base64"))?;
    if !mime.starts_with("image/") {
        return Err(bad(&format!("{mime} is not an image type")));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| bad(&format!("bad base64: {e}")))?;
    Ok(Image::new(mime, bytes))
}

fn user_content(content: &Content) -> Result<Vec<UserContent>, ApiError> {
    match content {
        Content::Text(text) => Ok(vec![UserContent::Text { text: text.clone() }]),
        Content::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                Part::Text { text } => Ok(UserContent::Text { text: text.clone() }),
                Part::ImageUrl { image_url } => image_of(&image_url.url).map(UserContent::Image),
            })
            .collect(),
    }
}

/// The host-neutral transcript of `request`, validated: the tools `tool_choice` allows, the
/// system text, user turns with images, assistant tool calls and their results.
pub(crate) fn translate(request: &ChatRequest) -> Result<Translated, ApiError> {
    request.refuse_unsupported()?;
    let format = Format::from_spec(request.response_format.clone(), "response_format")?;
    let mut system = Vec::new();
    let mut messages = Vec::new();
    // Call id -> tool name, for every call an assistant message made so far.
    let mut calls: HashMap<String, String> = HashMap::new();
    for (index, message) in request.messages.iter().enumerate() {
        match message {
            ChatMessage::System { content } | ChatMessage::Developer { content } => {
                system.push(text_of(content, "system")?);
            }
            ChatMessage::User { content } => messages.push(Message::User {
                content: user_content(content)?,
            }),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if let Some(content) = content {
                    let text = text_of(content, "assistant")?;
                    if !text.is_empty() {
                        blocks.push(AssistantContent::Text { text });
                    }
                }
                for call in tool_calls.iter().flatten() {
                    let arguments = if call.function.arguments.trim().is_empty() {
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
                        call.id.clone(),
                        call.function.name.clone(),
                        arguments,
                    )));
                }
                messages.push(Message::Assistant { content: blocks });
            }
            ChatMessage::Tool {
                content,
                tool_call_id,
            } => {
                let name = calls.get(tool_call_id).ok_or_else(|| {
                    ApiError::bad_request(
                        "unknown_tool_call_id",
                        format!(
                            "messages[{index}] answers tool_call_id {tool_call_id}, which no earlier \
                             assistant message called"
                        ),
                    )
                    .with_param(format!("messages[{index}].tool_call_id"))
                })?;
                let text = text_of(content, "tool")?;
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
    conversation.tools = tools(request)?;
    if let Some(format) = &format {
        format.instruct(&mut conversation);
    }
    Ok(Translated {
        conversation,
        format,
    })
}

/// The function tools the request offers, narrowed by `tool_choice`.
fn tools(request: &ChatRequest) -> Result<Vec<Tool>, ApiError> {
    let mut tools = Vec::new();
    for (index, spec) in request.tools.iter().flatten().enumerate() {
        if spec.kind != "function" {
            return Err(ApiError::bad_request(
                "invalid_tools",
                format!(
                    "tools[{index}]: only function tools are supported, not {}",
                    spec.kind
                ),
            ));
        }
        tools.push(Tool::new(
            spec.function.name.clone(),
            spec.function.description.clone().unwrap_or_default(),
            spec.function
                .parameters
                .clone()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        ));
    }
    narrow(tools, request.tool_choice.as_ref())
}

/// `none` offers no tools, a named function only that one; `auto` and `required` offer all
/// (Cursor has no way to force a call, so `required` is a request the model may not follow).
pub(crate) fn narrow(tools: Vec<Tool>, choice: Option<&Value>) -> Result<Vec<Tool>, ApiError> {
    let bad =
        |why: String| ApiError::bad_request("invalid_tool_choice", why).with_param("tool_choice");
    match choice {
        None | Some(Value::Null) => Ok(tools),
        Some(Value::String(mode)) => match mode.as_str() {
            "auto" | "required" => Ok(tools),
            "none" => Ok(Vec::new()),
            other => Err(bad(format!("unknown tool_choice {other}"))),
        },
        Some(value) => {
            let name = value
                .pointer("/function/name")
                .or_else(|| value.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| bad("tool_choice must be a mode or name a function".into()))?;
            let named: Vec<Tool> = tools.into_iter().filter(|t| t.name == name).collect();
            if named.is_empty() {
                return Err(bad(format!(
                    "tool_choice names {name}, which tools does not list"
                )));
            }
            Ok(named)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ToolCallOut;

    fn translate_json(value: Value) -> Result<Translated, ApiError> {
        translate(&parse(value.to_string().as_bytes())?)
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
        let calls = [
            ToolCall::new("a", "add", json!({"x": 1})),
            ToolCall::new("b", "add", json!({})),
        ];
        let streamed: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| serde_json::to_value(ToolCallOut::new(Some(i), c)).unwrap())
            .collect();
        assert_eq!(streamed[1]["index"], 1);
        assert_eq!(streamed[0]["function"]["arguments"], "{\"x\":1}");
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
        let error = parse(b"{not json").unwrap_err();
        assert_eq!((error.status, error.code.as_str()), (400, "invalid_json"));
    }

    #[test]
    fn tool_choice_none_drops_tools_and_a_named_one_keeps_only_it() {
        let tools = vec![Tool::new("a", "", json!({})), Tool::new("b", "", json!({}))];
        assert!(
            narrow(tools.clone(), Some(&json!("none")))
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            narrow(tools.clone(), Some(&json!("required")))
                .unwrap()
                .len(),
            2
        );
        let named = narrow(
            tools,
            Some(&json!({"type": "function", "function": {"name": "b"}})),
        )
        .unwrap();
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].name, "b");
    }

    #[test]
    fn a_data_url_image_becomes_an_image_block() {
        let image = image_of("data:image/png;base64,iVBORw0KGgo=").unwrap();
        assert_eq!(image.mime_type, "image/png");
        assert_eq!(image.data[..4], [0x89, b'P', b'N', b'G']);
    }
}
