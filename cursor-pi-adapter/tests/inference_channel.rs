//! The inference channel end to end against cursor-inference's loopback RunInference replica.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cursor_agent::session::DebugSink;

use cursor_catalog::CatalogStore;
use cursor_inference::testing::{Replica, ReplicaServer, Script, WireShape};
use cursor_pi_adapter::provider::{
    AbortSignal, Channel, ChannelKind, InferenceChannel, Provider, Spawner, pi_would_retry,
};
use cursor_proto::aiserver::v1::InferenceMessageRole;
use cursor_transport::{Client, IdeIdentity};
use serde_json::{Value, json};

const MODEL: &str = r#"{"id": "composer-2.5", "name": "Composer 2.5", "api": "cursor-agent",
    "provider": "cursor", "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}"#;
const OPTIONS: &str = r#"{"sessionId": "session-1", "apiKey": "replica-token"}"#;

fn tokio_spawner() -> Spawner {
    Arc::new(|task| {
        tokio::spawn(task);
    })
}

struct Fixture {
    replica: ReplicaServer,
    provider: Provider,
}

async fn fixture() -> Fixture {
    let replica = Replica::start().await.unwrap();
    let channel = InferenceChannel::new(
        Client::new().unwrap(),
        replica.origin(),
        IdeIdentity::new("a".repeat(64), "b".repeat(64)),
        CatalogStore::from_static().catalog().clone(),
        tokio_spawner(),
    );
    let provider = Provider::select(
        Ok(ChannelKind::Inference),
        no_agent,
        || -> Arc<dyn Channel> { Arc::new(channel) },
    );
    Fixture { replica, provider }
}

/// The agent channel of a provider whose choice is inference: never built.
fn no_agent() -> Arc<dyn Channel> {
    unreachable!("the inference choice never builds the agent channel")
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0})
}

fn context(messages: Vec<Value>) -> String {
    let mut all = vec![json!({
        "role": "system", "content": "You are terse.", "timestamp": 0,
        "toolsAdded": [{"name": "echo", "description": "Echo the text back",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}],
    })];
    all.extend(messages);
    json!({ "messages": all }).to_string()
}

async fn turn(provider: &Provider, context: &str) -> Vec<Value> {
    let mut events = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        provider.stream(MODEL, context, OPTIONS, AbortSignal::never(), |e| {
            events.push(e);
        }),
    )
    .await
    .expect("the turn ends");
    events
}

