//! What a host written from the README alone gets wrong, said at turn time instead of
//! silently: a session that cannot resume, no workspace, trailing tool results that do not
//! answer the waiting Run, two turns at once.

use std::sync::Arc;
use std::time::Duration;

use cursor_agent::session::{AgentSession, ModelChoice, SessionBuilder, StaticToken};
use cursor_agent::testing::{Replica, ReplicaServer};
use cursor_agent::{AgentEvent, HandleStore, HostProfile};
use cursor_proto::ir::{Conversation, Event, Message, StopReason, Tool, ToolResult, WarningCode};
use cursor_transport::Client;
use futures::StreamExt as _;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

fn builder(replica: &ReplicaServer) -> SessionBuilder {
    AgentSession::builder(
        Client::new().unwrap(),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
}

async fn events(session: &AgentSession, conversation: &Conversation) -> Vec<AgentEvent> {
    tokio::time::timeout(
        WAIT,
        session
            .turn(conversation, &ModelChoice::new("composer-2.5"))
            .collect::<Vec<_>>(),
    )
    .await
    .unwrap()
}

fn warnings(events: &[AgentEvent]) -> Vec<WarningCode> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Ir(Event::Warning(warning)) => Some(warning.code),
            _ => None,
        })
        .collect()
}

fn ping() -> Conversation {
    Conversation::new("").with_message(Message::user_text("ping"))
}

#[tokio::test]
async fn handles_without_a_session_id_and_no_workspace_are_warned_about_once() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = builder(&replica)
        .handles(Arc::new(HandleStore::new(dir.path())))
        .build();
    let first = events(&session, &ping()).await;
    assert_eq!(
        warnings(&first),
        [WarningCode::NoResume, WarningCode::NoWorkspace]
    );
    assert!(matches!(
        first.last(),
        Some(AgentEvent::Ir(Event::Done { .. }))
    ));
    let second = events(&session, &ping()).await;
    assert_eq!(warnings(&second), [], "said once per session");

    let configured = builder(&replica)
        .workspace_uri("file:///work")
        .session_id("s-1")
        .handles(Arc::new(HandleStore::new(dir.path())))
        .build();
    assert_eq!(warnings(&events(&configured, &ping()).await), []);
}

#[tokio::test]
async fn trailing_results_that_do_not_answer_the_waiting_run_are_warned_about() {
    let replica = Replica::start().await.unwrap();
    let session = builder(&replica).workspace_uri("file:///work").build();
    let mut conversation = Conversation::new("")
        .with_message(Message::user_text(r#"tool: bash {"command":"echo hi"}"#));
    conversation.tools = vec![Tool::new(
        "bash",
        "Run a shell command",
        json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    )];
    let leg = events(&session, &conversation).await;
    let calls: Vec<_> = leg
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Ir(Event::ToolCall(call)) => Some(call.clone()),
            _ => None,
        })
        .collect();
    assert!(matches!(
        leg.last(),
        Some(AgentEvent::Ir(Event::Done {
            reason: StopReason::ToolUse
        }))
    ));
    assert!(session.is_waiting_for_tools());
    let wrong = ToolResult::text("not-a-call-id", "bash", "hi", false);
    let conversation = conversation
        .with_message(Message::assistant_tool_calls(calls))
        .with_message(Message::ToolResult(wrong));
    let next = events(&session, &conversation).await;
    assert_eq!(warnings(&next), [WarningCode::ToolResultsMismatch]);
}

#[tokio::test]
async fn a_turn_started_while_another_streams_is_warned_about() {
    let replica = Replica::start().await.unwrap();
    let session = builder(&replica).workspace_uri("file:///work").build();
    let model = ModelChoice::new("composer-2.5");
    let mut first = session.turn(&ping(), &model);
    // The first turn is under way (its first event is in hand) when the second starts.
    assert!(
        tokio::time::timeout(WAIT, first.next())
            .await
            .unwrap()
            .is_some()
    );
    let second = events(&session, &ping()).await;
    assert_eq!(warnings(&second), [WarningCode::ConcurrentTurn]);
    drop(first);
    let third = events(&session, &ping()).await;
    assert_eq!(
        warnings(&third),
        [],
        "turns that follow each other are fine"
    );
}
