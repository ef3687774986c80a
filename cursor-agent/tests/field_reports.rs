//! What other clients saw the live backend do from August to October 2026 (docs/PROTOCOL-AGENT.md
//! §12), replayed by the replica and answered through `AgentSession`'s public API: arm 36 before
//! a Grok model's tool use, the allowed-tools header, native execs that arrive despite it.

mod host;

use std::sync::Arc;
use std::time::Duration;

use cursor_agent::session::{AgentSession, CliIdentity, ModelChoice, StaticToken};
use cursor_agent::testing::{
    AllowedTools, Fault, McpStateRequests, Replica, ReplicaServer, RunRecord, Script,
};
use cursor_agent::{
    AgentEvent, ExecArm, ExecOutcome, HandleStore, HostProfile, MCP_TOOL_GROUP, Timers,
};
use cursor_proto::ir::{
    Conversation, ErrorKind, Event, Message, NextStep, StopReason, Tool, ToolCall, ToolResult,
};
use cursor_transport::Client;
use cursor_transport::headers::DEFAULT_CLI_VERSION;
use host::{ended_normally, error_of, text};
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

fn session(replica: &ReplicaServer) -> AgentSession {
    AgentSession::builder(
        Client::new().expect("client"),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
    .workspace_uri("file:///work")
    .build()
}

fn ask(text: &str) -> Conversation {
    let mut conversation = Conversation::new("").with_message(Message::user_text(text));
    conversation.tools = tools();
    conversation
}

/// What the host's own tools answer (nothing runs: the test plays the host).
fn host_answer(call: &ToolCall) -> ToolResult {
    let text = match call.name.as_str() {
        "bash" => format!(
            "ran {}",
            call.arguments["command"].as_str().unwrap_or_default()
        ),
        "read_file" => "the file says hello".to_owned(),
        other => format!("no such tool {other}"),
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

/// docs/PROTOCOL-AGENT.md §12.1: since 2026-09-21 Grok models ask for the client's MCP state (exec
/// arm 36) before any tool use and call a tool only when that state lists it. A client that throws
/// the request leaves the model narrating without tools.
#[tokio::test]
async fn a_grok_model_calls_the_host_tool_after_the_mcp_state_lists_it() {
    let replica = Replica::start().await.unwrap();
    let session = session(&replica);
    let events = whole_turn(
        &session,
        ask(r#"tool: read_file {"path": "notes.txt"}"#),
        "grok-4.7",
    )
    .await;
    assert!(ended_normally(&events), "{events:?}");
    let said = text(&events);
    assert!(said.contains("the file says hello"), "{said}");
    let run = only_run(&replica);
    let kinds: Vec<(&str, &str)> = run
        .execs
        .iter()
        .map(|e| (e.kind.as_str(), e.status.as_str()))
        .collect();
    assert_eq!(kinds, [("mcp_state", "success"), ("mcp", "success")]);
    assert_eq!(run.execs[0].result, "acme/bash, acme/read_file");
    assert!(events.iter().any(|event| matches!(
        event,
        AgentEvent::Exec(audit) if audit.arm == ExecArm::McpStateExec
            && audit.outcome == ExecOutcome::McpStateReported { servers: 1, tools: 2 }
    )));
}

/// The September models never ask: the same turn on composer needs no state request.
#[tokio::test]
async fn other_models_call_tools_without_asking_for_the_mcp_state() {
    let replica = Replica::start().await.unwrap();
    replica.set_mcp_state_requests(McpStateRequests::GrokModels);
    let events = whole_turn(
        &session(&replica),
        ask(r#"tool: read_file {"path": "notes.txt"}"#),
        "composer-2.5",
    )
    .await;
    assert!(ended_normally(&events));
    let run = only_run(&replica);
    assert_eq!(run.execs.len(), 1);
    assert_eq!(run.execs[0].kind, "mcp");
}

/// docs/PROTOCOL-AGENT.md §12.3: every Run names only the MCP group in
/// `x-cursor-agent-allowed-tools`, and a backend that honours it serves a `run:` turn through the
/// host's command tool.
#[tokio::test]
async fn runs_send_the_allowed_tools_header_and_an_honouring_backend_uses_the_host_tool() {
    let replica = Replica::start().await.unwrap();
    replica.set_allowed_tools(AllowedTools::Honour);
    let events = whole_turn(&session(&replica), ask("run: echo hi"), "composer-2.5").await;
    assert!(ended_normally(&events));
    let run = only_run(&replica);
    assert_eq!(run.allowed_tools, Some(MCP_TOOL_GROUP.join(",")));
    assert_eq!(run.execs.len(), 1);
    assert_eq!(run.execs[0].kind, "mcp", "{:?}", run.execs);
    assert!(text(&events).contains("ran echo hi"), "{}", text(&events));
}

/// docs/PROTOCOL-AGENT.md §12.3: the header is defence in depth only. A backend that ignores it and
/// sends every kind of native exec (52–56 and an unknown arm included) still gets each one
/// translated into a host tool call, refused or thrown, never a silent or forged answer, and the
/// turn completes.
#[tokio::test]
async fn every_native_exec_is_answered_when_the_backend_ignores_the_allowed_tools_header() {
    let replica = Replica::start().await.unwrap();
    replica.set_allowed_tools(AllowedTools::Ignore);
    let events = whole_turn(
        &session(&replica),
        ask("try every native tool"),
        "composer-2.5",
    )
    .await;
    assert!(ended_normally(&events), "{events:?}");
    let run = only_run(&replica);
    assert_eq!(run.allowed_tools, Some(MCP_TOOL_GROUP.join(",")));
    let answered: Vec<(&str, &str)> = run
        .execs
        .iter()
        .map(|e| (e.kind.as_str(), e.status.as_str()))
        .collect();
    assert_eq!(
        answered,
        [
            // Translated into calls of the host's bash and read_file tools.
            ("shell_stream", "translated"),
            ("read", "translated"),
            ("glob", "translated"),
            // No host tool fetches: refused with a redirect.
            ("fetch", "error"),
            // Shell-shaped, answered at result field 55 from the host's bash.
            ("mini_swe_agent_bash", "translated"),
            // No result shape known: thrown with a redirect.
            ("conversation_search", "thrown"),
            ("agent_store_conflict", "thrown"),
            ("adopt", "thrown"),
            ("unknown", "thrown"),
        ]
    );
    // Every translated request was a call of the host's own tool, which the host answered.
    let host_calls = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Ir(Event::ToolCall(_))))
        .count();
    assert_eq!(host_calls, 4);
    let mini = &run.execs[4];
    assert!(mini.result.contains("MiniSweAgentBashResult"), "{mini:?}");
    assert!(mini.result.contains("ran "), "{mini:?}");
}

/// docs/PROTOCOL-AGENT.md §12.5: rate limits and used-up quotas arrive as HTTP 200 and an
/// end-of-stream `resource_exhausted`. That is a remote refusal whose next step is to wait for the
/// quota, with the server's own words, and the turn is not retried.
#[tokio::test]
async fn resource_exhausted_after_a_200_is_a_quota_refusal_in_the_servers_words() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::ResourceExhausted(
        "Rate limit exceeded for grok-4.7. Resets in 14 minutes.".into(),
    ));
    let events = whole_turn(&session(&replica), ask("ping"), "grok-4.7").await;
    let info = error_of(&events);
    assert_eq!(info.kind, ErrorKind::RemoteRefusal, "{info:?}");
    assert_eq!(info.next_step, NextStep::WaitForQuota, "{info:?}");
    assert!(
        info.message
            .contains("Rate limit exceeded for grok-4.7. Resets in 14 minutes."),
        "{info:?}"
    );
    assert_eq!(info.code.as_deref(), Some("resource_exhausted"));
    assert_eq!(replica.runs().len(), 1, "a refusal is never retried");
}

/// docs/PROTOCOL-AGENT.md §12.4: a stale client version is refused the same way, asking to update;
/// the next step says to send a newer client version, and raising it (no release needed) works.
#[tokio::test]
async fn a_stale_client_version_is_refused_and_raising_it_in_the_identity_works() {
    let replica = Replica::start().await.unwrap();
    replica.set_min_client_version(Some("cli-2099.01.01-0000000".into()));
    let events = whole_turn(&session(&replica), ask("ping"), "composer-2.5").await;
    let info = error_of(&events);
    assert_eq!(info.next_step, NextStep::UpdateClientVersion, "{info:?}");
    assert_eq!(replica.runs()[0].client_version, DEFAULT_CLI_VERSION);

    let raised = AgentSession::builder(
        Client::new().unwrap(),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
    .identity(CliIdentity::parse("cli-2099.02.03-abcdef1").unwrap())
    .build();
    let events = whole_turn(&raised, ask("ping"), "composer-2.5").await;
    assert!(ended_normally(&events), "{events:?}");
    assert_eq!(replica.runs()[1].client_version, "cli-2099.02.03-abcdef1");
}

/// The default client version is the newest public CLI version string (docs/PROTOCOL-AGENT.md
/// §12.4).
#[test]
fn the_default_client_version_is_the_newest_public_cli_version() {
    assert_eq!(DEFAULT_CLI_VERSION, "cli-2026.10.01-e373342");
    assert_eq!(
        CliIdentity::default().client_version.as_str(),
        DEFAULT_CLI_VERSION
    );
}

/// A text delta as the server sends it.
fn text_frame(text: &str) -> cursor_proto::agent::v1::AgentServerMessage {
    use cursor_proto::agent::v1 as w;
    w::AgentServerMessage {
        message: Some(w::agent_server_message::Message::InteractionUpdate(
            w::InteractionUpdate {
                message: Some(w::interaction_update::Message::TextDelta(
                    w::TextDeltaUpdate { text: text.into() },
                )),
                ..Default::default()
            },
        )),
        ..Default::default()
    }
}

/// Chaos before the first event: every turn's first Run meets a transport fault (a stream
/// reset, a closed connection, a GOAWAY with an error) before the server sent anything. The
/// host saw nothing, so the session opens the Run once more and the turn completes.
#[tokio::test]
async fn faults_before_the_first_event_are_retried_once_and_the_turns_complete() {
    let replica = Replica::start().await.unwrap();
    let session = session(&replica);
    let faults = [
        Fault::ResetStream,
        Fault::CloseConnection,
        Fault::GoawayWithError,
    ];
    let turns = 30;
    let mut completed = 0;
    for turn in 0..turns {
        replica.script(Script::FaultBeforeFirstFrame(faults[turn % faults.len()]));
        let events = whole_turn(&session, ask("ping"), "composer-2.5").await;
        if ended_normally(&events) && text(&events) == "pong" {
            completed += 1;
        }
        // Nothing of the failed attempt reached the host.
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, AgentEvent::Ir(Event::Error(_) | Event::Reset))),
            "{events:?}"
        );
    }
    assert_eq!(completed, turns);
    let runs = replica.runs();
    assert_eq!(runs.len(), 2 * turns);
    let faulted = runs
        .iter()
        .filter(|r| r.outcome.starts_with("fault: "))
        .count();
    assert_eq!(faulted, turns);
    println!("{faulted} faults before the first event, {completed}/{turns} turns completed");
}

