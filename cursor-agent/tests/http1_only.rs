//! Turns through `AgentSession` on a network that passes only HTTP/1.1 (PROTOCOL-AGENT §13.8):
//! the replica refuses HTTP/2 Runs and serves them as RunSSE plus BidiAppend, and the client
//! moves there; an HTTP/2 open that merely times out never starts a second Run.

mod host;

use std::sync::Arc;
use std::time::Duration;

use cursor_agent::AgentEvent;
use cursor_agent::session::{AgentSession, ModelChoice, StaticToken};
use cursor_agent::testing::{Replica, ReplicaServer};
use cursor_agent::{HandleStore, HostProfile, Timers};
use cursor_proto::ir::{Conversation, ErrorKind, Event, Message, Tool, ToolCall, ToolResult};
use cursor_transport::testing::{H2Refusal, TestServer};
use cursor_transport::{Client, Origin};
use host::{ended_normally, text};
use serde_json::json;

fn tools() -> Vec<Tool> {
    vec![Tool::new(
        "read_file",
        "Read a file",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )]
}

fn session(origin: Origin, dir: &std::path::Path, timers: Timers) -> AgentSession {
    AgentSession::builder(
        Client::new().expect("client"),
        origin,
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
    .workspace_uri("file:///work")
    .session_id("s-1")
    .handles(Arc::new(HandleStore::new(dir)))
    .timers(timers)
    .build()
}

fn ask(text: &str) -> Conversation {
    let mut conversation = Conversation::new("").with_message(Message::user_text(text));
    conversation.tools = tools();
    conversation
}

fn host_answer(call: &ToolCall) -> ToolResult {
    ToolResult::text(
        call.id.clone(),
        call.name.clone(),
        "the file says hello",
        false,
    )
}

/// A whole turn as a host runs it, tool legs answered by `host_answer`.
async fn whole_turn(session: &AgentSession, conversation: Conversation) -> Vec<AgentEvent> {
    host::whole_turn(
        session,
        conversation,
        &ModelChoice::new("composer-2.5"),
        host_answer,
    )
    .await
}

/// A tool turn and then a turn that resumes it, both over RunSSE plus BidiAppend.
async fn tool_turn_and_resume(replica: &ReplicaServer) {
    let dir = tempfile::tempdir().unwrap();
    let session = session(replica.origin(), dir.path(), Timers::default());
    let first = ask(r#"tool: read_file {"path": "notes.txt"}"#);
    let events = whole_turn(&session, first.clone()).await;
    assert!(ended_normally(&events), "{events:?}");
    assert!(text(&events).contains("the file says hello"), "{events:?}");

    let second = first
        .with_message(Message::assistant_text(text(&events)))
        .with_message(Message::user_text("and again?"));
    let events = whole_turn(&session, second).await;
    assert!(ended_normally(&events), "{events:?}");

    let runs = replica.runs();
    assert!(runs.iter().all(|run| run.http1), "{runs:?}");
    assert_eq!(
        runs.first().map(|r| r.label.as_str()),
        Some("agent-rebuild")
    );
    // The tool round was audited as on HTTP/2: one exec, answered with the host's result.
    let execs: Vec<_> = runs.iter().flat_map(|run| run.execs.iter()).collect();
    assert_eq!(execs.len(), 1, "{runs:?}");
    assert_eq!(execs[0].status, "success", "{runs:?}");
    let last = runs.last().unwrap();
    assert_eq!(last.label, "agent-resume", "{runs:?}");
    assert_eq!(last.conversation_id, runs[0].conversation_id);
    assert_eq!(last.outcome, "completed", "{runs:?}");
}

#[tokio::test]
async fn a_tool_turn_and_its_resume_complete_over_run_sse_and_bidi_append() {
    let replica = Replica::start_http1_only().await.unwrap();
    tool_turn_and_resume(&replica).await;
}

#[tokio::test]
async fn http_1_1_required_resets_move_the_turn_to_http1_as_well() {
    let replica = Replica::new()
        .listen(TestServer::builder().refuse_h2(H2Refusal::Http11Required))
        .await
        .unwrap();
    tool_turn_and_resume(&replica).await;
}

#[tokio::test]
async fn an_http2_open_that_times_out_starts_no_second_run() {
    // A server that takes the HTTP/2 Run and never answers it: the Run may have started.
    let mut server = TestServer::start().await.unwrap();
    let origin = server.origin();
    let (attempts_tx, mut attempts) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Some(call) = server.accept().await {
            let _ = attempts_tx.send((call.path().to_owned(), call.is_http1()));
            held.push(call);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let mut timers = Timers::default();
    timers.first_frame_timeout = Duration::from_millis(300);
    timers.heartbeat_interval = Duration::from_millis(100);
    let session = session(origin, dir.path(), timers);
    let events = whole_turn(&session, ask("hello")).await;
    // A classified network failure (the watchdog), not a local or protocol one.
    let Some(AgentEvent::Ir(Event::Error(info))) = events.last() else {
        panic!("the turn did not fail: {events:?}");
    };
    assert_eq!(info.kind, ErrorKind::Network, "{info:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut seen = Vec::new();
    while let Ok(attempt) = attempts.try_recv() {
        seen.push(attempt);
    }
    assert_eq!(
        seen,
        [("/agent.v1.AgentService/Run".to_owned(), false)],
        "exactly one Run attempt, over HTTP/2: {events:?}"
    );
}

/// A proxy that passes HTTP/1.1 through to `upstream` and answers HTTP/2 (the connection
/// preface) the way such proxies do, with 421, from a refusing server of its own.
async fn http1_only_proxy(upstream: std::net::SocketAddr) -> Origin {
    let refuser = TestServer::builder()
        .refuse_h2(H2Refusal::Status421)
        .start()
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let refuser = refuser;
        while let Ok((mut client, _)) = listener.accept().await {
            let h2_target = refuser.addr();
            tokio::spawn(async move {
                let mut first = [0_u8; 3];
                // Peeked, not read: the bytes go on to whichever side takes them.
                while client.peek(&mut first).await.is_ok_and(|n| n < first.len()) {
                    tokio::task::yield_now().await;
                }
                let target = if &first == b"PRI" {
                    h2_target
                } else {
                    upstream
                };
                if let Ok(mut server) = tokio::net::TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    Origin::loopback(port)
}

#[tokio::test]
async fn a_turn_through_an_http1_only_proxy_completes_over_run_sse() {
    // The replica itself speaks both; only the proxy in front refuses HTTP/2.
    let replica = Replica::start().await.unwrap();
    let upstream = std::net::SocketAddr::from(([127, 0, 0, 1], replica.origin().port()));
    let origin = http1_only_proxy(upstream).await;
    let dir = tempfile::tempdir().unwrap();
    let session = session(origin, dir.path(), Timers::default());
    let events = whole_turn(&session, ask(r#"tool: read_file {"path": "notes.txt"}"#)).await;
    assert!(ended_normally(&events), "{events:?}");
    assert!(text(&events).contains("the file says hello"), "{events:?}");
    let runs = replica.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0].http1, "{runs:?}");
    assert_eq!(runs[0].execs.len(), 1, "{runs:?}");
}
