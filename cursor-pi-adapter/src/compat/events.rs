//! Conversation-model events → pi `AssistantMessageEvent` objects.

use cursor_proto::ir::{ErrorInfo, ErrorKind, Event, NextStep, StopReason, ToolCall, Usage};

use crate::pi_words::for_pi;
use serde_json::{Value, json};

use super::ModelInfo;
use super::partial::{Block, PartialMessage, PiStopReason, tool_call_json};

/// Turns one turn's [`Event`]s into pi `AssistantMessageEvent` JSON objects, in order.
///
/// The mapper keeps the assistant message pi calls `partial` and follows pi's streaming
/// contract (pi 0.99.1–1.6.0, pi-ai `AssistantMessageEvent`):
///
/// - one `start` first, unless the turn fails before producing anything (then straight `error`);
/// - text and thinking arrive as `*_start`, `*_delta`..., `*_end` around one content block; a
///   block ends when another kind begins or the turn ends normally;
/// - a tool call is `toolcall_start`, one `toolcall_delta` with the arguments' JSON text, and
///   `toolcall_end` carrying the parsed call;
/// - exactly one `done` (`stop`, `toolUse`, `length`) or `error` (`error`, `aborted`, with
///   `errorMessage`) last; later events map to nothing;
/// - usage reports update `partial.usage` (with cost from the model's rates) without an event
///   of their own; [`Event::Reset`] empties `partial.content`; [`Event::ModelResolved`] sets
///   `partial.responseModel` (pi 1.6.0's name for the model that served the turn) without an
///   event of its own.
///
/// Every event carries a snapshot of `partial` as it stands after the change the event
/// announces. pi wants one live object: a binding keeps its own message and copies each
/// snapshot's fields onto it before pushing the event.
///
/// [`EventMapper::with_patches`] is the O(1) form for a binding: instead of a snapshot each
/// event carries `patch`, the list of changes to apply to the binding's live message before the
/// event is pushed (see [`PatchOp`](EventMapper::with_patches) for the operations); a `done`'s
/// `message` and an `error`'s `error` are then the live message itself.
///
/// An error's `errorMessage` is the [`ErrorInfo`] display (`network error: ... (next step: ...)`).
/// The wording matters to pi: it retries a turn whose message matches its transient-failure
/// patterns (among them `network error`, `timeout`, `rate limit`, 5xx codes) and compacts on
/// context-overflow wording, so a network-kind failure is retried by pi and an auth-kind one
/// is not.
#[derive(Debug)]
pub struct EventMapper {
    model: ModelInfo,
    message: PartialMessage,
    /// Index of the text or thinking block that deltas currently extend.
    open_block: Option<usize>,
    phase: Phase,
    /// `Some` in patch form: the changes made since the last event, sent with the next one.
    patch: Option<Vec<Value>>,
    /// Whether a patch has carried the whole message yet (the first one does).
    synced: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    NotStarted,
    Streaming,
    Finished,
}

impl EventMapper {
    /// A mapper for one turn answered by `model`, whose request started at `timestamp_ms`
    /// (Unix milliseconds, pi's `AssistantMessage.timestamp`).
    pub fn new(model: ModelInfo, timestamp_ms: u64) -> Self {
        Self {
            model,
            message: PartialMessage::new(timestamp_ms),
            open_block: None,
            phase: Phase::NotStarted,
            patch: None,
            synced: false,
        }
    }

    /// A mapper whose events carry `patch` (the changes to the live message) instead of a
    /// snapshot, so each event costs O(its own size) however long the answer grows.
    ///
    /// `patch` is a list of operations, applied in order to the binding's live message:
    ///
    /// - `["full", message]`: replace every field with `message`'s (first event only);
    /// - `["push", block]`: append `block` to `content`;
    /// - `["append", index]`: append the event's own `delta` to the text or thinking of
    ///   `content[index]`;
    /// - `["set", index, block]`: replace `content[index]`;
    /// - `["clear"]`: empty `content`;
    /// - `["fields", object]`: assign `object`'s fields (`usage`, `stopReason`, `errorMessage`).
    ///
    /// The event's snapshot key (`partial`, `message` for `done`, `error` for `error`) is left
    /// out; the binding sets it to its live message.
    pub fn with_patches(model: ModelInfo, timestamp_ms: u64) -> Self {
        Self {
            patch: Some(Vec::new()),
            ..Self::new(model, timestamp_ms)
        }
    }

