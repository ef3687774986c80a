//! What the gateway keeps, in memory and under `--state`, and how all of it ends: every kind of
//! state expires (seen with a clock a month ahead), the in-memory maps stay within the
//! conversation cap, a conversation's record keeps a bounded number of turns, and a branch that
//! never completed a turn leaves nothing behind.

mod common;

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use common::*;
use cursor_agent::testing::{Replica, Script};
use cursor_gateway::{Gateway, Limits, SweepReport};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

const MONTH: Duration = Duration::from_secs(31 * 24 * 3600);

/// Files in `dir` (not below it) whose names end with `suffix`.
fn files(dir: &Path, suffix: &str) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| e.path().is_file() && e.file_name().to_string_lossy().ends_with(suffix))
            .count()
    })
}

/// Conversations with an index record in `dir` (a record is kept in two slots).
fn records(dir: &Path) -> usize {
    let mut ids = std::collections::HashSet::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(id) = name
            .strip_suffix(".a.json")
            .or_else(|| name.strip_suffix(".b.json"))
        {
            ids.insert(id.to_owned());
        }
    }
    ids.len()
}

async fn sweep(gateway: &Gateway, now: SystemTime) -> SweepReport {
    let gateway = gateway.clone();
    tokio::task::spawn_blocking(move || gateway.sweep(now))
        .await
        .unwrap()
}

