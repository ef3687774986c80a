//! T-FR3 against the replica: a conversation resumed across processes from a handle on disk,
//! and rebuilt when the handle is stale.
//!
//! Every turn plays a fresh process: the handle is loaded from disk, a new `ResumePlanner` plans the
//! Run, a new `AgentRun` opens it, and the handle captured afterwards is saved again.

use std::time::Duration;

use cursor_agent::testing::{Replica, ReplicaServer, RunRecord, Script};
use cursor_agent::{AgentEvent, Handle, HandleStore, ResumePlanner, RunConfig, RunLabel, driver};
use cursor_proto::ir::{Conversation, Event, Message};
use cursor_transport::{Client, RequestHeaders};

const WAIT: Duration = Duration::from_secs(10);
const SESSION: &str = "session-1";
const PASS_PHRASE: &str = "XK-PLATYPUS-77 / 林蓓";

fn config() -> RunConfig {
    RunConfig::new(
        "composer-2.5",
        "file:///work",
        cursor_agent::IdSeed::fixed([5; 16]),
    )
}

/// What one host turn saw.
struct Turn {
    /// The answer text, after any `Reset`.
    text: String,
    /// The labels of the Runs the host opened, in order.
    labels: Vec<RunLabel>,
}

/// One turn of a fresh process: load, plan, drive (recovering once from a stale resume),
/// capture and save.
async fn turn(replica: &ReplicaServer, store: &HandleStore, conversation: &Conversation) -> Turn {
    let handle = store.load(SESSION).expect("store readable").handle();
    let mut session = ResumePlanner::new(config());
    let mut plan = session.plan(handle, conversation);
    let mut labels = Vec::new();
    loop {
        labels.push(plan.label());
        if plan.drops_handle() {
            store.remove(SESSION).expect("handle removed");
        }
        let run = plan.open(conversation, driver::now()).expect("run opens");
        let client = Client::new().expect("client");
        let (_handle, mut events, task) =
            driver::start(client, replica.origin(), RequestHeaders::new(), run);
        let task = tokio::spawn(task);
        let mut text = String::new();
        let mut failure = None;
        while let Some(event) = tokio::time::timeout(WAIT, events.recv()).await.unwrap() {
            match event {
                AgentEvent::Ir(Event::Reset) => text.clear(),
                AgentEvent::Ir(Event::TextDelta { text: delta }) => text.push_str(&delta),
                AgentEvent::Ir(Event::Error(info)) => failure = Some(info),
                _ => {}
            }
        }
        let run = tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
        let Some(info) = failure else {
            let handle = Handle::capture(&run, conversation).expect("a checkpoint arrived");
            store.save(SESSION, &handle).expect("handle saved");
            return Turn { text, labels };
        };
        // The finished run keeps the typed error behind the event the host saw.
        let stale = run.failure().expect("a failed run keeps its error");
        assert!(stale.is_stale_resume(), "{info:?}");
        plan = session.recover(stale).expect("one rebuild");
        assert!(plan.emits_reset());
    }
}

fn transcript(exchanges: &[(&str, &str)], ask: &str) -> Conversation {
    let mut conversation = Conversation::new("You are terse.");
    for (user, assistant) in exchanges {
        conversation = conversation
            .with_message(Message::user_text(*user))
            .with_message(Message::assistant_text(*assistant));
    }
    conversation.with_message(Message::user_text(ask))
}

fn last(replica: &Replica) -> RunRecord {
    replica.runs().pop().expect("a run was recorded")
}

const NOTED: &str = "OK, I will remember that.";

#[tokio::test]
async fn a_pass_phrase_is_recalled_by_a_fresh_run_resumed_from_the_handle_on_disk() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());

    let remember = format!("remember the pass phrase {PASS_PHRASE}");
    let first = turn(&replica, &store, &transcript(&[], &remember)).await;
    assert_eq!(first.text, NOTED);
    assert_eq!(first.labels, vec![RunLabel::Rebuild]);
    assert_eq!(last(&replica).label, "agent-rebuild");

    let second = turn(
        &replica,
        &store,
        &transcript(&[(&remember, NOTED)], "what did I ask you to remember?"),
    )
    .await;
    assert!(second.text.contains(PASS_PHRASE), "{}", second.text);
    assert_eq!(second.labels, vec![RunLabel::Resume]);
    let record = last(&replica);
    assert_eq!(record.label, "agent-resume");
    assert!(record.root_prompt_user_texts.is_empty(), "{record:?}");
    assert!(!record.history_replayed);
    assert!(!record.mcp_tools_sent, "the tool set did not change");
    assert_eq!(replica.turns(&record.conversation_id), Some(2));
}

