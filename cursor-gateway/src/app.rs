//! Routes and per-request layers: request ids, trace spans, metrics, the client key checked
//! from the headers before any body byte is read, and the body read under its size and time
//! limits.

use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Path, Query, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse as _, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, header};
use http_body_util::BodyExt as _;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

use crate::anthropic_serve::AnthropicError;
use crate::{ApiError, Gateway};

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The client key's namespace, set by [`authenticate`].
#[derive(Clone, Debug)]
pub(crate) struct Namespace(pub(crate) String);

/// Every route of the gateway.
pub(crate) fn router(gateway: Gateway) -> Router {
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
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
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

/// Request ids: 16 random bytes, hex (a client's own `x-request-id` is kept).
#[derive(Clone, Copy, Debug)]
struct RandomId;

impl MakeRequestId for RandomId {
    fn make_request_id<B>(&mut self, _: &http::Request<B>) -> Option<RequestId> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).ok()?;
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
    gateway.metrics().request(route, response.status().as_u16());
    response
}

/// The key a request carries: `Authorization: Bearer KEY`, or `x-api-key: KEY`.
pub(crate) fn sent_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
}

/// Lets a request in when it carries a configured key (or none is configured), before its
/// body is touched.
async fn authenticate(
    State(gateway): State<Gateway>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(namespace) = gateway.keys().namespace_of(sent_key(request.headers())) else {
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

/// Reads the body under the size and time limits: a declared length over the limit is a 413
/// before any byte is read, and a body that grows past it a 413 as soon as it does.
async fn read_body(
    gateway: &Gateway,
    request: Request,
) -> Result<(HeaderMap, String, Bytes), ApiError> {
    let limits = gateway.limits();
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limits.max_body_bytes as u64) {
        return Err(ApiError::too_large(limits.max_body_bytes));
    }
    let namespace = request
        .extensions()
        .get::<Namespace>()
        .map_or_else(|| crate::keys::OPEN_NAMESPACE.to_owned(), |n| n.0.clone());
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, limits.max_body_bytes);
    match tokio::time::timeout(limits.body_read, limited.collect()).await {
        Err(_) => Err(ApiError::body_timeout()),
        Ok(Ok(collected)) => Ok((parts.headers, namespace, collected.to_bytes())),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
            Err(ApiError::too_large(limits.max_body_bytes))
        }
        Ok(Err(error)) => Err(ApiError::bad_request(
            "invalid_body",
            format!("the request body could not be read: {error}"),
        )),
    }
}

async fn chat(State(gateway): State<Gateway>, request: Request) -> Result<Response, ApiError> {
    let (headers, namespace, body) = read_body(&gateway, request).await?;
    crate::chat_serve::handle(&gateway, &namespace, header_hint(&headers), &body).await
}

async fn responses(State(gateway): State<Gateway>, request: Request) -> Result<Response, ApiError> {
    let (headers, namespace, body) = read_body(&gateway, request).await?;
    crate::responses::handle(&gateway, &namespace, header_hint(&headers), &body).await
}

/// Whether a request speaks Anthropic's API: its path, or an `anthropic-version` header.
fn speaks_anthropic<B>(request: &http::Request<B>) -> bool {
    request.uri().path().starts_with("/v1/messages")
        || request.headers().contains_key("anthropic-version")
}

async fn messages(
    State(gateway): State<Gateway>,
    request: Request,
) -> Result<Response, AnthropicError> {
    let (headers, namespace, body) = read_body(&gateway, request).await?;
    // Betas change nothing here: accepted whatever they say, listed for whoever debugs.
    if let Some(betas) = headers.get("anthropic-beta").and_then(|v| v.to_str().ok()) {
        tracing::debug!(betas, "anthropic-beta accepted and ignored");
    }
    let key = gateway.thinking_key();
    crate::anthropic_serve::handle(&gateway, key, &namespace, header_hint(&headers), &body)
        .await
        .map_err(AnthropicError)
}

async fn count_tokens(
    State(gateway): State<Gateway>,
    request: Request,
) -> Result<Response, AnthropicError> {
    let (headers, namespace, body) = read_body(&gateway, request).await?;
    let key = gateway.thinking_key();
    crate::anthropic_serve::count_tokens(&gateway, key, &namespace, header_hint(&headers), &body)
        .await
        .map_err(AnthropicError)
}

async fn models(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    Query(paging): Query<crate::models::Paging>,
) -> Response {
    if headers.contains_key("anthropic-version") {
        return match crate::models::anthropic_list(&gateway, &paging) {
            Ok(list) => axum::Json(list).into_response(),
            Err(error) => AnthropicError(error).into_response(),
        };
    }
    axum::Json(crate::models::openai_list(&gateway)).into_response()
}

async fn model(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if headers.contains_key("anthropic-version") {
        return match crate::models::anthropic_one(&gateway, &id) {
            Ok(model) => axum::Json(model).into_response(),
            Err(error) => AnthropicError(error).into_response(),
        };
    }
    if gateway.model_ids().contains(&id) {
        axum::Json(crate::models::openai_model(&id)).into_response()
    } else {
        ApiError::bad_request("model_not_found", format!("no model {id}"))
            .with_status(404)
            .into_response()
    }
}

async fn metrics(State(gateway): State<Gateway>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        gateway.metrics_text(),
    )
        .into_response()
}

async fn not_found(request: Request<Body>) -> ApiError {
    ApiError::not_found(request.uri().path())
}

async fn method_not_allowed(request: Request<Body>) -> ApiError {
    ApiError::method_not_allowed(request.uri().path())
}
