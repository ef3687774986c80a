//! `tracing` spans: one per Run and one per exec request, with identifiers and outcomes, and
//! never the conversation's text, tool arguments or results.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cursor_agent::testing::Replica;
use cursor_agent::{AgentEvent, AgentRun, RunConfig, driver};
use cursor_proto::ir::{Conversation, Event, Message, Tool, ToolResult};
use cursor_transport::{Client, RequestHeaders};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Metadata, Subscriber};

const WAIT: Duration = Duration::from_secs(10);

/// A span as the recorder saw it.
#[derive(Clone, Debug, Default)]
struct SpanSeen {
    name: &'static str,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

/// A subscriber that keeps every span and event field (the test's stand-in for a log
/// exporter that writes everything it is given).
#[derive(Clone, Default)]
struct Recorder {
    spans: Arc<Mutex<HashMap<u64, SpanSeen>>>,
    events: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut spans = self.spans.lock().unwrap();
        let id = spans.len() as u64 + 1;
        let mut seen = SpanSeen {
            name: attrs.metadata().name(),
            parent: attrs.parent().map(Id::into_u64),
            ..SpanSeen::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        spans.insert(id, seen);
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some(seen) = self.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push(fields);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "bash",
            "Run a shell command",
            json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        ),
        Tool::new(
            "add",
            "Add two numbers",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        ),
    ]
}

/// One leg's events (the exec audits are skipped: the spans are under test).
async fn leg(events: &mut driver::RunEvents) -> Vec<Event> {
    let mut leg = Vec::new();
    loop {
        match tokio::time::timeout(WAIT, events.recv()).await.unwrap() {
            Some(AgentEvent::Ir(event)) => {
                let end = matches!(event, Event::Done { .. } | Event::Error(_));
                leg.push(event);
                if end {
                    return leg;
                }
            }
            Some(_) => {}
            None => panic!("the run ended early: {leg:?}"),
        }
    }
}

/// Runs one turn whose model asks for a native shell command, answers it as the host, and
/// returns the recorder.
async fn traced_turn(user_text: &str, result_text: &str) -> Recorder {
    let recorder = Recorder::default();
    let _guard = tracing::subscriber::set_default(recorder.clone());
    let replica = Replica::start().await.unwrap();
    let mut conversation = Conversation::new("").with_message(Message::user_text(user_text));
    conversation.tools = tools();
    let config = RunConfig::new(
        "composer-2.5",
        "file:///work",
        cursor_agent::IdSeed::fixed([5; 16]),
    );
    let run = AgentRun::new(config, &conversation, driver::now()).unwrap();
    let (handle, mut events, task) = driver::start(
        Client::new().unwrap(),
        replica.origin(),
        RequestHeaders::new(),
        run,
    );
    let task = tokio::spawn(task);
    let first = leg(&mut events).await;
    let Some(Event::ToolCall(call)) = first.first() else {
        panic!("no tool call: {first:?}");
    };
    handle
        .submit_tool_results(vec![ToolResult::text(&call.id, "bash", result_text, false)])
        .await
        .unwrap();
    leg(&mut events).await;
    let run = tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
    assert!(run.is_finished());
    drop(run);
    recorder
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_and_its_exec_each_get_a_span_with_ids_and_outcomes() {
    let recorder = traced_turn("run: echo hi", "hi\n").await;
    let spans = recorder.spans.lock().unwrap().clone();
    let runs: Vec<(&u64, &SpanSeen)> = spans
        .iter()
        .filter(|(_, s)| s.name == "cursor_agent.run")
        .collect();
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let (run_id, run) = runs[0];
    assert!(run.fields["conversation_id"].len() >= 32, "{run:?}");
    assert_eq!(run.fields["model"], "composer-2.5");
    assert_eq!(run.fields["resumed"], "false");
    assert_eq!(run.fields["outcome"], "done");

    let execs: Vec<&SpanSeen> = spans
        .values()
        .filter(|s| s.name == "cursor_agent.exec")
        .collect();
    assert_eq!(execs.len(), 1, "{spans:#?}");
    let exec = execs[0];
    assert_eq!(exec.parent, Some(*run_id));
    assert_eq!(exec.fields["arm"], "shell_stream_args");
    assert_eq!(exec.fields["outcome"], "translated");
    assert_eq!(exec.fields["tool"], "bash");
    assert_eq!(exec.fields["answered"], "true");
}

#[tokio::test(flavor = "current_thread")]
async fn no_span_or_event_carries_the_conversations_text_or_the_tools_output() {
    let secret = "PLATYPUS-SECRET-42";
    let recorder = traced_turn(&format!("run: echo {secret}"), &format!("{secret}\n")).await;
    let spans = recorder.spans.lock().unwrap().clone();
    let events = recorder.events.lock().unwrap().clone();
    assert!(!spans.is_empty());
    let values = spans
        .values()
        .flat_map(|s| s.fields.values())
        .chain(events.iter().flat_map(BTreeMap::values));
    for value in values {
        assert!(
            !value.contains(secret),
            "a traced field leaks the text: {value}"
        );
    }
}
