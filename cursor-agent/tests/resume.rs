//! T-FR3 without a network (PROTOCOL-AGENT §0, §6, §10; DESIGN §3.1, §5): handles survive a process
//! boundary through disk, a matching fingerprint resumes the remote conversation with no history
//! replay, a stale handle rebuilds, a stale resume rebuilds exactly once with a `Reset`, and the
//! store stays intact under crashes, corruption and concurrent writers.

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{Harness, config, tools};
use cursor_agent::{
    AgentError, BlobId, Fingerprint, Handle, HandleStore, Loaded, RemoteMissing, ResumePlanner,
    RunLabel, StaleReason, StoreError, StreamOutcome, ToolsetKey,
};
use cursor_proto::agent::v1::{
    self as w, AgentClientMessage, ConversationStateStructure,
    agent_client_message::Message as Client, agent_server_message::Message as Server,
};
use cursor_proto::ir::{Conversation, ErrorInfo, ErrorKind, Event, Message, Tool};
use prost::Message as _;
use serde_json::json;

const SECRET: &str = "remember the pass phrase XK-PLATYPUS-77 / 林蓓";

fn conversation(messages: Vec<Message>) -> Conversation {
    let mut conversation = Conversation::new("You are terse.");
    conversation.messages = messages;
    conversation.tools = tools();
    conversation
}

fn first_turn() -> Conversation {
    conversation(vec![Message::user_text(SECRET)])
}

fn second_turn(answer: &str) -> Conversation {
    conversation(vec![
        Message::user_text(SECRET),
        Message::assistant_text(answer),
        Message::user_text("what was the pass phrase?"),
    ])
}

/// What the server journaled: the root prompt it was given, one turn, an unknown field 99.
fn checkpoint(root_ids: Vec<Vec<u8>>) -> Vec<u8> {
    let mut bytes = ConversationStateStructure {
        root_prompt_messages_json: root_ids,
        turns: vec![b"turn-1".to_vec()],
        previous_workspace_uris: vec!["file:///old".into()],
        client_name: Some("old".into()),
        mode: Some(1),
        ..Default::default()
    }
    .encode_to_vec();
    bytes.extend([0x98, 0x06, 0x05]);
    bytes
}

fn harness(run: cursor_agent::AgentRun) -> Harness {
    let start = Instant::now();
    Harness {
        run,
        start,
        now: start,
        sent: Vec::new(),
        events: Vec::new(),
    }
}

fn run_request(frame: &AgentClientMessage) -> w::AgentRunRequest {
    match &frame.message {
        Some(Client::RunRequest(request)) => request.clone(),
        other => panic!("not a run request: {other:?}"),
    }
}

/// Plays turn 1 as a rebuild: the server stores a blob, checkpoints and ends the turn. Returns
/// the handle a host would save.
fn play_first_turn() -> Handle {
    let mut session = ResumePlanner::new(config());
    let plan = session.plan(None, &first_turn());
    assert_eq!(plan.label(), RunLabel::Rebuild);
    let mut h = harness(plan.open(&first_turn(), Instant::now()).expect("opens"));
    h.drain();
    let request = run_request(&h.take_sent()[0]);
    let state = request.conversation_state.expect("state");
    h.server(Server::KvServerMessage(w::KvServerMessage {
        id: 1,
        message: Some(w::kv_server_message::Message::SetBlobArgs(w::SetBlobArgs {
            blob_id: BlobId::of(b"server note").as_bytes().to_vec(),
            blob_data: Some(b"server note".to_vec()),
        })),
    }));
    h.server(Server::ConversationCheckpointUpdate(checkpoint(
        state.root_prompt_messages_json,
    )));
    h.turn_ended();
    assert!(h.run.is_finished());
    Handle::capture(&h.run, &first_turn()).expect("a checkpoint arrived")
}

