//! Fuzzing entry points, shared by the cargo-fuzz target and the corpus replay in `cargo test`.
//! Not a stable API.

use std::time::{Duration, Instant};

use cursor_proto::agent::v1::{
    AgentClientMessage, agent_client_message::Message as Client,
    exec_client_message::Message as Reply, mcp_result,
};
use cursor_proto::ir::{Conversation, Event, Message, Tool, ToolResult};
use prost::Message as _;

use crate::{AgentEvent, AgentRun, RunConfig, StreamOutcome};

/// Exec arm field numbers the structured op picks from (every known arm plus unknown ones).
const EXEC_FIELDS: [u8; 40] = [
    2, 3, 4, 5, 7, 8, 9, 10, 11, 14, 16, 17, 18, 20, 21, 22, 23, 27, 28, 29, 30, 31, 36, 37, 38,
    40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 6, 33, 60,
];

/// True when `frame` is something the policy may send: a native result that claims work
/// happened (success, failure, output) only while the host's own tool results are being
/// written (`host_results` true: a translated exec answered from the host's result), never on
/// the client's own initiative.
pub fn is_allowed_transmit(frame: &AgentClientMessage, host_results: bool) -> bool {
    use cursor_proto::agent::v1 as w;
    let Some(message) = &frame.message else {
        return false;
    };
    let Client::ExecClientMessage(exec) = message else {
        return true;
    };
    let Some(reply) = &exec.message else {
        return false;
    };
    // `refusal`: the reply is the arm's refusal (always allowed); `present`: it has a result.
    let gate = |present: bool, refusal: bool| present && (refusal || host_results);
    // No wildcard: a new result arm must be classified here too.
    match reply {
        Reply::ShellResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::shell_result::Result::Rejected(_))),
        ),
        Reply::WriteResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::write_result::Result::Rejected(_))),
        ),
        Reply::DeleteResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::delete_result::Result::Rejected(_))),
        ),
        Reply::GrepResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::grep_result::Result::Error(_))),
        ),
        Reply::ReadResult(r) | Reply::RedactedReadResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::read_result::Result::Rejected(_))),
        ),
        Reply::LsResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::ls_result::Result::Rejected(_))),
        ),
        Reply::DiagnosticsResult(r) => {
            matches!(r.result, Some(w::diagnostics_result::Result::Rejected(_)))
        }
        Reply::RequestContextResult(r) => match &r.result {
            Some(w::request_context_result::Result::Success(success)) => {
                // Workspace paths and tools only: no file contents, git or layouts.
                success.request_context.as_ref().is_some_and(|context| {
                    context.env.as_ref().is_some_and(|env| {
                        env.os_version.is_empty()
                            && env.shell.is_empty()
                            && env.project_folder.is_empty()
                    })
                })
            }
            None => false,
        },
        Reply::McpResult(r) => match &r.result {
            Some(mcp_result::Result::Success(_)) => host_results,
            Some(mcp_result::Result::ToolNotFound(_)) => true,
            Some(mcp_result::Result::Error(_) | mcp_result::Result::Rejected(_)) | None => false,
        },
        Reply::ShellStream(r) => gate(
            r.event.is_some(),
            matches!(r.event, Some(w::shell_stream::Event::Rejected(_))),
        ),
        Reply::BackgroundShellSpawnResult(r) => r.result.is_some(),
        Reply::ListMcpResourcesExecResult(r) => r.result.is_some(),
        Reply::ReadMcpResourceExecResult(r) => r.result.is_some(),
        Reply::FetchResult(r) => r.result.is_some(),
        Reply::RecordScreenResult(r) => r.result.is_some(),
        Reply::ComputerUseResult(r) => r.result.is_some(),
        Reply::WriteShellStdinResult(r) => r.result.is_some(),
        Reply::PiReadResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::pi_read_exec_result::Result::Error(_))),
        ),
        Reply::PiBashResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::pi_bash_exec_result::Result::Error(_))),
        ),
        Reply::PiEditResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::pi_edit_exec_result::Result::Rejected(_))),
        ),
        Reply::PiWriteResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::pi_write_exec_result::Result::Rejected(_))),
        ),
        Reply::PiGrepResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::pi_grep_exec_result::Result::Error(_))),
        ),
        Reply::PiFindResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::pi_find_exec_result::Result::Error(_))),
        ),
        Reply::PiLsResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::pi_ls_exec_result::Result::Error(_))),
        ),
    }
}

