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
