//! One cap for every tool result sent back: a host tool's output of any size reaches Cursor
//! capped with an honest marker, translated native results included, instead of failing the
//! turn at the transport's frame limit.

use std::sync::Arc;
use std::time::Duration;

use cursor_agent::session::{AgentSession, ModelChoice, StaticToken};
use cursor_agent::testing::{AllowedTools, Replica};
use cursor_agent::{AgentEvent, HostProfile, Limits};
use cursor_proto::ir::{
    Conversation, Event, Image, Message, StopReason, Tool, ToolResult, ToolResultContent,
};
use cursor_transport::Client;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

/// 20 MiB: more than the transport's 16 MiB frame limit.
const HUGE: usize = 20 << 20;

#[tokio::test]
async fn a_translated_shell_result_over_the_frame_limit_is_capped_and_the_turn_completes() {
    let replica = Replica::start().await.unwrap();
    // A backend that sends native execs whatever the allowed-tools header says.
    replica.set_allowed_tools(AllowedTools::Ignore);
    let session = AgentSession::builder(
        Client::new().unwrap(),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
    .workspace_uri("file:///work")
    .build();
    let mut conversation =
        Conversation::new("").with_message(Message::user_text("run: cat big.log"));
    conversation.tools = vec![Tool::new(
        "bash",
        "Run a shell command",
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    )];
    let model = ModelChoice::new("composer-2.5");

    let mut calls = Vec::new();
    let mut turn = session.turn(&conversation, &model);
    while let Some(event) = tokio::time::timeout(WAIT, turn.next()).await.unwrap() {
        if let AgentEvent::Ir(Event::ToolCall(call)) = event {
            calls.push(call);
        }
    }
    assert_eq!(calls.len(), 1, "one translated shell call");
    let huge = "x".repeat(HUGE);
    let result = ToolResult::text(calls[0].id.clone(), calls[0].name.clone(), huge, false);
    conversation = conversation
        .with_message(Message::assistant_tool_calls(calls))
        .with_message(Message::ToolResult(result));

    let mut last = None;
    let mut turn = session.turn(&conversation, &model);
    while let Some(event) = tokio::time::timeout(WAIT, turn.next()).await.unwrap() {
        last = Some(event);
    }
    assert!(
        matches!(
            last,
            Some(AgentEvent::Ir(Event::Done {
                reason: StopReason::Stop
            }))
        ),
        "the turn completed: {last:?}"
    );
    let run = replica.runs().pop().unwrap();
    let shell = run
        .execs
        .iter()
        .find(|exec| exec.kind.starts_with("shell"))
        .expect("the replica saw the shell exec");
    let cap = Limits::default().max_tool_result_bytes;
    assert!(
        shell.result.len() < cap + 200,
        "capped: {} bytes",
        shell.result.len()
    );
    assert!(
        shell.result.ends_with(&format!(
            "tool output truncated, showing {cap} of {HUGE} bytes]"
        )),
        "with a marker: …{}",
        &shell.result[shell.result.len().saturating_sub(120)..]
    );
}

/// Two images, each under the per-image cap, answer one MCP call: together they would not fit
/// one frame, so the second is left out with a marker and the turn completes.
#[tokio::test]
async fn two_large_images_in_one_tool_result_are_capped_in_total_and_the_turn_completes() {
    let replica = Replica::start().await.unwrap();
    let session = AgentSession::builder(
        Client::new().unwrap(),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
    .workspace_uri("file:///work")
    .build();
    let mut conversation =
        Conversation::new("").with_message(Message::user_text("tool: screenshot {}"));
    conversation.tools = vec![Tool::new(
        "screenshot",
        "Take a screenshot",
        json!({"type": "object", "properties": {}}),
    )];
    let model = ModelChoice::new("composer-2.5");

    let mut calls = Vec::new();
    let mut turn = session.turn(&conversation, &model);
    while let Some(event) = tokio::time::timeout(WAIT, turn.next()).await.unwrap() {
        if let AgentEvent::Ir(Event::ToolCall(call)) = event {
            calls.push(call);
        }
    }
    assert_eq!(calls.len(), 1, "one screenshot call");
    let each = Limits::default().max_image_len - 1024;
    let mut result = ToolResult::text(calls[0].id.clone(), calls[0].name.clone(), "shots", false);
    for byte in [1, 2] {
        result.content.push(ToolResultContent::Image(Image::new(
            "image/png",
            vec![byte; each],
        )));
    }
    conversation = conversation
        .with_message(Message::assistant_tool_calls(calls))
        .with_message(Message::ToolResult(result));

    let mut last = None;
    let mut turn = session.turn(&conversation, &model);
    while let Some(event) = tokio::time::timeout(WAIT, turn.next()).await.unwrap() {
        last = Some(event);
    }
    assert!(
        matches!(
            last,
            Some(AgentEvent::Ir(Event::Done {
                reason: StopReason::Stop
            }))
        ),
        "the turn completed: {last:?}"
    );
    let run = replica.runs().pop().unwrap();
    let mcp = run
        .execs
        .iter()
        .find(|exec| exec.kind == "mcp")
        .expect("the replica saw the MCP result");
    assert!(
        mcp.result.contains("[acme: omitted 1 of 2 images"),
        "{}",
        mcp.result
    );
}
