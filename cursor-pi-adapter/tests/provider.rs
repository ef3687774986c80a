//! Orchestration end to end: channel selection, streaming, abort, and the error text pi sees.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cursor_pi_adapter::provider::{
    AbortSignal, Channel, ChannelKind, Provider, Turn, abort_pair, pi_would_retry,
};
use cursor_proto::ir::{ErrorInfo, ErrorKind, Event, NextStep, StopReason};
use cursor_transport::CursorError;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::Value;

const MODEL: &str = r#"{"id": "composer-2.5", "name": "Composer 2.5", "api": "cursor-agent",
    "provider": "cursor", "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}"#;
const CONTEXT: &str = r#"{"messages": [
    {"role": "system", "content": "Be terse.", "timestamp": 0},
    {"role": "user", "content": [{"type": "text", "text": "ping"}], "timestamp": 0}]}"#;
const OPTIONS: &str = r#"{"sessionId": "0190-session", "apiKey": "token"}"#;

/// A channel that plays a script, records what it was asked, and notices being dropped.
#[derive(Debug, Default)]
struct Scripted {
    kind: ChannelKind,
    script: Vec<Step>,
    opened: AtomicUsize,
    last_turn: Mutex<Option<Turn>>,
    dropped: Arc<AtomicBool>,
}

#[derive(Clone, Debug)]
enum Step {
    Emit(Event),
    /// Never yields again (a model that is still thinking).
    Stall,
}

impl Scripted {
    fn new(script: Vec<Step>) -> Arc<Self> {
        Arc::new(Self {
            script,
            ..Self::default()
        })
    }

    fn inference(script: Vec<Step>) -> Arc<Self> {
        Arc::new(Self {
            kind: ChannelKind::Inference,
            script,
            ..Self::default()
        })
    }
}

/// The channel of a choice the test does not make.
fn unused() -> Arc<dyn Channel> {
    Scripted::new(Vec::new())
}

struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Channel for Scripted {
    fn kind(&self) -> ChannelKind {
        self.kind
    }

    fn open(&self, turn: Turn) -> BoxStream<'static, Event> {
        self.opened.fetch_add(1, Ordering::SeqCst);
        *self.last_turn.lock().unwrap() = Some(turn);
        let flag = DropFlag(self.dropped.clone());
        let steps = self.script.clone();
        stream::iter(steps)
            .then(move |step| {
                let _keep = &flag;
                async move {
                    match step {
                        Step::Emit(event) => event,
                        Step::Stall => std::future::pending().await,
                    }
                }
            })
            .boxed()
    }
}

