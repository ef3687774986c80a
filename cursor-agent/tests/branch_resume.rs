//! Branch-aware resume against the replica (docs/PROTOCOL-AGENT.md §10.1): a host that branches
//! at an earlier turn (a rewind in the same session, or a fork into a new session) resumes from
//! that turn's checkpoint under a new conversation id, replays no history, and the model sees
//! only what was said up to that turn; the original branch keeps resuming its own conversation.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cursor_agent::session::{AgentSession, DebugSink, ModelChoice, SessionConfig, StaticToken};
use cursor_agent::testing::{Replica, ReplicaServer, RunRecord};
use cursor_agent::{AgentEvent, HandleStore, HostProfile, KEPT_BRANCH_POINTS, KEPT_TURNS};
use cursor_proto::ir::{Conversation, Event, Message};
use cursor_transport::Client;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(20);
const RECALL: &str = "what did I ask you to remember?";
const NOTED: &str = "OK, I will remember that.";

#[derive(Debug, Default)]
struct Records(Mutex<Vec<Value>>);

impl DebugSink for Records {
    fn record(&self, record: &Value) {
        self.0.lock().unwrap().push(record.clone());
    }
}

impl Records {
    fn plans(&self) -> Vec<Value> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r["event"] == "plan")
            .cloned()
            .collect()
    }
}

