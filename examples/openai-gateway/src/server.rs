//! The HTTP side: routing, the gateway key, body limits, one `AgentSession` per
//! conversation (its requests serialised), and the turn → OpenAI mapping.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use cursor_agent::ir::{ErrorInfo, ErrorKind, Event, NextStep, StopReason, ToolCall, Usage};
use cursor_agent::session::{AgentSession, Client, ModelChoice, Origin, TokenSource};
use cursor_agent::{AgentEvent, HandleStore, HostProfile};
use cursor_catalog::{Catalog, ThinkingLevel};
use futures::StreamExt as _;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::ApiError;
use crate::chat::{self, ChatRequest};
use crate::outlet::{self, Outlet};

/// The largest request body accepted (images travel inline as data URLs).
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// What a gateway is built from.
pub struct GatewayConfig {
    /// The HTTP/2 client every Run uses.
    pub client: Client,
    /// Where Runs go.
    pub agent_origin: Origin,
    /// Cursor credentials.
    pub tokens: Arc<dyn TokenSource>,
    /// Handles live in `state/handles`.
    pub state: PathBuf,
    /// The key clients must send, if any.
    pub api_key: Option<String>,
    /// Models the gateway lists and resolves.
    pub catalog: Catalog,
    /// The workspace native paths resolve in (`file://` URL).
    pub workspace_uri: String,
    /// How many conversations stay in memory; past it, idle ones are dropped (their handles
    /// stay on disk, so their next request resumes). See [`DEFAULT_MAX_SESSIONS`].
    pub max_sessions: usize,
}

/// The default [`GatewayConfig::max_sessions`]: an idle session is about 2 KB.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

impl std::fmt::Debug for GatewayConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayConfig")
            .field("agent_origin", &self.agent_origin)
            .field("state", &self.state)
            .field("models", &self.catalog.rows.len())
            .finish_non_exhaustive()
    }
}

/// A running gateway's shared state; cheap to clone.
#[derive(Clone, Debug)]
pub struct Gateway {
    inner: Arc<Shared>,
}

struct Shared {
    config: GatewayConfig,
    handles: Arc<HandleStore>,
    conversations: Mutex<HashMap<String, Arc<Slot>>>,
    /// `ConcurrentTurn` warnings seen: non-zero means two turns of one session overlapped.
    concurrent_turns: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// One client conversation: its session, and the lock that serialises its requests.
struct Slot {
    session: AgentSession,
    turn_lock: Arc<tokio::sync::Mutex<()>>,
}

impl Gateway {
    /// A gateway over `config`.
    pub fn new(config: GatewayConfig) -> Self {
        let handles = Arc::new(HandleStore::new(config.state.join("handles")));
        Self {
            inner: Arc::new(Shared {
                config,
                handles,
                conversations: Mutex::new(HashMap::new()),
                concurrent_turns: std::sync::atomic::AtomicUsize::new(0),
            }),
        }
    }

    /// How many conversations this process has seen.
    pub fn conversations(&self) -> usize {
        self.inner
            .conversations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// How many times a turn started while another turn of its conversation streamed
    /// (the session's `ConcurrentTurn` warning); the per-conversation lock keeps it at zero.
    pub fn overlapping_turns(&self) -> usize {
        self.inner
            .concurrent_turns
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Accepts connections on `listener` until the task is dropped; each is served HTTP/1.1
    /// on its own task. A failed accept is logged and serving goes on.
    pub async fn serve(self, listener: TcpListener) -> std::io::Result<()> {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                // Out of descriptors or a connection reset before accept: keep serving.
                Err(error) => {
                    eprintln!("gateway: accept failed: {error}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let gateway = self.clone();
            drop(tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let gateway = gateway.clone();
                    async move { Ok::<_, Infallible>(gateway.handle(request).await) }
                });
                // A client that hangs up mid-response is not the gateway's failure.
                let _ = hyper::server::conn::http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            }));
        }
    }

