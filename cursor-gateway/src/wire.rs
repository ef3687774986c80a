//! The response bodies of OpenAI's chat completions API, typed.

use cursor_agent::ir::{ToolCall, Usage};
use serde::Serialize;

/// `chat.completion`.
#[derive(Debug, Serialize)]
pub(crate) struct ChatCompletion<'a> {
    pub(crate) id: &'a str,
    pub(crate) object: &'static str,
    pub(crate) created: u64,
    pub(crate) model: &'a str,
    pub(crate) choices: [Choice<'a>; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<UsageOut>,
}

/// The one choice of a completion.
#[derive(Debug, Serialize)]
pub(crate) struct Choice<'a> {
    pub(crate) index: u32,
    pub(crate) message: AssistantOut<'a>,
    pub(crate) finish_reason: &'static str,
}

/// The assistant message of a completion.
#[derive(Debug, Serialize)]
pub(crate) struct AssistantOut<'a> {
    pub(crate) role: &'static str,
    /// `null` when the answer is only tool calls.
    pub(crate) content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tool_calls: Vec<ToolCallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_content: Option<&'a str>,
}

/// One tool call, whole (some clients reject partial tool-call deltas).
#[derive(Debug, Serialize)]
pub(crate) struct ToolCallOut<'a> {
    /// Present in stream deltas only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) index: Option<usize>,
    pub(crate) id: &'a str,
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) function: FunctionOut<'a>,
}

/// A tool call's function and its arguments as JSON text.
#[derive(Debug, Serialize)]
pub(crate) struct FunctionOut<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: String,
}

impl<'a> ToolCallOut<'a> {
    pub(crate) fn new(index: Option<usize>, call: &'a ToolCall) -> Self {
        Self {
            index,
            id: &call.id,
            kind: "function",
            function: FunctionOut {
                name: &call.name,
                arguments: call.arguments.to_string(),
            },
        }
    }
}

/// `chat.completion.chunk`.
#[derive(Debug, Serialize)]
pub(crate) struct ChatChunk<'a> {
    pub(crate) id: &'a str,
    pub(crate) object: &'static str,
    pub(crate) created: u64,
    pub(crate) model: &'a str,
    pub(crate) choices: Vec<ChunkChoice<'a>>,
    /// Only on the usage chunk (`stream_options.include_usage`), where it may be `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<Option<UsageOut>>,
}

/// The one choice of a chunk.
#[derive(Debug, Serialize)]
pub(crate) struct ChunkChoice<'a> {
    pub(crate) index: u32,
    pub(crate) delta: Delta<'a>,
    pub(crate) finish_reason: Option<&'static str>,
}

/// What a chunk adds.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_calls: Option<[ToolCallOut<'a>; 1]>,
}

/// OpenAI's usage object from Cursor's token counts (`estimated` when Cursor estimated the
/// input).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct UsageOut {
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
    pub(crate) total_tokens: u64,
    pub(crate) prompt_tokens_details: PromptDetails,
    pub(crate) completion_tokens_details: CompletionDetails,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) estimated: bool,
}

/// Cached input tokens.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct PromptDetails {
    pub(crate) cached_tokens: u64,
}

/// Reasoning output tokens.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct CompletionDetails {
    pub(crate) reasoning_tokens: u64,
}

impl From<&Usage> for UsageOut {
    fn from(usage: &Usage) -> Self {
        let prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
        Self {
            prompt_tokens: prompt,
            completion_tokens: usage.output_tokens,
            total_tokens: prompt + usage.output_tokens,
            prompt_tokens_details: PromptDetails {
                cached_tokens: usage.cache_read_tokens,
            },
            completion_tokens_details: CompletionDetails {
                reasoning_tokens: usage.reasoning_tokens,
            },
            estimated: usage.input_estimated,
        }
    }
}
