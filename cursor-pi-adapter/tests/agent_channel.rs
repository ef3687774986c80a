//! The agent channel end to end against cursor-agent's loopback replica of the backend.

use std::sync::Arc;
use std::time::Duration;

use cursor_agent::testing::{ModelIdForm, Replica, ReplicaServer, Script};
use cursor_agent::{HandleStore, Loaded};
use cursor_catalog::CatalogStore;
use cursor_pi_adapter::provider::{
    AbortSignal, AgentChannel, ChannelKind, Provider, Sessions, Spawner, abort_pair, pi_would_retry,
};
use cursor_transport::Client;
use serde_json::{Value, json};

const MODEL: &str = r#"{"id": "composer-2.5", "name": "Composer 2.5", "api": "cursor-agent",
    "provider": "cursor", "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}"#;

fn tokio_spawner() -> Spawner {
    Arc::new(|task| {
        tokio::spawn(task);
    })
}

struct Fixture {
    replica: ReplicaServer,
    sessions: Sessions,
    provider: Provider,
}

async fn fixture() -> Fixture {
    let replica = Replica::start().await.unwrap();
    let sessions = Sessions::new();
    let channel = AgentChannel::new(
        Client::new().unwrap(),
        replica.origin(),
        CatalogStore::from_static().catalog().clone(),
        "file:///work",
        sessions.clone(),
        tokio_spawner(),
    );
    let provider = Provider::select(Ok(ChannelKind::Agent), || Arc::new(channel), no_inference);
    Fixture {
        replica,
        sessions,
        provider,
    }
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0})
}

/// pi ≥ 0.86's context: a system message carrying the prompt and the `echo` tool.
fn context(messages: Vec<Value>) -> String {
    let mut all = vec![json!({
        "role": "system", "content": "You are terse.", "timestamp": 0,
        "toolsAdded": [{"name": "echo", "description": "Echo the text back",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}],
    })];
    all.extend(messages);
    json!({ "messages": all }).to_string()
}

const OPTIONS: &str = r#"{"sessionId": "session-1", "apiKey": "replica-token"}"#;

async fn turn(provider: &Provider, context: &str, abort: AbortSignal) -> Vec<Value> {
    let mut events = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        provider.stream(MODEL, context, OPTIONS, abort, |e| events.push(e)),
    )
    .await
    .expect("the turn ends");
    events
}

