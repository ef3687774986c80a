//! T-AGENT: every exec arm of the generated schema has a row, and each row answers with the
//! exact frames PROTOCOL-AGENT §5 (plus PROTOCOL-AGENT §11.1 for arms 27–51) prescribes.

mod common;

use common::{Harness, assert_stream_close, exec_reply};
use cursor_agent::{AgentEvent, ExecArm, ExecOutcome};
use cursor_proto::agent::v1::{
    self as w, agent_client_message::Message as Client, exec_client_message::Message as Reply,
    exec_server_message::Message as Exec,
};
use prost::Message as _;

const NOTHING_RAN: &str = "No operation was performed.";

/// One request per arm, with payloads where the reply echoes them.
fn sample(arm: ExecArm) -> Exec {
    match arm {
        ExecArm::Shell => Exec::ShellArgs(w::ShellArgs {
            command: "ls -la".into(),
            working_directory: "/w".into(),
            ..Default::default()
        }),
        ExecArm::ShellStream => Exec::ShellStreamArgs(w::ShellArgs {
            command: "echo hi".into(),
            working_directory: "/w".into(),
            ..Default::default()
        }),
        ExecArm::Write => Exec::WriteArgs(w::WriteArgs {
            path: "a.txt".into(),
            ..Default::default()
        }),
        ExecArm::Delete => Exec::DeleteArgs(w::DeleteArgs {
            path: "b.txt".into(),
            ..Default::default()
        }),
        ExecArm::Grep => Exec::GrepArgs(w::GrepArgs {
            pattern: "fn main".into(),
            ..Default::default()
        }),
        ExecArm::Read => Exec::ReadArgs(w::ReadArgs {
            path: "c.txt".into(),
            ..Default::default()
        }),
        ExecArm::Ls => Exec::LsArgs(w::LsArgs {
            path: "src".into(),
            ..Default::default()
        }),
        ExecArm::Diagnostics => Exec::DiagnosticsArgs(w::DiagnosticsArgs {
            path: "d.rs".into(),
            ..Default::default()
        }),
        ExecArm::RequestContext => Exec::RequestContextArgs(w::RequestContextArgs::default()),
        ExecArm::Mcp => Exec::McpArgs(w::McpArgs {
            tool_name: "mcp_pi_bash".into(),
            ..Default::default()
        }),
        ExecArm::BackgroundShellSpawn => {
            Exec::BackgroundShellSpawnArgs(w::BackgroundShellSpawnArgs {
                command: "sleep 9".into(),
                working_directory: "/w".into(),
                ..Default::default()
            })
        }
        ExecArm::ListMcpResources => {
            Exec::ListMcpResourcesExecArgs(w::ListMcpResourcesExecArgs::default())
        }
        ExecArm::ReadMcpResource => Exec::ReadMcpResourceExecArgs(w::ReadMcpResourceExecArgs {
            uri: "res://x".into(),
            ..Default::default()
        }),
        ExecArm::Fetch => Exec::FetchArgs(w::FetchArgs {
            url: "https://example.org".into(),
            ..Default::default()
        }),
        ExecArm::RecordScreen => Exec::RecordScreenArgs(w::RecordScreenArgs::default()),
        ExecArm::ComputerUse => Exec::ComputerUseArgs(w::ComputerUseArgs::default()),
        ExecArm::WriteShellStdin => Exec::WriteShellStdinArgs(w::WriteShellStdinArgs::default()),
        ExecArm::ExecuteHook => Exec::ExecuteHookArgs(w::ExecuteHookArgs {}),
        ExecArm::Subagent => Exec::SubagentArgs(w::SubagentArgs {}),
        ExecArm::RedactedRead => Exec::RedactedReadArgs(w::ReadArgs {
            path: "e.txt".into(),
            ..Default::default()
        }),
        ExecArm::ForceBackgroundShell => {
            Exec::ForceBackgroundShellArgs(w::ForceBackgroundShellArgs {})
        }
        ExecArm::ForceBackgroundSubagent => {
            Exec::ForceBackgroundSubagentArgs(w::ForceBackgroundSubagentArgs {})
        }
        ExecArm::McpStateExec => Exec::McpStateExecArgs(w::McpStateExecArgs::default()),
        ExecArm::SubagentAwait => Exec::SubagentAwaitArgs(w::SubagentAwaitArgs {}),
        ExecArm::SmartModeClassifier => {
            Exec::SmartModeClassifierArgs(w::SmartModeClassifierArgs {})
        }
        ExecArm::CanvasDiagnostics => Exec::CanvasDiagnosticsArgs(w::CanvasDiagnosticsArgs {}),
        ExecArm::ShellAllowlistPrecheck => {
            Exec::ShellAllowlistPrecheckArgs(w::ShellAllowlistPrecheckArgs {})
        }
        ExecArm::McpAllowlistPrecheck => {
            Exec::McpAllowlistPrecheckArgs(w::McpAllowlistPrecheckArgs {})
        }
        ExecArm::WebFetchAllowlistPrecheck => {
            Exec::WebFetchAllowlistPrecheckArgs(w::WebFetchAllowlistPrecheckArgs {})
        }
        ExecArm::GitDiffRequest => Exec::GitDiffRequest(w::GitDiffRequestArgs {}),
        ExecArm::PiRead => Exec::PiReadArgs(w::PiReadExecArgs {
            path: "f.txt".into(),
            ..Default::default()
        }),
        ExecArm::PiBash => Exec::PiBashArgs(w::PiBashExecArgs {
            command: "pwd".into(),
            ..Default::default()
        }),
        ExecArm::PiEdit => Exec::PiEditArgs(w::PiEditExecArgs {
            path: "g.txt".into(),
            ..Default::default()
        }),
        ExecArm::PiWrite => Exec::PiWriteArgs(w::PiWriteExecArgs {
            path: "h.txt".into(),
            ..Default::default()
        }),
        ExecArm::PiGrep => Exec::PiGrepArgs(w::PiGrepExecArgs {
            pattern: "todo".into(),
            ..Default::default()
        }),
        ExecArm::PiFind => Exec::PiFindArgs(w::PiFindExecArgs {
            pattern: "*.md".into(),
            ..Default::default()
        }),
        ExecArm::PiLs => Exec::PiLsArgs(w::PiLsExecArgs::default()),
        ExecArm::MiniSweAgentBash => Exec::MiniSweAgentBashArgs(w::ShellArgs {
            command: "make test".into(),
            working_directory: "/w".into(),
            ..Default::default()
        }),
        ExecArm::ConversationSearch => {
            Exec::ConversationSearchArgs(w::ConversationSearchArgs::default())
        }
        ExecArm::AgentStoreConflict => {
            Exec::AgentStoreConflictArgs(w::AgentStoreConflictArgs::default())
        }
        ExecArm::Adopt => Exec::AdoptArgs(w::AdoptArgs::default()),
        other => panic!("no sample for {other:?}"),
    }
}