    /// Records a change to the message for the next patch (nothing in snapshot form, nor
    /// before the first patch, which carries the whole message).
    fn record(&mut self, op: impl FnOnce(&Self) -> Value) {
        if self.patch.is_some() && self.synced {
            let op = op(self);
            if let Some(patch) = &mut self.patch {
                patch.push(op);
            }
        }
    }

    /// Completes an event: `key` set to a snapshot, or `patch` set to the pending changes.
    fn carry(&mut self, mut event: Value, key: &str) -> Value {
        if !self.synced && self.patch.is_some() {
            self.synced = true;
            event["patch"] = json!([["full", self.partial()]]);
            return event;
        }
        let value = match &mut self.patch {
            Some(patch) => {
                let ops = std::mem::take(patch);
                event["patch"] = Value::Array(ops);
                return event;
            }
            None => self.partial(),
        };
        event[key] = value;
        event
    }

    /// The pi events for one conversation-model event (possibly none).
    pub fn map(&mut self, event: Event) -> Vec<Value> {
        let mut out = Vec::new();
        if self.phase == Phase::Finished {
            return out;
        }
        match event {
            Event::Error(info) => {
                self.fail(PiStopReason::Error, for_pi(&info).to_string(), &mut out)
            }
            Event::Aborted => self.fail(
                PiStopReason::Aborted,
                "Request was aborted".into(),
                &mut out,
            ),
            Event::TextDelta { text } => {
                self.start(&mut out);
                self.stream_text(BlockKind::Text, &text, &mut out);
            }
            Event::ThinkingDelta { text } => {
                self.start(&mut out);
                self.stream_text(BlockKind::Thinking, &text, &mut out);
            }
            Event::ToolCall(call) => {
                self.start(&mut out);
                self.tool_call(call, &mut out);
            }
            Event::Usage(usage) => {
                self.start(&mut out);
                self.message.usage = usage;
                self.record(|me| json!(["fields", {"usage": me.message.usage_json(&me.model)}]));
            }
            Event::ModelResolved { model } => {
                self.start(&mut out);
                self.message.response_model = Some(model);
                self.record(|me| json!(["fields", {"responseModel": me.message.response_model}]));
            }
            Event::Reset => {
                self.start(&mut out);
                self.message.content.clear();
                self.open_block = None;
                self.record(|_| json!(["clear"]));
            }
            Event::Done { reason } => {
                self.start(&mut out);
                self.close_block(&mut out);
                self.message.stop_reason = match reason {
                    StopReason::Stop => PiStopReason::Stop,
                    StopReason::ToolUse => PiStopReason::ToolUse,
                    StopReason::Length => PiStopReason::Length,
                    // A reason added to the model later: the turn did end normally.
                    _ => PiStopReason::Stop,
                };
                let reason = self.message.stop_reason.as_str();
                self.record(|_| json!(["fields", {"stopReason": reason}]));
                let done = json!({"type": "done", "reason": reason});
                out.push(self.carry(done, "message"));
                self.phase = Phase::Finished;
            }
            // A newer event kind this adapter does not know carries nothing pi can show.
            _ => {}
        }
        out
    }

    /// Ends the turn when the event source is exhausted: nothing if a final event was mapped,
    /// otherwise an `error` saying the stream stopped early.
    pub fn finish(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        if self.phase != Phase::Finished {
            let info = ErrorInfo::new(
                ErrorKind::Network,
                "the model stream ended before the turn finished",
                NextStep::Retry,
            );
            self.fail(PiStopReason::Error, for_pi(&info).to_string(), &mut out);
        }
        out
    }

    /// Whether a `done` or `error` has been produced.
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    /// The assistant message as it stands now, in pi's shape.
    pub fn partial(&self) -> Value {
        self.message.to_json(&self.model)
    }

    /// The token counts reported so far.
    pub fn usage(&self) -> Usage {
        self.message.usage
    }