#[test]
fn a_handle_round_trips_through_disk_into_a_fresh_run_that_resumes_without_replay() {
    let dir = tempfile::tempdir().unwrap();
    let handle = play_first_turn();
    HandleStore::new(dir.path())
        .save("sess-1", &handle)
        .unwrap();

    // "Process B": a new store, a new session, a fresh run.
    let loaded = HandleStore::new(dir.path()).load("sess-1").unwrap();
    assert_eq!(loaded, Loaded::Found(handle.clone()));
    let turn = second_turn("Noted.");
    let mut session = ResumePlanner::new(config());
    let plan = session.plan(loaded.handle(), &turn);
    assert_eq!(plan.label(), RunLabel::Resume);
    assert_eq!(plan.label().as_str(), "agent-resume");
    assert!(!plan.drops_handle());
    assert!(!plan.sends_mcp_tools(), "the tool set did not change");
    let mut run = plan.open(&turn, Instant::now()).unwrap();
    let bytes = run.poll_transmit().expect("run request");
    let request = run_request(&AgentClientMessage::decode(bytes.as_slice()).unwrap());

    assert_eq!(
        request.conversation_id.as_deref(),
        Some(handle.conversation_id.as_str())
    );
    assert!(request.mcp_tools.is_none());
    let state = request.conversation_state.unwrap();
    let old = ConversationStateStructure::decode(handle.checkpoint.as_slice()).unwrap();
    // Turns and the remote root prompt kept as they were: it already ends with the unchanged
    // rules, so they are not appended again (PROTOCOL-AGENT §3).
    assert_eq!(state.turns, old.turns);
    assert_eq!(
        state.root_prompt_messages_json,
        old.root_prompt_messages_json
    );
    assert_eq!(state.previous_workspace_uris, ["file:///work"]);
    assert_eq!(state.client_name.as_deref(), Some("pi"));
    // The unknown checkpoint field reaches the server byte for byte.
    assert!(bytes.windows(3).any(|w| w == [0x98, 0x06, 0x05]));
    // The root prompt's last blob holds the rules only: none of the earlier user texts.
    let added = BlobId::from_slice(state.root_prompt_messages_json.last().unwrap()).unwrap();
    let rules = String::from_utf8(run.blobs().get(&added).unwrap().to_vec()).unwrap();
    assert!(rules.contains("<rules>"));
    assert!(!rules.contains("XK-PLATYPUS-77"));
    // The user message is only the new turn.
    let Some(w::conversation_action::Action::UserMessageAction(action)) =
        request.action.and_then(|a| a.action)
    else {
        panic!("no user message")
    };
    assert_eq!(
        action.user_message.unwrap().text,
        "what was the pass phrase?"
    );
    // The handle's blobs are served when the server reads them.
    let mut h = harness(run);
    h.server(Server::KvServerMessage(w::KvServerMessage {
        id: 7,
        message: Some(w::kv_server_message::Message::GetBlobArgs(w::GetBlobArgs {
            blob_id: BlobId::of(b"server note").as_bytes().to_vec(),
        })),
    }));
    assert!(matches!(
        &h.take_sent()[..],
        [AgentClientMessage { message: Some(Client::KvClientMessage(w::KvClientMessage {
            id: 7,
            message: Some(w::kv_client_message::Message::GetBlobResult(w::GetBlobResult { blob_data: Some(data) })),
        })) }] if data == b"server note"
    ));
}

#[test]
fn assistant_wording_keeps_the_resume_and_an_edited_user_text_rebuilds() {
    let handle = play_first_turn();
    let mut session = ResumePlanner::new(config());
    assert_eq!(
        session
            .plan(
                Some(handle.clone()),
                &second_turn("Got it, a different wording.")
            )
            .label(),
        RunLabel::Resume
    );
    let mut edited = second_turn("Noted.");
    edited.messages[0] = Message::user_text("remember the pass phrase XK-PLATYPUS-78");
    let plan = session.plan(Some(handle.clone()), &edited);
    assert_eq!(plan.label(), RunLabel::Rebuild);
    assert_eq!(plan.label().as_str(), "agent-rebuild");
    assert_eq!(plan.stale_reason(), Some(&StaleReason::FingerprintMismatch));
    // The handle stays: its turns still resume the branch they belong to (§10.1).
    assert!(!plan.drops_handle());
    let mut run = plan.open(&edited, Instant::now()).unwrap();
    let request =
        run_request(&AgentClientMessage::decode(run.poll_transmit().unwrap().as_slice()).unwrap());
    assert_ne!(
        request.conversation_id.as_deref(),
        Some(handle.conversation_id.as_str())
    );
    let state = request.conversation_state.unwrap();
    assert!(state.turns.is_empty(), "a rebuild sends no turns");
    assert_eq!(
        state.root_prompt_messages_json.len(),
        3,
        "rules, the edited user text, the answer"
    );
    assert!(request.mcp_tools.is_some());
}