    /// Answers one request.
    pub async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        match self.route(request).await {
            Ok(response) => response,
            Err(error) => error_response(&error),
        }
    }

    async fn route(&self, request: Request<Incoming>) -> Result<Response<Body>, ApiError> {
        let path = request.uri().path().trim_end_matches('/').to_owned();
        if path.starts_with("/v1") {
            self.check_key(&request)?;
        }
        match (request.method(), path.as_str()) {
            (&Method::GET, "/v1/models") => Ok(json_response(StatusCode::OK, &self.models())),
            (&Method::GET, p) if p.starts_with("/v1/models/") => {
                let id = &p["/v1/models/".len()..];
                let models = self.models();
                let found = models["data"]
                    .as_array()
                    .and_then(|all| all.iter().find(|m| m["id"] == id).cloned());
                found
                    .map(|model| json_response(StatusCode::OK, &model))
                    .ok_or_else(|| {
                        ApiError::bad_request("model_not_found", format!("no model {id}"))
                            .with_status(404)
                    })
            }
            (&Method::POST, "/v1/chat/completions") => {
                let body = read_body(request).await?;
                self.chat(&body).await
            }
            (&Method::POST, "/v1/responses") => {
                let body = read_body(request).await?;
                crate::responses::handle(self, &body).await
            }
            (_, p) => Err(ApiError::not_found(p)),
        }
    }

    fn check_key(&self, request: &Request<Incoming>) -> Result<(), ApiError> {
        let Some(expected) = &self.inner.config.api_key else {
            return Ok(());
        };
        let sent = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if constant_time_eq(sent.trim().as_bytes(), expected.as_bytes()) {
            Ok(())
        } else {
            Err(ApiError::gateway_key())
        }
    }

    /// `GET /v1/models`: every catalog id, then each effort variant's published slug.
    fn models(&self) -> Value {
        let mut data = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for row in &self.inner.config.catalog.rows {
            let ids = std::iter::once(row.id.as_str())
                .chain(row.thinking_levels.values().map(String::as_str))
                .chain(row.slugs.iter().map(String::as_str));
            for id in ids {
                if seen.insert(id.to_owned()) {
                    data.push(
                        json!({"id": id, "object": "model", "created": 0, "owned_by": "cursor"}),
                    );
                }
            }
        }
        json!({"object": "list", "data": data})
    }

    /// The slug for a request's `model` (an id or a published slug) and `reasoning_effort`.
    pub(crate) fn model_choice(
        &self,
        model: &str,
        effort: Option<&str>,
    ) -> Result<ModelChoice, ApiError> {
        let level = match effort {
            None => None,
            Some("none") => Some(ThinkingLevel::Off),
            Some(effort) => Some(ThinkingLevel::from_host_name(effort).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_reasoning_effort",
                    format!("reasoning_effort {effort} is not one of off, minimal, low, medium, high, xhigh, max"),
                )
            })?),
        };
        let catalog = &self.inner.config.catalog;
        catalog
            .slug_for(model, level)
            .map(ModelChoice::new)
            .map_err(|e| {
                ApiError::bad_request(
                    "model_not_found",
                    format!("{e}; GET /v1/models lists the ids"),
                )
                .with_param("model")
            })
    }

    /// The session of conversation `key`, created on first use.
    fn slot(&self, key: &str) -> Arc<Slot> {
        let mut conversations = self
            .inner
            .conversations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !conversations.contains_key(key) && conversations.len() >= self.inner.config.max_sessions
        {
            // Idle: nobody holds the slot or its turn lock, and no Run waits for tool results.
            conversations.retain(|_, slot| {
                Arc::strong_count(slot) > 1
                    || slot.turn_lock.try_lock().is_err()
                    || slot.session.is_waiting_for_tools()
            });
        }
        conversations
            .entry(key.to_owned())
            .or_insert_with(|| {
                let config = &self.inner.config;
                let session = AgentSession::builder(
                    config.client.clone(),
                    config.agent_origin.clone(),
                    Arc::clone(&config.tokens),
                )
                .profile(
                    HostProfile::new("cursor-openai-gateway")
                        .with_continuation_prompt("Continue from the tool results above."),
                )
                .workspace_uri(config.workspace_uri.clone())
                .session_id(key)
                .handles(self.inner.handles.clone())
                .build();
                Arc::new(Slot {
                    session,
                    turn_lock: Arc::new(tokio::sync::Mutex::new(())),
                })
            })
            .clone()
    }

    /// Validates, then runs one turn on the conversation's session (requests of one
    /// conversation wait for each other). Nothing is stored before the input validated.
    pub(crate) async fn turn_of(
        &self,
        key: &str,
    ) -> (AgentSession, tokio::sync::OwnedMutexGuard<()>) {
        let slot = self.slot(key);
        let guard = Arc::clone(&slot.turn_lock).lock_owned().await;
        (slot.session.clone(), guard)
    }

    async fn chat(&self, body: &[u8]) -> Result<Response<Body>, ApiError> {
        let request: ChatRequest = chat::parse(body)?;
        let translated = chat::translate(&request)?;
        let model = self.model_choice(&request.model, request.reasoning_effort.as_deref())?;
        let include_usage = request
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        let (session, guard) = self.turn_of(&translated.key).await;
        let meta = Meta::new("chatcmpl", &request.model);
        if request.stream.unwrap_or(false) {
            let gateway = self.clone();
            outlet::respond(move |outlet| async move {
                let _guard = guard;
                let conversation = translated.conversation;
                let stream = ChatStream {
                    meta,
                    include_usage,
                };
                stream
                    .pump(gateway, session, conversation, model, outlet)
                    .await;
            })
            .await
        } else {
            let leg = collect(self, &session, &translated.conversation, &model).await;
            drop(guard);
            let leg = leg?;
            Ok(json_response(StatusCode::OK, &completion_json(&meta, &leg)))
        }
    }
}

