//! Clients that branch (edit, rewind, retry with a changed last turn) resume from the turn they
//! branched at instead of rebuilding, each branch in a conversation of its own
//! (docs/PROTOCOL-AGENT.md §10.1).

mod common;

use common::*;
use serde_json::{Value, json};

const RECALL: &str = "what did I ask you to remember?";

/// Asks `text` after `messages`; appends the question and the answer, returns the answer.
async fn ask(h: &Harness, messages: &mut Vec<Value>, text: &str) -> String {
    messages.push(json!({"role": "user", "content": text}));
    let (status, body) = post(h, &json!({"model": "composer-2.5", "messages": messages})).await;
    assert_eq!(status, 200, "{body}");
    messages.push(body["choices"][0]["message"].clone());
    answer(&body).to_owned()
}

async fn facts(h: &Harness, names: &[&str]) -> Vec<Value> {
    let mut messages = vec![json!({"role": "system", "content": "You are terse."})];
    for name in names {
        ask(h, &mut messages, &format!("remember the {name}")).await;
    }
    messages
}

/// The system message and the first `turns` turns.
fn rewound(messages: &[Value], turns: usize) -> Vec<Value> {
    messages[..1 + 2 * turns].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_rewinds_two_turns_resumes_from_the_turn_before() {
    let h = start_with(None, None).await;
    let mut messages = facts(&h, &["alpha", "bravo", "charlie"]).await;
    assert_eq!(
        ask(&h, &mut messages, RECALL).await,
        "You asked me to remember: the alpha; the bravo; the charlie."
    );
    assert_eq!(h.gateway.rebuilt_turns(), 0);
    assert_eq!(h.gateway.resumed_turns(), 3);

    // Rewind two turns (the recall and "charlie") and say something else.
    let mut branch = rewound(&messages, 2);
    ask(&h, &mut branch, "remember the delta").await;
    assert_eq!(
        ask(&h, &mut branch, RECALL).await,
        "You asked me to remember: the alpha; the bravo; the delta."
    );
    let runs = h.replica.runs();
    assert_eq!(runs.len(), 6);
    assert!(
        runs[1..]
            .iter()
            .all(|r| r.label == "agent-resume" && !r.history_replayed),
        "{runs:?}"
    );
    assert_eq!(h.gateway.rebuilt_turns(), 0, "no rebuild");
    assert_eq!(h.gateway.resumed_turns(), 5);
    assert_ne!(runs[4].conversation_id, runs[3].conversation_id);
    eprintln!(
        "gateway: the rewound turn sent {} bytes, the original third turn {} bytes",
        runs[4].request_bytes, runs[2].request_bytes
    );

    // The original branch still continues its own conversation.
    assert_eq!(
        ask(&h, &mut messages, RECALL).await,
        "You asked me to remember: the alpha; the bravo; the charlie."
    );
    assert_eq!(h.replica.runs()[6].conversation_id, runs[3].conversation_id);
    assert_eq!(h.gateway.rebuilt_turns(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_forking_one_conversation_never_see_each_others_later_turns() {
    let h = start_with(None, None).await;
    let base = facts(&h, &["alpha", "bravo", "charlie"]).await;

    let mut a = rewound(&base, 2);
    let mut b = rewound(&base, 2);
    ask(&h, &mut a, "remember the xray").await;
    ask(&h, &mut b, "remember the yankee").await;
    ask(&h, &mut a, "remember the zulu").await;
    assert_eq!(
        ask(&h, &mut b, RECALL).await,
        "You asked me to remember: the alpha; the bravo; the yankee."
    );
    assert_eq!(
        ask(&h, &mut a, RECALL).await,
        "You asked me to remember: the alpha; the bravo; the xray; the zulu."
    );
    let runs = h.replica.runs();
    assert!(
        runs[1..]
            .iter()
            .all(|r| r.label == "agent-resume" && !r.history_replayed),
        "{runs:?}"
    );
    assert_eq!(h.gateway.rebuilt_turns(), 0);
    // Each fork is its own remote conversation, and neither is the parent's.
    let (parent, fork_a, fork_b) = (
        &runs[2].conversation_id,
        &runs[3].conversation_id,
        &runs[4].conversation_id,
    );
    assert!(parent != fork_a && parent != fork_b && fork_a != fork_b);
    assert_eq!(&runs[5].conversation_id, fork_a);
    assert_eq!(&runs[6].conversation_id, fork_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_is_found_by_a_new_gateway_process() {
    let h = start_with(None, None).await;
    let messages = facts(&h, &["alpha", "bravo", "charlie"]).await;
    let Harness { replica, state, .. } = h;
    let second = start_on(replica, None, Some(state)).await;
    let mut branch = rewound(&messages, 1);
    assert_eq!(
        ask(&second, &mut branch, RECALL).await,
        "You asked me to remember: the alpha."
    );
    let run = second.replica.runs().pop().unwrap();
    assert_eq!(run.label, "agent-resume", "{run:?}");
    assert_eq!(second.gateway.rebuilt_turns(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_answer_is_no_branch_point_and_rebuilds() {
    let h = start_with(None, None).await;
    let mut messages = facts(&h, &["alpha", "bravo"]).await;
    // The client rewrote the last answer: no stored checkpoint holds that text.
    let last = messages.len() - 1;
    messages[last]["content"] = json!("Fine, noted the bravo.");
    ask(&h, &mut messages, RECALL).await;
    let run = h.replica.runs().pop().unwrap();
    assert_eq!(run.label, "agent-rebuild", "{run:?}");
    assert!(run.history_replayed);
}