#[test]
fn a_changed_tool_set_or_the_resend_switch_re_sends_mcp_tools() {
    let handle = play_first_turn();
    let mut turn = second_turn("Noted.");
    turn.tools.push(Tool::new("web_search", "", json!({})));
    assert!(
        ResumePlanner::new(config())
            .plan(Some(handle.clone()), &turn)
            .sends_mcp_tools()
    );
    let plan = ResumePlanner::new(config())
        .with_resend_mcp_on_resume(true)
        .plan(Some(handle), &second_turn("Noted."));
    assert_eq!(plan.label(), RunLabel::Resume);
    assert!(plan.sends_mcp_tools());
    let mut run = plan.open(&second_turn("Noted."), Instant::now()).unwrap();
    assert!(
        run_request(&AgentClientMessage::decode(run.poll_transmit().unwrap().as_slice()).unwrap())
            .mcp_tools
            .is_some()
    );
}

#[test]
fn changed_rules_are_appended_once_to_the_resumed_root_prompt() {
    let handle = play_first_turn();
    let old = ConversationStateStructure::decode(handle.checkpoint.as_slice()).unwrap();
    // A new tool changes the rules' tool map, so the rules blob is a new one.
    let mut turn = second_turn("Noted.");
    turn.tools.push(Tool::new(
        "grep",
        "Search file contents",
        json!({"type": "object", "properties": {"pattern": {"type": "string"}}}),
    ));
    let plan = ResumePlanner::new(config()).plan(Some(handle), &turn);
    assert_eq!(plan.label(), RunLabel::Resume);
    let mut run = plan.open(&turn, Instant::now()).unwrap();
    let bytes = run.poll_transmit().expect("run request");
    let state = run_request(&AgentClientMessage::decode(bytes.as_slice()).unwrap())
        .conversation_state
        .unwrap();
    let kept = old.root_prompt_messages_json.len();
    assert_eq!(
        state.root_prompt_messages_json[..kept],
        old.root_prompt_messages_json[..]
    );
    assert_eq!(state.root_prompt_messages_json.len(), kept + 1);
    let added = BlobId::from_slice(state.root_prompt_messages_json.last().unwrap()).unwrap();
    let rules = String::from_utf8(run.blobs().get(&added).unwrap().to_vec()).unwrap();
    assert!(rules.contains("<rules>"));
    assert_ne!(
        state.root_prompt_messages_json.last(),
        old.root_prompt_messages_json.last(),
        "the new rules are a new blob"
    );
}

#[test]
fn an_unusable_checkpoint_rebuilds() {
    let mut handle = play_first_turn();
    handle.checkpoint = vec![0xff, 0xff, 0xff];
    let plan = ResumePlanner::new(config()).plan(Some(handle), &second_turn("Noted."));
    assert_eq!(plan.label(), RunLabel::Rebuild);
    assert!(matches!(
        plan.stale_reason(),
        Some(StaleReason::UnusableCheckpoint(_))
    ));
}

fn blob_miss(h: &mut Harness) {
    h.server(Server::KvServerMessage(w::KvServerMessage {
        id: 3,
        message: Some(w::kv_server_message::Message::GetBlobArgs(w::GetBlobArgs {
            blob_id: vec![9; 32],
        })),
    }));
}

fn error_of(h: &mut Harness) -> ErrorInfo {
    match h.ir_events().last() {
        Some(Event::Error(info)) => info.clone(),
        other => panic!("no error: {other:?}"),
    }
}

