//! The gateway as a shared service: isolation between callers and between look-alike
//! conversations, and the limits a hostile peer meets (trickled headers, unauthenticated and
//! oversize bodies, clients that stop reading or vanish, abandoned tool rounds, overload).

mod common;

use std::time::{Duration, Instant};

use common::*;
use cursor_agent::testing::{Replica, Script};
use cursor_agent::wire::{
    AgentServerMessage, InteractionUpdate, TextDeltaUpdate, TurnEndedUpdate,
    agent_server_message::Message as Server, interaction_update::Message as Update,
};
use cursor_gateway::Limits;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A gateway over `replica` with `keys` and `limits`.
async fn gateway_on(
    replica: cursor_agent::testing::ReplicaServer,
    keys: &[&str],
    limits: Limits,
) -> Harness {
    start_keyed(replica, keys, limits).await
}

/// One chat turn as `key`: the messages with the answer appended, and the answer's text.
async fn turn(h: &Harness, key: Option<&str>, messages: &mut Vec<Value>, user: &str) -> String {
    messages.push(json!({"role": "user", "content": user}));
    answer_of(h, key, messages).await
}

/// Asks for the next answer to `messages` (with one `shout` tool offered) and appends it.
async fn answer_of(h: &Harness, key: Option<&str>, messages: &mut Vec<Value>) -> String {
    let tools = json!([{"type": "function", "function": {"name": "shout", "parameters": {"type": "object"}}}]);
    let body = json!({"model": "composer-2.5", "messages": messages, "tools": tools}).to_string();
    let (status, text) = http(h, "POST", "/v1/chat/completions", &body, key).await;
    assert_eq!(status, 200, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    let message = body["choices"][0]["message"].clone();
    let answer = message["content"].as_str().unwrap_or_default().to_owned();
    messages.push(message);
    answer
}

/// Rewrites the text of the last assistant message, as a client that edits its history (or
/// whose answers came from another model) sends it back.
fn edit_last_answer(messages: &mut [Value]) {
    if let Some(Value::String(text)) = messages.last_mut().map(|m| &mut m["content"]) {
        text.push_str(" (edited)");
    }
}

const RECALL: &str = "what did I ask you to remember?";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_with_the_same_start_never_continue_each_others_conversation() {
    // The reported mix-up: both start alike, then each says something of its own; before,
    // both landed on one session and A's recall resumed B's remote conversation.
    for keys in [&[][..], &["alpha", "beta"][..]] {
        let h = gateway_on(Replica::start().await.unwrap(), keys, Limits::DEFAULT).await;
        let (key_a, key_b) = (keys.first().copied(), keys.get(1).copied());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        turn(&h, key_a, &mut a, "remember the door is blue").await;
        turn(&h, key_b, &mut b, "remember the door is blue").await;
        turn(&h, key_a, &mut a, "remember ALPHA-1").await;
        turn(&h, key_b, &mut b, "remember BETA-2").await;
        let recall_a = turn(&h, key_a, &mut a, RECALL).await;
        let recall_b = turn(&h, key_b, &mut b, RECALL).await;
        assert!(
            recall_a.contains("ALPHA-1") && !recall_a.contains("BETA-2"),
            "{keys:?}: {recall_a}"
        );
        assert!(
            recall_b.contains("BETA-2") && !recall_b.contains("ALPHA-1"),
            "{keys:?}: {recall_b}"
        );
        let labels: Vec<_> = h.replica.runs().iter().map(|r| r.label.clone()).collect();
        assert_eq!(
            labels.iter().filter(|l| *l == "agent-resume").count(),
            4,
            "{labels:?}"
        );
        let ids: std::collections::HashSet<_> = h
            .replica
            .runs()
            .iter()
            .map(|r| r.conversation_id.clone())
            .collect();
        assert_eq!(ids.len(), 2, "one remote conversation each: {labels:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_key_never_finds_a_conversation_even_with_its_whole_history() {
    let h = gateway_on(
        Replica::start().await.unwrap(),
        &["alpha", "beta"],
        Limits::DEFAULT,
    )
    .await;
    let mut a = Vec::new();
    turn(&h, Some("alpha"), &mut a, "remember SECRET-7").await;
    // B replays A's exact history: it gets an answer from its own rebuilt conversation.
    let mut stolen = a.clone();
    let recall = turn(&h, Some("beta"), &mut stolen, RECALL).await;
    assert!(
        recall.contains("SECRET-7"),
        "the transcript B sent says so: {recall}"
    );
    let runs = h.replica.runs();
    assert_eq!(runs[1].label, "agent-rebuild", "{runs:?}");
    assert_ne!(runs[1].conversation_id, runs[0].conversation_id);
    let (status, _) = http(&h, "POST", "/v1/chat/completions", "{}", Some("gamma")).await;
    assert_eq!(status, 401);
}

mod interleavings {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

        /// Clients whose conversations share prefixes (same key or not, same first words),
        /// in any order: every recall names exactly what that conversation was told, so no
        /// request continued a conversation whose history is not a prefix of its own.
        #[test]
        fn no_request_continues_a_conversation_that_is_not_a_prefix_of_its_own(
            steps in proptest::collection::vec((0usize..4, 0u8..4), 4..14)
        ) {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            runtime.block_on(async {
                let h = gateway_on(Replica::start().await.unwrap(), &["k1", "k2"], Limits::DEFAULT).await;
                // Four conversations: two per key, all starting with the same message.
                let keys = [Some("k1"), Some("k1"), Some("k2"), Some("k2")];
                let mut histories: Vec<Vec<Value>> = vec![Vec::new(); 4];
                let mut told: Vec<Vec<String>> = vec![Vec::new(); 4];
                // Where each remote conversation's history stood after its last Run.
                let mut remote_at: std::collections::HashMap<String, Vec<Value>> = Default::default();
                for (index, (who, action)) in steps.iter().enumerate() {
                    let (who, action) = (*who, *action);
                    let seen = h.replica.runs().len();
                    let before = histories[who].clone();
                    step(&h, keys[who], &mut histories[who], &mut told[who], who, index, action).await;
                    for run in &h.replica.runs()[seen..] {
                        if run.label == "agent-resume" {
                            let at = &remote_at[&run.conversation_id];
                            assert!(
                                before.starts_with(at),
                                "step {index}: conversation {who} resumed a remote conversation whose history is not a prefix of its own"
                            );
                        }
                        remote_at.insert(run.conversation_id.clone(), histories[who].clone());
                    }
                    // Odd conversations edit their answers: their histories differ from the
                    // even ones' in assistant text alone.
                    if who % 2 == 1 {
                        edit_last_answer(&mut histories[who]);
                    }
                }
            });
        }
    }

    /// One step of conversation `who`: start it, recall (checked), remember a fact, or run a
    /// tool round whose result only this conversation knows.
    async fn step(
        h: &Harness,
        key: Option<&str>,
        history: &mut Vec<Value>,
        told: &mut Vec<String>,
        who: usize,
        index: usize,
        action: u8,
    ) {
        if history.is_empty() {
            turn(h, key, history, "remember START").await;
            told.push("START".into());
            return;
        }
        match action {
            0 => {
                let recall = turn(h, key, history, RECALL).await;
                let expected = format!("You asked me to remember: {}.", told.join("; "));
                assert_eq!(recall, expected, "conversation {who} at step {index}");
            }
            3 => {
                turn(
                    h,
                    key,
                    history,
                    "tool: shout {\"text\": \"same for everyone\"}",
                )
                .await;
                let call = history.last().unwrap()["tool_calls"][0]["id"].clone();
                history.push(json!({"role": "tool", "tool_call_id": call, "content": format!("R{who}-{index}")}));
                answer_of(h, key, history).await;
            }
            _ => {
                // Few distinct facts: conversations often agree on every user turn and differ
                // only in their tool results.
                let fact = if action == 1 { "F-A" } else { "F-B" }.to_owned();
                turn(h, key, history, &format!("remember {fact}")).await;
                told.push(fact);
            }
        }
    }
}

/// Reads an HTTP response head (and whatever followed it) from `stream`.
async fn read_head(stream: &mut tokio::net::TcpStream) -> String {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&raw).into_owned()
}

fn fast_limits() -> Limits {
    let mut limits = Limits::DEFAULT;
    limits.header_read = Duration::from_secs(1);
    limits.write = Duration::from_millis(500);
    limits.body_read = Duration::from_secs(2);
    limits.max_body_bytes = 1 << 20;
    limits
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_trickling_connections_are_closed_by_the_header_timeout_while_others_are_served()
 {
    let h = gateway_on(Replica::start().await.unwrap(), &[], fast_limits()).await;
    let mut tricklers = Vec::new();
    for _ in 0..500 {
        let mut stream = tokio::net::TcpStream::connect(h.addr).await.unwrap();
        stream
            .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        tricklers.push(stream);
    }
    let started = Instant::now();
    // From an address of its own: the tricklers' address is at its per-peer cap.
    let client = connect_from(&h, [127, 0, 0, 2]).await;
    let (status, body) = http_on(client, "GET", "/v1/models", "", &[]).await;
    assert_eq!(status, 200, "a normal client is served beside them: {body}");
    // Each trickler sends one more header byte now and then; the timeout still closes it.
    for stream in &mut tricklers {
        let _ = stream.write_all(b"X").await;
    }
    let mut closed = 0;
    for mut stream in tricklers {
        let mut buf = [0u8; 256];
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await;
        if matches!(read, Ok(Ok(_) | Err(_))) {
            closed += 1;
        }
    }
    assert_eq!(closed, 500, "every trickling connection was closed");
    assert!(started.elapsed() < Duration::from_secs(10), "hang guard");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(h.gateway.open_connections(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_32_mib_body_is_refused_before_it_is_read() {
    let h = gateway_on(Replica::start().await.unwrap(), &["alpha"], Limits::DEFAULT).await;
    let mut stream = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        32 << 20
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // The gateway may answer and close before these bytes land.
    let _ = stream.write_all(b"{\"model\":").await;
    let answer = tokio::time::timeout(Duration::from_secs(5), read_head(&mut stream))
        .await
        .expect("answered without the body");
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(answer.contains("authentication_error"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversize_body_is_a_413_whether_declared_or_streamed() {
    let h = gateway_on(Replica::start().await.unwrap(), &["alpha"], fast_limits()).await;
    // Declared: refused from the head (the body is never sent; the gateway closes after).
    let mut stream = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alpha\r\nContent-Length: {}\r\n\r\n",
        (1 << 20) + 1
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), read_head(&mut stream))
        .await
        .expect("answered from the head");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("request_too_large"), "{answer}");
    // Chunked: no declared length, refused once the limit is passed.
    let mut stream = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    stream
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alpha\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 64 << 10, "y".repeat(64 << 10));
    let answer = tokio::time::timeout(Duration::from_secs(10), async {
        for _ in 0..24 {
            if stream.write_all(chunk.as_bytes()).await.is_err() {
                break;
            }
        }
        read_head(&mut stream).await
    })
    .await
    .expect("hang guard");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
}

fn big_answer(deltas: usize) -> Script {
    let update = |message| AgentServerMessage {
        message: Some(Server::InteractionUpdate(InteractionUpdate {
            message: Some(message),
            ..Default::default()
        })),
        ..Default::default()
    };
    let word = "z".repeat(4096);
    Script::Frames(
        (0..deltas)
            .map(|_| update(Update::TextDelta(TextDeltaUpdate { text: word.clone() })))
            .chain([update(Update::TurnEnded(TurnEndedUpdate::default()))])
            .collect(),
    )
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{what}: hang guard"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    started.elapsed()
}

fn streamed_request(text: &str) -> String {
    chat_request(text, true)
}

fn chat_request(text: &str, stream: bool) -> String {
    let body = json!({"model": "composer-2.5", "stream": stream, "messages": [{"role": "user", "content": text}]}).to_string();
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_has_its_run_cancelled_by_the_write_timeout() {
    let h = gateway_on(Replica::start().await.unwrap(), &[], fast_limits()).await;
    h.replica.script(big_answer(8000));
    let mut stream = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    stream
        .write_all(streamed_request("talk a lot").as_bytes())
        .await
        .unwrap();
    let _head = read_head(&mut stream).await;
    wait_until("the turn started", || h.gateway.open_runs() == 1).await;
    // Never read again: the socket buffers fill, the write stalls, the timeout fires.
    let took = wait_until("the Run was cancelled", || h.gateway.open_runs() == 0).await;
    println!("stopped reading -> Run cancelled after {took:?} (write timeout 500 ms)");
    // The conversation is free again: the same request is answered at once.
    let (status, _) = post(
        &h,
        &json!({"model": "composer-2.5", "messages": [{"role": "user", "content": "ping"}]}),
    )
    .await;
    assert_eq!(status, 200);
    drop(stream);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_stream_or_before_the_answer_has_its_run_cancelled_within_a_second()
 {
    let h = gateway_on(Replica::start().await.unwrap(), &[], fast_limits()).await;
    for stream_it in [true, false] {
        h.replica.script(Script::Silent);
        let mut stream = tokio::net::TcpStream::connect(h.addr).await.unwrap();
        let request = chat_request("say nothing", stream_it);
        stream.write_all(request.as_bytes()).await.unwrap();
        wait_until("the turn started", || h.gateway.open_runs() == 1).await;
        drop(stream);
        let took = wait_until("the Run was cancelled", || h.gateway.open_runs() == 0).await;
        println!("disconnect (stream: {stream_it}) -> Run cancelled after {took:?}");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_abandoned_tool_rounds_neither_stall_new_conversations_nor_outlive_their_deadline()
 {
    let server = cursor_transport::testing::TestServer::builder().max_concurrent_streams(100);
    let replica = Replica::new().listen(server).await.unwrap();
    let mut limits = Limits::DEFAULT;
    limits.tool_round = Duration::from_secs(4);
    limits.max_turns = 400;
    limits.max_turns_per_key = 400;
    limits.max_parked_rounds = 400;
    limits.max_parked_per_key = 400;
    let h = gateway_on(replica, &[], limits).await;
    let tools = json!([{"type": "function", "function": {"name": "shout", "parameters": {"type": "object"}}}]);
    let abandon = |i: usize| {
        let h = &h;
        let tools = tools.clone();
        async move {
            let text = format!("tool: shout {{\"text\": \"round {i}\"}}");
            let body = json!({"model": "composer-2.5", "messages": [{"role": "user", "content": text}], "tools": tools});
            let (status, body) = post(h, &body).await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        }
    };
    for batch in 0..6 {
        futures::future::join_all((0..50).map(|i| abandon(batch * 50 + i))).await;
    }
    assert_eq!(h.gateway.waiting_tool_rounds(), 300);
    let started = Instant::now();
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "messages": [{"role": "user", "content": "ping"}]}),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{body}");
    println!("a new conversation beside 300 waiting Runs (100 streams per connection): {took:?}");
    assert!(
        took < Duration::from_secs(3),
        "a new conversation stalled: {took:?}"
    );
    let expired = wait_until("the abandoned rounds expired", || {
        h.gateway.waiting_tool_rounds() == 0
    })
    .await;
    println!("300 waiting rounds expired {expired:?} after the first check");
    let (status, metrics) = metrics(&h).await;
    assert_eq!(status, 200);
    assert!(
        metrics.contains("cursor_gateway_expired_tool_rounds_total 300"),
        "{metrics}"
    );
    assert!(
        metrics.contains("cursor_gateway_parked_tool_rounds 0"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_tool_result_after_expiry_rebuilds_and_answers() {
    let mut limits = Limits::DEFAULT;
    limits.tool_round = Duration::from_millis(300);
    let h = gateway_on(Replica::start().await.unwrap(), &[], limits).await;
    let tools = json!([{"type": "function", "function": {"name": "shout", "parameters": {"type": "object"}}}]);
    let mut messages = vec![json!({"role": "user", "content": "tool: shout {\"text\": \"late\"}"})];
    let (_, body) = post(
        &h,
        &json!({"model": "composer-2.5", "messages": messages, "tools": tools}),
    )
    .await;
    let message = body["choices"][0]["message"].clone();
    let call_id = message["tool_calls"][0]["id"].clone();
    messages.push(message);
    wait_until("the round expired", || h.gateway.waiting_tool_rounds() == 0).await;
    messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": "LATE"}));
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "messages": messages, "tools": tools}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let runs = h.replica.runs();
    let last = runs.last().unwrap();
    assert_eq!(last.label, "agent-rebuild", "{runs:?}");
    assert!(
        last.root_prompt_tool_results
            .iter()
            .any(|r| r.contains("LATE")),
        "the late result reached the rebuilt conversation: {last:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_turn_and_connection_caps_the_answer_is_503_with_retry_after_at_once() {
    let mut limits = fast_limits();
    limits.max_turns = 1;
    limits.max_connections = 3;
    let h = gateway_on(Replica::start().await.unwrap(), &[], limits).await;
    h.replica.script(Script::Silent);
    let mut holder = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    holder
        .write_all(streamed_request("hold").as_bytes())
        .await
        .unwrap();
    wait_until("the turn started", || h.gateway.open_runs() == 1).await;
    let started = Instant::now();
    let mut second = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    second
        .write_all(streamed_request("second").as_bytes())
        .await
        .unwrap();
    let answer = read_head(&mut second).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: 1"),
        "{answer}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    // Connections: two held open, the fourth is refused at once.
    let _idle = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    wait_until("three connections", || h.gateway.open_connections() == 3).await;
    let mut over = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(2), read_head(&mut over))
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    drop((holder, second));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_without_a_key_and_metrics_only_with_the_admin_key() {
    let h = gateway_on(Replica::start().await.unwrap(), &["alpha"], Limits::DEFAULT).await;
    let (status, body) = http(&h, "GET", "/healthz", "", None).await;
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let mut messages = Vec::new();
    turn(&h, Some("alpha"), &mut messages, "remember OWL-4").await;
    turn(&h, Some("alpha"), &mut messages, RECALL).await;
    let (_, _) = http(&h, "GET", "/v1/models", "", Some("wrong")).await;
    // Every tenant's traffic: not for a client key, nor for nobody.
    for key in [None, Some("alpha")] {
        let (status, body) = http(&h, "GET", "/metrics", "", key).await;
        assert_eq!(status, 401, "{key:?}: {body}");
        assert!(!body.contains("cursor_gateway_"), "{body}");
    }
    let (status, metrics) = metrics(&h).await;
    assert_eq!(status, 200);
    for line in [
        "cursor_gateway_requests_total{route=\"chat_completions\",status=\"200\"} 2",
        "cursor_gateway_requests_total{route=\"models\",status=\"401\"} 1",
        "cursor_gateway_requests_total{route=\"metrics\",status=\"401\"} 2",
        "cursor_gateway_runs_total{kind=\"fresh\"} 1",
        "cursor_gateway_runs_total{kind=\"resume\"} 1",
        "cursor_gateway_open_runs 0",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_overflow_asks_clients_to_compact_in_their_own_apis_words() {
    use cursor_agent::testing::Exhaustion;
    let h = gateway_on(Replica::start().await.unwrap(), &[], Limits::DEFAULT).await;
    let chat =
        json!({"model": "composer-2.5", "messages": [{"role": "user", "content": "a long story"}]});
    h.replica
        .script(Script::Exhausted(Exhaustion::ContextOverflow));
    let (status, body) = post(&h, &chat).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "context_length_exceeded", "{body}");
    let messages = json!({"model": "claude-cursor-composer-2.5", "max_tokens": 64,
        "messages": [{"role": "user", "content": "a long story"}]});
    h.replica
        .script(Script::Exhausted(Exhaustion::ContextOverflow));
    let (status, text) = http(&h, "POST", "/v1/messages", &messages.to_string(), None).await;
    assert_eq!(status, 400, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("prompt is too long"),
        "{body}"
    );
    // A spent quota is a 429 with the quota's words.
    h.replica.script(Script::Exhausted(Exhaustion::Quota));
    let (status, body) = post(&h, &chat).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["type"], "rate_limit_error");
}