/// The exact typed reply an arm gets, given the reason text the run chose.
fn expected(arm: ExecArm, reason: String) -> Option<Reply> {
    let path_rejected = |path: &str| w::PathRejected {
        path: path.into(),
        reason: reason.clone(),
    };
    let shell_rejected = |command: &str| w::ShellRejected {
        command: command.into(),
        working_directory: "/w".into(),
        reason: reason.clone(),
        is_readonly: false,
    };
    let error_text = w::ErrorText {
        error: reason.clone(),
    };
    let reason_rejected = w::ReasonRejected {
        reason: reason.clone(),
    };
    Some(match arm {
        ExecArm::Shell => Reply::ShellResult(w::ShellResult {
            result: Some(w::shell_result::Result::Rejected(shell_rejected("ls -la"))),
        }),
        ExecArm::ShellStream => Reply::ShellStream(w::ShellStream {
            event: Some(w::shell_stream::Event::Rejected(shell_rejected("echo hi"))),
        }),
        // Answered at result field 55, in the shell result's shape (docs/PROTOCOL-AGENT.md §5.6).
        ExecArm::MiniSweAgentBash => Reply::MiniSweAgentBashResult(w::ShellResult {
            result: Some(w::shell_result::Result::Rejected(shell_rejected(
                "make test",
            ))),
        }),
        ExecArm::Write => Reply::WriteResult(w::WriteResult {
            result: Some(w::write_result::Result::Rejected(path_rejected("a.txt"))),
        }),
        ExecArm::Delete => Reply::DeleteResult(w::DeleteResult {
            result: Some(w::delete_result::Result::Rejected(path_rejected("b.txt"))),
        }),
        ExecArm::Grep => Reply::GrepResult(w::GrepResult {
            result: Some(w::grep_result::Result::Error(w::GrepError {
                error: reason,
            })),
        }),
        ExecArm::Read => Reply::ReadResult(w::ReadResult {
            result: Some(w::read_result::Result::Rejected(path_rejected("c.txt"))),
        }),
        ExecArm::RedactedRead => Reply::RedactedReadResult(w::ReadResult {
            result: Some(w::read_result::Result::Rejected(path_rejected("e.txt"))),
        }),
        ExecArm::Ls => Reply::LsResult(w::LsResult {
            result: Some(w::ls_result::Result::Rejected(path_rejected("src"))),
        }),
        ExecArm::Diagnostics => Reply::DiagnosticsResult(w::DiagnosticsResult {
            result: Some(w::diagnostics_result::Result::Rejected(path_rejected(
                "d.rs",
            ))),
        }),
        ExecArm::BackgroundShellSpawn => {
            Reply::BackgroundShellSpawnResult(w::BackgroundShellSpawnResult {
                result: Some(w::background_shell_spawn_result::Result::Rejected(
                    shell_rejected("sleep 9"),
                )),
            })
        }
        ExecArm::ListMcpResources => {
            Reply::ListMcpResourcesExecResult(w::ListMcpResourcesExecResult {
                result: Some(w::list_mcp_resources_exec_result::Result::Rejected(
                    reason_rejected,
                )),
            })
        }
        ExecArm::ReadMcpResource => {
            Reply::ReadMcpResourceExecResult(w::ReadMcpResourceExecResult {
                result: Some(w::read_mcp_resource_exec_result::Result::Rejected(
                    w::ReadMcpResourceRejected {
                        uri: "res://x".into(),
                        reason,
                    },
                )),
            })
        }
        ExecArm::Fetch => Reply::FetchResult(w::FetchResult {
            result: Some(w::fetch_result::Result::Error(w::FetchError {
                url: "https://example.org".into(),
                error: reason,
            })),
        }),
        ExecArm::RecordScreen => Reply::RecordScreenResult(w::RecordScreenResult {
            result: Some(w::record_screen_result::Result::Failure(error_text)),
        }),
        ExecArm::ComputerUse => Reply::ComputerUseResult(w::ComputerUseResult {
            result: Some(w::computer_use_result::Result::Error(error_text)),
        }),
        ExecArm::WriteShellStdin => Reply::WriteShellStdinResult(w::WriteShellStdinResult {
            result: Some(w::write_shell_stdin_result::Result::Error(error_text)),
        }),
        ExecArm::PiRead => Reply::PiReadResult(w::PiReadExecResult {
            result: Some(w::pi_read_exec_result::Result::Error(error_text)),
        }),
        ExecArm::PiBash => Reply::PiBashResult(w::PiBashExecResult {
            result: Some(w::pi_bash_exec_result::Result::Error(error_text)),
        }),
        ExecArm::PiEdit => Reply::PiEditResult(w::PiEditExecResult {
            result: Some(w::pi_edit_exec_result::Result::Rejected(reason_rejected)),
        }),
        ExecArm::PiWrite => Reply::PiWriteResult(w::PiWriteExecResult {
            result: Some(w::pi_write_exec_result::Result::Rejected(reason_rejected)),
        }),
        ExecArm::PiGrep => Reply::PiGrepResult(w::PiGrepExecResult {
            result: Some(w::pi_grep_exec_result::Result::Error(error_text)),
        }),
        ExecArm::PiFind => Reply::PiFindResult(w::PiFindExecResult {
            result: Some(w::pi_find_exec_result::Result::Error(error_text)),
        }),
        ExecArm::PiLs => Reply::PiLsResult(w::PiLsExecResult {
            result: Some(w::pi_ls_exec_result::Result::Error(error_text)),
        }),
        _ => return None,
    })
}

