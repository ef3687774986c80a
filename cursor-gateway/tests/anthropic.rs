//! The Anthropic Messages API end to end against the in-process replica: the shapes Claude
//! Code and the Anthropic SDKs read, signed thinking, errors, models, token counts, pings.

mod common;

use std::time::Duration;

use common::*;
use cursor_agent::testing::{Replica, Script};
use cursor_agent::wire::{
    AgentServerMessage, InteractionUpdate, TextDeltaUpdate, ThinkingDeltaUpdate, TurnEndedUpdate,
    agent_server_message::Message as Server, interaction_update::Message as Update,
};
use cursor_gateway::Limits;
use serde_json::{Value, json};

const MODEL: &str = "claude-cursor-composer-2.5";

async fn messages(h: &Harness, body: &Value, key: Option<&str>) -> (u16, String) {
    http(h, "POST", "/v1/messages?beta=true", &body.to_string(), key).await
}

/// `(event, data)` pairs of an SSE body.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter_map(|frame| {
            let kind = frame.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = frame.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((kind.to_owned(), serde_json::from_str(data).unwrap()))
        })
        .collect()
}

fn request(messages: &[Value], stream: bool) -> Value {
    json!({
        "model": MODEL, "max_tokens": 1024, "stream": stream,
        "system": [{"type": "text", "text": "You are a test."}],
        "messages": messages,
        "tools": [
            {"name": "shout", "description": "Upper-cases text", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
            {"name": "Bash", "description": "Runs a shell command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}, "description": {"type": "string"}}, "required": ["command"]}}
        ]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_answer_is_one_message_with_usage_and_end_turn() {
    let h = start_with(None, None).await;
    let (status, body) = messages(
        &h,
        &request(&[json!({"role": "user", "content": "ping"})], false),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["content"][0], json!({"type": "text", "text": "pong"}));
    assert_eq!(body["stop_reason"], "end_turn");
    assert!(body["usage"]["input_tokens"].is_u64(), "{body}");
    assert!(body["usage"]["cache_read_input_tokens"].is_u64(), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_tool_round_follows_the_event_sequence_and_its_result_continues_the_run() {
    let h = start_with(None, None).await;
    let mut history = vec![json!({"role": "user", "content": "tool: shout {\"text\": \"loud\"}"})];
    let (status, text) = messages(&h, &request(&history, true), None).await;
    assert_eq!(status, 200, "{text}");
    let events = events(&text);
    let kinds: Vec<&str> = events
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| *k != "ping")
        .collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ],
        "{text}"
    );
    let start = &events
        .iter()
        .find(|(k, _)| k == "content_block_start")
        .unwrap()
        .1;
    assert_eq!(start["content_block"]["type"], "tool_use");
    assert_eq!(start["content_block"]["name"], "shout");
    let id = start["content_block"]["id"].as_str().unwrap().to_owned();
    let delta = &events
        .iter()
        .find(|(k, _)| k == "content_block_delta")
        .unwrap()
        .1;
    assert_eq!(delta["delta"]["type"], "input_json_delta");
    let input: Value =
        serde_json::from_str(delta["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!({"text": "loud"}));
    let stop = &events.iter().find(|(k, _)| k == "message_delta").unwrap().1;
    assert_eq!(stop["delta"]["stop_reason"], "tool_use");

    history.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "shout", "input": input}]}));
    history.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "LOUD"}]}));
    let (status, body) = messages(&h, &request(&history, false), None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("LOUD"), "{body}");
    assert_eq!(
        h.replica.runs().len(),
        1,
        "the result went onto the waiting Run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_tool_uses_arrive_as_blocks_of_one_message_and_their_results_continue_one_run() {
    let h = start_with(None, None).await;
    let mut history = vec![
        json!({"role": "user", "content": "tool: shout {\"text\": \"a\"}\ntool: shout {\"text\": \"b\"}"}),
    ];
    let (status, body) = messages(&h, &request(&history, false), None).await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    let calls: Vec<&Value> = body["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .collect();
    assert_eq!(calls.len(), 2, "{body}");
    history.push(json!({"role": "assistant", "content": body["content"].clone()}));
    let results: Vec<Value> = calls
        .iter()
        .map(|c| json!({"type": "tool_result", "tool_use_id": c["id"], "content": c["input"]["text"].as_str().unwrap().to_uppercase()}))
        .collect();
    history.push(json!({"role": "user", "content": results}));
    let (status, body) = messages(&h, &request(&history, false), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        h.replica.runs().len(),
        1,
        "both results went onto the one waiting Run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_native_shell_request_becomes_a_call_of_claude_codes_bash() {
    let h = start_with(None, None).await;
    let (status, body) = messages(
        &h,
        &request(
            &[json!({"role": "user", "content": "run: echo native"})],
            false,
        ),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    let call = body["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(call["name"], "Bash");
    assert!(
        call["input"]["command"]
            .as_str()
            .unwrap()
            .contains("echo native"),
        "{call}"
    );
    assert_eq!(body["stop_reason"], "tool_use");
}

fn thinking_then_text() -> Script {
    let update = |message| AgentServerMessage {
        message: Some(Server::InteractionUpdate(InteractionUpdate {
            message: Some(message),
            ..Default::default()
        })),
        ..Default::default()
    };
    Script::Frames(vec![
        update(Update::ThinkingDelta(ThinkingDeltaUpdate {
            text: "let me think".into(),
        })),
        update(Update::TextDelta(TextDeltaUpdate {
            text: "thought it through".into(),
        })),
        update(Update::TurnEnded(TurnEndedUpdate::default())),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_is_signed_replays_when_unmodified_and_a_tampered_block_is_a_400() {
    let h = start_with(None, None).await;
    h.replica.script(thinking_then_text());
    let mut history = vec![json!({"role": "user", "content": "remember KOALA-2"})];
    let (status, text) = messages(&h, &request(&history, true), None).await;
    assert_eq!(status, 200, "{text}");
    let events = events(&text);
    let signature = events
        .iter()
        .find(|(_, d)| d["delta"]["type"] == "signature_delta")
        .map(|(_, d)| d["delta"]["signature"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no signature: {text}"));
    let thinking: String = events
        .iter()
        .filter_map(|(_, d)| d["delta"]["thinking"].as_str())
        .collect();
    assert_eq!(thinking, "let me think");
    history.push(json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": thinking, "signature": signature},
        {"type": "text", "text": "thought it through"}
    ]}));
    history.push(json!({"role": "user", "content": "what did I ask you to remember?"}));
    let (status, body) = messages(&h, &request(&history, false), None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("KOALA-2"), "{body}");
    // A scripted Run leaves no checkpoint, so the turn rebuilds; that it continued the same
    // conversation shows the history with its thinking block matched.
    assert_eq!(
        h.gateway.conversations(),
        1,
        "the replayed history found its conversation"
    );

    let mut tampered = history.clone();
    tampered[1]["content"][0]["thinking"] = json!("let me think again");
    let (status, body) = messages(&h, &request(&tampered, false), None).await;
    assert_eq!(status, 400, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("signature"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_anthropic_error_objects_with_the_apis_statuses() {
    let h = start_with(Some("key-1"), None).await;
    let one = request(&[json!({"role": "user", "content": "ping"})], false);
    let (status, body) = messages(&h, &one, Some("wrong")).await;
    assert_eq!(status, 401);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["type"],
        "authentication_error"
    );
    let mut unknown = one.clone();
    unknown["model"] = json!("claude-sonnet-9");
    let (status, body) = messages(&h, &unknown, Some("key-1")).await;
    assert_eq!(status, 404, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["type"], "not_found_error");
    assert!(
        body["error"]["message"].as_str().unwrap().contains(MODEL),
        "lists the models: {body}"
    );
    let mut server_tool = one.clone();
    server_tool["tools"] = json!([{"type": "web_search_20250305", "name": "web_search"}]);
    let (status, body) = messages(&h, &server_tool, Some("key-1")).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("web_search_20250305"), "{body}");
    h.replica.script(Script::ResourceExhausted(
        "You have hit your usage limit".into(),
    ));
    let (status, body) = messages(&h, &one, Some("key-1")).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["type"],
        "rate_limit_error"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_stream_gets_pings_and_a_late_failure_is_an_error_event() {
    let mut limits = Limits::DEFAULT;
    limits.ping_interval = Duration::from_millis(200);
    let replica = Replica::start().await.unwrap();
    let h = start_keyed(replica, &[], limits).await;
    h.replica.script(Script::Silent);
    let body = request(&[json!({"role": "user", "content": "think quietly"})], true).to_string();
    let mut stream = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    let started = std::time::Instant::now();
    while seen.matches("event: ping").count() < 3 {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "closed: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let took = started.elapsed();
    println!("3 pings in {took:?} at a 200 ms interval");
    assert!(
        seen.contains("HTTP/1.1 200")
            && seen.to_ascii_lowercase().contains("x-accel-buffering: no"),
        "{seen}"
    );
    assert!(seen.contains("event: message_start"), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_answer_in_the_callers_shape() {
    let h = start_with(None, None).await;
    let (status, body) = http_with(
        &h,
        "GET",
        "/v1/models?limit=2",
        "",
        &[("anthropic-version", "2023-06-01")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert!(
        data.iter().all(
            |m| m["type"] == "model" && m["id"].as_str().unwrap().starts_with("claude-cursor-")
        )
    );
    assert_eq!(body["has_more"], true);
    let after = body["last_id"].as_str().unwrap().to_owned();
    let (_, next) = http_with(
        &h,
        "GET",
        &format!("/v1/models?limit=1000&after_id={after}"),
        "",
        &[("anthropic-version", "2023-06-01")],
    )
    .await;
    let next: Value = serde_json::from_str(&next).unwrap();
    assert_eq!(next["has_more"], false);
    assert_ne!(next["first_id"], body["first_id"]);

    let (status, body) = http(&h, "GET", "/v1/models", "", None).await;
    assert_eq!(status, 200);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert!(body["data"][0]["object"] == "model");
    let codex = &body["models"][0];
    assert!(
        codex["slug"].is_string() && codex["context_window"].is_u64(),
        "{codex}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_tokens_is_never_zero_and_uses_cursors_count_for_a_known_conversation() {
    let h = start_with(None, None).await;
    let count = |history: &[Value]| {
        let mut body = request(history, false);
        body.as_object_mut().unwrap().remove("max_tokens");
        body.as_object_mut().unwrap().remove("stream");
        body
    };
    let mut history = vec![json!({"role": "user", "content": "remember EMU-3"})];
    let (status, body) = http(
        &h,
        "POST",
        "/v1/messages/count_tokens",
        &count(&history).to_string(),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let estimated = serde_json::from_str::<Value>(&body).unwrap()["input_tokens"]
        .as_u64()
        .unwrap();
    assert!(estimated > 0);
    let (_, answer) = messages(&h, &request(&history, false), None).await;
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let usage = &answer["usage"];
    let cursor_counted = usage["input_tokens"].as_u64().unwrap()
        + usage["cache_read_input_tokens"].as_u64().unwrap()
        + usage["cache_creation_input_tokens"].as_u64().unwrap()
        + usage["output_tokens"].as_u64().unwrap();
    history.push(json!({"role": "assistant", "content": answer["content"].clone()}));
    history.push(json!({"role": "user", "content": "ok"}));
    let (_, body) = http(
        &h,
        "POST",
        "/v1/messages/count_tokens",
        &count(&history).to_string(),
        None,
    )
    .await;
    let known = serde_json::from_str::<Value>(&body).unwrap()["input_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        known > cursor_counted,
        "{known} counts Cursor's {cursor_counted} plus the new turn"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_request_runs_apart_and_the_main_conversation_still_resumes() {
    let h = start_with(None, None).await;
    let session = [("x-claude-code-session-id", "cc-1")];
    let mut history = vec![json!({"role": "user", "content": "remember HERON-8"})];
    let (_, answer) = http_with(
        &h,
        "POST",
        "/v1/messages",
        &request(&history, false).to_string(),
        &session,
    )
    .await;
    let answer: Value = serde_json::from_str(&answer).unwrap();
    history.push(json!({"role": "assistant", "content": answer["content"].clone()}));
    let mut compact = history.clone();
    compact.push(json!({"role": "user", "content": "Your task is to create a detailed summary of the conversation so far."}));
    let (status, _) = http_with(
        &h,
        "POST",
        "/v1/messages",
        &request(&compact, false).to_string(),
        &session,
    )
    .await;
    assert_eq!(status, 200);
    history.push(json!({"role": "user", "content": "what did I ask you to remember?"}));
    let (status, body) = http_with(
        &h,
        "POST",
        "/v1/messages",
        &request(&history, false).to_string(),
        &session,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("HERON-8"));
    let labels: Vec<String> = h.replica.runs().iter().map(|r| r.label.clone()).collect();
    assert_eq!(
        labels,
        ["agent-rebuild", "agent-rebuild", "agent-resume"],
        "the summary rebuilt apart; the main turn resumed"
    );
}
