//! The async driver against the loopback replica and a scripted loopback server.

use std::time::Duration;

use cursor_agent::testing::{Replica, Script};
use cursor_agent::{AgentEvent, AgentRun, ExecOutcome, RunConfig, driver};
use cursor_proto::agent::v1::{
    self as w, AgentClientMessage, AgentServerMessage, agent_client_message::Message as Client,
    agent_server_message::Message as Server, interaction_update::Message as Update,
};
use cursor_proto::ir::{
    Conversation, ErrorInfo, ErrorKind, Event, Message, StopReason, Tool, ToolResult,
};
use cursor_transport::testing::{REASON_CANCEL, TestServer};
use cursor_transport::{Client as Transport, Origin, RequestHeaders};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(10);

fn add_tool() -> Tool {
    Tool::new(
        "add",
        "Add two numbers",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
    )
}

fn bash_tool() -> Tool {
    Tool::new(
        "bash",
        "Run a shell command",
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    )
}

fn conversation(text: &str, tools: Vec<Tool>) -> Conversation {
    let mut conversation =
        Conversation::new("You are terse.").with_message(Message::user_text(text));
    conversation.tools = tools;
    conversation
}

fn config() -> RunConfig {
    RunConfig::new(
        "composer-2.5",
        "file:///work",
        cursor_agent::IdSeed::fixed([3; 16]),
    )
    .with_profile(cursor_agent::HostProfile::new("pi"))
}

fn start(
    origin: Origin,
    config: RunConfig,
    conversation: &Conversation,
) -> (
    driver::RunHandle,
    driver::RunEvents,
    tokio::task::JoinHandle<AgentRun>,
) {
    let run = AgentRun::new(config, conversation, driver::now()).expect("run opens");
    let client = Transport::new().expect("client");
    let (handle, events, task) = driver::start(client, origin, RequestHeaders::new(), run);
    (handle, events, tokio::spawn(task))
}

/// The host events up to and including the end of the current leg.
async fn leg(events: &mut driver::RunEvents) -> Vec<Event> {
    leg_within(events, WAIT).await
}

/// Like [`leg`], with a deadline of `wait` on tokio's clock.
async fn leg_within(events: &mut driver::RunEvents, wait: Duration) -> Vec<Event> {
    let mut out = Vec::new();
    loop {
        let event = tokio::time::timeout(wait, events.recv())
            .await
            .expect("an event in time");
        match event {
            Some(AgentEvent::Ir(event)) => {
                let end = matches!(event, Event::Done { .. } | Event::Error(_) | Event::Aborted);
                out.push(event);
                if end {
                    return out;
                }
            }
            Some(_) => {}
            None => return out,
        }
    }
}

fn text_of(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn error_of(events: &[Event]) -> &ErrorInfo {
    match events.last() {
        Some(Event::Error(info)) => info,
        other => panic!("the leg did not fail: {other:?}"),
    }
}

#[tokio::test]
async fn ping_streams_pong_and_the_task_returns_the_checkpointed_run() {
    let replica = Replica::start().await.unwrap();
    let (_handle, mut events, task) =
        start(replica.origin(), config(), &conversation("ping", vec![]));
    let mut deltas = 0;
    let mut all = Vec::new();
    while let Some(event) = tokio::time::timeout(WAIT, events.recv()).await.unwrap() {
        if matches!(event, AgentEvent::Ir(Event::TextDelta { .. })) {
            deltas += 1;
        }
        all.push(event);
    }
    assert_eq!(deltas, 1);
    assert_eq!(
        all[0],
        AgentEvent::Ir(Event::TextDelta {
            text: "pong".into()
        })
    );
    assert!(matches!(
        all.last(),
        Some(AgentEvent::Ir(Event::Done {
            reason: StopReason::Stop
        }))
    ));
    assert!(all.iter().any(|e| matches!(e, AgentEvent::Checkpoint(_))));

    let run = tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
    assert!(run.is_finished());
    assert!(run.checkpoint().is_some());
    let runs = replica.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].label, "agent-rebuild");
    assert_eq!(runs[0].outcome, "completed");
    assert_eq!(runs[0].conversation_id, run.conversation_id());
    assert!(
        runs[0].blobs_fetched >= 1,
        "the rules blob was fetched over KV"
    );
    assert!(!runs[0].history_replayed);
}

