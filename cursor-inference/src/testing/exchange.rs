//! One RunInference call as the replica serves it.

use cursor_proto::aiserver::v1::{
    InferenceCoreMessage, InferenceExtendedUsageInfo, InferenceMessageRole, InferenceStreamError,
    InferenceStreamRequest, InferenceStreamResponse, InferenceTextStreamPart,
    InferenceToolCallStreamPart, RunInferenceClientMessage, RunInferenceInvocationEnd,
    RunInferenceInvocationError, RunInferenceInvocationResponse, RunInferenceInvokeModel,
    RunInferenceRunReady, RunInferenceServerMessage, inference_core_message::Content,
    inference_stream_response::Response, run_inference_client_message::Message as ClientArm,
    run_inference_server_message::Message as ServerArm,
};
use cursor_transport::envelope::{Code, Compression, ConnectError};
use cursor_transport::testing::{ServerCall, ServerError};
use std::collections::VecDeque;

use futures::FutureExt as _;
use prost_types::value::Kind;

use super::{Replica, Script, WireShape};
use crate::driver::RUN_INFERENCE_PATH;

/// How many invocations one run carries (docs/PROTOCOL.md §6.1); the next is refused.
pub(super) const MAX_INVOCATIONS: usize = 64;

/// `invocation_end.error.code` of an invocation the client canceled (gRPC `CANCELLED`).
pub(super) const CANCELED: i32 = 1;

/// `invocation_end.error.code` of an invocation past [`MAX_INVOCATIONS`]
/// (gRPC `RESOURCE_EXHAUSTED`).
pub(super) const TOO_MANY: i32 = 8;

/// What the client said while the replica was busy with an invocation.
#[derive(Debug, Default)]
struct Inbox {
    queued: VecDeque<RunInferenceInvokeModel>,
    canceled: Vec<String>,
    finishing: bool,
    closed: bool,
}

impl Inbox {
    /// Files one client message; a second `run_request` is an error.
    fn file(&mut self, arm: Option<ClientArm>) -> Result<(), &'static str> {
        match arm {
            Some(ClientArm::InvokeModel(invoke)) => self.queued.push_back(invoke),
            Some(ClientArm::CancelInvocation(cancel)) => {
                // A cancel for a queued invocation drops it before it starts.
                let before = self.queued.len();
                self.queued
                    .retain(|invoke| invoke.invocation_id != cancel.invocation_id);
                if self.queued.len() == before {
                    self.canceled.push(cancel.invocation_id);
                }
            }
            Some(ClientArm::FinishRun(_)) => self.finishing = true,
            Some(ClientArm::RunRequest(_)) => return Err("run_request arrived twice"),
            None => self.closed = true,
        }
        Ok(())
    }

    /// Whether `id` was canceled (forgetting the cancel).
    fn take_cancel(&mut self, id: &str) -> bool {
        let before = self.canceled.len();
        self.canceled.retain(|canceled| canceled != id);
        self.canceled.len() != before
    }
}

