//! The engine's output in the chat completions shapes: the whole `chat.completion`, and the
//! stream of `chat.completion.chunk`s ending with `[DONE]`.

use bytes::Bytes;
use cursor_agent::ir::{ToolCall, Usage};
use serde::Serialize;

use crate::ApiError;
use crate::dialects::sse_data;
use crate::engine::stream::{Piece, Render};
use crate::engine::turn_request::input_tokens;
use crate::engine::{Finish, Leg, Meta, Whole};

/// `chat.completion`.
#[derive(Debug, Serialize)]
pub(crate) struct ChatCompletion<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [Choice<'a>; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<UsageOut>,
}

#[derive(Debug, Serialize)]
struct Choice<'a> {
    index: u32,
    message: AssistantOut<'a>,
    finish_reason: &'static str,
}

#[derive(Debug, Serialize)]
struct AssistantOut<'a> {
    role: &'static str,
    /// `null` when the answer is only tool calls.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
}

/// One tool call, whole (some clients reject partial tool-call deltas).
#[derive(Debug, Serialize)]
pub(crate) struct ToolCallOut<'a> {
    /// Present in stream deltas only.
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<usize>,
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionOut<'a>,
}

#[derive(Debug, Serialize)]
struct FunctionOut<'a> {
    name: &'a str,
    arguments: String,
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
struct ChatChunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: Vec<ChunkChoice<'a>>,
    /// Only on the usage chunk (`stream_options.include_usage`), where it may be `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Option<UsageOut>>,
}

#[derive(Debug, Serialize)]
struct ChunkChoice<'a> {
    index: u32,
    delta: Delta<'a>,
    finish_reason: Option<&'static str>,
}

#[derive(Debug, Default, Serialize)]
struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<[ToolCallOut<'a>; 1]>,
}

/// OpenAI's usage object from Cursor's token counts (`estimated` when Cursor estimated the
/// input). Sums saturate.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct UsageOut {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: PromptDetails,
    completion_tokens_details: CompletionDetails,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    estimated: bool,
}

#[derive(Clone, Debug, Serialize)]
struct PromptDetails {
    cached_tokens: u64,
}

#[derive(Clone, Debug, Serialize)]
struct CompletionDetails {
    reasoning_tokens: u64,
}

impl From<&Usage> for UsageOut {
    fn from(usage: &Usage) -> Self {
        let prompt = input_tokens(usage);
        Self {
            prompt_tokens: prompt,
            completion_tokens: usage.output_tokens,
            total_tokens: prompt.saturating_add(usage.output_tokens),
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

/// `finish_reason` for how an answer ended.
fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::ToolUse => "tool_calls",
        Finish::Length => "length",
        Finish::StopSequence | Finish::EndTurn => "stop",
    }
}

/// A whole answer as one `chat.completion`.
pub(crate) fn completion<'a>(meta: &'a Meta, whole: &'a Whole) -> ChatCompletion<'a> {
    let leg = &whole.leg;
    let only_calls = leg.text.is_empty() && !leg.calls.is_empty();
    ChatCompletion {
        id: &meta.id,
        object: "chat.completion",
        created: meta.created,
        model: &meta.model,
        choices: [Choice {
            index: 0,
            message: AssistantOut {
                role: "assistant",
                content: (!only_calls).then_some(leg.text.as_str()),
                tool_calls: leg
                    .calls
                    .iter()
                    .map(|c| ToolCallOut::new(None, c))
                    .collect(),
                reasoning_content: (!leg.thinking.is_empty()).then_some(leg.thinking.as_str()),
            },
            finish_reason: finish_reason(whole.finish),
        }],
        usage: leg.usage.as_ref().map(UsageOut::from),
    }
}

/// How one streamed chat completion is worded.
pub(crate) struct ChatStream {
    meta: Meta,
    include_usage: bool,
    /// Tool calls streamed so far (each chunk names its index).
    calls: usize,
}

impl ChatStream {
    pub(crate) fn new(meta: Meta, include_usage: bool) -> Self {
        Self {
            meta,
            include_usage,
            calls: 0,
        }
    }

    fn chunk(&self, delta: Delta<'_>, finish: Option<&'static str>) -> Bytes {
        let meta = &self.meta;
        sse_data(&ChatChunk {
            id: &meta.id,
            object: "chat.completion.chunk",
            created: meta.created,
            model: &meta.model,
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                finish_reason: finish,
            }],
            usage: None,
        })
    }
}

impl Render for ChatStream {
    fn opening(&mut self) -> Vec<Bytes> {
        vec![self.chunk(
            Delta {
                role: Some("assistant"),
                content: Some(""),
                ..Delta::default()
            },
            None,
        )]
    }

    fn piece(&mut self, piece: Piece<'_>, out: &mut Vec<Bytes>) {
        let delta = match piece {
            Piece::Text(text) => Delta {
                content: Some(text),
                ..Delta::default()
            },
            Piece::Thinking(text) => Delta {
                reasoning_content: Some(text),
                ..Delta::default()
            },
            Piece::ToolCall(call) => {
                let index = self.calls;
                self.calls += 1;
                Delta {
                    tool_calls: Some([ToolCallOut::new(Some(index), call)]),
                    ..Delta::default()
                }
            }
        };
        out.push(self.chunk(delta, None));
    }

    fn end(&mut self, whole: &Whole, out: &mut Vec<Bytes>) {
        out.push(self.chunk(Delta::default(), Some(finish_reason(whole.finish))));
        if self.include_usage {
            let meta = &self.meta;
            out.push(sse_data(&ChatChunk {
                id: &meta.id,
                object: "chat.completion.chunk",
                created: meta.created,
                model: &meta.model,
                choices: Vec::new(),
                usage: Some(whole.leg.usage.as_ref().map(UsageOut::from)),
            }));
        }
        out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    }

    fn failure(&mut self, error: &ApiError, _leg: &Leg) -> Bytes {
        sse_data(&error.body())
    }

    fn reset(&mut self) {
        self.calls = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_sums_saturate() {
        let mut usage = Usage::default();
        usage.input_tokens = u64::MAX;
        usage.cache_read_tokens = 1;
        usage.output_tokens = 5;
        let out = serde_json::to_value(UsageOut::from(&usage)).unwrap();
        assert_eq!(out["prompt_tokens"], json!(u64::MAX));
        assert_eq!(out["total_tokens"], json!(u64::MAX));
    }

    #[test]
    fn streamed_calls_carry_their_indexes_and_whole_arguments() {
        let calls = [
            ToolCall::new("a", "add", json!({"x": 1})),
            ToolCall::new("b", "add", json!({})),
        ];
        let mut stream = ChatStream::new(Meta::new("chatcmpl", "m"), false);
        let mut out = Vec::new();
        for call in &calls {
            stream.piece(Piece::ToolCall(call), &mut out);
        }
        let second = String::from_utf8(out[1].to_vec()).unwrap();
        let chunk: serde_json::Value =
            serde_json::from_str(second.trim().strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(chunk["choices"][0]["delta"]["tool_calls"][0]["index"], 1);
        let first = String::from_utf8(out[0].to_vec()).unwrap();
        assert!(first.contains(r#""arguments":"{\"x\":1}""#), "{first}");
    }
}
