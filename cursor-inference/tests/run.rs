//! The sans-IO run: every server arm, chunked tool calls, error classes, watchdogs, cancel.

use std::time::{Duration, Instant};

use cursor_inference::{
    FIRST_TOKEN_TIMEOUT, IDLE_TIMEOUT, InferenceConfig, InferenceError, InferenceRun,
    InferenceTimers, RUN_READY_TIMEOUT, StreamRefusal,
};
use cursor_proto::aiserver::v1::{
    InferenceExtendedUsageInfo, InferenceInvocationIdInfo, InferenceRequestedModel,
    InferenceStreamError, InferenceStreamErrorType as ErrorType, InferenceStreamResponse,
    InferenceTextStreamPart, InferenceThinkingStreamPart, InferenceToolCallStreamPart,
    InferenceUsageInfo, RunInferenceClientMessage, RunInferenceHeartbeat,
    RunInferenceInvocationEnd, RunInferenceInvocationError, RunInferenceInvocationResponse,
    RunInferenceRunReady, RunInferenceServerMessage, inference_stream_response::Response,
    run_inference_client_message::Message as Client,
    run_inference_server_message::Message as Server,
};
use cursor_proto::ir::Conversation;
use cursor_proto::ir::{ErrorKind, Event, Message, StopReason, ToolCall, Usage};
use prost::Message as _;
use serde_json::json;

const INVOCATION: &str = "inv-1";

fn open(now: Instant) -> InferenceRun {
    let conversation = Conversation::new("").with_message(Message::user_text("ping"));
    InferenceRun::open(
        InferenceConfig::with_ids("m", "conv-1", INVOCATION),
        &conversation,
        now,
    )
}

fn arm(arm: Server) -> RunInferenceServerMessage {
    RunInferenceServerMessage { message: Some(arm) }
}

fn response(response: Response) -> RunInferenceServerMessage {
    arm(Server::InvocationResponse(RunInferenceInvocationResponse {
        invocation_id: INVOCATION.into(),
        response: Some(InferenceStreamResponse {
            response: Some(response),
        }),
    }))
}

fn ready() -> RunInferenceServerMessage {
    arm(Server::RunReady(RunInferenceRunReady::default()))
}

fn end(error: Option<(i32, &str)>) -> RunInferenceServerMessage {
    arm(Server::InvocationEnd(RunInferenceInvocationEnd {
        invocation_id: INVOCATION.into(),
        error: error.map(|(code, message)| RunInferenceInvocationError {
            code,
            message: message.into(),
        }),
    }))
}

fn text(text: &str) -> RunInferenceServerMessage {
    response(Response::TextPart(InferenceTextStreamPart {
        text: text.into(),
        is_final: false,
    }))
}

fn tool_part(id: &str, name: &str, args: &str, complete: bool) -> RunInferenceServerMessage {
    response(Response::ToolCallPart(InferenceToolCallStreamPart {
        tool_call_id: id.into(),
        tool_name: name.into(),
        args: args.into(),
        is_complete: complete,
        tool_index: None,
    }))
}

fn indexed_tool_part(
    index: i32,
    id: &str,
    name: &str,
    args: &str,
    complete: bool,
) -> RunInferenceServerMessage {
    response(Response::ToolCallPart(InferenceToolCallStreamPart {
        tool_call_id: id.into(),
        tool_name: name.into(),
        args: args.into(),
        is_complete: complete,
        tool_index: Some(index),
    }))
}

fn stream_error(error_type: ErrorType, message: &str) -> RunInferenceServerMessage {
    response(Response::Error(InferenceStreamError {
        message: message.into(),
        error_type: error_type as i32,
        ..InferenceStreamError::default()
    }))
}

fn events(run: &mut InferenceRun) -> Vec<Event> {
    std::iter::from_fn(|| run.poll_event()).collect()
}

fn frames(run: &mut InferenceRun) -> Vec<Client> {
    std::iter::from_fn(|| run.poll_transmit())
        .filter_map(|m: RunInferenceClientMessage| m.message)
        .collect()
}

/// A run past run_ready, with its opening frames taken.
fn invoked(now: Instant) -> InferenceRun {
    let mut run = open(now);
    run.handle_server_message(ready(), now);
    frames(&mut run);
    run
}

fn feed(run: &mut InferenceRun, messages: Vec<RunInferenceServerMessage>, now: Instant) {
    for message in messages {
        run.handle_server_message(message, now);
    }
}