pub(super) async fn serve(replica: &Replica, mut call: ServerCall) -> Result<(), ServerError> {
    if call.path() != RUN_INFERENCE_PATH {
        let error = ConnectError::new(Code::Unimplemented, "the replica serves RunInference only");
        return call.finish_error(error).await;
    }
    if replica.fails_auth() {
        let error = ConnectError::new(Code::Unauthenticated, "token expired");
        return call
            .respond(401, "application/json", error.to_unary_json())
            .await;
    }
    if call.header("connect-accept-encoding") == Some("gzip") {
        call.set_compression(Compression::Gzip);
    }
    let shape = replica.shape();
    let Some(ClientArm::RunRequest(run)) = next(&mut call).await? else {
        return refuse(call, "the first frame must be run_request").await;
    };
    let ready = RunInferenceRunReady {
        resolved_model: match shape {
            WireShape::Live => run.requested_model,
            WireShape::Older => None,
        },
        ..RunInferenceRunReady::default()
    };
    send(&mut call, ServerArm::RunReady(ready)).await?;
    // Invocations are answered one after the other, in the order they arrived; the client's
    // messages are read between frames, so a cancel stops an answer midway.
    let mut inbox = Inbox::default();
    let mut served = 0;
    loop {
        let invoke = match inbox.queued.pop_front() {
            Some(invoke) => invoke,
            None if inbox.finishing || inbox.closed => break,
            None => {
                let arm = next(&mut call).await?;
                if let Err(why) = inbox.file(arm) {
                    return refuse(call, why).await;
                }
                continue;
            }
        };
        served += 1;
        let id = invoke.invocation_id;
        if served > MAX_INVOCATIONS {
            let end = end_with(&id, TOO_MANY, "a run carries at most 64 invocations");
            send(&mut call, end).await?;
            continue;
        }
        let request = invoke.request.unwrap_or_default();
        replica.record(request.clone());
        let frames = match replica.next_script() {
            Some(Script::Silent) => {
                // Nothing until the client cancels this invocation, ends the run or goes away.
                while !inbox.take_cancel(&id) {
                    if inbox.finishing || inbox.closed {
                        // Finishing a run with this invocation open: the client gave up.
                        return wait_for_close(call, inbox.closed).await;
                    }
                    let arm = next(&mut call).await?;
                    if let Err(why) = inbox.file(arm) {
                        return refuse(call, why).await;
                    }
                }
                replica.note_canceled(&id);
                send(&mut call, end_with(&id, CANCELED, "canceled by the client")).await?;
                continue;
            }
            Some(Script::StreamError {
                text,
                error_type,
                message,
            }) => {
                let error = InferenceStreamError {
                    message,
                    error_type,
                    ..InferenceStreamError::default()
                };
                vec![
                    response(&id, text_part(&text)),
                    response(&id, Response::Error(error)),
                ]
            }
            Some(Script::InvocationEndError { code, message }) => {
                vec![end_with(&id, code, &message)]
            }
            None => answer(&id, &request, shape),
        };
        for frame in frames {
            // Whatever the client sent meanwhile, without waiting for more.
            while !inbox.closed {
                let Some(received) = call
                    .recv_message::<RunInferenceClientMessage>()
                    .now_or_never()
                else {
                    break;
                };
                if let Err(why) = inbox.file(received?.and_then(|message| message.message)) {
                    return refuse(call, why).await;
                }
            }
            if inbox.take_cancel(&id) {
                replica.note_canceled(&id);
                send(&mut call, end_with(&id, CANCELED, "canceled by the client")).await?;
                break;
            }
            send(&mut call, frame).await?;
            // Lets the client's next message in between two frames.
            tokio::task::yield_now().await;
        }
    }
    wait_for_close(call, inbox.closed).await
}

/// Ends the stream once the client half-closed (after `finish_run`), at once if it `closed`.
async fn wait_for_close(mut call: ServerCall, closed: bool) -> Result<(), ServerError> {
    if !closed {
        while next(&mut call).await?.is_some() {}
    }
    call.finish_ok().await
}

fn end_with(id: &str, code: i32, message: &str) -> ServerArm {
    ServerArm::InvocationEnd(RunInferenceInvocationEnd {
        invocation_id: id.to_owned(),
        error: Some(RunInferenceInvocationError {
            code,
            message: message.to_owned(),
        }),
    })
}

/// The usual reply to the conversation's last message, as frames ending the invocation.
fn answer(id: &str, request: &InferenceStreamRequest, shape: WireShape) -> Vec<ServerArm> {
    let mut frames = Vec::new();
    match request.messages.last().map(reply) {
        Some(Reply::Text(text)) => {
            let middle = text.len() / 2;
            let cut = (0..=middle)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            frames.push(response(id, text_part(&text[..cut])));
            frames.push(response(id, text_part(&text[cut..])));
        }
        Some(Reply::Tool { name, args }) => {
            for part in tool_call_parts("call-1", &name, &args, shape) {
                frames.push(response(id, Response::ToolCallPart(part)));
            }
        }
        None => frames.push(response(id, text_part("echo: "))),
    }
    let usage = InferenceExtendedUsageInfo {
        input_tokens: 12,
        output_tokens: 3,
        cache_read_tokens: 2,
        ..InferenceExtendedUsageInfo::default()
    };
    frames.push(response(id, Response::ExtendedUsage(usage)));
    frames.push(ServerArm::InvocationEnd(RunInferenceInvocationEnd {
        invocation_id: id.to_owned(),
        error: None,
    }));
    frames
}

