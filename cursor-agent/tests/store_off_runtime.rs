//! The session never blocks its runtime on the handle store: a lock held by another process
//! (here a thread) is waited for off the runtime, so other tasks keep running.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use cursor_agent::session::{AgentSession, ModelChoice, StaticToken};
use cursor_agent::testing::Replica;
use cursor_agent::{AgentEvent, HandleStore, HostProfile};
use cursor_proto::ir::{Conversation, Event, Message};
use cursor_transport::Client;

/// Ticks the lock holder needs to see while it holds the lock.
const TICKS: usize = 20;

#[tokio::test(flavor = "current_thread")]
async fn other_tasks_keep_running_while_a_turn_waits_for_a_held_handle_lock() {
    let replica = Replica::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = HandleStore::new(dir.path());

    // Another holder takes the lock and keeps it until it has seen TICKS ticks of this
    // runtime's ticker, or two seconds passed (a blocked runtime never ticks).
    let (tick_tx, tick_rx) = mpsc::channel::<()>();
    let (held_tx, held_rx) = mpsc::channel::<()>();
    let holder_store = store.clone();
    let holder = std::thread::spawn(move || {
        holder_store
            .with_lock("s-1", || {
                held_tx.send(()).unwrap();
                let deadline = std::time::Instant::now() + Duration::from_secs(2);
                let mut seen = 0;
                while seen < TICKS {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    match tick_rx.recv_timeout(left) {
                        Ok(()) => seen += 1,
                        Err(_) => break,
                    }
                }
                seen
            })
            .unwrap()
    });
    held_rx.recv().unwrap();

    let ticker = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            if tick_tx.send(()).is_err() {
                return;
            }
        }
    });

    let session = AgentSession::builder(
        Client::new().unwrap(),
        replica.origin(),
        Arc::new(StaticToken::new("token")),
    )
    .profile(HostProfile::new("acme"))
    .workspace_uri("file:///work")
    .session_id("s-1")
    .handles(Arc::new(store))
    .build();
    let conversation = Conversation::new("").with_message(Message::user_text("ping"));
    let events: Vec<AgentEvent> =
        futures::StreamExt::collect(session.turn(&conversation, &ModelChoice::new("composer-2.5")))
            .await;
    ticker.abort();

    let seen = holder.join().unwrap();
    assert_eq!(
        seen, TICKS,
        "the runtime ticked only {seen} times while the turn waited for the lock"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Ir(Event::Done { .. }))),
        "the turn completed once the lock was free: {events:?}"
    );
}