#[test]
fn a_blob_miss_on_resume_rebuilds_exactly_once_with_a_reset_and_a_miss_on_rebuild_fails_closed() {
    let handle = play_first_turn();
    let turn = second_turn("Noted.");
    let mut session = ResumePlanner::new(config());
    let plan = session.plan(Some(handle.clone()), &turn);
    let mut h = harness(plan.open(&turn, Instant::now()).unwrap());
    h.drain();
    h.take_sent();
    h.text("partial answer");
    blob_miss(&mut h);
    let events = h.ir_events();
    assert_eq!(
        events[0],
        Event::TextDelta {
            text: "partial answer".into()
        }
    );
    let Some(Event::Error(info)) = events.last() else {
        panic!("{events:?}")
    };
    assert!(info.message.contains("resume is stale"), "{info:?}");

    let error = AgentError::StaleResume {
        missing: RemoteMissing::Blob {
            id_hex: "09".repeat(32),
        },
    };
    let rebuild = session.recover(&error).expect("one rebuild");
    assert_eq!(rebuild.label(), RunLabel::Rebuild);
    assert!(rebuild.drops_handle());
    assert!(rebuild.emits_reset());
    assert!(rebuild.debug_record().contains("\"run\":\"agent-rebuild\""));
    let mut h = harness(rebuild.open(&turn, Instant::now()).unwrap());
    h.drain();
    assert_eq!(
        h.ir_events().first(),
        Some(&Event::Reset),
        "streamed deltas are discarded"
    );
    let request = run_request(&h.take_sent()[0]);
    assert_ne!(
        request.conversation_id.as_deref(),
        Some(handle.conversation_id.as_str())
    );
    assert!(request.conversation_state.unwrap().turns.is_empty());

    // A miss during the rebuild is a plain, fail-closed blob miss, and there is no second try.
    blob_miss(&mut h);
    let info = error_of(&mut h);
    assert_eq!(info.kind, ErrorKind::ProtocolDrift);
    assert!(
        session
            .recover(&AgentError::BlobMiss {
                id_hex: "09".into()
            })
            .is_err()
    );
    assert!(session.recover(&error).is_err(), "never a second rebuild");
}

#[test]
fn a_remote_not_found_on_resume_is_stale_but_not_on_a_rebuild() {
    let handle = play_first_turn();
    let turn = second_turn("Noted.");
    let gone = || {
        ErrorInfo::new(
            ErrorKind::Local,
            "conversation not found",
            cursor_proto::ir::NextStep::Retry,
        )
    };
    let mut session = ResumePlanner::new(config());
    let mut h = harness(
        session
            .plan(Some(handle), &turn)
            .open(&turn, Instant::now())
            .unwrap(),
    );
    h.run
        .handle_end_of_stream(StreamOutcome::NotFound(gone()), h.now);
    h.drain();
    assert!(error_of(&mut h).message.contains("resume is stale"));

    let mut h = harness(
        session
            .plan(None, &turn)
            .open(&turn, Instant::now())
            .unwrap(),
    );
    h.run
        .handle_end_of_stream(StreamOutcome::NotFound(gone()), h.now);
    h.drain();
    assert_eq!(error_of(&mut h), gone());
}

/// A conversation the server no longer has is reported as the conversation, with its id and
/// the server's words, not as a blob whose id is a sentence.
#[test]
fn a_stale_conversation_is_reported_as_the_conversation_not_as_a_blob() {
    let handle = play_first_turn();
    let turn = second_turn("Noted.");
    let gone = ErrorInfo::new(
        ErrorKind::Local,
        "conversation not found",
        cursor_proto::ir::NextStep::Retry,
    );
    let mut session = ResumePlanner::new(config());
    let mut h = harness(
        session
            .plan(Some(handle.clone()), &turn)
            .open(&turn, Instant::now())
            .unwrap(),
    );
    h.run
        .handle_end_of_stream(StreamOutcome::NotFound(gone), h.now);
    h.drain();
    let info = error_of(&mut h);
    assert!(
        info.message.contains("resume is stale")
            && info.message.contains(&handle.conversation_id)
            && info.message.contains("conversation not found"),
        "{info:?}"
    );
    assert!(!info.message.contains("blob"), "{info:?}");
    assert_eq!(info.kind, ErrorKind::Local);
    assert_eq!(
        h.run.failure(),
        Some(&AgentError::StaleResume {
            missing: RemoteMissing::Conversation {
                conversation_id: handle.conversation_id,
                message: "conversation not found".into(),
            }
        })
    );
}