fn last(events: &[Value]) -> &Value {
    events.last().expect("an event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_turn_streams_the_replica_answer_to_pi() {
    let f = fixture().await;
    let events = turn(
        &f.provider,
        &context(vec![user("ping")]),
        AbortSignal::never(),
    )
    .await;
    let done = last(&events);
    assert_eq!(done["type"], "done", "{events:?}");
    assert_eq!(done["reason"], "stop");
    assert_eq!(done["message"]["content"][0]["text"], "pong");
    assert_eq!(events[0]["type"], "start");
    assert_eq!(f.replica.runs().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_round_continues_on_the_same_run() {
    let f = fixture().await;
    let first = turn(
        &f.provider,
        &context(vec![user(r#"tool: echo {"text":"hi"}"#)]),
        AbortSignal::never(),
    )
    .await;
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
    assert_eq!(f.sessions.waiting(), 1, "the run waits for the result");

    // pi ran the tool and calls again with the result at the end of the transcript.
    let mut assistant = done["message"].clone();
    assistant["stopReason"] = json!("toolUse");
    let result = json!({"role": "toolResult", "toolCallId": call["id"], "toolName": "echo",
        "content": [{"type": "text", "text": "echoed: hi"}], "isError": false, "timestamp": 0});
    let second = turn(
        &f.provider,
        &context(vec![user(r#"tool: echo {"text":"hi"}"#), assistant, result]),
        AbortSignal::never(),
    )
    .await;
    let done = last(&second);
    assert_eq!(done["reason"], "stop", "{second:?}");
    let text = done["message"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("echoed: hi"), "{text}");
    assert_eq!(f.sessions.waiting(), 0);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(f.replica.runs().len(), 1, "one Run served both legs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_login_reaches_pi_as_an_auth_error_it_does_not_retry() {
    let f = fixture().await;
    f.replica.script(Script::Unauthenticated);
    let events = turn(
        &f.provider,
        &context(vec![user("ping")]),
        AbortSignal::never(),
    )
    .await;
    let error = last(&events);
    assert_eq!(error["type"], "error", "{events:?}");
    let text = error["error"]["errorMessage"].as_str().unwrap();
    assert!(text.starts_with("auth error: "), "{text}");
    assert!(text.contains("/login cursor"), "{text}");
    assert!(!pi_would_retry(text), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_frame_is_a_protocol_drift_error() {
    let f = fixture().await;
    f.replica.script(Script::MalformedFrame);
    let events = turn(
        &f.provider,
        &context(vec![user("ping")]),
        AbortSignal::never(),
    )
    .await;
    let text = last(&events)["error"]["errorMessage"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.starts_with("protocol_drift error: "), "{text}");
    assert!(!pi_would_retry(&text), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_a_silent_run_ends_the_turn_as_aborted() {
    let f = fixture().await;
    f.replica.script(Script::Silent);
    let (handle, signal) = abort_pair();
    let provider = f.provider.clone();
    let running = tokio::spawn(async move {
        let mut events = Vec::new();
        provider
            .stream(MODEL, &context(vec![user("ping")]), OPTIONS, signal, |e| {
                events.push(e);
            })
            .await;
        events
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    handle.abort();
    let events = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("abort ends the turn")
        .unwrap();
    assert_eq!(last(&events)["reason"], "aborted", "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_login_fails_before_any_request() {
    let f = fixture().await;
    let mut events = Vec::new();
    f.provider
        .stream(
            MODEL,
            &context(vec![user("ping")]),
            r#"{"sessionId": "s"}"#,
            AbortSignal::never(),
            |e| events.push(e),
        )
        .await;
    let text = last(&events)["error"]["errorMessage"].as_str().unwrap();
    assert!(
        text.starts_with("auth error: no Cursor credentials"),
        "{text}"
    );
    assert!(f.replica.runs().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_model_is_a_classified_error_naming_it() {
    let f = fixture().await;
    let model = MODEL.replace("composer-2.5", "no-such-model");
    let mut events = Vec::new();
    f.provider
        .stream(
            &model,
            &context(vec![user("ping")]),
            OPTIONS,
            AbortSignal::never(),
            |e| events.push(e),
        )
        .await;
    let text = last(&events)["error"]["errorMessage"].as_str().unwrap();
    assert!(text.contains("no-such-model"), "{text}");
}

/// The static catalog lists `grok-4.7-{low,medium,high}`; a server that takes only the bare id
/// costs one refused Run, and pi sees only the answer (PROTOCOL-AGENT §13.7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_suffixed_catalog_entry_is_retried_with_the_bare_id_the_server_takes() {
    let f = fixture().await;
    f.replica
        .set_model_id_form("grok-4.7", ModelIdForm::BareOnly);
    let model = MODEL.replace("composer-2.5", "grok-4.7");
    let options = r#"{"sessionId": "session-1", "apiKey": "replica-token", "reasoning": "high"}"#;
    let mut events = Vec::new();
    f.provider
        .stream(
            &model,
            &context(vec![user("ping")]),
            options,
            AbortSignal::never(),
            |e| events.push(e),
        )
        .await;
    let done = last(&events);
    assert_eq!(done["type"], "done", "{events:?}");
    assert_eq!(done["message"]["content"][0]["text"], "pong");
    let runs: Vec<(String, String)> = f
        .replica
        .runs()
        .into_iter()
        .map(|run| (run.model, run.outcome))
        .collect();
    assert_eq!(
        runs,
        [
            ("grok-4.7-high".to_owned(), "model-not-found".to_owned()),
            ("grok-4.7".to_owned(), "completed".to_owned())
        ]
    );
}

/// Neither form served: pi is told to pick a model its list has, with the list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_served_in_neither_form_names_the_catalog_models() {
    let f = fixture().await;
    f.replica.script(Script::NotFound);
    f.replica.script(Script::NotFound);
    let mut events = Vec::new();
    f.provider
        .stream(
            MODEL,
            &context(vec![user("ping")]),
            OPTIONS,
            AbortSignal::never(),
            |e| events.push(e),
        )
        .await;
    let text = last(&events)["error"]["errorMessage"].as_str().unwrap();
    assert!(
        text.contains("grok-4.7") && text.contains("gemini-3-pro"),
        "{text}"
    );
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}],
        "api": "cursor-agent", "provider": "cursor", "model": "composer-2.5",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": 0})
}

/// A provider on `replica` as a new process would build it: fresh sessions, the shared store.
fn process(replica: &ReplicaServer, store: &HandleStore) -> Provider {
    provider_with(replica, |channel| channel.with_handle_store(store.clone()))
}

/// A provider on `replica` with fresh sessions and the channel `configure` returns.
fn provider_with(
    replica: &ReplicaServer,
    configure: impl FnOnce(AgentChannel) -> AgentChannel,
) -> Provider {
    let channel = configure(AgentChannel::new(
        Client::new().unwrap(),
        replica.origin(),
        CatalogStore::from_static().catalog().clone(),
        "file:///work",
        Sessions::new(),
        tokio_spawner(),
    ));
    Provider::select(Ok(ChannelKind::Agent), || Arc::new(channel), no_inference)
}

async fn wait_for_handle(store: &HandleStore, session: &str) {
    for _ in 0..200 {
        if matches!(store.load(session), Ok(Loaded::Found(_))) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no handle was stored for {session}");
}

const FACT: &str = "remember the pass phrase XK-PLATYPUS-77 / 林蓓";
const RECALL: &str = "what did I ask you to remember?";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_process_resumes_the_remote_conversation_without_replaying_history() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());

    let first = turn(
        &process(&replica, &store),
        &context(vec![user(FACT)]),
        AbortSignal::never(),
    )
    .await;
    assert_eq!(last(&first)["reason"], "stop", "{first:?}");
    wait_for_handle(&store, "session-1").await;

    let ack = last(&first)["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = turn(
        &process(&replica, &store),
        &context(vec![user(FACT), assistant(&ack), user(RECALL)]),
        AbortSignal::never(),
    )
    .await;
    let answer = last(&second)["message"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(answer.contains("XK-PLATYPUS-77 / 林蓓"), "{answer}");

    let runs = replica.runs();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].label, "agent-resume", "{runs:?}");
    assert_eq!(runs[1].conversation_id, runs[0].conversation_id);
    assert!(!runs[1].history_replayed, "{runs:?}");
    assert!(
        runs[1]
            .root_prompt_user_texts
            .iter()
            .all(|t| !t.contains("XK-PLATYPUS")),
        "{runs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_history_rebuilds_a_new_conversation_from_the_transcript() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());
    let first = turn(
        &process(&replica, &store),
        &context(vec![user(FACT)]),
        AbortSignal::never(),
    )
    .await;
    assert_eq!(last(&first)["reason"], "stop");
    wait_for_handle(&store, "session-1").await;

    // The user rewrote the earlier turn: the stored handle no longer matches.
    let edited = "remember the door is blue";
    let second = turn(
        &process(&replica, &store),
        &context(vec![user(edited), assistant("OK."), user(RECALL)]),
        AbortSignal::never(),
    )
    .await;
    let answer = last(&second)["message"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(answer.contains("the door is blue"), "{answer}");
    assert!(!answer.contains("XK-PLATYPUS"), "{answer}");
    let runs = replica.runs();
    assert_eq!(runs[1].label, "agent-rebuild", "{runs:?}");
    assert_ne!(runs[1].conversation_id, runs[0].conversation_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_the_backend_forgot_is_rebuilt_once_within_the_same_turn() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());
    let first = turn(
        &process(&replica, &store),
        &context(vec![user(FACT)]),
        AbortSignal::never(),
    )
    .await;
    wait_for_handle(&store, "session-1").await;
    let ack = last(&first)["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    replica.forget(&replica.runs()[0].conversation_id);

    let second = turn(
        &process(&replica, &store),
        &context(vec![user(FACT), assistant(&ack), user(RECALL)]),
        AbortSignal::never(),
    )
    .await;
    let done = last(&second);
    assert_eq!(done["type"], "done", "{second:?}");
    let answer = done["message"]["content"][0]["text"].as_str().unwrap();
    assert!(answer.contains("XK-PLATYPUS-77"), "{answer}");
    let labels: Vec<String> = replica.runs().iter().map(|r| r.label.clone()).collect();
    assert_eq!(
        labels.last().map(String::as_str),
        Some("agent-rebuild"),
        "{labels:?}"
    );
}

/// The inference channel of a provider whose choice is agent: never built.
fn no_inference() -> Arc<dyn cursor_pi_adapter::provider::Channel> {
    unreachable!("the agent choice never builds the inference channel")
}

/// `CURSOR_PROVIDER_FIRST_TOKEN_MS` reaches every session's Runs: a silent server fails the
/// turn after the configured wait, not the 30 s default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_first_token_timeout_ends_a_silent_turn() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::Silent);
    let env = cursor_pi_adapter::provider::PiEnv::from_lookup(|name| {
        (name == cursor_pi_adapter::provider::FIRST_TOKEN_MS_ENV).then(|| "400".into())
    });
    let provider = provider_with(&replica, |channel| {
        channel.with_timers(env.timers().unwrap())
    });
    let events = turn(
        &provider,
        &context(vec![user("ping")]),
        AbortSignal::never(),
    )
    .await;
    let text = last(&events)["error"]["errorMessage"].as_str().unwrap();
    assert!(text.contains("no progress from Cursor for 400ms"), "{text}");
    assert!(text.contains("waiting for the first frame"), "{text}");
}

async fn turn_in(provider: &Provider, session: &str, context: &str) -> Vec<Value> {
    let options = json!({"sessionId": session, "apiKey": "replica-token"}).to_string();
    let mut events = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        provider.stream(MODEL, context, &options, AbortSignal::never(), |e| {
            events.push(e);
        }),
    )
    .await
    .expect("the turn ends");
    events
}

fn answer_of(events: &[Value]) -> String {
    last(events)["message"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{events:?}"))
        .to_owned()
}

/// pi's `/fork` at turn 3 of 6: a new process with a new `sessionId` whose transcript is the
/// first three turns plus new input resumes from the parent's turn-3 checkpoint (found through
/// the store's branch index) under a conversation id of its own, and the parent's handle keeps
/// its six turns (PROTOCOL-AGENT §10.1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_forked_at_turn_three_in_a_new_process_resumes_from_that_turn() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());
    let parent = process(&replica, &store);
    let mut messages = Vec::new();
    for ask in [
        "remember the alpha",
        "remember the bravo",
        "remember the charlie",
        "remember the delta",
        "remember the echo",
        RECALL,
    ] {
        messages.push(user(ask));
        let events = turn_in(&parent, "parent", &context(messages.clone())).await;
        messages.push(assistant(&answer_of(&events)));
    }
    let parent_handle = store.load("parent").unwrap().handle().unwrap();
    assert_eq!(parent_handle.turns(), 6);

    let fork = process(&replica, &store);
    let mut branch: Vec<Value> = messages[..6].to_vec();
    branch.push(user("remember the foxtrot"));
    let events = turn_in(&fork, "forked", &context(branch.clone())).await;
    branch.push(assistant(&answer_of(&events)));
    branch.push(user(RECALL));
    let events = turn_in(&fork, "forked", &context(branch)).await;
    assert_eq!(
        answer_of(&events),
        "You asked me to remember: the alpha; the bravo; the charlie; the foxtrot."
    );

    let runs = replica.runs();
    assert_eq!(runs.len(), 8);
    assert!(
        runs[1..]
            .iter()
            .all(|r| r.label == "agent-resume" && !r.history_replayed),
        "{runs:?}"
    );
    assert_ne!(runs[6].conversation_id, runs[5].conversation_id);
    // The parent's handle was not written by the fork.
    assert_eq!(
        store.load("parent").unwrap().handle().unwrap(),
        parent_handle
    );
    assert_eq!(store.load("forked").unwrap().handle().unwrap().turns(), 5);
}
