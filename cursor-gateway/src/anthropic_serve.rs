//! `POST /v1/messages` and `/v1/messages/count_tokens`: one turn on the conversation the
//! request continues, answered whole or as Anthropic's event stream (with `ping`s while the
//! model is quiet), and errors as Anthropic error objects.

use std::time::Duration;

use axum::Json;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use cursor_agent::AgentEvent;
use cursor_agent::ir::{Conversation, Event, StopReason, ToolCall};
use cursor_agent::session::ModelChoice;
use serde_json::{Value, json};

use crate::ApiError;
use crate::anthropic::{self, MessageOut, OutBlock, Translated, UsageOut};
use crate::gateway::{Gateway, Leg, Meta, TurnGuard, collect, stale_after_answer, turn_vanished};
use crate::history::{Api, Scope};
use crate::honour::{Clip, Cut};
use crate::outlet::{self, Outlet};
use crate::signature::ThinkingKey;

/// An [`ApiError`] answered in Anthropic's shape: `{"type":"error","error":{type, message}}`
/// with the API's statuses (a full gateway is `529 overloaded_error`).
#[derive(Debug)]
pub(crate) struct AnthropicError(pub(crate) ApiError);

impl From<ApiError> for AnthropicError {
    fn from(error: ApiError) -> Self {
        Self(error)
    }
}

impl AnthropicError {
    fn status_and_type(&self) -> (u16, &'static str) {
        match self.0.status {
            400 => (400, "invalid_request_error"),
            401 => (401, "authentication_error"),
            403 => (403, "permission_error"),
            404 => (404, "not_found_error"),
            408 => (408, "timeout_error"),
            413 => (413, "request_too_large"),
            429 => (429, "rate_limit_error"),
            503 => (529, "overloaded_error"),
            _ => (500, "api_error"),
        }
    }

    /// The error object.
    pub(crate) fn body(&self) -> Value {
        let (_, kind) = self.status_and_type();
        json!({"type": "error", "error": {"type": kind, "message": self.0.message}})
    }
}

impl IntoResponse for AnthropicError {
    fn into_response(self) -> Response {
        let (status, _) = self.status_and_type();
        let status =
            http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, Json(self.body())).into_response();
        if let Some(seconds) = self.0.retry_after {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        response
    }
}

/// The model a Messages request names: an alias, `claude-cursor-ID` or a catalog id. An
/// unknown one is a 404 listing what exists.
fn model(gateway: &Gateway, name: &str) -> Result<ModelChoice, ApiError> {
    let id = gateway.resolve_alias(name);
    gateway.model_choice(id, None).map_err(|_| {
        let known: Vec<String> = gateway
            .model_ids()
            .iter()
            .map(|id| format!("{}{id}", crate::gateway::CLAUDE_PREFIX))
            .chain(gateway.alias_names().map(str::to_owned))
            .collect();
        ApiError::bad_request(
            "not_found_error",
            format!(
                "model {name} does not exist; the models are: {}",
                known.join(", ")
            ),
        )
        .with_status(404)
    })
}

/// Answers one Messages request from `namespace`.
pub(crate) async fn handle(
    gateway: &Gateway,
    key: &ThinkingKey,
    namespace: &str,
    header_hint: Option<String>,
    body: &[u8],
) -> Result<Response, ApiError> {
    let request = anthropic::parse(body)?;
    let Translated {
        conversation,
        hint,
        compaction,
    } = anthropic::translate(&request, key)?;
    let model = model(gateway, &request.model)?;
    // The session header scopes a Claude Code session; its compaction runs apart, so the
    // summary turn never advances the main conversation.
    let mut hint = header_hint.or(hint);
    if compaction {
        hint = Some(format!("{}#compaction", hint.unwrap_or_default()));
    }
    let scope = Scope::new(namespace, hint).on(Api::Anthropic);
    let clip = Clip::new(
        request.stop_sequences.clone().unwrap_or_default(),
        request.max_tokens,
    );
    let meta = Meta::new("msg", &request.model);
    let guard = gateway.begin(&scope, &conversation)?;
    if request.stream.unwrap_or(false) {
        let ping = gateway.limits().ping_interval;
        let key = key.clone();
        outlet::respond(move |outlet| {
            Stream::new(meta, key, clip, ping).pump(guard, conversation, model, outlet)
        })
        .await
    } else {
        let (leg, cut) = collect(guard, &conversation, &model, clip.clone()).await?;
        let (stop_reason, stop_sequence) = stop_of(&leg, cut, &clip);
        let signature = key.sign(&leg.thinking);
        let mut content = Vec::new();
        if !leg.thinking.is_empty() {
            content.push(OutBlock::Thinking {
                thinking: &leg.thinking,
                signature,
            });
        }
        if !leg.text.is_empty() {
            content.push(OutBlock::Text { text: &leg.text });
        }
        content.extend(leg.calls.iter().map(tool_use));
        Ok(Json(MessageOut {
            id: &meta.id,
            kind: "message",
            role: "assistant",
            model: &meta.model,
            content,
            stop_reason: Some(stop_reason),
            stop_sequence,
            usage: leg.usage.as_ref().map(UsageOut::from).unwrap_or_default(),
        })
        .into_response())
    }
}