/// A fresh process's session `id` over the handles in `dir`.
fn session(
    replica: &ReplicaServer,
    dir: &Path,
    id: &str,
    find_branches: bool,
    records: &Arc<Records>,
) -> AgentSession {
    AgentSession::builder(
        Client::new().expect("client"),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .config(
        SessionConfig::new()
            .with_profile(HostProfile::new("acme"))
            .with_workspace_uri("file:///work")
            .with_find_branches(find_branches),
    )
    .session_id(id)
    .handles(Arc::new(
        HandleStore::new(dir).with_branch_index(find_branches),
    ))
    .debug(Arc::clone(records) as Arc<dyn DebugSink>)
    .build()
}

/// One host turn: the transcript so far plus `ask`; returns the answer and appends both.
async fn say(session: &AgentSession, transcript: &mut Conversation, ask: &str) -> String {
    transcript.messages.push(Message::user_text(ask));
    let mut turn = session.turn(transcript, &ModelChoice::new("composer-2.5"));
    let mut text = String::new();
    while let Some(event) = tokio::time::timeout(WAIT, turn.next()).await.unwrap() {
        match event {
            AgentEvent::Ir(Event::TextDelta { text: delta }) => text.push_str(&delta),
            AgentEvent::Ir(Event::Reset) => text.clear(),
            AgentEvent::Ir(Event::Error(info)) => panic!("turn failed: {info:?}"),
            _ => {}
        }
    }
    transcript.messages.push(Message::assistant_text(&text));
    text
}

/// Six turns: five facts, then a recall.
async fn six_turns(session: &AgentSession) -> Conversation {
    let mut transcript = Conversation::new("You are terse.");
    for fact in ["alpha", "bravo", "charlie", "delta", "echo"] {
        assert_eq!(
            say(session, &mut transcript, &format!("remember the {fact}")).await,
            NOTED
        );
    }
    assert_eq!(
        say(session, &mut transcript, RECALL).await,
        "You asked me to remember: the alpha; the bravo; the charlie; the delta; the echo."
    );
    transcript
}

/// The transcript up to and including turn `k` (user and assistant message per turn).
fn up_to_turn(transcript: &Conversation, k: usize) -> Conversation {
    let mut cut = transcript.clone();
    cut.messages.truncate(2 * k);
    cut
}

fn labels(runs: &[RunRecord]) -> Vec<&str> {
    runs.iter().map(|r| r.label.as_str()).collect()
}

async fn fork_at_three(find_branches: bool, fork_session: &str) {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let records = Arc::new(Records::default());
    let parent = session(&replica, dir.path(), "parent", find_branches, &records);
    let full = six_turns(&parent).await;
    let parent_id = replica.runs()[5].conversation_id.clone();
    drop(parent);

    // A new process branches at turn 3 and says two more things.
    let fork = session(&replica, dir.path(), fork_session, find_branches, &records);
    let mut branch = up_to_turn(&full, 3);
    assert_eq!(say(&fork, &mut branch, "remember the foxtrot").await, NOTED);
    assert_eq!(
        say(&fork, &mut branch, RECALL).await,
        "You asked me to remember: the alpha; the bravo; the charlie; the foxtrot."
    );

    let runs = replica.runs();
    assert_eq!(runs.len(), 8, "{:?}", labels(&runs));
    // The first turn had nothing to resume; every later Run resumed, none replayed history.
    assert_eq!(runs[0].label, "agent-rebuild");
    for run in &runs[1..] {
        assert_eq!(run.label, "agent-resume", "{:?}", labels(&runs));
        assert!(!run.history_replayed, "{run:?}");
        assert_eq!(run.outcome, "completed");
    }
    // The branch runs under a conversation id of its own, twice the same.
    assert_ne!(runs[6].conversation_id, parent_id);
    assert_eq!(runs[6].conversation_id, runs[7].conversation_id);
    // The plans say which turn they resumed from.
    let plans = records.plans();
    assert_eq!(plans[6]["turn"], 3, "{:?}", plans[6]);
    assert_eq!(plans[6]["branch"], true, "{:?}", plans[6]);
    assert_eq!(plans[7]["turn"], 4, "{:?}", plans[7]);
    assert_eq!(plans[7]["branch"], false, "{:?}", plans[7]);

    // Bytes the client sent for the forked turn, against the rebuild it replaced (the
    // replica's checkpoints carry the journal's text, so at three turns a rebuild is smaller).
    let resumed_bytes = runs[6].request_bytes;
    let cold = tempfile::tempdir().unwrap();
    let rebuilt = session(&replica, cold.path(), "cold", false, &records);
    let mut again = up_to_turn(&full, 3);
    say(&rebuilt, &mut again, "remember the foxtrot").await;
    let rebuild = replica.runs().pop().unwrap();
    assert_eq!(rebuild.label, "agent-rebuild");
    eprintln!(
        "forked turn: {resumed_bytes} bytes sent resuming turn 3 ({} blobs), {} bytes rebuilding it ({} blobs); linear turn 4: {} bytes, turn 6: {} bytes",
        runs[6].blobs_fetched,
        rebuild.request_bytes,
        rebuild.blobs_fetched,
        runs[3].request_bytes,
        runs[5].request_bytes,
    );
    // A forked turn costs what the parent's own fourth turn cost (the checkpoint and the
    // rules), whatever the parent said after turn 3.
    assert!(
        resumed_bytes.abs_diff(runs[3].request_bytes) <= 64,
        "{resumed_bytes} vs {}",
        runs[3].request_bytes
    );

    // The original branch still resumes its own conversation, with all five facts.
    let parent = session(&replica, dir.path(), "parent", find_branches, &records);
    let mut transcript = full;
    assert_eq!(
        say(&parent, &mut transcript, RECALL).await,
        "You asked me to remember: the alpha; the bravo; the charlie; the delta; the echo."
    );
    let last = replica.runs().pop().unwrap();
    assert_eq!(last.label, "agent-resume");
    assert_eq!(last.conversation_id, parent_id);

    let store = HandleStore::new(dir.path());
    for id in ["parent", fork_session] {
        let handle = store.load(id).unwrap().handle().unwrap();
        assert!(handle.turns() <= 1 + KEPT_TURNS + KEPT_BRANCH_POINTS);
        eprintln!(
            "handle {id}: {} turns, {} bytes",
            handle.turns(),
            handle.to_json().len()
        );
    }
}

#[tokio::test]
async fn a_rewind_in_the_same_session_resumes_from_turn_three() {
    fork_at_three(false, "parent").await;
}

#[tokio::test]
async fn a_session_forked_at_turn_three_resumes_from_the_parents_checkpoint() {
    fork_at_three(true, "forked").await;
}

#[tokio::test]
async fn a_new_session_without_branch_lookup_rebuilds() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let records = Arc::new(Records::default());
    let parent = session(&replica, dir.path(), "parent", false, &records);
    let full = six_turns(&parent).await;
    let fork = session(&replica, dir.path(), "other", false, &records);
    let mut branch = up_to_turn(&full, 3);
    say(&fork, &mut branch, "remember the foxtrot").await;
    assert_eq!(replica.runs().pop().unwrap().label, "agent-rebuild");
}