fn last_error(run: &mut InferenceRun) -> cursor_proto::ir::ErrorInfo {
    match events(run).pop() {
        Some(Event::Error(info)) => info,
        other => panic!("the turn should fail, ended with {other:?}"),
    }
}

#[test]
fn invoke_model_waits_for_run_ready_and_heartbeats_change_nothing() {
    let now = Instant::now();
    let mut run = open(now);
    assert!(matches!(frames(&mut run)[..], [Client::RunRequest(_)]));
    run.handle_server_message(arm(Server::Heartbeat(RunInferenceHeartbeat {})), now);
    assert!(frames(&mut run).is_empty());
    assert_eq!(run.poll_timeout(), Some(now + RUN_READY_TIMEOUT));
    run.handle_server_message(ready(), now);
    assert!(matches!(frames(&mut run)[..], [Client::InvokeModel(_)]));
    assert_eq!(run.poll_timeout(), Some(now + FIRST_TOKEN_TIMEOUT));
}

#[test]
fn text_thinking_usage_and_end_map_to_events_and_stop() {
    let now = Instant::now();
    let mut run = invoked(now);
    feed(
        &mut run,
        vec![
            response(Response::InvocationId(InferenceInvocationIdInfo {
                invocation_id: INVOCATION.into(),
            })),
            response(Response::ThinkingPart(InferenceThinkingStreamPart {
                text: "hmm".into(),
                signature: None,
                is_final: true,
            })),
            text("po"),
            text(""),
            text("ng"),
            response(Response::Usage(InferenceUsageInfo {
                prompt_tokens: 10,
                completion_tokens: 2,
                total_tokens: Some(12),
            })),
            response(Response::ExtendedUsage(InferenceExtendedUsageInfo {
                input_tokens: 10,
                output_tokens: 2,
                cache_read_tokens: 4,
                cache_write_tokens: 1,
                max_tokens: 100,
            })),
            end(None),
        ],
        now,
    );
    let mut basic = Usage::default();
    basic.input_tokens = 10;
    basic.output_tokens = 2;
    let mut extended = basic;
    extended.cache_read_tokens = 4;
    extended.cache_write_tokens = 1;
    assert_eq!(
        events(&mut run),
        [
            Event::ThinkingDelta { text: "hmm".into() },
            Event::TextDelta { text: "po".into() },
            Event::TextDelta { text: "ng".into() },
            Event::Usage(basic),
            Event::Usage(extended),
            Event::Done {
                reason: StopReason::Stop
            },
        ]
    );
    assert!(run.is_finished());
    assert!(matches!(frames(&mut run)[..], [Client::FinishRun(_)]));
    assert_eq!(run.poll_timeout(), None);
}

#[test]
fn chunked_tool_calls_are_assembled_and_end_the_turn_with_tool_use() {
    let now = Instant::now();
    let mut run = invoked(now);
    feed(
        &mut run,
        vec![
            tool_part("c1", "bash", "{\"comm", false),
            tool_part("c1", "", "and\": \"l", false),
            tool_part("c1", "", "s\"}", true),
            end(None),
        ],
        now,
    );
    assert_eq!(
        events(&mut run),
        [
            Event::ToolCall(ToolCall::new("c1", "bash", json!({"command": "ls"}))),
            Event::Done {
                reason: StopReason::ToolUse
            },
        ]
    );
}

#[test]
fn malformed_tool_arguments_are_drift() {
    let now = Instant::now();
    let mut run = invoked(now);
    feed(
        &mut run,
        vec![tool_part("c1", "bash", "{\"x\": ", true)],
        now,
    );
    assert_eq!(last_error(&mut run).kind, ErrorKind::ProtocolDrift);
    assert!(matches!(
        run.failure(),
        Some(InferenceError::ProtocolDrift { .. })
    ));
}

#[test]
fn a_final_tool_part_that_renames_the_streamed_call_fails_the_turn_as_drift() {
    let now = Instant::now();
    let mut run = invoked(now);
    feed(
        &mut run,
        vec![
            indexed_tool_part(0, "c1", "bash", "{\"command\": ", false),
            // The same call (index 0) ends under another id and tool, with valid arguments.
            indexed_tool_part(0, "c2", "write", "\"ls\"}", true),
            end(None),
        ],
        now,
    );
    let events = events(&mut run);
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Event::ToolCall(_))),
        "a mismatched call reached the host: {events:?}"
    );
    assert!(
        matches!(events.last(), Some(Event::Error(info)) if info.kind == ErrorKind::ProtocolDrift),
        "{events:?}"
    );
}

