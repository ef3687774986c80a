//! The harness the gateway's integration tests share: a gateway over an in-process replica,
//! and raw HTTP/1.1 on loopback.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;

use cursor_agent::session::{Client, StaticToken, TokenSource};
use cursor_agent::testing::{Replica, ReplicaServer};
use cursor_catalog::CatalogStore;
use cursor_gateway::{ClientKeys, Gateway, GatewayConfig, Limits};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The admin key every test gateway takes (it opens `/metrics`).
pub(crate) const ADMIN_KEY: &str = "admin-key-for-tests";

/// `/metrics` with the admin key: (status, body).
pub(crate) async fn metrics(h: &Harness) -> (u16, String) {
    http(h, "GET", "/metrics", "", Some(ADMIN_KEY)).await
}

/// A connection to the gateway from another loopback address than 127.0.0.1 (a peer of its
/// own for the per-peer connection cap).
pub(crate) async fn connect_from(h: &Harness, local: [u8; 4]) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(std::net::SocketAddr::from((local, 0))).unwrap();
    socket.connect(h.addr).await.unwrap()
}

pub(crate) struct Harness {
    pub(crate) gateway: Gateway,
    pub(crate) replica: ReplicaServer,
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) state: tempfile::TempDir,
    pub(crate) _server: tokio::task::JoinHandle<std::io::Result<()>>,
}

pub(crate) async fn start_with(api_key: Option<&str>, state: Option<tempfile::TempDir>) -> Harness {
    let replica = Replica::start().await.unwrap();
    start_on(replica, api_key, state).await
}

pub(crate) async fn start_on(
    replica: ReplicaServer,
    api_key: Option<&str>,
    state: Option<tempfile::TempDir>,
) -> Harness {
    let tokens = Arc::new(StaticToken::new("token"));
    let keys: Vec<&str> = api_key.into_iter().collect();
    start_full(replica, &keys, state, tokens, Limits::DEFAULT).await
}

/// A gateway over `replica` taking client `keys` (none: every client), with `limits`.
pub(crate) async fn start_keyed(replica: ReplicaServer, keys: &[&str], limits: Limits) -> Harness {
    let tokens = Arc::new(StaticToken::new("token"));
    start_full(replica, keys, None, tokens, limits).await
}

pub(crate) async fn start_full(
    replica: ReplicaServer,
    keys: &[&str],
    state: Option<tempfile::TempDir>,
    tokens: Arc<dyn TokenSource>,
    limits: Limits,
) -> Harness {
    let state = state.unwrap_or_else(|| tempfile::tempdir().unwrap());
    let gateway = Gateway::new(
        GatewayConfig::new(
            Client::new().unwrap(),
            replica.origin(),
            tokens,
            state.path().to_owned(),
            CatalogStore::from_static().catalog().clone(),
            "file:///tmp",
        )
        .with_keys(ClientKeys::new(keys.iter().map(|k| (*k).to_owned())))
        .with_admin_keys(ClientKeys::new([ADMIN_KEY.to_owned()]))
        .with_limits(limits),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(gateway.clone().serve(listener));
    Harness {
        gateway,
        replica,
        addr,
        state,
        _server: server,
    }
}

/// One request with `Connection: close`; (status, body).
pub(crate) async fn http(
    h: &Harness,
    method: &str,
    path: &str,
    body: &str,
    key: Option<&str>,
) -> (u16, String) {
    let auth = key.map(|k| format!("Bearer {k}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    http_with(h, method, path, body, &headers).await
}

/// One request with `Connection: close` and `headers`; (status, body).
pub(crate) async fn http_with(
    h: &Harness,
    method: &str,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let stream = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    http_on(stream, method, path, body, headers).await
}

/// One request with `Connection: close` and `headers` on `stream`; (status, body).
pub(crate) async fn http_on(
    mut stream: tokio::net::TcpStream,
    method: &str,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, body)
}

pub(crate) fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}

pub(crate) async fn post(h: &Harness, body: &Value) -> (u16, Value) {
    let (status, text) = http(h, "POST", "/v1/chat/completions", &body.to_string(), None).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")),
    )
}

/// The SSE events of a streamed response (without `[DONE]`), and whether `[DONE]` came.
pub(crate) async fn post_stream(h: &Harness, body: &Value) -> (u16, Vec<Value>, bool) {
    let (status, text) = http(h, "POST", "/v1/chat/completions", &body.to_string(), None).await;
    let mut events = Vec::new();
    let mut done = false;
    for line in text.lines() {
        if let Some(data) = line.strip_prefix("data: ") {
            if data == "[DONE]" {
                done = true;
            } else {
                events.push(serde_json::from_str(data).unwrap());
            }
        }
    }
    (status, events, done)
}

/// Every non-null `finish_reason` of a streamed chat completion, in order.
pub(crate) fn finish_reasons(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .map(|e| &e["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect()
}

/// The text of a streamed chat completion.
pub(crate) fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect()
}

/// The assistant's text in a chat completion.
pub(crate) fn answer(body: &Value) -> &str {
    body["choices"][0]["message"]["content"].as_str().unwrap()
}

pub(crate) fn shout_tool() -> Value {
    json!([{"type": "function", "function": {
        "name": "shout", "description": "Upper-cases text",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    }}])
}
