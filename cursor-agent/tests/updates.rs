//! Server updates, usage, checkpoints, queries and errors (PROTOCOL-AGENT §4, §7, §9).

mod common;

use std::time::Duration;

use common::{Harness, last_error};
use cursor_agent::{AgentEvent, StreamOutcome};
use cursor_proto::agent::v1::{
    self as w, AgentServerMessage, agent_client_message::Message as Client,
    agent_server_message::Message as Server, interaction_query::Query,
    interaction_update::Message as Update,
};
use cursor_proto::ir::{ErrorInfo, ErrorKind, Event, StopReason, ToolResult, Usage};
use prost::Message as _;
use serde_json::json;

fn usage_of(events: &[Event]) -> Usage {
    events
        .iter()
        .find_map(|e| match e {
            Event::Usage(u) => Some(*u),
            _ => None,
        })
        .expect("usage")
}

#[test]
fn token_deltas_are_output_and_input_is_estimated_unless_reported() {
    let mut h = Harness::new();
    h.update(Update::TokenDelta(w::TokenDeltaUpdate { tokens: 3 }));
    h.update(Update::TokenDelta(w::TokenDeltaUpdate { tokens: 4 }));
    h.update(Update::TokenDelta(w::TokenDeltaUpdate { tokens: -9 }));
    h.turn_ended();
    let usage = usage_of(&h.ir_events());
    assert_eq!(usage.output_tokens, 7);
    assert!(usage.input_estimated);
    assert!(
        usage.input_tokens > 100,
        "rules, tools and history are counted: {}",
        usage.input_tokens
    );

    let mut h = Harness::new();
    h.update(Update::TurnEnded(w::TurnEndedUpdate {
        input_tokens: Some(1000),
        output_tokens: Some(50),
        cache_read_tokens: Some(800),
        ..Default::default()
    }));
    let usage = usage_of(&h.ir_events());
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens
        ),
        (1000, 50, 800)
    );
    assert!(!usage.input_estimated);
}

#[test]
fn tool_results_raise_the_next_legs_input_estimate() {
    let mut h = Harness::new();
    h.mcp(1, "bash", "c1", json!({}));
    h.advance(Duration::from_millis(150));
    let before = usage_of(&h.ir_events()).input_tokens;
    h.run
        .submit_tool_results(
            vec![ToolResult::text("c1", "bash", "x".repeat(4000), false)],
            h.now,
        )
        .unwrap();
    h.turn_ended();
    assert_eq!(usage_of(&h.ir_events()).input_tokens, before + 1000);
}

#[test]
fn turn_ended_with_a_pending_call_does_not_end_the_turn() {
    let mut h = Harness::new();
    h.mcp(1, "bash", "c1", json!({}));
    h.turn_ended();
    assert!(!h.run.is_finished());
    h.advance(Duration::from_millis(150));
    assert_eq!(
        h.ir_events().last(),
        Some(&Event::Done {
            reason: StopReason::ToolUse
        })
    );
}

#[test]
fn unknown_update_arms_and_ttft_are_ignored() {
    let mut h = Harness::new();
    // InteractionUpdate with an unknown arm (field 99, empty).
    let frame = [0x0a, 0x03, 0x9a, 0x06, 0x00];
    h.run.handle_server_bytes(&frame, h.now);
    h.update(Update::StepStarted(w::StepStartedUpdate {}));
    h.run.handle_server_message(
        AgentServerMessage {
            ttft_breakdown: Some(w::TtftBreakdown::default()),
            message: None,
        },
        h.now,
    );
    h.drain();
    assert!(h.take_events().is_empty());
    assert!(!h.run.is_finished());
}