    fn start(&mut self, out: &mut Vec<Value>) {
        if self.phase == Phase::NotStarted {
            self.phase = Phase::Streaming;
            let start = json!({"type": "start"});
            out.push(self.carry(start, "partial"));
        }
    }

    fn stream_text(&mut self, kind: BlockKind, delta: &str, out: &mut Vec<Value>) {
        if delta.is_empty() {
            return;
        }
        let index = match self.open_block {
            Some(index) if kind.matches(&self.message.content[index]) => index,
            _ => {
                self.close_block(out);
                self.message.content.push(kind.empty());
                self.record(|_| json!(["push", kind.empty().to_json()]));
                let index = self.message.content.len() - 1;
                self.open_block = Some(index);
                let start = json!({"type": kind.event("start"), "contentIndex": index});
                out.push(self.carry(start, "partial"));
                index
            }
        };
        if let Block::Text(text) | Block::Thinking(text) = &mut self.message.content[index] {
            text.push_str(delta);
        }
        self.record(|_| json!(["append", index]));
        let event = json!({"type": kind.event("delta"), "contentIndex": index, "delta": delta});
        out.push(self.carry(event, "partial"));
    }

    fn tool_call(&mut self, call: ToolCall, out: &mut Vec<Value>) {
        self.close_block(out);
        // pi streams arguments as JSON text and parses them into the block as they grow; here
        // they arrive whole, so the block starts empty and is complete after the one delta.
        let arguments_text = call.arguments.to_string();
        let arguments = match call.arguments {
            Value::Null => Value::Object(serde_json::Map::new()),
            arguments => arguments,
        };
        let mut block = ToolCall::new(call.id, call.name, Value::Object(serde_json::Map::new()));
        self.record(|_| json!(["push", tool_call_json(&block)]));
        self.message.content.push(Block::ToolCall(block.clone()));
        let index = self.message.content.len() - 1;
        let start = json!({"type": "toolcall_start", "contentIndex": index});
        out.push(self.carry(start, "partial"));
        block.arguments = arguments;
        let tool_call = tool_call_json(&block);
        self.message.content[index] = Block::ToolCall(block);
        self.record(|_| json!(["set", index, tool_call]));
        let delta =
            json!({"type": "toolcall_delta", "contentIndex": index, "delta": arguments_text});
        out.push(self.carry(delta, "partial"));
        let end = json!({"type": "toolcall_end", "contentIndex": index, "toolCall": tool_call});
        out.push(self.carry(end, "partial"));
    }

    fn close_block(&mut self, out: &mut Vec<Value>) {
        let Some(index) = self.open_block.take() else {
            return;
        };
        let (kind, content) = match &self.message.content[index] {
            Block::Text(text) => (BlockKind::Text, text.clone()),
            Block::Thinking(text) => (BlockKind::Thinking, text.clone()),
            Block::ToolCall(_) => return,
        };
        let end = json!({"type": kind.event("end"), "contentIndex": index, "content": content});
        out.push(self.carry(end, "partial"));
    }

    fn fail(&mut self, reason: PiStopReason, message: String, out: &mut Vec<Value>) {
        self.message.stop_reason = reason;
        self.message.error_message = Some(message);
        self.open_block = None;
        let error_message = self.message.error_message.clone();
        self.record(
            |_| json!(["fields", {"stopReason": reason.as_str(), "errorMessage": error_message}]),
        );
        let error = json!({"type": "error", "reason": reason.as_str()});
        out.push(self.carry(error, "error"));
        self.phase = Phase::Finished;
    }
}

/// The two kinds of block that grow by deltas.
#[derive(Clone, Copy, Debug)]
enum BlockKind {
    Text,
    Thinking,
}

impl BlockKind {
    fn matches(self, block: &Block) -> bool {
        matches!(
            (self, block),
            (Self::Text, Block::Text(_)) | (Self::Thinking, Block::Thinking(_))
        )
    }

    fn empty(self) -> Block {
        match self {
            Self::Text => Block::Text(String::new()),
            Self::Thinking => Block::Thinking(String::new()),
        }
    }

    fn event(self, stage: &str) -> String {
        match self {
            Self::Text => format!("text_{stage}"),
            Self::Thinking => format!("thinking_{stage}"),
        }
    }
}