enum Reply {
    Text(String),
    Tool { name: String, args: String },
}

fn reply(message: &InferenceCoreMessage) -> Reply {
    match &message.content {
        Some(Content::ToolContent(results)) => {
            let texts: Vec<String> = results
                .parts
                .iter()
                .map(
                    |part| match part.result.as_ref().and_then(|v| v.kind.as_ref()) {
                        Some(Kind::StringValue(text)) => text.clone(),
                        _ => String::new(),
                    },
                )
                .collect();
            Reply::Text(format!("got: {}", texts.join("; ")))
        }
        Some(Content::Text(text)) if message.role == InferenceMessageRole::User as i32 => {
            let text = text.trim();
            if text == "ping" {
                return Reply::Text("pong".into());
            }
            if let Some(rest) = text.strip_prefix("tool: ") {
                let (name, args) = rest.split_once(' ').unwrap_or((rest, "{}"));
                return Reply::Tool {
                    name: name.to_owned(),
                    args: args.to_owned(),
                };
            }
            Reply::Text(format!("echo: {text}"))
        }
        _ => Reply::Text("echo: ".into()),
    }
}

/// One tool call as `tool_call_part`s in `shape`.
fn tool_call_parts(
    call_id: &str,
    name: &str,
    args: &str,
    shape: WireShape,
) -> Vec<InferenceToolCallStreamPart> {
    let part = |id: &str, name: &str, args: &str, is_complete| InferenceToolCallStreamPart {
        tool_call_id: id.to_owned(),
        tool_name: name.to_owned(),
        args: args.to_owned(),
        is_complete,
        tool_index: Some(0),
    };
    let chunks = split_three(args);
    match shape {
        WireShape::Live => {
            let mut parts: Vec<_> = chunks
                .iter()
                .enumerate()
                .map(|(i, chunk)| part(call_id, if i == 0 { name } else { "" }, chunk, false))
                .collect();
            parts.push(part(call_id, "", args, true));
            parts
        }
        WireShape::Older => chunks
            .iter()
            .enumerate()
            .map(|(i, chunk)| {
                let first = i == 0;
                part(
                    if first { call_id } else { "" },
                    if first { name } else { "" },
                    chunk,
                    i == chunks.len() - 1,
                )
            })
            .collect(),
    }
}

/// Three chunks (some possibly empty) that join back to `text`.
fn split_three(text: &str) -> [&str; 3] {
    let boundary = |at: usize| {
        (0..=at)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0)
    };
    let a = boundary(text.len() / 3);
    let b = boundary(2 * text.len() / 3).max(a);
    [&text[..a], &text[a..b], &text[b..]]
}

async fn next(call: &mut ServerCall) -> Result<Option<ClientArm>, ServerError> {
    Ok(call
        .recv_message::<RunInferenceClientMessage>()
        .await?
        .and_then(|message| message.message))
}

async fn send(call: &mut ServerCall, arm: ServerArm) -> Result<(), ServerError> {
    call.send_message(&RunInferenceServerMessage { message: Some(arm) })
        .await
}

fn response(id: &str, response: Response) -> ServerArm {
    ServerArm::InvocationResponse(RunInferenceInvocationResponse {
        invocation_id: id.to_owned(),
        response: Some(InferenceStreamResponse {
            response: Some(response),
        }),
    })
}

fn text_part(text: &str) -> Response {
    Response::TextPart(InferenceTextStreamPart {
        text: text.to_owned(),
        is_final: false,
    })
}

async fn refuse(call: ServerCall, why: &str) -> Result<(), ServerError> {
    call.finish_error(ConnectError::new(Code::InvalidArgument, why))
        .await
}
