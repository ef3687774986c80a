//! T-AGENT-SESSION: a multi-round MCP session on one stream, driven with simulated time.

mod common;

use std::time::Duration;

use common::{Harness, assert_stream_close, exec_reply};
use cursor_agent::{AgentError, AgentEvent, BlobId};
use cursor_proto::agent::v1::{
    self as w, agent_client_message::Message as Client, agent_server_message::Message as Server,
    exec_client_message::Message as Reply, mcp_tool_result_content_item::Content,
};
use cursor_proto::ir::{Event, Image, StopReason, ToolCall, ToolResult, ToolResultContent};
use serde_json::json;

fn mcp_success(frame: &w::AgentClientMessage) -> w::McpSuccess {
    match exec_reply(frame).message.clone() {
        Some(Reply::McpResult(w::McpResult {
            result: Some(w::mcp_result::Result::Success(s)),
        })) => s,
        other => panic!("not an mcp success: {other:?}"),
    }
}

#[test]
fn two_tool_rounds_then_an_answer_on_one_stream() {
    let mut h = Harness::new();

    // The server reads the root prompt over KV first.
    let root_ids: Vec<Vec<u8>> = h
        .run
        .blobs()
        .iter()
        .map(|(id, _)| id.as_bytes().to_vec())
        .collect();
    for (n, id) in root_ids.iter().enumerate() {
        h.server(Server::KvServerMessage(w::KvServerMessage {
            id: n as u32 + 100,
            message: Some(w::kv_server_message::Message::GetBlobArgs(w::GetBlobArgs {
                blob_id: id.clone(),
            })),
        }));
    }
    let replies = h.take_sent();
    assert_eq!(replies.len(), root_ids.len());
    for (n, frame) in replies.iter().enumerate() {
        let Some(Client::KvClientMessage(kv)) = &frame.message else {
            panic!()
        };
        assert_eq!(kv.id, n as u32 + 100);
    }

    // Round 1: thinking, text, a burst of two MCP calls.
    h.update(w::interaction_update::Message::ThinkingDelta(
        w::ThinkingDeltaUpdate { text: "hm".into() },
    ));
    h.text("Let me look.");
    h.update(w::interaction_update::Message::TokenDelta(
        w::TokenDeltaUpdate { tokens: 7 },
    ));
    h.mcp(10, "mcp_pi_bash", "call-1", json!({"command": "ls"}));
    h.advance(Duration::from_millis(100));
    h.mcp(11, "read", "call-2", json!({"path": "README.md"}));
    // 100 ms after the second call is still inside the debounce: the leg is not over.
    h.advance(Duration::from_millis(100));
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, AgentEvent::Ir(Event::Done { .. })))
    );
    let deadline = h.run.poll_timeout().unwrap();
    assert_eq!(deadline, h.start + Duration::from_millis(250));
    h.advance_to_deadline();
    let events = h.ir_events();
    assert_eq!(events[0], Event::ThinkingDelta { text: "hm".into() });
    assert_eq!(
        events[1],
        Event::TextDelta {
            text: "Let me look.".into()
        }
    );
    assert_eq!(
        events[2],
        Event::ToolCall(ToolCall::new("call-1", "bash", json!({"command": "ls"})))
    );
    assert_eq!(
        events[3],
        Event::ToolCall(ToolCall::new(
            "call-2",
            "read",
            json!({"path": "README.md"})
        ))
    );
    let Event::Usage(usage) = &events[4] else {
        panic!("usage before done")
    };
    assert_eq!(usage.output_tokens, 7);
    assert!(usage.input_estimated && usage.input_tokens > 0);
    assert_eq!(
        events[5],
        Event::Done {
            reason: StopReason::ToolUse
        }
    );
    assert!(h.run.is_awaiting_tool_results());
    assert!(
        !h.run.is_finished(),
        "the stream stays open for the results"
    );
    assert!(
        h.take_sent().is_empty(),
        "nothing is answered before the host's results"
    );

    // The host runs the tools for a long time: no idle failure, heartbeats keep going.
    h.advance(Duration::from_secs(300));
    assert!(!h.run.is_finished());
    assert!(
        h.take_sent()
            .iter()
            .all(|f| matches!(f.message, Some(Client::ClientHeartbeat(_))))
    );

    let mut image_result = ToolResult::text("call-2", "read", "# Title", false);
    image_result
        .content
        .push(ToolResultContent::Image(Image::new(
            "image/png",
            vec![1, 2, 3],
        )));
    h.run
        .submit_tool_results(
            vec![
                ToolResult::text("call-1", "bash", "a\nb", true),
                image_result,
            ],
            h.now,
        )
        .unwrap();
    h.drain();
    let sent = h.take_sent();
    assert_eq!(sent.len(), 4);
    assert_eq!(exec_reply(&sent[0]).id, 10);
    assert_eq!(exec_reply(&sent[0]).exec_id, "x10");
    let first = mcp_success(&sent[0]);
    assert!(first.is_error);
    assert_eq!(
        first.content,
        [w::McpToolResultContentItem {
            content: Some(Content::Text(w::McpTextContent {
                text: "a\nb".into()
            }))
        }]
    );
    assert_stream_close(&sent[1], 10);
    let second = mcp_success(&sent[2]);
    assert!(!second.is_error);
    assert_eq!(second.content.len(), 2);
    assert!(
        matches!(&second.content[1].content, Some(Content::Image(i)) if i.mime_type == "image/png" && i.data == [1, 2, 3])
    );
    assert_stream_close(&sent[3], 11);

    // The first-frame watchdog is armed again (tests/timers.rs proves it fires).
    assert!(
        h.run
            .poll_timeout()
            .is_some_and(|at| at <= h.now + Duration::from_secs(30))
    );

    // Round 2: another call, then the answer.
    h.text("Now the tests.");
    h.mcp(12, "bash", "call-3", json!({"command": "cargo test"}));
    h.advance(Duration::from_millis(150));
    let events = h.ir_events();
    assert_eq!(
        events.last(),
        Some(&Event::Done {
            reason: StopReason::ToolUse
        })
    );
    h.run
        .submit_tool_results(vec![ToolResult::text("call-3", "bash", "ok", false)], h.now)
        .unwrap();
    h.drain();
    assert_eq!(h.take_sent().len(), 2);
    h.server(Server::ConversationCheckpointUpdate(vec![1, 2, 3]));
    h.text("All green.");
    h.turn_ended();
    let events = h.take_events();
    assert!(events.contains(&AgentEvent::Checkpoint(vec![1, 2, 3])));
    assert_eq!(h.run.checkpoint(), Some(&[1u8, 2, 3][..]));
    let ir: Vec<&Event> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Ir(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(
        ir[0],
        &Event::TextDelta {
            text: "All green.".into()
        }
    );
    assert!(matches!(ir[1], Event::Usage(_)));
    assert_eq!(
        ir[2],
        &Event::Done {
            reason: StopReason::Stop
        }
    );
    assert!(h.run.is_finished());
    assert_eq!(h.run.poll_timeout(), None);
}

