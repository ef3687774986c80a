//! The engine's output in the Responses shapes: the response object, and the stream of
//! `response.created`, output items, text deltas and `response.completed` (or `.incomplete`,
//! `.failed`), each event numbered.

use bytes::Bytes;
use cursor_agent::ir::{ToolCall, Usage};
use serde::Serialize;
use serde_json::{Value, json};

use crate::ApiError;
use crate::engine::stream::{OnComplete, Piece, Render};
use crate::engine::turn_request::input_tokens;
use crate::engine::{Leg, Meta, Whole};

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
    fn message(id: &str, text: &str) -> Self {
        Self::Message {
            id: id.to_owned(),
            role: "assistant",
            status: "completed",
            content: vec![OutputText::new(text)],
        }
    }

    /// A completed call.
    fn call(call: &ToolCall) -> Self {
        Self::FunctionCall {
            id: format!("fc_{}", call.id),
            status: "completed",
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.to_string(),
        }
    }

    fn id(&self) -> &str {
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
    text: String,
    annotations: [(); 0],
}

impl OutputText {
    fn new(text: &str) -> Self {
        Self {
            kind: "output_text",
            text: text.to_owned(),
            annotations: [],
        }
    }
}

/// The Responses usage object (`estimated` when Cursor estimated the input); sums saturate.
#[derive(Clone, Copy, Debug, Serialize)]
struct ResponsesUsage {
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
        let input = input_tokens(usage);
        Self {
            input_tokens: input,
            input_tokens_details: CachedTokens {
                cached_tokens: usage.cache_read_tokens,
            },
            output_tokens: usage.output_tokens,
            output_tokens_details: ReasoningTokens {
                reasoning_tokens: usage.reasoning_tokens,
            },
            total_tokens: input.saturating_add(usage.output_tokens),
            estimated: usage.input_estimated,
        }
    }
}

/// The response object (`object: response`), as JSON.
pub(crate) fn response_json(
    meta: &Meta,
    status: &str,
    output: &[OutputItem],
    usage: Option<&Usage>,
) -> Value {
    let output_text: String = output
        .iter()
        .filter_map(|item| match item {
            OutputItem::Message { content, .. } => Some(content.iter().map(|c| c.text.as_str())),
            OutputItem::FunctionCall { .. } => None,
        })
        .flatten()
        .collect();
    json!({
        "id": meta.id,
        "object": "response",
        "created_at": meta.created,
        "status": status,
        "model": meta.model,
        "output": output,
        "output_text": output_text,
        "usage": usage.map(ResponsesUsage::from),
        "error": null,
        // The gateway cuts a reply only at max_output_tokens (Responses has no stop sequences).
        "incomplete_details": (status == "incomplete").then(|| json!({"reason": "max_output_tokens"})),
    })
}

/// A whole answer's status and output items.
pub(crate) fn whole_output(meta: &Meta, whole: &Whole) -> (&'static str, Vec<OutputItem>) {
    let mut output = Vec::new();
    if !whole.leg.text.is_empty() {
        output.push(OutputItem::message(&message_id(meta), &whole.leg.text));
    }
    output.extend(whole.leg.calls.iter().map(OutputItem::call));
    let status = if whole.was_cut() {
        "incomplete"
    } else {
        "completed"
    };
    (status, output)
}

fn message_id(meta: &Meta) -> String {
    format!("msg_{}", meta.id)
}

fn event(kind: &str, mut data: Value, sequence: &mut u64) -> Bytes {
    data["type"] = json!(kind);
    data["sequence_number"] = json!(*sequence);
    *sequence += 1;
    Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
}

/// Makes the job that stores a completed response.
pub(crate) type KeepResponse = Box<dyn FnOnce(&Whole) -> OnComplete + Send>;

/// How one streamed response is worded, and what it has said so far.
pub(crate) struct ResponsesStream {
    meta: Meta,
    message_id: String,
    output: Vec<OutputItem>,
    /// The open text item: its text so far and output index.
    text: Option<(String, usize)>,
    sequence: u64,
    /// Stores the completed response (`store` not false).
    keep: Option<KeepResponse>,
}

