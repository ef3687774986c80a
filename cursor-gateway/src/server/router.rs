//! Routes and per-request layers: request ids, trace spans, metrics, the client key checked
//! from the headers before any body byte is read, and the body read under its limits. The API
//! listener serves the dialects; `/metrics` answers there only with the admin key, and freely
//! on the admin listener.

use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Path, Query, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse as _, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderName, header};
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

use super::Gateway;
use crate::ApiError;
use crate::dialects::anthropic::AnthropicError;
use crate::dialects::{self, Incoming};

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The client key's namespace, set by [`authenticate`].
#[derive(Clone, Debug)]
struct Namespace(String);

/// Every route of the API listener.
pub(crate) fn api(gateway: Gateway) -> Router {
    let api = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/responses", post(responses))
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route_layer(middleware::from_fn_with_state(
            gateway.clone(),
            authenticate,
        ));
    Router::new()
        .merge(api)
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_with_key))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(gateway.clone(), count))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(TraceLayer::new_for_http().make_span_with(|request: &Request| {
            let id = request
                .headers()
                .get(REQUEST_ID)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-");
            tracing::info_span!("request", method = %request.method(), path = %request.uri().path(), id)
        }))
        .layer(SetRequestIdLayer::new(REQUEST_ID, RandomId))
        .with_state(gateway)
}

/// The admin listener's routes: `/metrics` and `/healthz`, no key (bind it where only the
/// operator reaches it).
pub(crate) fn admin(gateway: Gateway) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(gateway)
}

/// Request ids: 16 random bytes, hex (a client's own `x-request-id` is kept).
#[derive(Clone, Copy, Debug)]
struct RandomId;

impl MakeRequestId for RandomId {
    fn make_request_id<B>(&mut self, _: &http::Request<B>) -> Option<RequestId> {
        let mut bytes = [0u8; 16];
        crate::ids::random_bytes(&mut bytes);
        let hex = cursor_proto::hex::encode(&bytes);
        http::HeaderValue::from_str(&hex).ok().map(RequestId::new)
    }
}

/// Counts each answered request by route and status.
async fn count(State(gateway): State<Gateway>, request: Request, next: Next) -> Response {
    let route = match request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str)
    {
        Some("/v1/models") => "models",
        Some("/v1/models/{id}") => "model",
        Some("/v1/chat/completions") => "chat_completions",
        Some("/v1/responses") => "responses",
        Some("/v1/messages") => "messages",
        Some("/v1/messages/count_tokens") => "count_tokens",
        Some("/healthz") => "healthz",
        Some("/metrics") => "metrics",
        _ => "other",
    };
    let response = next.run(request).await;
    gateway
        .engine
        .metrics()
        .request(route, response.status().as_u16());
    response
}

/// The key a request carries: `Authorization: Bearer KEY`, or `x-api-key: KEY`.
fn sent_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
}

/// Whether a request speaks Anthropic's API: its path, or an `anthropic-version` header.
fn speaks_anthropic<B>(request: &http::Request<B>) -> bool {
    request.uri().path().starts_with("/v1/messages")
        || request.headers().contains_key("anthropic-version")
}

/// Lets a request in when it carries a configured key (or none is configured), before its
/// body is touched.
async fn authenticate(
    State(gateway): State<Gateway>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(namespace) = gateway
        .engine
        .keys()
        .namespace_of(sent_key(request.headers()))
    else {
        if speaks_anthropic(&request) {
            return AnthropicError(ApiError::gateway_key()).into_response();
        }
        return ApiError::gateway_key().into_response();
    };
    let namespace = Namespace(namespace.to_owned());
    request.extensions_mut().insert(namespace);
    next.run(request).await
}

/// The session hint a client sends as a header, if any.
fn header_hint(headers: &HeaderMap) -> Option<String> {
    ["x-claude-code-session-id", "session_id", "x-session-id"]
        .iter()
        .find_map(|name| headers.get(*name)?.to_str().ok())
        .map(str::to_owned)
}

/// The request's namespace, headers and body, read under the limits and the budget.
async fn incoming(gateway: &Gateway, request: Request) -> Result<(HeaderMap, Incoming), ApiError> {
    let namespace = request
        .extensions()
        .get::<Namespace>()
        .map_or_else(|| crate::keys::OPEN_NAMESPACE.to_owned(), |n| n.0.clone());
    let (headers, body, permit) = super::body::read(&gateway.engine, &namespace, request).await?;
    let incoming = Incoming {
        namespace,
        header_hint: header_hint(&headers),
        body,
        permit,
    };
    Ok((headers, incoming))
}

async fn chat(State(gateway): State<Gateway>, request: Request) -> Result<Response, ApiError> {
    let (_, incoming) = incoming(&gateway, request).await?;
    dialects::chat::handle(&gateway.engine, incoming).await
}

async fn responses(State(gateway): State<Gateway>, request: Request) -> Result<Response, ApiError> {
    let (_, incoming) = incoming(&gateway, request).await?;
    dialects::responses::handle(&gateway.engine, incoming).await
}

async fn messages(
    State(gateway): State<Gateway>,
    request: Request,
) -> Result<Response, AnthropicError> {
    let (headers, incoming) = incoming(&gateway, request).await?;
    // Betas change nothing here: accepted whatever they say, listed for whoever debugs.
    if let Some(betas) = headers.get("anthropic-beta").and_then(|v| v.to_str().ok()) {
        tracing::debug!(betas, "anthropic-beta accepted and ignored");
    }
    Ok(dialects::anthropic::handle(&gateway.engine, incoming).await?)
}

async fn count_tokens(
    State(gateway): State<Gateway>,
    request: Request,
) -> Result<Response, AnthropicError> {
    let (_, incoming) = incoming(&gateway, request).await?;
    Ok(dialects::anthropic::count_tokens(&gateway.engine, incoming).await?)
}

async fn models(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    Query(paging): Query<dialects::models::Paging>,
) -> Response {
    let models = gateway.engine.models();
    if headers.contains_key("anthropic-version") {
        return match dialects::models::anthropic_list(models, &paging) {
            Ok(list) => axum::Json(list).into_response(),
            Err(error) => AnthropicError(error).into_response(),
        };
    }
    axum::Json(dialects::models::openai_list(models)).into_response()
}

async fn model(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let models = gateway.engine.models();
    if headers.contains_key("anthropic-version") {
        return match dialects::models::anthropic_one(models, &id) {
            Ok(model) => axum::Json(model).into_response(),
            Err(error) => AnthropicError(error).into_response(),
        };
    }
    if models.ids().contains(&id) {
        axum::Json(dialects::models::openai_model(&id)).into_response()
    } else {
        ApiError::bad_request("model_not_found", format!("no model {id}"))
            .with_status(404)
            .into_response()
    }
}

/// Liveness: answered from memory, nothing else touched.
async fn healthz() -> &'static str {
    "ok\n"
}

async fn metrics(State(gateway): State<Gateway>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        gateway.metrics_text(),
    )
        .into_response()
}

/// `/metrics` on the API listener: only with an admin key (it shows every tenant's traffic).
async fn metrics_with_key(State(gateway): State<Gateway>, headers: HeaderMap) -> Response {
    let admins = gateway.engine.admin_keys();
    if admins.is_empty() || admins.namespace_of(sent_key(&headers)).is_none() {
        return ApiError::admin_key().into_response();
    }
    metrics(State(gateway)).await
}

async fn not_found(request: Request<Body>) -> ApiError {
    ApiError::not_found(request.uri().path())
}

async fn method_not_allowed(request: Request<Body>) -> ApiError {
    ApiError::method_not_allowed(request.uri().path())
}