/// Plays `data` as a script of server frames, timeouts and host commands against a run, and
/// panics if the run sends anything the policy forbids, grows without bound, or panics itself.
pub fn fuzz_one(data: &[u8]) {
    let start = Instant::now();
    let conversation = Conversation::new("fuzz")
        .with_tool(Tool::new(
            "bash",
            "Run a command",
            serde_json::json!({"properties": {"command": {}}}),
        ))
        .with_tool(Tool::new("read", "Read a file", serde_json::json!({})))
        .with_message(Message::user_text("go"));
    let config = RunConfig::new("m", "file:///w", crate::IdSeed::fixed([3; 16]));
    let capacity = config.limits.blob_store_capacity;
    let Ok(mut run) = AgentRun::new(config, &conversation, start) else {
        panic!("the fixed conversation must open");
    };
    let mut harness = Harness {
        now: start,
        tool_calls: Vec::new(),
        transmitted: 0,
        events: 0,
    };
    harness.drain(&mut run, false);
    let mut input = data;
    while let Some((&op, rest)) = input.split_first() {
        input = rest;
        let mut submitted = false;
        match op % 8 {
            0 => {
                let (frame, rest) = take_frame(input);
                input = rest;
                run.handle_server_bytes(frame, harness.now);
            }
            1 | 2 => {
                let step = input.first().copied().unwrap_or(0);
                input = input.get(1..).unwrap_or_default();
                harness.now += Duration::from_millis(u64::from(step) * 20 + 1);
                run.handle_timeout(harness.now);
            }
            3 => {
                let results: Vec<ToolResult> = harness
                    .tool_calls
                    .drain(..)
                    .map(|call| ToolResult::text(call, "bash", "ok", false))
                    .collect();
                // Misuse (not waiting, unknown ids) must be refused without a panic.
                let _ = run.submit_tool_results(results, harness.now);
                submitted = true;
            }
            4 => {
                let outcome = if input.first().is_some_and(|b| b % 2 == 0) {
                    StreamOutcome::Ok
                } else {
                    StreamOutcome::Err(cursor_proto::ir::ErrorInfo::new(
                        cursor_proto::ir::ErrorKind::Network,
                        "reset",
                        cursor_proto::ir::NextStep::Retry,
                    ))
                };
                run.handle_end_of_stream(outcome, harness.now);
            }
            5 => run.cancel(harness.now),
            _ => {
                let (&pick, rest) = input.split_first().unwrap_or((&0, &[]));
                input = rest;
                let field = EXEC_FIELDS[usize::from(pick) % EXEC_FIELDS.len()];
                run.handle_server_bytes(&exec_frame(field, pick), harness.now);
            }
        }
        harness.drain(&mut run, submitted);
        assert!(
            run.blobs().total_bytes() <= capacity,
            "blob store over its cap"
        );
    }
}

struct Harness {
    now: Instant,
    tool_calls: Vec<String>,
    transmitted: usize,
    events: usize,
}

impl Harness {
    fn drain(&mut self, run: &mut AgentRun, mcp_success_allowed: bool) {
        while let Some(bytes) = run.poll_transmit() {
            let frame = AgentClientMessage::decode(bytes.as_slice())
                .expect("the run wrote a frame it cannot decode itself");
            let is_run_request = matches!(frame.message, Some(Client::RunRequest(_)));
            assert!(
                is_run_request == (self.transmitted == 0),
                "run request not first or repeated"
            );
            assert!(
                is_allowed_transmit(&frame, mcp_success_allowed),
                "forbidden frame: {frame:?}"
            );
            self.transmitted += 1;
        }
        while let Some(event) = run.poll_event() {
            if let AgentEvent::Ir(Event::ToolCall(call)) = &event
                && self.tool_calls.len() < 1024
            {
                self.tool_calls.push(call.id.clone());
            }
            self.events += 1;
        }
        assert!(run.poll_timeout().is_none() || !run.is_finished());
    }
}

/// A length-prefixed frame (two length bytes, little-endian), clamped to the input.
fn take_frame(input: &[u8]) -> (&[u8], &[u8]) {
    let len = match input {
        [a, b, ..] => usize::from(u16::from_le_bytes([*a, *b])),
        _ => 0,
    };
    let body = input.get(2..).unwrap_or_default();
    let len = len.min(body.len());
    body.split_at(len)
}

/// An `AgentServerMessage` carrying an exec request with an empty payload on arm `field` (for
/// `mcp_args` with an even id: a call to the registered `bash` tool).
fn exec_frame(field: u8, id: u8) -> Vec<u8> {
    use cursor_proto::agent::v1 as w;
    use prost::Message as _;
    if field == 11 && id.is_multiple_of(2) {
        let args = w::McpArgs {
            tool_name: "mcp_pi_bash".into(),
            tool_call_id: format!("call-{id}"),
            ..w::McpArgs::default()
        };
        return w::AgentServerMessage {
            message: Some(w::agent_server_message::Message::ExecServerMessage(
                w::ExecServerMessage {
                    id: u32::from(id),
                    message: Some(w::exec_server_message::Message::McpArgs(args)),
                    ..w::ExecServerMessage::default()
                },
            )),
            ..w::AgentServerMessage::default()
        }
        .encode_to_vec();
    }
    // ExecServerMessage { id = 1 (varint), <field> = empty message }
    let mut exec = vec![0x08, id];
    push_key(&mut exec, u32::from(field));
    exec.push(0);
    // AgentServerMessage { exec_server_message = 2 }
    let mut frame = vec![0x12];
    push_varint(&mut frame, exec.len() as u64);
    frame.extend(exec);
    frame
}

fn push_key(out: &mut Vec<u8>, field: u32) {
    push_varint(out, u64::from(field) << 3 | 2);
}

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}
