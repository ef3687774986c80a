//! Rules other clients learned on the live servers (PROTOCOL-AGENT §13), played by the replica
//! and answered through `AgentSession`'s public API: the three names a host tool comes back
//! under, the four meanings of `resource_exhausted`, and server state that is gone.

mod host;

use std::sync::Arc;
use std::time::Duration;

use cursor_agent::AgentEvent;
use cursor_agent::session::{AgentSession, ModelChoice, StaticToken};
use cursor_agent::testing::{
    Exhaustion, Replica, ReplicaServer, RunRecord, Script, StateLoss, ToolNaming,
};
use cursor_agent::{ExecOutcome, HandleStore, HostProfile, Timers};
use cursor_proto::ir::{
    Conversation, ErrorKind, Event, Message, NextStep, Tool, ToolCall, ToolResult,
};
use cursor_transport::Client;
use host::{ended_normally, error_of, host_calls, text};
use serde_json::json;

use host::WAIT;

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "bash",
            "Run a shell command",
            json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        ),
        Tool::new(
            "read_file",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
    ]
}

/// The capacity backoff of these sessions (short, so a test measures it without waiting 2 s).
const BACKOFF: Duration = Duration::from_millis(300);

fn timers() -> Timers {
    let mut timers = Timers::default();
    timers.capacity_retry_backoff = BACKOFF;
    timers
}

fn session(replica: &ReplicaServer) -> AgentSession {
    AgentSession::builder(
        Client::new().expect("client"),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
    .workspace_uri("file:///work")
    .timers(timers())
    .build()
}

fn ask(text: &str) -> Conversation {
    let mut conversation = Conversation::new("").with_message(Message::user_text(text));
    conversation.tools = tools();
    conversation
}

/// What the host's tools answer (the test plays the host).
fn host_answer(call: &ToolCall) -> ToolResult {
    let text = match call.name.as_str() {
        "read_file" => "the file says hello".to_owned(),
        other => format!("ran {other}"),
    };
    ToolResult::text(call.id.clone(), call.name.clone(), text, false)
}

/// A whole turn as a host runs it, tool legs answered by `host_answer`.
async fn whole_turn(
    session: &AgentSession,
    conversation: Conversation,
    model: &str,
) -> Vec<AgentEvent> {
    host::whole_turn(session, conversation, &ModelChoice::new(model), host_answer).await
}

fn only_run(replica: &Replica) -> RunRecord {
    let runs = replica.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs.into_iter().next().unwrap()
}

// --- §13.1 tool names -------------------------------------------------------------------------

/// A host tool called under each of its three names reaches the host as the tool it advertised,
/// and its result reaches the model.
async fn a_tool_called_as(naming: ToolNaming, wire_name: &str) {
    let replica = Replica::start().await.unwrap();
    replica.set_tool_naming(naming);
    let events = whole_turn(
        &session(&replica),
        ask(r#"tool: read_file {"path": "notes.txt"}"#),
        "composer-2.5",
    )
    .await;
    assert!(ended_normally(&events), "{events:?}");
    assert_eq!(host_calls(&events), ["read_file"]);
    assert!(text(&events).contains("the file says hello"), "{events:?}");
    let run = only_run(&replica);
    assert_eq!(run.execs.len(), 1, "{run:?}");
    assert_eq!(run.execs[0].status, "success", "{run:?}");
    assert!(run.execs[0].request.starts_with(wire_name), "{run:?}");
}

#[tokio::test]
async fn a_tool_called_by_its_bare_name_reaches_the_host() {
    a_tool_called_as(ToolNaming::Bare, "read_file ").await;
}

#[tokio::test]
async fn a_tool_called_as_mcp_provider_name_reaches_the_host() {
    a_tool_called_as(ToolNaming::Mcp, "mcp_acme_read_file ").await;
}

#[tokio::test]
async fn a_tool_called_as_provider_dash_name_reaches_the_host() {
    a_tool_called_as(ToolNaming::Dash, "acme-read_file ").await;
}

/// The script-level knob: one Run names tools with a dash, the next one bare.
#[tokio::test]
async fn a_scripted_dash_name_resolves_for_that_run_only() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::ToolNaming(ToolNaming::Dash));
    let session = session(&replica);
    for _ in 0..2 {
        let events = whole_turn(
            &session,
            ask(r#"tool: bash {"command": "ls"}"#),
            "composer-2.5",
        )
        .await;
        assert_eq!(host_calls(&events), ["bash"], "{events:?}");
    }
    let runs = replica.runs();
    assert!(
        runs[0].execs[0].request.starts_with("acme-bash "),
        "{runs:?}"
    );
    assert!(runs[1].execs[0].request.starts_with("bash "), "{runs:?}");
}

/// A name no form resolves (another provider's dash form, an unknown tool) is answered
/// `tool_not_found` listing the host's tools, and never reaches the host.
#[tokio::test]
async fn an_unknown_or_foreign_dash_name_is_tool_not_found_listing_the_tools() {
    let replica = Replica::start().await.unwrap();
    let session = session(&replica);
    for asked in ["tool: other-bash {}", "tool: acme-nope {}"] {
        let events = whole_turn(&session, ask(asked), "composer-2.5").await;
        assert!(host_calls(&events).is_empty(), "{events:?}");
        let audit = events.iter().find_map(|event| match event {
            AgentEvent::Exec(audit) => Some(audit.outcome.clone()),
            _ => None,
        });
        assert!(
            matches!(audit, Some(ExecOutcome::ToolNotFound { .. })),
            "{audit:?}"
        );
    }
    for run in replica.runs() {
        assert_eq!(run.execs[0].status, "tool-not-found", "{run:?}");
        assert_eq!(run.execs[0].result, "bash, read_file", "{run:?}");
    }
}

// --- §13.2 the four meanings of resource_exhausted --------------------------------------------

/// A spent quota waits for the quota, with the reset time the message gives; never retried.
#[tokio::test]
async fn a_spent_quota_waits_for_the_quota_and_carries_its_reset_time() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::Exhausted(Exhaustion::Quota));
    let events = whole_turn(&session(&replica), ask("ping"), "composer-2.5").await;
    let info = error_of(&events);
    assert_eq!(info.kind, ErrorKind::RemoteRefusal, "{info:?}");
    assert_eq!(info.next_step, NextStep::WaitForQuota, "{info:?}");
    assert_eq!(
        info.quota_resets.as_deref(),
        Some("on Nov 1, 2026"),
        "{info:?}"
    );
    assert_eq!(replica.runs().len(), 1);
}

