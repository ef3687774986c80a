//! OpenAI's chat completions API (`POST /v1/chat/completions`).

mod render;
mod translate;
mod wire;

use axum::Json;
use axum::response::{IntoResponse as _, Response};

use self::render::ChatStream;
use self::translate::{Translated, translate, tree_cost};
use super::{Incoming, Parsed};
use crate::ApiError;
use crate::engine::admission::conversation_cost;
use crate::engine::clip::Clip;
use crate::engine::{Engine, Meta, TurnRequest, blocking};
use crate::history::Scope;

/// The request body as typed structs, or a 400 saying what is wrong with it.
fn parse(body: &[u8]) -> Result<wire::ChatRequest, ApiError> {
    wire::parse(body).map_err(|e| super::unparsed(&e, "invalid_request", "chat completions"))
}

/// Answers one chat completions request.
pub(crate) async fn handle(engine: &Engine, incoming: Incoming) -> Result<Response, ApiError> {
    let Parsed {
        namespace,
        header_hint,
        size,
        request,
        mut permit,
    } = incoming.parse(parse, tree_cost).await?;
    let model = engine
        .models()
        .choice(&request.model, request.reasoning_effort.as_deref())?;
    let meta = Meta::new("chatcmpl", &request.model);
    let stream = request.stream.unwrap_or(false);
    let include_usage = request
        .stream_options
        .as_ref()
        .and_then(|o| o.include_usage)
        .unwrap_or(false);
    let clip = Clip::new(
        request
            .stop
            .as_ref()
            .map(|s| s.0.clone())
            .unwrap_or_default(),
        request.max_completion_tokens.or(request.max_tokens),
    );
    let hint = request.user.clone().or(header_hint);
    let Translated {
        conversation,
        format,
    } = blocking::run_sized(size, move || translate(request)).await??;
    permit
        .hold_at_least(conversation_cost(&conversation))
        .await?;
    let turn = TurnRequest {
        scope: Scope::new(namespace, hint),
        conversation,
        model,
        clip,
        format: format.map(|spec| (spec, "response_format")),
        permit,
    };
    if stream {
        return engine
            .stream(turn, ChatStream::new(meta, include_usage))
            .await;
    }
    let whole = engine.answer(turn).await?;
    Ok(Json(render::completion(&meta, &whole)).into_response())
}

/// Parses and translates a chat completions body as a request would be, without running it
/// (fuzzing and property tests: whatever the bytes, an answer, never a panic).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn translate_body(body: &[u8]) -> Result<cursor_agent::ir::Conversation, ApiError> {
    Ok(translate(parse(body)?)?.conversation)
}