/// docs/PROTOCOL-AGENT.md §12.2: InteractionUpdate 23, 26 and 27 are tolerated and change nothing,
/// and 24 `routed_model` reaches the host once per model named, as the model that served the turn.
#[test]
fn newer_update_arms_are_tolerated_and_the_routed_model_is_reported_once() {
    let mut h = Harness::new();
    // 23, 26, 27 as a newer server sends them: each arm a message with a field inside.
    for field in [23u32, 26, 27] {
        let mut update = Vec::new();
        prost::encoding::encode_key(
            field,
            prost::encoding::WireType::LengthDelimited,
            &mut update,
        );
        update.extend([2, 0x08, 0x03]);
        let mut frame = vec![0x0a, u8::try_from(update.len()).unwrap()];
        frame.extend(update);
        h.run.handle_server_bytes(&frame, h.now);
    }
    h.drain();
    assert!(h.take_events().is_empty());
    let routed = |name: &str| {
        Update::RoutedModel(w::RoutedModelUpdate {
            display_name: name.into(),
        })
    };
    h.update(routed("Grok 4.7"));
    h.update(routed("Grok 4.7"));
    h.update(routed(""));
    h.update(routed("Grok 4.7 Fast"));
    let served: Vec<Event> = h
        .take_events()
        .into_iter()
        .filter_map(|event| match event {
            AgentEvent::Ir(event) => Some(event),
            _ => None,
        })
        .collect();
    assert_eq!(
        served,
        [
            Event::ModelResolved {
                model: "Grok 4.7".into()
            },
            Event::ModelResolved {
                model: "Grok 4.7 Fast".into()
            },
        ]
    );
    assert!(!h.run.is_finished());
}

#[test]
fn an_unknown_outer_arm_is_drift() {
    let mut h = Harness::new();
    // AgentServerMessage field 6 (not a known arm), empty.
    h.run.handle_server_bytes(&[0x32, 0x00], h.now);
    h.drain();
    assert_eq!(
        last_error(&h.ir_events()).map(|e| e.kind),
        Some(ErrorKind::ProtocolDrift)
    );
}

#[test]
fn undecodable_bytes_are_drift() {
    let mut h = Harness::new();
    h.run.handle_server_bytes(&[0x0a, 0xff], h.now);
    h.drain();
    assert_eq!(
        last_error(&h.ir_events()).map(|e| e.kind),
        Some(ErrorKind::ProtocolDrift)
    );
}

#[test]
fn checkpoints_are_surfaced_verbatim() {
    let mut h = Harness::new();
    h.server(Server::ConversationCheckpointUpdate(vec![9, 8, 7]));
    assert_eq!(h.take_events(), [AgentEvent::Checkpoint(vec![9, 8, 7])]);
}

#[test]
fn end_of_stream_before_turn_ended_is_a_network_error() {
    let mut h = Harness::new();
    h.text("partial");
    h.run.handle_end_of_stream(StreamOutcome::Ok, h.now);
    h.drain();
    let events = h.ir_events();
    assert_eq!(
        last_error(&events).map(|e| e.kind),
        Some(ErrorKind::Network)
    );
}

#[test]
fn end_stream_errors_keep_their_classification() {
    let mut h = Harness::new();
    let refusal = ErrorInfo::new(
        ErrorKind::RemoteRefusal,
        "quota exhausted",
        cursor_proto::ir::NextStep::WaitForQuota,
    );
    h.run
        .handle_end_of_stream(StreamOutcome::Err(refusal.clone()), h.now);
    h.drain();
    assert_eq!(last_error(&h.ir_events()), Some(&refusal));
}

#[test]
fn a_stream_failure_while_the_host_runs_tools_ends_the_next_leg() {
    let mut h = Harness::new();
    h.mcp(1, "bash", "c1", json!({}));
    h.advance(Duration::from_millis(150));
    h.take_events();
    h.run.handle_end_of_stream(StreamOutcome::Ok, h.now);
    h.drain();
    assert!(
        h.take_events().is_empty(),
        "the finished leg gets no second terminal event"
    );
    assert!(h.run.is_finished());
    h.run
        .submit_tool_results(vec![ToolResult::text("c1", "bash", "ok", false)], h.now)
        .unwrap();
    h.drain();
    assert!(h.take_sent().is_empty());
    assert_eq!(
        last_error(&h.ir_events()).map(|e| e.kind),
        Some(ErrorKind::Network)
    );
}