/// A model the plan does not include asks for another model; never retried.
#[tokio::test]
async fn a_model_outside_the_plan_asks_to_switch_models() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::Exhausted(Exhaustion::PlanModel));
    let events = whole_turn(&session(&replica), ask("ping"), "claude-opus-5-max").await;
    let info = error_of(&events);
    assert_eq!(info.next_step, NextStep::SwitchModel, "{info:?}");
    assert!(info.message.contains("claude-opus-5-max"), "{info:?}");
    assert_eq!(replica.runs().len(), 1);
}

/// Transient capacity before anything streamed: one more Run after the backoff, and the host
/// sees only the answer.
#[tokio::test]
async fn a_capacity_refusal_before_any_event_is_retried_once_after_a_backoff() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::Exhausted(Exhaustion::Capacity));
    let started = std::time::Instant::now();
    let events = whole_turn(&session(&replica), ask("ping"), "composer-2.5").await;
    let took = started.elapsed();
    assert!(ended_normally(&events), "{events:?}");
    assert_eq!(text(&events), "pong");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::Ir(Event::Error(_) | Event::Reset))),
        "{events:?}"
    );
    let runs = replica.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0].outcome, "resource-exhausted");
    assert!(took >= BACKOFF, "{took:?}");
    println!("capacity refusal: 2 Runs, the turn took {took:?} with a {BACKOFF:?} backoff");
}

/// A second capacity refusal in the turn reaches the host, classified: wait and retry.
#[tokio::test]
async fn a_second_capacity_refusal_fails_the_turn_with_wait_and_retry() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::Exhausted(Exhaustion::Capacity));
    replica.script(Script::Exhausted(Exhaustion::Capacity));
    let events = whole_turn(&session(&replica), ask("ping"), "composer-2.5").await;
    let info = error_of(&events);
    assert_eq!(info.kind, ErrorKind::RemoteRefusal, "{info:?}");
    assert_eq!(info.next_step, NextStep::WaitAndRetry, "{info:?}");
    assert_eq!(replica.runs().len(), 2);
}

/// A bare `resource_exhausted` before any token is a context overflow: the host is told to
/// compact, not to wait for a quota, and nothing is retried.
#[tokio::test]
async fn a_bare_exhaustion_before_any_token_asks_the_host_to_compact() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::Exhausted(Exhaustion::ContextOverflow));
    let events = whole_turn(&session(&replica), ask("ping"), "composer-2.5").await;
    let info = error_of(&events);
    assert_eq!(info.kind, ErrorKind::RemoteRefusal, "{info:?}");
    assert_eq!(info.next_step, NextStep::CompactConversation, "{info:?}");
    assert_eq!(info.code.as_deref(), Some("resource_exhausted"));
    assert_eq!(info.quota_resets, None);
    let run = only_run(&replica);
    assert!(run.blobs_fetched >= 1, "{run:?}");
    assert_eq!(run.outcome, "resource-exhausted");
}

