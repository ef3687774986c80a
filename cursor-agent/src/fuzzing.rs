//! Fuzzing entry points, shared by the cargo-fuzz target and the corpus replay in `cargo test`.
//! Not a stable API.

use std::time::{Duration, Instant};

use cursor_proto::agent::v1::{
    AgentClientMessage, agent_client_message::Message as Client,
    exec_client_message::Message as Reply, mcp_result,
};
use std::collections::HashMap;

use cursor_proto::agent::v1::{AgentServerMessage, agent_server_message::Message as Server};
use cursor_proto::ir::{Conversation, Event, Message, Tool, ToolResult};
use prost::Message as _;

use crate::{AgentEvent, AgentRun, RunConfig, StreamOutcome};

/// Exec arm field numbers the structured op picks from: every row of the exec table, then
/// numbers no row has (unknown arms).
static EXEC_FIELDS: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
    crate::ExecArm::ALL
        .iter()
        .filter_map(|arm| arm.field_number())
        .filter_map(|number| u8::try_from(number).ok())
        .chain([6, 33, 60])
        .collect()
});

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
        Reply::MiniSweAgentBashResult(r) => gate(
            r.result.is_some(),
            matches!(r.result, Some(w::shell_result::Result::Rejected(_))),
        ),
        // The host's MCP projection only: every listed tool is under the server it is listed
        // in, and nothing reports an error or a refusal the client never had.
        Reply::McpStateExecResult(r) => match &r.result {
            Some(w::mcp_state_exec_result::Result::Success(success)) => {
                success.servers.iter().all(|server| {
                    server
                        .tools
                        .iter()
                        .all(|tool| tool.provider_identifier == server.server_identifier)
                })
            }
            _ => false,
        },
        Reply::ShellStream(r) => gate(
            r.event.is_some(),
            matches!(r.event, Some(w::shell_stream::Event::Rejected(_))),
        ),
        // Always refused by the policy table: the refusal arm and nothing else, host results
        // or not (a success arm added to the schema must not slip through).
        Reply::BackgroundShellSpawnResult(r) => matches!(
            r.result,
            Some(w::background_shell_spawn_result::Result::Rejected(_))
        ),
        Reply::ListMcpResourcesExecResult(r) => matches!(
            r.result,
            Some(w::list_mcp_resources_exec_result::Result::Rejected(_))
        ),
        Reply::ReadMcpResourceExecResult(r) => matches!(
            r.result,
            Some(w::read_mcp_resource_exec_result::Result::Rejected(_))
        ),
        Reply::FetchResult(r) => matches!(r.result, Some(w::fetch_result::Result::Error(_))),
        Reply::RecordScreenResult(r) => {
            matches!(r.result, Some(w::record_screen_result::Result::Failure(_)))
        }
        Reply::ComputerUseResult(r) => {
            matches!(r.result, Some(w::computer_use_result::Result::Error(_)))
        }
        Reply::WriteShellStdinResult(r) => matches!(
            r.result,
            Some(w::write_shell_stdin_result::Result::Error(_))
        ),
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

/// The oneof arm a message carries, read from its wire form (ids and other scalars skipped).
fn arm_tag(bytes: &[u8], not_arms: &[u32]) -> Option<u32> {
    cursor_proto::wire::fields(bytes)
        .ok()?
        .into_iter()
        .map(|(tag, _)| tag)
        .find(|tag| !not_arms.contains(tag))
}

/// The `ExecClientMessage` arm that answers the `ExecServerMessage` arm `request`: the same field
/// number, except the arms 45–51, whose results sit one number higher (results 46–52), and 52
/// `mini_swe_agent_bash_args`, answered at 55 (docs/PROTOCOL-AGENT.md §5.6). Read from the schema,
/// not from the policy code, so the oracle cannot share its bugs.
fn reply_tag_for(request: u32) -> u32 {
    match request {
        45..=51 => request + 1,
        52 => 55,
        _ => request,
    }
}

/// True when the exec reply `exec` answers `request` (the arm its request carried; `None` for
/// an arm this build does not know) with that arm's own result type.
fn answers_its_request(
    exec: &cursor_proto::agent::v1::ExecClientMessage,
    request: Option<u32>,
) -> bool {
    let reply = arm_tag(&exec.encode_to_vec(), &[1, 15]);
    matches!((request, reply), (Some(request), Some(reply)) if reply == reply_tag_for(request))
}

/// Fuzz target `handle_file`: parses `data` as a handle file. Must never panic; a file that
/// parses writes back to bytes that parse to the same handle.
pub fn handle_file(data: &[u8]) {
    if let Ok(handle) = crate::Handle::from_json(data) {
        let again = crate::Handle::from_json(&handle.to_json());
        assert!(
            again.as_ref().is_ok_and(|again| *again == handle),
            "a handle does not round-trip: {again:?}"
        );
    }
}