#[tokio::test]
async fn four_resumed_turns_answer_a_question_needing_all_earlier_ones() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());
    let facts = [
        "remember the door code 4417",
        "remember the cat is called Mochi",
        "remember the meeting moved to Thursday",
    ];
    let mut exchanges: Vec<(&str, &str)> = Vec::new();
    for fact in facts {
        let turn = turn(&replica, &store, &transcript(&exchanges, fact)).await;
        assert_eq!(turn.text, NOTED);
        exchanges.push((fact, NOTED));
    }
    let answer = turn(
        &replica,
        &store,
        &transcript(&exchanges, "What did I ask you to remember?"),
    )
    .await;
    assert_eq!(
        answer.text,
        "You asked me to remember: the door code 4417; the cat is called Mochi; the meeting moved to Thursday."
    );
    let labels: Vec<String> = replica.runs().into_iter().map(|r| r.label).collect();
    assert_eq!(
        labels,
        [
            "agent-rebuild",
            "agent-resume",
            "agent-resume",
            "agent-resume"
        ]
    );
    assert!(
        replica
            .runs()
            .iter()
            .all(|r| r.root_prompt_user_texts.is_empty())
    );
}

#[tokio::test]
async fn an_edited_earlier_message_rebuilds_with_the_whole_transcript() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());
    turn(&replica, &store, &transcript(&[], "remember the code 1111")).await;
    let first_id = last(&replica).conversation_id;

    let edited = transcript(
        &[("remember the code 2222", NOTED)],
        "what did I ask you to remember?",
    );
    let answer = turn(&replica, &store, &edited).await;
    assert_eq!(answer.labels, vec![RunLabel::Rebuild]);
    assert_eq!(answer.text, "You asked me to remember: the code 2222.");
    let record = last(&replica);
    assert_eq!(record.label, "agent-rebuild");
    assert_ne!(record.conversation_id, first_id);
    assert!(record.history_replayed);
    assert_eq!(
        record.root_prompt_user_texts,
        vec!["remember the code 2222"]
    );
}

#[tokio::test]
async fn a_blob_miss_on_resume_rebuilds_exactly_once() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());
    let remember = format!("remember the pass phrase {PASS_PHRASE}");
    turn(&replica, &store, &transcript(&[], &remember)).await;

    replica.script(Script::BlobMiss);
    let answer = turn(
        &replica,
        &store,
        &transcript(&[(&remember, NOTED)], "what did I ask you to remember?"),
    )
    .await;
    assert_eq!(answer.labels, vec![RunLabel::Resume, RunLabel::Rebuild]);
    assert!(answer.text.contains(PASS_PHRASE), "{}", answer.text);
    let runs = replica.runs();
    let seen: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| (r.label.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("agent-rebuild", "completed"),
            ("agent-resume", "blob-miss"),
            ("agent-rebuild", "completed"),
        ]
    );
    assert_eq!(runs[2].root_prompt_user_texts, vec![remember.clone()]);
    // The rebuilt conversation's handle resumes on the next turn.
    let next = turn(
        &replica,
        &store,
        &transcript(
            &[
                (&remember, NOTED),
                ("what did I ask you to remember?", &answer.text),
            ],
            "ping",
        ),
    )
    .await;
    assert_eq!(
        (next.text.as_str(), next.labels.as_slice()),
        ("pong", [RunLabel::Resume].as_slice())
    );
}

#[tokio::test]
async fn a_conversation_the_backend_forgot_is_rebuilt_after_not_found() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());
    turn(&replica, &store, &transcript(&[], "remember the code 7")).await;
    replica.forget(&last(&replica).conversation_id);
    let answer = turn(
        &replica,
        &store,
        &transcript(
            &[("remember the code 7", NOTED)],
            "what did I ask you to remember?",
        ),
    )
    .await;
    assert_eq!(answer.labels, vec![RunLabel::Resume, RunLabel::Rebuild]);
    assert_eq!(answer.text, "You asked me to remember: the code 7.");
    assert_eq!(replica.runs()[1].outcome, "not-found");
}