#[test]
fn cancel_stops_writing_and_reports_aborted() {
    let mut h = Harness::new();
    h.text("x");
    h.take_events();
    h.run.cancel(h.now);
    h.drain();
    assert_eq!(h.ir_events(), [Event::Aborted]);
    assert!(h.run.is_finished());
    h.advance(Duration::from_secs(60));
    assert!(h.take_sent().is_empty());
}

fn query(h: &mut Harness, id: u32, query: Query) {
    h.server(Server::InteractionQuery(w::InteractionQuery {
        id,
        query: Some(query),
    }));
}

#[test]
fn interaction_queries_follow_the_whitelist() {
    let mut h = Harness::new();
    query(
        &mut h,
        1,
        Query::WebSearchRequestQuery(w::WebSearchRequestQuery {}),
    );
    query(
        &mut h,
        2,
        Query::SetupVmEnvironmentArgs(w::SetupVmEnvironmentArgs::default()),
    );
    query(
        &mut h,
        3,
        Query::AskQuestionInteractionQuery(w::AskQuestionInteractionQuery::default()),
    );
    let sent = h.take_sent();
    let responses: Vec<&w::InteractionResponse> = sent
        .iter()
        .map(|f| match &f.message {
            Some(Client::InteractionResponse(r)) => r,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        responses.iter().map(|r| r.id).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(
        responses[0].result,
        Some(w::interaction_response::Result::WebSearchRequestResponse(
            w::ApprovalResponse {
                result: Some(w::approval_response::Result::Approved(w::Approved {})),
            }
        ))
    );
    assert_eq!(
        responses[1].result,
        Some(w::interaction_response::Result::SetupVmEnvironmentResult(
            w::SetupVmEnvironmentResult {
                result: Some(w::setup_vm_environment_result::Result::Success(
                    w::SetupVmEnvironmentSuccess {}
                )),
            }
        ))
    );
    assert!(matches!(
        responses[2].result,
        Some(w::interaction_response::Result::AskQuestionInteractionResponse(_))
    ));
    query(
        &mut h,
        4,
        Query::GenerateImageRequestQuery(w::GenerateImageRequestQuery {}),
    );
    assert!(h.take_sent().is_empty(), "no answer outside the whitelist");
    assert_eq!(
        last_error(&h.ir_events()).map(|e| e.kind),
        Some(ErrorKind::ProtocolDrift)
    );
}

#[test]
fn undrained_deltas_of_one_kind_merge_in_order_and_drained_ones_stay_apart() {
    let delta = |update: Update| {
        AgentServerMessage {
            message: Some(Server::InteractionUpdate(w::InteractionUpdate {
                message: Some(update),
                ..Default::default()
            })),
            ..Default::default()
        }
        .encode_to_vec()
    };
    let text = |t: &str| delta(Update::TextDelta(w::TextDeltaUpdate { text: t.into() }));
    let thinking = |t: &str| {
        delta(Update::ThinkingDelta(w::ThinkingDeltaUpdate {
            text: t.into(),
        }))
    };
    let frames = [
        text("Hel"),
        text("lo, "),
        thinking("hm"),
        thinking("m"),
        text("wörld"),
    ];

    // Fed without draining (the bytes path and the prost path alike): merged per run of a kind.
    let mut h = Harness::new();
    for (i, frame) in frames.iter().enumerate() {
        if i % 2 == 0 {
            h.run.handle_server_bytes(frame, h.now);
        } else {
            let message = AgentServerMessage::decode(&frame[..]).expect("valid");
            h.run.handle_server_message(message, h.now);
        }
    }
    h.drain();
    assert_eq!(
        h.ir_events(),
        [
            Event::TextDelta {
                text: "Hello, ".into()
            },
            Event::ThinkingDelta { text: "hmm".into() },
            Event::TextDelta {
                text: "wörld".into()
            },
        ]
    );

    // Drained after every frame: one event per delta.
    let mut h = Harness::new();
    for frame in &frames {
        h.run.handle_server_bytes(frame, h.now);
        h.drain();
    }
    let texts: Vec<Event> = h.ir_events();
    assert_eq!(texts.len(), 5, "{texts:?}");
}