fn last(events: &[Value]) -> &Value {
    events.last().expect("an event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_is_answered_with_pong_on_the_inference_channel() {
    let f = fixture().await;
    let events = turn(&f.provider, &context(vec![user("ping")])).await;
    let done = last(&events);
    assert_eq!(done["type"], "done", "{events:?}");
    assert_eq!(done["reason"], "stop");
    assert_eq!(done["message"]["content"][0]["text"], "pong");
    let requests = f.replica.replica().requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        request.messages[0].role,
        InferenceMessageRole::System as i32
    );
    assert_eq!(request.tools[0].name, "echo");
    // The bare slug of the catalog row, no effort variant.
    let model = request.requested_model.as_ref().unwrap();
    assert!(model.parameters.is_empty());
    assert!(!model.model_id.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_round_sends_the_result_as_a_tool_message_in_a_new_stream() {
    let f = fixture().await;
    let ask = user(r#"tool: echo {"text":"hi"}"#);
    let first = turn(&f.provider, &context(vec![ask.clone()])).await;
    let done = last(&first);
    assert_eq!(done["reason"], "toolUse", "{first:?}");
    let call = done["message"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|block| block["type"] == "toolCall")
        .expect("a tool call")
        .clone();
    assert_eq!(call["name"], "echo");
    assert_eq!(call["arguments"], json!({"text": "hi"}));

    let mut assistant = done["message"].clone();
    assistant["stopReason"] = json!("toolUse");
    let result = json!({"role": "toolResult", "toolCallId": call["id"], "toolName": "echo",
        "content": [{"type": "text", "text": "echoed: hi"}], "isError": false, "timestamp": 0});
    let second = turn(&f.provider, &context(vec![ask, assistant, result])).await;
    let done = last(&second);
    assert_eq!(done["reason"], "stop", "{second:?}");
    assert_eq!(done["message"]["content"][0]["text"], "got: echoed: hi");
    assert_eq!(
        f.replica.replica().requests().len(),
        2,
        "one stream per turn"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_is_an_auth_error_that_says_login_and_is_not_retried() {
    let f = fixture().await;
    f.replica.replica().set_fail_auth(true);
    let events = turn(&f.provider, &context(vec![user("ping")])).await;
    let error = last(&events);
    assert_eq!(error["type"], "error", "{events:?}");
    let text = error["error"]["errorMessage"].as_str().unwrap();
    assert!(text.contains("/login cursor"), "{text}");
    assert!(!pi_would_retry(text), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_error_ends_the_turn_with_its_classified_text() {
    let f = fixture().await;
    f.replica.replica().script(Script::StreamError {
        text: String::new(),
        error_type: 8,
        message: "blocked by the content filter".into(),
    });
    let events = turn(&f.provider, &context(vec![user("ping")])).await;
    let error = last(&events);
    assert_eq!(error["type"], "error", "{events:?}");
    let text = error["error"]["errorMessage"].as_str().unwrap();
    assert!(text.contains("content filter"), "{text}");
    assert!(text.contains("rephrase"), "{text}");
}

/// Keeps every debug record in memory.
#[derive(Debug, Default)]
struct Records(Mutex<Vec<Value>>);

impl DebugSink for Records {
    fn record(&self, record: &Value) {
        self.0.lock().unwrap().push(record.clone());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resolved_model_reaches_pi_and_the_debug_record_and_its_absence_is_recorded() {
    for (shape, resolved) in [
        (WireShape::Live, Some("composer-2.5")),
        (WireShape::Older, None),
    ] {
        let replica = Replica::new();
        replica.set_shape(shape);
        let replica = replica
            .listen(cursor_transport::testing::TestServer::builder())
            .await
            .unwrap();
        let records = Arc::new(Records::default());
        let channel = InferenceChannel::new(
            Client::new().unwrap(),
            replica.origin(),
            IdeIdentity::new("a".repeat(64), "b".repeat(64)),
            CatalogStore::from_static().catalog().clone(),
            tokio_spawner(),
        )
        .with_debug(Arc::clone(&records) as Arc<dyn DebugSink>);
        let provider = Provider::select(
            Ok(ChannelKind::Inference),
            no_agent,
            || -> Arc<dyn Channel> { Arc::new(channel) },
        );
        let events = turn(&provider, &context(vec![user("ping")])).await;
        let done = last(&events);
        assert_eq!(done["reason"], "stop", "{shape:?}: {events:?}");
        assert_eq!(
            done["message"].get("responseModel").and_then(Value::as_str),
            resolved,
            "{shape:?}: {done}"
        );
        // The record is written once the driver task ends, just after the last event.
        let record = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Some(record) = records.0.lock().unwrap().first().cloned() {
                    return record;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("a debug record");
        assert_eq!(record["event"], "inferenceTurn");
        assert_eq!(record["requestedModel"], "composer-2.5");
        assert_eq!(record["resolvedModel"].as_str(), resolved, "{shape:?}");
        assert!(record["failed"].is_null(), "{record}");
    }
}

/// A replica beside loopback `/oauth/token` (always grants) and `/auth/exchange_user_api_key`
/// (keys naming `good`), counting both.
struct AuthFixture {
    replica: ReplicaServer,
    refreshes: Arc<std::sync::atomic::AtomicUsize>,
    exchanges: Arc<std::sync::atomic::AtomicUsize>,
    provider: Provider,
}

async fn auth_fixture() -> AuthFixture {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let refreshes = Arc::new(AtomicUsize::new(0));
    let exchanges = Arc::new(AtomicUsize::new(0));
    let (refreshed, exchanged) = (Arc::clone(&refreshes), Arc::clone(&exchanges));
    let respond = |code: u16, body: &'static str| {
        http::Response::builder()
            .status(code)
            .header("content-type", "application/json")
            .body(bytes::Bytes::from_static(body.as_bytes()))
            .unwrap()
    };
    let builder = cursor_transport::testing::TestServer::builder().handler(move |request| {
        match request.uri().path() {
            "/oauth/token" => {
                refreshed.fetch_add(1, Ordering::AcqRel);
                respond(200, r#"{"access_token":"fresh-access"}"#)
            }
            "/auth/exchange_user_api_key" => {
                let bearer = request.headers()["authorization"].to_str().unwrap();
                if !bearer.starts_with("Bearer crsr_good") {
                    return respond(401, r#"{"error":"invalid user api key"}"#);
                }
                exchanged.fetch_add(1, Ordering::AcqRel);
                respond(200, r#"{"accessToken":"exchanged-access"}"#)
            }
            _ => respond(404, "{}"),
        }
    });
    let replica = Replica::new().listen(builder).await.unwrap();
    let client = Client::new().unwrap();
    let oauth = cursor_pi_adapter::provider::CursorOAuth::with_config(
        Arc::new(client.clone()),
        Arc::new(cursor_transport::TokioClock),
        cursor_pi_adapter::provider::auth_config(&replica.origin()),
    );
    let channel = InferenceChannel::new(
        client,
        replica.origin(),
        IdeIdentity::new("a".repeat(64), "b".repeat(64)),
        CatalogStore::from_static().catalog().clone(),
        tokio_spawner(),
    )
    .with_token_refresh(oauth);
    let provider = Provider::select(
        Ok(ChannelKind::Inference),
        no_agent,
        || -> Arc<dyn Channel> { Arc::new(channel) },
    );
    AuthFixture {
        replica,
        refreshes,
        exchanges,
        provider,
    }
}

async fn turn_with(provider: &Provider, options: &str) -> Vec<Value> {
    let mut events = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        provider.stream(
            MODEL,
            &context(vec![user("ping")]),
            options,
            AbortSignal::never(),
            |e| {
                events.push(e);
            },
        ),
    )
    .await
    .expect("the turn ends");
    events
}

fn count(counter: &std::sync::atomic::AtomicUsize) -> usize {
    counter.load(std::sync::atomic::Ordering::Acquire)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_before_anything_streamed_is_refreshed_and_replayed_exactly_once() {
    let f = auth_fixture().await;
    f.replica.replica().fail_auth_next(1);
    let options = r#"{"sessionId": "s", "apiKey": "stale-access", "refreshToken": "stored"}"#;
    let events = turn_with(&f.provider, options).await;
    let done = last(&events);
    assert_eq!(done["type"], "done", "{events:?}");
    assert_eq!(done["message"]["content"][0]["text"], "pong");
    assert_eq!(f.replica.replica().calls(), 2);
    assert_eq!(count(&f.refreshes), 1);

    // Refused again after the refresh: the auth error, after one refresh and one replay.
    let f = auth_fixture().await;
    f.replica.replica().set_fail_auth(true);
    let events = turn_with(&f.provider, options).await;
    let error = last(&events);
    assert_eq!(error["type"], "error", "{events:?}");
    let text = error["error"]["errorMessage"].as_str().unwrap();
    assert!(text.starts_with("auth error: "), "{text}");
    assert!(!pi_would_retry(text), "{text}");
    assert_eq!(f.replica.replica().calls(), 2);
    assert_eq!(count(&f.refreshes), 1);

    // No refresh token: the 401 stands, no replay.
    let f = auth_fixture().await;
    f.replica.replica().fail_auth_next(1);
    let events = turn_with(
        &f.provider,
        r#"{"sessionId": "s", "apiKey": "stale-access"}"#,
    )
    .await;
    assert_eq!(last(&events)["type"], "error", "{events:?}");
    assert_eq!(f.replica.replica().calls(), 1);
    assert_eq!(count(&f.refreshes), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_api_key_is_exchanged_and_exchanged_again_after_a_401_on_the_inference_channel() {
    let f = auth_fixture().await;
    f.replica.replica().fail_auth_next(1);
    let options = r#"{"sessionId": "s", "apiKey": "crsr_good_inference"}"#;
    let events = turn_with(&f.provider, options).await;
    assert_eq!(last(&events)["type"], "done", "{events:?}");
    assert_eq!(f.replica.replica().calls(), 2);
    assert_eq!(count(&f.exchanges), 2);
    assert_eq!(count(&f.refreshes), 0);
    // The key itself never reached RunInference as a bearer token: a refused key ends the
    // turn before any call.
    let events = turn_with(
        &f.provider,
        r#"{"sessionId": "s", "apiKey": "crsr_refused"}"#,
    )
    .await;
    assert_eq!(last(&events)["type"], "error", "{events:?}");
    assert_eq!(f.replica.replica().calls(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_runs_in_max_mode_only_is_requested_with_max_mode() {
    // A catalog snapshot with one family that requires max mode and one that only offers it.
    let row = |id: &str, max_mode: &str| {
        json!({"id": id, "name": id, "reasoning": false, "input": ["text"],
            "contextWindow": 200000, "maxTokens": 64000, "maxMode": max_mode,
            "thinkingLevels": {}, "defaultSlug": id, "slugs": [id]})
    };
    let snapshot = json!({"version": 1, "fetchedAtMs": 1, "catalog": {"rows": [
        row("max-only", "required"), row("max-optional", "optional")
    ]}});
    // (A version-1 snapshot is healed with a warning; the rows stand.)
    let (store, _warnings) = CatalogStore::restore(Some(&snapshot.to_string()));
    let replica = Replica::start().await.unwrap();
    let channel = InferenceChannel::new(
        Client::new().unwrap(),
        replica.origin(),
        IdeIdentity::new("a".repeat(64), "b".repeat(64)),
        store.catalog().clone(),
        tokio_spawner(),
    );
    let provider = Provider::select(
        Ok(ChannelKind::Inference),
        no_agent,
        || -> Arc<dyn Channel> { Arc::new(channel) },
    );
    for id in ["max-only", "max-optional"] {
        let model = MODEL.replace("composer-2.5", id);
        let mut events = Vec::new();
        tokio::time::timeout(
            Duration::from_secs(20),
            provider.stream(
                &model,
                &context(vec![user("ping")]),
                OPTIONS,
                AbortSignal::never(),
                |e| events.push(e),
            ),
        )
        .await
        .expect("the turn ends");
        assert_eq!(last(&events)["type"], "done", "{id}: {events:?}");
    }
    let requests = replica.replica().requests();
    let max_modes: Vec<(String, bool)> = requests
        .iter()
        .map(|request| {
            let model = request.requested_model.as_ref().unwrap();
            (model.model_id.clone(), model.max_mode)
        })
        .collect();
    assert_eq!(
        max_modes,
        [
            ("max-only".to_owned(), true),
            ("max-optional".to_owned(), false)
        ]
    );
}
