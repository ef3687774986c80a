//! The driver against the loopback replica, and gzip on the wire.

mod common;

use std::time::Duration;

use common::{ide_headers, within};
use cursor_inference::driver::{self, RUN_INFERENCE_PATH};
use cursor_inference::testing::{Replica, Script, WireShape};
use cursor_inference::{InferenceConfig, InferenceRun};
use cursor_proto::aiserver::v1::{
    InferenceMessageRole, InferenceStreamErrorType, inference_core_message::Content,
};
use cursor_proto::ir::{
    AssistantContent, Classify as _, Conversation, ErrorKind, Event, Message, NextStep, StopReason,
    ToolCall, ToolResult,
};
use cursor_transport::testing::TestServer;
use cursor_transport::{Client, Origin};
use futures::StreamExt as _;
use prost::Message as _;
use serde_json::json;

/// Runs one turn to the end; returns its events and the finished run.
async fn turn(origin: Origin, conversation: &Conversation) -> (Vec<Event>, InferenceRun) {
    let config = InferenceConfig::new("composer-2.5").unwrap();
    let (events, task) = driver::open(
        Client::new().unwrap(),
        origin,
        ide_headers(),
        config,
        conversation,
    );
    let task = tokio::spawn(task.into_future());
    let events: Vec<Event> = within(events.collect()).await;
    let run = within(task).await.unwrap();
    (events, run)
}

fn text_of(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn ping_is_answered_with_pong_and_usage() {
    let server = Replica::start().await.unwrap();
    let conversation = Conversation::new("be brief").with_message(Message::user_text("ping"));
    let (events, run) = turn(server.origin(), &conversation).await;
    assert_eq!(text_of(&events), "pong");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Usage(u) if u.input_tokens == 12))
    );
    assert_eq!(
        events.last(),
        Some(&Event::Done {
            reason: StopReason::Stop
        })
    );
    assert!(run.is_finished() && run.failure().is_none());
    let requests = server.replica().requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].messages[0].role,
        InferenceMessageRole::System as i32
    );
}

#[tokio::test]
async fn a_tool_round_hands_the_call_to_the_host_and_sends_the_result_next_turn() {
    for shape in [WireShape::Live, WireShape::Older] {
        tool_round(shape).await;
    }
}