fn tool_use(call: &ToolCall) -> OutBlock<'_> {
    OutBlock::ToolUse {
        id: &call.id,
        name: &call.name,
        input: &call.arguments,
    }
}

/// `stop_reason` and `stop_sequence` for a leg and the cut that ended it, if any.
fn stop_of<'a>(leg: &Leg, cut: Option<Cut>, clip: &'a Clip) -> (&'static str, Option<&'a str>) {
    match (cut, leg.stop) {
        (Some(Cut::Stop), _) => ("stop_sequence", clip.matched()),
        (Some(Cut::Length), _) | (None, Some(StopReason::Length)) => ("max_tokens", None),
        (None, Some(StopReason::ToolUse)) => ("tool_use", None),
        _ => ("end_turn", None),
    }
}

/// `POST /v1/messages/count_tokens`: the tokens Cursor counted for the longest stored history
/// the request continues, plus an estimate of what is new; else an estimate of it all.
pub(crate) async fn count_tokens(
    gateway: &Gateway,
    key: &ThinkingKey,
    namespace: &str,
    header_hint: Option<String>,
    body: &[u8],
) -> Result<Response, ApiError> {
    let mut value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("the body is not JSON: {e}")))?;
    // count_tokens takes no max_tokens.
    value["max_tokens"] = json!(1);
    let request: anthropic::CountRequest = serde_json::from_value(value).map_err(|e| {
        ApiError::bad_request(
            "invalid_request_error",
            format!("the request does not fit the count_tokens shape: {e}"),
        )
    })?;
    let translated = anthropic::translate(&request, key)?;
    let scope = Scope::new(namespace, header_hint.or(translated.hint)).on(Api::Anthropic);
    let input_tokens = gateway.count_tokens(&scope, &translated.conversation);
    Ok(Json(json!({"input_tokens": input_tokens})).into_response())
}

/// How one streamed answer is worded, and what it has said so far.
struct Stream {
    meta: Meta,
    key: ThinkingKey,
    clip: Clip,
    ping: Duration,
    /// The index of the next content block.
    index: usize,
    /// The open block: its index and kind.
    open: Option<(usize, Open)>,
    thinking: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Thinking,
    Text,
}

fn event(kind: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
}

impl Stream {
    fn new(meta: Meta, key: ThinkingKey, clip: Clip, ping: Duration) -> Self {
        Self {
            meta,
            key,
            clip,
            ping,
            index: 0,
            open: None,
            thinking: String::new(),
        }
    }

    fn opening(&self) -> Vec<Bytes> {
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
        vec![event(
            "message_start",
            &json!({"type": "message_start", "message": message}),
        )]
    }