#[tokio::test]
async fn an_mcp_tool_round_runs_as_two_legs_on_one_stream() {
    let replica = Replica::start().await.unwrap();
    let conversation = conversation(r#"tool: add {"a": 2, "b": 3}"#, vec![add_tool()]);
    let (handle, mut events, task) = start(replica.origin(), config(), &conversation);

    let first = leg(&mut events).await;
    let Some(Event::ToolCall(call)) = first.iter().find(|e| matches!(e, Event::ToolCall(_))) else {
        panic!("no tool call: {first:?}");
    };
    assert_eq!(call.name, "add");
    assert_eq!(call.arguments, json!({"a": 2, "b": 3}));
    assert_eq!(
        first.last(),
        Some(&Event::Done {
            reason: StopReason::ToolUse
        })
    );

    handle
        .submit_tool_results(vec![ToolResult::text(&call.id, "add", "5", false)])
        .await
        .expect("results accepted");
    let second = leg(&mut events).await;
    assert_eq!(text_of(&second), "The tool add answered: 5");
    assert_eq!(
        second.last(),
        Some(&Event::Done {
            reason: StopReason::Stop
        })
    );
    tokio::time::timeout(WAIT, task).await.unwrap().unwrap();

    // One record: both legs were one Run stream.
    let runs = replica.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].execs.len(), 1);
    assert_eq!(runs[0].execs[0].kind, "mcp");
    assert_eq!(runs[0].execs[0].result, "5");
    assert_eq!(runs[0].execs[0].status, "success");
}

#[tokio::test]
async fn a_native_shell_exec_reaches_the_host_as_a_call_of_its_command_tool() {
    let replica = Replica::start().await.unwrap();
    let conversation = conversation("run: echo hi", vec![bash_tool()]);
    let (handle, mut events, task) = start(replica.origin(), config(), &conversation);

    let mut audits = Vec::new();
    let mut first = Vec::new();
    loop {
        match tokio::time::timeout(WAIT, events.recv()).await.unwrap() {
            Some(AgentEvent::Exec(audit)) => audits.push(audit),
            Some(AgentEvent::Ir(event)) => {
                let end = matches!(event, Event::Done { .. } | Event::Error(_));
                first.push(event);
                if end {
                    break;
                }
            }
            Some(_) => {}
            None => panic!("stream ended early"),
        }
    }
    let Some(Event::ToolCall(call)) = first.first() else {
        panic!("no tool call: {first:?}");
    };
    assert_eq!(call.name, "bash");
    assert_eq!(call.arguments["command"], "cd -- '/work' && {\necho hi\n}");
    assert!(matches!(&audits[0].outcome, ExecOutcome::Translated { tool, .. } if tool == "bash"));

    handle
        .submit_tool_results(vec![ToolResult::text(&call.id, "bash", "hi\n", false)])
        .await
        .unwrap();
    let second = leg(&mut events).await;
    assert_eq!(text_of(&second), "The command printed: hi");
    tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
    let exec = &replica.runs()[0].execs[0];
    assert_eq!(
        (exec.kind.as_str(), exec.status.as_str()),
        ("shell_stream", "success")
    );
    assert_eq!(exec.result, "hi\n");
}

#[tokio::test]
async fn without_a_command_tool_the_shell_exec_is_refused_in_band() {
    let replica = Replica::start().await.unwrap();
    let (_handle, mut events, task) = start(
        replica.origin(),
        config(),
        &conversation("run: rm -rf /", vec![]),
    );
    let events = leg(&mut events).await;
    assert!(
        text_of(&events).starts_with("The command was refused: "),
        "{events:?}"
    );
    tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
    assert_eq!(replica.runs()[0].execs[0].status, "rejected");
}