/// The arms answered with `throw` because their results have no refusal shape (or none a
/// public source gives).
const THROWN: [ExecArm; 14] = [
    ExecArm::ExecuteHook,
    ExecArm::Subagent,
    ExecArm::ForceBackgroundShell,
    ExecArm::ForceBackgroundSubagent,
    ExecArm::SubagentAwait,
    ExecArm::SmartModeClassifier,
    ExecArm::CanvasDiagnostics,
    ExecArm::ShellAllowlistPrecheck,
    ExecArm::McpAllowlistPrecheck,
    ExecArm::WebFetchAllowlistPrecheck,
    ExecArm::GitDiffRequest,
    ExecArm::ConversationSearch,
    ExecArm::AgentStoreConflict,
    ExecArm::Adopt,
];

fn reason_of(reply: &Reply) -> String {
    // The reason is the only string the tests did not choose; find it via the debug form.
    let debug = format!("{reply:?}");
    let start = debug.find(NOTHING_RAN).expect("reason text present");
    let open = debug[..start]
        .rfind("\"Cursor native")
        .or_else(|| debug[..start].rfind("\"STOP"))
        .unwrap();
    let raw = &debug[open..start + NOTHING_RAN.len() + 1];
    serde_json::from_str(raw).expect("debug string is JSON-compatible")
}