/// One tool round against a replica speaking `shape`.
async fn tool_round(shape: WireShape) {
    let replica = Replica::new();
    replica.set_shape(shape);
    let server = replica.listen(TestServer::builder()).await.unwrap();
    let ask = Message::user_text(r#"tool: read {"path": "notes.txt"}"#);
    let first = Conversation::new("").with_message(ask.clone());
    let (events, _) = turn(server.origin(), &first).await;
    let call = ToolCall::new("call-1", "read", json!({"path": "notes.txt"}));
    assert!(
        events.contains(&Event::ToolCall(call.clone())),
        "{shape:?}: {events:?}"
    );
    assert_eq!(
        events.last(),
        Some(&Event::Done {
            reason: StopReason::ToolUse
        })
    );

    let second = Conversation::new("")
        .with_message(ask)
        .with_message(Message::Assistant {
            content: vec![AssistantContent::ToolCall(call)],
        })
        .with_message(Message::ToolResult(ToolResult::text(
            "call-1", "read", "hello", false,
        )));
    let (events, _) = turn(server.origin(), &second).await;
    assert_eq!(text_of(&events), "got: hello");
    let requests = server.replica().requests();
    let last = requests[1].messages.last().unwrap();
    assert_eq!(last.role, InferenceMessageRole::Tool as i32);
    assert!(matches!(last.content, Some(Content::ToolContent(_))));
}

#[tokio::test]
async fn a_401_is_an_auth_error_pointing_at_login() {
    let server = Replica::start().await.unwrap();
    server.replica().set_fail_auth(true);
    let conversation = Conversation::new("").with_message(Message::user_text("ping"));
    let (events, run) = turn(server.origin(), &conversation).await;
    let Some(Event::Error(info)) = events.last() else {
        panic!("the turn should fail: {events:?}");
    };
    assert_eq!(info.kind, ErrorKind::Auth);
    assert_eq!(info.next_step, NextStep::Login, "{info}");
    assert_eq!(info.http_status, Some(401), "{info}");
    assert_eq!(run.failure().map(|e| e.kind()), Some(ErrorKind::Auth));
}

#[tokio::test]
async fn an_error_mid_stream_keeps_the_text_so_far_and_fails_the_turn() {
    let server = Replica::start().await.unwrap();
    server.replica().script(Script::StreamError {
        text: "par".into(),
        error_type: InferenceStreamErrorType::Overloaded as i32,
        message: "model busy".into(),
    });
    let conversation = Conversation::new("").with_message(Message::user_text("ping"));
    let (events, _) = turn(server.origin(), &conversation).await;
    assert_eq!(text_of(&events), "par");
    let Some(Event::Error(info)) = events.last() else {
        panic!("the turn should fail: {events:?}");
    };
    assert_eq!(info.kind, ErrorKind::RemoteRefusal);
    assert!(info.message.contains("model busy"), "{info}");
}

#[tokio::test]
async fn dropping_the_events_cancels_a_silent_turn() {
    let server = Replica::start().await.unwrap();
    server.replica().script(Script::Silent);
    let conversation = Conversation::new("").with_message(Message::user_text("ping"));
    let (mut events, task) = driver::open(
        Client::new().unwrap(),
        server.origin(),
        ide_headers(),
        InferenceConfig::new("m").unwrap(),
        &conversation,
    );
    let task = tokio::spawn(task.into_future());
    // Wait until the replica has the invocation, then give up.
    within(async {
        while server.replica().requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    // The only event of a silent turn is run_ready's resolved model.
    assert_eq!(
        within(events.next()).await,
        Some(Event::ModelResolved { model: "m".into() })
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(50), events.next())
            .await
            .is_err()
    );
    drop(events);
    let run = within(task).await.unwrap();
    assert!(run.is_finished());
    assert!(run.failure().is_none());
    // The replica saw the cancel_invocation and ended the invocation.
    assert_eq!(
        server.replica().canceled(),
        [run.config().invocation_id.clone()]
    );
}

/// The frames' flag bytes in a raw Connect body.
fn frame_flags(mut body: &[u8]) -> Vec<(u8, usize)> {
    let mut out = Vec::new();
    while body.len() >= 5 {
        let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        out.push((body[0], len));
        body = &body[(5 + len).min(body.len())..];
    }
    out
}

#[tokio::test]
async fn large_frames_are_gzip_compressed_on_this_rpc_and_small_ones_are_not() {
    let mut server = TestServer::start().await.unwrap();
    let big = "x".repeat(8 * 1024);
    // The long system prompt only goes in the invocation; the run request routes on "ping".
    let conversation = Conversation::new(big).with_message(Message::user_text("ping"));
    let mut run = InferenceRun::open(
        InferenceConfig::with_ids("m", "c", "i"),
        &conversation,
        driver::now(),
    );
    let run_request = run.poll_transmit().unwrap();
    let invoke = cursor_inference::request::invoke_model(run.config(), &conversation);
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), RUN_INFERENCE_PATH, ide_headers())
        .await
        .unwrap();
    call.send_message(&run_request).await.unwrap();
    call.send_message(&invoke).await.unwrap();
    call.close_send().unwrap();

    let mut incoming = within(server.accept()).await.unwrap();
    assert_eq!(incoming.header("connect-content-encoding"), Some("gzip"));
    assert_eq!(incoming.header("x-cursor-client-type"), Some("ide"));
    assert!(incoming.header("x-cursor-checksum").is_some());
    assert!(incoming.header("x-client-key").is_some());
    let body = within(incoming.read_body()).await.unwrap();
    let flags = frame_flags(&body);
    assert_eq!(flags.len(), 2, "{flags:?}");
    // The run request is small: sent as is. The invocation is over 1 KiB: gzip-flagged, and
    // smaller on the wire than its encoding.
    assert_eq!(flags[0], (0, run_request.encoded_len()));
    assert_eq!(flags[1].0 & 1, 1);
    assert!(flags[1].1 < invoke.encoded_len());
}