async fn chat_turn(h: &Harness, messages: &mut Vec<Value>, text: &str) {
    messages.push(json!({"role": "user", "content": text}));
    let (status, body) = post(h, &json!({"model": "composer-2.5", "messages": messages})).await;
    assert_eq!(status, 200, "{body}");
    messages.push(body["choices"][0]["message"].clone());
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{what}: hang guard"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_state_expires_after_its_retention_and_a_conversation_in_use_stays() {
    let h = start_with(None, None).await;
    let state = h.state.path().to_owned();
    // Two chat conversations, a stored Responses chain, a Messages conversation.
    let mut first = Vec::new();
    chat_turn(&h, &mut first, "remember ONE").await;
    chat_turn(&h, &mut first, "remember TWO").await;
    let mut second = Vec::new();
    chat_turn(&h, &mut second, "remember THREE").await;
    let (status, text) = http(
        &h,
        "POST",
        "/v1/responses",
        &json!({"model": "composer-2.5", "input": "remember FOUR"}).to_string(),
        None,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let id = serde_json::from_str::<Value>(&text).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let next = json!({"model": "composer-2.5", "previous_response_id": id, "input": "and FIVE"});
    assert_eq!(
        http(&h, "POST", "/v1/responses", &next.to_string(), None)
            .await
            .0,
        200
    );
    let messages = json!({"model": "claude-cursor-composer-2.5", "max_tokens": 64,
        "messages": [{"role": "user", "content": "remember SIX"}]});
    assert_eq!(
        http(&h, "POST", "/v1/messages", &messages.to_string(), None)
            .await
            .0,
        200
    );
    // Leftovers of a crash, a week old.
    let leftover = state.join("conversations/.c-1.json.999-0.tmp");
    std::fs::write(&leftover, b"half").unwrap();
    let week_ago = SystemTime::now() - Duration::from_secs(7 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&leftover)
        .unwrap()
        .set_modified(week_ago)
        .unwrap();

    let conversations = records(&state.join("conversations"));
    assert_eq!(
        conversations, 4,
        "two chat, one Responses chain, one Messages conversation"
    );
    assert_eq!(files(&state.join("handles"), ".json"), 4);
    assert_eq!(files(&state.join("responses"), ".json"), 2);

    // Nothing has expired today.
    let report = sweep(&h.gateway, SystemTime::now()).await;
    assert_eq!(
        (report.conversations, report.responses_expired),
        (0, 0),
        "{report:?}"
    );
    assert_eq!(report.debris, 1, "the crash's leftover: {report:?}");

    // A turn of the first conversation is running while the month passes.
    h.replica.script(Script::Silent);
    first.push(json!({"role": "user", "content": "hold on"}));
    let body = json!({"model": "composer-2.5", "stream": true, "messages": first}).to_string();
    let mut holder = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    holder.write_all(request.as_bytes()).await.unwrap();
    wait_until("the turn started", || h.gateway.open_runs() == 1).await;

    let report = sweep(&h.gateway, SystemTime::now() + MONTH).await;
    println!("a month later: {report:?}");
    assert_eq!(report.conversations, 3, "{report:?}");
    assert_eq!(report.kept_in_use, 1, "{report:?}");
    assert_eq!(report.responses_expired, 2, "{report:?}");
    assert_eq!(records(&state.join("conversations")), 1, "the one in use");
    assert_eq!(files(&state.join("handles"), ".json"), 1);
    assert_eq!(
        files(&state.join("handles"), ".lock"),
        1,
        "locks go with their handles"
    );
    assert_eq!(files(&state.join("responses"), ".json"), 0);
    let pointers = files(&state.join("conversations/ends"), "");
    assert_eq!(
        pointers, 2,
        "only the running conversation's two turn ends: {pointers}"
    );
    assert_eq!(h.gateway.conversations(), 1, "memory holds the one in use");

    drop(holder);
    wait_until("the turn ended", || h.gateway.open_runs() == 0).await;
    let report = sweep(&h.gateway, SystemTime::now() + MONTH).await;
    assert_eq!(report.conversations, 1, "{report:?}");
    assert_eq!(records(&state.join("conversations")), 0);
    assert_eq!(files(&state.join("conversations/ends"), ""), 0);
    assert_eq!(
        files(&state.join("handles"), ".json") + files(&state.join("handles"), ".lock"),
        0
    );
    assert_eq!(
        (h.gateway.conversations(), h.gateway.history_entries()),
        (0, 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_memory_maps_stay_within_the_conversation_cap_and_evicted_conversations_resume_from_disk()
 {
    let mut limits = Limits::DEFAULT;
    limits.max_conversations = 4;
    let h = start_keyed(Replica::start().await.unwrap(), &[], limits).await;
    let mut all = Vec::new();
    for i in 0..40 {
        let mut messages = Vec::new();
        chat_turn(&h, &mut messages, &format!("remember FACT-{i}")).await;
        chat_turn(&h, &mut messages, "and more").await;
        all.push(messages);
        assert!(h.gateway.conversations() <= 4);
        assert!(
            h.gateway.history_entries() <= 4 * 3,
            "{}",
            h.gateway.history_entries()
        );
    }
    // The first conversation left memory long ago: it is found on disk and resumed.
    let resumed = h.gateway.resumed_turns();
    chat_turn(&h, &mut all[0], "what did I ask you to remember?").await;
    assert_eq!(h.gateway.resumed_turns(), resumed + 1);
    assert_eq!(h.gateway.rebuilt_turns(), 0);
    assert!(
        all[0].last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("FACT-0")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_record_keeps_its_recent_turns_and_drops_older_turn_ends() {
    let h = start_with(None, None).await;
    let mut messages = Vec::new();
    for i in 0..140 {
        chat_turn(&h, &mut messages, &format!("turn {i}")).await;
    }
    let state = h.state.path();
    assert_eq!(records(&state.join("conversations")), 1);
    // The slot with the higher sequence number is the record.
    let record: Value = std::fs::read_dir(state.join("conversations"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .map(|e| serde_json::from_slice::<Value>(&std::fs::read(e.path()).unwrap()).unwrap())
        .max_by_key(|record| record["seq"].as_u64())
        .unwrap();
    assert_eq!(record["seq"], 140);
    let kept = record["turns"].as_array().unwrap().len();
    let pointers = files(&state.join("conversations/ends"), "");
    println!(
        "140 turns: {kept} turn ends kept, {pointers} pointer files, record of {} bytes",
        record.to_string().len()
    );
    assert_eq!(kept, 128);
    assert_eq!(
        pointers, 128,
        "a dropped turn end's pointer is deleted with it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_request_whose_client_disconnects_leaves_no_handle_copy() {
    let h = start_with(None, None).await;
    let mut messages = vec![json!({"role": "system", "content": "You are terse."})];
    for name in ["alpha", "bravo", "charlie"] {
        chat_turn(&h, &mut messages, &format!("remember the {name}")).await;
    }
    let handles = h.state.path().join("handles");
    assert_eq!(files(&handles, ".json"), 1);
    // Rewind to the first turn and ask something else: a branch, seeded from the parent.
    let mut branch = messages[..3].to_vec();
    branch.push(json!({"role": "user", "content": "remember the delta"}));
    h.replica.script(Script::Silent);
    let body = json!({"model": "composer-2.5", "stream": true, "messages": branch}).to_string();
    let mut client = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    client.write_all(request.as_bytes()).await.unwrap();
    // The copy is in memory once the branch's turn is seeded (its parent's handle is read on the
    // blocking pool after the turn was admitted).
    wait_until("the branch's turn was seeded", || {
        h.gateway.open_runs() == 1 && h.gateway.seeded_branches() == 1
    })
    .await;
    assert_eq!(files(&handles, ".json"), 1, "and not on disk");
    drop(client);
    wait_until("the turn was cancelled", || h.gateway.open_runs() == 0).await;
    assert_eq!(h.gateway.seeded_branches(), 0);
    assert_eq!(files(&handles, ".json"), 1, "nothing of the branch is left");
    assert_eq!(records(&h.state.path().join("conversations")), 1);
    // The same branch asked again completes, and its handle is written then.
    branch.pop();
    chat_turn(&h, &mut branch, "remember the delta").await;
    assert_eq!(files(&handles, ".json"), 2);
    assert_eq!(h.gateway.seeded_branches(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_index_record_costs_one_rebuild_and_nothing_else() {
    let state = tempfile::tempdir().unwrap();
    let path = state.path().to_owned();
    let h = start_with(None, Some(state)).await;
    let mut messages = Vec::new();
    chat_turn(&h, &mut messages, "remember KESTREL-9").await;
    for entry in std::fs::read_dir(path.join("conversations"))
        .unwrap()
        .flatten()
    {
        if entry.file_name().to_string_lossy().ends_with(".json") {
            std::fs::write(entry.path(), b"{\"v\": 1, \"turns\": [{\"fp\": 12").unwrap();
        }
    }
    // A new process over that state: the record is unreadable, so the conversation is rebuilt
    // from the transcript the client sends.
    let h2 = start_with(None, Some(clone_dir(&path))).await;
    chat_turn(&h2, &mut messages, "what did I ask you to remember?").await;
    assert!(
        messages.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("KESTREL-9")
    );
    assert_eq!(h2.gateway.rebuilt_turns(), 1);
}

/// A copy of a state directory in a new temporary one.
fn clone_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    let mut stack = vec![from.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let target = to.path().join(path.strip_prefix(from).unwrap());
            if path.is_dir() {
                std::fs::create_dir_all(&target).unwrap();
                stack.push(path);
            } else {
                std::fs::copy(&path, &target).unwrap();
            }
        }
    }
    to
}