/// Fuzz target `read_footer`: `data` (lossy UTF-8) as a read tool's text, through the parser
/// of a host's trailing truncation note. Must never panic; the content it keeps is a prefix of
/// the text, and a total it states is never negative.
pub fn read_footer(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some((content, total)) = crate::translate::read_footer(&text) {
        assert!(
            text.starts_with(&content),
            "the content is not the text's head"
        );
        assert!(total.is_none_or(|t| t >= 0), "a negative total: {total:?}");
    }
}

/// Decodes `data` as one server frame with the hot-path decoder and with prost, and panics if
/// the hot path accepts a frame prost refuses or decodes it to a different message.
pub fn hot_decoder(data: &[u8]) {
    use cursor_proto::agent::v1::AgentServerMessage;
    use prost::Message as _;
    let Some(expected) = crate::hot::decode(data) else {
        return;
    };
    match AgentServerMessage::decode(data) {
        Ok(decoded) => assert_eq!(decoded, expected, "hot path and prost disagree"),
        Err(error) => panic!("hot path accepted a frame prost refuses: {error}"),
    }
}

/// The hot-path decoder on its own (for benches), as `AgentRun` uses it: whether the frame
/// decoded to a borrowed view (kept from the optimiser), `false` when prost would take it.
pub fn hot_decode_view(data: &[u8]) -> bool {
    crate::hot::decode_view(data)
        .map(std::hint::black_box)
        .is_some()
}

