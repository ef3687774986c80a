//! A tenant with a valid key who means harm, and a peer without one: what they send, and what
//! the gateway still does for everyone else. Memory is measured on the gateway binary (a child
//! process, its RSS read from `/proc`); the rest runs in process.

mod common;

use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use cursor_agent::testing::{Replica, Script};
use cursor_gateway::Limits;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The gateway binary on loopback with two client keys, against `origin`.
struct Process {
    child: Child,
    addr: std::net::SocketAddr,
    _state: tempfile::TempDir,
}

impl Process {
    async fn start(origin: &str) -> Self {
        let state = tempfile::tempdir().unwrap();
        let keys = state.path().join("keys");
        std::fs::write(&keys, "key-a\nkey-b\n").unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_cursor-gateway"))
            .args([
                "--listen",
                "127.0.0.1:0",
                "--agent-origin",
                origin,
                "--api-origin",
                origin,
            ])
            .arg("--state")
            .arg(state.path().join("state"))
            .arg("--api-keys-file")
            .arg(&keys)
            .env_clear()
            .env("HOME", state.path())
            .env("CURSOR_ACCESS_TOKEN", "token")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let listening = tokio::task::spawn_blocking(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                if let Some(addr) = line.ok()?.strip_prefix("LISTENING http://") {
                    return addr.parse().ok();
                }
            }
            None
        });
        let addr = tokio::time::timeout(Duration::from_secs(60), listening)
            .await
            .expect("the gateway listens within a minute")
            .unwrap()
            .expect("the gateway exited before listening");
        Self {
            child,
            addr,
            _state: state,
        }
    }

    fn rss_kib(&self) -> u64 {
        status_kib(self.child.id(), "VmRSS:")
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with(field))
                .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// One POST with `key`; the status, whatever happened to the body (a gateway that answers
/// before reading it closes the connection under the writer).
async fn post(
    addr: std::net::SocketAddr,
    path: &str,
    key: &str,
    body: Bytes,
) -> Result<u16, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let (mut read, mut write) = stream.into_split();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {key}\r\n\
         anthropic-version: 2023-06-01\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    // The write half stays open until the answer is read: dropping it shuts the socket's
    // sending side, and a server that sees the client half-close drops the request.
    let writer = tokio::spawn(async move {
        let _ = write.write_all(head.as_bytes()).await;
        let _ = write.write_all(&body).await;
        write
    });
    let mut raw = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(120), read.read_to_end(&mut raw)).await;
    writer.abort();
    let _ = writer.await;
    match read {
        Err(_) => return Err("no answer in 120 s".into()),
        Ok(Err(error)) if raw.is_empty() => return Err(error.to_string()),
        _ => {}
    }
    let text = String::from_utf8_lossy(&raw);
    text.get(9..12)
        .and_then(|status| status.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {:?}", &text[..text.len().min(80)]))
}

/// A body just under 32 MiB: one user message of one-letter content blocks, in `api`'s shape.
fn maximum_body(api: &str) -> Bytes {
    let (open, block, close) = match api {
        "/v1/messages" => (
            r#"{"model":"claude-cursor-composer-2.5","max_tokens":64,"messages":[{"role":"user","content":["#,
            r#"{"type":"text","text":"a"}"#,
            "]}]}",
        ),
        "/v1/chat/completions" => (
            r#"{"model":"composer-2.5","messages":[{"role":"user","content":["#,
            r#"{"type":"text","text":"a"}"#,
            "]}]}",
        ),
        _ => (
            r#"{"model":"composer-2.5","input":[{"type":"message","role":"user","content":["#,
            r#"{"type":"input_text","text":"a"}"#,
            "]}]}",
        ),
    };
    let target = Limits::DEFAULT.max_body_bytes - 1024;
    let blocks = (target - open.len() - close.len()) / (block.len() + 1);
    let mut body = Vec::with_capacity(target);
    body.extend_from_slice(open.as_bytes());
    for i in 0..blocks {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(block.as_bytes());
    }
    body.extend_from_slice(close.as_bytes());
    Bytes::from(body)
}