#[tokio::test]
async fn cancel_aborts_the_leg_and_resets_the_stream() {
    let mut server = TestServer::start().await.unwrap();
    let (handle, mut events, task) =
        start(server.origin(), config(), &conversation("ping", vec![]));
    let mut call = tokio::time::timeout(WAIT, server.accept())
        .await
        .unwrap()
        .unwrap();
    let request: AgentClientMessage = call.recv_message().await.unwrap().unwrap();
    assert!(matches!(request.message, Some(Client::RunRequest(_))));
    call.send_headers().unwrap();

    handle.cancel();
    assert_eq!(leg(&mut events).await, vec![Event::Aborted]);
    assert_eq!(
        tokio::time::timeout(WAIT, call.wait_for_reset())
            .await
            .unwrap(),
        Some(REASON_CANCEL)
    );
    assert!(
        tokio::time::timeout(WAIT, task)
            .await
            .unwrap()
            .unwrap()
            .is_finished()
    );
    assert!(handle.is_closed());
}

#[tokio::test]
async fn dropping_the_event_stream_cancels_the_run() {
    let mut server = TestServer::start().await.unwrap();
    let (_handle, events, task) = start(server.origin(), config(), &conversation("ping", vec![]));
    let mut call = tokio::time::timeout(WAIT, server.accept())
        .await
        .unwrap()
        .unwrap();
    let _: Option<AgentClientMessage> = call.recv_message().await.unwrap();
    call.send_headers().unwrap();
    drop(events);
    assert_eq!(
        tokio::time::timeout(WAIT, call.wait_for_reset())
            .await
            .unwrap(),
        Some(REASON_CANCEL)
    );
    assert!(
        tokio::time::timeout(WAIT, task)
            .await
            .unwrap()
            .unwrap()
            .is_finished()
    );
}

#[tokio::test]
async fn a_401_on_open_is_an_auth_error() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::Unauthenticated);
    let (_handle, mut events, task) =
        start(replica.origin(), config(), &conversation("ping", vec![]));
    let events = leg(&mut events).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(error_of(&events).kind, ErrorKind::Auth);
    tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
    assert_eq!(replica.runs()[0].outcome, "unauthenticated");
}

#[tokio::test]
async fn a_malformed_frame_is_protocol_drift() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::MalformedFrame);
    let (_handle, mut events, task) =
        start(replica.origin(), config(), &conversation("ping", vec![]));
    assert_eq!(
        error_of(&leg(&mut events).await).kind,
        ErrorKind::ProtocolDrift
    );
    tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_not_found_end_of_stream_fails_the_turn_with_the_servers_error() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::NotFound);
    let (_handle, mut events, task) =
        start(replica.origin(), config(), &conversation("ping", vec![]));
    let events = leg(&mut events).await;
    assert!(
        error_of(&events).message.contains("conversation not found"),
        "{events:?}"
    );
    tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
}

/// The typed failure travels with the event stream: a host holding the `Error` event can tell
/// what it was without awaiting the task (which it may have handed to an executor).
#[tokio::test]
async fn the_typed_failure_is_readable_beside_the_error_event() {
    let replica = Replica::start().await.unwrap();
    replica.script(Script::MalformedFrame);
    let (_handle, mut events, task) =
        start(replica.origin(), config(), &conversation("ping", vec![]));
    assert!(events.failure().is_none());
    let leg = leg(&mut events).await;
    let failure = events
        .failure()
        .expect("the failure is set before its event");
    assert!(
        matches!(failure, cursor_agent::AgentError::ProtocolDrift { .. }),
        "{failure:?}"
    );
    assert_eq!(failure.to_string(), error_of(&leg).message);
    let run = tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
    assert_eq!(run.failure(), Some(failure));
}