#[test]
fn an_invocation_ending_with_a_tool_call_half_sent_is_drift() {
    let now = Instant::now();
    let mut run = invoked(now);
    feed(
        &mut run,
        vec![tool_part("c1", "bash", "{", false), end(None)],
        now,
    );
    assert_eq!(last_error(&mut run).kind, ErrorKind::ProtocolDrift);
}

#[test]
fn stream_error_types_are_classified() {
    let cases = [
        (ErrorType::Authentication, ErrorKind::Auth, None),
        (
            ErrorType::RateLimit,
            ErrorKind::RemoteRefusal,
            Some(StreamRefusal::RateLimit),
        ),
        (
            ErrorType::Overloaded,
            ErrorKind::RemoteRefusal,
            Some(StreamRefusal::Overloaded),
        ),
        (
            ErrorType::InputTokenLimit,
            ErrorKind::RemoteRefusal,
            Some(StreamRefusal::InputTokenLimit),
        ),
        (
            ErrorType::ContentFilter,
            ErrorKind::RemoteRefusal,
            Some(StreamRefusal::ContentFilter),
        ),
        (
            ErrorType::Permission,
            ErrorKind::RemoteRefusal,
            Some(StreamRefusal::Permission),
        ),
        (
            ErrorType::Unknown,
            ErrorKind::RemoteRefusal,
            Some(StreamRefusal::Other),
        ),
    ];
    for (error_type, kind, refusal) in cases {
        let now = Instant::now();
        let mut run = invoked(now);
        feed(&mut run, vec![stream_error(error_type, "nope")], now);
        let info = last_error(&mut run);
        assert_eq!(info.kind, kind, "{error_type:?}");
        match (refusal, run.failure()) {
            (None, Some(InferenceError::StreamAuth { .. })) => {
                assert_eq!(info.next_step, cursor_proto::ir::NextStep::Login);
            }
            (Some(expected), Some(InferenceError::Stream { refusal, .. })) => {
                assert_eq!(*refusal, expected);
                assert_eq!(info.next_step, expected.next_step());
            }
            (_, other) => panic!("{error_type:?} failed as {other:?}"),
        }
    }
}

#[test]
fn an_input_token_limit_asks_to_compact_as_the_agent_channel_does() {
    // Both flag and type: the hosts compact on this step whichever channel refused.
    for (error_type, flag) in [
        (ErrorType::InputTokenLimit, false),
        (ErrorType::Unknown, true),
    ] {
        let now = Instant::now();
        let mut run = invoked(now);
        let error = response(Response::Error(InferenceStreamError {
            message: "prompt is too long".into(),
            error_type: error_type as i32,
            is_input_token_limit_error: flag,
            ..InferenceStreamError::default()
        }));
        feed(&mut run, vec![error], now);
        assert_eq!(
            last_error(&mut run).next_step,
            cursor_proto::ir::NextStep::CompactConversation,
            "{error_type:?} flag={flag}"
        );
    }
}

#[test]
fn the_output_token_limit_ends_the_turn_with_length() {
    let now = Instant::now();
    let mut run = invoked(now);
    feed(
        &mut run,
        vec![
            text("partial"),
            stream_error(ErrorType::OutputTokenLimit, "max tokens"),
        ],
        now,
    );
    assert_eq!(
        events(&mut run).last(),
        Some(&Event::Done {
            reason: StopReason::Length
        })
    );
    assert!(run.failure().is_none());
}

#[test]
fn an_invocation_end_error_is_classified_by_its_code() {
    let now = Instant::now();
    let mut run = invoked(now);
    feed(&mut run, vec![end(Some((16, "expired")))], now);
    let info = last_error(&mut run);
    assert_eq!(info.kind, ErrorKind::Auth);
    assert!(info.message.contains("expired"), "{info}");
}