#[test]
fn every_arm_of_the_wire_schema_gets_an_answer_that_is_not_a_fallthrough() {
    // Enumerate the generated oneof by decoding an empty payload at every field number.
    let mut covered = Vec::new();
    for field in 1..=120u32 {
        let mut exec = Vec::new();
        prost::encoding::encode_key(field, prost::encoding::WireType::LengthDelimited, &mut exec);
        exec.push(0);
        let Ok(decoded) = w::ExecServerMessage::decode(exec.as_slice()) else {
            continue;
        };
        if decoded.message.is_none() {
            continue;
        }
        let mut harness = Harness::new();
        harness.exec(9, decoded.message.unwrap());
        let audit = harness.events.iter().find_map(|event| match event {
            AgentEvent::Exec(audit) => Some(audit.clone()),
            _ => None,
        });
        let audit = audit.unwrap_or_else(|| panic!("field {field} was not answered"));
        assert_ne!(
            audit.arm,
            ExecArm::Unknown,
            "field {field} fell through to the unknown row"
        );
        assert_eq!(audit.arm.field_number(), Some(field));
        covered.push(audit.arm);
    }
    assert_eq!(covered, ExecArm::ALL);
}

#[test]
fn refused_arms_answer_with_their_exact_typed_refusal_then_stream_close() {
    for arm in ExecArm::ALL {
        let Some(_) = expected(arm, String::new()) else {
            continue;
        };
        let mut harness = Harness::refusing();
        harness.exec(41, sample(arm));
        let sent = harness.take_sent();
        assert_eq!(sent.len(), 2, "{arm:?}: {sent:?}");
        let reply = exec_reply(&sent[0]);
        assert_eq!((reply.id, reply.exec_id.as_str()), (41, "x41"), "{arm:?}");
        let got = reply.message.clone().expect("typed reply");
        let reason = reason_of(&got);
        assert!(
            reason.contains("`mcp_pi_"),
            "{arm:?} names a pi tool: {reason}"
        );
        assert_eq!(Some(got), expected(arm, reason), "{arm:?}");
        assert_stream_close(&sent[1], 41);
        assert!(harness.events.iter().any(|event| matches!(
            event,
            AgentEvent::Exec(record)
                if record.id == 41 && record.arm == arm && record.outcome == ExecOutcome::Refused
        )));
    }
}