/// Never twice: a second fault in a row reaches the host as the network error it is.
#[tokio::test]
async fn a_second_fault_in_a_row_is_not_retried() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::FaultBeforeFirstFrame(Fault::ResetStream));
    replica.script(Script::FaultBeforeFirstFrame(Fault::ResetStream));
    let events = whole_turn(&session(&replica), ask("ping"), "composer-2.5").await;
    assert_eq!(error_of(&events).kind, ErrorKind::Network);
    assert_eq!(replica.runs().len(), 2);
}

/// Never after a visible event: a fault after the host saw text fails the turn.
#[tokio::test]
async fn a_fault_after_a_visible_event_is_not_retried() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::FramesThenFault(
        vec![text_frame("po")],
        Fault::ResetStream,
    ));
    let events = whole_turn(&session(&replica), ask("ping"), "composer-2.5").await;
    assert_eq!(text(&events), "po");
    assert_eq!(error_of(&events).kind, ErrorKind::Network);
    assert_eq!(replica.runs().len(), 1);
}

/// Never after an exec audit either: the host already received the `Exec` record of a
/// `request_context` the Run answered, so a fault after it fails the turn instead of opening
/// the Run again and handing the host the same audit twice.
#[tokio::test]
async fn a_fault_after_an_exec_audit_is_not_retried() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::FramesThenFault(Vec::new(), Fault::ResetStream));
    replica.script(Script::FramesThenFault(Vec::new(), Fault::ResetStream));
    let events = whole_turn(&session(&replica), ask("ping"), "composer-2.5").await;
    let audits: Vec<&ExecArm> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Exec(audit) => Some(&audit.arm),
            _ => None,
        })
        .collect();
    assert_eq!(audits, [&ExecArm::RequestContext], "{events:?}");
    assert_eq!(error_of(&events).kind, ErrorKind::Network);
    assert_eq!(replica.runs().len(), 1);
}

