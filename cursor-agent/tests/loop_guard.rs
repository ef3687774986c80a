//! The miss budget (PROTOCOL-AGENT §5): unproductive requests harden the redirect from 3 misses
//! and fail the run closed at 8; a real host tool call resets the count.

mod common;

use common::{Harness, exec_reply, last_error};
use cursor_proto::agent::v1::{
    self as w, exec_client_message::Message as Reply, exec_server_message::Message as Exec,
};
use cursor_proto::ir::ErrorKind;
use serde_json::json;

fn shell(h: &mut Harness, id: u32) -> String {
    h.exec(
        id,
        Exec::ShellArgs(w::ShellArgs {
            command: "ls".into(),
            ..Default::default()
        }),
    );
    let sent = h.take_sent();
    match sent.first().and_then(|f| exec_reply(f).message.clone()) {
        Some(Reply::ShellResult(w::ShellResult {
            result: Some(w::shell_result::Result::Rejected(rejected)),
        })) => rejected.reason,
        other => panic!("not a shell rejection: {other:?}"),
    }
}

#[test]
fn the_third_miss_hardens_the_text_into_one_imperative() {
    let mut h = Harness::refusing();
    assert!(shell(&mut h, 1).starts_with("Cursor native tool Shell is disabled"));
    assert!(shell(&mut h, 2).starts_with("Cursor native tool Shell is disabled"));
    let third = shell(&mut h, 3);
    assert_eq!(
        third,
        "STOP calling Cursor native tools: they are disabled and nothing runs. Call the MCP tool `mcp_pi_bash` with {\"command\": \"ls\"} instead. No operation was performed."
    );
}

#[test]
fn the_eighth_miss_fails_the_run_closed_naming_the_command_tool() {
    let mut h = Harness::refusing();
    for id in 1..=7 {
        shell(&mut h, id);
    }
    assert!(!h.run.is_finished());
    h.exec(
        8,
        Exec::ShellArgs(w::ShellArgs {
            command: "ls".into(),
            ..Default::default()
        }),
    );
    assert!(
        h.take_sent().is_empty(),
        "nothing more is written after the guard trips"
    );
    let events = h.ir_events();
    let error = last_error(&events).expect("loop guard error");
    assert_eq!(error.kind, ErrorKind::RemoteRefusal);
    assert!(
        error.next_step
            == cursor_proto::ir::NextStep::UseTool {
                tool: "mcp_pi_bash".into()
            },
        "{}",
        error.next_step
    );
    assert!(h.run.is_finished());
}

#[test]
fn a_real_tool_call_resets_the_count() {
    let mut h = Harness::refusing();
    for id in 1..=5 {
        shell(&mut h, id);
    }
    assert_eq!(h.run.misses(), 5);
    h.mcp(6, "bash", "c1", json!({"command": "ls"}));
    assert_eq!(h.run.misses(), 0);
    assert!(
        shell(&mut h, 7).starts_with("Cursor native tool"),
        "back to the gentle text"
    );
}

#[test]
fn unregistered_mcp_tools_are_not_found_ranked_and_counted() {
    let mut h = Harness::refusing();
    h.mcp(1, "mcp_pi_sudo_read", "c1", json!({}));
    let sent = h.take_sent();
    assert_eq!(
        exec_reply(&sent[0]).message,
        Some(Reply::McpResult(w::McpResult {
            result: Some(w::mcp_result::Result::ToolNotFound(w::McpToolNotFound {
                name: "sudo_read".into(),
                available_tools: vec!["read".into(), "bash".into()],
            })),
        }))
    );
    common::assert_stream_close(&sent[1], 1);
    assert_eq!(h.run.misses(), 1);
    assert!(!h.events.iter().any(|e| matches!(
        e,
        cursor_agent::AgentEvent::Ir(cursor_proto::ir::Event::ToolCall(_))
    )));
}

#[test]
fn calls_for_another_mcp_provider_are_not_lifted() {
    let mut h = Harness::refusing();
    h.exec(
        1,
        Exec::McpArgs(w::McpArgs {
            tool_name: "bash".into(),
            provider_identifier: "other".into(),
            ..Default::default()
        }),
    );
    assert!(matches!(
        exec_reply(&h.sent[0]).message,
        Some(Reply::McpResult(w::McpResult {
            result: Some(w::mcp_result::Result::ToolNotFound(_))
        }))
    ));
}

#[test]
fn every_kind_of_miss_counts_toward_the_same_budget() {
    let mut h = Harness::refusing();
    h.exec(
        1,
        Exec::FetchArgs(w::FetchArgs {
            url: "https://x.example.com".into(),
            ..Default::default()
        }),
    );
    h.exec(2, Exec::SubagentArgs(w::SubagentArgs {}));
    h.mcp(3, "nope", "c", json!({}));
    h.take_sent();
    shell(&mut h, 4);
    assert_eq!(h.run.misses(), 4);
}