#[tokio::test]
async fn a_silent_server_trips_the_first_frame_watchdog_on_tokio_time() {
    let mut server = TestServer::start().await.unwrap();
    // The watchdog counts from the run's opening, not from the pause below.
    let opened = tokio::time::Instant::now();
    let (_handle, mut events, task) =
        start(server.origin(), config(), &conversation("ping", vec![]));
    let mut call = tokio::time::timeout(WAIT, server.accept())
        .await
        .unwrap()
        .unwrap();
    let _: Option<AgentClientMessage> = call.recv_message().await.unwrap();
    // A heartbeat is not work: the watchdog keeps running.
    let heartbeat = AgentServerMessage {
        message: Some(Server::InteractionUpdate(w::InteractionUpdate {
            message: Some(Update::Heartbeat(w::HeartbeatUpdate::default())),
            ..Default::default()
        })),
        ..Default::default()
    };
    call.send_message(&heartbeat).await.unwrap();

    // The stream is up; from here on the clock only moves when the runtime is idle.
    tokio::time::pause();
    let events = leg_within(&mut events, Duration::from_secs(300)).await;
    let info = error_of(&events);
    assert_eq!(info.kind, ErrorKind::Network);
    assert!(info.message.contains("30s"), "{info:?}");
    assert!(opened.elapsed() >= Duration::from_secs(30));
    assert!(task.await.unwrap().is_finished());
}

