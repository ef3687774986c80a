//! One RunInference call as the replica serves it.

use cursor_proto::aiserver::v1::{
    InferenceCoreMessage, InferenceExtendedUsageInfo, InferenceMessageRole, InferenceStreamError,
    InferenceStreamRequest, InferenceStreamResponse, InferenceTextStreamPart,
    InferenceToolCallStreamPart, RunInferenceClientMessage, RunInferenceInvocationEnd,
    RunInferenceInvocationError, RunInferenceInvocationResponse, RunInferenceRunReady,
    RunInferenceServerMessage, inference_core_message::Content,
    inference_stream_response::Response, run_inference_client_message::Message as ClientArm,
    run_inference_server_message::Message as ServerArm,
};
use cursor_transport::envelope::{Code, Compression, ConnectError};
use cursor_transport::testing::{ServerCall, ServerError};
use prost_types::value::Kind;

use super::{Replica, Script, WireShape};
use crate::driver::RUN_INFERENCE_PATH;

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
    let Some(ClientArm::InvokeModel(invoke)) = next(&mut call).await? else {
        return refuse(call, "invoke_model must follow run_ready").await;
    };
    let id = invoke.invocation_id;
    let request = invoke.request.unwrap_or_default();
    replica.record(request.clone());
    match replica.next_script() {
        Some(Script::Silent) => {
            // Nothing more until the client closes or resets the stream.
            while next(&mut call).await?.is_some() {}
            return Ok(());
        }
        Some(Script::StreamError {
            text,
            error_type,
            message,
        }) => {
            text_part(&mut call, &id, &text).await?;
            let error = InferenceStreamError {
                message,
                error_type,
                ..InferenceStreamError::default()
            };
            respond(&mut call, &id, Response::Error(error)).await?;
        }
        Some(Script::InvocationEndError { code, message }) => {
            let end = RunInferenceInvocationEnd {
                invocation_id: id.clone(),
                error: Some(RunInferenceInvocationError { code, message }),
            };
            send(&mut call, ServerArm::InvocationEnd(end)).await?;
        }
        None => answer(&mut call, &id, &request, shape).await?,
    }
    // The client ends the run with finish_run, then half-closes.
    while next(&mut call).await?.is_some() {}
    call.finish_ok().await
}

/// The usual reply to the conversation's last message.
async fn answer(
    call: &mut ServerCall,
    id: &str,
    request: &InferenceStreamRequest,
    shape: WireShape,
) -> Result<(), ServerError> {
    match request.messages.last().map(reply) {
        Some(Reply::Text(text)) => {
            let middle = text.len() / 2;
            let cut = (0..=middle)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            text_part(call, id, &text[..cut]).await?;
            text_part(call, id, &text[cut..]).await?;
        }
        Some(Reply::Tool { name, args }) => {
            for part in tool_call_parts("call-1", &name, &args, shape) {
                respond(call, id, Response::ToolCallPart(part)).await?;
            }
        }
        None => text_part(call, id, "echo: ").await?,
    }
    let usage = InferenceExtendedUsageInfo {
        input_tokens: 12,
        output_tokens: 3,
        cache_read_tokens: 2,
        ..InferenceExtendedUsageInfo::default()
    };
    respond(call, id, Response::ExtendedUsage(usage)).await?;
    let end = RunInferenceInvocationEnd {
        invocation_id: id.to_owned(),
        error: None,
    };
    send(call, ServerArm::InvocationEnd(end)).await
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

async fn respond(call: &mut ServerCall, id: &str, response: Response) -> Result<(), ServerError> {
    let response = RunInferenceInvocationResponse {
        invocation_id: id.to_owned(),
        response: Some(InferenceStreamResponse {
            response: Some(response),
        }),
    };
    send(call, ServerArm::InvocationResponse(response)).await
}

async fn text_part(call: &mut ServerCall, id: &str, text: &str) -> Result<(), ServerError> {
    let part = InferenceTextStreamPart {
        text: text.to_owned(),
        is_final: false,
    };
    respond(call, id, Response::TextPart(part)).await
}

async fn refuse(call: ServerCall, why: &str) -> Result<(), ServerError> {
    call.finish_error(ConnectError::new(Code::InvalidArgument, why))
        .await
}
