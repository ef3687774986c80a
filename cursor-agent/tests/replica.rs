//! The replica as a peer: what it checks, records and lets tests script.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cursor_agent::testing::{Replica, Script};
use cursor_agent::{AgentEvent, RunConfig, driver};
use cursor_proto::agent::v1::{
    self as w, AgentClientMessage, AgentServerMessage, agent_client_message::Message as Client,
    agent_server_message::Message as Server, interaction_update::Message as Update,
};
use cursor_proto::ir::{Conversation, Event, Message};
use cursor_transport::client::AGENT_RUN_PATH;
use cursor_transport::envelope::{Code, Compression};
use cursor_transport::{Client as Transport, RequestHeaders};

const WAIT: Duration = Duration::from_secs(10);

fn run_request(root_id: Vec<u8>) -> AgentClientMessage {
    AgentClientMessage {
        message: Some(Client::RunRequest(w::AgentRunRequest {
            conversation_state: Some(w::ConversationStateStructure {
                root_prompt_messages_json: vec![root_id],
                ..Default::default()
            }),
            action: Some(w::ConversationAction {
                action: Some(w::conversation_action::Action::UserMessageAction(
                    w::UserMessageAction {
                        user_message: Some(w::UserMessage {
                            text: "ping".into(),
                            ..Default::default()
                        }),
                        request_context: None,
                    },
                )),
            }),
            conversation_id: Some("c-1".into()),
            ..Default::default()
        })),
    }
}

#[tokio::test]
async fn a_root_prompt_blob_that_is_not_json_is_refused_with_invalid_argument() {
    let replica = Replica::start().await.unwrap();
    let client = Transport::new().unwrap();
    let mut call = client
        .bidi(&replica.origin(), AGENT_RUN_PATH, RequestHeaders::new())
        .await
        .unwrap();
    call.send_message(&run_request(vec![1; 32])).await.unwrap();
    let ask: AgentServerMessage = call.recv_message().await.unwrap().unwrap();
    let Some(Server::KvServerMessage(kv)) = ask.message else {
        panic!("{ask:?}")
    };
    let Some(w::kv_server_message::Message::GetBlobArgs(get)) = kv.message else {
        panic!("not a blob request")
    };
    assert_eq!(get.blob_id, vec![1; 32]);
    let answer = AgentClientMessage {
        message: Some(Client::KvClientMessage(w::KvClientMessage {
            id: kv.id,
            message: Some(w::kv_client_message::Message::GetBlobResult(
                w::GetBlobResult {
                    blob_data: Some(b"not json".to_vec()),
                },
            )),
        })),
    };
    call.send_message(&answer).await.unwrap();
    let error = call
        .recv_message::<AgentServerMessage>()
        .await
        .expect_err("the replica refuses the blob");
    assert_eq!(error.code(), Some(Code::InvalidArgument));
    let record = replica.runs().pop().unwrap();
    assert!(
        record
            .outcome
            .starts_with("rejected: a root prompt blob is not JSON"),
        "{record:?}"
    );
    assert_eq!(record.label, "agent-rebuild");
}

#[tokio::test]
async fn scripted_frames_reach_the_client_verbatim_and_every_record_reaches_the_sink() {
    let replica = Replica::start().await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    replica.set_record_sink(move |record| sink.lock().unwrap().push(record.to_json_line()));
    let update = |update: Update| AgentServerMessage {
        message: Some(Server::InteractionUpdate(w::InteractionUpdate {
            message: Some(update),
            ..Default::default()
        })),
        ..Default::default()
    };
    replica.script(Script::Frames(vec![
        update(Update::ThinkingDelta(w::ThinkingDeltaUpdate {
            text: "hmm".into(),
        })),
        update(Update::TextDelta(w::TextDeltaUpdate {
            text: "scripted".into(),
        })),
        update(Update::TurnEnded(w::TurnEndedUpdate::default())),
    ]));
    let ir = ping(&replica).await;
    assert_eq!(ir[0], Event::ThinkingDelta { text: "hmm".into() });
    assert_eq!(
        ir[1],
        Event::TextDelta {
            text: "scripted".into()
        }
    );
    let lines = seen.lock().unwrap().clone();
    assert_eq!(lines.len(), 1);
    let json: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(json["outcome"], "scripted");
    assert_eq!(json["userText"], "ping");
}