#[tokio::test]
async fn a_server_holding_the_stream_open_after_turn_ended_does_not_hold_the_turn() {
    let replica = Replica::start().await.unwrap();
    replica.set_hold_open(cursor_agent::testing::HoldOpen::Forever);
    let (_handle, mut events, task) =
        start(replica.origin(), config(), &conversation("ping", vec![]));
    let leg = leg(&mut events).await;
    assert_eq!(
        leg.last(),
        Some(&Event::Done {
            reason: StopReason::Stop
        })
    );
    // The event stream ends although the server never ends its side (a held turn would
    // never end it); the task lets go of the stream shortly after.
    assert_eq!(
        tokio::time::timeout(WAIT, events.recv()).await.unwrap(),
        None
    );
    tokio::time::timeout(Duration::from_secs(3), task)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn results_for_a_finished_run_are_refused() {
    let replica = Replica::start().await.unwrap();
    let (handle, mut events, task) =
        start(replica.origin(), config(), &conversation("ping", vec![]));
    leg(&mut events).await;
    tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
    let refused = handle
        .submit_tool_results(vec![ToolResult::text("exec-1", "add", "5", false)])
        .await;
    assert_eq!(refused, Err(cursor_agent::AgentError::NotAwaitingTools));
}

#[tokio::test]
async fn heartbeats_keep_the_stream_warm_while_the_host_runs_its_tools() {
    let mut server = TestServer::start().await.unwrap();
    let (handle, mut events, task) = start(
        server.origin(),
        config(),
        &conversation("add please", vec![add_tool()]),
    );
    let mut call = tokio::time::timeout(WAIT, server.accept())
        .await
        .unwrap()
        .unwrap();
    let _: Option<AgentClientMessage> = call.recv_message().await.unwrap();
    let mcp = AgentServerMessage {
        message: Some(Server::ExecServerMessage(w::ExecServerMessage {
            id: 1,
            exec_id: "x1".into(),
            message: Some(w::exec_server_message::Message::McpArgs(w::McpArgs {
                name: "add".into(),
                tool_name: "add".into(),
                tool_call_id: "c1".into(),
                provider_identifier: "pi".into(),
                args: Default::default(),
                server_identifier: "pi".into(),
            })),
            ..Default::default()
        })),
        ..Default::default()
    };
    call.send_message(&mcp).await.unwrap();
    let first = leg(&mut events).await;
    assert_eq!(
        first.last(),
        Some(&Event::Done {
            reason: StopReason::ToolUse
        })
    );

    // The host takes a minute; the driver keeps the stream warm on its own meanwhile.
    tokio::time::pause();
    let frame: AgentClientMessage =
        tokio::time::timeout(Duration::from_secs(60), call.recv_message())
            .await
            .expect("a frame while the host works")
            .unwrap()
            .unwrap();
    assert!(
        matches!(frame.message, Some(Client::ClientHeartbeat(_))),
        "{frame:?}"
    );
    tokio::time::resume();

    let Some(Event::ToolCall(tool_call)) = first.first() else {
        panic!("{first:?}")
    };
    handle
        .submit_tool_results(vec![ToolResult::text(&tool_call.id, "add", "0", false)])
        .await
        .unwrap();
    let reply: AgentClientMessage = call.recv_message().await.unwrap().unwrap();
    assert!(
        matches!(reply.message, Some(Client::ExecClientMessage(ref m)) if m.id == 1),
        "{reply:?}"
    );
    handle.cancel();
    assert_eq!(leg(&mut events).await, vec![Event::Aborted]);
    assert!(
        tokio::time::timeout(WAIT, task)
            .await
            .unwrap()
            .unwrap()
            .is_finished()
    );
}

#[tokio::test]
async fn an_origin_nobody_listens_on_is_a_network_error() {
    let port = {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        listener.local_addr().unwrap().port()
    };
    let (_handle, mut events, task) = start(
        Origin::loopback(port),
        config(),
        &conversation("ping", vec![]),
    );
    assert_eq!(error_of(&leg(&mut events).await).kind, ErrorKind::Network);
    assert!(
        tokio::time::timeout(WAIT, task)
            .await
            .unwrap()
            .unwrap()
            .is_finished()
    );
}

/// Backpressure end to end: a host that stops reading events stops the driver reading the
/// response, so HTTP/2 flow control stops the server. Of the 64 MB of text the server offers,
/// only a bounded part gets out (the event queue, 128 events of at most one 64 KiB burst each,
/// plus the 1 MiB stream window); once the host reads again, every delta arrives, whole.
#[tokio::test]
async fn a_host_that_stops_reading_holds_the_server_back_and_loses_nothing() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const OFFERED: usize = 64_000_000;
    const DELTA: usize = 1000;
    const BOUND: usize = 16 << 20;
    let mut server = TestServer::start().await.unwrap();
    let (_handle, mut events, task) =
        start(server.origin(), config(), &conversation("ping", vec![]));
    let mut call = tokio::time::timeout(WAIT, server.accept())
        .await
        .unwrap()
        .unwrap();
    let _: Option<AgentClientMessage> = call.recv_message().await.unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&sent);
    let server_task = tokio::spawn(async move {
        let text = "x".repeat(DELTA);
        let delta = AgentServerMessage {
            message: Some(Server::InteractionUpdate(w::InteractionUpdate {
                message: Some(Update::TextDelta(w::TextDeltaUpdate { text })),
                ..Default::default()
            })),
            ..Default::default()
        };
        while counter.load(Ordering::Acquire) < OFFERED {
            call.send_message(&delta).await.unwrap();
            counter.fetch_add(DELTA, Ordering::AcqRel);
        }
        let ended = AgentServerMessage {
            message: Some(Server::InteractionUpdate(w::InteractionUpdate {
                message: Some(Update::TurnEnded(w::TurnEndedUpdate::default())),
                ..Default::default()
            })),
            ..Default::default()
        };
        call.send_message(&ended).await.unwrap();
        call.finish_ok().await.unwrap();
    });

    // The host reads nothing; wait until the server cannot send more (unchanged for 500 ms).
    let mut last = usize::MAX;
    let mut still = 0;
    while still < 5 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = sent.load(Ordering::Acquire);
        assert!(
            now < OFFERED,
            "the server sent everything: nothing held it back"
        );
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    assert!(
        last < BOUND,
        "{last} bytes got out before the server was held back"
    );
    println!(
        "held back after {} KiB of {} MB offered",
        last >> 10,
        OFFERED / 1_000_000
    );

    // Reading again lets everything through, in order and whole.
    let mut text = 0;
    while let Some(event) = tokio::time::timeout(WAIT, events.recv()).await.unwrap() {
        if let AgentEvent::Ir(Event::TextDelta { text: delta }) = event {
            text += delta.len();
        }
    }
    assert_eq!(text, OFFERED);
    server_task.await.unwrap();
    assert!(task.await.unwrap().is_finished());
}