// --- §13.3 lost server state ------------------------------------------------------------------

/// A session keeping its resume handle in `dir`.
fn durable_session(replica: &ReplicaServer, dir: &std::path::Path) -> AgentSession {
    AgentSession::builder(
        Client::new().expect("client"),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
    .workspace_uri("file:///work")
    .session_id("s-1")
    .handles(Arc::new(HandleStore::new(dir)))
    .timers(timers())
    .build()
}

const FIRST: &str = "remember ZEBRA-9";
const RECALL: &str = "what did I ask you to remember?";

/// The second turn's transcript, after `FIRST` was answered.
fn second_turn() -> Conversation {
    ask(FIRST)
        .with_message(Message::assistant_text("OK, I will remember that."))
        .with_message(Message::user_text(RECALL))
}

/// Runs the first turn, lets `lose` take the server state away, and runs the second one.
/// Returns the second turn's events and how long it took.
async fn recall_after(
    lose: impl FnOnce(&Replica, &str),
) -> (ReplicaServer, Vec<AgentEvent>, Duration) {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = durable_session(&replica, dir.path());
    assert!(ended_normally(
        &whole_turn(&session, ask(FIRST), "composer-2.5").await
    ));
    let first_id = replica.runs()[0].conversation_id.clone();
    lose(&replica, &first_id);
    let started = std::time::Instant::now();
    let events = whole_turn(&session, second_turn(), "composer-2.5").await;
    (replica, events, started.elapsed())
}

/// The second turn resumed, found the state gone, and rebuilt exactly once from the transcript.
fn rebuilt_once(replica: &Replica, events: &[AgentEvent], lost_outcome: &str) {
    assert!(ended_normally(events), "{events:?}");
    assert!(text(events).contains("ZEBRA-9"), "{events:?}");
    let runs = replica.runs();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(runs[1].label, "agent-resume", "{runs:?}");
    assert_eq!(runs[1].outcome, lost_outcome, "{runs:?}");
    assert_eq!(runs[2].label, "agent-rebuild", "{runs:?}");
    assert_ne!(runs[2].conversation_id, runs[0].conversation_id);
    assert_eq!(runs[2].root_prompt_user_texts, [FIRST], "{runs:?}");
}

#[tokio::test]
async fn conversation_data_missing_rebuilds_once_and_the_turn_completes() {
    let (replica, events, took) =
        recall_after(|replica, id| replica.lose(id, StateLoss::ConversationData)).await;
    rebuilt_once(&replica, &events, "state-lost: ConversationData");
    println!("conversation data missing: 1 extra Run, the turn took {took:?}");
}

#[tokio::test]
async fn a_blob_the_server_lost_rebuilds_once_and_the_turn_completes() {
    let (replica, events, took) =
        recall_after(|replica, id| replica.lose(id, StateLoss::Blob)).await;
    rebuilt_once(&replica, &events, "state-lost: Blob");
    println!("blob not found: 1 extra Run, the turn took {took:?}");
}

#[tokio::test]
async fn an_expired_checkpoint_rebuilds_once_and_the_turn_completes() {
    let (replica, events, took) = recall_after(|replica, _| {
        replica.set_checkpoint_ttl(Some(Duration::from_millis(50)));
        std::thread::sleep(Duration::from_millis(80));
    })
    .await;
    rebuilt_once(&replica, &events, "state-lost: ConversationData");
    println!("expired checkpoint: 1 extra Run, the turn took {took:?}");
}

/// The backend restarts while the host runs a tool: the results have no tool session to go
/// to, so the turn rebuilds once with them from the transcript instead of failing.
#[tokio::test]
async fn a_tool_session_lost_in_a_restart_rebuilds_once_with_the_tool_results() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = durable_session(&replica, dir.path());
    let asked = ask(r#"tool: read_file {"path": "notes.txt"}"#);
    let model = ModelChoice::new("composer-2.5");
    let mut leg = session.turn(&asked, &model);
    let mut calls = Vec::new();
    while let Some(event) = tokio::time::timeout(WAIT, leg.next()).await.unwrap() {
        if let AgentEvent::Ir(Event::ToolCall(call)) = event {
            calls.push(call);
        }
    }
    drop(leg);
    assert_eq!(calls.len(), 1);
    replica.restart();
    let started = std::time::Instant::now();
    let answered = asked
        .with_message(Message::assistant_tool_calls(calls.clone()))
        .with_message(Message::ToolResult(host_answer(&calls[0])));
    let events = whole_turn(&session, answered, "composer-2.5").await;
    let took = started.elapsed();
    assert!(ended_normally(&events), "{events:?}");
    let runs = replica.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0].outcome, "state-lost: ToolSession", "{runs:?}");
    assert_eq!(runs[1].label, "agent-rebuild", "{runs:?}");
    assert_eq!(
        runs[1].root_prompt_tool_results,
        ["the file says hello"],
        "{runs:?}"
    );
    println!("tool session lost in a restart: 1 extra Run, the leg took {took:?}");
}

