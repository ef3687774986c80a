//! The assistant message pi's stream events carry as `partial`, `message` and `error`.

use cursor_proto::ir::{ToolCall, Usage};
use serde_json::{Map, Value, json};

use super::ModelInfo;

/// One block of the message's `content` (pi-ai `TextContent | ThinkingContent | ToolCall`).
#[derive(Debug)]
pub(crate) enum Block {
    Text(String),
    Thinking(String),
    ToolCall(ToolCall),
}

impl Block {
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Self::Text(text) => json!({"type": "text", "text": text}),
            Self::Thinking(text) => json!({"type": "thinking", "thinking": text}),
            Self::ToolCall(call) => tool_call_json(call),
        }
    }
}

/// pi-ai `ToolCall`: `arguments` must be the parsed object by `toolcall_end`.
pub(crate) fn tool_call_json(call: &ToolCall) -> Value {
    json!({"type": "toolCall", "id": call.id, "name": call.name, "arguments": call.arguments})
}

/// pi-ai `StopReason` values this adapter sets (`pending` exists from pi 0.99 on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PiStopReason {
    Pending,
    Stop,
    ToolUse,
    Length,
    Error,
    Aborted,
}

impl PiStopReason {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Stop => "stop",
            Self::ToolUse => "toolUse",
            Self::Length => "length",
            Self::Error => "error",
            Self::Aborted => "aborted",
        }
    }
}

/// The assistant message being built (pi-ai `AssistantMessage`, pi 0.99.1–1.6.0).
#[derive(Debug)]
pub(crate) struct PartialMessage {
    pub(crate) content: Vec<Block>,
    pub(crate) usage: Usage,
    pub(crate) stop_reason: PiStopReason,
    pub(crate) error_message: Option<String>,
    /// pi's `responseModel` (pi-ai 1.6.0 `AssistantMessage`): the model that actually served
    /// the turn, when the backend named it. Older pi versions ignore the field.
    pub(crate) response_model: Option<String>,
    timestamp_ms: u64,
}

impl PartialMessage {
    pub(crate) fn new(timestamp_ms: u64) -> Self {
        Self {
            content: Vec::new(),
            usage: Usage::default(),
            stop_reason: PiStopReason::Pending,
            error_message: None,
            response_model: None,
            timestamp_ms,
        }
    }

    /// The message as pi expects it; `model` supplies the identity fields and the prices.
    pub(crate) fn to_json(&self, model: &ModelInfo) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        message.insert(
            "content".into(),
            self.content.iter().map(Block::to_json).collect(),
        );
        message.insert("api".into(), json!(model.api));
        message.insert("provider".into(), json!(model.provider));
        message.insert("model".into(), json!(model.id));
        message.insert("usage".into(), self.usage_json(model));
        message.insert("stopReason".into(), json!(self.stop_reason.as_str()));
        if let Some(error) = &self.error_message {
            message.insert("errorMessage".into(), json!(error));
        }
        if let Some(served) = &self.response_model {
            message.insert("responseModel".into(), json!(served));
        }
        message.insert("timestamp".into(), json!(self.timestamp_ms));
        Value::Object(message)
    }

    /// pi-ai `Usage`, with `cost` filled as `calculateCost` would.
    pub(crate) fn usage_json(&self, model: &ModelInfo) -> Value {
        let usage = &self.usage;
        let mut out = json!({
            "input": usage.input_tokens,
            "output": usage.output_tokens,
            "cacheRead": usage.cache_read_tokens,
            "cacheWrite": usage.cache_write_tokens,
            "totalTokens": usage.total_tokens(),
            "cost": model.cost.cost_json(usage),
        });
        // `reasoning` (a subset of `output`) is optional in pi; send it only when known.
        if usage.reasoning_tokens > 0 {
            out["reasoning"] = json!(usage.reasoning_tokens);
        }
        out
    }
}
