//! A debug record never blocks the turn that writes it: the file is written on the sink's own
//! thread, so a slow or stuck file delays only the records, and they still land whole and in
//! order.
#![cfg(unix)]

use std::io::Read as _;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cursor_agent::session::{DebugSink as _, JsonLinesFile};
use serde_json::json;

#[test]
fn a_record_returns_while_its_file_cannot_be_written_and_lands_whole_later() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("debug.jsonl");
    // Opening a FIFO for writing blocks until a reader comes, as a stuck disk would.
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let sink = Arc::new(JsonLinesFile::new(&path));

    let (done_tx, done_rx) = mpsc::channel();
    let caller = Arc::clone(&sink);
    std::thread::spawn(move || {
        for n in 0..3 {
            caller.record(&json!({"event": "leg", "n": n}));
        }
        done_tx.send(()).unwrap();
    });
    let returned = done_rx.recv_timeout(Duration::from_secs(2)).is_ok();
    // A reader lets the writes through, wherever they wait.
    let mut reader = std::fs::File::open(&path).unwrap();
    assert!(returned, "record() waited for the file");

    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while text.lines().count() < 3 && Instant::now() < deadline {
        let mut chunk = String::new();
        reader.read_to_string(&mut chunk).unwrap();
        text.push_str(&chunk);
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        text,
        "{\"event\":\"leg\",\"n\":0}\n{\"event\":\"leg\",\"n\":1}\n{\"event\":\"leg\",\"n\":2}\n"
    );
}

/// While the file is stuck, the queue holds [`JsonLinesFile::QUEUE`] lines; records past it
/// are dropped, never waited for, and a `debugRecordsDropped` record counts them.
#[test]
fn records_past_a_full_queue_are_dropped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("debug.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let sink = Arc::new(JsonLinesFile::new(&path));
    let total = JsonLinesFile::QUEUE + 50;
    let (done_tx, done_rx) = mpsc::channel();
    let caller = Arc::clone(&sink);
    std::thread::spawn(move || {
        for n in 0..total {
            caller.record(&json!({"n": n}));
        }
        done_tx.send(()).unwrap();
    });
    let returned = done_rx.recv_timeout(Duration::from_secs(5)).is_ok();
    let mut reader = std::fs::File::open(&path).unwrap();
    assert!(returned, "record() waited for the queue");

    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let dropped_note = |text: &str| text.contains("debugRecordsDropped");
    while !dropped_note(&text) && Instant::now() < deadline {
        let mut chunk = String::new();
        reader.read_to_string(&mut chunk).unwrap();
        text.push_str(&chunk);
        if chunk.is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let note = records.last().unwrap();
    assert_eq!(note["event"], "debugRecordsDropped", "{note}");
    let written = records.len() - 1;
    let dropped = usize::try_from(note["count"].as_u64().unwrap()).unwrap();
    assert!(
        dropped > 0 && written + dropped == total,
        "{written} + {dropped}"
    );
    // In order, none twice.
    let numbers: Vec<u64> = records[..written]
        .iter()
        .map(|r| r["n"].as_u64().unwrap())
        .collect();
    assert!(numbers.windows(2).all(|pair| pair[0] < pair[1]));
}
