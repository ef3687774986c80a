//! The engine's output in Anthropic's shapes: the whole `message`, and the stream of
//! `message_start`, content block events, `message_delta` and `message_stop`, with `ping`
//! keep-alives and thinking blocks signed when they close.

use bytes::Bytes;
use cursor_agent::ir::{ToolCall, Usage};
use serde::Serialize;
use serde_json::{Value, json};

use super::error::AnthropicError;
use super::signature::ThinkingKey;
use crate::ApiError;
use crate::dialects::sse_event;
use crate::engine::stream::{Piece, Render};
use crate::engine::{Finish, Leg, Meta, Whole};

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

/// `stop_reason` for how an answer ended.
fn stop_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::StopSequence => "stop_sequence",
        Finish::Length => "max_tokens",
        Finish::ToolUse => "tool_use",
        Finish::EndTurn => "end_turn",
    }
}

fn tool_use(call: &ToolCall) -> OutBlock<'_> {
    OutBlock::ToolUse {
        id: &call.id,
        name: &call.name,
        input: &call.arguments,
    }
}

/// A whole answer as one `message`.
pub(crate) fn message<'a>(meta: &'a Meta, whole: &'a Whole, key: &ThinkingKey) -> MessageOut<'a> {
    let leg = &whole.leg;
    let mut content = Vec::new();
    if !leg.thinking.is_empty() {
        content.push(OutBlock::Thinking {
            thinking: &leg.thinking,
            signature: key.sign(&leg.thinking),
        });
    }
    if !leg.text.is_empty() {
        content.push(OutBlock::Text { text: &leg.text });
    }
    content.extend(leg.calls.iter().map(tool_use));
    MessageOut {
        id: &meta.id,
        kind: "message",
        role: "assistant",
        model: &meta.model,
        content,
        stop_reason: Some(stop_reason(whole.finish)),
        stop_sequence: whole.stop_sequence.as_deref(),
        usage: leg.usage.as_ref().map(UsageOut::from).unwrap_or_default(),
    }
}

/// How one streamed answer is worded, and what it has said so far.
pub(crate) struct MessagesStream {
    meta: Meta,
    key: ThinkingKey,
    /// The index of the next content block.
    index: usize,
    /// The open block: its index and kind.
    open: Option<(usize, Open)>,
    /// The open thinking block's text, signed when it closes.
    thinking: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Thinking,
    Text,
}

impl MessagesStream {
    pub(crate) fn new(meta: Meta, key: ThinkingKey) -> Self {
        Self {
            meta,
            key,
            index: 0,
            open: None,
            thinking: String::new(),
        }
    }

    /// Closes the open block (a thinking block gets its signature first).
    fn close(&mut self, out: &mut Vec<Bytes>) {
        if let Some((index, kind)) = self.open.take() {
            if kind == Open::Thinking {
                let signature = self.key.sign(&self.thinking);
                out.push(sse_event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}}),
                ));
                self.thinking.clear();
            }
            out.push(sse_event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
    }

    /// Opens a block of `kind` unless one is open, and returns its index.
    fn ensure(&mut self, kind: Open, out: &mut Vec<Bytes>) -> usize {
        if let Some((index, open)) = self.open
            && open == kind
        {
            return index;
        }
        self.close(out);
        let index = self.index;
        self.index += 1;
        let block = match kind {
            Open::Thinking => json!({"type": "thinking", "thinking": ""}),
            Open::Text => json!({"type": "text", "text": ""}),
        };
        out.push(sse_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        self.open = Some((index, kind));
        index
    }
}

impl Render for MessagesStream {
    fn opening(&mut self) -> Vec<Bytes> {
        let message = MessageOut {
            id: &self.meta.id,
            kind: "message",
            role: "assistant",
            model: &self.meta.model,
            content: Vec::new(),
            stop_reason: None,
            stop_sequence: None,
            usage: UsageOut::default(),
        };
        vec![sse_event(
            "message_start",
            &json!({"type": "message_start", "message": message}),
        )]
    }

    fn piece(&mut self, piece: Piece<'_>, out: &mut Vec<Bytes>) {
        match piece {
            Piece::Thinking(text) => {
                let index = self.ensure(Open::Thinking, out);
                self.thinking.push_str(text);
                out.push(sse_event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": text}}),
                ));
            }
            Piece::Text(text) => {
                let index = self.ensure(Open::Text, out);
                out.push(sse_event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
                ));
            }
            Piece::ToolCall(call) => {
                self.close(out);
                let index = self.index;
                self.index += 1;
                out.push(sse_event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
                ));
                out.push(sse_event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": call.arguments.to_string()}}),
                ));
                out.push(sse_event(
                    "content_block_stop",
                    &json!({"type": "content_block_stop", "index": index}),
                ));
            }
        }
    }

    fn end(&mut self, whole: &Whole, out: &mut Vec<Bytes>) {
        self.close(out);
        let usage = whole
            .leg
            .usage
            .as_ref()
            .map(UsageOut::from)
            .unwrap_or_default();
        out.push(sse_event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason(whole.finish), "stop_sequence": whole.stop_sequence}, "usage": usage}),
        ));
        out.push(sse_event("message_stop", &json!({"type": "message_stop"})));
    }

    fn keep_alive(&mut self) -> Bytes {
        sse_event("ping", &json!({"type": "ping"}))
    }

    fn failure(&mut self, error: &ApiError, _leg: &Leg) -> Bytes {
        sse_event("error", &AnthropicError(error.clone()).body())
    }

    fn reset(&mut self) {
        self.index = 0;
        self.open = None;
        self.thinking.clear();
    }
}
