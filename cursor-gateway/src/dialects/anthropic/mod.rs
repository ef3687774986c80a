//! Anthropic's Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`), as
//! Claude Code speaks it.

mod error;
mod render;
mod signature;
mod translate;
mod wire;

use axum::Json;
use axum::response::{IntoResponse as _, Response};
use serde_json::json;

pub(crate) use self::error::AnthropicError;
use self::render::MessagesStream;
use self::signature::ThinkingKey;
use self::translate::{Translated, translate, tree_cost};
use super::{Incoming, Parsed};
use crate::ApiError;
use crate::engine::admission::conversation_cost;
use crate::engine::clip::Clip;
use crate::engine::models::CLAUDE_PREFIX;
use crate::engine::{Engine, Meta, TurnRequest, blocking};
use crate::history::{Api, Scope};

/// The request body as typed structs, or a 400 saying what is wrong with it.
fn parse(body: &[u8]) -> Result<wire::MessagesRequest, ApiError> {
    wire::parse(body).map_err(|e| super::unparsed(&e, "invalid_request_error", "Messages"))
}

/// The model a Messages request names: an alias, `claude-cursor-ID` or a catalog id. An
/// unknown one is a 404 listing what exists.
fn model(engine: &Engine, name: &str) -> Result<cursor_agent::session::ModelChoice, ApiError> {
    let models = engine.models();
    let id = models.resolve_alias(name);
    models.choice(id, None).map_err(|_| {
        let known: Vec<String> = models
            .ids()
            .iter()
            .map(|id| format!("{CLAUDE_PREFIX}{id}"))
            .chain(models.alias_names().map(str::to_owned))
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

/// Answers one Messages request.
pub(crate) async fn handle(engine: &Engine, incoming: Incoming) -> Result<Response, ApiError> {
    let Parsed {
        namespace,
        header_hint,
        size,
        request,
        mut permit,
    } = incoming.parse(parse, tree_cost).await?;
    let key = ThinkingKey::new(engine.secret().clone());
    let model_choice = model(engine, &request.model)?;
    let model_name = request.model.clone();
    let stream = request.stream.unwrap_or(false);
    let clip = Clip::new(
        request.stop_sequences.clone().unwrap_or_default(),
        request.max_tokens,
    );
    let signing = key.clone();
    let Translated {
        conversation,
        hint,
        compaction,
    } = blocking::run_sized(size, move || translate(request, &signing, false)).await??;
    permit
        .hold_at_least(conversation_cost(&conversation))
        .await?;
    // The session header scopes a Claude Code session; its compaction runs apart, so the
    // summary turn never advances the main conversation.
    let mut hint = header_hint.or(hint);
    if compaction {
        hint = Some(format!("{}#compaction", hint.unwrap_or_default()));
    }
    let turn = TurnRequest {
        scope: Scope::new(namespace, hint).on(Api::Anthropic),
        conversation,
        model: model_choice,
        clip,
        format: None,
        permit,
    };
    let meta = Meta::new("msg", &model_name);
    if stream {
        return engine.stream(turn, MessagesStream::new(meta, key)).await;
    }
    let whole = engine.answer(turn).await?;
    Ok(Json(render::message(&meta, &whole, &key)).into_response())
}

/// `POST /v1/messages/count_tokens`: the tokens Cursor counted for the longest stored history
/// the request continues, plus an estimate of what is new; else an estimate of it all.
pub(crate) async fn count_tokens(
    engine: &Engine,
    incoming: Incoming,
) -> Result<Response, ApiError> {
    let Parsed {
        namespace,
        header_hint,
        size,
        request,
        mut permit,
    } = incoming.parse(parse, tree_cost).await?;
    let key = ThinkingKey::new(engine.secret().clone());
    let translated = blocking::run_sized(size, move || translate(request, &key, true)).await??;
    permit
        .resize(conversation_cost(&translated.conversation))
        .await?;
    let scope = Scope::new(namespace, header_hint.or(translated.hint)).on(Api::Anthropic);
    let input_tokens = engine
        .count_tokens(&scope, &translated.conversation)
        .await?;
    Ok(Json(json!({"input_tokens": input_tokens})).into_response())
}

/// Parses and translates a Messages body as a request would be, without running it (fuzzing
/// and property tests: whatever the bytes, an answer, never a panic).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn translate_body(
    body: &[u8],
    for_count: bool,
) -> Result<cursor_agent::ir::Conversation, ApiError> {
    let request = parse(body)?;
    let key = ThinkingKey::new(crate::state::secret::StateSecret::from_bytes([0; 32]));
    Ok(translate(request, &key, for_count)?.conversation)
}