#[test]
fn a_half_written_temp_file_leaves_the_good_handle_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());
    let handle = play_first_turn();
    store.save("s", &handle).unwrap();
    fs::write(
        dir.path().join("s.json.tmp-4242-7"),
        b"{\"version\":1,\"conv",
    )
    .unwrap();
    assert_eq!(store.load("s").unwrap(), Loaded::Found(handle));
}

#[test]
fn a_corrupt_handle_is_stale_with_a_warning_and_kept_aside() {
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());
    fs::write(dir.path().join("s.json"), b"not json at all").unwrap();
    let Loaded::Corrupt(warning) = store.load("s").unwrap() else {
        panic!("not reported")
    };
    assert_eq!(warning.session_id, "s");
    assert!(warning.to_string().contains("will be rebuilt"), "{warning}");
    let kept = warning.kept_at.expect("moved aside");
    assert!(
        kept.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("s.json.corrupt-")
    );
    assert_eq!(
        fs::read(&kept).unwrap(),
        b"not json at all",
        "never deleted"
    );
    assert_eq!(store.load("s").unwrap(), Loaded::Missing);
}

fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        // Lock files stay by design: only the OS lock on them comes and goes.
        .filter(|name| name.contains(".tmp-"))
        .collect()
}

#[test]
fn concurrent_writers_never_corrupt_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let base = play_first_turn();
    let handles: Vec<Handle> = (0..4)
        .map(|i| {
            let mut handle = base.clone();
            handle.conversation_id = format!("conv-{i}");
            handle.blobs.push((BlobId::of(&[i; 4096]), vec![i; 4096]));
            handle
        })
        .collect();
    std::thread::scope(|scope| {
        for handle in &handles {
            // Each writer opens the store separately, as two processes would.
            let store = HandleStore::new(dir.path());
            scope.spawn(move || {
                for _ in 0..25 {
                    store.save("shared", handle).unwrap();
                    let read = store.load("shared").unwrap();
                    assert!(matches!(read, Loaded::Found(_)), "{read:?}");
                }
            });
        }
    });
    let Loaded::Found(last) = HandleStore::new(dir.path()).load("shared").unwrap() else {
        panic!("the file was corrupted")
    };
    assert!(handles.contains(&last));
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
}

#[test]
fn a_left_over_lock_file_does_not_block_and_a_live_holder_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let handle = play_first_turn();
    let mut store = HandleStore::new(dir.path());
    store.lock_timeout = Duration::from_millis(50);
    fs::create_dir_all(dir.path()).unwrap();
    // A crashed holder's file, fresh or old, holds no OS lock.
    fs::File::create(dir.path().join("s.lock")).unwrap();
    store.save("s", &handle).unwrap();
    let holder = HandleStore::new(dir.path());
    holder
        .with_lock("s", || {
            assert!(matches!(
                store.save("s", &handle),
                Err(StoreError::LockTimeout(_))
            ));
        })
        .unwrap();
    assert_eq!(store.load("s").unwrap(), Loaded::Found(handle));
}

#[cfg(unix)]
#[test]
fn handle_files_are_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("handles");
    let store = HandleStore::new(&nested);
    store.save("s", &play_first_turn()).unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&nested), 0o700);
    assert_eq!(mode(&nested.join("s.json")), 0o600);
    store.remove("s").unwrap();
    assert_eq!(store.load("s").unwrap(), Loaded::Missing);
    assert!(matches!(
        store.save("../escape", &play_first_turn()),
        Err(StoreError::InvalidSessionId(_))
    ));
}

#[test]
fn captured_handles_carry_the_fingerprint_and_tool_set_of_the_run() {
    let handle = play_first_turn();
    assert_eq!(
        handle.fingerprint,
        Fingerprint::of_user_turns(&first_turn().messages)
    );
    assert_eq!(handle.toolset_key, ToolsetKey::of(&tools()));
    assert!(
        handle
            .blobs
            .iter()
            .any(|(id, _)| *id == BlobId::of(b"server note"))
    );
}
