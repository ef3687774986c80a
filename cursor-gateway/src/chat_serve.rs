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
    Gateway, Leg, Meta, TurnGuard, collect, finish_reason, stale_after_answer, turn_vanished,
};
use crate::history::Scope;
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
    let guard = gateway.begin(&scope, &translated.conversation)?;
    let meta = Meta::new("chatcmpl", &request.model);
    if request.stream.unwrap_or(false) {
        outlet::respond(move |outlet| {
            let stream = ChatStream {
                meta,
                include_usage,
            };
            stream.pump(guard, translated.conversation, model, outlet)
        })
        .await
    } else {
        let leg = collect(guard, &translated.conversation, &model).await?;
        Ok(Json(completion(&meta, &leg)).into_response())
    }
}

fn completion<'a>(meta: &'a Meta, leg: &'a Leg) -> ChatCompletion<'a> {
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
            finish_reason: finish_reason(leg.stop),
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
            Event::Done { reason } => {
                let mut frames =
                    vec![self.chunk(Delta::default(), Some(finish_reason(Some(*reason))))];
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
            let frames = self.frames(&ir, &leg, leg.calls.len());
            let opening = || {
                vec![self.chunk(
                    Delta {
                        role: Some("assistant"),
                        content: Some(""),
                        ..Delta::default()
                    },
                    None,
                )]
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