fn small_body(api: &str, text: &str) -> Bytes {
    let body = match api {
        "/v1/messages" => json!({"model": "claude-cursor-composer-2.5", "max_tokens": 64,
            "messages": [{"role": "user", "content": text}]}),
        "/v1/chat/completions" => json!({"model": "composer-2.5",
            "messages": [{"role": "user", "content": text}]}),
        _ => json!({"model": "composer-2.5", "input": text}),
    };
    Bytes::from(body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_maximum_size_bodies_on_each_api_leave_the_gateway_alive_bounded_and_serving_another_key()
 {
    let replica = Replica::start().await.unwrap();
    let origin = replica.origin().to_string();
    for api in ["/v1/messages", "/v1/chat/completions", "/v1/responses"] {
        let mut gateway = Process::start(&origin).await;
        let addr = gateway.addr;
        assert_eq!(
            post(addr, api, "key-b", small_body(api, "warm up")).await,
            Ok(200)
        );
        let before = gateway.rss_kib();
        let pid = gateway.child.id();
        let sampler = tokio::spawn(async move {
            let mut peak = 0;
            loop {
                peak = peak.max(status_kib(pid, "VmRSS:"));
                tokio::time::sleep(Duration::from_millis(20)).await;
                if peak == u64::MAX {
                    return peak;
                }
            }
        });
        let body = maximum_body(api);
        let started = Instant::now();
        let big: Vec<_> = (0..64)
            .map(|_| tokio::spawn(post(addr, api, "key-a", body.clone())))
            .collect();
        // The other key asks while the first one floods.
        let mut other = Vec::new();
        for i in 0..5 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let asked = Instant::now();
            let status = post(addr, api, "key-b", small_body(api, &format!("ping {i}"))).await;
            other.push((status, asked.elapsed()));
        }
        let mut statuses = std::collections::BTreeMap::new();
        for request in big {
            *statuses
                .entry(request.await.unwrap().unwrap_or(0))
                .or_insert(0) += 1;
        }
        let took = started.elapsed();
        let peak = status_kib(pid, "VmHWM:").max(before);
        sampler.abort();
        let grew_mib = (peak - before) / 1024;
        println!(
            "{api}: 64 bodies of {} MiB from one key: statuses {statuses:?}, RSS {} -> peak {} MiB \
             (+{grew_mib} MiB) in {took:?}; the other key: {other:?}",
            body.len() >> 20,
            before / 1024,
            peak / 1024
        );
        assert!(gateway.alive(), "{api}: the gateway died");
        assert!(
            other.iter().all(|(status, _)| *status == Ok(200)),
            "{api}: the other key was not served: {other:?}"
        );
        assert!(
            statuses
                .keys()
                .all(|status| [200, 429, 503].contains(status)),
            "{api}: every large request is answered, admitted or refused with Retry-After: {statuses:?}"
        );
        assert!(
            statuses.contains_key(&200),
            "{api}: some were admitted: {statuses:?}"
        );
        assert!(grew_mib < 1536, "{api}: RSS grew by {grew_mib} MiB");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_a_body_that_is_not_an_object_with_a_400_never_a_dropped_connection() {
    let h = start_keyed(Replica::start().await.unwrap(), &["alpha"], Limits::DEFAULT).await;
    let routes = [
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/messages",
        "/v1/messages/count_tokens",
    ];
    for route in routes {
        for body in [
            "[]",
            "1",
            "\"x\"",
            "null",
            "{}",
            "",
            "{\"model\": [1]}",
            "[{}]",
            "tru",
        ] {
            let (status, text) = http(&h, "POST", route, body, Some("alpha")).await;
            assert_eq!(status, 400, "{route} {body:?}: {text}");
            let error: Value = serde_json::from_str(&text).unwrap();
            let message = error["error"]["message"].as_str().unwrap_or_default();
            assert!(message.starts_with("[local]"), "{route} {body:?}: {text}");
        }
    }
    // Numbers a client sends never overflow: a limit near 2^62 tokens is no limit.
    let huge = json!({"model": "composer-2.5", "max_tokens": 1u64 << 62,
        "messages": [{"role": "user", "content": "ping"}]});
    let (status, body) = post_stream_chat(&h, &huge, Some("alpha")).await;
    assert_eq!(status, 200);
    assert_eq!(body["choices"][0]["message"]["content"], "pong");
}

async fn post_stream_chat(h: &Harness, body: &Value, key: Option<&str>) -> (u16, Value) {
    let (status, text) = http(h, "POST", "/v1/chat/completions", &body.to_string(), key).await;
    (status, serde_json::from_str(&text).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_keep_alive_healthz_sockets_from_one_peer_leave_an_api_client_served() {
    let h = start_keyed(Replica::start().await.unwrap(), &[], Limits::DEFAULT).await;
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..1024 {
        let mut stream = tokio::net::TcpStream::connect(h.addr).await.unwrap();
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        held.push(stream);
    }
    for stream in &mut held {
        let mut buf = [0u8; 512];
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("every socket is answered")
            .unwrap_or(0);
        if String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 503") {
            refused += 1;
        }
    }
    println!(
        "1024 keep-alive /healthz sockets from 127.0.0.1: {refused} refused at the per-peer cap, {} open",
        h.gateway.open_connections()
    );
    assert_eq!(
        h.gateway.open_connections(),
        Limits::DEFAULT.max_connections_per_peer,
        "one peer holds at most its share"
    );
    // Another client, from another address, is served while they hold theirs.
    let started = Instant::now();
    let client = connect_from(&h, [127, 0, 0, 3]).await;
    let body = json!({"model": "composer-2.5", "messages": [{"role": "user", "content": "ping"}]})
        .to_string();
    let (status, text) = http_on(client, "POST", "/v1/chat/completions", &body, &[]).await;
    assert_eq!(status, 200, "{text}");
    assert!(started.elapsed() < Duration::from_secs(3));
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_parking_a_thousand_tool_rounds_leaves_room_for_another_keys_new_conversation() {
    let server = cursor_transport::testing::TestServer::builder().max_concurrent_streams(100);
    let replica = Replica::new().listen(server).await.unwrap();
    let h = start_keyed(replica, &["hog", "other"], Limits::DEFAULT).await;
    let tools = json!([{"type": "function", "function": {"name": "shout", "parameters": {"type": "object"}}}]);
    let park = |i: usize| {
        let h = &h;
        let tools = tools.clone();
        async move {
            let text = format!("tool: shout {{\"text\": \"round {i}\"}}");
            let body = json!({"model": "composer-2.5", "messages": [{"role": "user", "content": text}], "tools": tools});
            http(
                h,
                "POST",
                "/v1/chat/completions",
                &body.to_string(),
                Some("hog"),
            )
            .await
            .0
        }
    };
    let mut statuses = std::collections::BTreeMap::new();
    for batch in 0..40 {
        for status in futures::future::join_all((0..25).map(|i| park(batch * 25 + i))).await {
            *statuses.entry(status).or_insert(0) += 1;
        }
    }
    assert_eq!(statuses.get(&200), Some(&1000), "{statuses:?}");
    let parked = h.gateway.waiting_tool_rounds();
    assert!(
        parked <= Limits::DEFAULT.max_parked_per_key,
        "the key's own oldest rounds made room: {parked} parked"
    );
    let started = Instant::now();
    let body = json!({"model": "composer-2.5", "messages": [{"role": "user", "content": "ping"}]});
    let (status, text) = http(
        &h,
        "POST",
        "/v1/chat/completions",
        &body.to_string(),
        Some("other"),
    )
    .await;
    let took = started.elapsed();
    println!(
        "1000 parked rounds of one key ({parked} still parked): another key's new conversation in {took:?}"
    );
    assert_eq!(status, 200, "{text}");
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_session_of_every_api_everything_under_state_is_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let h = start_keyed(Replica::start().await.unwrap(), &["alpha"], Limits::DEFAULT).await;
    let key = Some("alpha");
    let chat = json!({"model": "composer-2.5", "messages": [{"role": "user", "content": "remember LYNX-1"}]});
    assert_eq!(
        http(&h, "POST", "/v1/chat/completions", &chat.to_string(), key)
            .await
            .0,
        200
    );
    let responses = json!({"model": "composer-2.5", "input": "remember LYNX-2"});
    assert_eq!(
        http(&h, "POST", "/v1/responses", &responses.to_string(), key)
            .await
            .0,
        200
    );
    let messages = json!({"model": "claude-cursor-composer-2.5", "max_tokens": 64,
        "messages": [{"role": "user", "content": "remember LYNX-3"}]});
    assert_eq!(
        http(&h, "POST", "/v1/messages", &messages.to_string(), key)
            .await
            .0,
        200
    );
    assert_eq!(
        http(
            &h,
            "POST",
            "/v1/messages/count_tokens",
            &messages.to_string(),
            key
        )
        .await
        .0,
        200
    );
    let mut checked = 0;
    let mut stack = vec![h.state.path().to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let mode = entry.metadata().unwrap().permissions().mode() & 0o777;
            let path = entry.path();
            if path.is_dir() {
                assert_eq!(mode, 0o700, "{}", path.display());
                stack.push(path);
            } else {
                assert_eq!(mode, 0o600, "{}", path.display());
            }
            checked += 1;
        }
    }
    println!("{checked} entries under --state, all private");
    assert!(
        checked >= 8,
        "handles, index, responses and the secret are there: {checked}"
    );
}

/// A streamed Messages request whose answer does not begin before two pings went out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ping_before_any_content_does_not_turn_a_transparent_rebuild_into_an_error() {
    let mut limits = Limits::DEFAULT;
    limits.ping_interval = Duration::from_millis(50);
    let h = start_keyed(Replica::start().await.unwrap(), &[], limits).await;
    let mut messages = vec![json!({"role": "user", "content": "remember HERON-3"})];
    let first =
        json!({"model": "claude-cursor-composer-2.5", "max_tokens": 256, "messages": messages});
    let (status, text) = http(&h, "POST", "/v1/messages", &first.to_string(), None).await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    messages.push(json!({"role": "assistant", "content": answer["content"].clone()}));
    messages.push(json!({"role": "user", "content": "what did I ask you to remember?"}));
    // The resume goes stale only after pings went out; the rebuild answers.
    h.replica.script(Script::Delayed(
        Duration::from_millis(300),
        Box::new(Script::BlobMiss),
    ));
    let body = json!({"model": "claude-cursor-composer-2.5", "max_tokens": 256, "stream": true, "messages": messages});
    let (status, text) = http(&h, "POST", "/v1/messages", &body.to_string(), None).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("event: ping"), "pings went out first: {text}");
    assert!(!text.contains("event: error"), "{text}");
    assert!(
        text.contains("HERON-3") && text.contains("event: message_stop"),
        "{text}"
    );
    let labels: Vec<String> = h.replica.runs().iter().map(|r| r.label.clone()).collect();
    assert_eq!(
        labels.last().map(String::as_str),
        Some("agent-rebuild"),
        "{labels:?}"
    );
}

/// Credentials that fail the way a local file does: with its path and the OS error.
#[derive(Debug)]
struct UnreadableCredentials;

#[cursor_agent::prelude::async_trait]
impl cursor_agent::session::TokenSource for UnreadableCredentials {
    async fn access_token(&self) -> Result<String, cursor_agent::ir::ErrorInfo> {
        Err(cursor_agent::ir::ErrorInfo::new(
            cursor_agent::ir::ErrorKind::Local,
            "read /srv/gateway-state/credentials.json: Permission denied (os error 13)",
            cursor_agent::ir::NextStep::fix_local("check /srv/gateway-state is readable"),
        ))
    }

    async fn refresh(&self, _rejected: &str) -> Result<String, cursor_agent::ir::ErrorInfo> {
        self.access_token().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_inside_the_gateway_answers_500_without_its_paths_and_with_the_request_id() {
    let h = start_full(
        Replica::start().await.unwrap(),
        &[],
        None,
        std::sync::Arc::new(UnreadableCredentials),
        Limits::DEFAULT,
    )
    .await;
    let body = json!({"model": "composer-2.5", "messages": [{"role": "user", "content": "ping"}]});
    let mut stream = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    let body = body.to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 500"), "{text}");
    assert!(text.contains("internal_error"), "{text}");
    assert!(
        !text.contains("/srv/gateway-state"),
        "a path reached the client: {text}"
    );
    assert!(!text.contains("Permission denied"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("x-request-id:"),
        "the id names it in the log: {text}"
    );
}
