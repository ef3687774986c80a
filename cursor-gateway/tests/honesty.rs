//! Request fields honoured, or refused by name: previous_response_id, response formats,
//! output limits, stop sequences.

mod common;

use common::*;
use cursor_agent::testing::Replica;
use serde_json::{Value, json};

/// A harness whose gateway takes two client keys, `k1` and `k2`.
async fn start_two_keys() -> Harness {
    start_keyed(
        Replica::start().await.unwrap(),
        &["k1", "k2"],
        cursor_gateway::Limits::DEFAULT,
    )
    .await
}

async fn respond(h: &Harness, body: &Value, key: Option<&str>) -> (u16, Value) {
    let (status, text) = http(h, "POST", "/v1/responses", &body.to_string(), key).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")),
    )
}

async fn chat_with(h: &Harness, body: &Value, key: Option<&str>) -> (u16, Value) {
    let (status, text) = http(h, "POST", "/v1/chat/completions", &body.to_string(), key).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn previous_response_id_resumes_the_stored_conversation() {
    let h = start_with(None, None).await;
    let (status, first) = respond(
        &h,
        &json!({"model": "composer-2.5", "instructions": "be terse", "input": "remember KOALA-3"}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let id = first["id"].as_str().unwrap();
    assert!(h.state.path().join(format!("responses/{id}.json")).exists());
    let (status, second) = respond(
        &h,
        &json!({"model": "composer-2.5", "previous_response_id": id,
                "input": "what did I ask you to remember?"}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert!(
        second["output_text"].as_str().unwrap().contains("KOALA-3"),
        "{second}"
    );
    let runs = h.replica.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[1].label, "agent-resume", "{runs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn previous_response_id_is_a_400_when_unknown_of_another_key_or_not_stored() {
    let h = start_two_keys().await;
    let ask = |previous: &str| json!({"model": "composer-2.5", "previous_response_id": previous, "input": "ping"});
    let (status, body) = respond(&h, &ask("resp-nope"), Some("k1")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "previous_response_id", "{body}");

    let (status, stored) = respond(
        &h,
        &json!({"model": "composer-2.5", "input": "ping"}),
        Some("k1"),
    )
    .await;
    assert_eq!(status, 200, "{stored}");
    let (status, body) = respond(&h, &ask(stored["id"].as_str().unwrap()), Some("k2")).await;
    assert_eq!(status, 400, "another key's response: {body}");
    assert_eq!(body["error"]["param"], "previous_response_id");
    let (status, _) = respond(&h, &ask(stored["id"].as_str().unwrap()), Some("k1")).await;
    assert_eq!(status, 200, "the same key continues it");

    let (status, unstored) = respond(
        &h,
        &json!({"model": "composer-2.5", "input": "ping", "store": false}),
        Some("k1"),
    )
    .await;
    assert_eq!(status, 200, "{unstored}");
    let id = unstored["id"].as_str().unwrap();
    assert!(!h.state.path().join(format!("responses/{id}.json")).exists());
    let (status, body) = respond(&h, &ask(id), Some("k1")).await;
    assert_eq!(status, 400, "a store:false response: {body}");
    assert_eq!(body["error"]["param"], "previous_response_id");
}

fn schema_format() -> Value {
    json!({"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": {
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]
    }}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_schema_reply_that_matches_is_answered_on_the_first_try() {
    let h = start_with(None, None).await;
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "response_format": schema_format(),
                "messages": [{"role": "user", "content": "say: {\"n\": 7}"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(answer(&body), "{\"n\": 7}");
    assert_eq!(h.replica.runs().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_reply_gets_one_corrective_turn_then_the_valid_one() {
    let h = start_with(None, None).await;
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "response_format": schema_format(),
                "messages": [{"role": "user", "content": "say: sure, here it is\nthen: {\"n\": 2}"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(answer(&body), "{\"n\": 2}");
    let runs = h.replica.runs();
    assert_eq!(runs.len(), 2, "one corrective turn: {runs:?}");
    assert_eq!(
        runs[1].label, "agent-resume",
        "in the same conversation: {runs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_still_invalid_after_the_correction_is_a_classified_502() {
    let h = start_with(None, None).await;
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "response_format": schema_format(),
                "messages": [{"role": "user", "content": "say: nope\nthen: {\"n\": \"two\"}"}]}),
    )
    .await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "invalid_model_output");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("schema"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_json_object_reply_is_checked_then_sent_whole() {
    let h = start_with(None, None).await;
    let (status, events, done) = post_stream(
        &h,
        &json!({"model": "composer-2.5", "stream": true, "response_format": {"type": "json_object"},
                "messages": [{"role": "user", "content": "say: {\"ok\": true}"}]}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(done);
    assert_eq!(streamed_text(&events), "{\"ok\": true}");
    assert_eq!(finish_reasons(&events), [&json!("stop")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_tokens_cuts_the_reply_with_finish_reason_length() {
    let h = start_with(None, None).await;
    let long = "say: one two three four five six seven eight nine ten eleven twelve";
    for field in ["max_tokens", "max_completion_tokens"] {
        let (status, body) = post(
            &h,
            &json!({"model": "composer-2.5", field: 3,
                    "messages": [{"role": "user", "content": long}]}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["choices"][0]["finish_reason"], "length", "{body}");
        assert_eq!(answer(&body), "one two thre", "3 tokens of 4 bytes");
    }
    let (status, events, done) = post_stream(
        &h,
        &json!({"model": "composer-2.5", "max_tokens": 3, "stream": true,
                "messages": [{"role": "user", "content": long}]}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(done);
    assert_eq!(streamed_text(&events), "one two thre");
    assert_eq!(finish_reasons(&events), [&json!("length")]);

    let (status, body) = respond(
        &h,
        &json!({"model": "composer-2.5", "max_output_tokens": 2, "input": long}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "incomplete");
    assert_eq!(body["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(body["output_text"], "one two ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_sequences_end_the_text_before_them_streamed_or_not() {
    let h = start_with(None, None).await;
    let said = "say: alpha beta gamma delta";
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "stop": ["zzz", "gamma"],
                "messages": [{"role": "user", "content": said}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(answer(&body), "alpha beta ");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");

    // "a g" spans two of the replica's word deltas ("beta ", "gamma ").
    let (status, events, done) = post_stream(
        &h,
        &json!({"model": "composer-2.5", "stop": "a g", "stream": true,
                "messages": [{"role": "user", "content": said}]}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(done);
    assert_eq!(streamed_text(&events), "alpha bet");
    assert_eq!(finish_reasons(&events), [&json!("stop")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_that_cannot_be_honoured_are_400s_naming_them() {
    let h = start_with(None, None).await;
    let cases = [
        (json!({"logprobs": true}), "logprobs"),
        (json!({"audio": {"voice": "x", "format": "mp3"}}), "audio"),
        (json!({"modalities": ["text", "audio"]}), "modalities"),
        (
            json!({"prediction": {"type": "content", "content": "x"}}),
            "prediction",
        ),
    ];
    for (extra, param) in cases {
        let mut body =
            json!({"model": "composer-2.5", "messages": [{"role": "user", "content": "ping"}]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let (status, answer) = chat_with(&h, &body, None).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"]["param"], param, "{answer}");
    }
    // Ignored: they do not change what the answer means.
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "temperature": 0.2, "top_p": 0.9, "seed": 4,
                "presence_penalty": 0.1, "frequency_penalty": 0.1, "metadata": {"a": "b"},
                "parallel_tool_calls": false, "service_tier": "auto", "user": "u",
                "messages": [{"role": "user", "content": "ping"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = respond(
        &h,
        &json!({"model": "composer-2.5", "input": "ping", "conversation": "conv_1"}),
        None,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "conversation");
}

/// The `type` and `response` of each event of a streamed Responses answer.
async fn respond_stream(h: &Harness, body: &Value) -> (u16, Vec<Value>) {
    let (status, text) = http(h, "POST", "/v1/responses", &body.to_string(), None).await;
    let events = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    (status, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_response_is_stored_and_a_streamed_limit_ends_incomplete() {
    let h = start_with(None, None).await;
    let (status, events) = respond_stream(
        &h,
        &json!({"model": "composer-2.5", "stream": true, "input": "remember EMU-4"}),
    )
    .await;
    assert_eq!(status, 200);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.completed", "{last}");
    let id = last["response"]["id"].as_str().unwrap();
    let (status, body) = respond(
        &h,
        &json!({"model": "composer-2.5", "previous_response_id": id,
                "input": "what did I ask you to remember?"}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["output_text"].as_str().unwrap().contains("EMU-4"));
    assert_eq!(h.replica.runs()[1].label, "agent-resume");

    let (status, events) = respond_stream(
        &h,
        &json!({"model": "composer-2.5", "stream": true, "max_output_tokens": 2,
                "input": "say: one two three four"}),
    )
    .await;
    assert_eq!(status, 200);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.incomplete", "{last}");
    assert_eq!(last["response"]["status"], "incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(text, "one two ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_json_reply_is_recorded_as_the_client_got_it_so_the_next_turn_resumes() {
    let h = start_with(None, None).await;
    let mut messages = vec![json!({"role": "user", "content": "say: ```json\n{\"n\": 1}\n```"})];
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "response_format": {"type": "json_object"}, "messages": messages}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(answer(&body), "{\"n\": 1}", "the fence is dropped");
    messages.push(body["choices"][0]["message"].clone());
    messages.push(json!({"role": "user", "content": "say: {\"n\": 5}"}));
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "response_format": {"type": "json_object"}, "messages": messages}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let runs = h.replica.runs();
    assert_eq!(runs.last().unwrap().label, "agent-resume", "{runs:?}");
    assert_eq!(h.gateway.rebuilt_turns(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_corrective_turn_the_next_turn_resumes_the_conversation_that_holds_it() {
    let h = start_with(None, None).await;
    let mut messages =
        vec![json!({"role": "user", "content": "say: sure, here it is\nthen: {\"n\": 2}"})];
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "response_format": schema_format(), "messages": messages}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(answer(&body), "{\"n\": 2}");
    messages.push(body["choices"][0]["message"].clone());
    messages.push(json!({"role": "user", "content": "say: {\"n\": 3}"}));
    let (status, body) = post(
        &h,
        &json!({"model": "composer-2.5", "response_format": schema_format(), "messages": messages}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let runs = h.replica.runs();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(runs[2].label, "agent-resume", "{runs:?}");
    assert_eq!(
        runs[2].conversation_id, runs[1].conversation_id,
        "the remote conversation that holds the corrected reply, not a branch of an earlier turn"
    );
    assert_eq!(h.gateway.rebuilt_turns(), 0);
}
