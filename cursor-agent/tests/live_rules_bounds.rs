//! Rules of the live servers about size, identity and time (PROTOCOL-AGENT §13.4–§13.6),
//! played by the replica and answered through `AgentSession`: structured history past a budget
//! folds into the archive, images keep ids derived from their bytes, and every interaction
//! query is answered at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cursor_agent::AgentEvent;
use cursor_agent::session::{AgentSession, ModelChoice, StaticToken};
use cursor_agent::testing::{Replica, ReplicaServer, Script};
use cursor_agent::{HandleStore, HostProfile};
use cursor_proto::ir::{
    Conversation, ErrorKind, Event, Image, Message, NextStep, StopReason, UserContent,
};
use cursor_transport::Client;

const WAIT: Duration = Duration::from_secs(20);

fn session(replica: &ReplicaServer, handles: Option<&std::path::Path>) -> AgentSession {
    let mut builder = AgentSession::builder(
        Client::new().expect("client"),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
    .workspace_uri("file:///work")
    .session_id("s-1");
    if let Some(dir) = handles {
        builder = builder.handles(Arc::new(HandleStore::new(dir)));
    }
    builder.build()
}

/// One turn without tools; its events.
async fn turn(session: &AgentSession, conversation: &Conversation) -> Vec<AgentEvent> {
    let model = ModelChoice::new("composer-2.5");
    let mut turn = session.turn(conversation, &model);
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(WAIT, turn.next())
        .await
        .expect("the turn does not stall")
    {
        events.push(event);
    }
    events
}

fn text(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Ir(Event::TextDelta { text }) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn ended_normally(events: &[AgentEvent]) -> bool {
    matches!(
        events.last(),
        Some(AgentEvent::Ir(Event::Done {
            reason: StopReason::Stop
        }))
    )
}

// --- §13.4 structured history past a budget ---------------------------------------------------

/// What the live backend takes at most, about (the replica resets past it).
const SERVER_LIMIT: usize = 64 << 10;

/// `turns` earlier turns of about `size` bytes each, then `ping`.
fn long_conversation(turns: usize, size: usize) -> Conversation {
    let mut conversation = Conversation::new("");
    for turn in 0..turns {
        conversation = conversation
            .with_message(Message::user_text(format!(
                "remember fact {turn}: {}",
                "x".repeat(size / 2)
            )))
            .with_message(Message::assistant_text("y".repeat(size / 2)));
    }
    conversation.with_message(Message::user_text("ping"))
}

#[tokio::test]
async fn a_rebuild_of_thirty_four_kib_turns_folds_history_and_completes_under_the_server_limit() {
    let replica = Replica::start().await.unwrap();
    replica.set_structured_history_limit(Some(SERVER_LIMIT));
    let started = Instant::now();
    let events = turn(&session(&replica, None), &long_conversation(30, 4096)).await;
    let took = started.elapsed();
    assert!(ended_normally(&events), "{events:?}");
    assert_eq!(text(&events), "pong");
    let runs = replica.runs();
    assert_eq!(runs.len(), 1, "no reset, no retry: {runs:?}");
    let run = &runs[0];
    assert_eq!(run.label, "agent-rebuild");
    assert!(run.structured_history_bytes <= 48 << 10, "{run:?}");
    // Every earlier turn still reaches the model, the older ones through the archive.
    assert_eq!(run.root_prompt_user_texts.len(), 30);
    println!(
        "30 turns of 4 KiB: 1 Run, {} structured bytes, {} blobs, {took:?}",
        run.structured_history_bytes, run.blobs_fetched
    );
}

// --- §13.5 image ids --------------------------------------------------------------------------

const SCREENSHOT: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 7, 7, 7];

fn with_screenshot(text: &str) -> Message {
    Message::User {
        content: vec![
            UserContent::Text { text: text.into() },
            UserContent::Image(Image::new("image/png", SCREENSHOT.to_vec())),
        ],
    }
}

/// A screenshot in turn 1, the same screenshot again in turn 2 (hosts that re-send it), a text
/// turn, then a new process resuming with the screenshot once more: one conversation, one
/// image id, and never `Image not found`.
#[tokio::test]
async fn an_image_keeps_its_id_across_turns_and_processes_and_is_never_not_found() {
    let replica = Replica::start().await.unwrap();
    replica.set_check_image_ids(true);
    let dir = tempfile::tempdir().unwrap();
    let first_process = session(&replica, Some(dir.path()));
    let mut conversation = Conversation::new("").with_message(with_screenshot("look at this"));
    let mut took = Vec::new();
    for next in [
        Some(with_screenshot("and now?")),
        Some(Message::user_text("thanks")),
        Some(with_screenshot("one more look")),
        None,
    ] {
        // The last turn runs in a new process: a new session over the same handles.
        let second_process;
        let session = if next.is_some() {
            &first_process
        } else {
            second_process = session(&replica, Some(dir.path()));
            &second_process
        };
        let started = Instant::now();
        let events = turn(session, &conversation).await;
        took.push(started.elapsed());
        assert!(ended_normally(&events), "{events:?}");
        let Some(next) = next else { break };
        conversation = conversation
            .with_message(Message::assistant_text(text(&events)))
            .with_message(next);
    }
    let runs = replica.runs();
    let outcomes: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| (r.label.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("agent-rebuild", "completed"),
            ("agent-resume", "completed"),
            ("agent-resume", "completed"),
            ("agent-resume", "completed"),
        ]
    );
    assert!(
        runs.iter()
            .all(|r| r.conversation_id == runs[0].conversation_id)
    );
    assert_eq!(runs[0].images.len(), 1);
    assert_eq!(runs[1].images, runs[0].images);
    assert_eq!(runs[3].images, runs[0].images);
    println!("image turns: 1 Run each, {took:?}");
}