/// A session keeping its handles in `dir`, with a short first-frame watchdog so a stalled Run
/// fails within the test instead of after 30 s.
fn durable_session(replica: &ReplicaServer, dir: &std::path::Path) -> AgentSession {
    let mut timers = Timers::default();
    timers.first_frame_timeout = Duration::from_secs(3);
    timers.heartbeat_interval = Duration::from_secs(1);
    AgentSession::builder(
        Client::new().expect("client"),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
    .workspace_uri("file:///work")
    .session_id("s-1")
    .handles(Arc::new(HandleStore::new(dir)))
    .timers(timers)
    .build()
}

/// Reads one leg to its end.
async fn one_leg(session: &AgentSession, conversation: &Conversation) -> Vec<AgentEvent> {
    let mut turn = session.turn(conversation, &ModelChoice::new("composer-2.5"));
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(WAIT, turn.next())
        .await
        .expect("no stall")
    {
        events.push(event);
    }
    events
}

async fn runs_recorded(replica: &Replica, count: usize) -> Vec<RunRecord> {
    for _ in 0..200 {
        let runs = replica.runs();
        if runs.len() >= count {
            return runs;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the replica recorded {:?}", replica.runs());
}

/// docs/PROTOCOL-AGENT.md §12.5: a tool round abandoned while the server waits for its result
/// poisons the remote conversation: a later Run that resumes it stalls. The host's retry of the
/// same turn (pi retries turns that failed on the network) must not resume into it.
#[tokio::test]
async fn a_retried_turn_after_an_abandoned_tool_round_does_not_resume_the_waiting_conversation() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let first = Conversation::new("").with_message(Message::user_text("remember ZEBRA-9"));
    let session = durable_session(&replica, dir.path());
    assert!(ended_normally(
        &whole_turn(&session, first.clone(), "composer-2.5").await
    ));

    // The next turn asks for a tool; the process dies while the host runs it.
    let mut ask = first
        .with_message(Message::assistant_text("OK, I will remember that."))
        .with_message(Message::user_text(
            r#"tool: read_file {"path": "notes.txt"}"#,
        ));
    ask.tools = tools();
    let leg = one_leg(&session, &ask).await;
    assert!(matches!(
        leg.last(),
        Some(AgentEvent::Ir(Event::Done {
            reason: StopReason::ToolUse
        }))
    ));
    drop(session);
    let runs = runs_recorded(&replica, 2).await;
    let poisoned = runs[1].conversation_id.clone();
    assert!(replica.owes_tool_result(&poisoned));

    // A new process retries the same turn.
    let retry = durable_session(&replica, dir.path());
    let events = whole_turn(&retry, ask.clone(), "composer-2.5").await;
    assert!(ended_normally(&events), "{events:?}");
    assert!(text(&events).contains("the file says hello"), "{events:?}");
    let runs = replica.runs();
    let retried = runs.last().unwrap();
    assert_ne!(retried.conversation_id, poisoned, "{runs:?}");
    assert_eq!(retried.label, "agent-rebuild");
    assert!(
        runs.iter()
            .skip(2)
            .all(|run| run.conversation_id != poisoned),
        "{runs:?}"
    );

    // The rebuilt conversation is resumed afterwards.
    let next = ask
        .with_message(Message::assistant_text("done"))
        .with_message(Message::user_text("what did I ask you to remember?"));
    let events = whole_turn(&retry, next, "composer-2.5").await;
    assert!(text(&events).contains("ZEBRA-9"), "{events:?}");
    assert_eq!(replica.runs().last().unwrap().label, "agent-resume");
}

/// docs/PROTOCOL-AGENT.md §12.5: a rebuild of a long history made the server fetch one blob per old
/// turn. Turns older than the last 20 ride in one archive blob, and what they said still reaches
/// the model.
#[tokio::test]
async fn a_200_turn_rebuild_fetches_a_bounded_number_of_blobs_and_keeps_old_facts() {
    let replica = Replica::start().await.unwrap();
    let mut conversation = Conversation::new("");
    for turn in 0..200 {
        let said = if turn == 3 {
            "remember the pass phrase XK-PLATYPUS-77".to_owned()
        } else {
            format!("small talk {turn}")
        };
        conversation = conversation
            .with_message(Message::user_text(said))
            .with_message(Message::assistant_text(format!("reply {turn}")));
    }
    let conversation =
        conversation.with_message(Message::user_text("what did I ask you to remember?"));
    let events = whole_turn(&session(&replica), conversation, "composer-2.5").await;
    assert!(
        text(&events).contains("XK-PLATYPUS-77"),
        "{}",
        text(&events)
    );
    let run = only_run(&replica);
    assert_eq!(run.label, "agent-rebuild");
    // The rules, the archive, and 20 turns of a user and an assistant message each.
    assert_eq!(run.blobs_fetched, 2 + 2 * 20);
    println!(
        "200-turn rebuild: {} root-prompt blobs fetched (one per message would be {})",
        run.blobs_fetched,
        1 + 2 * 200
    );
}

/// After the host compacts its transcript (older turns replaced by a summary), the next turn
/// rebuilds once, and the turns after it resume the new conversation.
#[tokio::test]
async fn a_compacted_transcript_rebuilds_once_and_resumes_afterwards() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = durable_session(&replica, dir.path());
    let mut conversation = Conversation::new("");
    for said in ["remember ZEBRA-9", "ping", "remember the door is blue"] {
        conversation = conversation.with_message(Message::user_text(said));
        let events = whole_turn(&session, conversation.clone(), "composer-2.5").await;
        conversation = conversation.with_message(Message::assistant_text(text(&events)));
    }
    let labels: Vec<String> = replica.runs().iter().map(|r| r.label.clone()).collect();
    assert_eq!(labels, ["agent-rebuild", "agent-resume", "agent-resume"]);

    // The host compacts: a summary replaces everything but the last turn.
    let last_two = conversation.messages[conversation.messages.len() - 2..].to_vec();
    let mut compacted = Conversation::new("").with_message(Message::user_text(
        "Summary of the conversation so far: the user asked me to remember ZEBRA-9.",
    ));
    compacted.messages.extend(last_two);
    let mut conversation = compacted.with_message(Message::user_text("ping"));
    let events = whole_turn(&session, conversation.clone(), "composer-2.5").await;
    assert!(ended_normally(&events));
    conversation = conversation.with_message(Message::assistant_text(text(&events)));
    conversation = conversation.with_message(Message::user_text("what did I ask you to remember?"));
    let events = whole_turn(&session, conversation, "composer-2.5").await;
    assert!(
        text(&events).contains("the door is blue"),
        "{}",
        text(&events)
    );
    let runs = replica.runs();
    let labels: Vec<&str> = runs[3..].iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["agent-rebuild", "agent-resume"]);
    assert_ne!(runs[3].conversation_id, runs[2].conversation_id);
    assert_eq!(runs[4].conversation_id, runs[3].conversation_id);
    // The resume adds no history: its root prompt is the rebuilt one, from the checkpoint.
    assert_eq!(
        runs[4].root_prompt_user_texts,
        runs[3].root_prompt_user_texts
    );
}