/// A turn that went stale (and rebuilt) after its answer had begun streaming: the client has
/// seen part of an answer the rebuilt conversation does not continue.
pub(crate) fn stale_after_answer() -> ApiError {
    ApiError::from_info(&ErrorInfo::new(
        ErrorKind::Network,
        "the remote conversation went stale after the answer began",
        NextStep::Retry,
    ))
}

pub(crate) fn turn_vanished() -> ApiError {
    ApiError::from_info(&ErrorInfo::new(
        ErrorKind::Network,
        "the turn ended without an answer",
        NextStep::Retry,
    ))
}

/// An id and timestamp for one response.
#[derive(Clone, Debug)]
pub(crate) struct Meta {
    pub(crate) id: String,
    pub(crate) created: u64,
    pub(crate) model: String,
}

impl Meta {
    pub(crate) fn new(prefix: &str, model: &str) -> Self {
        let mut bytes = [0u8; 12];
        let _ = getrandom::fill(&mut bytes);
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Self {
            id: format!("{prefix}-{hex}"),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            model: model.to_owned(),
        }
    }
}

/// What one leg produced, collected.
#[derive(Debug, Default)]
pub(crate) struct Leg {
    pub(crate) text: String,
    pub(crate) thinking: String,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) usage: Option<Usage>,
    pub(crate) stop: Option<StopReason>,
}

pub(crate) fn finish_reason(stop: Option<StopReason>) -> &'static str {
    match stop {
        Some(StopReason::ToolUse) => "tool_calls",
        Some(StopReason::Length) => "length",
        _ => "stop",
    }
}

/// Runs one leg to its end and collects it; an `Error` or `Aborted` is the leg's failure.
pub(crate) async fn collect(
    gateway: &Gateway,
    session: &AgentSession,
    conversation: &cursor_agent::ir::Conversation,
    model: &ModelChoice,
) -> Result<Leg, ApiError> {
    let mut turn = session.turn(conversation, model);
    let mut leg = Leg::default();
    while let Some(event) = turn.next().await {
        match event {
            AgentEvent::Ir(Event::TextDelta { text }) => leg.text.push_str(&text),
            AgentEvent::Ir(Event::ThinkingDelta { text }) => leg.thinking.push_str(&text),
            AgentEvent::Ir(Event::ToolCall(call)) => leg.calls.push(call),
            AgentEvent::Ir(Event::Usage(usage)) => leg.usage = Some(usage),
            // A rebuild after a stale resume starts over: what streamed before is void.
            AgentEvent::Ir(Event::Reset) => leg = Leg::default(),
            AgentEvent::Ir(Event::Done { reason }) => leg.stop = Some(reason),
            AgentEvent::Ir(Event::Error(info)) => return Err(ApiError::from_info(&info)),
            AgentEvent::Ir(Event::Aborted) => return Err(turn_vanished()),
            other => gateway.log_side_event(session, &other),
        }
    }
    if leg.stop.is_none() {
        return Err(turn_vanished());
    }
    Ok(leg)
}

impl Gateway {
    /// Warnings and exec audit records go to stderr: the operator's audit trail.
    pub(crate) fn log_side_event(&self, session: &AgentSession, event: &AgentEvent) {
        log_side_event(session, event);
        if let AgentEvent::Ir(Event::Warning(warning)) = event
            && warning.code == cursor_agent::ir::WarningCode::ConcurrentTurn
        {
            self.inner
                .concurrent_turns
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

fn log_side_event(session: &AgentSession, event: &AgentEvent) {
    let id = session.session_id().unwrap_or("-");
    match event {
        AgentEvent::Ir(Event::Warning(warning)) => {
            eprintln!(
                "gateway: {id}: warning {:?}: {}",
                warning.code, warning.message
            );
        }
        AgentEvent::Exec(audit) => {
            eprintln!(
                "gateway: {id}: Cursor asked for {:?}; answered {:?} (nothing ran here)",
                audit.arm, audit.outcome
            );
        }
        _ => {}
    }
}

fn completion_json(meta: &Meta, leg: &Leg) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": if leg.text.is_empty() && !leg.calls.is_empty() { Value::Null } else { json!(leg.text) },
    });
    if !leg.calls.is_empty() {
        let calls: Vec<Value> = leg
            .calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                let mut value = chat::tool_call_json(i, call);
                if let Some(object) = value.as_object_mut() {
                    object.remove("index");
                }
                value
            })
            .collect();
        message["tool_calls"] = json!(calls);
    }
    if !leg.thinking.is_empty() {
        message["reasoning_content"] = json!(leg.thinking);
    }
    let mut body = json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(leg.stop)}],
    });
    if let Some(usage) = &leg.usage {
        body["usage"] = chat::usage_json(usage);
    }
    body
}

