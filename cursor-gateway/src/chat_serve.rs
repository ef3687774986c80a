//! `POST /v1/chat/completions`: one turn on the conversation the request continues,
//! answered whole or streamed as chunks.

use axum::Json;
use axum::response::{IntoResponse as _, Response};
use bytes::Bytes;
use cursor_agent::AgentEvent;
use cursor_agent::ir::{Conversation, Event};
use cursor_agent::session::ModelChoice;
use serde::Serialize;

use crate::ApiError;
use crate::chat::{self, ChatRequest};
use crate::gateway::{
    Gateway, Leg, Meta, TurnGuard, finish_reason, stale_after_answer, turn_vanished,
};
use crate::history::Scope;
use crate::honour::{Clip, Cut, answer_whole};
use crate::outlet::{self, Outlet};
use crate::wire::{
    AssistantOut, ChatChunk, ChatCompletion, Choice, ChunkChoice, Delta, ToolCallOut, UsageOut,
};

/// Answers one chat completions request from `namespace` (its client key's).
pub(crate) async fn handle(
    gateway: &Gateway,
    namespace: &str,
    header_hint: Option<String>,
    body: &[u8],
) -> Result<Response, ApiError> {
    let request: ChatRequest = chat::parse(body)?;
    let translated = chat::translate(&request)?;
    let model = gateway.model_choice(&request.model, request.reasoning_effort.as_deref())?;
    let include_usage = request
        .stream_options
        .as_ref()
        .and_then(|o| o.include_usage)
        .unwrap_or(false);
    let scope = Scope::new(namespace, request.user.clone().or(header_hint));
    let meta = Meta::new("chatcmpl", &request.model);
    let clip = request.clip();
    let stream = ChatStream {
        meta,
        include_usage,
    };
    let format = translated.format.as_ref();
    if request.stream.unwrap_or(false) && format.is_none() {
        let guard = gateway.begin(&scope, &translated.conversation)?;
        return outlet::respond(move |outlet| {
            stream.pump(guard, translated.conversation, model, clip, outlet)
        })
        .await;
    }
    let (leg, cut) = answer_whole(
        gateway,
        &scope,
        &translated.conversation,
        &model,
        &clip,
        format,
    )
    .await?;
    if request.stream.unwrap_or(false) {
        // A checked format streams once checked: the whole reply as one delta.
        let mut frames = vec![stream.opening()];
        if !leg.text.is_empty() {
            frames.extend(stream.frames(
                &Event::TextDelta {
                    text: leg.text.clone(),
                },
                &leg,
                0,
            ));
        }
        for (index, call) in leg.calls.iter().enumerate() {
            frames.extend(stream.frames(&Event::ToolCall(call.clone()), &leg, index + 1));
        }
        frames.extend(stream.end(finish(&leg, cut), &leg));
        let (tx, rx) = tokio::sync::mpsc::channel(frames.len().max(1));
        for frame in frames {
            let _ = tx.try_send(frame);
        }
        return Ok(outlet::sse_response(rx));
    }
    Ok(Json(completion(&stream.meta, &leg, cut)).into_response())
}

/// The finish reason: the gateway's cut, else Cursor's.
fn finish(leg: &Leg, cut: Option<Cut>) -> &'static str {
    match cut {
        Some(Cut::Stop) => "stop",
        Some(Cut::Length) => "length",
        None => finish_reason(leg.stop),
    }
}

fn completion<'a>(meta: &'a Meta, leg: &'a Leg, cut: Option<Cut>) -> ChatCompletion<'a> {
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
            finish_reason: finish(leg, cut),
        }],
        usage: leg.usage.as_ref().map(UsageOut::from),
    }
}

pub(crate) fn sse(value: &impl Serialize) -> Bytes {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    Bytes::from(format!("data: {json}\n\n"))
}

/// How one streamed chat completion is worded.
struct ChatStream {
    meta: Meta,
    include_usage: bool,
}