async fn run(provider: &Provider, options: &str, abort: AbortSignal) -> Vec<Value> {
    let mut events = Vec::new();
    provider
        .stream(MODEL, CONTEXT, options, abort, |event| events.push(event))
        .await;
    events
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn error_message(events: &[Value]) -> &str {
    let last = events.last().expect("an event");
    assert_eq!(last["type"], "error", "{last}");
    last["error"]["errorMessage"].as_str().unwrap()
}

#[tokio::test]
async fn the_agent_channel_answers_by_default_and_gets_the_mapped_turn() {
    let agent = Scripted::new(vec![
        Step::Emit(Event::TextDelta {
            text: "pong".into(),
        }),
        Step::Emit(Event::Done {
            reason: StopReason::Stop,
        }),
    ]);
    let provider = Provider::select(ChannelKind::parse(None), || agent.clone(), unused);
    let events = run(&provider, OPTIONS, AbortSignal::never()).await;
    assert_eq!(
        types(&events),
        ["start", "text_start", "text_delta", "text_end", "done"]
    );
    assert_eq!(events[4]["message"]["content"][0]["text"], "pong");
    assert_eq!(events[4]["message"]["model"], "composer-2.5");
    let turn = agent.last_turn.lock().unwrap().take().unwrap();
    assert_eq!(turn.conversation.system_prompt, "Be terse.");
    assert_eq!(turn.options.session_id.as_deref(), Some("0190-session"));
    assert_eq!(turn.options.access_token(), Ok("token"));
}

#[tokio::test]
async fn the_inference_choice_answers_on_the_inference_channel_and_never_reaches_the_agent() {
    let agent = Scripted::new(vec![Step::Emit(Event::Done {
        reason: StopReason::Stop,
    })]);
    let inference = Scripted::inference(vec![
        Step::Emit(Event::TextDelta {
            text: "pong".into(),
        }),
        Step::Emit(Event::Done {
            reason: StopReason::Stop,
        }),
    ]);
    let provider = Provider::select(
        ChannelKind::parse(Some("inference")),
        || agent.clone(),
        || inference.clone(),
    );
    assert_eq!(provider.channel().kind(), ChannelKind::Inference);
    let events = run(&provider, OPTIONS, AbortSignal::never()).await;
    assert_eq!(
        events.last().unwrap()["message"]["content"][0]["text"],
        "pong"
    );
    assert_eq!(inference.opened.load(Ordering::SeqCst), 1);
    assert_eq!(agent.opened.load(Ordering::SeqCst), 0, "no fallback");
}

#[tokio::test]
async fn an_inference_failure_is_the_turn_error_and_never_touches_the_agent_channel() {
    let agent = Scripted::new(vec![Step::Emit(Event::Done {
        reason: StopReason::Stop,
    })]);
    let inference = Scripted::inference(vec![Step::Emit(Event::Error(ErrorInfo::new(
        ErrorKind::RemoteRefusal,
        "permission_denied: not entitled to RunInference",
        NextStep::SwitchModel,
    )))]);
    let provider = Provider::select(
        ChannelKind::parse(Some("inference")),
        || agent.clone(),
        || inference.clone(),
    );
    let events = run(&provider, OPTIONS, AbortSignal::never()).await;
    assert_eq!(types(&events).last(), Some(&"error"));
    let text = error_message(&events);
    assert!(text.contains("not entitled to RunInference"), "{text}");
    assert_eq!(agent.opened.load(Ordering::SeqCst), 0, "no fallback");
}

#[tokio::test]
async fn an_agent_failure_never_touches_the_inference_channel() {
    let agent = Scripted::new(vec![Step::Emit(Event::Error(ErrorInfo::new(
        ErrorKind::Network,
        "connection reset",
        NextStep::Retry,
    )))]);
    let inference = Scripted::inference(vec![Step::Emit(Event::Done {
        reason: StopReason::Stop,
    })]);
    let provider = Provider::select(
        Ok(ChannelKind::Agent),
        || agent.clone(),
        || inference.clone(),
    );
    let events = run(&provider, OPTIONS, AbortSignal::never()).await;
    assert_eq!(types(&events).last(), Some(&"error"));
    assert_eq!(inference.opened.load(Ordering::SeqCst), 0, "no fallback");
}

#[tokio::test]
async fn a_malformed_channel_choice_fails_every_turn_with_the_accepted_values() {
    let agent = Scripted::new(Vec::new());
    let provider = Provider::select(ChannelKind::parse(Some("both")), || agent.clone(), unused);
    let events = run(&provider, OPTIONS, AbortSignal::never()).await;
    let text = error_message(&events);
    assert!(text.contains("\"both\""), "{text}");
    assert!(text.contains("agent or inference"), "{text}");
    assert_eq!(agent.opened.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn events_reach_the_host_before_the_turn_ends_and_abort_stops_the_channel() {
    let agent = Scripted::new(vec![
        Step::Emit(Event::TextDelta {
            text: "partial ".into(),
        }),
        Step::Stall,
    ]);
    let provider = Provider::select(Ok(ChannelKind::Agent), || agent.clone(), unused);
    let (handle, signal) = abort_pair();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let turn = tokio::spawn(async move {
        provider
            .stream(MODEL, CONTEXT, OPTIONS, signal, |event| {
                sink.lock().unwrap().push(event);
            })
            .await;
    });
    // The delta arrives while the channel is still stalled.
    for _ in 0..100 {
        if seen.lock().unwrap().len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        types(&seen.lock().unwrap()),
        ["start", "text_start", "text_delta"]
    );
    handle.abort();
    tokio::time::timeout(Duration::from_secs(5), turn)
        .await
        .expect("abort ends the turn")
        .unwrap();
    let events = seen.lock().unwrap().clone();
    let last = events.last().unwrap();
    assert_eq!(last["reason"], "aborted", "{last}");
    assert_eq!(last["error"]["stopReason"], "aborted");
    assert_eq!(last["error"]["content"][0]["text"], "partial ");
    assert!(
        agent.dropped.load(Ordering::SeqCst),
        "the channel was released"
    );
}

#[tokio::test]
async fn a_turn_aborted_before_it_starts_never_opens_the_channel() {
    let agent = Scripted::new(Vec::new());
    let provider = Provider::select(Ok(ChannelKind::Agent), || agent.clone(), unused);
    let (handle, signal) = abort_pair();
    handle.abort();
    let events = run(&provider, OPTIONS, signal).await;
    assert_eq!(types(&events), ["error"]);
    assert_eq!(events[0]["reason"], "aborted");
    assert_eq!(agent.opened.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_channel_that_stops_early_fails_the_turn_as_retryable() {
    let agent = Scripted::new(vec![Step::Emit(Event::TextDelta { text: "cut".into() })]);
    let provider = Provider::select(Ok(ChannelKind::Agent), || agent, unused);
    let events = run(&provider, OPTIONS, AbortSignal::never()).await;
    let text = error_message(&events);
    assert!(text.starts_with("network error: "), "{text}");
    assert!(pi_would_retry(text), "{text}");
}

async fn error_text_for(info: ErrorInfo) -> String {
    let agent = Scripted::new(vec![Step::Emit(Event::Error(info))]);
    let provider = Provider::select(Ok(ChannelKind::Agent), || agent, unused);
    let events = run(&provider, OPTIONS, AbortSignal::never()).await;
    error_message(&events).to_owned()
}

#[tokio::test]
async fn every_error_kind_reaches_pi_with_its_next_step_and_only_network_is_retried() {
    let auth = error_text_for(ErrorInfo::new(
        ErrorKind::Auth,
        "server error unauthenticated: token expired (HTTP 401)",
        NextStep::Login,
    ))
    .await;
    assert!(auth.starts_with("auth error: "), "{auth}");
    assert!(auth.ends_with("(next step: run /login cursor)"), "{auth}");
    assert!(!pi_would_retry(&auth), "{auth}");

    let network = error_text_for(
        CursorError::network_msg("request to https://api2.cursor.sh timed out").into(),
    )
    .await;
    assert!(network.starts_with("network error: "), "{network}");
    assert!(
        network.contains("(next step: retry the message; if it keeps failing, check the network)"),
        "{network}"
    );
    assert!(pi_would_retry(&network), "{network}");

    let drift =
        error_text_for(CursorError::drift("unknown oneof arm 99 after an internal error").into())
            .await;
    assert!(drift.starts_with("protocol_drift error: "), "{drift}");
    assert!(
        drift.contains("next step: update the cursor crates"),
        "{drift}"
    );
    assert!(!pi_would_retry(&drift), "{drift}");

    let refusal = error_text_for(ErrorInfo::new(
        ErrorKind::RemoteRefusal,
        "server error resource_exhausted: usage limit reached (HTTP 429)",
        NextStep::WaitForQuota,
    ))
    .await;
    assert!(refusal.starts_with("remote_refusal error: "), "{refusal}");
    assert!(refusal.contains("usage limit reached"), "{refusal}");
    assert!(!pi_would_retry(&refusal), "{refusal}");

    let local = error_text_for(CursorError::invalid("header value has a newline").into()).await;
    assert!(local.starts_with("local error: "), "{local}");
    assert!(local.contains("(next step: "), "{local}");
    assert!(!pi_would_retry(&local), "{local}");
}

#[tokio::test]
async fn malformed_pi_input_fails_before_start_with_a_local_error() {
    let provider = Provider::select(Ok(ChannelKind::Agent), || Scripted::new(Vec::new()), unused);
    let mut events = Vec::new();
    provider
        .stream(
            MODEL,
            r#"{"messages": 3}"#,
            OPTIONS,
            AbortSignal::never(),
            |e| {
                events.push(e);
            },
        )
        .await;
    assert_eq!(types(&events), ["error"]);
    assert!(
        error_message(&events).starts_with("local error: pi context"),
        "{events:?}"
    );

    let mut events = Vec::new();
    provider
        .stream("not json", CONTEXT, OPTIONS, AbortSignal::never(), |e| {
            events.push(e)
        })
        .await;
    assert!(error_message(&events).contains("pi model"), "{events:?}");
    assert_eq!(events[0]["error"]["model"], "unknown");
}

#[test]
fn a_failure_outside_the_stream_becomes_one_error_event_quoting_the_model() {
    let event = Provider::failure_event(
        MODEL,
        ErrorInfo::new(ErrorKind::Local, "boom", NextStep::host_bug("report it")),
    );
    assert_eq!(event["type"], "error");
    assert_eq!(event["reason"], "error");
    assert_eq!(event["error"]["model"], "composer-2.5");
    assert_eq!(
        event["error"]["errorMessage"],
        "local error: boom (next step: report it)"
    );
}
