//! The Responses API's bodies, typed: the request's top-level fields, and the response object
//! with its output items and usage.

use cursor_agent::ir::{ToolCall, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::gateway::Meta;
use crate::honour::FormatSpec;

/// A Responses request. Input items and tools keep their JSON until each is checked, so a 400
/// can name the one that is wrong; everything else is typed.
#[derive(Debug, Deserialize)]
pub(crate) struct ResponsesRequest {
    pub(crate) model: String,
    #[serde(default)]
    pub(crate) instructions: Option<String>,
    pub(crate) input: Input,
    #[serde(default)]
    pub(crate) previous_response_id: Option<String>,
    #[serde(default)]
    pub(crate) text: Option<TextConfig>,
    #[serde(default)]
    pub(crate) tools: Vec<Value>,
    #[serde(default)]
    pub(crate) tool_choice: Option<Value>,
    #[serde(default)]
    pub(crate) prompt_cache_key: Option<String>,
    #[serde(default)]
    pub(crate) user: Option<String>,
    #[serde(default)]
    pub(crate) store: Option<bool>,
    #[serde(default)]
    pub(crate) max_output_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) reasoning: Option<Reasoning>,
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    #[serde(default)]
    pub(crate) background: Option<bool>,
    #[serde(default)]
    pub(crate) conversation: Option<Value>,
    #[serde(default)]
    pub(crate) prompt: Option<Value>,
    #[serde(default)]
    pub(crate) top_logprobs: Option<u64>,
    #[serde(default)]
    pub(crate) include: Vec<String>,
}

/// `input`: a string (one user message) or items.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Input {
    Text(String),
    Items(Vec<Value>),
}

/// `text`.
#[derive(Debug, Deserialize)]
pub(crate) struct TextConfig {
    #[serde(default)]
    pub(crate) format: Option<FormatSpec>,
}

/// `reasoning`.
#[derive(Debug, Deserialize)]
pub(crate) struct Reasoning {
    #[serde(default)]
    pub(crate) effort: Option<String>,
}

/// A `message` input item.
#[derive(Debug, Deserialize)]
pub(crate) struct MessageItem {
    pub(crate) role: String,
    #[serde(default)]
    pub(crate) content: Value,
}

/// A `function_call` input item.
#[derive(Debug, Deserialize)]
pub(crate) struct FunctionCallItem {
    pub(crate) call_id: String,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) arguments: String,
}

/// A `function_call_output` input item.
#[derive(Debug, Deserialize)]
pub(crate) struct FunctionCallOutputItem {
    pub(crate) call_id: String,
    pub(crate) output: Value,
}

/// A `function` tool (Responses shape: the name at the top level).
#[derive(Debug, Deserialize)]
pub(crate) struct FunctionTool {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) parameters: Option<Value>,
}

/// One output item.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum OutputItem {
    Message {
        id: String,
        role: &'static str,
        status: &'static str,
        content: Vec<OutputText>,
    },
    FunctionCall {
        id: String,
        status: &'static str,
        call_id: String,
        name: String,
        arguments: String,
    },
}

impl OutputItem {
    /// A completed assistant message of `text`.
    pub(crate) fn message(id: &str, text: &str) -> Self {
        Self::Message {
            id: id.to_owned(),
            role: "assistant",
            status: "completed",
            content: vec![OutputText::new(text)],
        }
    }

    /// A completed call.
    pub(crate) fn call(call: &ToolCall) -> Self {
        Self::FunctionCall {
            id: format!("fc_{}", call.id),
            status: "completed",
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.to_string(),
        }
    }

    /// This item's id.
    pub(crate) fn id(&self) -> &str {
        match self {
            Self::Message { id, .. } | Self::FunctionCall { id, .. } => id,
        }
    }
}

/// An `output_text` content part.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct OutputText {
    #[serde(rename = "type")]
    kind: &'static str,
    pub(crate) text: String,
    annotations: [(); 0],
}

impl OutputText {
    pub(crate) fn new(text: &str) -> Self {
        Self {
            kind: "output_text",
            text: text.to_owned(),
            annotations: [],
        }
    }
}

/// The Responses usage object from Cursor's token counts (`estimated` when Cursor estimated
/// the input).
#[derive(Clone, Copy, Debug, Serialize)]
pub(crate) struct ResponsesUsage {
    input_tokens: u64,
    input_tokens_details: CachedTokens,
    output_tokens: u64,
    output_tokens_details: ReasoningTokens,
    total_tokens: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    estimated: bool,
}

#[derive(Clone, Copy, Debug, Serialize)]
struct CachedTokens {
    cached_tokens: u64,
}

#[derive(Clone, Copy, Debug, Serialize)]
struct ReasoningTokens {
    reasoning_tokens: u64,
}

impl From<&Usage> for ResponsesUsage {
    fn from(usage: &Usage) -> Self {
        let input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
        Self {
            input_tokens: input,
            input_tokens_details: CachedTokens {
                cached_tokens: usage.cache_read_tokens,
            },
            output_tokens: usage.output_tokens,
            output_tokens_details: ReasoningTokens {
                reasoning_tokens: usage.reasoning_tokens,
            },
            total_tokens: input + usage.output_tokens,
            estimated: usage.input_estimated,
        }
    }
}

/// Why a response is incomplete.
#[derive(Clone, Copy, Debug, Serialize)]
pub(crate) struct Incomplete {
    reason: &'static str,
}

/// A failed response's error.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ResponseError {
    pub(crate) code: String,
    pub(crate) message: String,
}

/// The response object (`object: response`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ResponseObject<'a> {
    id: &'a str,
    object: &'static str,
    created_at: u64,
    status: &'a str,
    model: &'a str,
    output: &'a [OutputItem],
    output_text: String,
    usage: Option<ResponsesUsage>,
    pub(crate) error: Option<ResponseError>,
    incomplete_details: Option<Incomplete>,
}

impl<'a> ResponseObject<'a> {
    /// The response `meta` names, in `status`, with `output` so far.
    pub(crate) fn new(
        meta: &'a Meta,
        status: &'a str,
        output: &'a [OutputItem],
        usage: Option<&Usage>,
    ) -> Self {
        let output_text = output
            .iter()
            .filter_map(|item| match item {
                OutputItem::Message { content, .. } => {
                    Some(content.iter().map(|c| c.text.as_str()))
                }
                OutputItem::FunctionCall { .. } => None,
            })
            .flatten()
            .collect();
        Self {
            id: &meta.id,
            object: "response",
            created_at: meta.created,
            status,
            model: &meta.model,
            output,
            output_text,
            usage: usage.map(ResponsesUsage::from),
            error: None,
            // The gateway cuts a reply only at max_output_tokens (Responses has no stop
            // sequences).
            incomplete_details: (status == "incomplete").then_some(Incomplete {
                reason: "max_output_tokens",
            }),
        }
    }
}