/// Feeds `data[1..]` as a response body, cut into chunks whose sizes cycle from `data[0]`, to
/// one Run through [`AgentRun::handle_server_data`] and to another frame by frame (an envelope
/// `Decoder`, then [`AgentRun::handle_server_bytes`] and the end-of-stream outcome), and panics
/// when they differ after any chunk: events (adjacent deltas merged), transmits, failure or
/// next deadline.
pub fn body_data(data: &[u8]) {
    use bytes::Bytes;
    use cursor_transport::CursorError;
    use cursor_transport::envelope::{Compression, Decoder, Frame};
    let Some((&seed, wire)) = data.split_first() else {
        return;
    };
    let now = Instant::now();
    let conversation = Conversation::new("fuzz").with_message(Message::user_text("go"));
    let open = || {
        let config = RunConfig::new("m", "file:///w", crate::IdSeed::fixed([3; 16]));
        let mut run = AgentRun::new(config, &conversation, now).expect("the run opens");
        while run.poll_transmit().is_some() {}
        while run.poll_event().is_some() {}
        run
    };
    let (mut by_data, mut by_frames) = (open(), open());
    let mut decoder = Decoder::new(Compression::Identity);
    let wire = Bytes::copy_from_slice(wire);
    let (mut seen_data, mut seen_frames) = (Vec::new(), Vec::new());
    let mut at = 0;
    let mut step = usize::from(seed) + 1;
    while at < wire.len() {
        let chunk = wire.slice(at..wire.len().min(at + step));
        at += chunk.len();
        step = step * 7 % 251 + 1;
        by_data.handle_server_data(chunk.clone(), now);
        decoder.push_bytes(chunk);
        while !by_frames.is_finished() {
            match decoder.next_frame() {
                Ok(None) => break,
                Ok(Some(Frame::Message(frame))) => by_frames.handle_server_bytes(&frame, now),
                Ok(Some(Frame::End(end))) => {
                    let outcome = match end.error {
                        None => StreamOutcome::Ok,
                        Some(error) => crate::error::outcome_of(&CursorError::connect(error, None)),
                    };
                    by_frames.handle_end_of_stream(outcome, now);
                }
                Err(error) => {
                    let outcome = crate::error::outcome_of(&CursorError::from(error));
                    by_frames.handle_end_of_stream(outcome, now);
                }
            }
        }
        seen_data.extend(std::iter::from_fn(|| by_data.poll_event()));
        seen_frames.extend(std::iter::from_fn(|| by_frames.poll_event()));
        assert_eq!(
            crate::event_queue::merged_deltas(&seen_data),
            crate::event_queue::merged_deltas(&seen_frames),
            "events differ"
        );
        let transmits =
            |run: &mut AgentRun| std::iter::from_fn(|| run.poll_transmit()).collect::<Vec<_>>();
        assert_eq!(
            transmits(&mut by_data),
            transmits(&mut by_frames),
            "transmits differ"
        );
        assert_eq!(
            by_data.failure().map(ToString::to_string),
            by_frames.failure().map(ToString::to_string),
            "failures differ"
        );
        assert_eq!(
            by_data.poll_timeout(),
            by_frames.poll_timeout(),
            "deadlines differ"
        );
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
        requests: HashMap::new(),
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
                harness.note_request(frame);
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
                let frame = exec_frame(field, pick);
                harness.note_request(&frame);
                run.handle_server_bytes(&frame, harness.now);
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
    /// The arm of each exec request the server sent (`None`: unknown to this build), by id.
    requests: HashMap<u32, Option<u32>>,
}

impl Harness {
    fn note_request(&mut self, frame: &[u8]) {
        if let Ok(AgentServerMessage {
            message: Some(Server::ExecServerMessage(exec)),
            ..
        }) = AgentServerMessage::decode(frame)
            && self.requests.len() < 4096
        {
            let arm = exec.message.as_ref().and_then(|_| {
                let bare = cursor_proto::agent::v1::ExecServerMessage {
                    message: exec.message.clone(),
                    ..Default::default()
                };
                arm_tag(&bare.encode_to_vec(), &[1, 15, 55])
            });
            self.requests.insert(exec.id, arm);
        }
    }

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
            if let Some(Client::ExecClientMessage(exec)) = &frame.message {
                let request = self.requests.get(&exec.id);
                assert!(
                    request.is_some_and(|arm| answers_its_request(exec, *arm)),
                    "exec {} (request arm {request:?}) answered with another arm's result: {exec:?}",
                    exec.id
                );
            }
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
    if field == 11 && id.is_multiple_of(2) {
        let args = w::McpArgs {
            tool_name: "mcp_pi_bash".into(),
            tool_call_id: format!("call-{id}"),
            ..w::McpArgs::default()
        };
        return AgentServerMessage {
            message: Some(w::agent_server_message::Message::ExecServerMessage(
                w::ExecServerMessage {
                    id: u32::from(id),
                    message: Some(w::exec_server_message::Message::McpArgs(args)),
                    ..w::ExecServerMessage::default()
                },
            )),
            ..AgentServerMessage::default()
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

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_proto::agent::v1 as w;

    fn exec_reply(id: u32, reply: Reply) -> AgentClientMessage {
        AgentClientMessage {
            message: Some(Client::ExecClientMessage(w::ExecClientMessage {
                id,
                message: Some(reply),
                ..w::ExecClientMessage::default()
            })),
        }
    }

    #[test]
    fn an_always_refused_arm_allows_only_its_refusal_even_while_host_results_go_out() {
        let refusal = Reply::FetchResult(w::FetchResult {
            result: Some(w::fetch_result::Result::Error(w::FetchError::default())),
        });
        let empty = Reply::FetchResult(w::FetchResult { result: None });
        for host_results in [false, true] {
            assert!(is_allowed_transmit(
                &exec_reply(1, refusal.clone()),
                host_results
            ));
            assert!(!is_allowed_transmit(
                &exec_reply(1, empty.clone()),
                host_results
            ));
        }
    }

    #[test]
    fn every_exec_arm_answered_alone_passes_the_oracle() {
        for pick in 0..u8::try_from(EXEC_FIELDS.len()).unwrap() {
            fuzz_one(&[6, pick]);
            fuzz_one(&[6, pick, 3, 6, pick]);
        }
    }

    #[test]
    fn a_reply_of_another_arms_type_does_not_answer_the_request() {
        let shell_success = w::ExecClientMessage {
            id: 7,
            message: Some(Reply::ShellResult(w::ShellResult {
                result: Some(w::shell_result::Result::Success(w::ShellSuccess::default())),
            })),
            ..w::ExecClientMessage::default()
        };
        // Fetch is arm 20 of the request; shell_result is 2.
        assert!(!answers_its_request(&shell_success, Some(20)));
        assert!(answers_its_request(&shell_success, Some(2)));
        assert!(!answers_its_request(&shell_success, None));
        let pi_read = w::ExecClientMessage {
            message: Some(Reply::PiReadResult(w::PiReadExecResult::default())),
            ..w::ExecClientMessage::default()
        };
        assert!(answers_its_request(&pi_read, Some(45)));
    }
}

#[cfg(test)]
mod handle_tests {
    use super::*;
    use crate::{BlobId, Fingerprint, Handle, ToolsetKey};

    #[test]
    fn a_real_handle_round_trips_and_garbage_does_not_panic() {
        let handle = Handle::new(
            "conv-1",
            vec![0x0a, 0x01, 0x01],
            vec![(BlobId::of(b"x"), b"x".to_vec())],
            Fingerprint::of_user_turns(&[Message::user_text("hi")]),
            ToolsetKey::of(&[]),
        );
        let json = handle.to_json();
        handle_file(&json);
        for garbage in [&b"{"[..], b"\xff", br#"{"version":1}"#, b"[]", b""] {
            handle_file(garbage);
        }
    }
}