/// How one streamed chat completion is worded.
struct ChatStream {
    meta: Meta,
    include_usage: bool,
}

impl ChatStream {
    fn chunk(&self, delta: Value, finish: Option<&str>) -> Bytes {
        let meta = &self.meta;
        sse(&json!({
            "id": meta.id, "object": "chat.completion.chunk", "created": meta.created,
            "model": meta.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }))
    }

    /// Streams one leg as chat completion chunks.
    async fn pump(
        self,
        gateway: Gateway,
        session: AgentSession,
        conversation: cursor_agent::ir::Conversation,
        model: ModelChoice,
        mut outlet: Outlet,
    ) {
        let mut turn = session.turn(&conversation, &model);
        let mut usage = None;
        let mut calls = 0usize;
        let error_event = |error: &ApiError| sse(&error.body());
        while let Some(event) = turn.next().await {
            let frames = match event {
                AgentEvent::Ir(Event::TextDelta { text }) => {
                    vec![self.chunk(json!({"content": text}), None)]
                }
                AgentEvent::Ir(Event::ThinkingDelta { text }) => {
                    vec![self.chunk(json!({"reasoning_content": text}), None)]
                }
                // Whole: id, name and complete arguments in one delta (some clients reject
                // partial tool-call deltas).
                AgentEvent::Ir(Event::ToolCall(call)) => {
                    calls += 1;
                    let call = chat::tool_call_json(calls - 1, &call);
                    vec![self.chunk(json!({ "tool_calls": [call] }), None)]
                }
                AgentEvent::Ir(Event::Usage(u)) => {
                    usage = Some(u);
                    Vec::new()
                }
                AgentEvent::Ir(Event::Reset) => {
                    if outlet.started() {
                        return outlet.fail(stale_after_answer(), error_event).await;
                    }
                    Vec::new()
                }
                AgentEvent::Ir(Event::Done { reason }) => {
                    let finish = finish_reason(Some(reason));
                    let mut frames = vec![self.chunk(json!({}), Some(finish))];
                    if self.include_usage {
                        let meta = &self.meta;
                        frames.push(sse(&json!({
                            "id": meta.id, "object": "chat.completion.chunk",
                            "created": meta.created, "model": meta.model, "choices": [],
                            "usage": usage.as_ref().map(chat::usage_json),
                        })));
                    }
                    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
                    frames
                }
                AgentEvent::Ir(Event::Error(info)) => {
                    return outlet.fail(ApiError::from_info(&info), error_event).await;
                }
                AgentEvent::Ir(Event::Aborted) => {
                    return outlet.fail(turn_vanished(), error_event).await;
                }
                other => {
                    gateway.log_side_event(&session, &other);
                    Vec::new()
                }
            };
            let opening = || vec![self.chunk(json!({"role": "assistant", "content": ""}), None)];
            if !outlet.send(frames, opening).await {
                return;
            }
        }
        outlet.finish().await;
    }
}

pub(crate) fn sse(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

pub(crate) fn sse_response(rx: futures::channel::mpsc::Receiver<Bytes>) -> Response<Body> {
    let body = StreamBody::new(rx.map(|bytes| Ok::<_, Infallible>(Frame::data(bytes))));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(http_body_util::BodyExt::boxed(body))
        .unwrap_or_else(|_| error_response(&turn_vanished()))
}

pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

fn error_response(error: &ApiError) -> Response<Body> {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::BAD_GATEWAY);
    json_response(status, &error.body())
}

async fn read_body(request: Request<Incoming>) -> Result<Bytes, ApiError> {
    let limited = Limited::new(request.into_body(), MAX_BODY_BYTES);
    match limited.collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(ApiError::bad_request(
            "body_too_large",
            format!("the request body exceeds {MAX_BODY_BYTES} bytes"),
        )),
        Err(error) => Err(ApiError::bad_request(
            "invalid_body",
            format!("the request body could not be read: {error}"),
        )),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