/// Never a loop: a second loss in the same turn reaches the host, classified.
#[tokio::test]
async fn a_second_loss_in_the_same_turn_fails_with_a_classified_error() {
    let (replica, events, _) = recall_after(|replica, _| {
        replica.script(Script::LoseState(StateLoss::ConversationData));
        replica.script(Script::LoseState(StateLoss::Blob));
    })
    .await;
    let info = error_of(&events);
    assert_eq!(info.kind, ErrorKind::RemoteRefusal, "{info:?}");
    assert_eq!(info.next_step, NextStep::Retry, "{info:?}");
    assert!(info.message.contains("Blob not found"), "{info:?}");
    assert_eq!(replica.runs().len(), 3);
}

// --- the rules mixed --------------------------------------------------------------------------

/// 200 rounds, each a conversation of two turns with one live rule firing on the second (in
/// rotation: the dash and `mcp_` tool names, a capacity refusal, conversation data and a blob
/// the server lost, a stream reset before the first frame, every interaction query kind, and a
/// context overflow). Every round whose rule the session can recover from completes with the
/// right answer; the overflow rounds end asking the host to compact, as they must.
#[tokio::test]
async fn two_hundred_chaos_rounds_with_the_rules_mixed_in_end_as_completed_turns() {
    use cursor_agent::testing::Fault;
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let (mut completed, mut compact) = (0, 0);
    let runs_before_rounds = replica.runs().len();
    for round in 0..200 {
        let session = AgentSession::builder(
            Client::new().expect("client"),
            replica.origin(),
            Arc::new(StaticToken::new("token")),
        )
        .profile(HostProfile::new("acme"))
        .workspace_uri("file:///work")
        .session_id(format!("chaos-{round}"))
        .handles(Arc::new(HandleStore::new(dir.path())))
        .timers(timers())
        .build();
        let fact = format!("remember CHAOS-{round}");
        let first = whole_turn(&session, ask(&fact), "composer-2.5").await;
        assert!(ended_normally(&first), "round {round}: {first:?}");
        let id = replica.runs().last().unwrap().conversation_id.clone();
        let rule = round % 8;
        match rule {
            0 => replica.set_tool_naming(ToolNaming::Dash),
            1 => replica.set_tool_naming(ToolNaming::Mcp),
            2 => replica.script(Script::Exhausted(Exhaustion::Capacity)),
            3 => replica.lose(&id, StateLoss::ConversationData),
            4 => replica.lose(&id, StateLoss::Blob),
            5 => replica.script(Script::FaultBeforeFirstFrame(Fault::ResetStream)),
            6 => replica.set_interaction_probe(Some(Duration::from_millis(500))),
            _ => replica.script(Script::Exhausted(Exhaustion::ContextOverflow)),
        }
        let second_text = if rule < 2 {
            r#"tool: read_file {"path": "notes.txt"}"#
        } else {
            RECALL
        };
        let second = ask(&fact)
            .with_message(Message::assistant_text("OK, I will remember that."))
            .with_message(Message::user_text(second_text));
        let events = whole_turn(&session, second, "composer-2.5").await;
        replica.set_tool_naming(ToolNaming::Bare);
        replica.set_interaction_probe(None);
        if rule == 7 {
            assert_eq!(error_of(&events).next_step, NextStep::CompactConversation);
            compact += 1;
            continue;
        }
        assert!(
            ended_normally(&events),
            "round {round} (rule {rule}): {events:?}"
        );
        let answer = text(&events);
        let right = if rule < 2 {
            answer.contains("the file says hello")
        } else {
            answer.contains(&format!("CHAOS-{round}"))
        };
        assert!(right, "round {round} (rule {rule}): {answer}");
        completed += 1;
    }
    let runs = replica.runs().len() - runs_before_rounds;
    println!(
        "200 chaos rounds: {completed} completed ({}%), {compact} asked the host to compact; \
         {runs} Runs for 400 turns; {:?}",
        completed * 100 / 200,
        started.elapsed()
    );
    assert_eq!((completed, compact), (175, 25));
}