#[test]
fn an_unknown_outer_arm_or_undecodable_bytes_fail_closed_as_drift() {
    let now = Instant::now();
    let mut run = invoked(now);
    run.handle_server_message(RunInferenceServerMessage { message: None }, now);
    assert_eq!(last_error(&mut run).kind, ErrorKind::ProtocolDrift);

    let mut run = invoked(now);
    run.handle_server_bytes(&[0xff, 0xff, 0xff], now);
    assert_eq!(last_error(&mut run).kind, ErrorKind::ProtocolDrift);

    // Known arms round-trip through bytes.
    let mut run = invoked(now);
    run.handle_server_bytes(&text("hi").encode_to_vec(), now);
    assert_eq!(events(&mut run), [Event::TextDelta { text: "hi".into() }]);
}

/// A length-delimited field: key, length, payload (payloads here stay under 128 bytes).
fn len_field(field: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![(field << 3) | 2, u8::try_from(payload.len()).unwrap()];
    out.extend_from_slice(payload);
    out
}

/// An invocation_response (3) for this run whose response (2) holds `inner` as is.
fn invocation_response_bytes(inner: Option<&[u8]>) -> Vec<u8> {
    let mut body = len_field(1, INVOCATION.as_bytes());
    if let Some(inner) = inner {
        body.extend(len_field(2, inner));
    }
    len_field(3, &body)
}

fn drift_message(run: &mut InferenceRun) -> String {
    let info = last_error(run);
    assert_eq!(info.kind, ErrorKind::ProtocolDrift, "{info}");
    assert!(run.is_finished());
    info.message
}

#[test]
fn an_exec_shaped_or_unknown_server_arm_is_drift_naming_its_field() {
    let now = Instant::now();
    // Field 5 of RunInferenceServerMessage: where an exec request would have to live.
    let mut run = invoked(now);
    run.handle_server_bytes(&len_field(5, &len_field(1, b"rm -rf /")), now);
    let message = drift_message(&mut run);
    assert!(message.contains("field 5"), "{message}");
    // Next to a known arm it is still drift, not skipped.
    let mut run = invoked(now);
    let mut bytes = text("hi").encode_to_vec();
    bytes.extend(len_field(12, &[]));
    run.handle_server_bytes(&bytes, now);
    assert!(drift_message(&mut run).contains("field 12"));
}

#[test]
fn an_invocation_response_without_a_response_is_drift() {
    let now = Instant::now();
    let mut run = invoked(now);
    run.handle_server_bytes(&invocation_response_bytes(None), now);
    assert!(drift_message(&mut run).contains("field 3.2"));
    let mut run = invoked(now);
    run.handle_server_message(
        arm(Server::InvocationResponse(RunInferenceInvocationResponse {
            invocation_id: INVOCATION.into(),
            response: None,
        })),
        now,
    );
    assert!(drift_message(&mut run).contains("field 3.2"));
}

#[test]
fn a_response_with_an_absent_inner_arm_is_drift() {
    let now = Instant::now();
    let mut run = invoked(now);
    run.handle_server_bytes(&invocation_response_bytes(Some(&[])), now);
    assert!(drift_message(&mut run).contains("no arm"));
    let mut run = invoked(now);
    run.handle_server_message(
        arm(Server::InvocationResponse(RunInferenceInvocationResponse {
            invocation_id: INVOCATION.into(),
            response: Some(InferenceStreamResponse { response: None }),
        })),
        now,
    );
    assert!(drift_message(&mut run).contains("field 3.2"));
}

#[test]
fn a_response_with_an_unknown_inner_arm_is_drift_naming_it() {
    let now = Instant::now();
    let mut run = invoked(now);
    run.handle_server_bytes(&invocation_response_bytes(Some(&len_field(11, &[]))), now);
    let message = drift_message(&mut run);
    assert!(message.contains("arm 11"), "{message}");
}

#[test]
fn the_known_empty_arms_are_skipped_and_the_turn_goes_on() {
    let now = Instant::now();
    for skipped in [4, 6, 10] {
        let mut run = invoked(now);
        run.handle_server_bytes(&text("a").encode_to_vec(), now);
        run.handle_server_bytes(
            &invocation_response_bytes(Some(&len_field(skipped, &[]))),
            now,
        );
        run.handle_server_bytes(&end(None).encode_to_vec(), now);
        assert_eq!(
            events(&mut run),
            [
                Event::TextDelta { text: "a".into() },
                Event::Done {
                    reason: StopReason::Stop
                }
            ],
            "arm {skipped}"
        );
    }
}