#[tokio::test]
async fn the_live_replica_names_the_resolved_model_and_the_older_one_does_not() {
    let conversation = Conversation::new("").with_message(Message::user_text("ping"));
    for (shape, expected) in [
        (WireShape::Live, Some("composer-2.5")),
        (WireShape::Older, None),
    ] {
        let replica = Replica::new();
        replica.set_shape(shape);
        let server = replica.listen(TestServer::builder()).await.unwrap();
        let (events, run) = turn(server.origin(), &conversation).await;
        let reported: Vec<&str> = events
            .iter()
            .filter_map(|event| match event {
                Event::ModelResolved { model } => Some(model.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            reported,
            expected.into_iter().collect::<Vec<_>>(),
            "{shape:?}"
        );
        assert_eq!(run.resolved_model(), expected, "{shape:?}");
        assert_eq!(text_of(&events), "pong", "{shape:?}");
    }
}

#[tokio::test]
async fn a_turn_with_an_unsupported_image_opens_no_call() {
    let server = Replica::start().await.unwrap();
    let conversation = Conversation::new("").with_message(Message::User {
        content: vec![cursor_proto::ir::UserContent::Image(
            cursor_proto::ir::Image::new("image/svg+xml", b"<svg/>".to_vec()),
        )],
    });
    let (events, run) = turn(server.origin(), &conversation).await;
    assert!(
        matches!(events.as_slice(), [Event::Error(info)] if info.kind == ErrorKind::Local),
        "{events:?}"
    );
    assert!(run.failure().is_some());
    assert_eq!(server.replica().calls(), 0);
}

/// Backpressure end to end, as the agent driver has it: a host that stops reading events stops
/// the driver reading the response, so HTTP/2 flow control stops the server. Of the 32 MB of
/// text offered only a bounded part gets out (the event queue plus the stream window); once
/// the host reads again, every delta arrives.
#[tokio::test]
async fn a_host_that_stops_reading_holds_the_server_back_and_loses_nothing() {
    use cursor_proto::aiserver::v1::{
        InferenceStreamResponse, InferenceTextStreamPart, RunInferenceClientMessage,
        RunInferenceInvocationEnd, RunInferenceInvocationResponse, RunInferenceRunReady,
        RunInferenceServerMessage, inference_stream_response::Response,
        run_inference_client_message::Message as ClientArm,
        run_inference_server_message::Message as ServerArm,
    };
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const OFFERED: usize = 32_000_000;
    const DELTA: usize = 1000;
    const BOUND: usize = 16 << 20;
    let mut server = TestServer::start().await.unwrap();
    let conversation = Conversation::new("").with_message(Message::user_text("ping"));
    let config = InferenceConfig::new("composer-2.5").unwrap();
    let (mut events, task) = driver::open(
        Client::new().unwrap(),
        server.origin(),
        ide_headers(),
        config,
        &conversation,
    );
    let task = tokio::spawn(task.into_future());
    let mut call = within(server.accept()).await.unwrap();
    let frame = |arm| RunInferenceServerMessage { message: Some(arm) };
    let _: Option<RunInferenceClientMessage> = call.recv_message().await.unwrap();
    let ready = ServerArm::RunReady(RunInferenceRunReady::default());
    call.send_message(&frame(ready)).await.unwrap();
    let mut invocation = None;
    while invocation.is_none() {
        let message: RunInferenceClientMessage = call.recv_message().await.unwrap().unwrap();
        if let Some(ClientArm::InvokeModel(invoke)) = message.message {
            invocation = Some(invoke.invocation_id);
        }
    }
    let id = invocation.unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&sent);
    let server_task = tokio::spawn(async move {
        let delta = frame(ServerArm::InvocationResponse(
            RunInferenceInvocationResponse {
                invocation_id: id.clone(),
                response: Some(InferenceStreamResponse {
                    response: Some(Response::TextPart(InferenceTextStreamPart {
                        text: "x".repeat(DELTA),
                        is_final: false,
                    })),
                }),
            },
        ));
        while counter.load(Ordering::Acquire) < OFFERED {
            call.send_message(&delta).await.unwrap();
            counter.fetch_add(DELTA, Ordering::AcqRel);
        }
        let end = ServerArm::InvocationEnd(RunInferenceInvocationEnd {
            invocation_id: id,
            error: None,
        });
        call.send_message(&frame(end)).await.unwrap();
        // The client's finish_run, then its half-close.
        while call
            .recv_message::<RunInferenceClientMessage>()
            .await
            .unwrap()
            .is_some()
        {}
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

    // Reading again lets everything through, in order and whole.
    let mut text = 0;
    let mut done = false;
    while let Some(event) = within(events.next()).await {
        match event {
            Event::TextDelta { text: delta } => text += delta.len(),
            Event::Done { .. } => done = true,
            _ => {}
        }
    }
    assert_eq!((text, done), (OFFERED, true));
    within(server_task).await.unwrap();
    assert!(within(task).await.unwrap().is_finished());
}