    /// Closes the open block (a thinking block gets its signature first).
    fn close(&mut self, frames: &mut Vec<Bytes>) {
        if let Some((index, kind)) = self.open.take() {
            if kind == Open::Thinking {
                let signature = self.key.sign(&self.thinking);
                frames.push(event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}}),
                ));
                self.thinking.clear();
            }
            frames.push(event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
    }

    /// Opens a block of `kind` unless one is open, and returns its index.
    fn ensure(&mut self, kind: Open, frames: &mut Vec<Bytes>) -> usize {
        if let Some((index, open)) = self.open
            && open == kind
        {
            return index;
        }
        self.close(frames);
        let index = self.index;
        self.index += 1;
        let block = match kind {
            Open::Thinking => json!({"type": "thinking", "thinking": ""}),
            Open::Text => json!({"type": "text", "text": ""}),
        };
        frames.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        self.open = Some((index, kind));
        index
    }

    fn text(&mut self, text: &str, frames: &mut Vec<Bytes>) {
        if text.is_empty() {
            return;
        }
        let index = self.ensure(Open::Text, frames);
        frames.push(event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
        ));
    }

    /// The frames that end the message.
    fn end(&mut self, leg: &Leg, cut: Option<Cut>, frames: &mut Vec<Bytes>) {
        let tail = self.clip.flush();
        if cut.is_none() {
            self.text(&tail, frames);
        }
        self.close(frames);
        let (stop_reason, stop_sequence) = stop_of(leg, cut, &self.clip);
        let usage = leg.usage.as_ref().map(UsageOut::from).unwrap_or_default();
        frames.push(event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence}, "usage": usage}),
        ));
        frames.push(event("message_stop", &json!({"type": "message_stop"})));
    }

    /// The frames one event streams as; `Some(cut)` when the reply ends here.
    fn frames(&mut self, ir: &Event, frames: &mut Vec<Bytes>) -> Option<Cut> {
        match ir {
            Event::ThinkingDelta { text } => {
                let index = self.ensure(Open::Thinking, frames);
                self.thinking.push_str(text);
                frames.push(event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": text}}),
                ));
            }
            Event::TextDelta { text } => {
                let (out, cut) = self.clip.push(text);
                self.text(&out, frames);
                return cut;
            }
            Event::ToolCall(call) => {
                let tail = self.clip.flush();
                self.text(&tail, frames);
                self.close(frames);
                let index = self.index;
                self.index += 1;
                frames.push(event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
                ));
                frames.push(event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": call.arguments.to_string()}}),
                ));
                frames.push(event(
                    "content_block_stop",
                    &json!({"type": "content_block_stop", "index": index}),
                ));
            }
            _ => {}
        }
        None
    }

    /// Streams one leg; a `ping` goes out whenever the stream was quiet for the ping interval.
    async fn pump(
        mut self,
        guard: TurnGuard,
        conversation: Conversation,
        model: ModelChoice,
        mut outlet: Outlet,
    ) {
        let mut turn = guard.session().turn(&conversation, &model);
        let mut leg = Leg::default();
        let error_event = |error: &ApiError| event("error", &AnthropicError(error.clone()).body());
        let mut quiet =
            tokio::time::interval_at(tokio::time::Instant::now() + self.ping, self.ping);
        quiet.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let next = tokio::select! {
                event = turn.next() => Some(event),
                _ = quiet.tick() => None,
                () = outlet.closed() => return,
            };
            let Some(event) = next else {
                // A quiet model: the head and `message_start` go out with the first ping, so a
                // client that kills silent streams keeps this one; a later failure is an
                // `error` event.
                let ping = vec![event("ping", &json!({"type": "ping"}))];
                let opening = || self.opening();
                if !outlet.send(ping, opening).await {
                    return;
                }
                continue;
            };
            let Some(event) = event else { break };
            let ir = match event {
                AgentEvent::Ir(ir) => ir,
                other => {
                    guard.side_event(&other);
                    continue;
                }
            };
            if matches!(ir, Event::Reset) {
                if outlet.started() {
                    let error = stale_after_answer();
                    guard.failed(&error);
                    return outlet.fail(error, error_event).await;
                }
                self.clip.reset();
                self.thinking.clear();
            }
            if let Some(error) = leg.absorb(&ir) {
                guard.failed(&error);
                return outlet.fail(error, error_event).await;
            }
            let mut frames = Vec::new();
            let cut = self.frames(&ir, &mut frames);
            if cut.is_some() || leg.stop.is_some() {
                if cut.is_some() {
                    leg.text = self.clip.text().to_owned();
                }
                self.end(&leg, cut, &mut frames);
                drop(turn);
                if cut.is_none() {
                    // Recorded before the client reads the end, so its next request finds it.
                    guard.finish(&leg);
                }
                let opening = || self.opening();
                let _ = outlet.send(frames, opening).await;
                return;
            }
            let opening = || self.opening();
            if !frames.is_empty() {
                quiet.reset();
            }
            if !outlet.send(frames, opening).await {
                return;
            }
        }
        let error = turn_vanished();
        guard.failed(&error);
        outlet.fail(error, error_event).await;
    }
}