impl ResponsesStream {
    pub(crate) fn new(meta: Meta, keep: Option<KeepResponse>) -> Self {
        Self {
            message_id: message_id(&meta),
            meta,
            output: Vec::new(),
            text: None,
            sequence: 0,
            keep,
        }
    }

    fn event(&mut self, kind: &str, data: Value) -> Bytes {
        event(kind, data, &mut self.sequence)
    }

    /// Ends the open text item, if any: its done events, and the item into the output.
    fn close_text(&mut self, out: &mut Vec<Bytes>) {
        if let Some((body, index)) = self.text.take() {
            let item = OutputItem::message(&self.message_id, &body);
            let at = json!({"item_id": self.message_id, "output_index": index, "content_index": 0});
            let mut done = at.clone();
            done["text"] = json!(body);
            out.push(self.event("response.output_text.done", done));
            let mut part = at;
            part["part"] = json!(OutputText::new(&body));
            out.push(self.event("response.content_part.done", part));
            out.push(self.event(
                "response.output_item.done",
                json!({"output_index": index, "item": item}),
            ));
            self.output.push(item);
        }
    }
}

impl Render for ResponsesStream {
    fn opening(&mut self) -> Vec<Bytes> {
        let created = response_json(&self.meta, "in_progress", &[], None);
        vec![
            self.event("response.created", json!({"response": created})),
            self.event("response.in_progress", json!({"response": created})),
        ]
    }

    fn piece(&mut self, piece: Piece<'_>, out: &mut Vec<Bytes>) {
        match piece {
            // Reasoning is not streamed on this API.
            Piece::Thinking(_) => {}
            Piece::Text(delta) => {
                if self.text.is_none() {
                    let index = self.output.len();
                    let id = self.message_id.clone();
                    out.push(self.event("response.output_item.added", json!({"output_index": index, "item": {
                        "id": id, "type": "message", "role": "assistant", "status": "in_progress", "content": []
                    }})));
                    out.push(self.event("response.content_part.added", json!({"item_id": id, "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})));
                    self.text = Some((String::new(), index));
                }
                if let Some((body, index)) = self.text.as_mut() {
                    body.push_str(delta);
                    let index = *index;
                    let id = self.message_id.clone();
                    out.push(self.event("response.output_text.delta", json!({"item_id": id, "output_index": index, "content_index": 0, "delta": delta})));
                }
            }
            Piece::ToolCall(call) => {
                self.close_text(out);
                let index = self.output.len();
                let item = OutputItem::call(call);
                out.push(self.event(
                    "response.output_item.added",
                    json!({"output_index": index, "item": item}),
                ));
                out.push(self.event("response.function_call_arguments.done", json!({"item_id": item.id(), "output_index": index, "arguments": call.arguments.to_string()})));
                out.push(self.event(
                    "response.output_item.done",
                    json!({"output_index": index, "item": item}),
                ));
                self.output.push(item);
            }
        }
    }

    fn end(&mut self, whole: &Whole, out: &mut Vec<Bytes>) {
        self.close_text(out);
        let (status, kind) = if whole.was_cut() {
            ("incomplete", "response.incomplete")
        } else {
            ("completed", "response.completed")
        };
        let response = response_json(&self.meta, status, &self.output, whole.leg.usage.as_ref());
        out.push(self.event(kind, json!({"response": response})));
    }

    fn failure(&mut self, error: &ApiError, leg: &Leg) -> Bytes {
        let mut response = response_json(&self.meta, "failed", &self.output, leg.usage.as_ref());
        response["error"] = json!({"code": error.code, "message": error.message});
        self.event("response.failed", json!({"response": response}))
    }

    fn reset(&mut self) {
        self.output.clear();
        self.text = None;
    }

    fn completed(&mut self, whole: &Whole) -> Option<OnComplete> {
        self.keep.take().map(|keep| keep(whole))
    }
}