#[tokio::test]
async fn other_methods_are_unimplemented() {
    let replica = Replica::start().await.unwrap();
    let client = Transport::new().unwrap();
    let mut call = client
        .bidi(
            &replica.origin(),
            "/agent.v1.AgentService/Other",
            RequestHeaders::new(),
        )
        .await
        .unwrap();
    call.close_send().unwrap();
    let error = call.recv().await.expect_err("unimplemented");
    assert_eq!(error.code(), Some(Code::Unimplemented));
    assert!(replica.runs().is_empty());
}

/// A burst of deltas in one DATA frame reaches the host as one delta with all the text, in
/// order: the Run merges what it handles before the host drains.
#[tokio::test]
async fn a_burst_of_text_deltas_reaches_the_host_as_one_event_with_all_its_text() {
    let words: Vec<String> = (0..40).map(|i| format!("w{i} ")).collect();
    assert_eq!(burst_of(&words).await, [words.concat()]);
}

/// Deltas written together but carried by several DATA frames (more than h2's 16 KiB frame)
/// still reach the host as one: the driver takes every chunk already received (up to its
/// burst bound) before it forwards events.
#[tokio::test]
async fn a_burst_spanning_several_data_frames_reaches_the_host_as_one_event() {
    let words: Vec<String> = (0..40)
        .map(|i| format!("w{i}:{} ", "x".repeat(600)))
        .collect();
    let deltas = burst_of(&words).await;
    assert_eq!(deltas.concat(), words.concat());
    assert_eq!(deltas.len(), 1, "{} events", deltas.len());
}

/// The text deltas the host sees when the replica writes `words` as text deltas and the end
/// of the turn all at once.
async fn burst_of(words: &[String]) -> Vec<String> {
    let replica = Replica::start().await.unwrap();
    let mut burst: Vec<AgentServerMessage> = words.iter().cloned().map(text_delta).collect();
    burst.push(update(Update::TurnEnded(w::TurnEndedUpdate::default())));
    replica.script(Script::Burst(burst));
    ping(&replica)
        .await
        .into_iter()
        .filter_map(|event| match event {
            Event::TextDelta { text } => Some(text),
            _ => None,
        })
        .collect()
}

/// A server that gzips its larger messages (the client asks for it) is understood: the driver
/// hands the response's encoding to the Run, which inflates those frames; small frames beside
/// them stay uncompressed, as Connect allows.
#[tokio::test]
async fn a_gzip_compressed_response_streams_its_text_through_the_driver() {
    let replica = Replica::start().await.unwrap();
    replica.replica().set_compression(Compression::Gzip);
    // 2 KiB compresses (the replica compresses from 1 KiB); the words after it do not.
    let long = "compressible ".repeat(160);
    let frames = vec![
        text_delta(long.clone()),
        text_delta("short ".into()),
        text_delta("end".into()),
        update(Update::TurnEnded(w::TurnEndedUpdate::default())),
    ];
    replica.script(Script::Frames(frames));
    let events = ping(&replica).await;
    let streamed: String = events
        .iter()
        .filter_map(|event| match event {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, format!("{long}short end"), "{events:?}");
    assert!(
        matches!(events.last(), Some(Event::Done { .. })),
        "{events:?}"
    );
}

/// A server frame carrying one `interaction_update`.
fn update(message: Update) -> AgentServerMessage {
    AgentServerMessage {
        message: Some(Server::InteractionUpdate(w::InteractionUpdate {
            message: Some(message),
            ..Default::default()
        })),
        ..Default::default()
    }
}

fn text_delta(text: String) -> AgentServerMessage {
    update(Update::TextDelta(w::TextDeltaUpdate { text }))
}

/// One driver Run of the user text `ping` against `replica`: the host events it produced.
async fn ping(replica: &cursor_agent::testing::ReplicaServer) -> Vec<Event> {
    let conversation = Conversation::new("").with_message(Message::user_text("ping"));
    let (_handle, mut events, task) = driver::open(
        Transport::new().unwrap(),
        replica.origin(),
        RequestHeaders::new(),
        RunConfig::new(
            "composer-2.5",
            "file:///work",
            cursor_agent::IdSeed::fixed([1; 16]),
        ),
        &conversation,
    )
    .unwrap();
    let task = tokio::spawn(task);
    let mut ir = Vec::new();
    while let Some(event) = tokio::time::timeout(WAIT, events.recv()).await.unwrap() {
        if let AgentEvent::Ir(event) = event {
            ir.push(event);
        }
    }
    task.await.unwrap();
    ir
}