/// A conversation an earlier client poisoned (an image under a second id) rebuilds once under a
/// new conversation id instead of failing every later turn.
#[tokio::test]
async fn a_conversation_poisoned_by_an_image_rebuilds_once_and_the_turn_completes() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = session(&replica, Some(dir.path()));
    let first = Conversation::new("").with_message(with_screenshot("look at this"));
    let events = turn(&session, &first).await;
    assert!(ended_normally(&events), "{events:?}");
    replica.set_check_image_ids(true);
    replica.poison(&replica.runs()[0].conversation_id);
    let second = first
        .with_message(Message::assistant_text(text(&events)))
        .with_message(Message::user_text("ping"));
    let events = turn(&session, &second).await;
    assert!(ended_normally(&events), "{events:?}");
    assert_eq!(text(&events), "pong");
    let runs = replica.runs();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(runs[1].outcome, "image-not-found");
    assert_eq!(runs[2].label, "agent-rebuild");
    assert_ne!(runs[2].conversation_id, runs[0].conversation_id);
}

// --- §13.6 interaction queries ----------------------------------------------------------------

/// The backend's 90 s, scaled down.
const QUERY_IDLE: Duration = Duration::from_millis(500);

#[tokio::test]
async fn every_known_interaction_query_is_answered_in_its_own_arm_before_the_idle_limit() {
    let replica = Replica::start().await.unwrap();
    replica.set_interaction_probe(Some(QUERY_IDLE));
    let started = Instant::now();
    let events = turn(
        &session(&replica, None),
        &Conversation::new("").with_message(Message::user_text("ping")),
    )
    .await;
    let took = started.elapsed();
    assert!(ended_normally(&events), "{events:?}");
    let runs = replica.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        runs[0].interactions,
        [
            "2 approved",
            "3 error",
            "4 rejected",
            "5 approved",
            "6 approved",
            "7 error",
            "8 success",
            "9 approved"
        ]
    );
    println!("8 interaction queries answered: 1 Run, {took:?}");
}

/// An arm outside the whitelist (10–14) or unknown to this crate is never left unanswered: the
/// turn fails at once, classified, and the stream closes long before the server's idle limit.
#[tokio::test]
async fn an_unlisted_or_unknown_interaction_query_fails_the_turn_at_once_classified() {
    for arm in [10, 13, 14, 15, 99] {
        let replica = Replica::start().await.unwrap();
        replica.set_interaction_probe(Some(Duration::from_secs(10)));
        replica.script(Script::InteractionQuery(arm));
        let started = Instant::now();
        let events = turn(
            &session(&replica, None),
            &Conversation::new("").with_message(Message::user_text("ping")),
        )
        .await;
        let took = started.elapsed();
        let Some(AgentEvent::Ir(Event::Error(info))) = events.last() else {
            panic!("arm {arm}: {events:?}");
        };
        assert_eq!(info.kind, ErrorKind::ProtocolDrift, "arm {arm}: {info:?}");
        assert_eq!(info.next_step, NextStep::UpdateCrates, "arm {arm}");
        assert!(took < Duration::from_secs(1), "arm {arm}: {took:?}");
        // Wait for the replica's record: the client left; the stream was not reset as idle.
        for _ in 0..100 {
            if !replica.runs().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let runs = replica.runs();
        assert_eq!(runs.len(), 1, "arm {arm}: {runs:?}");
        assert!(runs[0].outcome.starts_with("client-closed"), "{runs:?}");
        println!("arm {arm}: failed in {took:?}");
    }
}