impl ChatStream {
    fn chunk(&self, delta: Delta<'_>, finish: Option<&'static str>) -> Bytes {
        let meta = &self.meta;
        sse(&ChatChunk {
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

    /// The role chunk every stream opens with.
    fn opening(&self) -> Bytes {
        self.chunk(
            Delta {
                role: Some("assistant"),
                content: Some(""),
                ..Delta::default()
            },
            None,
        )
    }

    /// The last frames: the finish reason, the usage chunk if asked for, `[DONE]`.
    fn end(&self, reason: &'static str, leg: &Leg) -> Vec<Bytes> {
        let mut frames = vec![self.chunk(Delta::default(), Some(reason))];
        if self.include_usage {
            let meta = &self.meta;
            frames.push(sse(&ChatChunk {
                id: &meta.id,
                object: "chat.completion.chunk",
                created: meta.created,
                model: &meta.model,
                choices: Vec::new(),
                usage: Some(leg.usage.as_ref().map(UsageOut::from)),
            }));
        }
        frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
        frames
    }

    /// The frames one event streams as.
    fn frames(&self, event: &Event, leg: &Leg, calls: usize) -> Vec<Bytes> {
        match event {
            Event::TextDelta { text } => vec![self.chunk(
                Delta {
                    content: Some(text),
                    ..Delta::default()
                },
                None,
            )],
            Event::ThinkingDelta { text } => vec![self.chunk(
                Delta {
                    reasoning_content: Some(text),
                    ..Delta::default()
                },
                None,
            )],
            Event::ToolCall(call) => vec![self.chunk(
                Delta {
                    tool_calls: Some([ToolCallOut::new(Some(calls - 1), call)]),
                    ..Delta::default()
                },
                None,
            )],
            Event::Done { reason } => self.end(finish_reason(Some(*reason)), leg),
            _ => Vec::new(),
        }
    }

    /// Streams one leg as chat completion chunks; stops (cancelling the Run) once the client
    /// is gone.
    async fn pump(
        self,
        guard: TurnGuard,
        conversation: Conversation,
        model: ModelChoice,
        mut clip: Clip,
        mut outlet: Outlet,
    ) {
        let mut turn = guard.session().turn(&conversation, &model);
        let mut leg = Leg::default();
        let error_event = |error: &ApiError| sse(&error.body());
        loop {
            let event = tokio::select! {
                event = turn.next() => event,
                () = outlet.closed() => return,
            };
            let Some(event) = event else { break };
            let ir = match event {
                AgentEvent::Ir(ir) => ir,
                other => {
                    guard.side_event(&other);
                    continue;
                }
            };
            if matches!(ir, Event::Reset) && outlet.started() {
                let error = stale_after_answer();
                guard.failed(&error);
                return outlet.fail(error, error_event).await;
            }
            if let Some(error) = leg.absorb(&ir) {
                guard.failed(&error);
                return outlet.fail(error, error_event).await;
            }
            let opening = || vec![self.opening()];
            let frames = match &ir {
                Event::Reset => {
                    clip.reset();
                    Vec::new()
                }
                Event::TextDelta { text } => {
                    let (text, cut) = clip.push(text);
                    let mut frames = if text.is_empty() {
                        Vec::new()
                    } else {
                        self.frames(&Event::TextDelta { text }, &leg, 0)
                    };
                    if let Some(cut) = cut {
                        // Cut here: the Run is cancelled (dropped) and the conversation handed
                        // back unrecorded, as when a client goes.
                        frames.extend(self.end(finish(&leg, Some(cut)), &leg));
                        drop(turn);
                        outlet.send(frames, opening).await;
                        return;
                    }
                    frames
                }
                Event::Done { .. } => {
                    let rest = clip.flush();
                    let mut frames = if rest.is_empty() {
                        Vec::new()
                    } else {
                        self.frames(&Event::TextDelta { text: rest }, &leg, 0)
                    };
                    frames.extend(self.frames(&ir, &leg, leg.calls.len()));
                    frames
                }
                _ => self.frames(&ir, &leg, leg.calls.len()),
            };
            if leg.stop.is_some() {
                // Recorded before the client reads the end, so its next request finds it.
                drop(turn);
                guard.finish(&leg);
                outlet.send(frames, opening).await;
                return;
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
