//! The gateway end to end against the in-process replica, over real HTTP/1.1 on loopback.

mod common;

use std::sync::Arc;

use common::*;
use cursor_agent::session::Client;
use cursor_agent::testing::{Replica, Script};
use cursor_gateway::{GatewayTokens, Limits};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_lists_catalog_ids_with_effort_variants() {
    let h = start_with(None, None).await;
    let (status, body) = http(&h, "GET", "/v1/models", "", None).await;
    assert_eq!(status, 200);
    let body: Value = serde_json::from_str(&body).unwrap();
    let ids: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"composer-2.5"), "{ids:?}");
    assert!(
        ids.iter().any(|id| id.ends_with("-high")),
        "no effort variant in {ids:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_gateway_key_is_a_401_error_object() {
    let h = start_with(Some("sekrit"), None).await;
    let (status, body) = http(&h, "GET", "/v1/models", "", Some("wrong")).await;
    assert_eq!(status, 401);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], "invalid_api_key");
    let (status, _) = http(&h, "GET", "/v1/models", "", Some("sekrit")).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_answer_with_usage() {
    let h = start_with(None, None).await;
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "messages": [{"role": "user", "content": "ping"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["message"]["content"], "pong");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    let usage = &body["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert_eq!(
        usage["estimated"], true,
        "AgentService reports no input tokens: {usage}"
    );
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(
            usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_tool_round_emits_whole_calls_then_continues_the_parked_run() {
    let h = start_with(None, None).await;
    let mut messages = vec![
        json!({"role": "system", "content": "be terse"}),
        json!({"role": "user", "content": "tool: shout {\"text\": \"quiet\"}"}),
    ];
    let request = |messages: &Vec<Value>| {
        json!({
            "model": "composer-2.5", "messages": messages, "tools": shout_tool(), "stream": true,
            "stream_options": {"include_usage": true}
        })
    };
    let (status, events, done) = post_stream(&h, &request(&messages)).await;
    assert_eq!(status, 200);
    assert!(done);
    let calls: Vec<&Value> = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"].get("tool_calls"))
        .collect();
    assert_eq!(calls.len(), 1, "{events:?}");
    let call = &calls[0][0];
    assert_eq!(call["function"]["name"], "shout");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        arguments,
        json!({"text": "quiet"}),
        "the arguments arrive whole in one delta"
    );
    assert_eq!(finish_reasons(&events), [&json!("tool_calls")]);
    assert!(
        events.last().unwrap().get("usage").is_some(),
        "include_usage sends a usage chunk last"
    );

    let id = call["id"].as_str().unwrap().to_owned();
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": "shout", "arguments": "{\"text\":\"quiet\"}"}}
    ]}));
    messages.push(json!({"role": "tool", "tool_call_id": id, "content": "QUIET"}));
    let (status, events, _) = post_stream(&h, &request(&messages)).await;
    assert_eq!(status, 200);
    let text = streamed_text(&events);
    assert!(text.contains("QUIET"), "{text}");
    // One Run for both legs: the tool result went onto the parked stream.
    assert_eq!(h.replica.runs().len(), 1, "{:?}", h.replica.runs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_tool_calls_stream_whole_with_their_indexes_and_both_results_continue_one_run() {
    let h = start_with(None, None).await;
    let mut messages = vec![json!({
        "role": "user",
        "content": "tool: shout {\"text\": \"one\"}\ntool: shout {\"text\": \"two\"}"
    })];
    let request = |messages: &Vec<Value>| json!({"model": "composer-2.5", "messages": messages, "tools": shout_tool(), "stream": true});
    let (status, events, _) = post_stream(&h, &request(&messages)).await;
    assert_eq!(status, 200);
    let calls: Vec<&Value> = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"].get("tool_calls"))
        .flat_map(|calls| calls.as_array().unwrap())
        .collect();
    let indexes: Vec<&Value> = calls.iter().map(|c| &c["index"]).collect();
    assert_eq!(indexes, [&json!(0), &json!(1)], "{events:?}");
    let texts: Vec<Value> = calls
        .iter()
        .map(|c| serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(texts, [json!({"text": "one"}), json!({"text": "two"})]);
    assert_eq!(finish_reasons(&events), [&json!("tool_calls")]);

    let ids: Vec<String> = calls
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": ids[0], "type": "function", "function": {"name": "shout", "arguments": "{\"text\":\"one\"}"}},
        {"id": ids[1], "type": "function", "function": {"name": "shout", "arguments": "{\"text\":\"two\"}"}}
    ]}));
    messages.push(json!({"role": "tool", "tool_call_id": ids[1], "content": "TWO"}));
    messages.push(json!({"role": "tool", "tool_call_id": ids[0], "content": "ONE"}));
    let (status, events, _) = post_stream(&h, &request(&messages)).await;
    assert_eq!(status, 200);
    let text = streamed_text(&events);
    assert_eq!(
        text,
        "The tool shout answered: ONE The tool shout answered: TWO"
    );
    assert_eq!(h.replica.runs().len(), 1, "{:?}", h.replica.runs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_user_turn_resumes_and_a_second_gateway_process_resumes_from_the_handle() {
    let h = start_with(None, None).await;
    let mut messages = vec![json!({"role": "user", "content": "remember OKAPI-9"})];
    let (status, body) = post(&h, &json!({"model": "composer-2.5", "messages": messages})).await;
    assert_eq!(status, 200, "{body}");
    messages.push(body["choices"][0]["message"].clone());
    messages.push(json!({"role": "user", "content": "what did I ask you to remember?"}));
    let (status, body) = post(&h, &json!({"model": "composer-2.5", "messages": messages})).await;
    assert_eq!(status, 200, "{body}");
    assert!(answer(&body).contains("OKAPI-9"));
    let runs = h.replica.runs();
    assert_eq!(runs[1].label, "agent-resume", "{runs:?}");
    assert!(!runs[1].history_replayed);

    // A new gateway over the same state directory and replica: the handle resumes it.
    let Harness { replica, state, .. } = h;
    let second = start_on(replica, None, Some(state)).await;
    messages.push(body["choices"][0]["message"].clone());
    messages.push(json!({"role": "user", "content": "ping"}));
    let (status, body) = post(
        &second,
        &json!({"model": "composer-2.5", "messages": messages}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let runs = second.replica.runs();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[2].label, "agent-resume", "{runs:?}");
    assert!(!runs[2].history_replayed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_400s_and_leave_the_conversation_resumable() {
    let h = start_with(None, None).await;
    let mut messages = vec![json!({"role": "user", "content": "remember WOMBAT-5"})];
    let (_, body) = post(&h, &json!({"model": "composer-2.5", "messages": messages})).await;
    messages.push(body["choices"][0]["message"].clone());
    let handles = h.state.path().join("handles");
    let snapshot = |dir: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        files.sort();
        files
    };
    let before = snapshot(&handles);
    assert!(!before.is_empty());

    let mut unknown_role = messages.clone();
    unknown_role.push(json!({"role": "narrator", "content": "x"}));
    let mut unknown_call = messages.clone();
    unknown_call.push(json!({"role": "tool", "tool_call_id": "ghost", "content": "x"}));
    let bad = [
        "{not json".to_owned(),
        json!({"model": "composer-2.5", "messages": unknown_role}).to_string(),
        json!({"model": "composer-2.5", "messages": unknown_call}).to_string(),
        json!({"model": "no-such-model", "messages": messages}).to_string(),
    ];
    for body in &bad {
        let (status, text) = http(&h, "POST", "/v1/chat/completions", body, None).await;
        assert_eq!(status, 400, "{text}");
        let error: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(error["error"]["type"], "invalid_request_error");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("stored state is unchanged")
        );
    }
    assert_eq!(
        snapshot(&handles),
        before,
        "a 400 left the stored handle as it was"
    );
    assert_eq!(h.replica.runs().len(), 1, "no 400 reached the backend");

    messages.push(json!({"role": "user", "content": "what did I ask you to remember?"}));
    let (status, body) = post(&h, &json!({"model": "composer-2.5", "messages": messages})).await;
    assert_eq!(status, 200);
    assert!(answer(&body).contains("WOMBAT-5"));
    assert_eq!(h.replica.runs()[1].label, "agent-resume");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_failures_map_to_401_429_and_502() {
    let h = start_with(None, None).await;
    let request =
        json!({"model": "composer-2.5", "messages": [{"role": "user", "content": "ping"}]});
    h.replica
        .script(Script::ResourceExhausted("quota spent".into()));
    let (status, body) = post(&h, &request).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["type"], "rate_limit_error");
    h.replica.script(Script::MalformedFrame);
    let (status, body) = post(&h, &request).await;
    assert_eq!(status, 502, "{body}");
    h.replica.set_fail_auth(true);
    let (status, body) = post(&h, &json!({"model": "composer-2.5", "stream": true, "messages": [{"role": "user", "content": "ping"}]})).await;
    assert_eq!(
        status, 401,
        "a streamed request that fails before output is a plain error: {body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("[auth]")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_conversations_with_the_same_start_run_apart() {
    let h = start_with(None, None).await;
    let one = |text: &str| json!({"model": "composer-2.5", "messages": [{"role": "user", "content": text}]});
    let (first, second, other) = (one("remember A"), one("remember A"), one("remember B"));
    let (a, b, c) = tokio::join!(post(&h, &first), post(&h, &second), post(&h, &other));
    for (status, body) in [a, b, c] {
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(h.replica.runs().len(), 3);
    assert_eq!(
        h.gateway.conversations(),
        3,
        "three conversations, none shared"
    );
}

/// The SSE events of a Responses stream, by `type`.
async fn post_responses(h: &Harness, body: &Value) -> (u16, Vec<Value>) {
    let (status, text) = http(h, "POST", "/v1/responses", &body.to_string(), None).await;
    let events = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    (status, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_stream_a_function_call_and_its_output_continues_the_run() {
    let h = start_with(None, None).await;
    let tools = json!([{"type": "function", "name": "shout", "parameters": {"type": "object"}}, {"type": "local_shell"}]);
    let mut input = vec![
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be terse"}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "tool: shout {\"text\": \"loud\"}"}]}),
    ];
    let request = |input: &Vec<Value>| json!({"model": "composer-2.5", "instructions": "You are a test.", "input": input, "tools": tools, "stream": true, "prompt_cache_key": "s1"});
    let (status, events) = post_responses(&h, &request(&input)).await;
    assert_eq!(status, 200, "{events:?}");
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"response.created"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"response.completed"), "{kinds:?}");
    let call = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "function_call")
        .map(|e| e["item"].clone())
        .unwrap_or_else(|| panic!("no function call in {kinds:?}"));
    assert_eq!(call["name"], "shout");
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        json!({"text": "loud"})
    );

    input.push(json!({"type": "function_call", "call_id": call["call_id"], "name": "shout", "arguments": call["arguments"]}));
    input.push(
        json!({"type": "function_call_output", "call_id": call["call_id"], "output": "LOUD"}),
    );
    let (status, events) = post_responses(&h, &request(&input)).await;
    assert_eq!(status, 200);
    let completed = events
        .iter()
        .find(|e| e["type"] == "response.completed")
        .unwrap();
    assert!(
        completed["response"]["output_text"]
            .as_str()
            .unwrap()
            .contains("LOUD"),
        "{completed}"
    );
    assert!(
        completed["response"]["usage"]["output_tokens"].is_u64(),
        "{completed}"
    );
    assert_eq!(
        h.replica.runs().len(),
        1,
        "the function output went onto the parked Run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_without_stream_answer_one_response_object() {
    let h = start_with(None, None).await;
    let (status, body) = http(
        &h,
        "POST",
        "/v1/responses",
        &json!({"model": "composer-2.5", "input": "ping"}).to_string(),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["output"][0]["content"][0]["text"], "pong");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cursor_credentials_every_request_is_a_401_that_says_what_to_set() {
    let replica = Replica::start().await.unwrap();
    let tokens = GatewayTokens::from_environment(
        Client::new().unwrap(),
        replica.origin(),
        |_: &str| None,
        None,
    );
    let h = start_full(replica, &[], None, Arc::new(tokens), Limits::DEFAULT).await;
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "messages": [{"role": "user", "content": "ping"}]}),
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["type"], "authentication_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("CURSOR_API_KEY"),
        "{body}"
    );
    assert!(h.replica.runs().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_request_while_a_run_waits_for_tool_results_leaves_that_run_waiting() {
    let h = start_with(None, None).await;
    let mut messages = vec![json!({"role": "user", "content": "tool: shout {\"text\": \"kept\"}"})];
    let request = |messages: &Vec<Value>| json!({"model": "composer-2.5", "messages": messages, "tools": shout_tool()});
    let (status, body) = post(&h, &request(&messages)).await;
    assert_eq!(status, 200, "{body}");
    let call = body["choices"][0]["message"]["tool_calls"][0].clone();
    messages.push(body["choices"][0]["message"].clone());

    // The result names a call id nobody made: a 400, and the waiting Run is not touched.
    let mut wrong = messages.clone();
    wrong.push(json!({"role": "tool", "tool_call_id": "not-a-call", "content": "KEPT"}));
    let (status, body) = post(&h, &request(&wrong)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "unknown_tool_call_id");

    messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": "KEPT"}));
    let (status, body) = post(&h, &request(&messages)).await;
    assert_eq!(status, 200, "{body}");
    assert!(answer(&body).contains("KEPT"));
    assert_eq!(
        h.replica.runs().len(),
        1,
        "the tool result still went onto the waiting Run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_resume_rebuilds_once_and_the_stream_carries_only_the_rebuilt_answer() {
    let h = start_with(None, None).await;
    let mut messages = vec![json!({"role": "user", "content": "remember KIWI-3"})];
    let (_, body) = post(&h, &json!({"model": "composer-2.5", "messages": messages})).await;
    messages.push(body["choices"][0]["message"].clone());
    messages.push(json!({"role": "user", "content": "what did I ask you to remember?"}));
    h.replica.script(Script::BlobMiss);
    let (status, events, done) = post_stream(
        &h,
        &json!({"model": "composer-2.5", "stream": true, "messages": messages}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(done);
    let text = streamed_text(&events);
    assert_eq!(text, "You asked me to remember: KIWI-3.", "{events:?}");
    let labels: Vec<String> = h.replica.runs().iter().map(|r| r.label.clone()).collect();
    assert_eq!(
        labels.last().map(String::as_str),
        Some("agent-rebuild"),
        "{labels:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_max_sessions_idle_conversations_are_dropped_and_resume_from_their_handles() {
    let replica = Replica::start().await.unwrap();
    let mut limits = Limits::DEFAULT;
    limits.max_conversations = 2;
    let h = start_keyed(replica, &[], limits).await;
    let request = |messages: &Vec<Value>| json!({"model": "composer-2.5", "messages": messages, "tools": shout_tool()});
    // A waits for a tool result: it must survive the eviction.
    let mut waiting = vec![json!({"role": "user", "content": "tool: shout {\"text\": \"held\"}"})];
    let (_, body) = post(&h, &request(&waiting)).await;
    let call = body["choices"][0]["message"]["tool_calls"][0].clone();
    waiting.push(body["choices"][0]["message"].clone());
    // B is idle after its answer.
    let mut idle = vec![json!({"role": "user", "content": "remember EMU-1"})];
    let (_, body) = post(&h, &request(&idle)).await;
    idle.push(body["choices"][0]["message"].clone());
    // C is the third conversation: B is dropped, A is kept.
    let (status, _) = post(
        &h,
        &request(&vec![json!({"role": "user", "content": "ping"})]),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        h.gateway.conversations(),
        2,
        "the idle conversation was dropped"
    );

    waiting.push(json!({"role": "tool", "tool_call_id": call["id"], "content": "HELD"}));
    let (status, body) = post(&h, &request(&waiting)).await;
    assert_eq!(status, 200, "{body}");
    assert!(answer(&body).contains("HELD"));
    assert_eq!(
        h.replica.runs().len(),
        3,
        "A's tool result continued its waiting Run"
    );

    idle.push(json!({"role": "user", "content": "what did I ask you to remember?"}));
    let (status, body) = post(&h, &request(&idle)).await;
    assert_eq!(status, 200, "{body}");
    assert!(answer(&body).contains("EMU-1"));
    let runs = h.replica.runs();
    assert_eq!(
        runs.last().unwrap().label,
        "agent-resume",
        "B resumed from its handle: {runs:?}"
    );
}
