//! OpenAI's Responses API (`POST /v1/responses`): the subset Codex CLI uses, with
//! `previous_response_id` served from the responses the gateway stored.

mod render;
mod translate;
mod wire;

use std::time::SystemTime;

use axum::Json;
use axum::response::{IntoResponse as _, Response};
use cursor_agent::ir::{AssistantContent, Message};

use self::render::{KeepResponse, ResponsesStream, response_json, whole_output};
use self::translate::{Translated, translate, tree_cost};
use super::{Incoming, Parsed};
use crate::ApiError;
use crate::engine::admission::conversation_cost;
use crate::engine::clip::Clip;
use crate::engine::stream::OnComplete;
use crate::engine::{Engine, Meta, TurnRequest, Whole, blocking};
use crate::history::Scope;
use crate::state::responses::NewResponse;

/// The request body as typed structs, or a 400 saying what is wrong with it.
fn parse(body: &[u8]) -> Result<wire::ResponsesRequest, ApiError> {
    wire::parse(body).map_err(|e| super::unparsed(&e, "invalid_request", "Responses"))
}

/// The 400 for a `previous_response_id` this key cannot continue.
fn unknown_previous(id: &str) -> ApiError {
    ApiError::bad_request(
        "previous_response_not_found",
        format!(
            "previous_response_id: no stored response {id} for this key (responses sent with \
             store: false are never stored, and stored ones expire); send the whole conversation \
             in `input` instead"
        ),
    )
    .with_param("previous_response_id")
}

/// What to store once the answer completed: the request's own messages and the answer, after
/// the response it continues.
struct Keep {
    engine: Engine,
    id: String,
    namespace: String,
    hint: Option<String>,
    system_prompt: String,
    /// The stored response this one continues.
    previous: Option<String>,
    /// The transcript's messages after the stored response's.
    new_messages: Vec<Message>,
}

impl Keep {
    /// The storing job for `whole`'s answer.
    fn job(mut self, whole: &Whole) -> OnComplete {
        let mut content = Vec::new();
        if !whole.leg.text.is_empty() {
            content.push(AssistantContent::Text {
                text: whole.leg.text.clone(),
            });
        }
        content.extend(
            whole
                .leg
                .calls
                .iter()
                .cloned()
                .map(AssistantContent::ToolCall),
        );
        self.new_messages.push(Message::Assistant { content });
        Box::new(move || {
            // The chain stores what is new; the response it continues already holds the rest.
            let response = NewResponse {
                namespace: &self.namespace,
                hint: self.hint.as_deref(),
                system_prompt: &self.system_prompt,
                previous: self.previous.as_deref().map(|id| (id, 0)),
                messages: &self.new_messages,
            };
            self.engine.responses().save(&self.id, &response);
            self.engine.sweep_responses_if_over_cap();
        })
    }
}

/// Answers one Responses request.
pub(crate) async fn handle(engine: &Engine, incoming: Incoming) -> Result<Response, ApiError> {
    let Parsed {
        namespace,
        header_hint,
        size,
        request,
        mut permit,
    } = incoming.parse(parse, tree_cost).await?;
    let prior = match &request.previous_response_id {
        None => None,
        Some(id) => {
            let (engine_for_load, id, ns) = (engine.clone(), id.clone(), namespace.clone());
            let retention = engine.limits().response_retention;
            let loaded = blocking::run(move || {
                engine_for_load
                    .responses()
                    .load(&id, &ns, retention, SystemTime::now())
            })
            .await?;
            let id = request.previous_response_id.as_deref().unwrap_or_default();
            Some(loaded.ok_or_else(|| unknown_previous(id))?)
        }
    };
    let model = engine.models().choice(
        &request.model,
        request.reasoning.as_ref().and_then(|r| r.effort.as_deref()),
    )?;
    let meta = Meta::new("resp", &request.model);
    let stream = request.stream.unwrap_or(false);
    let store = request.store != Some(false);
    let previous_id = request.previous_response_id.clone();
    let clip = Clip::new(Vec::new(), request.max_output_tokens);
    let Translated {
        conversation,
        hint,
        ignored_tools,
        system_prompt,
        format,
        prior_len,
    } = blocking::run_sized(size, move || translate(request, prior)).await??;
    permit
        .hold_at_least(conversation_cost(&conversation))
        .await?;
    let ignored = ignored_tools.join(",");
    if !ignored.is_empty() {
        tracing::info!(tools = %ignored, "hosted tools offered and left out");
    }
    let scope = Scope::new(namespace.clone(), hint.clone().or(header_hint));
    let keep = store.then(|| Keep {
        engine: engine.clone(),
        id: meta.id.clone(),
        namespace,
        hint: scope.hint.clone(),
        system_prompt,
        previous: previous_id,
        new_messages: conversation.messages[prior_len..].to_vec(),
    });
    let turn = TurnRequest {
        scope,
        conversation,
        model,
        clip,
        format: format.map(|spec| (spec, "text.format")),
        permit,
    };
    let mut response = if stream {
        let keep = keep.map(|keep| Box::new(move |whole: &Whole| keep.job(whole)) as KeepResponse);
        engine
            .stream(turn, ResponsesStream::new(meta, keep))
            .await?
    } else {
        let whole = engine.answer(turn).await?;
        if !whole.was_cut()
            && let Some(keep) = keep
        {
            blocking::run(keep.job(&whole)).await?;
        }
        let (status, output) = whole_output(&meta, &whole);
        Json(response_json(
            &meta,
            status,
            &output,
            whole.leg.usage.as_ref(),
        ))
        .into_response()
    };
    if let Ok(value) = http::HeaderValue::from_str(&ignored)
        && !ignored.is_empty()
    {
        response
            .headers_mut()
            .insert("x-gateway-ignored-tools", value);
    }
    Ok(response)
}

/// Parses and translates a Responses body as a request would be (without a stored response),
/// without running it (fuzzing and property tests: whatever the bytes, an answer, never a
/// panic).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn translate_body(body: &[u8]) -> Result<cursor_agent::ir::Conversation, ApiError> {
    Ok(translate(parse(body)?, None)?.conversation)
}