#[test]
fn frames_that_arrive_while_the_host_runs_tools_open_the_next_leg() {
    let mut h = Harness::new();
    h.mcp(1, "bash", "c1", json!({"command": "ls"}));
    h.advance(Duration::from_millis(150));
    h.take_events();
    // The server keeps talking while the host works: held back, not mixed into the ended leg.
    h.text("still here");
    h.mcp(2, "bash", "c2", json!({"command": "pwd"}));
    assert!(h.ir_events().is_empty());
    // A result for c2 is not due yet: it was not part of the finished leg.
    assert_eq!(
        h.run
            .submit_tool_results(vec![ToolResult::text("c2", "bash", "x", false)], h.now),
        Err(AgentError::UnknownToolResult {
            tool_call_id: "c2".into()
        })
    );
    h.run
        .submit_tool_results(vec![ToolResult::text("c1", "bash", "x", false)], h.now)
        .unwrap();
    h.drain();
    let events = h.ir_events();
    assert_eq!(
        events[0],
        Event::TextDelta {
            text: "still here".into()
        }
    );
    assert!(matches!(&events[1], Event::ToolCall(call) if call.id == "c2"));
    h.advance(Duration::from_millis(150));
    assert_eq!(
        h.ir_events().last(),
        Some(&Event::Done {
            reason: StopReason::ToolUse
        })
    );
}

#[test]
fn a_call_the_host_returns_nothing_for_gets_an_error_result() {
    let mut h = Harness::new();
    h.mcp(1, "bash", "c1", json!({}));
    h.advance(Duration::from_millis(150));
    h.run.submit_tool_results(Vec::new(), h.now).unwrap();
    h.drain();
    let sent = h.take_sent();
    let success = mcp_success(&sent[0]);
    assert!(success.is_error);
    assert_stream_close(&sent[1], 1);
}

#[test]
fn submitting_results_when_none_are_due_is_refused_without_side_effects() {
    let mut h = Harness::new();
    assert_eq!(
        h.run.submit_tool_results(Vec::new(), h.now),
        Err(AgentError::NotAwaitingTools)
    );
    h.drain();
    assert!(h.sent.is_empty() && h.events.is_empty());
}

#[test]
fn tool_output_over_the_cap_is_truncated_with_a_marker() {
    let mut h = Harness::new();
    h.mcp(1, "bash", "c1", json!({}));
    h.advance(Duration::from_millis(150));
    let big = "x".repeat(600 * 1024);
    h.run
        .submit_tool_results(vec![ToolResult::text("c1", "bash", big, false)], h.now)
        .unwrap();
    h.drain();
    let Some(Content::Text(text)) = mcp_success(&h.sent[0]).content[0].content.clone() else {
        panic!()
    };
    assert!(text.text.starts_with(&"x".repeat(512 * 1024)));
    assert!(
        text.text
            .ends_with("[pi: tool output truncated, showing 524288 of 614400 bytes]")
    );
}

#[test]
fn tools_registered_mid_run_pass_the_gate() {
    let mut h = Harness::new();
    let mut tools = common::tools();
    tools.push(cursor_proto::ir::Tool::new(
        "web_search",
        "Search the web",
        json!({}),
    ));
    h.run.update_tools(tools);
    h.mcp(4, "mcp_pi_web_search", "c9", json!({"q": "rust"}));
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, AgentEvent::Ir(Event::ToolCall(c)) if c.name == "web_search"))
    );
    assert_eq!(h.run.misses(), 0);
}

#[test]
fn a_blob_the_root_prompt_stored_is_served_with_the_same_id() {
    let mut h = Harness::new();
    let (id, data) = h
        .run
        .blobs()
        .iter()
        .next()
        .map(|(id, d)| (*id, d.to_vec()))
        .unwrap();
    assert_eq!(BlobId::of(&data), id);
    h.server(Server::KvServerMessage(w::KvServerMessage {
        id: 77,
        message: Some(w::kv_server_message::Message::GetBlobArgs(w::GetBlobArgs {
            blob_id: id.as_bytes().to_vec(),
        })),
    }));
    assert_eq!(
        h.sent[0].message,
        Some(Client::KvClientMessage(w::KvClientMessage {
            id: 77,
            message: Some(w::kv_client_message::Message::GetBlobResult(
                w::GetBlobResult {
                    blob_data: Some(data)
                }
            )),
        }))
    );
}
