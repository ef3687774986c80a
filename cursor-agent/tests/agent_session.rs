//! `AgentSession` against the loopback replica behaving like Cursor: it keeps responses open
//! after `turn_ended` and sends heartbeats while idle. Whole turns through the public API only:
//! planning, tool rounds on one stream, one 401 replay, one stale rebuild, durable handles.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cursor_agent::session::{AgentSession, ModelChoice, StaticToken, TokenSource};
use cursor_agent::testing::{AllowedTools, HoldOpen, Replica, ReplicaServer, Script};
use cursor_agent::{
    AgentEvent, Handle, HandleRepository, HandleStore, HostProfile, Loaded, StoreError,
};
use cursor_proto::ir::{
    Conversation, ErrorInfo, ErrorKind, Event, Message, NextStep, StopReason, Tool, ToolCall,
    ToolResult, WarningCode,
};
use cursor_transport::Client;
use serde_json::json;

const SESSION: &str = "session-1";
const WAIT: Duration = Duration::from_secs(20);

/// A replica that behaves like Cursor: responses stay open after `turn_ended`, and heartbeats
/// flow while it waits.
async fn cursor_like_replica() -> ReplicaServer {
    let replica = Replica::start().await.expect("replica starts");
    replica.set_hold_open(HoldOpen::Forever);
    replica.set_idle_heartbeat(Some(Duration::from_millis(20)));
    replica
}

fn profile() -> HostProfile {
    HostProfile::new("acme")
}

fn session_with(
    replica: &ReplicaServer,
    tokens: Arc<dyn TokenSource>,
    handles: Arc<dyn HandleRepository>,
) -> AgentSession {
    AgentSession::builder(Client::new().expect("client"), replica.origin(), tokens)
        .profile(profile())
        .workspace_uri("file:///work")
        .session_id(SESSION)
        .handles(handles)
        .build()
}

fn session(replica: &ReplicaServer, dir: &Path) -> AgentSession {
    session_with(
        replica,
        Arc::new(StaticToken::new("token")),
        Arc::new(HandleStore::new(dir)),
    )
}

fn model() -> ModelChoice {
    ModelChoice::new("composer-2.5")
}

fn read_tool() -> Tool {
    Tool::new(
        "read_file",
        "Read a file",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )
}

/// The host's `read_file` result `text` for `call`.
fn read_result(call: &ToolCall, text: &str) -> Message {
    Message::ToolResult(ToolResult::text(call.id.clone(), "read_file", text, false))
}

/// Reads one leg to its end (the stream must end right after the final event).
async fn leg(session: &AgentSession, conversation: &Conversation) -> Vec<AgentEvent> {
    let mut turn = session.turn(conversation, &model());
    let mut events = Vec::new();
    loop {
        let event = tokio::time::timeout(WAIT, turn.next())
            .await
            .expect("the turn does not stall");
        match event {
            Some(event) => events.push(event),
            None => return events,
        }
    }
}

fn ir(events: &[AgentEvent]) -> Vec<&Event> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Ir(event) => Some(event),
            _ => None,
        })
        .collect()
}