#[test]
fn arms_without_a_refusal_shape_are_thrown_with_a_redirect_then_stream_close() {
    for arm in THROWN {
        let mut harness = Harness::new();
        harness.exec(5, sample(arm));
        let sent = harness.take_sent();
        assert_eq!(sent.len(), 2, "{arm:?}");
        match &sent[0].message {
            Some(Client::ExecClientControlMessage(w::ExecClientControlMessage {
                message: Some(w::exec_client_control_message::Message::Throw(throw)),
            })) => {
                assert_eq!(throw.id, 5);
                assert!(
                    throw.error.ends_with(NOTHING_RAN),
                    "{arm:?}: {}",
                    throw.error
                );
            }
            other => panic!("{arm:?} not thrown: {other:?}"),
        }
        assert_stream_close(&sent[1], 5);
    }
}

#[test]
fn an_unknown_arm_is_thrown_and_counted_as_a_miss() {
    let mut harness = Harness::new();
    // ExecServerMessage { id: 3, field 33 (not in the schema): empty }
    let exec = [0x08, 3, 0x8a, 0x02, 0];
    let mut frame = vec![0x12, exec.len() as u8];
    frame.extend(exec);
    harness.run.handle_server_bytes(&frame, harness.now);
    harness.drain();
    let sent = harness.take_sent();
    assert!(matches!(
        &sent[0].message,
        Some(Client::ExecClientControlMessage(w::ExecClientControlMessage {
            message: Some(w::exec_client_control_message::Message::Throw(t)),
        })) if t.id == 3 && t.error.contains("`mcp_pi_")
    ));
    assert_stream_close(&sent[1], 3);
    assert_eq!(harness.run.misses(), 1);
}

#[test]
fn request_context_reports_only_workspace_paths_and_the_tool_list() {
    let mut harness = Harness::new();
    harness.exec(2, sample(ExecArm::RequestContext));
    let sent = harness.take_sent();
    let Some(Reply::RequestContextResult(result)) = exec_reply(&sent[0]).message.clone() else {
        panic!("not a request-context result")
    };
    let Some(w::request_context_result::Result::Success(success)) = result.result else {
        panic!()
    };
    let context = success.request_context.unwrap();
    let env = context.env.unwrap();
    assert_eq!(env.workspace_paths, ["file:///work"]);
    assert_eq!(
        env,
        w::RequestContextEnv {
            workspace_paths: env.workspace_paths.clone(),
            ..Default::default()
        }
    );
    let names: Vec<&str> = context.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["bash", "read"]);
    assert!(context.tools.iter().all(|t| t.provider_identifier == "pi"));
    assert_stream_close(&sent[1], 2);
    assert_eq!(harness.run.misses(), 0, "context requests are not misses");
}

/// The redirect is the call that would do what was asked, where it was asked (the request's
/// working directory included).
#[test]
fn redirects_embed_the_original_command_or_path() {
    let mut harness = Harness::refusing();
    harness.exec(1, sample(ExecArm::Shell));
    let reason = reason_of(exec_reply(&harness.sent[0]).message.as_ref().unwrap());
    assert_eq!(
        reason,
        "Cursor native tool Shell is disabled in this session: pi runs local work only through its MCP tools. To run a command from pi, call the MCP tool `mcp_pi_bash` with {\"command\": \"cd -- '/w' && {\\nls -la\\n}\"}. No operation was performed."
    );
    let mut harness = Harness::refusing();
    harness.exec(1, sample(ExecArm::Read));
    let reason = reason_of(exec_reply(&harness.sent[0]).message.as_ref().unwrap());
    assert!(
        reason.contains("`mcp_pi_read` with {\"path\": \"c.txt\"}"),
        "{reason}"
    );
}