#[test]
fn frames_out_of_order_or_for_another_invocation_are_drift() {
    let now = Instant::now();
    let mut run = open(now);
    run.handle_server_message(text("early"), now);
    assert_eq!(last_error(&mut run).kind, ErrorKind::ProtocolDrift);

    let mut run = invoked(now);
    run.handle_server_message(ready(), now);
    assert_eq!(last_error(&mut run).kind, ErrorKind::ProtocolDrift);

    let mut run = invoked(now);
    run.handle_server_message(
        arm(Server::InvocationEnd(RunInferenceInvocationEnd {
            invocation_id: "someone-else".into(),
            error: None,
        })),
        now,
    );
    assert_eq!(last_error(&mut run).kind, ErrorKind::ProtocolDrift);
}

#[test]
fn the_stream_ending_before_invocation_end_is_drift() {
    let now = Instant::now();
    let mut run = invoked(now);
    run.handle_end_of_stream(now);
    assert_eq!(last_error(&mut run).kind, ErrorKind::ProtocolDrift);
}

#[test]
fn run_ready_watchdog_fires_at_65_seconds_not_before() {
    let start = Instant::now();
    let mut run = open(start);
    frames(&mut run);
    run.handle_timeout(start + RUN_READY_TIMEOUT - Duration::from_millis(1));
    assert!(!run.is_finished());
    run.handle_timeout(start + RUN_READY_TIMEOUT);
    let info = last_error(&mut run);
    assert_eq!(info.kind, ErrorKind::Network);
    assert!(info.message.contains("run_ready"), "{info}");
    // Nothing was invoked, so there is nothing to cancel.
    assert!(matches!(frames(&mut run)[..], [Client::FinishRun(_)]));
}

#[test]
fn first_token_watchdog_ignores_heartbeats_and_cancels_the_invocation() {
    let start = Instant::now();
    let mut run = invoked(start);
    run.handle_server_message(
        arm(Server::Heartbeat(RunInferenceHeartbeat {})),
        start + Duration::from_secs(20),
    );
    assert_eq!(run.poll_timeout(), Some(start + FIRST_TOKEN_TIMEOUT));
    run.handle_timeout(start + FIRST_TOKEN_TIMEOUT);
    let info = last_error(&mut run);
    assert!(info.message.contains("first token"), "{info}");
    assert!(matches!(
        frames(&mut run)[..],
        [Client::CancelInvocation(_), Client::FinishRun(_)]
    ));
}

#[test]
fn idle_watchdog_restarts_on_every_work_frame() {
    let start = Instant::now();
    let mut run = invoked(start);
    let later = start + Duration::from_secs(10);
    run.handle_server_message(text("a"), later);
    assert_eq!(run.poll_timeout(), Some(later + IDLE_TIMEOUT));
    let much_later = later + Duration::from_secs(100);
    run.handle_server_message(text("b"), much_later);
    run.handle_timeout(later + IDLE_TIMEOUT);
    assert!(!run.is_finished(), "the second frame moved the deadline");
    run.handle_timeout(much_later + IDLE_TIMEOUT);
    assert!(last_error(&mut run).message.contains("model output"));
}

#[test]
fn cancel_aborts_once_and_tells_the_server() {
    let now = Instant::now();
    let mut run = invoked(now);
    run.cancel();
    run.cancel();
    assert_eq!(events(&mut run), [Event::Aborted]);
    assert!(matches!(
        frames(&mut run)[..],
        [Client::CancelInvocation(_), Client::FinishRun(_)]
    ));
    // Frames after the end change nothing.
    run.handle_server_message(text("late"), now);
    assert!(events(&mut run).is_empty());
}

#[test]
fn configured_watchdogs_replace_the_defaults() {
    let now = Instant::now();
    let mut timers = InferenceTimers::default();
    timers.first_token = Duration::from_secs(5);
    timers.idle = Duration::from_secs(7);
    let config = InferenceConfig::with_ids("m", "conv-1", INVOCATION)
        .with_timers(timers)
        .unwrap();
    let conversation = Conversation::new("").with_message(Message::user_text("ping"));
    let mut run = InferenceRun::open(config, &conversation, now);
    run.handle_server_message(ready(), now);
    assert_eq!(run.poll_timeout(), Some(now + Duration::from_secs(5)));
    run.handle_server_message(text("a"), now);
    assert_eq!(run.poll_timeout(), Some(now + Duration::from_secs(7)));
    run.handle_timeout(now + Duration::from_secs(7));
    let info = last_error(&mut run);
    assert!(info.message.contains("within 7s"), "{info}");
}