fn text(events: &[AgentEvent]) -> String {
    ir(events)
        .into_iter()
        .filter_map(|event| match event {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn tool_calls(events: &[AgentEvent]) -> Vec<ToolCall> {
    ir(events)
        .into_iter()
        .filter_map(|event| match event {
            Event::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .collect()
}

fn last(events: &[AgentEvent]) -> &Event {
    ir(events).pop().expect("a final event")
}

fn stored(dir: &Path) -> Option<Handle> {
    HandleStore::new(dir).load(SESSION).unwrap().handle()
}

#[tokio::test]
async fn the_handle_is_on_disk_before_done_reaches_the_host_though_the_server_never_closes() {
    let replica = cursor_like_replica().await;
    let dir = tempfile::tempdir().unwrap();
    let session = session(&replica, dir.path());
    let conversation = Conversation::new("").with_message(Message::user_text("remember ZEBRA-9"));
    let mut turn = session.turn(&conversation, &model());
    loop {
        let event = tokio::time::timeout(WAIT, turn.next())
            .await
            .expect("no stall")
            .expect("a Done before the end");
        if let AgentEvent::Ir(Event::Done { reason }) = event {
            assert_eq!(reason, StopReason::Stop);
            // Nothing more was polled: the handle was written before Done was handed out.
            let handle = stored(dir.path()).expect("the handle is on disk when Done arrives");
            assert!(!handle.checkpoint.is_empty());
            break;
        }
    }
    // The turn ends at once although the server keeps its side open.
    let end = tokio::time::timeout(Duration::from_secs(2), turn.next()).await;
    assert!(matches!(end, Ok(None)), "the stream ends after Done");
}

#[tokio::test]
async fn a_second_process_resumes_the_remote_conversation_without_replaying_history() {
    let replica = cursor_like_replica().await;
    let dir = tempfile::tempdir().unwrap();
    let first = Conversation::new("").with_message(Message::user_text("remember XK-PLATYPUS-77"));
    let answer = text(&leg(&session(&replica, dir.path()), &first).await);

    // A new process: a new session over the same handle directory.
    let second = first
        .clone()
        .with_message(Message::assistant_text(answer))
        .with_message(Message::user_text("what did I ask you to remember?"));
    let events = leg(&session(&replica, dir.path()), &second).await;
    assert!(text(&events).contains("XK-PLATYPUS-77"), "{events:?}");
    assert_eq!(
        last(&events),
        &Event::Done {
            reason: StopReason::Stop
        }
    );
    let runs = replica.runs();
    let recall = runs
        .iter()
        .find(|run| run.user_text.starts_with("what did"))
        .expect("the recall Run was recorded");
    assert_eq!(recall.label, "agent-resume");
    assert!(!recall.history_replayed);
    assert_eq!(recall.conversation_id, runs[0].conversation_id);
}

#[tokio::test]
async fn a_tool_round_runs_on_one_stream_with_the_hosts_own_tool() {
    let replica = cursor_like_replica().await;
    let dir = tempfile::tempdir().unwrap();
    let session = session(&replica, dir.path());
    let ask = Conversation::new("")
        .with_tool(read_tool())
        .with_message(Message::user_text(
            r#"tool: read_file {"path": "notes.txt"}"#,
        ));
    let first = leg(&session, &ask).await;
    let calls = tool_calls(&first);
    assert_eq!(calls.len(), 1, "{first:?}");
    assert_eq!(calls[0].name, "read_file");
    assert_eq!(calls[0].arguments, json!({"path": "notes.txt"}));
    assert_eq!(
        last(&first),
        &Event::Done {
            reason: StopReason::ToolUse
        }
    );
    assert!(session.is_waiting_for_tools());

    // The host runs its tool and answers on the same stream.
    let answered = ask
        .clone()
        .with_message(Message::assistant_tool_calls(calls.clone()))
        .with_message(read_result(&calls[0], "the notes say hello"));
    let second = leg(&session, &answered).await;
    assert!(text(&second).contains("the notes say hello"), "{second:?}");
    assert_eq!(
        last(&second),
        &Event::Done {
            reason: StopReason::Stop
        }
    );
    assert!(!session.is_waiting_for_tools());
    let runs = replica.runs();
    assert_eq!(runs.len(), 1, "both legs ran on one Run: {runs:?}");
    assert_eq!(runs[0].execs[0].status, "success");
    assert!(stored(dir.path()).is_some());
}

#[tokio::test]
async fn parallel_tool_calls_are_one_round_and_each_result_reaches_its_own_call() {
    let replica = cursor_like_replica().await;
    let dir = tempfile::tempdir().unwrap();
    let session = session(&replica, dir.path());
    let ask = Conversation::new("")
        .with_tool(read_tool())
        .with_message(Message::user_text(
            "tool: read_file {\"path\": \"a.txt\"}\ntool: read_file {\"path\": \"b.txt\"}",
        ));
    let first = leg(&session, &ask).await;
    let calls = tool_calls(&first);
    let paths: Vec<&serde_json::Value> = calls.iter().map(|c| &c.arguments["path"]).collect();
    assert_eq!(paths, [&json!("a.txt"), &json!("b.txt")], "{first:?}");
    assert_ne!(calls[0].id, calls[1].id);
    assert_eq!(
        last(&first),
        &Event::Done {
            reason: StopReason::ToolUse
        }
    );

    // The host answers both, in the opposite order, on the same stream.
    let answered = ask
        .clone()
        .with_message(Message::assistant_tool_calls(calls.clone()))
        .with_message(read_result(&calls[1], "bee"))
        .with_message(read_result(&calls[0], "ay"));
    let second = leg(&session, &answered).await;
    assert_eq!(
        text(&second),
        "The tool read_file answered: ay The tool read_file answered: bee"
    );
    let runs = replica.runs();
    assert_eq!(
        runs.len(),
        1,
        "both calls and both legs ran on one Run: {runs:?}"
    );
    let statuses: Vec<&str> = runs[0].execs.iter().map(|e| e.status.as_str()).collect();
    assert_eq!(statuses, ["success", "success"]);
}

/// A token source that counts refreshes and hands out a fresh token each time.
#[derive(Debug, Default)]
struct CountingTokens {
    refreshes: AtomicUsize,
}

#[async_trait::async_trait]
impl TokenSource for CountingTokens {
    async fn access_token(&self) -> Result<String, ErrorInfo> {
        Ok("old-token".into())
    }

    async fn refresh(&self, rejected: &str) -> Result<String, ErrorInfo> {
        assert_eq!(rejected, "old-token");
        self.refreshes.fetch_add(1, Ordering::SeqCst);
        Ok("fresh-token".into())
    }
}

/// Asks `ping` through a session whose token source counts its refreshes.
async fn ping_with_counted_refreshes(
    replica: &ReplicaServer,
) -> (Arc<CountingTokens>, Vec<AgentEvent>) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = Arc::new(CountingTokens::default());
    let session = session_with(
        replica,
        tokens.clone(),
        Arc::new(HandleStore::new(dir.path())),
    );
    let ping = Conversation::new("").with_message(Message::user_text("ping"));
    let events = leg(&session, &ping).await;
    (tokens, events)
}

#[tokio::test]
async fn a_refused_token_is_refreshed_once_and_the_run_replayed_once() {
    let replica = cursor_like_replica().await;
    replica.script(Script::Unauthenticated);
    let (tokens, events) = ping_with_counted_refreshes(&replica).await;
    assert_eq!(text(&events), "pong");
    assert_eq!(tokens.refreshes.load(Ordering::SeqCst), 1);
    let outcomes: Vec<String> = replica.runs().into_iter().map(|run| run.outcome).collect();
    assert_eq!(outcomes, ["unauthenticated", "completed"]);
}

#[tokio::test]
async fn a_token_refused_twice_ends_the_turn_with_a_login_step_after_one_refresh() {
    let replica = cursor_like_replica().await;
    replica.set_fail_auth(true);
    let (tokens, events) = ping_with_counted_refreshes(&replica).await;
    let Event::Error(info) = last(&events) else {
        panic!("{events:?}")
    };
    assert_eq!(info.kind, ErrorKind::Auth);
    assert_eq!(info.next_step, NextStep::Login);
    assert_eq!(info.http_status, Some(401));
    assert_eq!(tokens.refreshes.load(Ordering::SeqCst), 1);
    assert_eq!(replica.runs().len(), 2, "the Run and its one replay");
}

#[tokio::test]
async fn a_resume_gone_stale_in_its_second_leg_rebuilds_once_with_that_legs_tool_results() {
    let replica = cursor_like_replica().await;
    let dir = tempfile::tempdir().unwrap();
    let first = Conversation::new("")
        .with_tool(read_tool())
        .with_message(Message::user_text("remember KIWI-3"));
    let answer = text(&leg(&session(&replica, dir.path()), &first).await);
    let old_id = stored(dir.path()).unwrap().conversation_id;

    // Turn 2 resumes, calls the host's tool, then the conversation expires mid-turn.
    replica.script(Script::StaleAfterTools);
    let session = session(&replica, dir.path());
    let ask = first
        .clone()
        .with_message(Message::assistant_text(answer))
        .with_message(Message::user_text(r#"tool: read_file {"path": "plan.md"}"#));
    let leg_one = leg(&session, &ask).await;
    let Some(Event::ToolCall(call)) = ir(&leg_one)
        .into_iter()
        .find(|event| matches!(event, Event::ToolCall(_)))
    else {
        panic!("{leg_one:?}")
    };
    let answered = ask
        .with_message(Message::assistant_tool_calls(vec![call.clone()]))
        .with_message(read_result(call, "PLAN-CONTENTS-42"));
    let leg_two = leg(&session, &answered).await;
    let events = ir(&leg_two);
    assert_eq!(events.first(), Some(&&Event::Reset), "{leg_two:?}");
    assert_eq!(
        last(&leg_two),
        &Event::Done {
            reason: StopReason::Stop
        }
    );

    let runs = replica.runs();
    let labels: Vec<&str> = runs.iter().map(|run| run.label.as_str()).collect();
    assert_eq!(labels, ["agent-rebuild", "agent-resume", "agent-rebuild"]);
    assert_eq!(runs[1].outcome, "not-found");
    let rebuild = &runs[2];
    assert_eq!(
        rebuild.root_prompt_tool_results,
        ["PLAN-CONTENTS-42"],
        "the rebuild carries the stale leg's tool result"
    );
    assert_eq!(rebuild.user_text, profile().continuation_prompt);
    assert!(
        rebuild
            .root_prompt_user_texts
            .iter()
            .any(|text| text.contains("plan.md"))
    );
    let handle = stored(dir.path()).expect("the rebuilt conversation's handle");
    assert_ne!(handle.conversation_id, old_id);
    assert_eq!(handle.conversation_id, rebuild.conversation_id);
}

/// A repository whose writes always fail.
#[derive(Debug)]
struct ReadOnly;

impl HandleRepository for ReadOnly {
    fn load(&self, _: &str) -> Result<Loaded, StoreError> {
        Ok(Loaded::Missing)
    }

    fn save(&self, session: &str, _: &Handle) -> Result<(), StoreError> {
        Err(StoreError::InvalidSessionId(session.to_owned()))
    }

    fn remove(&self, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
}

#[tokio::test]
async fn a_handle_that_cannot_be_written_reaches_the_host_as_a_warning_before_done() {
    let replica = cursor_like_replica().await;
    let session = session_with(
        &replica,
        Arc::new(StaticToken::new("token")),
        Arc::new(ReadOnly),
    );
    let events = leg(
        &session,
        &Conversation::new("").with_message(Message::user_text("ping")),
    )
    .await;
    let events = ir(&events);
    let warning = events
        .iter()
        .position(
            |event| matches!(event, Event::Warning(w) if w.code == WarningCode::HandleNotSaved),
        )
        .expect("a warning");
    let done = events
        .iter()
        .position(|event| matches!(event, Event::Done { .. }))
        .expect("done");
    assert!(warning < done, "{events:?}");
}

#[tokio::test]
async fn a_corrupt_handle_is_set_aside_with_a_warning_and_the_turn_rebuilds() {
    let replica = cursor_like_replica().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(format!("{SESSION}.json")), b"{not json").unwrap();
    let session = session(&replica, dir.path());
    let events = leg(
        &session,
        &Conversation::new("")
            .with_message(Message::user_text("remember A"))
            .with_message(Message::assistant_text("ok"))
            .with_message(Message::user_text("ping")),
    )
    .await;
    assert!(
        ir(&events).iter().any(
            |event| matches!(event, Event::Warning(w) if w.code == WarningCode::HandleSetAside)
        ),
        "{events:?}"
    );
    assert_eq!(text(&events), "pong");
    assert_eq!(replica.runs()[0].label, "agent-rebuild");
    let kept = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .any(|entry| entry.file_name().to_string_lossy().contains(".corrupt-"));
    assert!(kept, "the corrupt file was kept aside");
    assert!(stored(dir.path()).is_some(), "a fresh handle replaced it");
}

/// A sink that keeps every record.
#[derive(Debug, Default)]
struct Captured(std::sync::Mutex<Vec<String>>);

impl cursor_agent::session::DebugSink for Captured {
    fn record(&self, record: &serde_json::Value) {
        self.0.lock().unwrap().push(record.to_string());
    }
}

#[tokio::test]
async fn debug_records_carry_decisions_and_never_tokens_prompts_or_tool_output() {
    let replica = cursor_like_replica().await;
    // A backend that sends the native shell despite the allowed-tools header, so the debug
    // records show a translated exec.
    replica.set_allowed_tools(AllowedTools::Ignore);
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(Captured::default());
    let session = AgentSession::builder(
        Client::new().unwrap(),
        replica.origin(),
        Arc::new(StaticToken::new("SECRET-TOKEN")),
    )
    .profile(profile())
    .workspace_uri("file:///work")
    .session_id(SESSION)
    .handles(Arc::new(HandleStore::new(dir.path())))
    .debug(sink.clone())
    .build();
    let bash = Tool::new(
        "bash",
        "Run a shell command",
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    );
    // A native exec (translated into the host's bash tool) with secrets in every input.
    let ask = Conversation::new("SECRET-SYSTEM")
        .with_tool(bash)
        .with_message(Message::user_text("run: cat SECRET-FILE"));
    let first = leg(&session, &ask).await;
    let Some(Event::ToolCall(call)) = ir(&first)
        .into_iter()
        .find(|event| matches!(event, Event::ToolCall(_)))
    else {
        panic!("{first:?}")
    };
    let answered = ask
        .clone()
        .with_message(Message::assistant_tool_calls(vec![call.clone()]))
        .with_message(Message::ToolResult(ToolResult::text(
            call.id.clone(),
            "bash",
            "SECRET-OUTPUT",
            false,
        )));
    let second = leg(&session, &answered).await;
    assert!(
        text(&second).contains("SECRET-OUTPUT"),
        "the turn really ran: {second:?}"
    );

    let records = sink.0.lock().unwrap().clone();
    let all = records.join("\n");
    assert!(
        !all.contains("SECRET"),
        "a secret leaked into the debug records:\n{all}"
    );
    for wanted in [
        r#""event":"plan""#,
        r#""run":"agent-rebuild""#,
        r#""event":"exec""#,
        r#""outcome":"translated""#,
        r#""done":"toolUse""#,
        r#""done":"stop""#,
    ] {
        assert!(all.contains(wanted), "no {wanted} in:\n{all}");
    }
}