/// PROTOCOL-AGENT §11.1: the older spec table numbers 32–36 differently from the extracted schema.
/// One fixture per disputed number, so a live capture can settle it: today 32–35 are unknown arms
/// (thrown) and 36 is `mcp_state_exec_args`, answered with the host's MCP state
/// (docs/PROTOCOL-AGENT.md §5.5), never the spec's plan-mode ack.
#[test]
fn disputed_numbers_32_to_36_follow_the_extracted_schema() {
    for field in 32..=36u32 {
        let mut exec = vec![0x08, 1];
        prost::encoding::encode_key(field, prost::encoding::WireType::LengthDelimited, &mut exec);
        exec.push(0);
        let mut frame = vec![0x12, exec.len() as u8];
        frame.extend(exec);
        let mut harness = Harness::new();
        harness.run.handle_server_bytes(&frame, harness.now);
        harness.drain();
        let record = harness
            .events
            .iter()
            .find_map(|event| match event {
                AgentEvent::Exec(record) => Some(record.clone()),
                _ => None,
            })
            .expect("answered");
        let expected = if field == 36 {
            (
                ExecArm::McpStateExec,
                ExecOutcome::McpStateReported {
                    servers: 1,
                    tools: 2,
                },
            )
        } else {
            (ExecArm::Unknown, ExecOutcome::Thrown)
        };
        assert_eq!((record.arm, record.outcome), expected, "field {field}");
    }
}

/// The reply to an `mcp_state_exec_args` with these arguments, decoded.
fn mcp_state(args: w::McpStateExecArgs) -> (w::McpStateSuccess, Vec<w::AgentClientMessage>) {
    let mut harness = Harness::new();
    harness.exec(7, Exec::McpStateExecArgs(args));
    let sent = harness.take_sent();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let reply = exec_reply(&sent[0]);
    assert_eq!((reply.id, reply.exec_id.as_str()), (7, "x7"));
    let Some(Reply::McpStateExecResult(w::McpStateExecResult {
        result: Some(w::mcp_state_exec_result::Result::Success(success)),
    })) = reply.message.clone()
    else {
        panic!("not an MCP state success: {reply:?}")
    };
    assert_stream_close(&sent[1], 7);
    assert_eq!(harness.run.misses(), 0, "a state request is not a miss");
    (success, sent)
}

/// docs/PROTOCOL-AGENT.md §12.1: a Grok model sends arm 36 before any tool use, and a client that
/// throws it (or answers it empty) leaves the model without tools. The answer is the host's MCP
/// projection: one server named after the host profile, listing exactly the advertised tools, each
/// schema as a protobuf Value and as JSON text.
#[test]
fn mcp_state_lists_the_host_projection_with_every_advertised_tool_and_both_schemas() {
    let (success, _) = mcp_state(w::McpStateExecArgs::default());
    let [server] = success.servers.as_slice() else {
        panic!("one server: {success:?}")
    };
    assert_eq!(server.server_identifier, "pi");
    assert_eq!(server.server_name, "pi");
    let names: Vec<&str> = server.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["bash", "read"]);
    for tool in &server.tools {
        assert_eq!(tool.provider_identifier, "pi");
        assert!(tool.input_schema.is_some(), "{tool:?}");
        let json: serde_json::Value = serde_json::from_str(&tool.input_schema_json).unwrap();
        assert_eq!(json["type"], "object", "{tool:?}");
    }
}

#[test]
fn mcp_state_honours_server_identifiers_and_kick_only() {
    let (named, _) = mcp_state(w::McpStateExecArgs {
        server_identifiers: vec!["other".into(), "pi".into()],
        kick_only: false,
    });
    assert_eq!(named.servers.len(), 1);
    let (others, _) = mcp_state(w::McpStateExecArgs {
        server_identifiers: vec!["other".into()],
        kick_only: false,
    });
    assert!(others.servers.is_empty(), "{others:?}");
    let (kicked, _) = mcp_state(w::McpStateExecArgs {
        server_identifiers: Vec::new(),
        kick_only: true,
    });
    assert!(kicked.servers.is_empty(), "{kicked:?}");
}