#[test]
fn run_ready_naming_a_model_is_reported_first_and_its_absence_is_tolerated() {
    let now = Instant::now();
    let named = |resolved: Option<&str>, display: Option<&str>| {
        let mut run = open(now);
        let ready = RunInferenceRunReady {
            resolved_model: resolved.map(|id| InferenceRequestedModel {
                model_id: id.into(),
                ..InferenceRequestedModel::default()
            }),
            routed_model_display_name: display.map(Into::into),
            ..RunInferenceRunReady::default()
        };
        run.handle_server_message(arm(Server::RunReady(ready)), now);
        run.handle_server_message(text("pong"), now);
        run.handle_server_message(end(None), now);
        let model = run.resolved_model().map(str::to_owned);
        (events(&mut run), model)
    };

    let (events, model) = named(Some("claude-4.5-sonnet"), Some("Sonnet 4.5"));
    assert_eq!(
        events.first(),
        Some(&Event::ModelResolved {
            model: "claude-4.5-sonnet".into()
        })
    );
    assert_eq!(model.as_deref(), Some("claude-4.5-sonnet"));

    // Only a display name: it stands in for the slug.
    let (events, model) = named(None, Some("Sonnet 4.5"));
    assert!(events.contains(&Event::ModelResolved {
        model: "Sonnet 4.5".into()
    }));
    assert_eq!(model.as_deref(), Some("Sonnet 4.5"));

    // Neither (or an empty id): no event, no error, the turn ends normally.
    for (resolved, display) in [(None, None), (Some(""), None)] {
        let (events, model) = named(resolved, display);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, Event::ModelResolved { .. })),
            "{events:?}"
        );
        assert_eq!(model, None);
        assert_eq!(
            events.last(),
            Some(&Event::Done {
                reason: StopReason::Stop
            })
        );
    }
}

#[test]
fn images_the_backend_would_not_take_fail_the_turn_before_anything_is_sent() {
    use cursor_inference::request::MAX_IMAGE_BYTES;
    use cursor_proto::ir::{Image, UserContent};
    let png = |len: usize| {
        let mut data = b"\x89PNG\r\n\x1a\n".to_vec();
        data.resize(len.max(8), 0);
        data
    };
    let with = |images: Vec<Image>| {
        let mut content = vec![UserContent::Text {
            text: "look".into(),
        }];
        content.extend(images.into_iter().map(UserContent::Image));
        Conversation::new("").with_message(Message::User { content })
    };
    let now = Instant::now();
    let refused = |conversation: Conversation, says: &str| {
        let mut run =
            InferenceRun::open(InferenceConfig::with_ids("m", "c", "i"), &conversation, now);
        assert!(run.is_finished());
        assert!(run.poll_transmit().is_none(), "nothing is sent");
        let events = events(&mut run);
        let [Event::Error(info)] = events.as_slice() else {
            panic!("one error: {events:?}");
        };
        assert_eq!(info.kind, ErrorKind::Local, "{info:?}");
        assert!(info.message.contains(says), "{info:?}");
    };
    refused(
        with(vec![Image::new("image/tiff", png(10))]),
        "image/tiff is not supported",
    );
    refused(
        with(vec![Image::new("image/jpeg", png(10))]),
        "its bytes are of another format",
    );
    let half = MAX_IMAGE_BYTES / 2 + 1;
    refused(
        with(vec![
            Image::new("image/png", png(half)),
            Image::new("image/png", png(half)),
        ]),
        "over the",
    );

    // Within the cap, and of the declared format: the run opens as usual.
    let ok = with(vec![
        Image::new("image/png", png(1000)),
        Image::new("image/gif", b"GIF89a...".to_vec()),
        Image::new("image/webp", b"RIFF\0\0\0\0WEBPVP8 ".to_vec()),
        Image::new("image/jpeg", vec![0xff, 0xd8, 0xff, 0xe0]),
        Image::new("image/bmp", b"BM....".to_vec()),
    ]);
    let mut run = InferenceRun::open(InferenceConfig::with_ids("m", "c", "i"), &ok, now);
    assert!(!run.is_finished());
    assert!(matches!(
        run.poll_transmit().and_then(|m| m.message),
        Some(Client::RunRequest(_))
    ));
}
